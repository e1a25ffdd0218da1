//! The text units every structure rule reads: lines with their byte offsets, sentence-like units,
//! short line labels (`Customer:`, `**Q:**`, `Dana (support):`), words, and bracket balance. Structures are
//! recognised from these shapes, never from a fixed spelling, so one definition serves them all.

use crate::util::bytescan::{ascii_word_count, ByteSet};

/// One line of a text, without its line break, and where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'t> {
    pub start: usize,
    pub text: &'t str,
}

/// Every line of `text`, with lines inside ``` code fences marked so structure rules can skip
/// them (a config file inside a prompt is not a speaker turn or a snippet label).
pub fn lines(text: &str) -> impl Iterator<Item = (Line<'_>, bool)> {
    let mut offset = 0;
    let mut in_fence = false;
    text.split_inclusive('\n').map(move |raw| {
        let body = raw.strip_suffix('\n').unwrap_or(raw);
        let body = body.strip_suffix('\r').unwrap_or(body);
        let fence = body.trim_start().starts_with("```");
        let line = Line {
            start: offset,
            text: body,
        };
        let fenced = in_fence || fence;
        if fence {
            in_fence = !in_fence;
        }
        offset += raw.len();
        (line, fenced)
    })
}

/// The line of `text` that holds the byte at `at` (a character boundary before its end), as
/// [`lines`] gives it.
pub fn line_at(text: &str, at: usize) -> Line<'_> {
    let before = text.get(..at).unwrap_or_default();
    let start = before.rfind('\n').map_or(0, |newline| newline + 1);
    let from_start = text.get(start..).unwrap_or_default();
    let body = from_start.split('\n').next().unwrap_or_default();
    Line {
        start,
        text: body.strip_suffix('\r').unwrap_or(body),
    }
}

/// The line of `text` before `line`, if `line` is not the first.
pub fn line_before<'t>(text: &'t str, line: Line<'t>) -> Option<Line<'t>> {
    let newline = line.start.checked_sub(1)?;
    Some(line_at(text, newline))
}

/// Number of whitespace-separated words (as `split_whitespace` counts them).
pub fn word_count(text: &str) -> usize {
    if !text.is_ascii() {
        return text.split_whitespace().count();
    }
    ascii_word_count(text.as_bytes())
}

/// A sentence-like unit: a piece of one line that ends at `.`, `?` or `!` followed by a space,
/// or at the end of the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit<'t> {
    pub start: usize,
    pub text: &'t str,
}

/// The marks that may end a sentence-like unit.
const SENTENCE_ENDS: ByteSet<3> = ByteSet {
    bytes: *b".?!",
    below: 0,
};

/// The non-blank units of `text` in order, outside code fences.
pub fn units(text: &str) -> Vec<Unit<'_>> {
    let mut out = Vec::new();
    for (line, fenced) in lines(text) {
        if fenced {
            continue;
        }
        let bytes = line.text.as_bytes();
        let mut from = 0;
        let mut search = 0;
        while let Some(at) = SENTENCE_ENDS.find(bytes, search) {
            search = at + 1;
            if bytes.get(at + 1).is_some_and(u8::is_ascii_whitespace) {
                push_unit(&mut out, line, from, at + 1);
                from = at + 1;
            }
        }
        push_unit(&mut out, line, from, bytes.len());
    }
    out
}

fn push_unit<'t>(out: &mut Vec<Unit<'t>>, line: Line<'t>, from: usize, to: usize) {
    let Some(piece) = line.text.get(from..to) else {
        return;
    };
    let trimmed_start = piece.len() - piece.trim_start().len();
    let text = piece.trim();
    if !text.is_empty() {
        out.push(Unit {
            start: line.start + from + trimmed_start,
            text,
        });
    }
}

/// Most words a line label may have (`Customer success manager:` has three).
const LABEL_MAX_WORDS: usize = 4;
/// Most characters a line label may have.
const LABEL_MAX_CHARS: usize = 40;

/// A short label at the start of a line, followed by a colon: `Customer:`, `**Agent:**`,
/// `**Agent**:`, `[User]:`, `> Dana (support):`, `Q:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// The label as a speaker or role is compared: lower-case, formatting removed, spaces single.
    pub key: String,
    /// The label as written, without formatting.
    pub shown: String,
    /// Byte offset in the line where the text after the colon starts.
    pub rest: usize,
    /// The label starts with a capital letter or is set off by formatting: the shape of a
    /// speaker or a role, not of a `key: value` setting.
    pub capitalised: bool,
}

