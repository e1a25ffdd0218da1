//! Reads, compares and re-writes the numeric answers of reasoning items, so the repair stage can
//! decide whether a verifier model agrees with the authored key, flag ill-posed items, and write
//! repaired golds that the card's substring grader (`crate::grade`) accepts.
//!
//! Peers compare strings (lm-eval-harness: `1234.50` ≠ `1234.5`) or drop units (PRM800K). Here an
//! answer becomes a [`Quantity`]: its value in the unit written, a unit class, the unit word, and
//! whether it was marked approximate; [`agree`] then compares values with a tolerance, only across
//! compatible units.
//!
//! What [`parse_quantity`] reads (the scanner):
//! - digits with optional `,` thousands groups (exactly three digits each), a decimal part, an
//!   exponent (`1.5e6`), a leading `.5`; `a/b` fractions and `a b/c` mixed numbers (proper
//!   fraction, one space); a sign `-`, `−` or `+` when it does not join two words or numbers
//!   (`10-20` is a range, `gpt-4` an identifier, `(-17)` a negative number).
//! - multipliers: attached `k`/`K` (×10³), `M` (×10⁶), `B`/`bn` (×10⁹); spaced words `thousand`,
//!   `million`, `billion`, `trillion`.
//! - units after the number (attached, after spaces, or after a hyphen for words): `%`,
//!   `percent`, `per cent`, `pct`, `percentage point(s)` → Percent; currency symbols before or after
//!   the number (`$ € £ ¥ ₹`), currency codes before or after it and currency words after it
//!   → Currency with the ISO code as `unit_word`; duration words → Duration (word kept as written,
//!   lower-cased); a list of count nouns → Count (word kept); anything else → Plain.
//! - `~ ≈ ≃ ∼`, `approximately`, `approx(.)`, `about`, `around`, `roughly`, `circa`, `ca.`,
//!   `nearly`, `almost` just before the number set `approximate`.
//! - Not numbers: digits glued to a letter on the left (`v2`, `H100`, `x86`), dotted runs
//!   (`1.2.3`, `10.0.0.1`), ordinals (`2nd`), slash chains (`12/31/2024`), colon pairs (`2:30`,
//!   `3:1`: a clock time or a ratio, too ambiguous to guess), `x/0`, values that overflow f64.
//! - Read as two numbers: a decimal comma (`1,5`) and thousands grouped by spaces (`1 234`).

use crate::grade;
use crate::reply::without_thinking;

/// Relative tolerance of every comparison.
const RELATIVE_TOLERANCE: f64 = 1e-4;
/// Extra absolute tolerance when money is involved: half a cent.
const CURRENCY_ABSOLUTE_TOLERANCE: f64 = 0.005;
/// A rate question answered with a plain number at least this large looks ill-posed (v1's rule).
const ILL_POSED_RATE_ANSWER: f64 = 1000.0;
/// A percentage beyond this magnitude looks ill-posed.
const ILL_POSED_PERCENT: f64 = 1000.0;
/// Significant decimals kept by `format_value` (and therefore by every gold).
const GOLD_DECIMALS: usize = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitClass {
    Currency,
    Percent,
    Duration,
    Count,
    Plain,
}

/// One parsed answer. `value` is in the unit written (`12.5%` → 12.5, `43.2 minutes` → 43.2).
/// `unit_word` is the ISO code for Currency (`USD` for `$`), the lower-cased word as written for
/// Duration and Count, and `None` for Percent and Plain.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantity {
    pub value: f64,
    pub unit: UnitClass,
    pub unit_word: Option<String>,
    pub approximate: bool,
}

/// The answer text taken from a verifier reply; `fell_back` when no `ANSWER:` line was found and
/// the text is the reply's last number instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    pub text: String,
    pub fell_back: bool,
}

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
    let found = Scanner::new(text).all();
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

/// The value of the LAST line starting with `ANSWER:` (any case; leading spaces, `*`, `_`, `#`,
/// `>`, `` ` `` and `-` tolerated, as is markdown around the label and the value, e.g.
/// `**ANSWER:** 42`). When that line's value is empty, the next non-blank line that is not itself
/// labelled is the value. Reasoning is ignored as [`without_thinking`] defines it (`<think>`
/// blocks, all after an unclosed `<think>`, text before a lone `</think>`). Without an ANSWER
/// line, falls back to the reply's last number (`fell_back = true`), with its unit.
pub fn extract_answer(reply: &str) -> Option<Extracted> {
    let visible = without_thinking(reply).text;
    let lines: Vec<&str> = visible.lines().collect();
    if let Some(text) = last_labelled(&lines, "ANSWER", |value| value) {
        return Some(Extracted {
            text,
            fell_back: false,
        });
    }
    let last = Scanner::new(&visible).all().pop()?;
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
    last_labelled(&lines, "EXPR", |value| {
        let before_result = value.split('=').next().unwrap_or(value);
        before_result.trim_end().trim_end_matches('.').trim_end()
    })
}

