//! Prompts that are not benchmark items whatever their category: a placeholder (`…`,
//! `[prompt]`, `<your question here>`, a lone label), a prompt below its category's minimum
//! length, and a prompt cut off mid-sentence (unbalanced brackets or code fences, a dangling
//! word or comma, a trailing ellipsis).

use super::text::{line_label, unbalanced, word_count};
use super::{reject, Reason, Rejection};
use crate::quality::grade::norm;
use crate::stages::item::quote;
use crate::util::bytescan::contains_ignoring_ascii_case;

/// Placeholder phrases, as the grader normalises them, that a short prompt may consist of.
const PLACEHOLDER_PHRASES: &[&str] = &[
    "prompt",
    "question",
    "your question",
    "your question here",
    "question here",
    "prompt here",
    "insert question",
    "insert prompt",
    "insert question here",
    "insert prompt here",
    "enter question",
    "write the question here",
    "placeholder",
    "tbd",
    "todo",
    "n a",
    "example",
    "sample prompt",
    "example prompt",
    "item",
];

/// Most words a whole-prompt placeholder (`[insert the question here]`) has.
const PLACEHOLDER_MAX_WORDS: usize = 8;

/// Bytes in the longest of the [`PLACEHOLDER_PHRASES`].
const PLACEHOLDER_PHRASE_MAX_LEN: usize = {
    let mut longest = 0;
    let mut i = 0;
    while i < PLACEHOLDER_PHRASES.len() {
        if PLACEHOLDER_PHRASES[i].len() > longest {
            longest = PLACEHOLDER_PHRASES[i].len();
        }
        i += 1;
    }
    longest
};

/// `prompt` is a placeholder rather than a prompt.
pub fn check_placeholder(prompt: &str) -> Result<(), Rejection> {
    let trimmed = prompt.trim();
    let normalised = (!normalised_is_plain_prose(trimmed)).then(|| {
        norm(trimmed)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    });
    let normalised = normalised.as_deref();
    let why = if normalised.is_some_and(str::is_empty) {
        Some("it has no letter or digit".to_string())
    } else if normalised.is_some_and(|n| n.contains("lorem ipsum")) {
        Some("it is lorem ipsum filler".to_string())
    } else if trimmed.contains("{{") && trimmed.contains("}}") {
        Some("it holds an unfilled `{{…}}` template slot".to_string())
    } else if is_bracketed(trimmed) && word_count(trimmed) <= PLACEHOLDER_MAX_WORDS {
        Some("it is one bracketed slot".to_string())
    } else if is_lone_label(trimmed) {
        Some("it is a lone label".to_string())
    } else {
        normalised
            .filter(|n| PLACEHOLDER_PHRASES.contains(n))
            .map(|phrase| format!("{phrase:?} is a placeholder"))
    };
    match why {
        Some(why) => reject(
            Reason::PlaceholderPrompt,
            format!("the prompt {:?} is a placeholder: {why}", quote(trimmed)),
        ),
        None => Ok(()),
    }
}

/// Proves without normalising `text` that its normalised words are neither empty, nor lorem
/// ipsum, nor a placeholder phrase: an ASCII text (normalised byte for byte) with more letters
/// and digits than the longest phrase has bytes and no `lorem` in any case. Non-ASCII text is
/// never proven here, since lower-casing may turn a non-ASCII letter into an ASCII one.
fn normalised_is_plain_prose(text: &str) -> bool {
    text.is_ascii()
        && text
            .bytes()
            .filter(|b| b.is_ascii_alphanumeric())
            .nth(PLACEHOLDER_PHRASE_MAX_LEN)
            .is_some()
        && !contains_ignoring_ascii_case(text.as_bytes(), b"lorem")
}

fn is_bracketed(text: &str) -> bool {
    [('<', '>'), ('[', ']'), ('{', '}'), ('(', ')')]
        .iter()
        .any(|(open, close)| text.starts_with(*open) && text.ends_with(*close))
}

fn is_lone_label(text: &str) -> bool {
    !text.contains('\n')
        && line_label(text).is_some_and(|label| {
            text.get(label.rest..)
                .is_some_and(|rest| rest.trim().is_empty())
        })
}

/// The prompt has at least `min_words` words.
pub fn check_length(prompt: &str, min_words: usize) -> Result<(), Rejection> {
    let words = word_count(prompt);
    if words >= min_words {
        return Ok(());
    }
    reject(
        Reason::PromptTooShort,
        format!("the prompt has {words} word(s); this category needs at least {min_words}"),
    )
}

/// Words a complete sentence does not end on.
pub(super) const DANGLING_WORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "by", "for", "with",
    "from", "into", "is", "are", "was", "were", "be", "that", "which", "as", "if", "than", "its",
    "their", "our", "your", "my", "this", "these", "those",
];
/// Characters a complete prompt does not end on.
const DANGLING_ENDS: &[char] = &[
    ',', ';', ':', '(', '[', '{', '-', '/', '\\', '&', '+', '=', '|',
];
/// A final line this short ending in a comma is a sign-off ("Thanks,"), not a cut sentence.
const SIGN_OFF_MAX_WORDS: usize = 3;

