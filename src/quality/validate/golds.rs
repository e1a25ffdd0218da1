//! The rules for golds: each is a short, specific answer (never a placeholder, a lone letter, a
//! machine-made token or reply debris), all of them are variants of one answer (a doubtful one is
//! dropped, a distinct fact rejects the item), a gold is in the unit its question names and, in
//! a code question, not a number or code the prompt already states, and a reasoning gold is one
//! number. Each rule reads the gold the way the card's grader will.

use super::quantity::{clock_time, numbers_in, same_value, Clock, NumberKey, TimeUnit};
use super::text::{unbalanced, word_count};
use super::{reject, Reason, Rejection, Rules};
use crate::quality::dedup::normalise;
use crate::quality::grade::{bare_number, graded, lenient_bare_number, norm};
use crate::quality::numeric::with_separators;
use crate::stages::item::Category;

/// Applies the gold rules that need no context, in `Reason::all()` order, and tells how every
/// gold after the first stands to it.
pub fn check(
    category: Category,
    golds: &[String],
    rules: &Rules,
) -> Result<Vec<Variant>, Rejection> {
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
    let variants = variants(&read)?;
    if category.is_numeric() {
        let doubtful = |variant: &Variant| matches!(variant, Variant::Doubtful(_));
        let kept_variants = golds.iter().skip(1).zip(&variants);
        let mut kept = golds.iter().take(1).chain(
            kept_variants
                .filter(|(_, variant)| !doubtful(variant))
                .map(|(gold, _)| gold),
        );
        if let Some(gold) = kept.find(|gold| numbers_in(gold).len() != 1) {
            return reject(
                Reason::GoldNotNumeric,
                format!("gold {gold:?} must contain exactly one number"),
            );
        }
    }
    Ok(variants)
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

/// A placeholder: a known non-answer, a whole gold in angle, square or curly brackets
/// (`<answer>`, `[gold]`, `{value}`), or a number typed along the keyboard's digit row.
/// (`normalised` is `gold` as the grader normalises it.)
fn is_placeholder(gold: &str, normalised: &str) -> bool {
    let trimmed = gold.trim();
    let bracketed = [('<', '>'), ('[', ']'), ('{', '}')]
        .iter()
        .any(|(open, close)| trimmed.starts_with(*open) && trimmed.ends_with(*close));
    bracketed || normalised.split_whitespace().any(is_digit_run) || {
        PLACEHOLDER_GOLDS.contains(&normalise(gold).as_str())
    }
}

/// Fewest digits of a number that reads as typed along the digit row rather than as a value.
const DIGIT_RUN_MIN: usize = 6;

/// `123456`, `12345678901234567890`, `987654`: each digit one up (after 9, 0) or each one
/// down from the last, as a model fills in an id it does not have.
fn is_digit_run(token: &str) -> bool {
    let digits = token.as_bytes();
    if digits.len() < DIGIT_RUN_MIN || !digits.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let steps = |step: u8| {
        digits
            .windows(2)
            .all(|pair| (pair[0] - b'0' + step) % 10 == pair[1] - b'0')
    };
    steps(1) || steps(9)
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
// Every gold is compared with the first gold, the item's key, and read as one of:
// - the same value (`Variant::Same`). When both hold numbers: the numbers are equal, read in
//   any form the gate knows: thousands separators and `k`/`M`/`B` (`1.2M` = `1,200,000`), a
//   length in another exact unit (`72 hours` = `3 days`), the 12- and 24-hour clock (`3:30 pm`
//   = `15:30 ET`), a percent and its fraction (`10%` = `0.1`); a dotted version (`2.3.1`) is
//   compared as text, and different time units with one number differ (`4 hours` ≠ `4 days`).
//   Otherwise: one's compact form (lower-case letters and digits only, a spoken `double`,
//   `triple` or `quad` letter written out) holds the other's (`Postgres` ⊂ `PostgreSQL`,
//   `us-east-1` = `us east 1`, `quad-A record` ⊃ `AAAA`);
// - a name sharing a content word of three or more letters that is not a stop word or a
//   generic unit or noun (`Variant::SharesWord`): one answer, unless the context names each
//   apart from the other, as the value of its own subject (`check_subjects`);
// - doubtful (`Variant::Doubtful`): perhaps the same value, but the gate cannot confirm it: a
//   12-hour time without am or pm (`3:30` beside `15:30`), a length in months or years beside
//   one in days or weeks, a quantity beside words with no number (`429` beside `Too Many
//   Requests`), (`check_unit`) another unit than the question asks for, or (`check_grounded`)
//   a number the context never writes (`5th May` beside `May`). It is dropped and the item
//   kept, unless the context names it apart from the key;
// - else a distinct fact, and the item is rejected: numbers that differ (`3 days` ≠ `5 days`,
//   `SOC 2` ≠ `ISO 27001`), or names with nothing in common (`PCI DSS` / `SOC 2`, `Alice Chen`
//   / `Bob Smith`, `east region` / `west region`: `region` is generic; two URLs share only
//   `https`, `api` and `com` when their hosts differ). It cannot see that
//   `Kubernetes` and `K8s` are one answer (rejected).
// ---------------------------------------------------------------------------------------------

/// How a gold stands to the first gold, the item's key, when it is not a distinct fact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Variant {
    /// The same value, read as the gate reads numbers, clocks, units and names.
    Same,
    /// A name sharing a word with the key: one answer unless the context names each apart.
    SharesWord,
    /// Perhaps the same value, which the gate cannot confirm; why.
    Doubtful(String),
}

/// A gold dropped from a kept item because it may not be the key's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedGold {
    pub gold: String,
    /// Why it is in doubt, naming the first gold.
    pub detail: String,
}

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
    "https",
    "www",
    "com",
    "org",
    "net",
    "api",
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

