//! Authoring: planted defects land in `rejects.jsonl` with their code, the quality gate takes
//! structure by meaning and refuses junk, templates edited to other labels still fill, a short
//! category gets a hint, and the cost guard refuses before anything is submitted.

use std::sync::Arc;

use serde_json::Value;

use saseval_testkit::fake_api::{FakeApi, FakeReply, Responder};
use saseval_testkit::replies;

use crate::bar::Bar;
use crate::responders::{
    author_slot, good_responder, items_of, one_speaker_dialogs, template_field,
};
use crate::world::{
    author_refused_with_each_set, count_by_category, fixture_prompts_copy, repo, run_killed_after,
    show_example_item, stable, World,
};

#[test]
fn planted_defects_land_in_rejects_with_their_reason() {
    let planted: Arc<std::sync::Mutex<Vec<(String, &'static str)>>> = Arc::default();
    let inner = good_responder();
    let record = planted.clone();
    let responder: Responder = Arc::new(move |custom_id: &str, body: &Value| {
        if let Some((category, 0, 0)) = author_slot(custom_id) {
            let (reply, defects) = replies::planted_author_reply(category, "telecom", 0);
            let mut record = record.lock().expect("lock");
            for (index, code) in defects {
                record.push((format!("{category}.r0.0000.{index}"), code));
            }
            return FakeReply::Content(reply);
        }
        if custom_id == "author/simple_factual/r0/0001" {
            return FakeReply::Content(replies::broken_reply(replies::BrokenReply::NoJson));
        }
        if custom_id == "author/technical_code/r0/0001" {
            return FakeReply::Content(replies::broken_reply(replies::BrokenReply::OnlyThinking));
        }
        inner(custom_id, body)
    });
    let fake = FakeApi::start(responder);
    let world = World::new(&fake);
    world.run(&["run"]).success();
    let rejects = world.read_jsonl("rejects.jsonl");
    let planted = planted.lock().expect("lock").clone();
    assert!(
        planted.len() >= 10,
        "the fixture plants defects: {planted:?}"
    );
    for (item_id, code) in &planted {
        assert!(
            rejects
                .iter()
                .any(|r| r["item_id"] == item_id.as_str() && r["reason"] == *code),
            "{item_id} should be rejected as {code}"
        );
    }
    for (custom_id, code) in [
        ("author/simple_factual/r0/0001", "no_json"),
        ("author/technical_code/r0/0001", "only_thinking"),
    ] {
        assert!(
            rejects
                .iter()
                .any(|r| r["custom_id"] == custom_id && r["reason"] == code),
            "{custom_id}: {code}"
        );
    }
    let released = world.read_jsonl("saseval_v2_prompts.jsonl");
    assert!(
        count_by_category(&released).values().all(|n| *n == 4),
        "the loop refills what the defects cost"
    );
    let authored = world.read_jsonl("authored.jsonl");
    let planted_ids: Vec<&str> = planted.iter().map(|(id, _)| id.as_str()).collect();
    assert!(authored
        .iter()
        .all(|i| !planted_ids.contains(&i["id"].as_str().unwrap_or(""))));
}

/// The simple_factual example the test's template shows, and a near copy of it.
const EXAMPLE_PROMPT: &str =
    "Which TCP port is the default for SIP signalling over TLS (sips: URIs) under RFC 3261?";
const NEAR_EXAMPLE_PROMPT: &str =
    "Which TCP port is the default for SIP signaling over TLS (sips: URIs) under RFC 3261?";

#[test]
fn items_copying_their_templates_example_are_rejected_and_a_top_up_replaces_them() {
    let prompts = fixture_prompts_copy();
    let example = serde_json::json!({"prompt": EXAMPLE_PROMPT, "golds": ["5061"]});
    show_example_item(prompts.path(), "simple_factual.md", &example);
    let inner = good_responder();
    let responder: Responder = Arc::new(move |custom_id: &str, body: &Value| {
        let reply = inner(custom_id, body);
        let FakeReply::Content(content) = &reply else {
            return reply;
        };
        if custom_id != "author/simple_factual/r0/0000" {
            return reply;
        }
        let mut items = items_of(content);
        let count = items["items"].as_array().map_or(0, Vec::len);
        for index in 0..count {
            let prompt = [EXAMPLE_PROMPT, NEAR_EXAMPLE_PROMPT][index % 2];
            items["items"][index] = serde_json::json!({"prompt": prompt, "golds": ["5061"]});
        }
        FakeReply::Content(items.to_string())
    });
    let fake = FakeApi::start(responder);
    // Round 0 asks for 10 simple_factual items; the copies leave 5, short of 6.
    let world = World::new(&fake)
        .set(&format!("author.prompts_dir={}", prompts.path().display()))
        .set("release.per_category=6");
    world.run(&["run"]).success();

    let rejects = world.read_jsonl("rejects.jsonl");
    for (item_id, detail) in [
        (
            "simple_factual.r0.0000.0",
            "the prompt is the example item of simple_factual.md after normalisation",
        ),
        (
            "simple_factual.r0.0000.1",
            "of the example item of simple_factual.md",
        ),
    ] {
        assert!(
            rejects.iter().any(|r| r["item_id"] == item_id
                && r["reason"] == "copies_template_example"
                && r["detail"].as_str().is_some_and(|d| d.contains(detail))),
            "{item_id} is rejected as a copy of the example: {rejects:?}"
        );
    }
    let authored = world.read_jsonl("authored.jsonl");
    assert!(authored
        .iter()
        .all(|i| ![EXAMPLE_PROMPT, NEAR_EXAMPLE_PROMPT]
            .contains(&i["prompt"].as_str().unwrap_or(""))));
    assert!(
        authored.iter().any(|i| i["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("simple_factual.r1."))),
        "a top-up round replaces the copies"
    );
    let released = world.read_jsonl("saseval_v2_prompts.jsonl");
    assert_eq!(count_by_category(&released)["simple_factual"], 6);
}

/// A status code beside its reason phrase: the phrase has no number, so the gate cannot tell it
/// is the same answer.
const DOUBTFUL_VARIANT_ITEM: &str = r#"{"prompt": "Our partner API gateway enforces a limit of 600 requests per minute per client key. During the Monday import, the bulk sync job went over that limit, and every further call was refused until the window reset. Which HTTP status code did the gateway return for the refused calls?", "golds": ["429", "HTTP 429", "Too Many Requests"]}"#;

#[test]
fn a_doubtful_gold_variant_is_dropped_with_a_note_and_its_item_kept() {
    let inner = good_responder();
    let responder: Responder = Arc::new(move |custom_id: &str, body: &Value| {
        let reply = inner(custom_id, body);
        let FakeReply::Content(content) = &reply else {
            return reply;
        };
        if custom_id != "author/technical_code/r0/0000" {
            return reply;
        }
        let mut items = items_of(content);
        items["items"][0] = serde_json::from_str(DOUBTFUL_VARIANT_ITEM).expect("item JSON");
        FakeReply::Content(items.to_string())
    });
    let fake = FakeApi::start(responder);
    let world = World::new(&fake);
    world.run(&["author"]).success();

    let item_id = "technical_code.r0.0000.0";
    let rejects = world.read_jsonl("rejects.jsonl");
    let notes: Vec<&Value> = rejects.iter().filter(|r| r["item_id"] == item_id).collect();
    assert!(
        matches!(notes.as_slice(), [note] if note["reason"] == "gold_variant_dropped"
            && note["detail"].as_str().is_some_and(|d| d.contains("\"Too Many Requests\""))),
        "one gold-level note names the dropped gold: {notes:?}"
    );
    let authored = world.read_jsonl("authored.jsonl");
    let kept = authored.iter().find(|i| i["id"] == item_id);
    assert_eq!(
        kept.map(|item| &item["golds"]),
        Some(&serde_json::json!(["429", "HTTP 429"])),
        "the item stays valid with its other golds"
    );
    let summary: Value = serde_json::from_slice(
        &std::fs::read(world.out().join("author_summary.json")).expect("author summary"),
    )
    .expect("JSON");
    assert!(
        summary["rounds"][0]["categories"]["technical_code"]["rejects"]
            .get("gold_variant_dropped")
            .is_none(),
        "a note is no reject: {summary}"
    );
}

#[test]
fn the_readme_documents_every_reject_code() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let missing: Vec<String> = saseval_gen::quality::validate::Reason::all()
        .iter()
        .map(|reason| format!("| `{}` | {} |", reason.code(), reason.meaning()))
        .filter(|row| !readme.contains(row.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md's reject table lacks these rows (the validator's own wording):\n{}",
        missing.join("\n")
    );
}

/// The prompts of the items `reply` holds at the `planted` positions.
fn planted_prompts(reply: &str, planted: &[(usize, &'static str)]) -> Vec<String> {
    let items = saseval_gen::stages::reply::parse_items(reply)
        .expect("a planted reply parses")
        .items;
    planted
        .iter()
        .filter_map(|(index, _)| items.get(*index))
        .filter_map(|item| item["prompt"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_model_writing_other_surface_forms_and_junk_fills_every_category_and_releases_no_junk() {
    let junk: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let record = junk.clone();
    let inner = good_responder();
    let responder: Responder = Arc::new(move |custom_id: &str, body: &Value| {
        if let Some((category, round, index)) = author_slot(custom_id) {
            if index % 3 == 0 {
                let domain = template_field(body, "domain").unwrap_or("cloud/DevOps");
                let (reply, planted) =
                    replies::planted_author_reply(category, domain, round * 1000 + index);
                record
                    .lock()
                    .expect("lock")
                    .extend(planted_prompts(&reply, &planted));
                return FakeReply::Content(reply);
            }
        }
        inner(custom_id, body)
    });
    let fake = FakeApi::start(responder);
    let world = World::new(&fake).set("release.per_category=20");
    let run = world.run(&["run"]);
    run.success();
    insta::assert_snapshot!(
        "run_of_a_model_writing_other_forms_and_junk",
        stable(&world, Some(&fake), &run.stdout)
    );
    let records = world.read_jsonl("saseval_v2_prompts.jsonl");
    assert_eq!(
        count_by_category(&records)
            .values()
            .copied()
            .collect::<Vec<_>>(),
        vec![20; 10],
        "every category fills"
    );
    let junk = junk.lock().expect("lock").clone();
    assert!(junk.len() > 100, "the fake plants junk: {}", junk.len());
    for record in &records {
        let prompt = record["prompt"].as_str().unwrap_or_default();
        assert!(
            !junk.iter().any(|j| j == prompt),
            "a planted item was released: {record}"
        );
        for gold in record["golds"].as_array().into_iter().flatten() {
            let gold = gold.as_str().unwrap_or_default();
            assert!(
                !["TBD", "N"].contains(&gold) && !gold.contains("example.com"),
                "a junk gold was released: {record}"
            );
        }
    }
    let first_labels: std::collections::BTreeSet<String> = records
        .iter()
        .filter(|r| r["category"] == "conversational")
        .filter_map(|r| r["prompt"].as_str())
        .filter_map(|p| p.lines().find(|l| l.contains(':')))
        .filter_map(|l| l.split(':').next().map(str::to_owned))
        .collect();
    assert!(
        first_labels.len() >= 3,
        "dialogs in several label styles reach the release: {first_labels:?}"
    );
    world
        .run(&["verify", world.out().to_str().expect("utf-8")])
        .success();
}

#[test]
fn a_template_edited_to_other_speaker_labels_still_fills_its_category() {
    let prompts = fixture_prompts_copy();
    std::fs::write(
        prompts.path().join("conversational.md"),
        "category=conversational labels=User:/Assistant: count={{count}} domain={{domain}} words={{max_gold_words}}\n",
    )
    .expect("edit the template");
    let inner = good_responder();
    let responder: Responder = Arc::new(move |custom_id: &str, body: &Value| {
        if let (Some((category, round, index)), Some(labels)) =
            (author_slot(custom_id), template_field(body, "labels"))
        {
            let (asker, answerer) = labels.split_once('/').expect("labels=A/B");
            let count = template_field(body, "count")
                .and_then(|c| c.parse().ok())
                .unwrap_or(1);
            let domain = template_field(body, "domain").unwrap_or("cloud/DevOps");
            return FakeReply::Content(replies::author_reply_with_labels(
                category,
                domain,
                count,
                round * 1000 + index,
                (asker, answerer),
            ));
        }
        inner(custom_id, body)
    });
    let fake = FakeApi::start(responder);
    let world = World::new(&fake).set(&format!("author.prompts_dir={}", prompts.path().display()));
    world.run(&["author"]).success();
    let dialogs: Vec<String> = world
        .read_jsonl("authored.jsonl")
        .iter()
        .filter(|i| i["category"] == "conversational")
        .filter_map(|i| i["prompt"].as_str().map(str::to_owned))
        .collect();
    assert!(dialogs.len() >= 6, "the category fills: {}", dialogs.len());
    assert!(dialogs
        .iter()
        .all(|d| d.contains("User: ") && d.contains("Assistant: ") && !d.contains("Customer:")));
}

#[test]
fn a_category_far_short_of_its_need_gets_a_hint_naming_the_rule_and_an_example() {
    let fake = FakeApi::start(one_speaker_dialogs());
    let world = World::new(&fake)
        .set("author.max_rounds=2")
        .set("assemble.allow_short=true");
    let run = world.run(&["run"]);
    run.success();
    // Only the short category gets a hint: naming the rule, with an example and the fix.
    insta::assert_snapshot!(
        "a_short_category_gets_a_hint",
        stable(&world, Some(&fake), &run.stdout)
    );
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(world.out().join("manifest.json")).expect("manifest"),
    )
    .expect("json");
    let first = &manifest["author_yield"][0];
    assert_eq!(first["round"], 0);
    assert_eq!(first["categories"]["conversational"]["valid"], 0);
    assert_eq!(first["categories"]["conversational"]["needed"], 6);
    assert!(
        first["categories"]["conversational"]["rejects"]["turn_structure"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );
    assert!(first["categories"]["simple_factual"]["valid"]
        .as_u64()
        .is_some_and(|n| n >= 6));
    assert!(first["categories"]["conversational"]
        .get("example")
        .is_none());
    let summary: Value = serde_json::from_slice(
        &std::fs::read(world.out().join("author_summary.json")).expect("summary"),
    )
    .expect("json");
    assert_eq!(
        summary["rounds"][0]["categories"]["conversational"]["example"]["code"],
        "turn_structure"
    );
}

#[test]
fn the_cost_guard_refuses_before_submitting() {
    let fake = FakeApi::start(good_responder());
    let sets = ["author.max_cost_usd=0.0001", "api.max_requests_per_job=3"];
    let text = author_refused_with_each_set(&fake, &sets);
    insta::assert_snapshot!("the_cost_guard_refuses", text);
    assert_eq!(fake.counters().uploads, 0);
}

#[test]
fn a_huge_release_is_refused_from_counts_before_any_request_is_built() {
    use std::os::unix::process::CommandExt;
    let fake = FakeApi::start(good_responder());
    let mut text = String::new();
    for sets in [
        &["release.per_category=1000000"][..],
        &[
            "release.per_category=1000000",
            "api.max_requests_per_job=10000000",
        ][..],
    ] {
        for args in [&["author"][..], &["author", "--dry-run"][..]] {
            let mut world = World::new(&fake);
            for set in sets {
                world.also(set);
            }
            let mut cmd = world.command(args);
            // 1 GB of address space: building a million requests would need tens of GB.
            unsafe {
                cmd.pre_exec(|| {
                    let limit = libc::rlimit {
                        rlim_cur: 1 << 30,
                        rlim_max: 1 << 30,
                    };
                    if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
            let bar = Bar::before(&world);
            let run = bar.ran(run_killed_after(cmd, 60));
            bar.after();
            // The dry run shows the refusal on stdout; the run refuses on stderr.
            let shown = if args.contains(&"--dry-run") {
                run.success();
                run.exit_and_stdout()
            } else {
                run.code(2);
                run.exit_and_stderr()
            };
            let shown = stable(&world, Some(&fake), &shown);
            text.push_str(&format!(
                "## {} --set {}\n{shown}\n",
                args.join(" "),
                sets.join(" --set ")
            ));
        }
    }
    insta::assert_snapshot!("a_huge_release_is_refused", text);
    assert_eq!(fake.counters().http_requests, 0);
}
