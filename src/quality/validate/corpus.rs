//! The fixture corpus under `tests/fixtures/validation/`: items written the way different
//! models write them, which must be kept (with exactly the golds an item's `dropped` field names
//! dropped), and junk of every kind, which must be rejected with its code; and the shipped
//! templates' own example items, which must be kept whole.

use super::*;

const PASS: &str = include_str!("../../../tests/fixtures/validation/pass.jsonl");
const JUNK: &str = include_str!("../../../tests/fixtures/validation/junk.jsonl");

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

fn outcome(category: Category, value: &Value) -> Result<Kept, Rejection> {
    let fields = fields_from_value(category, value)?;
    check_item(category, fields, &Rules::default())
}

/// Every item of the pass corpus is kept, with exactly the golds its `dropped` field names
/// (none when it has no such field) dropped.
#[test]
fn every_surface_form_of_the_corpus_passes() {
    let failures: Vec<String> = cases(PASS)
        .iter()
        .filter_map(|(category, value)| {
            let expected: Vec<&str> = value["dropped"]
                .as_array()
                .map(|golds| golds.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match outcome(*category, value) {
                Err(r) => Some(format!("{category} [{}]: {r}", value["form"])),
                Ok(kept) => {
                    let dropped: Vec<&str> = kept.dropped.iter().map(|d| d.gold.as_str()).collect();
                    (dropped != expected).then(|| {
                        format!(
                            "{category} [{}]: dropped {dropped:?}, expected {expected:?}",
                            value["form"]
                        )
                    })
                }
            }
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

/// A template whose own example the gate rejects, or strips of a gold, teaches the model
/// to write what the gate then refuses.
#[test]
fn every_shipped_template_example_is_kept_whole() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts");
    for category in Category::ALL {
        let path = dir.join(crate::stages::templates::category_file(category));
        let text = std::fs::read_to_string(&path).expect("template");
        let examples: Vec<Value> = text
            .lines()
            .filter_map(|line| serde_json::from_str(line.trim()).ok())
            .filter(|value: &Value| value.get("prompt").is_some())
            .collect();
        assert!(!examples.is_empty(), "{category}: no example item");
        for example in &examples {
            let kept = outcome(category, example).map(|kept| kept.dropped);
            assert_eq!(kept, Ok(Vec::new()), "{category}: {example}");
        }
    }
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
                    other.map_or_else(|r| r.to_string(), |_| "ok".into())
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
