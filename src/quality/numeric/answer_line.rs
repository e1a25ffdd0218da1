//! Takes the answer and the expression out of a verifier reply: the last `ANSWER:` / `EXPR:`
//! line, however markdown dresses it, with the model's reasoning left out; without an answer
//! line, the reply's last number.

use super::scan::quantities;
use super::vocabulary::MARKDOWN;
use super::Extracted;
use crate::stages::reply::without_thinking;

/// The labels of a verifier reply's lines, as `prompts/verify.md` asks for them.
const ANSWER: &str = "ANSWER";
const EXPR: &str = "EXPR";

/// The value of the LAST line starting with `ANSWER:` (any case; leading spaces, `*`, `_`, `#`,
/// `>`, `` ` `` and `-` tolerated, as is markdown around the label and the value, e.g.
/// `**ANSWER:** 42`). When that line's value is empty, the next non-blank line that is not itself
/// labelled is the value. Reasoning is ignored as [`without_thinking`] defines it (`<think>`
/// blocks, all after an unclosed `<think>`, text before a lone `</think>`). Without an ANSWER
/// line, falls back to the reply's last number (`fell_back = true`), with its unit.
pub fn extract_answer(reply: &str) -> Option<Extracted> {
    let visible = without_thinking(reply).text;
    let lines: Vec<&str> = visible.lines().collect();
    if let Some(text) = last_labelled(&lines, ANSWER, |value| value) {
        return Some(Extracted {
            text,
            fell_back: false,
        });
    }
    let last = quantities(&visible).pop()?;
    Some(Extracted {
        text: visible.get(last.start..last.end)?.to_string(),
        fell_back: true,
    })
}

/// The expression of the LAST `EXPR:` line (same tolerance as [`extract_answer`], no fallback).
/// A trailing `= result` and a trailing full stop are dropped: `EXPR: 3 * 4 = 12.` → `3 * 4`.
pub fn extract_expr(reply: &str) -> Option<String> {
    let visible = without_thinking(reply).text;
    let lines: Vec<&str> = visible.lines().collect();
    last_labelled(&lines, EXPR, |value| {
        let before_result = value.split('=').next().unwrap_or(value);
        before_result.trim_end().trim_end_matches('.').trim_end()
    })
}

fn strip_markdown(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_whitespace() || MARKDOWN.contains(&c))
}

/// The value after `label:` when `line` is a labelled line.
fn labelled_value<'a>(line: &'a str, label: &str) -> Option<&'a str> {
    let body = line.trim_start_matches(|c: char| {
        c.is_whitespace() || MARKDOWN.contains(&c) || matches!(c, '#' | '>' | '-')
    });
    let head = body.get(..label.len())?;
    if !head.eq_ignore_ascii_case(label) {
        return None;
    }
    let rest = body
        .get(label.len()..)?
        .trim_start_matches(|c: char| c.is_whitespace() || MARKDOWN.contains(&c));
    rest.strip_prefix(':').map(strip_markdown)
}

fn is_labelled(line: &str) -> bool {
    [ANSWER, EXPR]
        .iter()
        .any(|label| labelled_value(line, label).is_some())
}

/// The cleaned value of the last `label:` line that has one (on the line, or on the next
/// non-blank, unlabelled line when the labelled line itself is empty).
fn last_labelled(lines: &[&str], label: &str, clean: impl Fn(&str) -> &str) -> Option<String> {
    lines.iter().enumerate().rev().find_map(|(n, line)| {
        let value = clean(labelled_value(line, label)?);
        if !value.is_empty() {
            return Some(value.to_string());
        }
        let next = lines
            .iter()
            .skip(n + 1)
            .map(|l| strip_markdown(l))
            .find(|l| !l.is_empty())?;
        let value = clean(next);
        (!is_labelled(next) && !value.is_empty()).then(|| value.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extract_answer_takes_the_last_answer_line() {
        let reply = "ANSWER: 10\nWait, I made an error.\nANSWER: 12.5%\nDone.";
        assert_eq!(
            extract_answer(reply),
            Some(Extracted {
                text: "12.5%".to_string(),
                fell_back: false
            })
        );
    }

    #[test]
    fn extract_answer_tolerates_markdown_and_case() {
        for (reply, expected) in [
            ("Work...\n**ANSWER:** $1,234.50", "$1,234.50"),
            ("  **Answer**: `43.2 minutes`", "43.2 minutes"),
            ("### answer: 7", "7"),
            ("- ANSWER: 3/4\n", "3/4"),
            ("ANSWER:\n\n**42**\n", "42"),
            ("ANSWER:   1,200 servers.  ", "1,200 servers."),
        ] {
            assert_eq!(
                extract_answer(reply).map(|e| (e.text, e.fell_back)),
                Some((expected.to_string(), false)),
                "{reply:?}"
            );
        }
    }

    #[test]
    fn extract_answer_ignores_lines_that_do_not_start_with_the_label() {
        let reply = "The ANSWER: 5 is wrong\nANSWERS: 6\nso it is 7";
        assert_eq!(
            extract_answer(reply),
            Some(Extracted {
                text: "7".to_string(),
                fell_back: true
            })
        );
    }

    #[test]
    fn extract_answer_falls_back_to_the_last_number() {
        let reply = "Each server costs $50, so three servers cost about $150 per month.";
        assert_eq!(
            extract_answer(reply),
            Some(Extracted {
                text: "about $150".to_string(),
                fell_back: true
            })
        );
    }

    #[test]
    fn extract_answer_skips_think_blocks() {
        let reply = "<think>ANSWER: 3\nmaybe 4</think>\nANSWER: 5";
        assert_eq!(extract_answer(reply).map(|e| e.text), Some("5".to_string()));
        let truncated = "So the total is 10.\n<think>let me check 11 and 12";
        assert_eq!(
            extract_answer(truncated),
            Some(Extracted {
                text: "10".to_string(),
                fell_back: true
            })
        );
        assert_eq!(
            extract_answer("reasoning: ANSWER: 9\n</think>\nno final answer"),
            None
        );
        assert_eq!(
            extract_answer("reasoning 9 </think>\nANSWER: 8").map(|e| e.text),
            Some("8".to_string())
        );
    }

    #[test]
    fn extract_answer_none_without_numbers() {
        assert_eq!(extract_answer("I cannot determine this."), None);
        assert_eq!(extract_answer(""), None);
        assert_eq!(extract_answer("ANSWER:"), None);
    }

    #[test]
    fn extract_expr_takes_the_last_expr_line() {
        let reply = "EXPR: 1 + 1\nreasoning\n**EXPR:** `1200 * (1 - 15%)` \nANSWER: 1020";
        assert_eq!(extract_expr(reply), Some("1200 * (1 - 15%)".to_string()));
        assert_eq!(extract_expr("EXPR: 3 * 4 = 12."), Some("3 * 4".to_string()));
        assert_eq!(
            extract_expr("expr:\n```\n(2 + 3) / 5\n```"),
            Some("(2 + 3) / 5".to_string())
        );
        assert_eq!(extract_expr("EXPR:\nANSWER: 5"), None);
        assert_eq!(extract_expr("ANSWER: 5"), None);
    }
}
