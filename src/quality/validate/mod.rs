//! Decides whether one authored item is fit for the benchmark. Each structured category is
//! recognised by what the card says it is, in whatever surface form the model wrote it (see the
//! structure modules), junk is refused whatever its category, and every "is the answer there"
//! rule uses the card's grading function on the parsed parts (the context and the question), so
//! it means exactly what a grader would see. Every rule has a stable reason code. A gold that may
//! not be the key's value is dropped from an item that is otherwise kept, with a note that says
//! why.

#[cfg(test)]
mod corpus;
mod denial;
mod dialog;
mod document;
mod golds;
mod junk;
mod memory;
mod personal;
mod quantity;
mod question;
mod reason;
mod schema;
mod snippets;
mod text;

pub use golds::DroppedGold;
pub use question::Placement;
pub use reason::{Reason, Rejection};
pub use schema::{reply_schema, ExampleLayout, Patterns};
pub use text::word_count;

use crate::quality::grade::graded;
use crate::stages::item::Category;
use crate::stages::reply::json_kind;
use reason::reject;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::ops::RangeInclusive;

/// The tunable limits of the conventions. Ranges are inclusive `(min, max)` pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    /// Most whitespace-separated words in one gold.
    pub max_gold_words: usize,
    /// Words in a long_document_qa document (the prompt before its question).
    pub doc_words: (usize, usize),
    /// Labelled snippets in a multi_document_qa prompt.
    pub snippets: (usize, usize),
    /// Fewest words of body under a snippet's label.
    pub snippet_min_words: usize,
    /// Turns of the asking side (the last speaker) in a conversational prompt.
    pub asker_turns: (usize, usize),
    /// A bloated prompt has at least this many times the median words of its plain twin…
    pub bloat_factor: f64,
    /// …and never fewer than this many words.
    pub min_bloated_words: usize,
    /// Stored facts before a memory_recall question.
    pub memory_facts: (usize, usize),
    /// Fewest words in a prompt, by category; a category not listed uses
    /// `default_min_prompt_words`.
    pub min_prompt_words: BTreeMap<Category, usize>,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            max_gold_words: 4,
            doc_words: (250, 450),
            snippets: (4, 6),
            snippet_min_words: 4,
            asker_turns: (2, 4),
            bloat_factor: 3.0,
            min_bloated_words: 60,
            memory_facts: (3, 10),
            min_prompt_words: BTreeMap::new(),
        }
    }
}

impl Rules {
    pub fn min_prompt_words(&self, category: Category) -> usize {
        self.min_prompt_words
            .get(&category)
            .copied()
            .unwrap_or_else(|| default_min_prompt_words(category))
    }
}

/// The fewest words a prompt of `category` can have and still be an item of it: below this it is
/// junk (a stub, a lone label, half a sentence). `[categories.<name>] min_prompt_words` overrides.
pub fn default_min_prompt_words(category: Category) -> usize {
    match category {
        Category::SimpleFactual => 5,
        Category::TechnicalCode => 6,
        Category::BloatedFactual | Category::BloatedReasoning => 20,
        Category::Reasoning => 12,
        Category::LongDocumentQa | Category::MultiDocumentQa => 40,
        Category::Conversational => 20,
        Category::MemoryRecall | Category::MemoryUpdate => 15,
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

/// An item the gate keeps: its fields, with every doubtful gold variant dropped, and a note for
/// each gold dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub item: ItemFields,
    pub dropped: Vec<DroppedGold>,
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

/// Where a category's gold may or must appear.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AnswerSource {
    /// Nowhere in the prompt: the model must know or compute it.
    Outside,
    /// In the context (document, snippets, earlier turns, facts), and not in the question.
    Context,
    /// Anywhere: a code question may quote the identifier it asks about.
    Anywhere,
}

/// How a category lays out its prompt, from the card's description of it.
struct Layout {
    placement: Placement,
    /// An instruction ("Name the…", "Fix the…") asks as well as a question does.
    instruction_asks: bool,
    answer: AnswerSource,
}

fn layout(category: Category) -> Layout {
    let (placement, instruction_asks, answer) = match category {
        Category::SimpleFactual => (Placement::Anywhere, false, AnswerSource::Outside),
        Category::BloatedFactual | Category::Reasoning | Category::BloatedReasoning => {
            (Placement::Anywhere, true, AnswerSource::Outside)
        }
        Category::TechnicalCode => (Placement::Anywhere, true, AnswerSource::Anywhere),
        Category::LongDocumentQa | Category::MultiDocumentQa => {
            (Placement::End, true, AnswerSource::Context)
        }
        Category::Conversational | Category::MemoryRecall | Category::MemoryUpdate => {
            (Placement::End, false, AnswerSource::Context)
        }
    };
    Layout {
        placement,
        instruction_asks,
        answer,
    }
}

/// Whether a category's question must end with `?` (it may not be an instruction).
pub fn needs_question_mark(category: Category) -> bool {
    !layout(category).instruction_asks
}

/// Where a category's question stands.
pub fn placement(category: Category) -> Placement {
    layout(category).placement
}

/// A prompt parsed into the parts its category has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Structure<'p> {
    /// What the answer must come from: the document, snippets, turns before the asker's last
    /// one, or the stored facts. `None` for the categories without a context.
    pub context: Option<&'p str>,
    /// The question, without a `Question:`-style label or the speaker's label.
    pub question: &'p str,
    /// The labelled snippets of a multi_document_qa context; empty for the other categories.
    pub snippets: Vec<snippets::Snippet<'p>>,
}

