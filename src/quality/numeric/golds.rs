//! Writes the golds of a repaired key: the forms a correct answer is usually written in, each
//! exact (a rounded short form would be a wrong gold), so the card's substring grader accepts
//! natural answers and nothing else.

use super::vocabulary::currency_symbol;
use super::{Quantity, UnitClass};
use crate::quality::grade;

/// Significant decimals kept by `format_value` (and therefore by every gold).
const GOLD_DECIMALS: usize = 6;

/// Golds for a repaired key, in this order: the shortest decimal form, the same with thousands
/// separators (when |value| ≥ 1000), then the unit form: `12.5%` first for Percent (then the bare
/// numbers), `$1,234.5` for Currency (the code's symbol), `43.2 minutes` for Duration and Count
/// with a word. Values of a million or more that have at most three decimals in millions (or
/// billions) also get `1.5 million` and `1.5M`, so the common short forms grade as correct.
/// Entries whose `grade::norm` forms are equal are kept once. Empty for a non-finite value.
pub fn canonical_golds(q: &Quantity) -> Vec<String> {
    if !q.value.is_finite() {
        return Vec::new();
    }
    let plain = format_value(q.value);
    let grouped = with_separators(&plain);
    let mut golds = match q.unit {
        UnitClass::Percent => vec![format!("{plain}%"), format!("{grouped}%"), plain, grouped],
        UnitClass::Currency => {
            let symbol = q
                .unit_word
                .as_deref()
                .and_then(currency_symbol)
                .unwrap_or('$');
            let money = match grouped.strip_prefix('-') {
                Some(digits) => format!("-{symbol}{digits}"),
                None => format!("{symbol}{grouped}"),
            };
            vec![plain, grouped, money]
        }
        UnitClass::Duration | UnitClass::Count => {
            let worded = q.unit_word.as_ref().map(|word| format!("{grouped} {word}"));
            [Some(plain), Some(grouped), worded]
                .into_iter()
                .flatten()
                .collect()
        }
        UnitClass::Plain => vec![plain, grouped],
    };
    if matches!(
        q.unit,
        UnitClass::Plain | UnitClass::Count | UnitClass::Currency
    ) {
        golds.extend(scaled_forms(q.value));
    }
    let mut seen: Vec<String> = Vec::new();
    golds.retain(|gold| {
        let normalised = grade::norm(gold);
        let fresh = !seen.contains(&normalised);
        seen.push(normalised);
        fresh
    });
    golds
}

/// Shortest decimal form without exponent: at most six significant decimals (six decimals, plus
/// the zeros that lead a value below 1, so a tiny value never becomes `0`), trailing zeros and a
/// trailing point trimmed, `-0` written `0` (`1234.5`, `0.333333`, `0.0000123457`, `1200`).
/// Non-finite values print as Rust does (`NaN`, `inf`).
pub fn format_value(value: f64) -> String {
    let leading_zeros = if value != 0.0 && value.abs() < 1.0 {
        ((-value.abs().log10()).ceil() as usize).saturating_sub(1)
    } else {
        0
    };
    let fixed = format!(
        "{value:.precision$}",
        precision = GOLD_DECIMALS + leading_zeros
    );
    let trimmed = if fixed.contains('.') {
        fixed.trim_end_matches('0').trim_end_matches('.')
    } else {
        fixed.as_str()
    };
    if trimmed == "-0" {
        "0".to_string()
    } else {
        trimmed.to_string()
    }
}

/// `1234567.5` → `1,234,567.5`; shorter integer parts are returned unchanged.
pub fn with_separators(plain: &str) -> String {
    let (sign, unsigned) = match plain.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", plain),
    };
    let (integer, fraction) = match unsigned.split_once('.') {
        Some((integer, fraction)) => (integer, Some(fraction)),
        None => (unsigned, None),
    };
    let digits = integer.chars().count();
    let mut grouped = String::from(sign);
    for (n, c) in integer.chars().enumerate() {
        if n > 0 && (digits - n) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    if let Some(fraction) = fraction {
        grouped.push('.');
        grouped.push_str(fraction);
    }
    grouped
}

