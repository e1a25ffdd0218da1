//! Audit: a panel answers every candidate as the benchmark's panel will; keys it does not reach
//! and items it answers without their context are flagged and left out, the surplus fills the
//! category, and the release's card and manifest carry the panel's numbers.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use saseval_testkit::fake_api::{FakeApi, FakeReply, Responder};
use saseval_testkit::replies;

use crate::responders::{good_responder, items_of};
use crate::world::{count_by_category, stable, World, CATEGORIES};

/// Items whose key is a distractor of their own context: a value from another turn of the
/// dialog, another fact of the document. The careful panel answers the true key, which the grader
/// does not match against the distractor.
/// In id order, as the report lists them.
const DISTRACTED: [&str; 2] = ["conversational.r0.0000.0", "long_document_qa.r0.0000.0"];

/// An item keyed by another snippet's value: the snippet that holds the true key holds every word
/// of the question the keyed one holds, so the gate refuses it before the panel is paid.
const DISTRACTED_AT_THE_GATE: &str = "multi_document_qa.r0.0000.0";

/// The authoring requests whose first item gets a distractor key.
fn planted(custom_id: &str) -> bool {
    DISTRACTED
        .iter()
        .chain([&DISTRACTED_AT_THE_GATE])
        .any(|id| {
            let category = id.split('.').next().unwrap_or("");
            custom_id == format!("author/{category}/r0/0000")
        })
}

/// The panel of these tests.
const PANEL: &str = "audit.models=[\"p-a\", \"p-b\", \"p-c\"]";

/// A value of the prompt's context other than `gold`: its first word with a digit that neither
/// contains the gold nor is contained in it, once normalised as the grader does.
fn distractor_in(prompt: &str, gold: &str) -> Option<String> {
    let gold = saseval_gen::quality::grade::norm(gold);
    prompt
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '%' && c != '$'))
        .filter(|w| w.len() >= 2 && w.chars().any(|c| c.is_ascii_digit()))
        .find(|w| {
            let word = saseval_gen::quality::grade::norm(w);
            !word.contains(gold.trim()) && !gold.contains(word.trim())
        })
        .map(str::to_string)
}

/// `good_responder`, except that the first item of each `planted` request gets a distractor of
/// its context as its key (the panel still answers the true one), and `wrong_model` (if any)
/// answers every item with a value no gold matches.
fn panel_responder(wrong_model: Option<&'static str>) -> Responder {
    let inner = good_responder();
    Arc::new(move |custom_id: &str, body: &Value| {
        if let Some(rest) = custom_id.strip_prefix("audit/") {
            let model = rest.split('/').nth(1).unwrap_or("");
            if Some(model) == wrong_model {
                return FakeReply::Content("Qxq, as the last line says.".into());
            }
        }
        let reply = inner(custom_id, body);
        let FakeReply::Content(content) = &reply else {
            return reply;
        };
        if !planted(custom_id) {
            return reply;
        }
        let mut items = items_of(content);
        let prompt = items["items"][0]["prompt"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let gold = items["items"][0]["golds"][0]
            .as_str()
            .unwrap_or("")
            .to_string();
        let distractor = distractor_in(&prompt, &gold).expect("the context has another value");
        items["items"][0]["golds"] = serde_json::json!([distractor]);
        FakeReply::Content(items.to_string())
    })
}

/// The items of `report` that carry `flag`.
fn with_flag<'r>(report: &'r BTreeMap<String, Value>, flag: &str) -> Vec<&'r str> {
    report
        .iter()
        .filter(|(_, l)| {
            l["verdict"]["flags"]
                .as_array()
                .is_some_and(|f| f.iter().any(|x| x == flag))
        })
        .map(|(id, _)| id.as_str())
        .collect()
}

fn by_item(lines: Vec<Value>) -> BTreeMap<String, Value> {
    lines
        .into_iter()
        .map(|l| {
            let id = l.get("item_id").or_else(|| l.get("id"));
            (id.and_then(Value::as_str).unwrap_or("").to_string(), l)
        })
        .collect()
}

