//! The card's grading function, the single definition every validation rule and check uses:
//! lower-case, every char outside `[a-z0-9 ]` becomes a space, then substring match of any gold.

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

/// True when any gold, normalised, is a substring of the normalised answer (the card's `graded`).
pub fn graded<S: AsRef<str>>(answer: &str, golds: &[S]) -> bool {
    let answer = norm(answer);
    golds.iter().any(|g| answer.contains(&norm(g.as_ref())))
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
}
