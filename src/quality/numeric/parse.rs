//! Reads the one quantity a text means when it holds several numbers: what the verifier's answer
//! line, an authored gold or a sentence around them says the answer is, set apart from the
//! numbers that only explain it.

use super::scan::{quantities, Found};
use super::vocabulary::ANSWER_CUES;
use super::{agree, Quantity, UnitClass};

/// Parses a text holding one quantity, possibly with words around it.
///
/// The rule when the text holds several numbers:
/// 1. if they all agree with each other, the first one that carries a unit (else the first);
/// 2. otherwise numbers inside `(…)` or `[…]` are commentary and set aside, unless every number is
///    inside brackets (`3 servers (utilization 87.5%)` → 3 servers);
/// 3. among the rest, the first number after the last `answer` (word); else the first number after
///    the last of `=`, `≈`, `→`, `=>`, `total`, `result`, `equals`, `comes to`, `works out to`,
///    `gives`, `yields`, `so`, `thus`, `hence`, `therefore`; else the first number after the last
///    of `is`, `are`, `was`, `be`, `:`;
/// 4. else the first number (an answer value leads; what follows it explains it).
///
/// `None` when nothing numeric is there.
pub fn parse_quantity(text: &str) -> Option<Quantity> {
    let found = quantities(text);
    let first = found.first()?;
    if found
        .iter()
        .all(|f| agree(&f.quantity, &first.quantity, false))
    {
        let with_unit = found.iter().find(|f| f.quantity.unit != UnitClass::Plain);
        return Some(with_unit.unwrap_or(first).quantity.clone());
    }
    let outside = outside_brackets(text, &found);
    let pool = if outside.is_empty() {
        found.iter().collect()
    } else {
        outside
    };
    answer_cued(text, &pool).map(|f| f.quantity.clone())
}

/// The candidates that do not stand inside `(…)` or `[…]` (`found` is in text order).
fn outside_brackets<'f>(text: &str, found: &'f [Found]) -> Vec<&'f Found> {
    let mut depth = 0usize;
    let mut chars = text.char_indices().peekable();
    found
        .iter()
        .filter(|f| {
            while let Some((_, c)) = chars.next_if(|&(at, _)| at < f.start) {
                depth = match c {
                    '(' | '[' => depth + 1,
                    ')' | ']' => depth.saturating_sub(1),
                    _ => depth,
                };
            }
            depth == 0
        })
        .collect()
}

/// The first number after the strongest cue that has one after it, else the first number
/// (see [`parse_quantity`]).
fn answer_cued<'f>(text: &str, pool: &[&'f Found]) -> Option<&'f Found> {
    let lower = text.to_ascii_lowercase();
    for tier in ANSWER_CUES {
        let best = tier
            .iter()
            .flat_map(|cue| cue_ends(&lower, cue))
            .filter_map(|end| pool.iter().find(|f| f.start >= end).map(|f| (end, *f)))
            .max_by_key(|(end, _)| *end);
        if let Some((_, chosen)) = best {
            return Some(chosen);
        }
    }
    pool.first().copied()
}

/// Byte offsets just after each occurrence of `cue` in `lower`; alphabetic cues must stand as
/// whole words.
fn cue_ends<'a>(lower: &'a str, cue: &'a str) -> impl Iterator<Item = usize> + 'a {
    let wordy = cue.starts_with(|c: char| c.is_ascii_alphabetic());
    lower.match_indices(cue).filter_map(move |(at, _)| {
        let end = at + cue.len();
        let joined = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
        let before = lower.get(..at).and_then(|s| s.chars().next_back());
        let after = lower.get(end..).and_then(|s| s.chars().next());
        (!wordy || !(joined(before) || joined(after))).then_some(end)
    })
}

#[cfg(test)]
mod tests {
    use crate::quality::numeric::tests::{q, quantity};
    use crate::quality::numeric::UnitClass;

    #[test]
    fn takes_the_single_quantity_out_of_a_sentence() {
        assert_eq!(
            q("The answer is $1,234.50 per month."),
            quantity(1234.5, UnitClass::Currency, Some("USD"))
        );
        assert_eq!(
            q("**43.2 minutes**."),
            quantity(43.2, UnitClass::Duration, Some("minutes"))
        );
    }

    #[test]
    fn prefers_the_number_after_an_answer_cue() {
        assert_eq!(q("3 servers × $50 = $150").value, 150.0);
        assert_eq!(q("The total is $150, which covers 3 servers").value, 150.0);
        assert_eq!(q("The answer is 42 (from 6 × 7)").value, 42.0);
        assert_eq!(q("From 6 and 7 the product is 42").value, 42.0);
        assert_eq!(q("3 × 50, so 150").value, 150.0);
        assert_eq!(q("12.5 (that is, 12.5%)").unit, UnitClass::Percent);
    }

    #[test]
    fn sets_bracketed_commentary_aside_and_otherwise_takes_the_first() {
        assert_eq!(q("3 servers (utilization is 87.5%)").value, 3.0);
        assert_eq!(q("12.5% (0.125)").unit, UnitClass::Percent);
        assert_eq!(q("$150 [3 servers at $50 each]").value, 150.0);
        assert_eq!(q("(6 × 7) = 42").value, 42.0);
        assert_eq!(q("(about 40) (exactly 42)").value, 40.0);
        assert_eq!(q("page 10 of 12").value, 10.0);
    }
}