/// True when `a` and `b` are the same answer: compatible units, and values within a relative
/// tolerance of 1e-4 (plus 0.005 absolute when either side is money).
///
/// Units: Plain is compatible with everything; otherwise the classes must be equal, currencies
/// must have the same code, and duration words must match after folding (`min`/`mins`/`minute`/
/// `minutes`, `h`/`hr`/`hrs`/`hour`/`hours`, …); no conversion between units. Count words do
/// not have to match. A percentage also agrees with a plain number equal to its fraction
/// (`12.5%` and `0.125`) when `rate_question`. The `approximate` flag does not loosen anything.
pub fn agree(a: &Quantity, b: &Quantity, rate_question: bool) -> bool {
    if !units_compatible(a, b) {
        return false;
    }
    let absolute = if a.unit == UnitClass::Currency || b.unit == UnitClass::Currency {
        CURRENCY_ABSOLUTE_TOLERANCE
    } else {
        0.0
    };
    if close(a.value, b.value, absolute) {
        return true;
    }
    rate_question
        && match (a.unit, b.unit) {
            (UnitClass::Percent, UnitClass::Plain) => close(a.value / 100.0, b.value, 0.0),
            (UnitClass::Plain, UnitClass::Percent) => close(a.value, b.value / 100.0, 0.0),
            _ => false,
        }
}

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
fn with_separators(plain: &str) -> String {
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

fn close(x: f64, y: f64, absolute: f64) -> bool {
    (x - y).abs() <= RELATIVE_TOLERANCE * x.abs().max(y.abs()) + absolute
}

fn units_compatible(a: &Quantity, b: &Quantity) -> bool {
    match (a.unit, b.unit) {
        (UnitClass::Plain, _) | (_, UnitClass::Plain) => true,
        (UnitClass::Currency, UnitClass::Currency) => match (&a.unit_word, &b.unit_word) {
            (Some(x), Some(y)) => x.eq_ignore_ascii_case(y),
            _ => true,
        },
        (UnitClass::Duration, UnitClass::Duration) => match (&a.unit_word, &b.unit_word) {
            (Some(x), Some(y)) => duration_key(x) == duration_key(y),
            _ => true,
        },
        (x, y) => x == y,
    }
}

// ---------------------------------------------------------------------------------------------
// Vocabulary
// ---------------------------------------------------------------------------------------------

/// ISO code, symbol, and the lower-case words that name it after a number.
const CURRENCIES: [(&str, char, &[&str]); 5] = [
    ("USD", '$', &["usd", "dollar", "dollars"]),
    ("EUR", '€', &["eur", "euro", "euros"]),
    ("GBP", '£', &["gbp"]),
    ("JPY", '¥', &["jpy", "yen"]),
    ("INR", '₹', &["inr", "rupee", "rupees"]),
];

fn currency_by_symbol(symbol: char) -> Option<&'static str> {
    CURRENCIES
        .iter()
        .find(|(_, s, _)| *s == symbol)
        .map(|(code, _, _)| *code)
}

fn currency_by_word(word: &str) -> Option<&'static str> {
    CURRENCIES
        .iter()
        .find(|(_, _, words)| words.contains(&word))
        .map(|(code, _, _)| *code)
}

fn currency_by_code(word: &str) -> Option<&'static str> {
    CURRENCIES
        .iter()
        .find(|(code, _, _)| code.eq_ignore_ascii_case(word))
        .map(|(code, _, _)| *code)
}

fn currency_symbol(code: &str) -> Option<char> {
    CURRENCIES
        .iter()
        .find(|(c, _, _)| c.eq_ignore_ascii_case(code))
        .map(|(_, symbol, _)| *symbol)
}

/// Folded key and the words (lower case) that fold to it.
const DURATIONS: [(&str, &[&str]); 8] = [
    (
        "ms",
        &["ms", "msec", "msecs", "millisecond", "milliseconds"],
    ),
    ("s", &["s", "sec", "secs", "second", "seconds"]),
    ("min", &["min", "mins", "minute", "minutes"]),
    ("h", &["h", "hr", "hrs", "hour", "hours"]),
    ("d", &["d", "day", "days"]),
    ("wk", &["wk", "wks", "week", "weeks"]),
    ("mo", &["mo", "mos", "month", "months"]),
    ("yr", &["y", "yr", "yrs", "year", "years"]),
];