/// `1.5 million` and `1.5M` (or billions) when the value is a whole number of thousandths of
/// that scale; nothing otherwise, since a rounded short form would be a wrong gold.
fn scaled_forms(value: f64) -> Vec<String> {
    let scales = [(1e9, "billion", "B"), (1e6, "million", "M")];
    let Some((scale, word, letter)) = scales.into_iter().find(|(s, _, _)| value.abs() >= *s) else {
        return Vec::new();
    };
    let thousandths = value / scale * 1000.0;
    if (thousandths - thousandths.round()).abs() > 1e-6 * thousandths.abs() {
        return Vec::new();
    }
    let short = format_value(thousandths.round() / 1000.0);
    vec![format!("{short} {word}"), format!("{short}{letter}")]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quality::grade::graded;
    use crate::quality::numeric::agree;
    use crate::quality::numeric::tests::{q, quantity};

    #[test]
    fn canonical_golds_for_the_documented_examples() {
        assert_eq!(
            canonical_golds(&q("43.2 minutes")),
            ["43.2", "43.2 minutes"]
        );
        assert_eq!(
            canonical_golds(&q("$1,234.50")),
            ["1234.5", "1,234.5", "$1,234.5"]
        );
        assert_eq!(canonical_golds(&q("12.5%")), ["12.5%", "12.5"]);
        assert_eq!(
            canonical_golds(&q("1500%")),
            ["1500%", "1,500%", "1500", "1,500"]
        );
        assert_eq!(
            canonical_golds(&q("1.2k requests")),
            ["1200", "1,200", "1,200 requests"]
        );
        assert_eq!(canonical_golds(&q("-17")), ["-17"]);
        assert_eq!(canonical_golds(&q("−$5")), ["-5", "-$5"]);
        assert_eq!(canonical_golds(&q("€99.90")), ["99.9", "€99.9"]);
        assert_eq!(
            canonical_golds(&q("$1.5M")),
            ["1500000", "1,500,000", "$1,500,000", "1.5 million", "1.5M"]
        );
        assert_eq!(canonical_golds(&q("1/3")), ["0.333333"]);
        assert_eq!(canonical_golds(&q("0.0000123")), ["0.0000123"]);
        assert_eq!(
            canonical_golds(&quantity(f64::NAN, UnitClass::Plain, None)),
            Vec::<String>::new()
        );
    }

    #[test]
    fn canonical_golds_are_short_unique_and_grade_natural_answers() {
        let cases: [(&str, &[&str]); 12] = [
            (
                "$1,234.50",
                &[
                    "$1,234.50",
                    "1,234.50 USD",
                    "The total is $1,234.50 per month.",
                    "1234.50",
                ],
            ),
            ("43.2 minutes", &["43.2 minutes", "about 43.2 min", "43.2"]),
            ("12.5%", &["12.5%", "12.5 percent", "a 12.5% margin"]),
            ("1.2k", &["1,200", "1200 requests"]),
            ("$1.5M", &["$1,500,000", "$1.5M", "1.5 million dollars"]),
            ("-17", &["-17", "−17", "a change of -17"]),
            ("3/4", &["0.75"]),
            ("2 1/2 hours", &["2.5 hours", "2.5 h"]),
            ("≈ 43.0", &["43", "≈ 43"]),
            (
                "1,000,000 users",
                &["1,000,000 users", "1000000", "1 million users"],
            ),
            ("0.125", &["0.125", "0.125 of the total"]),
            ("$2B", &["$2B", "2 billion dollars", "$2,000,000,000"]),
        ];
        for (key, answers) in cases {
            let golds = canonical_golds(&q(key));
            let mut normalised: Vec<String> = golds.iter().map(|g| grade::norm(g)).collect();
            normalised.sort();
            normalised.dedup();
            assert_eq!(normalised.len(), golds.len(), "duplicates in {golds:?}");
            for gold in &golds {
                assert!(gold.split_whitespace().count() <= 4, "{gold:?} is too long");
                assert!(
                    agree(&q(gold), &q(key), false),
                    "{gold:?} does not agree with {key:?}"
                );
            }
            for answer in answers {
                assert!(
                    graded(answer, &golds),
                    "{answer:?} is not graded correct by {golds:?}"
                );
            }
        }
    }

    #[test]
    fn format_value_is_shortest_without_exponent() {
        assert_eq!(format_value(1234.5), "1234.5");
        assert_eq!(format_value(1200.0), "1200");
        assert_eq!(format_value(0.1 + 0.2), "0.3");
        assert_eq!(format_value(1.0 / 3.0), "0.333333");
        assert_eq!(format_value(1e20), "100000000000000000000");
        assert_eq!(format_value(-0.0000001), "-0.0000001");
        assert_eq!(format_value(0.0000123456789), "0.0000123457");
        assert_eq!(format_value(0.001), "0.001");
        assert_eq!(format_value(-0.0), "0");
        assert_eq!(format_value(-17.0), "-17");
        assert_eq!(format_value(2.5e-5), "0.000025");
    }
}