/// How far apart, as a share of the longer, a length in months or years may be from one in days
/// or weeks and still read as a doubtful variant of it (`30 days` beside `1 month`).
const ROUGHLY_EQUAL_LENGTHS: f64 = 0.03;

/// What two golds are compared by: their numbers, read once; the rest of the shape is read from
/// the normalised text only when a comparison needs it.
struct GoldShape<'g> {
    gold: &'g str,
    numbers: Vec<NumberKey>,
    normalised: &'g str,
}

impl<'g> GoldShape<'g> {
    /// The shape of `gold`, which the grader normalises to `normalised`.
    fn of(gold: &'g str, normalised: &'g str) -> GoldShape<'g> {
        GoldShape {
            gold,
            numbers: numbers_in(gold),
            normalised,
        }
    }

    /// Every time unit the gold names, as a word (`4 hours`) or after its number (`72h`).
    fn time_units(&self) -> impl Iterator<Item = TimeUnit> + 'g {
        self.normalised
            .split_whitespace()
            .filter_map(TimeUnit::of_token)
    }

    /// One number in one time unit: `72 hours`, `1.5h`.
    fn length(&self) -> Option<(f64, TimeUnit)> {
        let [NumberKey::Value(value)] = self.numbers.as_slice() else {
            return None;
        };
        let mut units = self.time_units();
        let unit = units.next()?;
        units.next().is_none().then_some((*value, unit))
    }

    fn is_percent(&self) -> bool {
        self.gold.contains('%')
            || self
                .normalised
                .split_whitespace()
                .any(|word| word == "percent" || word == "pct")
    }

    /// Opens with its number, as a quantity does (`429`, `6 years`, `$1,250`), not with a name.
    fn is_quantity(&self) -> bool {
        self.gold
            .trim_start()
            .trim_start_matches(['$', '€', '£', '~', '+', '-'])
            .starts_with(|c: char| c.is_ascii_digit())
    }

    /// Lower-case letters and digits only, with a spoken repeat written out (`quad a` → `aaaa`).
    fn compact(&self) -> String {
        let mut compact = String::with_capacity(self.normalised.len());
        let mut words = self.normalised.split_whitespace().peekable();
        while let Some(word) = words.next() {
            let repeat = match word {
                "double" => 2,
                "triple" => 3,
                "quad" | "quadruple" => 4,
                _ => 1,
            };
            match words.peek() {
                Some(next) if repeat > 1 && next.len() == 1 => {
                    compact.push_str(&next.repeat(repeat));
                    words.next();
                }
                _ => compact.push_str(word),
            }
        }
        compact
    }

    /// The words that can show two golds name the same thing.
    fn content_words(&self) -> impl Iterator<Item = &'g str> {
        self.normalised.split_whitespace().filter(|word| {
            word.len() >= 3
                && word.chars().all(|c| c.is_ascii_lowercase())
                && !GENERIC_WORDS.contains(word)
        })
    }

    /// How this gold stands to `key`, or `None` when it is a distinct fact.
    fn variant_of(&self, key: &GoldShape) -> Option<Variant> {
        if !self.numbers.is_empty() && !key.numbers.is_empty() {
            return self.numeric_variant_of(key);
        }
        let (mine, theirs) = (self.compact(), key.compact());
        if mine.contains(&theirs) || theirs.contains(&mine) {
            return Some(Variant::Same);
        }
        if self
            .content_words()
            .any(|word| key.content_words().any(|theirs| theirs == word))
        {
            return Some(Variant::SharesWord);
        }
        let (quantity, words) = if self.numbers.is_empty() {
            (key, self)
        } else {
            (self, key)
        };
        quantity.is_quantity().then(|| {
            Variant::Doubtful(format!(
                "{:?} has no number, so it cannot be read as the quantity {:?}",
                words.gold, quantity.gold
            ))
        })
    }

    fn numeric_variant_of(&self, key: &GoldShape) -> Option<Variant> {
        if let (Some(mine), Some(theirs)) = (clock_time(self.gold), clock_time(key.gold)) {
            return clock_variant((mine, self.gold), (theirs, key.gold));
        }
        if let (Some(mine), Some(theirs)) = (self.length(), key.length()) {
            return self.length_variant_of(mine, theirs, key.gold);
        }
        let units_agree = match (self.time_units().next(), key.time_units().next()) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        let same_numbers =
            covers(&self.numbers, &key.numbers) && covers(&key.numbers, &self.numbers);
        (units_agree && same_numbers || self.is_share_of(key) || key.is_share_of(self))
            .then_some(Variant::Same)
    }

    fn length_variant_of(
        &self,
        (value, unit): (f64, TimeUnit),
        (key_value, key_unit): (f64, TimeUnit),
        key_gold: &str,
    ) -> Option<Variant> {
        let (length, key_length) = (value * unit.seconds(), key_value * key_unit.seconds());
        if unit.is_calendar() == key_unit.is_calendar() {
            return same_value(length, key_length).then_some(Variant::Same);
        }
        let near = (length - key_length).abs() <= ROUGHLY_EQUAL_LENGTHS * length.max(key_length);
        near.then(|| {
            Variant::Doubtful(format!(
                "{:?} and {key_gold:?} are the same length only roughly: a month or a year is not \
                 a whole number of days",
                self.gold
            ))
        })
    }

    /// This gold is a percent and `fraction` the same share as a fraction: `10%` and `0.1`.
    fn is_share_of(&self, fraction: &GoldShape) -> bool {
        match (self.numbers.as_slice(), fraction.numbers.as_slice()) {
            ([NumberKey::Value(percent)], [NumberKey::Value(share)]) => {
                self.is_percent() && !fraction.is_percent() && same_value(percent / 100.0, *share)
            }
            _ => false,
        }
    }
}