/// The prompt ends where a sentence cannot: inside brackets or a code fence, on a dangling word
/// or mark, or on an ellipsis.
pub fn check_complete(prompt: &str) -> Result<(), Rejection> {
    let trimmed = prompt.trim_end();
    if let Some(problem) = unbalanced(trimmed) {
        return reject(
            Reason::PromptCut,
            format!("the prompt looks cut off: {problem}"),
        );
    }
    let last_line = trimmed.lines().last().unwrap_or_default().trim();
    let sign_off = trimmed.ends_with(',') && word_count(last_line) <= SIGN_OFF_MAX_WORDS;
    let last_word = trimmed
        .rsplit(|c: char| c.is_whitespace())
        .next()
        .unwrap_or_default()
        .to_lowercase();
    let why = if trimmed.ends_with("...") || trimmed.ends_with('…') {
        Some("it ends on an ellipsis".to_string())
    } else if trimmed.ends_with(DANGLING_ENDS) && !sign_off {
        Some(format!(
            "it ends on {:?}",
            trimmed.chars().last().unwrap_or_default()
        ))
    } else if DANGLING_WORDS.contains(&last_word.as_str()) {
        Some(format!("it ends on the word {last_word:?}"))
    } else {
        None
    };
    match why {
        Some(why) => reject(
            Reason::PromptCut,
            format!(
                "the prompt looks cut off mid-sentence: {why} ({:?})",
                tail(trimmed)
            ),
        ),
        None => Ok(()),
    }
}

fn tail(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let from = chars.len().saturating_sub(40);
    let end: String = chars.get(from..).unwrap_or_default().iter().collect();
    if from > 0 {
        format!("…{end}")
    } else {
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(result: Result<(), Rejection>) -> &'static str {
        result.map_or_else(|r| r.reason.code(), |()| "ok")
    }

    #[test]
    fn placeholders() {
        for prompt in [
            "…",
            "...",
            "[prompt]",
            "<your question here>",
            "Question:",
            "Prompt: ",
            "{{question}}",
            "Lorem ipsum dolor sit amet?",
            "TBD",
        ] {
            assert_eq!(
                code(check_placeholder(prompt)),
                "placeholder_prompt",
                "{prompt}"
            );
        }
        for prompt in ["Which port does PostgreSQL use?", "[Doc 1] a\n[Doc 2] b"] {
            assert_eq!(code(check_placeholder(prompt)), "ok", "{prompt}");
        }
    }

    #[test]
    fn cut_prompts() {
        for prompt in [
            "Your claim-intake worker (Python 3.11, requests} -j",
            "Why does this fail?\n```python\nimport os",
            "The retention period for audit logs is",
            "Which flag enables race detection and",
            "We need the value for the EU cluster,",
            "Tell me more about the...",
            "What is the limit (per tenant?",
        ] {
            assert_eq!(code(check_complete(prompt)), "prompt_cut", "{prompt}");
        }
        for prompt in [
            "Why does this fail?\n```go\nfunc f() {}\n```",
            "Options: a) 5 b) 6. Which one?",
            "Could you confirm the port?\n\nThanks,",
            "Best regards,\nPriya Raman\nPayments platform",
            "Is `arr[i]` out of bounds when i == len(arr)?",
        ] {
            assert_eq!(code(check_complete(prompt)), "ok", "{prompt}");
        }
    }

    /// `check_placeholder` as it was before it skipped normalising plain prose.
    fn check_placeholder_normalising_always(prompt: &str) -> Result<(), Rejection> {
        let trimmed = prompt.trim();
        let normalised = norm(trimmed)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let why = if normalised.is_empty() {
            Some("it has no letter or digit".to_string())
        } else if normalised.contains("lorem ipsum") {
            Some("it is lorem ipsum filler".to_string())
        } else if trimmed.contains("{{") && trimmed.contains("}}") {
            Some("it holds an unfilled `{{…}}` template slot".to_string())
        } else if is_bracketed(trimmed) && word_count(trimmed) <= PLACEHOLDER_MAX_WORDS {
            Some("it is one bracketed slot".to_string())
        } else if is_lone_label(trimmed) {
            Some("it is a lone label".to_string())
        } else if PLACEHOLDER_PHRASES.contains(&normalised.as_str()) {
            Some(format!("{normalised:?} is a placeholder"))
        } else {
            None
        };
        match why {
            Some(why) => reject(
                Reason::PlaceholderPrompt,
                format!("the prompt {:?} is a placeholder: {why}", quote(trimmed)),
            ),
            None => Ok(()),
        }
    }

    use proptest::prelude::*;

    fn phrase_words() -> impl Strategy<Value = String> {
        proptest::prop_oneof![
            proptest::sample::select(
                PLACEHOLDER_PHRASES
                    .iter()
                    .copied()
                    .chain([
                        "Lorem",
                        "IPSUM",
                        "lorem ipsum",
                        "Question:",
                        "{{",
                        "}}",
                        "[",
                        "]"
                    ])
                    .chain(["\u{212A}", "İ", "ß", "Σ", "é", "\u{a0}", "\u{2003}", "\u{b}"])
                    .collect::<Vec<_>>()
            )
            .prop_map(str::to_string),
            "[A-Za-z0-9]{1,30}",
            "[ -~]{1,4}",
            any::<char>().prop_map(String::from),
        ]
    }

    proptest::proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..Default::default() })]

        #[test]
        fn check_placeholder_decides_as_normalising_always_did(
            words in proptest::collection::vec(phrase_words(), 0..8),
            separators in proptest::collection::vec("[ \t\n.,:;!?()<>\\[\\]{}-]{0,2}", 8),
        ) {
            let prompt: String = words
                .iter()
                .zip(&separators)
                .map(|(w, s)| format!("{w}{s}"))
                .collect();
            proptest::prop_assert_eq!(
                check_placeholder(&prompt),
                check_placeholder_normalising_always(&prompt),
                "{:?}", prompt
            );
        }
    }

    #[test]
    fn too_short() {
        assert_eq!(code(check_length("Default port?", 5)), "prompt_too_short");
        assert_eq!(code(check_length("Which port does Redis use?", 5)), "ok");
    }
}
