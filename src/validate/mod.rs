//! Decides whether one authored item is fit for the benchmark. Each structured category is
//! recognised by what the card says it is, in whatever surface form the model wrote it (see the
//! structure modules), junk is refused whatever its category, and every "is the answer there"
//! rule uses the card's grading function on the parsed parts (the context and the question), so
//! it means exactly what a grader would see. Every rule has a stable reason code.

mod dialog;
mod golds;
mod junk;
mod memory;
mod question;
mod reason;
mod schema;
mod snippets;
mod text;

pub use question::Placement;
pub use reason::{Reason, Rejection};
pub use schema::{reply_schema, Patterns};
pub use text::word_count;

use crate::grade::graded;
use crate::record::Category;
use crate::reply::json_kind;
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Structure<'p> {
    /// What the answer must come from: the document, snippets, turns before the asker's last
    /// one, or the stored facts. `None` for the categories without a context.
    pub context: Option<&'p str>,
    /// The question, without a `Question:`-style label or the speaker's label.
    pub question: &'p str,
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
        });
    }
    let asked = reading.find(layout.placement, layout.instruction_asks)?;
    let before = prompt.get(..asked.start).unwrap_or_default();
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
        Category::MultiDocumentQa => {
            snippets::parse(before, rules)?;
        }
        Category::MemoryRecall => memory::check_facts(before, rules)?,
        _ => {}
    }
    Ok(Structure {
        context: (layout.answer == AnswerSource::Context).then_some(before),
        question: asked.text,
    })
}