/// Two times of day: the same, or half a day apart where one lacks am or pm (doubtful).
fn clock_variant((clock, gold): (Clock, &str), (key, key_gold): (Clock, &str)) -> Option<Variant> {
    if clock.minutes == key.minutes {
        return Some(Variant::Same);
    }
    let half_a_day_apart = clock.minutes.abs_diff(key.minutes) == 12 * 60;
    (half_a_day_apart && !(clock.meridiem && key.meridiem)).then(|| {
        Variant::Doubtful(format!(
            "{gold:?} and {key_gold:?} are the same time of day only on a 12-hour clock read \
             without am or pm"
        ))
    })
}

fn covers(these: &[NumberKey], those: &[NumberKey]) -> bool {
    those
        .iter()
        .all(|number| these.iter().any(|mine| mine.same(number)))
}

/// How every gold after the first (each with its normalised form) stands to the first; a
/// distinct fact rejects the item.
fn variants(golds: &[(&str, &str)]) -> Result<Vec<Variant>, Rejection> {
    let Some(((first, first_normalised), rest)) = golds.split_first() else {
        return Ok(Vec::new());
    };
    let key = GoldShape::of(first, first_normalised);
    rest.iter()
        .map(|(gold, normalised)| {
            GoldShape::of(gold, normalised)
                .variant_of(&key)
                .ok_or_else(|| Rejection {
                    reason: Reason::GoldsDistinctFacts,
                    detail: format!("gold {gold:?} is not a variant of the first gold {first:?}"),
                })
        })
        .collect()
}

