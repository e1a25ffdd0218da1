//! The card's grading function, the single definition every validation rule and check uses:
//! lower-case, every char outside `[a-z0-9 ]` becomes a space, then substring match of any gold;
//! and the audit's reading of whether an answer gives a gold at all (whole words).

/// `re.sub(r"[^a-z0-9 ]", " ", t.lower())` from the card. Python's `lower()` maps non-ASCII
/// letters to lower-case letters that are still outside `[a-z0-9 ]`, so each becomes one space.
pub fn norm(text: &str) -> String {
    let keep = |c: char| match c {
        'a'..='z' | '0'..='9' | ' ' => c,
        _ => ' ',
    };
    if text.is_ascii() {
        let kept: Vec<u8> = text
            .bytes()
            .map(|b| match b.to_ascii_lowercase() {
                b @ (b'a'..=b'z' | b'0'..=b'9' | b' ') => b,
                _ => b' ',
            })
            .collect();
        return String::from_utf8(kept).unwrap_or_default();
    }
    text.chars()
        .flat_map(char::to_lowercase)
        .map(keep)
        .collect()
}

/// The words of `text` as the grader reads them: `norm`, split at spaces.
pub fn graded_words(text: &str) -> Vec<String> {
    norm(text).split_whitespace().map(str::to_owned).collect()
}

/// True when any gold, normalised, is a substring of the normalised answer (the card's `graded`).
pub fn graded<S: AsRef<str>>(answer: &str, golds: &[S]) -> bool {
    let answer = norm(answer);
    golds.iter().any(|g| answer.contains(&norm(g.as_ref())))
}

/// The most digits of a bare whole number the grader finds inside too many other answers.
pub const LENIENT_DIGITS: usize = 2;

/// True when `gold` is written as a bare whole number of at most [`LENIENT_DIGITS`] digits
/// (`5`, `45`): the grader then takes any answer holding those digits, inside another number or
/// beside another unit (`5` in `15 years` and `2025`). In the audit's leniency check such golds
/// graded 3–12 of the other items' answers in a local run of 100 items. A gold that writes its
/// unit (`10%`, `$20`) grades as leniently but is how answers give the value, so it is not one.
pub fn lenient_bare_number(gold: &str) -> bool {
    bare_number(gold) && gold.trim().len() <= LENIENT_DIGITS
}

/// True when `gold` is written as a bare whole number (`200`), with no unit or separator.
pub fn bare_number(gold: &str) -> bool {
    let digits = gold.trim();
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// True when some gold, normalised, stands in the normalised answer as whole words: where the
/// grader finds it and neither end of the find cuts a word. The grader also credits a gold inside
/// a longer word (`error` in `errors='ignore'`, `region` in `regionName`, `2 days` in `12 days`),
/// but such an answer names another argument or another duration.
pub fn states<S: AsRef<str>>(answer: &str, golds: &[S]) -> bool {
    let answer = norm(answer);
    let bytes = answer.as_bytes();
    golds.iter().any(|gold| {
        let gold = norm(gold.as_ref());
        !gold.trim().is_empty()
            && answer.match_indices(&gold).any(|(start, found)| {
                let end = start + found.len();
                let opens = gold.starts_with(' ') || start == 0 || bytes[start - 1] == b' ';
                let closes = gold.ends_with(' ') || end == bytes.len() || bytes[end] == b' ';
                opens && closes
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn norm_matches_the_card() {
        assert_eq!(norm("Kubernetes 1.25!"), "kubernetes 1 25 ");
        assert_eq!(norm("$1,234.50"), " 1 234 50");
        assert_eq!(norm("Tab\there"), "tab here");
        assert_eq!(norm("Ünïcode İ"), " n code i ");
    }

    #[test]
    fn graded_is_substring_of_any_gold() {
        assert!(graded("The minimum is version 1.25 now.", &["1.25"]));
        assert!(!graded("The minimum is 1.22.", &["1.25", "version 1.25"]));
        assert!(graded("US-EAST-1", &["us east 1"]));
    }

    #[test]
    fn states_is_graded_without_cutting_a_word() {
        assert!(states(
            "BigQuery's current data access setting is private.",
            &["private"]
        ));
        assert!(states("$600 per user per month", &["$600"]));
        assert!(states("`timeout=10`", &["timeout"]));
        assert!(states("2 days", &["2 days"]));
        assert!(!states("`errors='ignore'`", &["error", "error="]));
        assert!(!states(
            "With the `regionName` argument",
            &["region", "region="]
        ));
        assert!(!states("12 days", &["2 days"]));
        assert!(!states("2 daysless", &["2 days"]));
        assert!(
            !states("anything", &["", "  "]),
            "a blank gold states nothing"
        );
    }
}
