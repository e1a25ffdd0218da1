//! Decides whether one authored item is fit for the benchmark. Every rule has a stable reason code
//! (written to `rejects.jsonl` and listed in the README), and every "is the answer there" rule
//! uses the card's grading function, so it means exactly what a grader would see.

use crate::grade::{graded, norm};
use crate::record::Category;
use crate::reply::json_kind;
use serde_json::{Map, Value};
use std::ops::RangeInclusive;
use thiserror::Error;

/// The tunable limits of the conventions. Ranges are inclusive `(min, max)` pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    /// Most whitespace-separated words in one gold.
    pub max_gold_words: usize,
    /// Words in a long_document_qa document (the prompt before its `Question:` paragraph).
    pub doc_words: (usize, usize),
    /// `[Doc N]` snippets in a multi_document_qa prompt.
    pub snippets: (usize, usize),
    /// `Customer:` turns in a conversational prompt.
    pub customer_turns: (usize, usize),
    /// A bloated prompt has at least this many times the median words of its plain twin…
    pub bloat_factor: f64,
    /// …and never fewer than this many words.
    pub min_bloated_words: usize,
    /// `- key: value` lines in a memory_recall `Memory:` block.
    pub memory_facts: (usize, usize),
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            max_gold_words: 4,
            doc_words: (250, 450),
            snippets: (4, 6),
            customer_turns: (2, 4),
            bloat_factor: 3.0,
            min_bloated_words: 60,
            memory_facts: (4, 8),
        }
    }
}

/// The fields of an authored item that validation looks at. `durable`/`stale` are read only for
/// the memory categories (and are `None` for every other category).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemFields {
    pub prompt: String,
    pub golds: Vec<String>,
    pub durable: Option<Vec<String>>,
    pub stale: Option<Vec<String>>,
}

/// Why an item was dropped: a stable reason and a human detail naming the offending value.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}: {detail}", reason.code())]
pub struct Rejection {
    pub reason: Reason,
    pub detail: String,
}

/// Every rule an item can fail, in the order `fields_from_value`, `check_item` and
/// `check_bloated` apply them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    MissingField,
    WrongType,
    EmptyPrompt,
    EmptyGolds,
    GoldBlank,
    GoldTooLong,
    GoldsDistinctFacts,
    GoldNotNumeric,
    NoQuestion,
    DocLength,
    SnippetCount,
    SnippetLabels,
    TurnStructure,
    MemoryBlock,
    GoldInPrompt,
    GoldNotInContext,
    MissingDurable,
    DurableNotGold,
    MissingStale,
    StaleNotInPrompt,
    StaleGradedCorrect,
    NotBloated,
}

impl Reason {
    pub fn all() -> &'static [Reason] {
        &[
            Reason::MissingField,
            Reason::WrongType,
            Reason::EmptyPrompt,
            Reason::EmptyGolds,
            Reason::GoldBlank,
            Reason::GoldTooLong,
            Reason::GoldsDistinctFacts,
            Reason::GoldNotNumeric,
            Reason::NoQuestion,
            Reason::DocLength,
            Reason::SnippetCount,
            Reason::SnippetLabels,
            Reason::TurnStructure,
            Reason::MemoryBlock,
            Reason::GoldInPrompt,
            Reason::GoldNotInContext,
            Reason::MissingDurable,
            Reason::DurableNotGold,
            Reason::MissingStale,
            Reason::StaleNotInPrompt,
            Reason::StaleGradedCorrect,
            Reason::NotBloated,
        ]
    }

    pub fn code(&self) -> &'static str {
        match self {
            Reason::MissingField => "missing_field",
            Reason::WrongType => "wrong_type",
            Reason::EmptyPrompt => "empty_prompt",
            Reason::EmptyGolds => "empty_golds",
            Reason::GoldBlank => "gold_blank",
            Reason::GoldTooLong => "gold_too_long",
            Reason::GoldsDistinctFacts => "golds_distinct_facts",
            Reason::GoldNotNumeric => "gold_not_numeric",
            Reason::NoQuestion => "no_question",
            Reason::DocLength => "doc_length",
            Reason::SnippetCount => "snippet_count",
            Reason::SnippetLabels => "snippet_labels",
            Reason::TurnStructure => "turn_structure",
            Reason::MemoryBlock => "memory_block",
            Reason::GoldInPrompt => "gold_in_prompt",
            Reason::GoldNotInContext => "gold_not_in_context",
            Reason::MissingDurable => "missing_durable",
            Reason::DurableNotGold => "durable_not_gold",
            Reason::MissingStale => "missing_stale",
            Reason::StaleNotInPrompt => "stale_not_in_prompt",
            Reason::StaleGradedCorrect => "stale_graded_correct",
            Reason::NotBloated => "not_bloated",
        }
    }

    /// One line for the README's table of reject reasons.
    pub fn meaning(&self) -> &'static str {
        match self {
            Reason::MissingField => "the item lacks `prompt` or `golds`",
            Reason::WrongType => {
                "the item is not an object, or a field is not a string / array of strings"
            }
            Reason::EmptyPrompt => "the prompt is blank",
            Reason::EmptyGolds => "`golds` is an empty list",
            Reason::GoldBlank => "a gold has no letter or digit, so it would match any answer",
            Reason::GoldTooLong => "a gold has more words than `max_gold_words`",
            Reason::GoldsDistinctFacts => {
                "the golds are several distinct facts, not variants of one answer"
            }
            Reason::GoldNotNumeric => "a reasoning gold is not exactly one number",
            Reason::NoQuestion => "the prompt does not end with the question its category needs",
            Reason::DocLength => "the long document is outside the allowed word range",
            Reason::SnippetCount => "the number of `[Doc N]` snippets is outside the allowed range",
            Reason::SnippetLabels => {
                "the snippets are not labelled `[Doc 1]`, `[Doc 2]`, … in order"
            }
            Reason::TurnStructure => {
                "the dialog does not alternate `Customer:`/`Agent:`, end on the customer, \
                 or have the allowed number of customer turns"
            }
            Reason::MemoryBlock => {
                "no `Memory:` block with the allowed number of `- key: value` lines"
            }
            Reason::GoldInPrompt => "a gold is graded present in the prompt itself",
            Reason::GoldNotInContext => {
                "no gold is graded present in the item's document, snippets, dialog or memory"
            }
            Reason::MissingDurable => "a memory item has no (or a blank) `durable` value",
            Reason::DurableNotGold => "no `durable` value is graded correct by the golds",
            Reason::MissingStale => "a memory_update item has no (or a blank) `stale` value",
            Reason::StaleNotInPrompt => "a `stale` value does not appear in the prompt",
            Reason::StaleGradedCorrect => {
                "a `stale` value is graded correct by the golds, so repeating it would pass"
            }
            Reason::NotBloated => "a bloated prompt is too short compared to its plain twin",
        }
    }
}