fn fold_duration(word: &str) -> Option<&'static str> {
    DURATIONS
        .iter()
        .find(|(_, words)| words.contains(&word))
        .map(|(key, _)| *key)
}

/// The folded duration word, or the lower-cased word itself when it is not a known one.
fn duration_key(word: &str) -> String {
    let lower = word.to_lowercase();
    fold_duration(&lower).map_or(lower, str::to_string)
}

/// Singular count nouns; `s`, `es` and `y`→`ies` plurals are recognised.
const COUNT_NOUNS: [&str; 58] = [
    "account",
    "agent",
    "batch",
    "box",
    "call",
    "case",
    "claim",
    "connection",
    "container",
    "core",
    "cpu",
    "customer",
    "device",
    "document",
    "employee",
    "engineer",
    "error",
    "event",
    "failure",
    "file",
    "gpu",
    "host",
    "incident",
    "instance",
    "invoice",
    "item",
    "job",
    "laptop",
    "licence",
    "license",
    "machine",
    "message",
    "node",
    "order",
    "package",
    "page",
    "pallet",
    "partition",
    "patient",
    "person",
    "pod",
    "query",
    "record",
    "replica",
    "request",
    "row",
    "seat",
    "server",
    "session",
    "shard",
    "shipment",
    "task",
    "thread",
    "ticket",
    "transaction",
    "truck",
    "unit",
    "user",
];

fn is_count_noun(word: &str) -> bool {
    word == "people"
        || word == "vms"
        || word == "vm"
        || COUNT_NOUNS.iter().any(|noun| {
            word == *noun
                || word.strip_suffix('s') == Some(noun)
                || word.strip_suffix("es") == Some(noun)
                || noun
                    .strip_suffix('y')
                    .is_some_and(|stem| word.strip_suffix("ies") == Some(stem))
        })
}

const ORDINAL_SUFFIXES: [&str; 4] = ["st", "nd", "rd", "th"];
const APPROXIMATE_MARKS: [char; 4] = ['~', '≈', '≃', '∼'];
const APPROXIMATE_WORDS: [&str; 8] = [
    "approximately",
    "approx",
    "about",
    "around",
    "roughly",
    "circa",
    "nearly",
    "almost",
];
/// Words that mark approximation only when followed by a full stop (`approx.`, `ca.`).
const APPROXIMATE_ABBREVIATIONS: [&str; 2] = ["approx", "ca"];

/// Answer cues for [`parse_quantity`], strongest first.
const ANSWER_CUES: [&[&str]; 3] = [
    &["answer"],
    &[
        "=",
        "≈",
        "→",
        "=>",
        "total",
        "result",
        "equals",
        "comes to",
        "works out to",
        "gives",
        "yields",
        "so",
        "thus",
        "hence",
        "therefore",
    ],
    &["is", "are", "was", "be", ":"],
];

const PERCENT_WORDS: [&str; 5] = ["percent", "percentage", "percentages", "pct", "%"];
const RATE_WORDS: [&str; 28] = [
    "percent",
    "percentage",
    "percentages",
    "pct",
    "%",
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
const MAX_FOCUS_WORDS: usize = 4;

fn is_rate_word(word: &str) -> bool {
    RATE_WORDS.contains(&word)
}

// ---------------------------------------------------------------------------------------------
// Rate questions
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Reply lines
// ---------------------------------------------------------------------------------------------

const MARKDOWN: [char; 3] = ['*', '_', '`'];

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
    ["ANSWER", "EXPR"]
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

// ---------------------------------------------------------------------------------------------
// Scanner
// ---------------------------------------------------------------------------------------------

/// A quantity found in a text, with its byte range (prefixes and unit included).
struct Found {
    quantity: Quantity,
    start: usize,
    end: usize,
}

struct Mantissa {
    value: f64,
    end: usize,
    /// Only digits: may start a fraction or mixed number.
    whole_digits: bool,
}

struct Prefix {
    negative: bool,
    currency: Option<&'static str>,
    approximate: bool,
    start: usize,
}

struct Suffix {
    unit: Option<(UnitClass, Option<String>)>,
    end: usize,
}

/// Walks a text by char index; every rejection returns the index to resume from, always past
/// the start, so scanning ends on any input.
struct Scanner<'a> {
    text: &'a str,
    chars: Vec<(usize, char)>,
}