/// Golds the gate reads as one answer only by a shared word, or doubtfully, are distinct facts
/// when the context names each apart from the other: each the value of its own subject
/// (`EMEA runs Dynamics 365 Sales, APAC runs Salesforce Sales Cloud`), however many words each
/// has. Two mentions that overlap or stand side by side (`eu-central-1 (Frankfurt)`) are one.
pub fn check_subjects(
    golds: &[String],
    variants: &[Variant],
    context: &str,
    context_name: &str,
) -> Result<(), Rejection> {
    let Some((key, rest)) = golds.split_first() else {
        return Ok(());
    };
    let mut unsure = rest
        .iter()
        .zip(variants)
        .filter(|(_, variant)| **variant != Variant::Same)
        .map(|(gold, _)| gold)
        .peekable();
    if unsure.peek().is_none() {
        return Ok(());
    }
    let text = normalise(context);
    let key_mentions = word_spans(&text, &normalise(key));
    if key_mentions.is_empty() {
        return Ok(());
    }
    let apart = |(start, end): (usize, usize), (other_start, other_end): (usize, usize)| {
        end + 1 < other_start || other_end + 1 < start
    };
    match unsure.find(|gold| {
        let mentions = word_spans(&text, &normalise(gold));
        !mentions.is_empty()
            && mentions
                .iter()
                .all(|mention| key_mentions.iter().all(|key| apart(*key, *mention)))
    }) {
        Some(gold) => reject(
            Reason::GoldsDistinctFacts,
            format!(
                "gold {gold:?} and the first gold {key:?} are each named apart in the \
                 {context_name}: the values of two different subjects"
            ),
        ),
        None => Ok(()),
    }
}

/// Words that may stand between `how many` (or `number of`, `in`) and the unit it asks for, or
/// between a number and its unit.
const UNIT_ADJECTIVES: &[&str] = &[
    "more",
    "additional",
    "extra",
    "business",
    "calendar",
    "working",
    "full",
    "whole",
    "total",
    "consecutive",
    "billable",
    "remaining",
];

/// The time unit a question asks its answer in: `How many days…`, `the number of hours…`,
/// `…, in minutes?`. Only spelled-out units count (`in s3` names no unit).
fn asked_time_unit(question: &str) -> Option<TimeUnit> {
    let normalised = norm(question);
    let words: Vec<&str> = normalised.split_whitespace().collect();
    words.iter().enumerate().find_map(|(at, word)| {
        let after = match (*word, words.get(at + 1).copied()) {
            ("how", Some("many")) | ("number", Some("of")) => at + 2,
            ("in", _) => at + 1,
            _ => return None,
        };
        let unit = words
            .get(after..)?
            .iter()
            .find(|word| !UNIT_ADJECTIVES.contains(word))?;
        TimeUnit::of_word(unit).filter(|_| unit.len() >= 3)
    })
}

/// Words after `how many` that ask for a share, which a percentage answers.
const SHARE_WORDS: &[&str] = &["percent", "percentage", "per"];

/// Whether `question` asks `how many` of something counted and `key` is a percentage (`70%`):
/// a share, not a count.
fn count_keyed_by_share(question: &str, key: &str) -> bool {
    let question = norm(question);
    let words: Vec<&str> = question.split_whitespace().collect();
    let asks_count = words
        .windows(3)
        .any(|w| w[0] == "how" && w[1] == "many" && !SHARE_WORDS.contains(&w[2]));
    let share = key.contains('%') || norm(key).split_whitespace().any(|w| w == "percent");
    asks_count && share
}

/// Whether `question` asks for a time of day (`By what time of day must…`), which a clock time
/// answers and a date (`2023-02-15`) does not.
fn asks_time_of_day(question: &str) -> bool {
    norm(question).contains("time of day")
}

