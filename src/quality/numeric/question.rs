//! Reads what a prompt asks for, so that a rate question's `12.5%` and `0.125` agree and an
//! answer that makes no sense for its question marks the item for review: the question
//! vocabulary (rate words, the words that open or end what is asked for) and the rules over it.

use super::{Quantity, UnitClass};

/// A rate question answered with a plain number at least this large looks ill-posed (v1's rule).
const ILL_POSED_RATE_ANSWER: f64 = 1000.0;
/// A percentage beyond this magnitude looks ill-posed.
const ILL_POSED_PERCENT: f64 = 1000.0;

/// True when the prompt asks for a rate, percentage, ratio, margin, share, utilisation, growth or
/// similar. Only the last question (from its sentence start to the end of the prompt, so a
/// trailing "Give the answer as a percentage." counts) is read; without a `?`, the last sentence.
///
/// In order: (1) `percent`, `percentage`, `pct` or a bare `%` that does not follow a number
/// (`what percentage`, `in %`), or `as a ratio/fraction/proportion/share` → true; (2) the first
/// `how many` / `how long` / `how often` question → false (it asks for an amount, even when a
/// given like "at a 0.1% error rate" is nearby); (3) the words asked for after the first `what`,
/// `which`, `how much`, `calculate`, `compute`, `determine`, `find`, `estimate`, `report`, `give`
/// (skipping "is the new" and the like, up to a preposition, at most four words) contain a rate
/// word → true, and do not → false; (4) without such a focus, any rate word in the question.
pub fn is_rate_question(prompt: &str) -> bool {
    let words = question_words(last_question(prompt));
    if words.iter().enumerate().any(|(n, word)| {
        let previous_is_number = n
            .checked_sub(1)
            .and_then(|p| words.get(p))
            .is_some_and(|w| w.number);
        (PERCENT_WORDS.contains(&word.text.as_str()) && !previous_is_number)
            || (word.text == "as" && format_instruction(words.get(n + 1..).unwrap_or_default()))
    }) {
        return true;
    }
    match asked_focus(&words) {
        Focus::Amount => false,
        Focus::Words(focus) => focus.iter().any(|w| is_rate_word(w)),
        Focus::Unknown => words.iter().any(|w| is_rate_word(&w.text)),
    }
}

/// Cheap signs that an item is ill-posed (to flag `_needs_review`, not to repair):
/// 1. v1's rule: a rate question whose verified answer is a Plain or Count number with
///    |value| ≥ 1000 (a percentage or ratio that large means the question was misread; fractional
///    values count too, a rate of 1234.5 is as suspect as 1234);
/// 2. a percentage beyond ±1000% (no realistic business rate; the arithmetic went astray);
/// 3. a negative count or duration (cannot exist; the question's numbers contradict each other).
pub fn looks_ill_posed(prompt: &str, answer: &Quantity) -> bool {
    let plain_or_count = matches!(answer.unit, UnitClass::Plain | UnitClass::Count);
    let huge_rate =
        plain_or_count && answer.value.abs() >= ILL_POSED_RATE_ANSWER && is_rate_question(prompt);
    let huge_percent = answer.unit == UnitClass::Percent && answer.value.abs() > ILL_POSED_PERCENT;
    let negative_amount =
        matches!(answer.unit, UnitClass::Count | UnitClass::Duration) && answer.value < 0.0;
    huge_rate || huge_percent || negative_amount
}