/// Recognises the structure `category` describes in `prompt`, in any reasonable surface form.
pub fn structure<'p>(
    category: Category,
    prompt: &'p str,
    rules: &Rules,
) -> Result<Structure<'p>, Rejection> {
    structure_of(category, &question::read(prompt), prompt, rules)
}

/// [`structure`] of a prompt already `read`.
fn structure_of<'p>(
    category: Category,
    reading: &question::Reading<'p>,
    prompt: &'p str,
    rules: &Rules,
) -> Result<Structure<'p>, Rejection> {
    let layout = layout(category);
    if category == Category::Conversational {
        let dialog = dialog::parse(prompt, rules)?;
        return Ok(Structure {
            context: Some(dialog.context),
            question: dialog.question,
            snippets: Vec::new(),
        });
    }
    let asked = reading.find(layout.placement, layout.instruction_asks)?;
    let before = prompt.get(..asked.start).unwrap_or_default();
    let mut found = Vec::new();
    match category {
        Category::LongDocumentQa => {
            let words = word_count(before);
            if !in_range(rules.doc_words).contains(&words) {
                return reject(
                    Reason::DocLength,
                    format!(
                        "the document before the question has {words} words; {}–{} allowed",
                        rules.doc_words.0, rules.doc_words.1
                    ),
                );
            }
        }
        Category::MultiDocumentQa => found = snippets::parse(before, rules)?,
        Category::MemoryRecall => memory::check_facts(before, rules)?,
        _ => {}
    }
    Ok(Structure {
        context: (layout.answer == AnswerSource::Context).then_some(before),
        question: asked.text,
        snippets: found,
    })
}