fn reject<T>(reason: Reason, detail: impl Into<String>) -> Result<T, Rejection> {
    Err(Rejection {
        reason,
        detail: detail.into(),
    })
}

/// Number of whitespace-separated words.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// Reads the required fields of one reply item and checks their JSON types. Other keys, and
/// `durable`/`stale` on non-memory categories, are ignored; `null` counts as absent.
pub fn fields_from_value(category: Category, value: &Value) -> Result<ItemFields, Rejection> {
    let Some(object) = value.as_object() else {
        return reject(
            Reason::WrongType,
            format!("the item is {}, not a JSON object", json_kind(value)),
        );
    };
    let prompt = match object.get("prompt") {
        None | Some(Value::Null) => return reject(Reason::MissingField, "no `prompt`"),
        Some(Value::String(prompt)) => prompt.clone(),
        Some(other) => {
            return reject(
                Reason::WrongType,
                format!("`prompt` is {}, not a string", json_kind(other)),
            )
        }
    };
    let Some(golds) = string_list(object, "golds")? else {
        return reject(Reason::MissingField, "no `golds`");
    };
    let (durable, stale) = if category.is_memory() {
        (
            string_list(object, "durable")?,
            string_list(object, "stale")?,
        )
    } else {
        (None, None)
    };
    Ok(ItemFields {
        prompt,
        golds,
        durable,
        stale,
    })
}

