//! Reads, compares and re-writes the numeric answers of reasoning items, so the repair stage can
//! decide whether a verifier model agrees with the authored key, flag ill-posed items, and write
//! repaired golds that the card's substring grader (`crate::quality::grade`) accepts.
//!
//! Peers compare strings (lm-eval-harness: `1234.50` ≠ `1234.5`) or drop units (PRM800K). Here an
//! answer becomes a [`Quantity`]: its value in the unit written, a unit class, the unit word, and
//! whether it was marked approximate; [`agree`] then compares values with a tolerance, only across
//! compatible units. This file holds those types and that comparison; the submodules hold:
//! - `answer_line`: the `ANSWER:` and `EXPR:` lines of a verifier reply;
//! - `parse`: the one quantity a text means, among the numbers `scan` finds in it (`scan` lists
//!   every form a number may take), with the unit words and marks of `vocabulary`;
//! - `question`: whether a prompt asks for a rate, and the signs of an ill-posed item;
//! - `golds`: the golds written for a repaired key.

mod answer_line;
mod golds;
mod parse;
mod question;
mod scan;
mod vocabulary;

pub use answer_line::{extract_answer, extract_expr};
pub use golds::{canonical_golds, format_value, with_separators};
pub use parse::parse_quantity;
pub use question::{is_rate_question, looks_ill_posed};

use vocabulary::duration_key;

/// Relative tolerance of every comparison.
const RELATIVE_TOLERANCE: f64 = 1e-4;
/// Extra absolute tolerance when money is involved: half a cent.
const CURRENCY_ABSOLUTE_TOLERANCE: f64 = 0.005;

/// The kind of unit an answer is written in; [`agree`] compares only compatible kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitClass {
    Currency,
    Percent,
    Duration,
    Count,
    Plain,
}

/// One parsed answer. `value` is in the unit written (`12.5%` → 12.5, `43.2 minutes` → 43.2).
/// `unit_word` is the ISO code for Currency (`USD` for `$`), the lower-cased word as written for
/// Duration and Count, and `None` for Percent and Plain.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantity {
    pub value: f64,
    pub unit: UnitClass,
    pub unit_word: Option<String>,
    pub approximate: bool,
}

/// The answer text taken from a verifier reply; `fell_back` when no `ANSWER:` line was found and
/// the text is the reply's last number instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    pub text: String,
    pub fell_back: bool,
}

/// True when `a` and `b` are the same answer: compatible units, and values within a relative
/// tolerance of 1e-4 (plus 0.005 absolute when either side is money).
///
/// Units: Plain is compatible with everything; otherwise the classes must be equal, currencies
/// must have the same code, and duration words must match after folding (`min`/`mins`/`minute`/
/// `minutes`, `h`/`hr`/`hrs`/`hour`/`hours`, …); no conversion between units. Count words do
/// not have to match. A percentage also agrees with a plain number equal to its fraction
/// (`12.5%` and `0.125`) when `rate_question`. The `approximate` flag does not loosen anything.
pub fn agree(a: &Quantity, b: &Quantity, rate_question: bool) -> bool {
    if !units_compatible(a, b) {
        return false;
    }
    let absolute = if a.unit == UnitClass::Currency || b.unit == UnitClass::Currency {
        CURRENCY_ABSOLUTE_TOLERANCE
    } else {
        0.0
    };
    if close(a.value, b.value, absolute) {
        return true;
    }
    rate_question
        && match (a.unit, b.unit) {
            (UnitClass::Percent, UnitClass::Plain) => close(a.value / 100.0, b.value, 0.0),
            (UnitClass::Plain, UnitClass::Percent) => close(a.value, b.value / 100.0, 0.0),
            _ => false,
        }
}

fn close(x: f64, y: f64, absolute: f64) -> bool {
    (x - y).abs() <= RELATIVE_TOLERANCE * x.abs().max(y.abs()) + absolute
}

