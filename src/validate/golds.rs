//! The rules for golds: each is a short, specific answer (never a placeholder, a lone letter, a
//! machine-made token or reply debris), all of them are variants of one answer, and a reasoning gold is one
//! number. Each rule reads the gold the way the card's grader will.

use super::quantity::{numbers_in, NumberKey};
use super::text::{unbalanced, word_count};
use super::{reject, Reason, Rejection, Rules};
use crate::grade::norm;
use crate::record::Category;

/// Applies the gold rules in `Reason::all()` order.
pub fn check(category: Category, golds: &[String], rules: &Rules) -> Result<(), Rejection> {
    if golds.is_empty() {
        return reject(Reason::EmptyGolds, "`golds` is empty");
    }
    let normalised: Vec<String> = golds.iter().map(|gold| norm(gold)).collect();
    let read: Vec<(&str, &str)> = golds
        .iter()
        .map(String::as_str)
        .zip(normalised.iter().map(String::as_str))
        .collect();
    if let Some((blank, _)) = read.iter().find(|(_, norm)| norm.trim().is_empty()) {
        return reject(
            Reason::GoldBlank,
            format!("gold {blank:?} has no letter or digit"),
        );
    }
    if let Some((placeholder, _)) = read.iter().find(|(gold, norm)| is_placeholder(gold, norm)) {
        return reject(
            Reason::GoldPlaceholder,
            format!("gold {placeholder:?} is a placeholder, not an answer"),
        );
    }
    if let Some((short, norm)) = read.iter().find(|(_, norm)| is_too_short(norm)) {
        return reject(
            Reason::GoldTooShort,
            format!(
                "gold {short:?} grades as {:?}, which would match almost any answer",
                norm.trim()
            ),
        );
    }
    if let Some((gold, why)) = golds
        .iter()
        .find_map(|gold| machine_made(gold).map(|why| (gold, why)))
    {
        return reject(
            Reason::GoldMachineMade,
            format!("gold {gold:?} looks machine-made: {why}"),
        );
    }
    if let Some(long) = golds
        .iter()
        .find(|gold| word_count(gold) > rules.max_gold_words)
    {
        return reject(
            Reason::GoldTooLong,
            format!(
                "gold {long:?} has {} words; at most {} allowed",
                word_count(long),
                rules.max_gold_words
            ),
        );
    }
    check_one_answer(&read)?;
    if category.is_numeric() {
        if let Some(gold) = golds.iter().find(|gold| numbers_in(gold).len() != 1) {
            return reject(
                Reason::GoldNotNumeric,
                format!("gold {gold:?} must contain exactly one number"),
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Golds that are not answers.
// ---------------------------------------------------------------------------------------------

/// What careless models write where an answer should be, as the grader normalises it.
const PLACEHOLDER_GOLDS: &[&str] = &[
    "tbd",
    "tba",
    "todo",
    "to do",
    "n a",
    "na",
    "n a n a",
    "unknown",
    "not known",
    "not applicable",
    "not available",
    "answer",
    "the answer",
    "your answer",
    "see above",
    "see below",
    "see prompt",
    "see the prompt",
    "as above",
    "same as above",
    "placeholder",
    "xxx",
    "etc",
    "lorem ipsum",
];

/// A placeholder: a known non-answer, or a whole gold in angle, square or curly brackets
/// (`<answer>`, `[gold]`, `{value}`).
/// (`normalised` is `gold` as the grader normalises it.)
fn is_placeholder(gold: &str, normalised: &str) -> bool {
    let trimmed = gold.trim();
    let bracketed = [('<', '>'), ('[', ']'), ('{', '}')]
        .iter()
        .any(|(open, close)| trimmed.starts_with(*open) && trimmed.ends_with(*close));
    bracketed || {
        let words = normalised.split_whitespace().collect::<Vec<_>>().join(" ");
        PLACEHOLDER_GOLDS.contains(&words.as_str())
    }
}

/// After normalisation only single letters are left (`N/A` → `n a`, `C`): a substring that
/// almost any answer contains. A number, even one digit, is specific enough to keep.
fn is_too_short(normalised: &str) -> bool {
    let mut tokens = normalised.split_whitespace();
    let numeric = tokens
        .clone()
        .any(|t| t.chars().all(|c| c.is_ascii_digit()));
    !numeric && tokens.all(|t| t.chars().count() < 2)
}

/// Shortest run of letters and digits that can be a random token.
const RANDOM_TOKEN_MIN_CHARS: usize = 16;
/// Letter↔digit switches within a run at which it reads as random rather than as a word or id.
const RANDOM_TOKEN_MIN_SWITCHES: usize = 4;

/// Host names reserved for examples and tests (RFC 2606, RFC 6761): a URL under one is a
/// placeholder, not the address of anything.
const PLACEHOLDER_HOSTS: &[&str] = &["example.com", "example.net", "example.org"];
const PLACEHOLDER_TLDS: &[&str] = &["example", "test", "invalid", "localhost"];
const PLACEHOLDER_HOST_WORDS: &[&str] = &["your", "placeholder", "dummy"];

/// Why `gold` looks generated rather than written: a long random token, a URL under a
/// placeholder host, or debris of the reply's JSON (a bracket that never closes or closes
/// nothing).
fn machine_made(gold: &str) -> Option<String> {
    if let Some(problem) = unbalanced(gold) {
        return Some(format!("reply debris: {problem}"));
    }
    if let Some(host) = url_host(gold) {
        let labels: Vec<&str> = host.split('.').collect();
        let tld = labels.last().copied().unwrap_or_default();
        let placeholder = PLACEHOLDER_HOSTS
            .iter()
            .any(|h| host == *h || host.ends_with(&format!(".{h}")))
            || PLACEHOLDER_TLDS.contains(&tld)
            || labels
                .first()
                .is_some_and(|first| PLACEHOLDER_HOST_WORDS.iter().any(|w| first.starts_with(w)));
        if placeholder {
            return Some(format!("a URL under the placeholder host {host}"));
        }
    }
    gold.split(|c: char| !c.is_ascii_alphanumeric())
        .find(|run| is_random_token(run))
        .map(|run| format!("the {}-character token {run:?} reads as random", run.len()))
}

fn url_host(gold: &str) -> Option<String> {
    if !gold.contains("://") {
        return None;
    }
    let lower = gold.trim().to_ascii_lowercase();
    let after_scheme = lower.split_once("://").map(|(_, rest)| rest)?;
    let authority = after_scheme.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?.split(':').next()?;
    (!host.is_empty()).then(|| host.to_string())
}

fn is_random_token(run: &str) -> bool {
    let has_letter = run.chars().any(|c| c.is_ascii_alphabetic());
    let has_digit = run.chars().any(|c| c.is_ascii_digit());
    let switches = run
        .as_bytes()
        .windows(2)
        .filter(|pair| pair[0].is_ascii_digit() != pair[1].is_ascii_digit())
        .count();
    run.len() >= RANDOM_TOKEN_MIN_CHARS
        && has_letter
        && has_digit
        && switches >= RANDOM_TOKEN_MIN_SWITCHES
}

// ---------------------------------------------------------------------------------------------
// Golds are variants of one answer.
//
// Heuristic: every gold must agree with the first gold. Two golds agree when
// - both contain numbers: their sets of numeric values are equal (`$1,250` = `1250 USD`,
//   `1.2M` = `1,200,000`, `v1.25` = `kubernetes 1.25`; a dotted version `2.3.1` is compared as
//   text), and they do not name different time units (`4 hours` ≠ `4 days`);
// - otherwise: one's compact form (lower-case letters and digits only) contains the other's
//   (`Postgres` ⊂ `PostgreSQL`, `us-east-1` = `us east 1`), or they share a content word of
//   three or more letters that is not a stop word or a generic unit/noun (`region`, `days`…).
// So `["SOC 2","ISO 27001"]`, `["3 days","5 days"]` and `["PCI DSS","SOC 2"]` fail. It cannot
// see that `429` and `Too Many Requests` are one answer (rejected), nor that `east region` and
// `west region` are two (accepted only if they share a non-generic word; `region` is generic).
// ---------------------------------------------------------------------------------------------

/// Words too common to show that two golds name the same thing (whitespace-separated).
const GENERIC_WORDS: &[&str] = &[
    "the",
    "and",
    "for",
    "with",
    "per",
    "from",
    "into",
    "that",
    "this",
    "not",
    "all",
    "any",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "version",
    "days",
    "day",
    "hours",
    "hour",
    "minutes",
    "minute",
    "seconds",
    "second",
    "weeks",
    "week",
    "months",
    "month",
    "years",
    "year",
    "percent",
    "usd",
    "eur",
    "gbp",
    "dollars",
    "instances",
    "nodes",
    "pods",
    "servers",
    "users",
    "seats",
    "requests",
    "region",
    "zone",
    "team",
    "plan",
    "tier",
    "level",
    "type",
    "mode",
    "code",
    "status",
    "error",
    "http",
    "port",
    "file",
    "key",
    "value",
    "name",
    "service",
    "account",
    "policy",
    "total",
    "new",
    "old",
    "current",
    "latest",
];

/// What two golds are compared by: their numbers, read once; the rest of the shape is read from
/// the normalised text only when a comparison needs it.
struct GoldShape<'g> {
    numbers: Vec<NumberKey>,
    normalised: &'g str,
}

impl<'g> GoldShape<'g> {
    /// The shape of `gold`, which the grader normalises to `normalised`.
    fn of(gold: &str, normalised: &'g str) -> GoldShape<'g> {
        GoldShape {
            numbers: numbers_in(gold),
            normalised,
        }
    }

    fn time_unit(&self) -> Option<&'static str> {
        self.normalised.split_whitespace().find_map(time_unit)
    }

    /// Lower-case letters and digits only.
    fn compact(&self) -> String {
        self.normalised.split(' ').collect()
    }

    /// The words that can show two golds name the same thing.
    fn content_words(&self) -> impl Iterator<Item = &'g str> {
        self.normalised.split_whitespace().filter(|word| {
            word.len() >= 3
                && word.chars().all(|c| c.is_ascii_lowercase())
                && !GENERIC_WORDS.contains(word)
        })
    }

    fn same_answer(&self, other: &GoldShape) -> bool {
        if !self.numbers.is_empty() && !other.numbers.is_empty() {
            let units_agree = match (self.time_unit(), other.time_unit()) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            };
            return units_agree
                && covers(&self.numbers, &other.numbers)
                && covers(&other.numbers, &self.numbers);
        }
        let (mine, theirs) = (self.compact(), other.compact());
        mine.contains(&theirs)
            || theirs.contains(&mine)
            || self
                .content_words()
                .any(|word| other.content_words().any(|their| their == word))
    }
}

fn covers(these: &[NumberKey], those: &[NumberKey]) -> bool {
    those
        .iter()
        .all(|number| these.iter().any(|mine| mine.same(number)))
}

fn time_unit(word: &str) -> Option<&'static str> {
    Some(match word {
        "ms" | "millisecond" | "milliseconds" => "millisecond",
        "s" | "sec" | "secs" | "second" | "seconds" => "second",
        "min" | "mins" | "minute" | "minutes" => "minute",
        "h" | "hr" | "hrs" | "hour" | "hours" => "hour",
        "day" | "days" => "day",
        "week" | "weeks" => "week",
        "month" | "months" => "month",
        "yr" | "yrs" | "year" | "years" => "year",
        _ => return None,
    })
}

/// Every gold of `golds` (each with its normalised form) is a variant of the first.
fn check_one_answer(golds: &[(&str, &str)]) -> Result<(), Rejection> {
    let Some(((first, first_normalised), rest)) = golds.split_first() else {
        return Ok(());
    };
    let first_shape = GoldShape::of(first, first_normalised);
    match rest
        .iter()
        .map(|(gold, normalised)| (gold, GoldShape::of(gold, normalised)))
        .find(|(_, shape)| !first_shape.same_answer(shape))
        .map(|(gold, _)| gold)
    {
        Some(other) => reject(
            Reason::GoldsDistinctFacts,
            format!("gold {other:?} is not a variant of the first gold {first:?}"),
        ),
        None => Ok(()),
    }
}