/// Ask for a percentage wherever they stand, unless they follow a number (`at a 0.1% error rate`
/// states a given).
const PERCENT_WORDS: [&str; 5] = ["percent", "percentage", "percentages", "pct", "%"];
/// Besides [`PERCENT_WORDS`], the words that name a rate when they are what is asked for.
const RATIO_WORDS: [&str; 23] = [
    "rate",
    "rates",
    "ratio",
    "ratios",
    "margin",
    "margins",
    "share",
    "utilization",
    "utilisation",
    "growth",
    "proportion",
    "fraction",
    "yield",
    "roi",
    "cagr",
    "churn",
    "uptime",
    "availability",
    "probability",
    "likelihood",
    "efficiency",
    "occupancy",
    "conversion",
];
/// After "as (a|an)": these ask for the answer's format.
const FORMAT_WORDS: [&str; 4] = ["ratio", "fraction", "proportion", "share"];
/// Open the words that say what is asked for (`much` only after `how`).
const FOCUS_OPENERS: [&str; 10] = [
    "what",
    "which",
    "calculate",
    "compute",
    "determine",
    "find",
    "estimate",
    "report",
    "give",
    "much",
];
/// After `how`: the question asks for an amount, never a rate.
const AMOUNT_QUESTIONS: [&str; 3] = ["many", "long", "often"];
/// Skipped before the focus words start ("what will the new …").
const FOCUS_FILLER: [&str; 29] = [
    "is",
    "are",
    "was",
    "were",
    "will",
    "would",
    "be",
    "should",
    "must",
    "can",
    "could",
    "do",
    "does",
    "did",
    "s",
    "the",
    "a",
    "an",
    "its",
    "their",
    "our",
    "your",
    "this",
    "that",
    "it",
    "we",
    "you",
    "resulting",
    "new",
];
/// End the focus words.
const FOCUS_STOPS: [&str; 36] = [
    "of", "at", "for", "in", "on", "if", "when", "given", "after", "before", "with", "by", "per",
    "from", "to", "across", "over", "under", "during", "that", "which", "assuming", "and", "or",
    "so", "than", "between", "be", "is", "are", "was", "were", "will", "would", "do", "does",
];
/// The most focus words read after an opener.
const MAX_FOCUS_WORDS: usize = 4;

fn is_rate_word(word: &str) -> bool {
    PERCENT_WORDS.contains(&word) || RATIO_WORDS.contains(&word)
}

/// From the start of the sentence holding the last `?` to the end; without `?`, the last sentence.
fn last_question(prompt: &str) -> &str {
    let trimmed = prompt.trim_end();
    let end = match trimmed.rfind('?') {
        Some(mark) => mark,
        None => trimmed.char_indices().last().map_or(0, |(at, c)| {
            if ".!".contains(c) {
                at
            } else {
                trimmed.len()
            }
        }),
    };
    let head = trimmed.get(..end).unwrap_or_default();
    let start = head
        .char_indices()
        .rev()
        .find(|&(at, c)| {
            matches!(c, '?' | '!' | '\n')
                || (c == '.'
                    && head
                        .get(at + 1..)
                        .and_then(|rest| rest.chars().next())
                        .is_some_and(char::is_whitespace))
        })
        .map_or(0, |(at, c)| at + c.len_utf8());
    trimmed.get(start..).unwrap_or_default()
}

struct Word {
    text: String,
    number: bool,
}

/// Lower-case alphanumeric runs, plus `%` as a word of its own.
fn question_words(question: &str) -> Vec<Word> {
    let mut words: Vec<Word> = Vec::new();
    let mut current = String::new();
    for c in question.chars().chain(std::iter::once(' ')) {
        if c.is_alphanumeric() {
            current.extend(c.to_lowercase());
            continue;
        }
        if !current.is_empty() {
            let number = current.starts_with(|d: char| d.is_ascii_digit());
            words.push(Word {
                text: std::mem::take(&mut current),
                number,
            });
        }
        if c == '%' {
            words.push(Word {
                text: "%".to_string(),
                number: false,
            });
        }
    }
    words
}

/// `as ratio`, `as a fraction`, … (the words after "as").
fn format_instruction(after_as: &[Word]) -> bool {
    let mut rest = after_as.iter().map(|w| w.text.as_str());
    let next = match rest.next() {
        Some("a" | "an") => rest.next(),
        other => other,
    };
    next.is_some_and(|w| FORMAT_WORDS.contains(&w))
}