/// A question that names the unit of its answer (`How many days…`) wants golds in that unit: a
/// first gold in another unit rejects the item (`6 years`, `70%` for `How many…`, a date for
/// `what time of day`), and so does a bare number that the context counts only in something
/// else (`327,114` beside `327,114 transactions`); a variant in another unit is doubtful.
pub fn check_unit(
    question: &str,
    context: Option<&str>,
    golds: &[String],
    variants: &mut [Variant],
) -> Result<(), Rejection> {
    if let Some(key) = golds
        .first()
        .filter(|key| count_keyed_by_share(question, key))
    {
        return reject(
            Reason::GoldUnitMismatch,
            format!(
                "the question asks how many (a count) and the first gold {key:?} is a percentage"
            ),
        );
    }
    if let Some(key) = golds
        .first()
        .filter(|key| asks_time_of_day(question) && clock_time(key).is_none())
    {
        return reject(
            Reason::GoldUnitMismatch,
            format!(
                "the question asks for a time of day and the first gold {key:?} is no clock time"
            ),
        );
    }
    let Some(asked) = asked_time_unit(question) else {
        return Ok(());
    };
    let other_unit = |gold: &str| {
        let units: Vec<TimeUnit> = norm(gold)
            .split_whitespace()
            .filter_map(TimeUnit::of_token)
            .collect();
        units.first().copied().filter(|_| !units.contains(&asked))
    };
    let Some((key, rest)) = golds.split_first() else {
        return Ok(());
    };
    if let Some(unit) = other_unit(key) {
        return reject(
            Reason::GoldUnitMismatch,
            format!(
                "the question asks for {} and the first gold {key:?} is in {}",
                asked.plural(),
                unit.plural()
            ),
        );
    }
    if let Some(counted) = context.and_then(|context| counted_as(context, key, asked)) {
        return reject(
            Reason::GoldUnitMismatch,
            format!(
                "the question asks for {} and the context gives the first gold {key:?} as \
                 {key} {counted}",
                asked.plural()
            ),
        );
    }
    for (gold, variant) in rest.iter().zip(variants.iter_mut()) {
        if let Some(unit) = other_unit(gold) {
            *variant = Variant::Doubtful(format!(
                "{gold:?} is in {}, but the question asks for {}",
                unit.plural(),
                asked.plural()
            ));
        }
    }
    Ok(())
}

/// Where the answer comes from a context and the key writes no number, a variant that writes a
/// number the context never writes is doubtful: it adds a detail the context does not give
/// (`5th May` beside the key `May`, over snippets that say only "by the end of May"). A key with
/// a number has its variants compared by value already (`3:30 pm` beside `15:30`).
pub fn check_grounded(
    context: &str,
    golds: &[String],
    variants: &mut [Variant],
    context_name: &str,
) {
    let Some((key, rest)) = golds.split_first() else {
        return;
    };
    if !numbers_in(key).is_empty() {
        return;
    }
    let stated = numbers_in(context);
    for (gold, variant) in rest.iter().zip(variants.iter_mut()) {
        if matches!(variant, Variant::Doubtful(_)) {
            continue;
        }
        let unstated = numbers_in(gold)
            .into_iter()
            .find(|number| !stated.iter().any(|s| s.same(number)));
        if let Some(number) = unstated {
            *variant = Variant::Doubtful(format!(
                "{gold:?} writes {}, a number that is nowhere in the {context_name}",
                number.written()
            ));
        }
    }
}

/// A variant written as a bare number of one or two digits beside a key that says more
/// (`5` beside `5 years`) is doubtful: the grader would take any answer holding those digits
/// (`15 years`, `2025`). So is a longer bare number that the context also gives to something
/// else (`200` beside the key `200Mbps`, over a context that says `200GB`): the grader would take
/// that other value. Both are kept where the context writes the bare number and not the key
/// (`Seats: 85` beside the key `85 seats`): there it is the context's own form of the value.
pub fn check_lenient(context: Option<&str>, golds: &[String], variants: &mut [Variant]) {
    let Some((key, rest)) = golds.split_first() else {
        return;
    };
    if lenient_bare_number(key) || context.is_some_and(|context| !graded(context, &[key])) {
        return;
    }
    for (gold, variant) in rest.iter().zip(variants.iter_mut()) {
        if lenient_bare_number(gold) {
            *variant = Variant::Doubtful(format!(
                "{gold:?} is a bare number the grader finds inside other answers (`15`, `2025`); \
                 the key {key:?} says what it counts"
            ));
        } else if !bare_number(key)
            && bare_number(gold)
            && context.is_some_and(|context| given_to_another(context, golds, gold))
        {
            *variant = Variant::Doubtful(format!(
                "{gold:?} is a bare number the context also gives to something other than the key \
                 {key:?}, so an answer naming that would pass"
            ));
        }
    }
}

/// Whether `number`, a gold written as a bare whole number, stands in `context` apart from the
/// golds that write more than it (the key's forms): as a number of its own, not inside a longer one.
fn given_to_another(context: &str, golds: &[String], number: &str) -> bool {
    let number = number.trim();
    let mut rest = norm(context);
    for gold in golds.iter().map(|gold| norm(gold)) {
        if gold.trim() != number {
            rest = rest.replace(gold.as_str(), " ");
        }
    }
    let bytes = rest.as_bytes();
    rest.match_indices(number).any(|(start, _)| {
        let end = start + number.len();
        (start == 0 || !bytes[start - 1].is_ascii_digit())
            && (end == bytes.len() || !bytes[end].is_ascii_digit())
    })
}