/// Applies every per-item rule of `category`, in `Reason::all()` order; the first failure is
/// returned. The bloat rule needs the plain twin's prompts and lives in `check_bloated`.
pub fn check_item(category: Category, item: &ItemFields, rules: &Rules) -> Result<(), Rejection> {
    let prompt = item.prompt.as_str();
    if prompt.trim().is_empty() {
        return reject(Reason::EmptyPrompt, "the prompt is blank");
    }
    junk::check_placeholder(prompt)?;
    junk::check_length(prompt, rules.min_prompt_words(category))?;
    junk::check_complete(prompt)?;
    let reading = question::read(prompt);
    reading.find(Placement::Anywhere, layout(category).instruction_asks)?;
    golds::check(category, &item.golds, rules)?;
    let parts = structure_of(category, &reading, prompt, rules)?;
    match (layout(category).answer, parts.context) {
        (AnswerSource::Outside, _) if graded(prompt, &item.golds) => {
            return reject(
                Reason::GoldInPrompt,
                format!("a gold of {:?} is graded present in the prompt", item.golds),
            );
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
                        crate::record::excerpt(parts.question, 80)
                    ),
                );
            }
        }
        _ => {}
    }
    if category.is_memory() {
        memory::check_annotations(category, item, parts.context.unwrap_or(prompt))?;
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
        outcome(
            Category::TechnicalCode,
            &item(
                "Which value does the audit log retention setting use by default?",
                golds,
            ),
        )
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

    const SNIPPETS: &str =
        "[Doc 1] EU retention\nEU audit logs are kept for 400 days under the approved \
        standard, which the governance board signed off in March.\n\
        [Doc 2] US retention\nUS audit logs are kept for 90 days, as the regional policy for the \
        United States clusters requires.\n\
        [Doc 3] Backups\nBackups run nightly at 02:00 UTC and are copied to a second region.\n\
        [Doc 4] Archive\nArchives move to cold storage after one year and stay there for seven.\n\n\
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
        let rejection = check_item(
            Category::SimpleFactual,
            &item("Which port does PostgreSQL listen on by default?", &[]),
            &Rules::default(),
        )
        .unwrap_err();
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
                &item(
                    "Which port does PostgreSQL listen on by default?",
                    &["5432"]
                )
            ),
            "ok"
        );
    }

    #[test]
    fn empty_golds() {
        assert_eq!(golds_outcome(&[]), "empty_golds");
        assert_eq!(golds_outcome(&["x86"]), "ok");
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
            &item(
                "Which retention applies to the audit logs by default?",
                &["the retention is 400 days"]
            ),
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
        let prompt = "Which port does PostgreSQL listen on by default for client connections? We \
                      saw 54321 in the logs of the staging cluster last week.";
        for category in [Category::SimpleFactual, Category::BloatedFactual] {
            assert_eq!(
                outcome(category, &item(prompt, &["5432"])),
                "gold_in_prompt"
            );
            assert_eq!(outcome(category, &item(prompt, &["port 5432"])), "ok");
        }
        let reasoning = "A service promises 99.9% availability over a 30-day month: how many \
                         minutes of downtime are allowed before the SLA is breached?";
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
        let statement = document(300).replace("How long are audit logs kept?", "Logs are kept.");
        assert_eq!(
            outcome(Category::LongDocumentQa, &item(&statement, &["400 days"])),
            "no_question"
        );
        let empty_question =
            SNIPPETS.replace("Question: How long are EU audit logs kept?", "Question:");
        assert_eq!(
            outcome(
                Category::MultiDocumentQa,
                &item(&empty_question, &["400 days"])
            ),
            "prompt_cut"
        );
        let told = SNIPPETS.replace(
            "Question: How long are EU audit logs kept?",
            "The EU figure is the one that matters here.",
        );
        assert_eq!(
            outcome(Category::MultiDocumentQa, &item(&told, &["400 days"])),
            "no_question"
        );
        let trailing = SNIPPETS.replace(
            "How long are EU audit logs kept?",
            "How long are EU audit logs kept? The board revisits the figure every spring, \
             together with the US one.",
        );
        assert_eq!(
            outcome(Category::MultiDocumentQa, &item(&trailing, &["400 days"])),
            "question_not_last"
        );
        let recall = memory(
            &MEMORY.replace("Question:", "Q:"),
            &["Okta"],
            &["Okta"],
            &[],
        );
        assert_eq!(outcome(Category::MemoryRecall, &recall), "ok");
        let unprefixed = document(300).replace("\n\nQuestion: ", "\n\n");
        assert_eq!(
            outcome(Category::LongDocumentQa, &item(&unprefixed, &["400 days"])),
            "ok"
        );
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
        let one_turn = "Customer: We run two workspaces, Atlas and Borealis, on different plans \
                        this year. How many seats does Atlas have in total right now?";
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
        let recall = memory(&three_facts, &["Okta"], &["Okta"], &[]);
        assert_eq!(outcome(Category::MemoryRecall, &recall), "memory_block");
        let recall = memory(&no_header, &["Okta"], &["Okta"], &[]);
        assert_eq!(outcome(Category::MemoryRecall, &recall), "ok");
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

/// The fixture corpus under `tests/fixtures/validation/`: items written the way different
/// models write them, which must pass, and junk of every kind, which must be rejected with its
/// code.
#[cfg(test)]
mod corpus {
    use super::*;

    const PASS: &str = include_str!("../../tests/fixtures/validation/pass.jsonl");
    const JUNK: &str = include_str!("../../tests/fixtures/validation/junk.jsonl");

    fn cases(text: &str) -> Vec<(Category, Value)> {
        text.lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| {
                let value: Value = serde_json::from_str(line).expect("fixture line is JSON");
                let category = value["category"]
                    .as_str()
                    .and_then(Category::from_name)
                    .expect("fixture category");
                (category, value)
            })
            .collect()
    }

    fn outcome(category: Category, value: &Value) -> Result<(), Rejection> {
        let fields = fields_from_value(category, value)?;
        check_item(category, &fields, &Rules::default())
    }

    #[test]
    fn every_surface_form_of_the_corpus_passes() {
        let failures: Vec<String> = cases(PASS)
            .iter()
            .filter_map(|(category, value)| {
                outcome(*category, value)
                    .err()
                    .map(|r| format!("{category} [{}]: {r}", value["form"]))
            })
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn the_corpus_covers_every_structured_category_in_eight_forms_and_holds_v1s_example() {
        let all = cases(PASS);
        for category in [
            Category::Conversational,
            Category::MultiDocumentQa,
            Category::MemoryRecall,
            Category::MemoryUpdate,
            Category::LongDocumentQa,
        ] {
            let forms = all.iter().filter(|(c, _)| *c == category).count();
            assert!(forms >= 8, "{category}: {forms} forms");
        }
        assert!(all.iter().any(|(_, v)| v["prompt"]
            .as_str()
            .is_some_and(|p| p.starts_with("The security policy previously required Kubernetes"))));
    }

    #[test]
    fn every_junk_item_is_rejected_with_its_code() {
        let failures: Vec<String> = cases(JUNK)
            .iter()
            .filter_map(|(category, value)| {
                let expected = value["expect"].as_str().unwrap_or_default();
                match outcome(*category, value) {
                    Err(r) if r.reason.code() == expected => None,
                    other => Some(format!(
                        "{category} [{}]: expected {expected}, got {}",
                        value["form"],
                        other.map_or_else(|r| r.to_string(), |()| "ok".into())
                    )),
                }
            })
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn the_junk_corpus_covers_every_junk_rule_and_the_three_released_junk_prompts() {
        let all = cases(JUNK);
        for code in [
            "placeholder_prompt",
            "prompt_too_short",
            "prompt_cut",
            "no_question",
            "gold_placeholder",
            "gold_too_short",
            "gold_machine_made",
        ] {
            assert!(
                all.iter().any(|(_, v)| v["expect"] == code),
                "no junk item for {code}"
            );
        }
        for prompt in [
            "…",
            "This domain has a custom firewall that only allows one network to reach it.",
            "Your claim-intake worker (Python 3.11, requests} -j",
        ] {
            assert!(all.iter().any(|(_, v)| v["prompt"] == prompt), "{prompt}");
        }
    }
}