/// Applies every per-item rule of `category`, in `Reason::all()` order; the first failure is
/// returned, else the item with its doubtful gold variants dropped. The bloat rule needs the
/// plain twin's prompts and lives in `check_bloated`.
pub fn check_item(
    category: Category,
    mut item: ItemFields,
    rules: &Rules,
) -> Result<Kept, Rejection> {
    let prompt = item.prompt.as_str();
    if prompt.trim().is_empty() {
        return reject(Reason::EmptyPrompt, "the prompt is blank");
    }
    junk::check_placeholder(prompt)?;
    personal::check_personal_data(prompt)?;
    junk::check_length(prompt, rules.min_prompt_words(category))?;
    junk::check_complete(prompt)?;
    let reading = question::read(prompt);
    reading.find(Placement::Anywhere, layout(category).instruction_asks)?;
    let mut variants = golds::check(category, &item.golds, rules)?;
    let parts = structure_of(category, &reading, prompt, rules)?;
    question::check_single_ask(parts.question)?;
    if matches!(category, Category::SimpleFactual | Category::BloatedFactual) {
        question::check_particular(parts.question)?;
    }
    if matches!(
        category,
        Category::SimpleFactual | Category::BloatedFactual | Category::TechnicalCode
    ) {
        question::check_not_advice(parts.question)?;
    }
    if category == Category::TechnicalCode {
        question::check_asks_token(parts.question)?;
    }
    if let Some(context) = parts.context {
        golds::check_subjects(&item.golds, &variants, context, context_name(category))?;
    }
    golds::check_unit(parts.question, parts.context, &item.golds, &mut variants)?;
    golds::check_reserved(parts.question, &item.golds)?;
    if let (Category::MultiDocumentQa, Some(key)) = (category, item.golds.first()) {
        snippets::check_distractors(&parts.snippets, &item.golds)?;
        snippets::check_one_answer(&parts.snippets, parts.question, key)?;
    }
    if let (Category::LongDocumentQa, Some(document), Some(key)) =
        (category, parts.context, item.golds.first())
    {
        document::check_distractors(document, key)?;
    }
    if let (Category::LongDocumentQa | Category::MultiDocumentQa, Some(context), Some(key)) =
        (category, parts.context, item.golds.first())
    {
        denial::check(context, parts.question, key)?;
    }
    if let Some(context) = parts.context {
        golds::check_grounded(context, &item.golds, &mut variants, context_name(category));
    }
    golds::check_lenient(parts.context, &item.golds, &mut variants);
    let (kept, dropped) = golds::drop_doubtful(std::mem::take(&mut item.golds), variants);
    item.golds = golds::without_repeats(golds::with_twins(kept));
    match (layout(category).answer, parts.context) {
        (AnswerSource::Outside, _) if graded(prompt, &item.golds) => {
            return reject(
                Reason::GoldInPrompt,
                format!("a gold of {:?} is graded present in the prompt", item.golds),
            );
        }
        (AnswerSource::Anywhere, _) => {
            if let Some(gold) = golds::stated_code(prompt, &item.golds) {
                return reject(
                    Reason::GoldInPrompt,
                    format!(
                        "the prompt states every number or code of gold {gold:?} as a word of \
                         its own, so it gives the answer away"
                    ),
                );
            }
            if let Some((gold, how)) = golds::given_away(prompt, parts.question, &item.golds) {
                return reject(
                    Reason::GoldInPrompt,
                    format!("the prompt gives gold {gold:?} away: {how}"),
                );
            }
        }
        (AnswerSource::Context, Some(context)) => {
            if !graded(context, &item.golds) {
                return reject(
                    Reason::GoldNotInContext,
                    format!(
                        "no gold of {:?} is graded present in the {}",
                        item.golds,
                        context_name(category)
                    ),
                );
            }
            if graded(parts.question, &item.golds) {
                return reject(
                    Reason::GoldInQuestion,
                    format!(
                        "a gold of {:?} is graded present in the question {:?}",
                        item.golds,
                        crate::stages::item::quote(parts.question)
                    ),
                );
            }
            if let Some(gold) = golds::echoes_question(parts.question, &item.golds) {
                return reject(
                    Reason::GoldInQuestion,
                    format!(
                        "every word of gold {gold:?} is a word of the question {:?}",
                        crate::stages::item::quote(parts.question)
                    ),
                );
            }
        }
        _ => {}
    }
    if category.is_memory() {
        memory::check_annotations(category, &item, parts.context.unwrap_or(prompt))?;
        item.durable = item.durable.map(golds::without_repeats);
        item.stale = item.stale.map(golds::without_repeats);
    }
    if category == Category::MemoryUpdate {
        memory::check_question_not_on_replaced_value(
            parts.context.unwrap_or(prompt),
            parts.question,
        )?;
    }
    Ok(Kept { item, dropped })
}

/// The stored facts of a memory item's prompt: its fact lines (`- key: value`, bulleted or
/// numbered) above the line of its question, each as [`crate::quality::dedup::normalise`] makes it; none
/// when the prompt states its facts otherwise.
pub fn stored_facts(prompt: &str) -> Vec<String> {
    memory::fact_lines(memory_context(prompt))
        .map(crate::quality::dedup::normalise)
        .collect()
}

/// The keys of a memory item's `key: value` fact lines (`tenant`, `sso_provider`), lower-cased,
/// in their order; none when the prompt states its facts otherwise.
pub fn stored_keys(prompt: &str) -> Vec<String> {
    memory::fact_lines(memory_context(prompt))
        .filter_map(memory::fact_key)
        .map(str::to_lowercase)
        .collect()
}

/// The text above a memory item's question line; empty when it has no question.
fn memory_context(prompt: &str) -> &str {
    let Ok(asked) = question::read(prompt).find(Placement::End, false) else {
        return "";
    };
    let question_line = text::line_at(prompt, asked.start);
    prompt.get(..question_line.start).unwrap_or_default()
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

fn in_range((min, max): (usize, usize)) -> RangeInclusive<usize> {
    min..=max
}

fn context_name(category: Category) -> &'static str {
    match category {
        Category::LongDocumentQa => "document before the question",
        Category::MultiDocumentQa => "snippets",
        Category::Conversational => "dialog before the asker's last turn",
        Category::MemoryRecall => "stored facts",
        _ => "prompt before its final question",
    }
}

#[cfg(test)]
mod tests;