/// Python's reserved words: none of them can name a keyword argument or a parameter.
const PYTHON_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// A question that asks for a keyword argument or a parameter wants a name one can pass: a first
/// gold that is a reserved word (`return` for "What keyword argument must be added to the function
/// call…?") names none, so the key is wrong whatever the prompt says.
pub fn check_reserved(question: &str, golds: &[String]) -> Result<(), Rejection> {
    let asked = norm(question);
    let asks_a_name = ["argument", "parameter", "kwarg"]
        .iter()
        .any(|kind| asked.contains(kind));
    let Some(key) = golds.first() else {
        return Ok(());
    };
    let name = key.trim().trim_end_matches('=').trim();
    if asks_a_name && PYTHON_KEYWORDS.contains(&name) {
        return reject(
            Reason::GoldReservedWord,
            format!(
                "the question asks for an argument or parameter and the first gold {key:?} is a \
                 reserved word of Python"
            ),
        );
    }
    Ok(())
}

/// What `context` counts the bare number `key` in, when it never counts it in `asked`: the word
/// after each place the number stands alone (`327,114 transactions`), past one adjective of a
/// unit (`45 calendar days`). `None` when the key is not a bare number, or the context never
/// follows it with a word.
fn counted_as(context: &str, key: &str, asked: TimeUnit) -> Option<String> {
    let is_bare_number = key.chars().any(|c| c.is_ascii_digit())
        && key
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, ',' | '.'));
    if !is_bare_number {
        return None;
    }
    let words_after = context.match_indices(key).filter_map(|(at, _)| {
        let before = context[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || matches!(c, '.' | ',' | '$')) {
            return None;
        }
        let rest = context[at + key.len()..].strip_prefix(' ')?;
        let mut words = rest.split_whitespace().map(|word| {
            word.trim_end_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        });
        let first = words.next()?;
        let word = if UNIT_ADJECTIVES.contains(&first.as_str()) {
            words.next()?
        } else {
            first
        };
        (word.len() >= 3 && word.chars().all(|c| c.is_ascii_lowercase())).then_some(word)
    });
    let mut counted = None;
    for word in words_after {
        if TimeUnit::of_word(&word) == Some(asked) {
            return None;
        }
        counted.get_or_insert(word);
    }
    counted
}

/// A gold every word of which is a word of `question` (a plural read as its singular), so the
/// question holds the answer it asks for (`best practices for automating` for "What is the best
/// practice for automating…?", `IAM policies for user access control` for "What is the IAM
/// policy for user access control?"), as a gold the grader finds in the question does.
pub fn echoes_question<'g>(question: &str, golds: &'g [String]) -> Option<&'g str> {
    let singular = |word: &str| -> String {
        if let Some(stem) = word.strip_suffix("ies").filter(|stem| stem.len() >= 2) {
            return format!("{stem}y");
        }
        match word.strip_suffix('s') {
            Some(stem) if stem.len() >= 3 && !stem.ends_with('s') => stem.to_string(),
            _ => word.to_string(),
        }
    };
    let asked: Vec<String> = norm(question).split_whitespace().map(singular).collect();
    golds.iter().map(String::as_str).find(|gold| {
        let words = norm(gold);
        let mut words = words.split_whitespace().peekable();
        words.peek().is_some() && words.all(|word| asked.contains(&singular(word)))
    })
}

/// Splits `golds` into those kept and those dropped: every doubtful variant of the first gold.
pub fn drop_doubtful(
    golds: Vec<String>,
    variants: Vec<Variant>,
) -> (Vec<String>, Vec<DroppedGold>) {
    let mut golds = golds.into_iter();
    let Some(key) = golds.next() else {
        return (Vec::new(), Vec::new());
    };
    let mut variants_kept = Vec::new();
    let mut dropped = Vec::new();
    for (gold, variant) in golds.zip(variants) {
        match variant {
            Variant::Doubtful(why) => dropped.push(DroppedGold {
                detail: format!(
                    "gold {gold:?} was dropped and the item kept with its first gold {key:?}: {why}"
                ),
                gold,
            }),
            Variant::Same | Variant::SharesWord => variants_kept.push(gold),
        }
    }
    let kept = std::iter::once(key).chain(variants_kept).collect();
    (kept, dropped)
}