fn units_compatible(a: &Quantity, b: &Quantity) -> bool {
    match (a.unit, b.unit) {
        (UnitClass::Plain, _) | (_, UnitClass::Plain) => true,
        (UnitClass::Currency, UnitClass::Currency) => match (&a.unit_word, &b.unit_word) {
            (Some(x), Some(y)) => x.eq_ignore_ascii_case(y),
            _ => true,
        },
        (UnitClass::Duration, UnitClass::Duration) => match (&a.unit_word, &b.unit_word) {
            (Some(x), Some(y)) => duration_key(x) == duration_key(y),
            _ => true,
        },
        (x, y) => x == y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::soup::Soup;

    /// The quantity `text` parses to; the test fails when it does not parse.
    pub(super) fn q(text: &str) -> Quantity {
        parse_quantity(text).unwrap_or_else(|| panic!("{text:?} did not parse"))
    }

    /// An exact quantity (`approximate` false).
    pub(super) fn quantity(value: f64, unit: UnitClass, word: Option<&str>) -> Quantity {
        Quantity {
            value,
            unit,
            unit_word: word.map(str::to_string),
            approximate: false,
        }
    }

    /// (a, b, rate question, expected agreement)
    const AGREEMENT: [(&str, &str, bool, bool); 56] = [
        ("$1,234.50", "1234.5", false, true),
        ("1,234.5 USD", "$1,234.50", false, true),
        ("USD 1,234.50", "1234.50 dollars", false, true),
        ("12.5%", "0.125", true, true),
        ("12.5%", "0.125", false, false),
        ("0.125", "12.5%", true, true),
        ("12.5%", "12.5", false, true),
        ("12.5%", "12.5", true, true),
        ("12.5 percent", "12.5%", false, true),
        ("0.1%", "0.001", true, true),
        ("12.5%", "0.125%", true, false),
        ("99.9%", "99.95%", false, false),
        ("43.2", "4320", false, false),
        ("43.2", "4320", true, false),
        ("0.432", "43.2", true, false),
        ("43.2 minutes", "43.2 hours", false, false),
        ("43.2 minutes", "43.2 min", false, true),
        ("43.2 mins", "43.2 minute", false, true),
        ("43.2 minutes", "43.2", false, true),
        ("2 hrs", "2 hours", false, true),
        ("2 h", "2 hr", false, true),
        ("30 sec", "30 seconds", false, true),
        ("30 s", "30 ms", false, false),
        ("5 days", "5 weeks", false, false),
        ("3 months", "3 mo", false, true),
        ("1 hour", "60 minutes", false, false),
        ("43.2 minutes", "2592 seconds", false, false),
        ("1.2k", "1200", false, true),
        ("1.2K requests", "1,200", false, true),
        ("1.5M", "1,500,000", false, true),
        ("$2B", "2,000,000,000 USD", false, true),
        ("1.2 million", "1.2M", false, true),
        ("3/4", "0.75", false, true),
        ("2 1/2", "2.5", false, true),
        ("3 1/3", "3.3333", false, true),
        ("1/3", "0.33", false, false),
        ("-17", "−17", false, true),
        ("-17", "17", false, false),
        ("-$5", "$-5.00", false, true),
        ("−$5", "-5 USD", false, true),
        ("≈ 43.0", "43", false, true),
        ("~43", "43", false, true),
        ("approximately 1,200 units", "1200", false, true),
        ("The answer is $1,234.50 per month.", "1234.50", false, true),
        ("$0.50", "$0.51", false, false),
        ("$12.345", "$12.35", false, true),
        ("12.345", "12.35", false, false),
        ("100 servers", "100", false, true),
        ("100 requests", "100 servers", false, true),
        ("100 servers", "100%", false, false),
        ("$100", "100%", false, false),
        ("$100", "100 minutes", false, false),
        ("$100", "€100", false, false),
        ("1e3", "1000", false, true),
        ("0", "0.0", false, true),
        ("0", "0.001", false, false),
    ];

    #[test]
    fn agreement_table() {
        for (a, b, rate, expected) in AGREEMENT {
            let (qa, qb) = (q(a), q(b));
            assert_eq!(
                agree(&qa, &qb, rate),
                expected,
                "{a:?} vs {b:?} (rate question: {rate}): {qa:?} vs {qb:?}"
            );
            assert_eq!(
                agree(&qb, &qa, rate),
                expected,
                "{b:?} vs {a:?} is not symmetric"
            );
        }
    }

    #[test]
    fn random_inputs_never_panic_and_keep_invariants() {
        let pieces = [
            "0", "1", "7", "12", "1,234", ",", ".", "5", "/", " ", "\n", "-", "−", "+", "$", "€",
            "%", "k", "M", "B", "e", "x", "≈", "~", "ANSWER:", "**", "EXPR:", "answer", "is", "=",
            "minutes", "hrs", "servers", "percent", "per", "cent", "million", "<think>",
            "</think>", "é", "日本", "\u{0}", "\t", "approx.", "nd", "1e400",
        ];
        let mut soup = Soup(0x0123_4567_89AB_CDEF);
        let mut parsed = 0;
        for round in 0..6000 {
            let text = if round % 3 == 0 {
                let len = soup.next() % 80;
                let bytes: Vec<u8> = (0..len).map(|_| soup.next() as u8).collect();
                String::from_utf8_lossy(&bytes).into_owned()
            } else {
                let len = soup.next() % 30;
                (0..len).map(|_| soup.pick(&pieces)).collect()
            };
            if let Some(quantity) = parse_quantity(&text) {
                parsed += 1;
                assert!(quantity.value.is_finite(), "{text:?} gave {quantity:?}");
                assert!(agree(&quantity, &quantity, false));
                for gold in canonical_golds(&quantity) {
                    assert!(gold.split_whitespace().count() <= 4, "{gold:?}");
                }
            }
            if let Some(extracted) = extract_answer(&text) {
                if extracted.fell_back {
                    assert!(
                        parse_quantity(&extracted.text).is_some(),
                        "fallback {:?} from {text:?} does not parse",
                        extracted.text
                    );
                }
            }
            let _ = extract_expr(&text);
            let _ = is_rate_question(&text);
        }
        assert!(
            parsed > 1000,
            "only {parsed} soups parsed; the generator is too weak"
        );
    }
}