/// The label at the start of `line`, if it has one.
pub fn line_label(line: &str) -> Option<Label> {
    let lead = line.len() - line.trim_start_matches([' ', '\t', '>']).len();
    let mut at = lead;
    let mut formatted = false;
    for marker in ["**", "__", "*", "_", "["] {
        if line.get(at..).is_some_and(|rest| rest.starts_with(marker)) {
            at += marker.len();
            formatted = true;
            break;
        }
    }
    let colon = at + line.get(at..)?.find(':')?;
    let raw = line.get(at..colon)?;
    let label = raw.trim_end_matches(['*', '_', ']']).trim();
    let after = line.get(colon + 1..)?;
    let after_markers = after.trim_start_matches(['*', '_', ']']);
    let rest = colon + 1 + (after.len() - after_markers.len());
    let plausible = !label.is_empty()
        && label.len() <= LABEL_MAX_CHARS
        && word_count(label) <= LABEL_MAX_WORDS
        && label.chars().next().is_some_and(char::is_alphabetic)
        && !label.contains(['.', '?', '!', ',', ';', '"', '`', '*', '[', ']', '{', '}'])
        && after_markers
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace());
    if !plausible {
        return None;
    }
    Some(Label {
        key: label
            .to_lowercase()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        shown: label.to_string(),
        rest,
        capitalised: formatted || label.chars().next().is_some_and(char::is_uppercase),
    })
}

/// A line that only announces what follows: a lone label (`Question:`), a markdown heading or a
/// bold title line with nothing else on it.
pub fn is_header_line(line: &str) -> bool {
    let text = line.trim();
    if text.is_empty() {
        return false;
    }
    if text.starts_with('#') {
        return true;
    }
    if let Some(label) = line_label(text) {
        if text
            .get(label.rest..)
            .is_some_and(|rest| rest.trim().is_empty())
        {
            return true;
        }
    }
    let bold = text.strip_prefix("**").and_then(|t| t.strip_suffix("**"));
    bold.is_some_and(|inner| !inner.contains("**") && word_count(inner) <= 8)
        || (text.ends_with(':') && word_count(text) <= 8)
}

/// `text` without markdown emphasis around it and without closing quotes or brackets after it.
pub fn unwrapped(text: &str) -> &str {
    text.trim()
        .trim_start_matches(['*', '_', '"', '\'', '“', '‘', '(', '>'])
        .trim_end_matches(['*', '_', '"', '\'', '”', '’', ')'])
        .trim()
}

/// The bytes [`unbalanced`] reads: brackets and backticks.
const BRACKETS: ByteSet<7> = ByteSet {
    bytes: *b"`()[]{}",
    below: 0,
};
const BACKTICK: ByteSet<1> = ByteSet {
    bytes: [b'`'],
    below: 0,
};

/// The first bracket or code fence that does not close, or closes the wrong opener.
pub fn unbalanced(text: &str) -> Option<String> {
    if fence_marks(text) % 2 == 1 {
        return Some("a ``` code fence is never closed".into());
    }
    let bytes = text.as_bytes();
    let mut open: Vec<u8> = Vec::new();
    let mut in_code = false;
    let mut from = 0;
    // Every byte looked at is ASCII, so it is a whole character, and a character boundary.
    while let Some(at) = BRACKETS.find(bytes, from) {
        from = at + 1;
        let byte = bytes[at];
        if byte == b'`' {
            in_code = !in_code;
        }
        if in_code {
            continue;
        }
        let wanted = match byte {
            b'(' | b'[' | b'{' => {
                open.push(byte);
                continue;
            }
            b')' => b'(',
            b']' => b'[',
            b'}' => b'{',
            _ => continue,
        };
        if open.last() == Some(&wanted) {
            open.pop();
        } else if !(byte == b')' && closes_a_marker(text.get(..at).unwrap_or_default())) {
            return Some(format!(
                "{:?} closes nothing that is open",
                char::from(byte)
            ));
        }
    }
    open.last()
        .map(|c| format!("{:?} is opened and never closed", char::from(*c)))
}

/// Non-overlapping ``` in `text`, as `text.matches("```").count()` counts them: a run of `n`
/// backticks holds `n / 3`.
fn fence_marks(text: &str) -> usize {
    let bytes = text.as_bytes();
    let (mut marks, mut run, mut after_previous) = (0, 0, None);
    while let Some(at) = BACKTICK.find(bytes, after_previous.unwrap_or(0)) {
        run = if after_previous == Some(at) {
            run + 1
        } else {
            1
        };
        if run == 3 {
            marks += 1;
            run = 0;
        }
        after_previous = Some(at + 1);
    }
    marks
}