#[test]
fn a_key_the_panel_does_not_reach_is_flagged_left_out_and_the_surplus_fills_its_category() {
    let fake = FakeApi::start(panel_responder(None));
    let world = World::new(&fake).set(PANEL);
    let run = world.run(&["run"]);
    run.success();
    assert!(
        run.stdout.contains("audit: ") && run.stdout.contains("panel_disagrees"),
        "the audit prints its table:\n{}",
        run.stdout
    );
    let report = by_item(world.read_jsonl("audit_report.jsonl"));
    let audited = by_item(world.read_jsonl("audited.jsonl"));
    assert_eq!(report.len(), audited.len(), "one report line per candidate");
    for id in DISTRACTED {
        let line = &report[id];
        assert_eq!(
            line["verdict"]["flags"],
            serde_json::json!(["panel_disagrees"]),
            "{line}"
        );
        assert_eq!(line["verdict"]["correct"], 0);
        assert_eq!(audited[id]["_needs_review"], true, "{id}");
        let key = line["golds"][0].as_str().expect("key");
        let prompt = audited[id]["prompt"].as_str().expect("prompt");
        assert!(
            prompt.contains(key),
            "{id}: the key {key:?} is a value of its own context"
        );
    }
    assert_eq!(
        with_flag(&report, "panel_disagrees"),
        DISTRACTED,
        "a careful panel reaches every other key"
    );

    let release = world.read_jsonl("saseval_v2_prompts.jsonl");
    let counts = count_by_category(&release);
    for category in CATEGORIES {
        assert_eq!(
            counts.get(category),
            Some(&4),
            "{category} is filled from the surplus"
        );
    }
    let released: Vec<&str> = release
        .iter()
        .filter_map(|r| r["prompt"].as_str())
        .collect();
    for id in DISTRACTED {
        let prompt = audited[id]["prompt"].as_str().expect("prompt");
        assert!(!released.contains(&prompt), "{id} is left out");
    }
    let rejects = world.read_jsonl("rejects.jsonl");
    assert!(
        rejects
            .iter()
            .any(|r| r["item_id"] == DISTRACTED_AT_THE_GATE
                && r["reason"] == "two_snippets_answer"),
        "the multi-document item keyed by another snippet's value is refused at the gate"
    );
    assert!(!report.contains_key(DISTRACTED_AT_THE_GATE));
    for id in DISTRACTED {
        assert!(
            rejects
                .iter()
                .any(|r| r["item_id"] == id && r["reason"] == "needs_review"),
            "{id} is recorded as left out"
        );
    }

    let manifest: Value = serde_json::from_slice(
        &std::fs::read(world.out().join("manifest.json")).expect("manifest"),
    )
    .expect("JSON");
    assert_eq!(
        manifest["audit"]["models"],
        serde_json::json!(["p-a", "p-b", "p-c"])
    );
    assert_eq!(manifest["audit"]["min_correct"], 2);
    assert_eq!(manifest["audit"]["flags"]["panel_disagrees"], 2);
    let flagged = report
        .values()
        .filter(|l| l["verdict"]["flags"] != serde_json::json!([]));
    assert_eq!(
        manifest["audit"]["passed"].as_u64(),
        Some((report.len() - flagged.count()) as u64)
    );
    assert_eq!(manifest["audit"]["audited"], audited.len());
    let hashes = manifest["flagged_prompts_sha256"].as_array().expect("list");
    for id in DISTRACTED {
        let prompt = audited[id]["prompt"].as_str().expect("prompt");
        let hash = saseval_gen::util::digest::sha256_hex(prompt.as_bytes());
        assert!(hashes.contains(&Value::String(hash)), "{id} is listed");
    }
    let pass = &manifest["audit"]["pass"]["conversational"]["p-a"];
    assert_eq!(
        pass["answered"], 4,
        "pass rates are over the released records"
    );
    assert_eq!(pass["correct"], 4);
    let card = std::fs::read_to_string(world.out().join("README.md")).expect("card");
    assert!(card.contains("3. **Audit panel:**"), "{card}");
    assert!(card.contains("at least 2 of 3 panel"), "{card}");
    assert!(card.contains("`panel_disagrees` (2)"), "{card}");
    assert!(
        card.contains("| `conversational` | 100.0% (4/4) |"),
        "{card}"
    );
    world
        .run(&["verify", world.out().to_str().expect("utf-8")])
        .success();
}

#[test]
fn one_panel_model_that_errs_does_not_flag_keys_the_majority_reaches() {
    let fake = FakeApi::start(panel_responder(Some("p-c")));
    let world = World::new(&fake).set(PANEL);
    world.run(&["author"]).success();
    world.run(&["repair"]).success();
    let run = world.run(&["audit"]);
    run.success();
    let report = by_item(world.read_jsonl("audit_report.jsonl"));
    assert_eq!(
        with_flag(&report, "panel_disagrees"),
        DISTRACTED,
        "two of three reach every other key"
    );
    let summary: Value = serde_json::from_slice(
        &std::fs::read(world.out().join("audit_summary.json")).expect("summary"),
    )
    .expect("JSON");
    assert_eq!(summary["by_model"]["p-c"]["correct"], 0);
    assert_eq!(
        summary["by_model"]["p-a"]["correct"].as_u64(),
        Some((report.len() - DISTRACTED.len()) as u64)
    );
    assert!(
        run.stdout.contains("0.0%"),
        "the erring model's pass rate is shown:\n{}",
        run.stdout
    );
}

