//! The JSON schema of an authoring reply, derived from the validation rules a schema can state:
//! the gold count, the words per gold, a minimum prompt length and, where the category needs
//! one, the `?` of its question. Constrained decoding (the local grammar, strict JSON schema on
//! APIs that support it) then writes conforming items more often; the validator still checks
//! everything.
//!
//! A JSON Schema `pattern` applies to the decoded string, but llama.cpp's converter applies it
//! to the raw characters between the quotes, so a pattern that allows a line break there lets
//! the model write a raw, invalid control character. [`Patterns`] spells each pattern for the
//! engine that applies it: for raw text, a prompt's line break or tab is the escape `\n`, `\t`.

use super::{needs_question_mark, placement, Placement, Rules};
use crate::stages::item::Category;
use serde_json::{json, Value};

/// How the engine that enforces the schema reads a string `pattern`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patterns {
    /// On the decoded string, as JSON Schema says (APIs, vLLM).
    Decoded,
    /// On the raw JSON text between the quotes (llama.cpp's `json_schema_to_grammar`).
    RawJson,
}

/// Most golds an item may list.
pub const MAX_GOLDS: usize = 4;

/// Characters per word assumed when a word minimum becomes a character minimum: below real
/// prose (about 5.5), so the schema never asks for more than the validator does.
const CHARS_PER_WORD: usize = 4;

/// One character of a gold: no space (spaces separate words), quote, backslash or control. It
/// needs no escape, so it reads the same decoded and raw.
const GOLD_CHAR: &str = r#"[^ "\\\x00-\x1F]"#;

impl Patterns {
    /// One character of a prompt that must carry a `?`: anything but a quote, a backslash or a
    /// control character other than tab, line feed and carriage return; raw, those three are
    /// their escapes.
    fn prompt_char(self) -> &'static str {
        match self {
            Patterns::Decoded => r#"[^"\\\x00-\x08\x0B\x0C\x0E-\x1F]"#,
            Patterns::RawJson => r#"([^"\\\x00-\x1F]|\\[ntr])"#,
        }
    }
}

/// The fewest characters a prompt of `category` can have under `rules`.
fn min_prompt_chars(category: Category, rules: &Rules) -> usize {
    let words = match category {
        Category::LongDocumentQa => rules.min_prompt_words(category).max(rules.doc_words.0),
        _ => rules.min_prompt_words(category),
    };
    words * CHARS_PER_WORD
}

/// The `prompt` property: a minimum length, and the `?` where the category needs one. For the
/// local grammar, a dialog or memory prompt also has the layout of its template's example.
fn prompt_schema(
    category: Category,
    rules: &Rules,
    patterns: Patterns,
    layout: Option<&ExampleLayout>,
) -> Value {
    let min = min_prompt_chars(category, rules);
    if let Some(pattern) = layout_pattern(category, rules, patterns, layout) {
        return json!({"type": "string", "minLength": min, "pattern": pattern});
    }
    if !needs_question_mark(category) {
        return json!({"type": "string", "minLength": min});
    }
    let char = patterns.prompt_char();
    let pattern = match placement(category) {
        Placement::End => format!("^{char}{{{min},}}[?]$"),
        Placement::Anywhere => format!("^{char}{{{min},}}[?]{char}*$"),
    };
    json!({"type": "string", "minLength": min, "pattern": pattern})
}

/// The labels of a dialog or memory layout, read off the example item of a category's template,
/// so that the local grammar keeps to the layout the template shows, as shipped or as edited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExampleLayout {
    /// A dialog's two speakers: the one who asks (first and last) and the one who answers.
    Dialog { asker: String, answerer: String },
    /// A memory block's header (`Memory`) and the label of its question (`Question`).
    Memory { header: String, question: String },
}

impl ExampleLayout {
    /// The layout `example`, a template's example prompt, shows for `category`: a dialog whose
    /// lines alternate two labels, or a block under a header line of `- ` lines whose last
    /// paragraph is a labelled question. `None` for the other categories, another layout, or a
    /// label the grammar cannot hold as it is (see [`is_plain_label`]).
    pub fn of_example(category: Category, example: &str) -> Option<ExampleLayout> {
        match category {
            Category::Conversational => dialog_layout(example),
            Category::MemoryRecall | Category::MemoryUpdate => memory_layout(example),
            _ => None,
        }
    }
}

