//! The words and signs a quantity is written with: currencies, durations, count nouns, ordinal
//! suffixes, approximation marks, answer cues and markdown emphasis. Each is listed once, here,
//! so the scanner that reads a unit, `agree` that folds it and the golds that spell it use the
//! same entries.

/// ISO code, symbol, and the lower-case words that name it after a number.
const CURRENCIES: [(&str, char, &[&str]); 5] = [
    ("USD", '$', &["usd", "dollar", "dollars"]),
    ("EUR", '€', &["eur", "euro", "euros"]),
    ("GBP", '£', &["gbp"]),
    ("JPY", '¥', &["jpy", "yen"]),
    ("INR", '₹', &["inr", "rupee", "rupees"]),
];

pub(super) fn currency_by_symbol(symbol: char) -> Option<&'static str> {
    CURRENCIES
        .iter()
        .find(|(_, s, _)| *s == symbol)
        .map(|(code, _, _)| *code)
}

pub(super) fn currency_by_word(word: &str) -> Option<&'static str> {
    CURRENCIES
        .iter()
        .find(|(_, _, words)| words.contains(&word))
        .map(|(code, _, _)| *code)
}

pub(super) fn currency_by_code(word: &str) -> Option<&'static str> {
    CURRENCIES
        .iter()
        .find(|(code, _, _)| code.eq_ignore_ascii_case(word))
        .map(|(code, _, _)| *code)
}

pub(super) fn currency_symbol(code: &str) -> Option<char> {
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

pub(super) fn fold_duration(word: &str) -> Option<&'static str> {
    DURATIONS
        .iter()
        .find(|(_, words)| words.contains(&word))
        .map(|(key, _)| *key)
}

/// The folded duration word, or the lower-cased word itself when it is not a known one.
pub(super) fn duration_key(word: &str) -> String {
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

pub(super) fn is_count_noun(word: &str) -> bool {
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

/// Letters that make the digits before them an ordinal (`2nd`), not a number.
pub(super) const ORDINAL_SUFFIXES: [&str; 4] = ["st", "nd", "rd", "th"];
/// Signs that mark the number after them approximate.
pub(super) const APPROXIMATE_MARKS: [char; 4] = ['~', '≈', '≃', '∼'];
/// Words that mark the number after them approximate.
pub(super) const APPROXIMATE_WORDS: [&str; 8] = [
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
pub(super) const APPROXIMATE_ABBREVIATIONS: [&str; 2] = ["approx", "ca"];

/// Answer cues for [`parse_quantity`](super::parse_quantity), strongest first.
pub(super) const ANSWER_CUES: [&[&str]; 3] = [
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

/// Markdown emphasis that may wrap a label or a value.
pub(super) const MARKDOWN: [char; 3] = ['*', '_', '`'];