#[test]
fn an_item_answered_without_its_context_is_flagged_context_not_needed() {
    let target = "long_document_qa.r0.0000.0";
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake);
    world.run(&["author"]).success();
    world.run(&["repair"]).success();
    // A panel that answers this item's question correctly without its document.
    let repaired = by_item(world.read_jsonl("repaired.jsonl"));
    let key = repaired[target]["golds"][0]
        .as_str()
        .expect("gold")
        .to_string();
    let answer = key.clone();
    let fake2 = FakeApi::start({
        let inner = good_responder();
        Arc::new(move |custom_id: &str, body: &Value| {
            if custom_id.starts_with(&format!("audit/{target}/"))
                && custom_id.ends_with("/no-context")
            {
                return FakeReply::Content(answer.clone());
            }
            inner(custom_id, body)
        })
    });
    let mut world = world;
    world.also(&format!("api.base_url={}", fake2.base_url()));
    world.run(&["audit"]).success();
    let report = by_item(world.read_jsonl("audit_report.jsonl"));
    let line = &report[target];
    assert!(
        line["verdict"]["flags"]
            .as_array()
            .is_some_and(|f| f.contains(&Value::from("context_not_needed"))),
        "{line}"
    );
    let question = line["probe_question"].as_str().expect("probed");
    assert!(question.contains('?'), "{question}");
    assert!(
        !question.contains(&key),
        "the probe asks the question without the document: {question}"
    );
    let probed = report
        .values()
        .filter(|l| l["probe_answers"].as_array().is_some_and(|a| !a.is_empty()))
        .count();
    let context_items = report
        .values()
        .filter(|l| {
            matches!(
                l["category"].as_str(),
                Some("long_document_qa" | "multi_document_qa" | "conversational")
                    | Some("memory_recall" | "memory_update")
            )
        })
        .count();
    assert_eq!(probed, context_items, "every context item is probed");
    assert_eq!(
        with_flag(&report, "context_not_needed"),
        [target],
        "a question alone the panel cannot answer is not flagged"
    );
}

#[test]
fn the_dry_runs_count_the_panel_requests_and_a_finished_audit_is_not_paid_again() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake).set(PANEL);
    let plan = world.run(&["author", "--dry-run"]);
    plan.success();
    insta::assert_snapshot!(
        "author_dry_run_plans_the_panel",
        stable(&world, Some(&fake), &plan.stdout)
    );
    world.run(&["author"]).success();
    world.run(&["repair"]).success();
    let items = world.read_jsonl("repaired.jsonl").len();
    let dry = world.run(&["audit", "--dry-run"]);
    dry.success();
    insta::assert_snapshot!("audit_dry_run", stable(&world, Some(&fake), &dry.stdout));
    let before = fake.counters().http_requests;
    world.run(&["audit"]).success();
    let sent: usize = fake
        .counters()
        .lines_in_batches
        .keys()
        .filter(|id| id.starts_with("audit/"))
        .count();
    let context = world
        .read_jsonl("repaired.jsonl")
        .iter()
        .filter(|i| {
            let c = i["category"].as_str().unwrap_or("");
            c.ends_with("document_qa") || c == "conversational" || c.starts_with("memory_")
        })
        .count();
    assert_eq!(
        sent,
        3 * (items + context),
        "each model answers each item and each probe"
    );
    assert!(fake.counters().http_requests > before);
    let total = dry
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("total"))
        .expect("a total row");
    assert!(
        total.split_whitespace().nth(1) == Some(sent.to_string().as_str()),
        "the dry run counted {total:?}, the audit sent {sent}"
    );

    let after = fake.counters().http_requests;
    world.run(&["audit"]).success();
    assert_eq!(
        fake.counters().http_requests,
        after,
        "a finished audit makes no request"
    );
    let cached = world.run(&["audit", "--dry-run"]);
    insta::assert_snapshot!(
        "audit_dry_run_all_cached",
        stable(&world, Some(&fake), &cached.stdout)
    );
    let total = cached
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("total"))
        .expect("a total row");
    let cells: Vec<&str> = total.split_whitespace().collect();
    assert_eq!(cells[1], cells[2], "every request is cached: {total}");
}

#[test]
fn assemble_refuses_an_audit_that_is_missing_or_read_another_repair() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake);
    world.run(&["author"]).success();
    world.run(&["repair"]).success();
    let unaudited = world.run(&["assemble"]);
    insta::assert_snapshot!(
        "assemble_before_audit",
        stable(&world, Some(&fake), &unaudited.exit_and_stderr())
    );
    world.run(&["audit"]).success();
    let repaired = world.out().join("repaired.jsonl");
    let text = std::fs::read_to_string(&repaired).expect("repaired");
    let fewer: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(&repaired, fewer).expect("write");
    let stale = world.run(&["assemble"]);
    insta::assert_snapshot!(
        "assemble_with_a_stale_audit",
        stable(&world, Some(&fake), &stale.exit_and_stderr())
    );
    world.run(&["audit"]).success();
    world.run(&["assemble"]).success();
}

#[test]
fn without_a_panel_the_run_says_the_audit_is_skipped_and_the_card_says_so() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake).set("audit.models=[]");
    let run = world.run(&["run"]);
    run.success();
    insta::assert_snapshot!(
        "run_without_a_panel",
        stable(&world, Some(&fake), &run.stdout)
    );
    assert!(!fake
        .counters()
        .lines_in_batches
        .keys()
        .any(|id| id.starts_with("audit/")));
    let manifest = std::fs::read_to_string(world.out().join("manifest.json")).expect("manifest");
    assert!(!manifest.contains("\"audit\""), "{manifest}");
    let card = std::fs::read_to_string(world.out().join("README.md")).expect("card");
    assert!(card.contains("No audit panel answered"), "{card}");
    assert!(replies::panel_answer("never authored").is_none());
}
