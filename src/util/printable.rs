//! Text from outside made safe to print: control characters escaped and the length bounded, so
//! a hostile server string or a release's text cannot move the cursor or flood a terminal, a
//! log, a card or a diff table.

/// Server text made safe to print: control characters escaped, at most 300 characters kept.
pub fn printable(text: &str) -> String {
    const LIMIT: usize = 300;
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == LIMIT {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_text_has_no_control_characters_and_a_bounded_length() {
        assert_eq!(printable("in_progress"), "in_progress");
        assert_eq!(printable("a\nb\u{1b}[31m"), "a\\nb\\u{1b}[31m");
        assert_eq!(printable(&"x".repeat(1000)).chars().count(), 301);
    }
}