/// `golds` without each gold the grader reads exactly as an earlier one (`data warehouse` after
/// `Data Warehouse`, `2023` four times): it grades no answer the earlier one does not, and a
/// record that lists one answer twice reads as careless.
pub fn without_repeats(golds: Vec<String>) -> Vec<String> {
    let mut graded_as = std::collections::HashSet::new();
    golds
        .into_iter()
        .filter(|gold| graded_as.insert(norm(gold)))
        .collect()
}

/// Currency signs an amount may open with (`$12,480`).
const CURRENCY_SIGNS: [char; 3] = ['$', '€', '£'];

/// Four bare digits in this range may be a year, which is written without separators.
const YEARS: std::ops::RangeInclusive<u32> = 1900..=2099;

/// The other form of an amount the grader reads apart from it: with thousands separators when
/// `gold` has none, without when it has them (`10000` and `10,000`, `$1500` and `$1,500`,
/// `1000 units` and `1,000 units`). An amount is a whole number of five to nine digits, or of
/// four after a currency sign or outside [`YEARS`] (`1000` and `1,000`), alone or before words;
/// `2023` is left alone.
fn separator_twin(gold: &str) -> Option<String> {
    let (amount, words) = gold.split_once(' ').unwrap_or((gold, ""));
    let sign = amount.chars().next().filter(|c| CURRENCY_SIGNS.contains(c));
    let number = &amount[sign.map_or(0, char::len_utf8)..];
    let digits: String = number.chars().filter(|c| *c != ',').collect();
    let is_amount = digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0')
        && match digits.len() {
            4 => sign.is_some() || digits.parse().is_ok_and(|n: u32| !YEARS.contains(&n)),
            5..=9 => true,
            _ => false,
        };
    let grouped = with_separators(&digits);
    let twin = match number.contains(',') {
        false => grouped,
        true if grouped == number => digits,
        true => return None,
    };
    let sign = sign.map(String::from).unwrap_or_default();
    is_amount.then(|| match words {
        "" => format!("{sign}{twin}"),
        words => format!("{sign}{twin} {words}"),
    })
}

/// Units written both against their number and apart from it (`100GB`, `100 GB`), which the
/// grader reads apart: `100gb` does not hold `100 gb`.
const SPACED_OR_NOT: [&str; 17] = [
    "kb", "mb", "gb", "tb", "pb", "kib", "mib", "gib", "tib", "bps", "kbps", "mbps", "gbps", "ms",
    "hz", "mhz", "ghz",
];

/// The other spacing of a number and its unit in [`SPACED_OR_NOT`]: `100 GB` for `100GB`, and
/// `100GB` for `100 GB`.
fn spacing_twin(gold: &str) -> Option<String> {
    let (number, unit, spaced) = match gold.split_once(' ') {
        Some((number, unit)) => (number, unit, true),
        None => {
            let (number, unit) = gold.split_at(gold.find(|c: char| c.is_ascii_alphabetic())?);
            (number, unit, false)
        }
    };
    let is_number = number.starts_with(|c: char| c.is_ascii_digit())
        && number
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b',');
    let is_unit = SPACED_OR_NOT.contains(&unit.to_ascii_lowercase().as_str());
    (is_number && is_unit).then(|| match spaced {
        true => format!("{number}{unit}"),
        false => format!("{number} {unit}"),
    })
}

/// The golds, each followed by its other spacing ([`spacing_twin`]) and the [`separator_twin`]
/// of each: the templates ask for both forms of numbers of 1,000 or more, and a small author
/// writes one (`10000`, `20TB`), so an answer of `10,000` or `20 TB` would be graded wrong.
pub fn with_twins(golds: Vec<String>) -> Vec<String> {
    golds
        .into_iter()
        .flat_map(|gold| {
            let spaced = spacing_twin(&gold);
            let forms: Vec<String> = std::iter::once(gold).chain(spaced).collect();
            let twins: Vec<String> = forms.iter().filter_map(|f| separator_twin(f)).collect();
            forms.into_iter().chain(twins)
        })
        .collect()
}

/// A gold whose every number or code (`404`, `AAAA`, `KeyError`, `HTTP`) the prompt states as
/// words of their own, so the prompt gives the answer away (`…returns a 404… Which HTTP status
/// code…?` with `404` or `HTTP 404`). A gold without a number or code is left alone: a code
/// question may use plain words in its prose (`timeout`, `From`).
pub fn stated_code<'g>(prompt: &str, golds: &'g [String]) -> Option<&'g str> {
    let mut text = None;
    golds.iter().map(String::as_str).find(|gold| {
        let mut codes = gold
            .split_whitespace()
            .filter(|token| is_code(token))
            .peekable();
        codes.peek().is_some() && {
            let text: &str = text.get_or_insert_with(|| normalise(prompt));
            codes.all(|code| !word_spans(text, &normalise(code)).is_empty())
        }
    })
}