fn string_list(object: &Map<String, Value>, key: &str) -> Result<Option<Vec<String>>, Rejection> {
    let values = match object.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(values)) => values,
        Some(other) => {
            return reject(
                Reason::WrongType,
                format!("`{key}` is {}, not an array of strings", json_kind(other)),
            )
        }
    };
    values
        .iter()
        .enumerate()
        .map(|(index, value)| match value {
            Value::String(text) => Ok(text.clone()),
            other => reject(
                Reason::WrongType,
                format!(
                    "`{key}` element {} is {}, not a string",
                    index + 1,
                    json_kind(other)
                ),
            ),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Applies every per-item rule of `category`, in `Reason::all()` order; the first failure is
/// returned. The bloat rule needs the plain twin's prompts and lives in `check_bloated`.
pub fn check_item(category: Category, item: &ItemFields, rules: &Rules) -> Result<(), Rejection> {
    if item.prompt.trim().is_empty() {
        return reject(Reason::EmptyPrompt, "the prompt is blank");
    }
    check_golds(category, &item.golds, rules)?;
    match checked_context(category, &item.prompt, rules)? {
        AnswerSource::NotInPrompt if graded(&item.prompt, &item.golds) => {
            return reject(
                Reason::GoldInPrompt,
                format!("a gold of {:?} is graded present in the prompt", item.golds),
            );
        }
        AnswerSource::Context(context) if !graded(context, &item.golds) => {
            return reject(
                Reason::GoldNotInContext,
                format!(
                    "no gold of {:?} is graded present in the {}",
                    item.golds,
                    context_name(category)
                ),
            );
        }
        _ => {}
    }
    if category.is_memory() {
        check_memory(category, item)?;
    }
    Ok(())
}

/// Bloated prompts must have at least `bloat_factor` × the median word count of the plain twin's
/// valid prompts (when it has any) and never fewer than `min_bloated_words`.
pub fn check_bloated(
    prompt_words: usize,
    plain_median_words: Option<f64>,
    rules: &Rules,
) -> Result<(), Rejection> {
    let floor = rules.min_bloated_words as f64;
    let needed =
        plain_median_words.map_or(floor, |median| (rules.bloat_factor * median).max(floor));
    if (prompt_words as f64) >= needed {
        return Ok(());
    }
    let basis = match plain_median_words {
        Some(median) => format!(
            "{} × the plain twin's median of {median} words, and at least {floor}",
            rules.bloat_factor
        ),
        None => "the floor while the plain twin has no items".to_string(),
    };
    reject(
        Reason::NotBloated,
        format!(
            "the prompt has {prompt_words} words; a bloated prompt needs {} ({basis})",
            needed.ceil()
        ),
    )
}

fn check_golds(category: Category, golds: &[String], rules: &Rules) -> Result<(), Rejection> {
    if golds.is_empty() {
        return reject(Reason::EmptyGolds, "`golds` is empty");
    }
    if let Some(blank) = golds.iter().find(|gold| norm(gold).trim().is_empty()) {
        return reject(
            Reason::GoldBlank,
            format!("gold {blank:?} has no letter or digit"),
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
    check_one_answer(golds)?;
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

#[derive(Debug, Clone, PartialEq)]
enum NumberKey {
    Value(f64),
    /// A dotted version such as `2.3.1`, or digits with irregular commas.
    Text(String),
}

impl NumberKey {
    fn same(&self, other: &NumberKey) -> bool {
        match (self, other) {
            (NumberKey::Value(a), NumberKey::Value(b)) => {
                (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
            }
            (NumberKey::Text(a), NumberKey::Text(b)) => a == b,
            _ => false,
        }
    }
}

struct GoldShape {
    numbers: Vec<NumberKey>,
    time_unit: Option<&'static str>,
    compact: String,
    words: Vec<String>,
}

impl GoldShape {
    fn of(gold: &str) -> GoldShape {
        let normalised = norm(gold);
        GoldShape {
            numbers: numbers_in(gold),
            time_unit: normalised.split_whitespace().find_map(time_unit),
            compact: normalised.chars().filter(|c| *c != ' ').collect(),
            words: normalised
                .split_whitespace()
                .filter(|word| {
                    word.len() >= 3
                        && word.chars().all(|c| c.is_ascii_lowercase())
                        && !GENERIC_WORDS.contains(word)
                })
                .map(str::to_owned)
                .collect(),
        }
    }

    fn same_answer(&self, other: &GoldShape) -> bool {
        if !self.numbers.is_empty() && !other.numbers.is_empty() {
            let units_agree = match (self.time_unit, other.time_unit) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            };
            return units_agree
                && covers(&self.numbers, &other.numbers)
                && covers(&other.numbers, &self.numbers);
        }
        self.compact.contains(&other.compact)
            || other.compact.contains(&self.compact)
            || self.words.iter().any(|word| other.words.contains(word))
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

fn check_one_answer(golds: &[String]) -> Result<(), Rejection> {
    let Some((first, rest)) = golds.split_first() else {
        return Ok(());
    };
    let first_shape = GoldShape::of(first);
    match rest
        .iter()
        .find(|gold| !first_shape.same_answer(&GoldShape::of(gold)))
    {
        Some(other) => reject(
            Reason::GoldsDistinctFacts,
            format!("gold {other:?} is not a variant of the first gold {first:?}"),
        ),
        None => Ok(()),
    }
}

/// The numbers written in `text`: digit runs with `,` thousands separators and `.` decimals,
/// scaled by a following `k`/`K`, `M`, `B`/`bn`, `thousand`, `million` or `billion`.
fn numbers_in(text: &str) -> Vec<NumberKey> {
    let chars: Vec<char> = text.chars().collect();
    let digit_at = |at: usize| chars.get(at).is_some_and(char::is_ascii_digit);
    let mut numbers = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        if !digit_at(at) {
            at += 1;
            continue;
        }
        let start = at;
        while digit_at(at)
            || (chars.get(at).is_some_and(|c| *c == ',' || *c == '.') && digit_at(at + 1))
        {
            at += 1;
        }
        let raw: String = chars.get(start..at).unwrap_or_default().iter().collect();
        let rest: String = chars.get(at..).unwrap_or_default().iter().collect();
        numbers.push(number_key(&raw, magnitude(&rest)));
    }
    numbers
}

fn number_key(raw: &str, scale: f64) -> NumberKey {
    let plain = if thousands_grouped(raw) {
        raw.replace(',', "")
    } else {
        raw.to_string()
    };
    match plain.parse::<f64>() {
        Ok(value) if !plain.contains(',') => NumberKey::Value(value * scale),
        _ => NumberKey::Text(plain),
    }
}

/// `1,250` and `12,345,678.9`: one to three digits, then groups of exactly three.
fn thousands_grouped(raw: &str) -> bool {
    let integer = raw.split('.').next().unwrap_or_default();
    let mut groups = integer.split(',');
    let head_ok = groups
        .next()
        .is_some_and(|head| (1..=3).contains(&head.len()));
    head_ok && raw.contains(',') && groups.all(|group| group.len() == 3)
}

fn magnitude(after_number: &str) -> f64 {
    let word: String = after_number
        .trim_start_matches(' ')
        .chars()
        .take_while(char::is_ascii_alphabetic)
        .collect();
    let attached = !after_number.starts_with(' ');
    match word.as_str() {
        "k" | "K" if attached => 1e3,
        "M" if attached => 1e6,
        "B" | "bn" if attached => 1e9,
        _ => match word.to_ascii_lowercase().as_str() {
            "thousand" => 1e3,
            "million" => 1e6,
            "billion" => 1e9,
            _ => 1.0,
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Structure: each category's prompt layout, and the context its gold must come from.
// ---------------------------------------------------------------------------------------------

const QUESTION_PREFIX: &str = "Question:";

/// Where a category's gold may or must appear.
enum AnswerSource<'p> {
    /// Nowhere in the prompt: the model must know or compute it.
    NotInPrompt,
    /// In this part of the prompt (the prompt minus its final question).
    Context(&'p str),
    /// Anywhere: a code question may quote the identifier it asks about.
    Unconstrained,
}

/// Checks the category's layout and says where its gold may appear.
fn checked_context<'p>(
    category: Category,
    prompt: &'p str,
    rules: &Rules,
) -> Result<AnswerSource<'p>, Rejection> {
    let context = match category {
        Category::SimpleFactual
        | Category::BloatedFactual
        | Category::Reasoning
        | Category::BloatedReasoning => return Ok(AnswerSource::NotInPrompt),
        Category::TechnicalCode => return Ok(AnswerSource::Unconstrained),
        Category::LongDocumentQa => {
            let document = before_question_paragraph(prompt)?;
            let words = word_count(document);
            if !in_range(rules.doc_words).contains(&words) {
                return reject(
                    Reason::DocLength,
                    format!(
                        "the document has {words} words; {}–{} allowed",
                        rules.doc_words.0, rules.doc_words.1
                    ),
                );
            }
            document
        }
        Category::MultiDocumentQa => {
            let snippets = before_question_paragraph(prompt)?;
            check_snippets(snippets, rules)?;
            snippets
        }
        Category::Conversational => dialog_before_last_customer_turn(prompt, rules)?,
        Category::MemoryRecall => {
            let memory = before_question_paragraph(prompt)?;
            check_memory_block(memory, rules)?;
            memory
        }
        Category::MemoryUpdate => {
            before_question_paragraph(prompt).unwrap_or_else(|_| before_last_sentence(prompt))
        }
    };
    Ok(AnswerSource::Context(context))
}

fn in_range((min, max): (usize, usize)) -> RangeInclusive<usize> {
    min..=max
}

fn context_name(category: Category) -> &'static str {
    match category {
        Category::LongDocumentQa => "document",
        Category::MultiDocumentQa => "snippets",
        Category::Conversational => "dialog before the last customer turn",
        Category::MemoryRecall => "memory block",
        _ => "prompt before its final question",
    }
}

/// The prompt before its last paragraph, which must start with `Question:` and ask something.
fn before_question_paragraph(prompt: &str) -> Result<&str, Rejection> {
    let body = prompt.trim_end();
    let mut offset = 0;
    let mut last_paragraph_start = None;
    for line in body.split_inclusive('\n') {
        offset += line.len();
        if line.trim().is_empty() {
            last_paragraph_start = Some(offset);
        }
    }
    let question = last_paragraph_start
        .and_then(|start| body.get(start..))
        .map(str::trim_start)
        .and_then(|paragraph| paragraph.strip_prefix(QUESTION_PREFIX));
    match (last_paragraph_start, question) {
        (Some(start), Some(question)) if !question.trim().is_empty() => {
            Ok(prompt.get(..start).unwrap_or_default())
        }
        _ => reject(
            Reason::NoQuestion,
            "the prompt must end with a blank line and a paragraph starting `Question:`",
        ),
    }
}

/// The prompt before its last sentence (the question of a memory_update item).
fn before_last_sentence(prompt: &str) -> &str {
    let body = prompt.trim_end().as_bytes();
    let end = body
        .windows(2)
        .rposition(|pair| match pair {
            [b'\n', _] => true,
            [b'.' | b'!' | b'?', next] => next.is_ascii_whitespace(),
            _ => false,
        })
        .map_or(0, |at| at + 1);
    prompt.get(..end).unwrap_or_default()
}

fn check_snippets(snippets: &str, rules: &Rules) -> Result<(), Rejection> {
    let labels: Vec<Option<usize>> = snippets
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("[Doc "))
        .map(|rest| {
            rest.split_once(']')
                .and_then(|(number, _)| number.trim().parse().ok())
        })
        .collect();
    if !in_range(rules.snippets).contains(&labels.len()) {
        return reject(
            Reason::SnippetCount,
            format!(
                "{} `[Doc N]` snippets; {}–{} allowed",
                labels.len(),
                rules.snippets.0,
                rules.snippets.1
            ),
        );
    }
    if let Some(position) = (1..=labels.len()).position(|n| labels.get(n - 1) != Some(&Some(n))) {
        return reject(
            Reason::SnippetLabels,
            format!(
                "snippet {} is not labelled `[Doc {}]`",
                position + 1,
                position + 1
            ),
        );
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Speaker {
    Customer,
    Agent,
}

/// Checks the dialog and returns it up to its final `Customer:` line.
fn dialog_before_last_customer_turn<'p>(
    prompt: &'p str,
    rules: &Rules,
) -> Result<&'p str, Rejection> {
    let mut turns = Vec::new();
    let mut offset = 0;
    for line in prompt.split_inclusive('\n') {
        let text = line.trim_start();
        if text.starts_with("Customer:") {
            turns.push((Speaker::Customer, offset));
        } else if text.starts_with("Agent:") {
            turns.push((Speaker::Agent, offset));
        }
        offset += line.len();
    }
    if let Some(turn) = turns
        .windows(2)
        .position(|pair| matches!(pair, [(a, _), (b, _)] if a == b))
    {
        return reject(
            Reason::TurnStructure,
            format!("turns {} and {} have the same speaker", turn + 1, turn + 2),
        );
    }
    let customer_turns = turns
        .iter()
        .filter(|(speaker, _)| *speaker == Speaker::Customer)
        .count();
    if !in_range(rules.customer_turns).contains(&customer_turns) {
        return reject(
            Reason::TurnStructure,
            format!(
                "{customer_turns} `Customer:` turns; {}–{} allowed",
                rules.customer_turns.0, rules.customer_turns.1
            ),
        );
    }
    match turns.last() {
        Some((Speaker::Customer, start)) => Ok(prompt.get(..*start).unwrap_or_default()),
        _ => reject(
            Reason::TurnStructure,
            "the dialog must end on a `Customer:` line",
        ),
    }
}

fn check_memory_block(memory: &str, rules: &Rules) -> Result<(), Rejection> {
    let mut lines = memory.lines().skip_while(|line| line.trim() != "Memory:");
    if lines.next().is_none() {
        return reject(Reason::MemoryBlock, "no line `Memory:`");
    }
    let facts = lines.take_while(|line| is_fact_line(line)).count();
    if !in_range(rules.memory_facts).contains(&facts) {
        return reject(
            Reason::MemoryBlock,
            format!(
                "{facts} `- key: value` lines follow `Memory:`; {}–{} allowed",
                rules.memory_facts.0, rules.memory_facts.1
            ),
        );
    }
    Ok(())
}

fn is_fact_line(line: &str) -> bool {
    line.trim_start()
        .strip_prefix("- ")
        .and_then(|fact| fact.split_once(':'))
        .is_some_and(|(key, value)| !key.trim().is_empty() && !value.trim().is_empty())
}

// ---------------------------------------------------------------------------------------------
// Memory annotations.
// ---------------------------------------------------------------------------------------------

fn check_memory(category: Category, item: &ItemFields) -> Result<(), Rejection> {
    let durable = item.durable.as_deref().unwrap_or_default();
    if durable.is_empty() {
        return reject(Reason::MissingDurable, "`durable` is missing or empty");
    }
    if let Some(blank) = durable.iter().find(|value| norm(value).trim().is_empty()) {
        return reject(
            Reason::MissingDurable,
            format!("durable value {blank:?} is blank"),
        );
    }
    if !durable.iter().any(|value| graded(value, &item.golds)) {
        return reject(
            Reason::DurableNotGold,
            format!(
                "no durable value of {durable:?} is graded correct by the golds {:?}",
                item.golds
            ),
        );
    }
    let stale = item.stale.as_deref().unwrap_or_default();
    if category == Category::MemoryUpdate && stale.is_empty() {
        return reject(Reason::MissingStale, "`stale` is missing or empty");
    }
    if let Some(blank) = stale.iter().find(|value| norm(value).trim().is_empty()) {
        return reject(
            Reason::MissingStale,
            format!("stale value {blank:?} is blank"),
        );
    }
    if let Some(absent) = stale
        .iter()
        .find(|value| !graded(&item.prompt, std::slice::from_ref(*value)))
    {
        return reject(
            Reason::StaleNotInPrompt,
            format!("stale value {absent:?} does not appear in the prompt"),
        );
    }
    if let Some(passing) = stale.iter().find(|value| graded(value, &item.golds)) {
        return reject(
            Reason::StaleGradedCorrect,
            format!(
                "stale value {passing:?} is graded correct by the golds {:?}",
                item.golds
            ),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    fn item(prompt: &str, golds: &[&str]) -> ItemFields {
        ItemFields {
            prompt: prompt.to_string(),
            golds: strings(golds),
            durable: None,
            stale: None,
        }
    }

    fn memory(prompt: &str, golds: &[&str], durable: &[&str], stale: &[&str]) -> ItemFields {
        ItemFields {
            durable: Some(strings(durable)),
            stale: Some(strings(stale)),
            ..item(prompt, golds)
        }
    }

    fn outcome(category: Category, item: &ItemFields) -> &'static str {
        check_item(category, item, &Rules::default()).map_or_else(|r| r.reason.code(), |()| "ok")
    }

    fn golds_outcome(golds: &[&str]) -> &'static str {
        outcome(Category::TechnicalCode, &item("Which value?", golds))
    }

    fn words(n: usize, word: &str) -> String {
        vec![word; n].join(" ")
    }

    fn document(words_in_doc: usize) -> String {
        format!(
            "Retention policy. Audit logs are kept for 400 days. {}\n\nQuestion: How long are audit logs kept?",
            words(words_in_doc - 9, "filler")
        )
    }

    const SNIPPETS: &str = "[Doc 1] EU retention\nEU audit logs are kept for 400 days.\n\
        [Doc 2] US retention\nUS audit logs are kept for 90 days.\n\
        [Doc 3] Backups\nBackups run nightly.\n\
        [Doc 4] Archive\nArchives move to cold storage.\n\n\
        Question: How long are EU audit logs kept?";

    const DIALOG: &str =
        "Customer: We run two workspaces, Atlas and Borealis. What plan is Atlas on?\n\
        Agent: Atlas is on Enterprise with 250 seats; Borealis is on Team with 40 seats.\n\
        Customer: And how many seats does the other one have?";

    const MEMORY: &str =
        "Memory:\n- owner: Priya Raman\n- plan: Enterprise\n- region: eu-central-1\n\
        - sso_provider: Okta\n\nQuestion: Which identity provider does the account use for SSO?";

    const UPDATE: &str =
        "The security policy previously required Kubernetes clusters to use version 1.22. \
        A recent update mandates a minimum version of 1.25. What is the current minimum version?";

    #[test]
    fn every_reason_has_a_unique_snake_case_code_and_a_meaning() {
        let codes: Vec<&str> = Reason::all().iter().map(Reason::code).collect();
        let mut unique = codes.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), codes.len());
        for reason in Reason::all() {
            assert!(reason
                .code()
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_'));
            assert!(!reason.meaning().is_empty());
        }
    }

    #[test]
    fn rejection_displays_code_and_detail() {
        let rejection =
            check_item(Category::SimpleFactual, &item("Q?", &[]), &Rules::default()).unwrap_err();
        assert_eq!(rejection.to_string(), "empty_golds: `golds` is empty");
    }

    #[test]
    fn word_count_splits_on_any_whitespace() {
        assert_eq!(word_count(" a  b\tc\nd "), 4);
        assert_eq!(word_count(""), 0);
    }

    #[test]
    fn fields_from_value_reads_required_fields() {
        let value =
            json!({"prompt": "Q?", "golds": ["a", "b"], "durable": ["a"], "stale": [], "note": 1});
        let fields = fields_from_value(Category::MemoryRecall, &value).unwrap();
        assert_eq!(fields, memory("Q?", &["a", "b"], &["a"], &[]));
    }

    #[test]
    fn fields_from_value_ignores_memory_fields_outside_memory_categories() {
        let value = json!({"prompt": "Q?", "golds": ["a"], "durable": ["a"], "stale": 5});
        let fields = fields_from_value(Category::SimpleFactual, &value).unwrap();
        assert_eq!(fields, item("Q?", &["a"]));
    }

    #[test]
    fn fields_from_value_missing_field() {
        for value in [
            json!({"golds": ["a"]}),
            json!({"prompt": "Q?"}),
            json!({"prompt": null, "golds": ["a"]}),
        ] {
            let rejection = fields_from_value(Category::SimpleFactual, &value).unwrap_err();
            assert_eq!(rejection.reason, Reason::MissingField, "{value}");
        }
    }

    #[test]
    fn fields_from_value_wrong_type() {
        let cases = [
            json!("a string item"),
            json!({"prompt": 3, "golds": ["a"]}),
            json!({"prompt": "Q?", "golds": "a"}),
            json!({"prompt": "Q?", "golds": ["a", 1.25]}),
            json!({"prompt": "Q?", "golds": ["a"], "durable": "a"}),
            json!({"prompt": "Q?", "golds": ["a"], "stale": [null]}),
        ];
        for value in cases {
            let rejection = fields_from_value(Category::MemoryUpdate, &value).unwrap_err();
            assert_eq!(rejection.reason, Reason::WrongType, "{value}");
        }
    }

    #[test]
    fn empty_prompt() {
        assert_eq!(
            outcome(Category::SimpleFactual, &item(" \n", &["5432"])),
            "empty_prompt"
        );
        assert_eq!(
            outcome(
                Category::SimpleFactual,
                &item("Default PostgreSQL port?", &["5432"])
            ),
            "ok"
        );
    }

    #[test]
    fn empty_golds() {
        assert_eq!(golds_outcome(&[]), "empty_golds");
        assert_eq!(golds_outcome(&["x"]), "ok");
    }

    #[test]
    fn gold_blank() {
        assert_eq!(golds_outcome(&["$", "—"]), "gold_blank");
        assert_eq!(golds_outcome(&["$5"]), "ok");
    }

    #[test]
    fn gold_too_long() {
        assert_eq!(
            golds_outcome(&["the retention is 400 days"]),
            "gold_too_long"
        );
        assert_eq!(golds_outcome(&["retention of 400 days"]), "ok");
        let lenient = Rules {
            max_gold_words: 5,
            ..Rules::default()
        };
        assert!(check_item(
            Category::TechnicalCode,
            &item("Q?", &["the retention is 400 days"]),
            &lenient
        )
        .is_ok());
    }

    #[test]
    fn golds_that_are_variants_of_one_answer_pass() {
        let variants: &[&[&str]] = &[
            &["1.25", "version 1.25", "kubernetes 1.25"],
            &["$1,250", "1250 USD"],
            &["PostgreSQL", "Postgres"],
            &["us-east-1", "us east 1"],
            &["43.2", "43.2 minutes"],
            &["$1,234.50", "1234.5"],
            &["1.2M", "1,200,000"],
            &["Priya Raman", "Raman"],
            &["TLS 1.3", "TLSv1.3"],
            &["DaemonSet", "daemon set"],
            &["v2.3.1", "release 2.3.1"],
        ];
        for golds in variants {
            assert_eq!(golds_outcome(golds), "ok", "{golds:?}");
        }
    }

    #[test]
    fn golds_distinct_facts() {
        let distinct: &[&[&str]] = &[
            &["SOC 2", "ISO 27001"],
            &["3 days", "5 days"],
            &["PCI DSS", "SOC 2"],
            &["4 hours", "4 days"],
            &["Alice Chen", "Bob Smith"],
            &["v2.3.1", "v2.3.2"],
            &["1.25", "1.25", "1.22"],
            &["east region", "west region"],
        ];
        for golds in distinct {
            assert_eq!(golds_outcome(golds), "golds_distinct_facts", "{golds:?}");
        }
    }

    #[test]
    fn gold_not_numeric() {
        let prompt =
            "A fleet serves 1,200 requests per second; each pod handles 150. How many pods?";
        assert_eq!(
            outcome(Category::Reasoning, &item(prompt, &["eight pods"])),
            "gold_not_numeric"
        );
        assert_eq!(
            outcome(Category::Reasoning, &item(prompt, &["8 to 9"])),
            "gold_not_numeric"
        );
        assert_eq!(
            outcome(Category::Reasoning, &item(prompt, &["8", "8 pods"])),
            "ok"
        );
        assert_eq!(
            outcome(Category::SimpleFactual, &item(prompt, &["eight pods"])),
            "ok"
        );
    }

    #[test]
    fn gold_in_prompt() {
        let prompt = "Which port does PostgreSQL listen on? We saw 54321 in the logs.";
        for category in [Category::SimpleFactual, Category::BloatedFactual] {
            assert_eq!(
                outcome(category, &item(prompt, &["5432"])),
                "gold_in_prompt"
            );
            assert_eq!(outcome(category, &item(prompt, &["port 5432"])), "ok");
        }
        let reasoning =
            "99.9% availability over 30 days: how many minutes of downtime are allowed?";
        for category in [Category::Reasoning, Category::BloatedReasoning] {
            assert_eq!(
                outcome(category, &item(reasoning, &["9.9"])),
                "gold_in_prompt"
            );
            assert_eq!(
                outcome(category, &item(reasoning, &["43.2", "43.2 minutes"])),
                "ok"
            );
        }
    }

    #[test]
    fn no_question() {
        let without = document(300).replace("\n\nQuestion:", "\nQuestion:");
        assert_eq!(
            outcome(Category::LongDocumentQa, &item(&without, &["400 days"])),
            "no_question"
        );
        let empty_question =
            SNIPPETS.replace("Question: How long are EU audit logs kept?", "Question:");
        assert_eq!(
            outcome(
                Category::MultiDocumentQa,
                &item(&empty_question, &["400 days"])
            ),
            "no_question"
        );
        let recall = memory(
            &MEMORY.replace("Question:", "Q:"),
            &["Okta"],
            &["Okta"],
            &[],
        );
        assert_eq!(outcome(Category::MemoryRecall, &recall), "no_question");
        assert_eq!(
            outcome(
                Category::LongDocumentQa,
                &item(&document(300), &["400 days"])
            ),
            "ok"
        );
    }

    #[test]
    fn doc_length() {
        assert_eq!(
            outcome(
                Category::LongDocumentQa,
                &item(&document(249), &["400 days"])
            ),
            "doc_length"
        );
        assert_eq!(
            outcome(
                Category::LongDocumentQa,
                &item(&document(451), &["400 days"])
            ),
            "doc_length"
        );
        assert_eq!(
            outcome(
                Category::LongDocumentQa,
                &item(&document(250), &["400 days"])
            ),
            "ok"
        );
        assert_eq!(
            outcome(
                Category::LongDocumentQa,
                &item(&document(450), &["400 days"])
            ),
            "ok"
        );
    }

    #[test]
    fn snippet_count() {
        let three = SNIPPETS.replace("[Doc 4] Archive\n", "Archive\n");
        assert_eq!(
            outcome(Category::MultiDocumentQa, &item(&three, &["400 days"])),
            "snippet_count"
        );
        let seven = SNIPPETS.replace(
            "\n\nQuestion:",
            "\n[Doc 5] a\nx\n[Doc 6] b\ny\n[Doc 7] c\nz\n\nQuestion:",
        );
        assert_eq!(
            outcome(Category::MultiDocumentQa, &item(&seven, &["400 days"])),
            "snippet_count"
        );
        assert_eq!(
            outcome(Category::MultiDocumentQa, &item(SNIPPETS, &["400 days"])),
            "ok"
        );
    }

    #[test]
    fn snippet_labels() {
        let skipped = SNIPPETS.replace("[Doc 3]", "[Doc 5]");
        assert_eq!(
            outcome(Category::MultiDocumentQa, &item(&skipped, &["400 days"])),
            "snippet_labels"
        );
    }

    #[test]
    fn turn_structure() {
        let ends_on_agent = format!("{DIALOG}\nAgent: Borealis has 40 seats.");
        let repeated = DIALOG.replace("Agent:", "Customer:");
        let one_turn = "Customer: How many seats does Atlas have?";
        let five_turns = format!(
            "{}\nAgent: ok\nCustomer: a\nAgent: b\nCustomer: c\nAgent: d\nCustomer: e\nAgent: f\n{}",
            DIALOG.lines().next().unwrap_or_default(),
            "Customer: and the other one?"
        );
        for dialog in [ends_on_agent.as_str(), &repeated, one_turn, &five_turns] {
            assert_eq!(
                outcome(Category::Conversational, &item(dialog, &["40 seats"])),
                "turn_structure",
                "{dialog}"
            );
        }
        assert_eq!(
            outcome(Category::Conversational, &item(DIALOG, &["40", "40 seats"])),
            "ok"
        );
    }

    #[test]
    fn memory_block() {
        let three_facts = MEMORY
            .replace("- plan: Enterprise\n", "")
            .replace("- region: eu-central-1\n", "");
        let no_header = MEMORY.replace("Memory:\n", "Stored facts:\n");
        for prompt in [three_facts, no_header] {
            let recall = memory(&prompt, &["Okta"], &["Okta"], &[]);
            assert_eq!(
                outcome(Category::MemoryRecall, &recall),
                "memory_block",
                "{prompt}"
            );
        }
        assert_eq!(
            outcome(
                Category::MemoryRecall,
                &memory(MEMORY, &["Okta"], &["Okta"], &[])
            ),
            "ok"
        );
    }

    #[test]
    fn gold_not_in_context() {
        let question_only = document(300).replace("400 days", "a while") + " 400 days?";
        assert_eq!(
            outcome(
                Category::LongDocumentQa,
                &item(&question_only, &["400 days"])
            ),
            "gold_not_in_context"
        );
        assert_eq!(
            outcome(Category::MultiDocumentQa, &item(SNIPPETS, &["30 days"])),
            "gold_not_in_context"
        );
        let in_last_turn = format!("{DIALOG} Is it 45?");
        assert_eq!(
            outcome(Category::Conversational, &item(&in_last_turn, &["45"])),
            "gold_not_in_context"
        );
        assert_eq!(
            outcome(
                Category::MemoryRecall,
                &memory(MEMORY, &["Azure AD"], &["Azure AD"], &[])
            ),
            "gold_not_in_context"
        );
        let asked_in_question = UPDATE.replace("minimum version?", "minimum version, 1.27?");
        let update = memory(&asked_in_question, &["1.27"], &["1.27"], &["1.22"]);
        assert_eq!(
            outcome(Category::MemoryUpdate, &update),
            "gold_not_in_context"
        );
        assert_eq!(
            outcome(
                Category::MemoryUpdate,
                &memory(UPDATE, &["1.25"], &["1.25"], &["1.22"])
            ),
            "ok"
        );
    }

    #[test]
    fn missing_durable() {
        let missing = ItemFields {
            durable: None,
            ..memory(MEMORY, &["Okta"], &[], &[])
        };
        assert_eq!(outcome(Category::MemoryRecall, &missing), "missing_durable");
        assert_eq!(
            outcome(Category::MemoryRecall, &memory(MEMORY, &["Okta"], &[], &[])),
            "missing_durable"
        );
        assert_eq!(
            outcome(
                Category::MemoryRecall,
                &memory(MEMORY, &["Okta"], &["Okta", " - "], &[])
            ),
            "missing_durable"
        );
        assert_eq!(
            outcome(
                Category::MemoryRecall,
                &memory(MEMORY, &["Okta"], &["Okta"], &[])
            ),
            "ok"
        );
    }

    #[test]
    fn durable_not_gold() {
        let wrong = memory(MEMORY, &["Okta"], &["Enterprise"], &[]);
        assert_eq!(outcome(Category::MemoryRecall, &wrong), "durable_not_gold");
        let variant = memory(MEMORY, &["Okta"], &["Okta Workforce Identity"], &[]);
        assert_eq!(outcome(Category::MemoryRecall, &variant), "ok");
    }

    #[test]
    fn missing_stale() {
        let absent = ItemFields {
            stale: None,
            ..memory(UPDATE, &["1.25"], &["1.25"], &[])
        };
        assert_eq!(outcome(Category::MemoryUpdate, &absent), "missing_stale");
        assert_eq!(
            outcome(
                Category::MemoryUpdate,
                &memory(UPDATE, &["1.25"], &["1.25"], &[])
            ),
            "missing_stale"
        );
        assert_eq!(
            outcome(
                Category::MemoryUpdate,
                &memory(UPDATE, &["1.25"], &["1.25"], &["1.22", "?"])
            ),
            "missing_stale"
        );
        let recall_without_stale = ItemFields {
            stale: None,
            ..memory(MEMORY, &["Okta"], &["Okta"], &[])
        };
        assert_eq!(outcome(Category::MemoryRecall, &recall_without_stale), "ok");
    }

    #[test]
    fn stale_not_in_prompt() {
        let update = memory(UPDATE, &["1.25"], &["1.25"], &["1.21"]);
        assert_eq!(
            outcome(Category::MemoryUpdate, &update),
            "stale_not_in_prompt"
        );
        let recall = memory(MEMORY, &["Okta"], &["Okta"], &["Ping"]);
        assert_eq!(
            outcome(Category::MemoryRecall, &recall),
            "stale_not_in_prompt"
        );
    }

    #[test]
    fn stale_graded_correct() {
        let prompt = UPDATE
            .replace("1.22", "1.25")
            .replace("version of 1.25", "version of 1.2");
        let substring = memory(&prompt, &["1.2"], &["1.2"], &["1.25"]);
        assert_eq!(
            outcome(Category::MemoryUpdate, &substring),
            "stale_graded_correct"
        );
        let same = memory(UPDATE, &["1.25", "1.22"], &["1.25"], &["1.22"]);
        assert_ne!(outcome(Category::MemoryUpdate, &same), "ok");
        assert_eq!(
            outcome(
                Category::MemoryUpdate,
                &memory(UPDATE, &["1.25", "version 1.25"], &["1.25"], &["1.22"])
            ),
            "ok"
        );
    }

    #[test]
    fn not_bloated() {
        let rules = Rules::default();
        assert_eq!(
            check_bloated(59, None, &rules).unwrap_err().reason,
            Reason::NotBloated
        );
        assert!(check_bloated(60, None, &rules).is_ok());
        assert_eq!(
            check_bloated(89, Some(30.0), &rules).unwrap_err().reason,
            Reason::NotBloated
        );
        assert!(check_bloated(90, Some(30.0), &rules).is_ok());
        assert!(check_bloated(60, Some(10.0), &rules).is_ok());
        assert!(check_bloated(59, Some(10.0), &rules).is_err());
        assert!(check_bloated(89, Some(30.0), &rules)
            .unwrap_err()
            .detail
            .contains("needs 90"));
    }

    #[test]
    fn technical_code_may_quote_its_answer() {
        let snippet = "```go\ngo test ./...\n```\nWhich `go test` flag detects data races?";
        assert_eq!(
            outcome(Category::TechnicalCode, &item(snippet, &["-race"])),
            "ok"
        );
    }
}
