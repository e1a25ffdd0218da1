//! Repair: two verifiers re-solve the reasoning items; wrong keys are replaced, formatting-only
//! differences are kept, ill-posed items and unreliable verifiers are flagged, and a finished
//! repair re-run makes no request.

use std::collections::BTreeMap;

use serde_json::Value;

use saseval_testkit::fake_api::FakeApi;
use saseval_testkit::replies;

use crate::responders::repair_responder;
use crate::world::World;

#[test]
fn repair_fixes_wrong_keys_keeps_formatting_only_differences_and_flags_ill_posed_items() {
    let fake = FakeApi::start(repair_responder());
    let world = World::new(&fake).set("repair.models=[\"v-a\", \"v-b\"]");
    world.run(&["author"]).success();
    world.run(&["repair"]).success();
    let report: BTreeMap<String, Value> = world
        .read_jsonl("repair_report.jsonl")
        .into_iter()
        .map(|l| (l["item_id"].as_str().unwrap_or("").to_string(), l))
        .collect();
    let items = replies::wrong_key_items("fintech & payments", 0);
    for (k, item) in items.iter().enumerate() {
        let line = &report[&format!("reasoning.r0.0000.{k}")];
        let expected = match item.kind {
            replies::KeyKind::Wrong => "repaired",
            replies::KeyKind::FormattingOnly | replies::KeyKind::Correct => "agree",
            replies::KeyKind::IllPosed => "flagged",
        };
        assert_eq!(
            line["decision"], expected,
            "item {k} ({:?}): {line}",
            item.kind
        );
        if item.kind == replies::KeyKind::Wrong {
            let golds: Vec<String> =
                serde_json::from_value(line["new_golds"].clone()).expect("new golds");
            let answer = saseval_gen::quality::numeric::format_value(item.true_answer);
            assert!(
                saseval_gen::quality::grade::graded(&answer, &golds),
                "repaired golds {golds:?} grade {answer}"
            );
        }
    }
    for (k, reason) in [
        (0, "verifiers_disagree"),
        (1, "verifier_unreliable"),
        (2, "verifier_unreliable"),
    ] {
        let line = &report[&format!("bloated_reasoning.r0.0000.{k}")];
        assert_eq!(
            (line["decision"].as_str(), line["reason"].as_str()),
            (Some("flagged"), Some(reason)),
            "{line}"
        );
    }
    let repaired = world.read_jsonl("repaired.jsonl");
    let flagged: Vec<_> = repaired
        .iter()
        .filter(|i| i["_needs_review"] == true)
        .collect();
    let fixed: Vec<_> = repaired
        .iter()
        .filter(|i| i["_gold_repaired"] == true)
        .collect();
    assert_eq!(
        fixed.len(),
        2,
        "exactly the two planted wrong keys are repaired"
    );
    assert_eq!(flagged.len(), 4);
    let summary: Value = serde_json::from_slice(
        &std::fs::read(world.out().join("repair_summary.json")).expect("summary"),
    )
    .expect("json");
    assert_eq!(summary["total"]["repaired"], 2);
    assert_eq!(summary["total"]["flagged"], 4);
    let before = fake.counters().http_requests;
    world.run(&["repair"]).success();
    assert_eq!(
        fake.counters().http_requests,
        before,
        "a finished repair re-run makes no request"
    );
}