/// A label of up to 30 ASCII letters, digits, spaces, `_` and `-`, starting with a letter: it
/// reads the same inside a pattern, with no escape.
fn is_plain_label(label: &str) -> bool {
    label.len() <= 30
        && label.starts_with(|c: char| c.is_ascii_alphabetic())
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '_' | '-'))
}

/// The label a line opens with as the grammar must write it (`Customer` of `Customer: Hi`): plain,
/// with no formatting around it. (`text::line_label` recognises labels in any form.)
fn literal_label(line: &str) -> Option<&str> {
    line.split_once(": ")
        .map(|(label, _)| label)
        .filter(|label| is_plain_label(label))
}

fn dialog_layout(example: &str) -> Option<ExampleLayout> {
    let labels: Vec<&str> = example.lines().map(literal_label).collect::<Option<_>>()?;
    let (asker, answerer) = (*labels.first()?, *labels.get(1)?);
    let alternates = labels.len() % 2 == 1
        && asker != answerer
        && labels
            .iter()
            .enumerate()
            .all(|(turn, label)| *label == if turn % 2 == 0 { asker } else { answerer });
    alternates.then(|| ExampleLayout::Dialog {
        asker: asker.to_string(),
        answerer: answerer.to_string(),
    })
}

fn memory_layout(example: &str) -> Option<ExampleLayout> {
    let mut lines = example.lines();
    let header = lines
        .next()?
        .strip_suffix(':')
        .filter(|h| is_plain_label(h))?;
    lines.next()?.strip_prefix("- ")?;
    let question = example.rsplit("\n\n").next().and_then(literal_label)?;
    Some(ExampleLayout::Memory {
        header: header.to_string(),
        question: question.to_string(),
    })
}

/// One character of a line of a prompt, in raw JSON text: no quote, backslash or control, so no
/// line break either.
const RAW_LINE_CHAR: &str = r#"[^"\\\x00-\x1F]"#;