/// A `)` after `before` that closes nothing still belongs: it ends a list marker (`a)`, `12)`)
/// or an emoticon (`:)`).
fn closes_a_marker(before: &str) -> bool {
    let token_chars = before
        .chars()
        .rev()
        .take_while(|c| !c.is_whitespace())
        .take(3)
        .count();
    let list_marker = (1..=2).contains(&token_chars);
    let emoticon = before.ends_with([':', ';']);
    list_marker || emoticon
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_carry_offsets_and_fences() {
        let text = "a\n```\nx: 1\n```\nb";
        let found: Vec<(Line, bool)> = lines(text).collect();
        let shown: Vec<(&str, usize, bool)> =
            found.iter().map(|(l, f)| (l.text, l.start, *f)).collect();
        assert_eq!(
            shown,
            [
                ("a", 0, false),
                ("```", 2, true),
                ("x: 1", 6, true),
                ("```", 11, true),
                ("b", 15, false)
            ]
        );
    }

    #[test]
    fn units_split_at_sentence_ends_and_lines_but_not_inside_numbers() {
        let text = "Version 1.25 is out. Is it? Yes!\nNext line";
        let found: Vec<&str> = units(text).iter().map(|u| u.text).collect();
        assert_eq!(
            found,
            ["Version 1.25 is out.", "Is it?", "Yes!", "Next line"]
        );
        let second = units(text)[1];
        assert_eq!(
            &text[second.start..second.start + second.text.len()],
            "Is it?"
        );
    }

    #[test]
    fn labels_are_short_and_followed_by_a_colon() {
        let cases = [
            ("Customer: hi", Some(("customer", "hi"))),
            ("**Agent:** hello", Some(("agent", "hello"))),
            ("**Agent**: hello", Some(("agent", "hello"))),
            ("[User]: hey", Some(("user", "hey"))),
            ("> Dana (support): yes", Some(("dana (support)", "yes"))),
            ("Q: why?", Some(("q", "why?"))),
            ("Question:", Some(("question", ""))),
            ("https://example.com", None),
            ("10:30 is the time", None),
            ("The time is 10:30.", None),
            ("A long sentence that is not a label at all: value", None),
            ("Note, however: this", None),
        ];
        for (line, expected) in cases {
            let got = line_label(line).map(|l| (l.key.clone(), line[l.rest..].trim().to_string()));
            let expected = expected.map(|(k, r)| (k.to_string(), r.to_string()));
            assert_eq!(got, expected, "{line}");
        }
        assert!(line_label("Agent: x").unwrap().capitalised);
        assert!(!line_label("region: eu-west-1").unwrap().capitalised);
    }

    /// `unbalanced` as it was before it read bytes: a character at a time.
    fn unbalanced_by_chars(text: &str) -> Option<String> {
        if text.matches("```").count() % 2 == 1 {
            return Some("a ``` code fence is never closed".into());
        }
        let mut open: Vec<char> = Vec::new();
        let mut in_code = false;
        let mut previous = ' ';
        let mut token_len = 0usize;
        for c in text.chars() {
            if c == '`' {
                in_code = !in_code;
            }
            if !in_code {
                match c {
                    '(' | '[' | '{' => open.push(c),
                    ')' | ']' | '}' => {
                        let wanted = match c {
                            ')' => '(',
                            ']' => '[',
                            _ => '{',
                        };
                        if open.last() == Some(&wanted) {
                            open.pop();
                        } else {
                            let list_marker = c == ')' && (1..=2).contains(&token_len);
                            let emoticon = c == ')' && matches!(previous, ':' | ';');
                            if !(list_marker || emoticon) {
                                return Some(format!("{c:?} closes nothing that is open"));
                            }
                        }
                    }
                    _ => {}
                }
            }
            token_len = if c.is_whitespace() { 0 } else { token_len + 1 };
            previous = c;
        }
        open.last()
            .map(|c| format!("{c:?} is opened and never closed"))
    }

    use proptest::prelude::*;

    proptest::proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..Default::default() })]

        #[test]
        fn word_count_counts_as_split_whitespace_does(
            text in proptest::prop_oneof![
                "[ \t\n\u{b}\u{c}\r\u{1c}\u{1f}a-z.,]{0,40}",
                "([ \t\n\u{b}\u{85}\u{a0}\u{2003}\u{3000}]|[a-zé]{1,5}|.){0,40}",
            ],
        ) {
            proptest::prop_assert_eq!(word_count(&text), text.split_whitespace().count());
        }

        #[test]
        fn line_at_and_line_before_are_the_lines_that_lines_gives(
            text in "([a-z :]{0,6}(\n|\r\n|\r)?|é){0,12}",
            at_seed in any::<usize>(),
        ) {
            let boundaries: Vec<usize> = text.char_indices().map(|(at, _)| at).collect();
            if let Some(&at) = boundaries.get(at_seed % boundaries.len().max(1)) {
                let all: Vec<Line> = lines(&text).map(|(line, _)| line).collect();
                let index = all.iter().rposition(|line| line.start <= at).unwrap_or_default();
                proptest::prop_assert_eq!(line_at(&text, at), all[index]);
                let before = index.checked_sub(1).map(|i| all[i]);
                proptest::prop_assert_eq!(line_before(&text, all[index]), before);
            }
        }

        #[test]
        fn unbalanced_finds_what_reading_characters_found(
            text in proptest::prop_oneof![
                "[()\\[\\]{}`:; a1\n]{0,30}",
                "([()\\[\\]{}`:;]|[ \u{a0}\u{2003}\n]|[aé1İ]{1,3}|.){0,30}",
            ],
        ) {
            proptest::prop_assert_eq!(unbalanced(&text), unbalanced_by_chars(&text));
        }
    }

    #[test]
    fn header_lines_announce_without_content() {
        for header in [
            "Question:",
            "## Snippets",
            "**Account memory**",
            "Stored facts:",
        ] {
            assert!(is_header_line(header), "{header}");
        }
        for line in ["Customer: hi", "The plan is Enterprise.", ""] {
            assert!(!is_header_line(line), "{line}");
        }
    }
}