fn is_digit(c: char) -> bool {
    c.is_ascii_digit()
}

fn is_letter(c: char) -> bool {
    c.is_ascii_alphabetic()
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{a0}' | '\u{202f}')
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Scanner {
            text,
            chars: text.char_indices().collect(),
        }
    }

    fn at(&self, i: usize) -> Option<char> {
        self.chars.get(i).map(|&(_, c)| c)
    }

    fn before(&self, i: usize) -> Option<char> {
        i.checked_sub(1).and_then(|j| self.at(j))
    }

    fn is(&self, i: usize, predicate: impl Fn(char) -> bool) -> bool {
        self.at(i).is_some_and(predicate)
    }

    fn offset(&self, i: usize) -> usize {
        self.chars.get(i).map_or(self.text.len(), |&(at, _)| at)
    }

    fn slice(&self, from: usize, to: usize) -> &'a str {
        self.text
            .get(self.offset(from)..self.offset(to))
            .unwrap_or_default()
    }

    /// First index at or after `i` whose char fails `predicate`.
    fn run_end(&self, i: usize, predicate: impl Fn(char) -> bool) -> usize {
        let mut j = i;
        while self.is(j, &predicate) {
            j += 1;
        }
        j
    }

    /// First index of the run of `predicate` chars that ends just before `i`.
    fn run_start(&self, i: usize, predicate: impl Fn(char) -> bool) -> usize {
        let mut j = i;
        while self.before(j).is_some_and(&predicate) {
            j -= 1;
        }
        j
    }

    fn all(&self) -> Vec<Found> {
        let mut found = Vec::new();
        let mut i = 0;
        while i < self.chars.len() {
            if !self.starts_number(i) {
                i += 1;
                continue;
            }
            i = match self.quantity_at(i) {
                Ok((quantity, next)) => {
                    found.push(quantity);
                    next.max(i + 1)
                }
                Err(resume) => resume.max(i + 1),
            };
        }
        found
    }

    fn starts_number(&self, i: usize) -> bool {
        let after_digit = |j: usize| self.before(j).is_some_and(is_digit);
        match self.at(i) {
            Some(c) if c.is_ascii_digit() => {
                let continues_decimal = self.before(i) == Some('.') && after_digit(i - 1);
                !(after_digit(i) || continues_decimal)
            }
            Some('.') => self.is(i + 1, is_digit) && !after_digit(i),
            _ => false,
        }
    }

    fn quantity_at(&self, i: usize) -> Result<(Found, usize), usize> {
        let glued_left = self
            .before(i)
            .is_some_and(|c| c.is_alphabetic() || c == '_');
        let hyphenated = matches!(self.before(i), Some('-' | '−'))
            && self.before(i - 1).is_some_and(char::is_alphabetic);
        if glued_left || hyphenated {
            return Err(self.run_end(i, |c| c.is_alphanumeric() || matches!(c, '_' | '.')));
        }
        let mantissa = self.mantissa(i)?;
        let (value, after_number) = self.fraction(i, &mantissa)?;
        if self.at(after_number) == Some(':') && self.is(after_number + 1, is_digit) {
            return Err(self.run_end(i, |c| c.is_ascii_digit() || matches!(c, ':' | '.')));
        }
        let (multiplier, after_multiplier) = self.multiplier(after_number);
        let suffix = self.unit_suffix(after_multiplier)?;
        let prefix = self.prefix(i);
        let magnitude = value * multiplier;
        let value = if prefix.negative {
            -magnitude
        } else {
            magnitude
        };
        if !value.is_finite() {
            return Err(suffix.end);
        }
        let (unit, unit_word) = match (prefix.currency, suffix.unit) {
            (Some(code), _) => (UnitClass::Currency, Some(code.to_string())),
            (None, Some(unit)) => unit,
            (None, None) => (UnitClass::Plain, None),
        };
        let found = Found {
            quantity: Quantity {
                value,
                unit,
                unit_word,
                approximate: prefix.approximate,
            },
            start: self.offset(prefix.start),
            end: self.offset(suffix.end),
        };
        Ok((found, suffix.end))
    }

    fn mantissa(&self, i: usize) -> Result<Mantissa, usize> {
        let integer_end = self.run_end(i, is_digit);
        let mut literal = if integer_end == i {
            "0".to_string()
        } else {
            self.slice(i, integer_end).to_string()
        };
        let mut j = integer_end;
        let mut whole_digits = integer_end > i;
        if (1..=3).contains(&(integer_end - i)) {
            while self.at(j) == Some(',') && self.run_end(j + 1, is_digit) == j + 4 {
                literal.push_str(self.slice(j + 1, j + 4));
                j += 4;
                whole_digits = false;
            }
        }
        if self.at(j) == Some('.') && self.is(j + 1, is_digit) {
            let decimals_end = self.run_end(j + 1, is_digit);
            literal.push_str(self.slice(j, decimals_end));
            j = decimals_end;
            whole_digits = false;
            if self.at(j) == Some('.') && self.is(j + 1, is_digit) {
                return Err(self.run_end(j, |c| c.is_ascii_digit() || c == '.'));
            }
        }
        if self.is(j, |c| matches!(c, 'e' | 'E')) {
            let digits = if self.is(j + 1, |c| matches!(c, '+' | '-')) {
                j + 2
            } else {
                j + 1
            };
            if self.is(digits, is_digit) {
                let exponent_end = self.run_end(digits, is_digit);
                literal.push('e');
                literal.push_str(self.slice(j + 1, exponent_end));
                j = exponent_end;
                whole_digits = false;
            }
        }
        let value = literal.parse::<f64>().map_err(|_| j)?;
        Ok(Mantissa {
            value,
            end: j,
            whole_digits,
        })
    }

    /// `a/b` at `i`: numerator, denominator (non-zero) and end; `None` when not a lone fraction.
    fn simple_fraction(&self, i: usize) -> Option<(f64, f64, usize)> {
        let numerator_end = self.run_end(i, is_digit);
        if numerator_end == i || self.at(numerator_end) != Some('/') {
            return None;
        }
        let denominator_end = self.run_end(numerator_end + 1, is_digit);
        if denominator_end == numerator_end + 1 || self.at(denominator_end) == Some('/') {
            return None;
        }
        let numerator = self.slice(i, numerator_end).parse::<f64>().ok()?;
        let denominator = self
            .slice(numerator_end + 1, denominator_end)
            .parse::<f64>()
            .ok()?;
        (denominator != 0.0).then_some((numerator, denominator, denominator_end))
    }

    /// The value and end of the number at `i`, reading `a/b` and `a b/c` after plain digits.
    fn fraction(&self, i: usize, mantissa: &Mantissa) -> Result<(f64, usize), usize> {
        let j = mantissa.end;
        if !mantissa.whole_digits {
            return Ok((mantissa.value, j));
        }
        if self.at(j) == Some(' ') && self.is(j + 1, is_digit) {
            if let Some((numerator, denominator, end)) = self.simple_fraction(j + 1) {
                if numerator < denominator {
                    return Ok((mantissa.value + numerator / denominator, end));
                }
            }
        }
        if self.at(j) == Some('/') && self.is(j + 1, is_digit) {
            return match self.simple_fraction(i) {
                Some((numerator, denominator, end)) => Ok((numerator / denominator, end)),
                None => Err(self.run_end(i, |c| c.is_ascii_digit() || c == '/')),
            };
        }
        Ok((mantissa.value, j))
    }

    fn multiplier(&self, j: usize) -> (f64, usize) {
        let attached_end = self.run_end(j, is_letter);
        if attached_end > j {
            let factor = match self.slice(j, attached_end) {
                "k" | "K" => 1e3,
                "M" => 1e6,
                "B" | "bn" | "Bn" => 1e9,
                _ => return (1.0, j),
            };
            return (factor, attached_end);
        }
        let word_start = self.run_end(j, is_space);
        let word_end = self.run_end(word_start, is_letter);
        if word_start == j {
            return (1.0, j);
        }
        let factor = match self
            .slice(word_start, word_end)
            .to_ascii_lowercase()
            .as_str()
        {
            "thousand" => 1e3,
            "million" => 1e6,
            "billion" => 1e9,
            "trillion" => 1e12,
            _ => return (1.0, j),
        };
        (factor, word_end)
    }

    /// The spaced word right after `j` when it is one of `words`; its end.
    fn next_word_in(&self, j: usize, words: &[&str]) -> Option<usize> {
        let start = self.run_end(j, is_space);
        let end = self.run_end(start, is_letter);
        (start > j && words.contains(&self.slice(start, end).to_ascii_lowercase().as_str()))
            .then_some(end)
    }

    fn unit_suffix(&self, j: usize) -> Result<Suffix, usize> {
        let hyphen = self.at(j) == Some('-') && self.is(j + 1, is_letter);
        let start = if hyphen {
            j + 1
        } else {
            self.run_end(j, is_space)
        };
        let attached = start == j;
        let unit = |unit, word: Option<String>, end| {
            Ok(Suffix {
                unit: Some((unit, word)),
                end,
            })
        };
        let Some(c) = self.at(start) else {
            return Ok(Suffix { unit: None, end: j });
        };
        if !hyphen && c == '%' {
            return unit(UnitClass::Percent, None, start + 1);
        }
        if let Some(code) = currency_by_symbol(c).filter(|_| !hyphen) {
            return unit(UnitClass::Currency, Some(code.to_string()), start + 1);
        }
        if !c.is_ascii_alphabetic() {
            return Ok(Suffix { unit: None, end: j });
        }
        let word_end = self.run_end(start, is_letter);
        let word = self.slice(start, word_end).to_ascii_lowercase();
        let percent_end = match word.as_str() {
            "percent" | "percentage" | "pct" => Some(
                self.next_word_in(word_end, &["point", "points"])
                    .unwrap_or(word_end),
            ),
            "per" => self.next_word_in(word_end, &["cent"]),
            _ => None,
        };
        if let Some(end) = percent_end {
            return unit(UnitClass::Percent, None, end);
        }
        if let Some(code) = currency_by_word(&word) {
            return unit(UnitClass::Currency, Some(code.to_string()), word_end);
        }
        if fold_duration(&word).is_some() {
            return unit(UnitClass::Duration, Some(word), word_end);
        }
        if is_count_noun(&word) {
            return unit(UnitClass::Count, Some(word), word_end);
        }
        if attached && ORDINAL_SUFFIXES.contains(&word.as_str()) {
            return Err(word_end);
        }
        let end = if attached { word_end } else { j };
        Ok(Suffix { unit: None, end })
    }

    /// Sign, currency symbol or code, and approximation marker before the digits at `i`.
    fn prefix(&self, i: usize) -> Prefix {
        let mut k = i;
        let mut currency = self.before(k).and_then(currency_by_symbol);
        if currency.is_some() {
            k -= 1;
        }
        let mut negative = false;
        if let Some(sign @ ('-' | '−' | '+')) = self.before(k) {
            if !self.before(k - 1).is_some_and(char::is_alphanumeric) {
                negative = sign != '+';
                k -= 1;
            }
        }
        if currency.is_none() {
            currency = self.before(k).and_then(currency_by_symbol);
            if currency.is_some() {
                k -= 1;
            }
        }
        let spaces_start = self.run_start(k, is_space);
        if currency.is_none() && spaces_start < k {
            let word_start = self.run_start(spaces_start, is_letter);
            if let Some(code) = self.before(spaces_start).and_then(currency_by_symbol) {
                currency = Some(code);
                k = spaces_start - 1;
            } else if word_start < spaces_start {
                currency = currency_by_code(self.slice(word_start, spaces_start));
                if currency.is_some() {
                    k = word_start;
                }
            }
        }
        let (approximate, start) = self.approximation_before(k);
        Prefix {
            negative,
            currency,
            approximate,
            start,
        }
    }

    /// Whether an approximation marker (or word) stands just before `k`, and where it starts.
    fn approximation_before(&self, k: usize) -> (bool, usize) {
        let m = self.run_start(k, |c| c.is_whitespace() || MARKDOWN.contains(&c));
        match self.before(m) {
            Some(c) if APPROXIMATE_MARKS.contains(&c) => (true, m - 1),
            Some('.') => {
                let word_start = self.run_start(m - 1, is_letter);
                let word = self.slice(word_start, m - 1).to_ascii_lowercase();
                if APPROXIMATE_ABBREVIATIONS.contains(&word.as_str()) {
                    (true, word_start)
                } else {
                    (false, k)
                }
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let word_start = self.run_start(m, is_letter);
                let word = self.slice(word_start, m).to_ascii_lowercase();
                if APPROXIMATE_WORDS.contains(&word.as_str()) {
                    (true, word_start)
                } else {
                    (false, k)
                }
            }
            _ => (false, k),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grade::graded;

    fn q(text: &str) -> Quantity {
        parse_quantity(text).unwrap_or_else(|| panic!("{text:?} did not parse"))
    }

    fn quantity(value: f64, unit: UnitClass, word: Option<&str>) -> Quantity {
        Quantity {
            value,
            unit,
            unit_word: word.map(str::to_string),
            approximate: false,
        }
    }

    #[test]
    fn parses_every_documented_format() {
        let cases: [(&str, f64, UnitClass, Option<&str>); 31] = [
            ("12.5%", 12.5, UnitClass::Percent, None),
            ("12.5 %", 12.5, UnitClass::Percent, None),
            ("12.5 percent", 12.5, UnitClass::Percent, None),
            ("3 per cent", 3.0, UnitClass::Percent, None),
            ("2.5 percentage points", 2.5, UnitClass::Percent, None),
            ("43.2 minutes", 43.2, UnitClass::Duration, Some("minutes")),
            ("43.2min", 43.2, UnitClass::Duration, Some("min")),
            (
                "a 5-Minute window",
                5.0,
                UnitClass::Duration,
                Some("minute"),
            ),
            ("300ms", 300.0, UnitClass::Duration, Some("ms")),
            ("$1,234.50", 1234.5, UnitClass::Currency, Some("USD")),
            ("1,234.5 USD", 1234.5, UnitClass::Currency, Some("USD")),
            ("USD 1,234.50", 1234.5, UnitClass::Currency, Some("USD")),
            ("1234.50 dollars", 1234.5, UnitClass::Currency, Some("USD")),
            ("€99.90", 99.9, UnitClass::Currency, Some("EUR")),
            ("99.90 €", 99.9, UnitClass::Currency, Some("EUR")),
            ("-$5", -5.0, UnitClass::Currency, Some("USD")),
            ("$-5", -5.0, UnitClass::Currency, Some("USD")),
            ("$ 50", 50.0, UnitClass::Currency, Some("USD")),
            ("1.2k", 1200.0, UnitClass::Plain, None),
            ("1.5M", 1_500_000.0, UnitClass::Plain, None),
            ("$2B", 2e9, UnitClass::Currency, Some("USD")),
            (
                "1.2 million dollars",
                1_200_000.0,
                UnitClass::Currency,
                Some("USD"),
            ),
            ("3/4", 0.75, UnitClass::Plain, None),
            ("2 1/2", 2.5, UnitClass::Plain, None),
            ("-17", -17.0, UnitClass::Plain, None),
            ("−17", -17.0, UnitClass::Plain, None),
            ("(-17)", -17.0, UnitClass::Plain, None),
            ("1.5e6", 1_500_000.0, UnitClass::Plain, None),
            ("1,200 requests", 1200.0, UnitClass::Count, Some("requests")),
            ("12 servers", 12.0, UnitClass::Count, Some("servers")),
            ("42", 42.0, UnitClass::Plain, None),
        ];
        for (text, value, unit, word) in cases {
            assert_eq!(q(text), quantity(value, unit, word), "parsing {text:?}");
        }
    }

    #[test]
    fn approximation_markers() {
        for text in [
            "≈ 43",
            "~43",
            "approximately 43",
            "approx. 43",
            "about $43",
            "≈ **43**",
        ] {
            let parsed = q(text);
            assert!(parsed.approximate, "{text:?}");
            assert_eq!(parsed.value, 43.0, "{text:?}");
        }
        assert!(!q("43").approximate);
        assert!(!q("the 43").approximate);
    }

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

    #[test]
    fn ignores_identifiers_versions_and_ordinals() {
        assert_eq!(parse_quantity("v2 on H100 with x86"), None);
        assert_eq!(parse_quantity("version 1.2.3"), None);
        assert_eq!(parse_quantity("the 2nd"), None);
        assert_eq!(parse_quantity("gpt-4"), None);
        assert_eq!(parse_quantity("12/31/2024"), None);
        assert_eq!(parse_quantity("1/0"), None);
        assert_eq!(parse_quantity("no numbers here"), None);
        assert_eq!(parse_quantity(""), None);
        assert_eq!(parse_quantity("1e999"), None);
        assert_eq!(q("10-20").value, 10.0);
        assert_eq!(parse_quantity("2:30"), None);
        assert_eq!(parse_quantity("a 3:1 ratio"), None);
    }

    /// (a, b, rate question, expected agreement)
    const AGREEMENT: [(&str, &str, bool, bool); 56] = [
        ("$1,234.50", "1234.5", false, true),
        ("1,234.5 USD", "$1,234.50", false, true),
        ("USD 1,234.50", "1234.50 dollars", false, true),
        ("12.5%", "0.125", true, true),
        ("12.5%", "0.125", false, false),
        ("0.125", "12.5%", true, true),
        ("12.5%", "12.5", false, true),
        ("12.5%", "12.5", true, true),
        ("12.5 percent", "12.5%", false, true),
        ("0.1%", "0.001", true, true),
        ("12.5%", "0.125%", true, false),
        ("99.9%", "99.95%", false, false),
        ("43.2", "4320", false, false),
        ("43.2", "4320", true, false),
        ("0.432", "43.2", true, false),
        ("43.2 minutes", "43.2 hours", false, false),
        ("43.2 minutes", "43.2 min", false, true),
        ("43.2 mins", "43.2 minute", false, true),
        ("43.2 minutes", "43.2", false, true),
        ("2 hrs", "2 hours", false, true),
        ("2 h", "2 hr", false, true),
        ("30 sec", "30 seconds", false, true),
        ("30 s", "30 ms", false, false),
        ("5 days", "5 weeks", false, false),
        ("3 months", "3 mo", false, true),
        ("1 hour", "60 minutes", false, false),
        ("43.2 minutes", "2592 seconds", false, false),
        ("1.2k", "1200", false, true),
        ("1.2K requests", "1,200", false, true),
        ("1.5M", "1,500,000", false, true),
        ("$2B", "2,000,000,000 USD", false, true),
        ("1.2 million", "1.2M", false, true),
        ("3/4", "0.75", false, true),
        ("2 1/2", "2.5", false, true),
        ("3 1/3", "3.3333", false, true),
        ("1/3", "0.33", false, false),
        ("-17", "−17", false, true),
        ("-17", "17", false, false),
        ("-$5", "$-5.00", false, true),
        ("−$5", "-5 USD", false, true),
        ("≈ 43.0", "43", false, true),
        ("~43", "43", false, true),
        ("approximately 1,200 units", "1200", false, true),
        ("The answer is $1,234.50 per month.", "1234.50", false, true),
        ("$0.50", "$0.51", false, false),
        ("$12.345", "$12.35", false, true),
        ("12.345", "12.35", false, false),
        ("100 servers", "100", false, true),
        ("100 requests", "100 servers", false, true),
        ("100 servers", "100%", false, false),
        ("$100", "100%", false, false),
        ("$100", "100 minutes", false, false),
        ("$100", "€100", false, false),
        ("1e3", "1000", false, true),
        ("0", "0.0", false, true),
        ("0", "0.001", false, false),
    ];

    #[test]
    fn agreement_table() {
        for (a, b, rate, expected) in AGREEMENT {
            let (qa, qb) = (q(a), q(b));
            assert_eq!(
                agree(&qa, &qb, rate),
                expected,
                "{a:?} vs {b:?} (rate question: {rate}): {qa:?} vs {qb:?}"
            );
            assert_eq!(
                agree(&qb, &qa, rate),
                expected,
                "{b:?} vs {a:?} is not symmetric"
            );
        }
    }

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

    use crate::soup::Soup;

    #[test]
    fn random_inputs_never_panic_and_keep_invariants() {
        let pieces = [
            "0", "1", "7", "12", "1,234", ",", ".", "5", "/", " ", "\n", "-", "−", "+", "$", "€",
            "%", "k", "M", "B", "e", "x", "≈", "~", "ANSWER:", "**", "EXPR:", "answer", "is", "=",
            "minutes", "hrs", "servers", "percent", "per", "cent", "million", "<think>",
            "</think>", "é", "日本", "\u{0}", "\t", "approx.", "nd", "1e400",
        ];
        let mut soup = Soup(0x0123_4567_89AB_CDEF);
        let mut parsed = 0;
        for round in 0..6000 {
            let text = if round % 3 == 0 {
                let len = soup.next() % 80;
                let bytes: Vec<u8> = (0..len).map(|_| soup.next() as u8).collect();
                String::from_utf8_lossy(&bytes).into_owned()
            } else {
                let len = soup.next() % 30;
                (0..len).map(|_| soup.pick(&pieces)).collect()
            };
            if let Some(quantity) = parse_quantity(&text) {
                parsed += 1;
                assert!(quantity.value.is_finite(), "{text:?} gave {quantity:?}");
                assert!(agree(&quantity, &quantity, false));
                for gold in canonical_golds(&quantity) {
                    assert!(gold.split_whitespace().count() <= 4, "{gold:?}");
                }
            }
            if let Some(extracted) = extract_answer(&text) {
                if extracted.fell_back {
                    assert!(
                        parse_quantity(&extracted.text).is_some(),
                        "fallback {:?} from {text:?} does not parse",
                        extracted.text
                    );
                }
            }
            let _ = extract_expr(&text);
            let _ = is_rate_question(&text);
        }
        assert!(
            parsed > 1000,
            "only {parsed} soups parsed; the generator is too weak"
        );
    }
}