/// The layout of `category`'s template example as the local grammar spells it (raw JSON text,
/// where a line break is the escape `\n`); `None` without a layout, and for engines that read
/// patterns on the decoded string. A small model asked for a layout in words breaks it in ways
/// the grammar can refuse: a dialog in one voice, or a memory block whose keys run on until the
/// reply's budget is spent (BENCHMARKS.md, "Dialog and memory layouts in the grammar"). The
/// validator, which accepts any reasonable form, still checks every item.
/// - conversational: one-line turns that alternate the two labels, `asker_turns` of the
///   asker's, the last a question;
/// - memory_recall: the header line, `memory_facts` `- ` lines, a blank line, the question;
/// - memory_update: an optional block of the header and at most `memory_facts.1` `- ` lines,
///   then lines of the update (none of them a `- ` line), a blank line, the question.
fn layout_pattern(
    category: Category,
    rules: &Rules,
    patterns: Patterns,
    layout: Option<&ExampleLayout>,
) -> Option<String> {
    if patterns != Patterns::RawJson {
        return None;
    }
    let line = format!("{RAW_LINE_CHAR}+");
    let (fewest_facts, most_facts) = rules.memory_facts;
    match (category, layout?) {
        (Category::Conversational, ExampleLayout::Dialog { asker, answerer }) => {
            let (fewest, most) = rules.asker_turns;
            let (more, most_more) = (fewest.saturating_sub(1), most.saturating_sub(1));
            Some(format!(
                r"^{asker}: {line}(\\n{answerer}: {line}\\n{asker}: {line}){{{more},{most_more}}}[?]$"
            ))
        }
        (Category::MemoryRecall, ExampleLayout::Memory { header, question }) => Some(format!(
            r"^{header}:(\\n- {line}){{{fewest_facts},{most_facts}}}\\n\\n{question}: {line}[?]$"
        )),
        (Category::MemoryUpdate, ExampleLayout::Memory { header, question }) => {
            let update_line = format!(r#"[^-"\\\x00-\x1F]{RAW_LINE_CHAR}*"#);
            Some(format!(
                r"^({header}:(\\n- {line}){{1,{most_facts}}}\\n\\n)?{update_line}(\\n(\\n)?{update_line})*\\n\\n{question}: {line}[?]$"
            ))
        }
        _ => None,
    }
}

/// The `golds` property: 1 to `MAX_GOLDS` golds of 1 to `max_gold_words` words.
fn golds_schema(rules: &Rules) -> Value {
    let more_words = rules.max_gold_words.saturating_sub(1);
    let gold = format!("^{GOLD_CHAR}+( {GOLD_CHAR}+){{0,{more_words}}}$");
    json!({
        "type": "array",
        "minItems": 1,
        "maxItems": MAX_GOLDS,
        "items": {"type": "string", "pattern": gold},
    })
}

/// A memory item's `durable` or `stale` list: at least `fewest` values. For the local engine also
/// at most `memory_facts.1`, as many as a memory block holds lines: a small model's `stale` list
/// otherwise runs on, the same values again and again, until the reply's budget is spent.
fn memory_values_schema(fewest: usize, rules: &Rules, patterns: Patterns) -> Value {
    let mut list = json!({"type": "array", "minItems": fewest, "items": {"type": "string"}});
    if patterns == Patterns::RawJson {
        list["maxItems"] = json!(rules.memory_facts.1);
    }
    list
}

/// The schema of a whole reply for `category`: `{"items": [item, …]}`, every property required
/// and no others allowed, as strict modes want it.
pub fn reply_schema(
    category: Category,
    rules: &Rules,
    patterns: Patterns,
    layout: Option<&ExampleLayout>,
) -> Value {
    let mut properties = json!({
        "prompt": prompt_schema(category, rules, patterns, layout),
        "golds": golds_schema(rules),
    });
    let mut required = vec!["prompt", "golds"];
    if category.is_memory() {
        properties["durable"] = memory_values_schema(1, rules, patterns);
        properties["stale"] = memory_values_schema(0, rules, patterns);
        required.extend(["durable", "stale"]);
    }
    json!({
        "type": "object",
        "properties": {"items": {"type": "array", "minItems": 1, "items": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }}},
        "required": ["items"],
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::templates::Templates;

    fn item_schema(category: Category) -> Value {
        reply_schema(category, &Rules::default(), Patterns::Decoded, None)["properties"]["items"]
            ["items"]
            .clone()
    }

    #[test]
    fn golds_carry_their_count_and_words() {
        let golds = &item_schema(Category::SimpleFactual)["properties"]["golds"];
        assert_eq!(golds["maxItems"], 4);
        assert_eq!(
            golds["items"]["pattern"],
            r#"^[^ "\\\x00-\x1F]+( [^ "\\\x00-\x1F]+){0,3}$"#
        );
    }

    #[test]
    fn the_question_mark_is_required_where_the_category_needs_one() {
        let dialog = &item_schema(Category::Conversational)["properties"]["prompt"];
        assert_eq!(
            dialog["pattern"],
            r#"^[^"\\\x00-\x08\x0B\x0C\x0E-\x1F]{80,}[?]$"#
        );
        let factual = &item_schema(Category::SimpleFactual)["properties"]["prompt"];
        assert!(factual["pattern"]
            .as_str()
            .unwrap()
            .ends_with("[?][^\"\\\\\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F]*$"));
        let code = &item_schema(Category::TechnicalCode)["properties"]["prompt"];
        assert_eq!(code, &json!({"type": "string", "minLength": 24}));
        let document = &item_schema(Category::LongDocumentQa)["properties"]["prompt"];
        assert_eq!(document["minLength"], 1000);
    }

    #[test]
    fn the_layout_is_read_off_the_template_example() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let templates = Templates::load(&root.join("prompts")).unwrap();
        let shipped = |category: Category| {
            let examples = templates.categories[&category].example_prompts();
            ExampleLayout::of_example(category, &examples[0])
        };
        let dialog = |asker: &str, answerer: &str| ExampleLayout::Dialog {
            asker: asker.into(),
            answerer: answerer.into(),
        };
        let memory = ExampleLayout::Memory {
            header: "Memory".into(),
            question: "Question".into(),
        };
        assert_eq!(
            shipped(Category::Conversational),
            Some(dialog("Customer", "Agent"))
        );
        assert_eq!(shipped(Category::MemoryRecall), Some(memory.clone()));
        assert_eq!(shipped(Category::MemoryUpdate), Some(memory));
        assert_eq!(shipped(Category::LongDocumentQa), None);

        let edited =
            "User: Which plan?\nAssistant: Pro has 5 seats, Team 20.\nUser: And the other one?";
        let layout = ExampleLayout::of_example(Category::Conversational, edited);
        assert_eq!(layout, Some(dialog("User", "Assistant")));
        let pattern = layout_pattern(
            Category::Conversational,
            &Rules::default(),
            Patterns::RawJson,
            layout.as_ref(),
        )
        .unwrap();
        assert!(pattern.starts_with("^User: ") && pattern.contains(r"\\nAssistant: "));
        for other in [
            "Customer: Hi?\nCustomer: Still there?\nCustomer: Which one?",
            "Customer: Hi?\nAgent: Hello.",
            "Customer: Hi?\nThe agent says hello.\nCustomer: Which one?",
            "\"Customer\": Hi?\nAgent: Hello.\nCustomer: Which one?",
        ] {
            assert_eq!(
                ExampleLayout::of_example(Category::Conversational, other),
                None,
                "{other}"
            );
        }
        let prose = "We stored that the grace period is 72 hours.\n\nQuestion: How long is it?";
        assert_eq!(
            ExampleLayout::of_example(Category::MemoryRecall, prose),
            None
        );
    }

    #[test]
    fn memory_items_require_both_annotations() {
        let item = item_schema(Category::MemoryUpdate);
        assert_eq!(
            item["required"],
            json!(["prompt", "golds", "durable", "stale"])
        );
        assert_eq!(item["additionalProperties"], false);
    }
}

/// llama.cpp's converter turns every authoring schema into a grammar that keeps its patterns
/// (an unsupported pattern would silently become "any string").
#[cfg(all(test, feature = "local"))]
mod grammar {
    use super::*;
    use crate::stages::templates::Templates;

    #[test]
    fn every_authoring_schema_becomes_a_grammar_that_keeps_its_patterns() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let templates = Templates::load(&root.join("prompts")).unwrap();
        for category in Category::ALL {
            let examples = templates.categories[&category].example_prompts();
            let layout = ExampleLayout::of_example(category, &examples[0]);
            let schema = reply_schema(
                category,
                &Rules::default(),
                Patterns::RawJson,
                layout.as_ref(),
            )
            .to_string();
            let grammar = llama_cpp_2::json_schema_to_grammar(&schema)
                .unwrap_or_else(|e| panic!("{category}: {e}"));
            assert!(
                grammar.contains(r#"("," space items-item-golds-item){0,3}"#)
                    && grammar.contains(r#"[^ "\\\x00-\x1F]+ items-item-golds-item-1{0,3}"#),
                "{category}: golds lost their count or words:\n{grammar}"
            );
            if let Some(pattern) = layout_pattern(
                category,
                &Rules::default(),
                Patterns::RawJson,
                layout.as_ref(),
            ) {
                let literals: &[&str] = match category {
                    Category::Conversational => &[r#""Customer: ""#, r#""\\nAgent: ""#],
                    _ => &[r#""\\n- ""#, r#""\\n\\nQuestion: ""#],
                };
                for literal in literals {
                    assert!(
                        grammar.contains(literal),
                        "{category}: the prompt lost {literal} of its layout {pattern}:\n{grammar}"
                    );
                }
                continue;
            }
            let min = min_prompt_chars(category, &Rules::default());
            let prompt_rule = if needs_question_mark(category) {
                format!("items-item-prompt-1{{{min},}} [?]")
            } else {
                format!("char{{{min},}}")
            };
            let raw_escapes = r#"items-item-prompt-1 ::= ([^"\\\x00-\x1F] | "\\" [ntr])"#;
            assert!(
                !needs_question_mark(category) || grammar.contains(raw_escapes),
                "{category}: a prompt's line break must be an escape, never a raw control:\n{grammar}"
            );
            assert!(
                grammar.contains(&prompt_rule),
                "{category}: the prompt lost {prompt_rule}:\n{grammar}"
            );
        }
    }
}