enum Focus {
    Amount,
    Words(Vec<String>),
    Unknown,
}

/// What the question asks for: an amount (`how many/long/often`), the words after the first
/// opener that has any, or unknown.
fn asked_focus(words: &[Word]) -> Focus {
    for (n, word) in words.iter().enumerate() {
        let after = words.get(n + 1..).unwrap_or_default();
        if word.text == "how" {
            if after
                .first()
                .is_some_and(|next| AMOUNT_QUESTIONS.contains(&next.text.as_str()))
            {
                return Focus::Amount;
            }
            continue;
        }
        if word.text == "much" && !(n > 0 && words.get(n - 1).is_some_and(|w| w.text == "how")) {
            continue;
        }
        if !FOCUS_OPENERS.contains(&word.text.as_str()) {
            continue;
        }
        let focus: Vec<String> = after
            .iter()
            .skip_while(|w| FOCUS_FILLER.contains(&w.text.as_str()))
            .take_while(|w| !w.number && !FOCUS_STOPS.contains(&w.text.as_str()))
            .take(MAX_FOCUS_WORDS)
            .map(|w| w.text.clone())
            .collect();
        if !focus.is_empty() {
            return Focus::Words(focus);
        }
    }
    Focus::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quality::numeric::tests::q;

    #[test]
    fn rate_questions() {
        let rate = [
            "A cluster has 40 nodes and 30 are busy. What percentage of nodes are busy?",
            "Revenue was $2M and cost $1.5M. What is the gross margin?",
            "What will the new utilisation be after adding 2 servers?",
            "Customers: 1,000 at start, 950 at end. Compute the monthly churn.",
            "Total 120 tickets, 30 escalated. What share were escalated? Give your answer in %.",
            "What is the ratio of reads to writes?",
            "By how much did traffic grow? Express the growth as a fraction of last year.",
            "How many percentage points did uptime improve?",
            "Calculate the effective utilization rate of the pool.",
        ];
        let not_rate = [
            "At a 0.1% error rate, how many of the 2,000,000 requests fail?",
            "How long will the migration take at 20% utilization?",
            "What is the monthly cost if the growth rate is 5%?",
            "A team of 5 handles 1,200 tickets. How many tickets does each engineer handle?",
            "What is the total cost for 3 servers at $50 each?",
            "Compute the p99 latency in ms.",
        ];
        for prompt in rate {
            assert!(
                is_rate_question(prompt),
                "{prompt:?} should be a rate question"
            );
        }
        for prompt in not_rate {
            assert!(
                !is_rate_question(prompt),
                "{prompt:?} should not be a rate question"
            );
        }
    }

    #[test]
    fn rate_question_reads_only_the_last_question() {
        let prompt = "What percentage is idle? Ignore that. Now: how many servers are idle?";
        assert!(!is_rate_question(prompt));
        let decimal = "Utilisation rose from 62.5 to 70.0. What is the new utilisation?";
        assert!(is_rate_question(decimal));
    }

    #[test]
    fn ill_posed_signs() {
        let rate_prompt = "What percentage of the 5,000 requests failed?";
        assert!(looks_ill_posed(rate_prompt, &q("4500")));
        assert!(looks_ill_posed(rate_prompt, &q("1,234.5 requests")));
        assert!(!looks_ill_posed(rate_prompt, &q("12.5%")));
        assert!(!looks_ill_posed(rate_prompt, &q("999")));
        assert!(looks_ill_posed("What is the growth?", &q("1500%")));
        assert!(!looks_ill_posed("What is the growth?", &q("950%")));
        assert!(looks_ill_posed("How many servers?", &q("-3 servers")));
        assert!(looks_ill_posed("How long?", &q("-5 minutes")));
        assert!(!looks_ill_posed("How many requests fail?", &q("4500")));
        assert!(!looks_ill_posed("What is the profit?", &q("-$5,000")));
    }
}