/// Endings by which a question names a gold as its own word in another form (`commits`,
/// `committed`, `committing` for `commit`).
const INFLECTIONS: [&str; 5] = ["s", "es", "d", "ed", "ing"];

/// How a technical_code prompt gives a gold away beyond [`stated_code`], each time by whole
/// words: its question names the gold, or a gold of letters only with an ending of
/// [`INFLECTIONS`] (`commits`; a flag such as `-race` is named for what it does, so "data races"
/// leaves it); its description outside the code names a gold of several words (one ordinary
/// word, `From`, may stand in prose by chance); or the question asks what must be added or what
/// is missing while the code already has the gold.
pub fn given_away<'g>(
    prompt: &str,
    question: &str,
    golds: &'g [String],
) -> Option<(&'g str, &'static str)> {
    let (prose, code) = prose_and_code(prompt);
    let (question, prose, code) = (normalise(question), normalise(&prose), normalise(&code));
    let asks_to_add = question
        .split(' ')
        .any(|word| matches!(word, "add" | "added" | "adding" | "missing"));
    golds.iter().find_map(|gold| {
        let gold_words = normalise(gold);
        let stands_in = |text: &str| !word_spans(text, &gold_words).is_empty();
        let plain_word = gold.chars().all(|c| c.is_ascii_alphabetic());
        let inflected_in = |text: &str| {
            plain_word
                && INFLECTIONS
                    .iter()
                    .any(|ending| !word_spans(text, &format!("{gold_words}{ending}")).is_empty())
        };
        let how = if stands_in(&question) {
            "the question names it"
        } else if inflected_in(&question) {
            "the question names it with an ending (`commits` for `commit`)"
        } else if gold_words.contains(' ') && stands_in(&prose) {
            "the description outside the code names it"
        } else if asks_to_add && stands_in(&code) {
            "the question asks what to add, and the code already has it"
        } else {
            return None;
        };
        Some((gold.as_str(), how))
    })
}

/// The lines of a technical_code prompt outside its code (fenced, or indented by four spaces or a
/// tab), and the code's lines.
fn prose_and_code(prompt: &str) -> (String, String) {
    let (mut prose, mut code) = (String::new(), String::new());
    let mut fenced = false;
    for line in prompt.lines() {
        let fence = line.trim_start().starts_with("```");
        let in_code = fenced || fence || line.starts_with("    ") || line.starts_with('\t');
        fenced ^= fence;
        let part = if in_code { &mut code } else { &mut prose };
        part.push_str(line);
        part.push('\n');
    }
    (prose, code)
}

/// A number or a code by its capitals (`404`, `AAAA`, `KeyError`), not a word of prose.
fn is_code(token: &str) -> bool {
    token.bytes().any(|b| b.is_ascii_digit()) || token.chars().skip(1).any(char::is_uppercase)
}

/// Whether `words` stands in `text` as whole words, whatever punctuation stands between them
/// (`'Finance' application` holds `Finance application`).
pub fn mentions(text: &str, words: &str) -> bool {
    !word_spans(&normalise(text), &normalise(words)).is_empty()
}

/// Where `words` stands in `text` as whole words (both as [`normalise`] makes them):
/// each mention's start and end.
fn word_spans(text: &str, words: &str) -> Vec<(usize, usize)> {
    if words.is_empty() {
        return Vec::new();
    }
    let bytes = text.as_bytes();
    let at_boundary =
        |at: Option<usize>| at.is_none_or(|at| bytes.get(at).is_none_or(|b| *b == b' '));
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(found) = text.get(from..).and_then(|rest| rest.find(words)) {
        let (start, end) = (from + found, from + found + words.len());
        if at_boundary(start.checked_sub(1)) && at_boundary(Some(end)) {
            spans.push((start, end));
        }
        from = start + 1;
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_spans_are_whole_words_even_where_mentions_overlap() {
        assert_eq!(word_spans("a a a", "a a"), [(0, 3), (2, 5)]);
        assert_eq!(word_spans("sales cloud salesforce", "sales"), [(0, 5)]);
        assert_eq!(word_spans("salesforce", "force"), []);
        assert_eq!(word_spans("anything", ""), []);
    }
}
