//! The closed loop: `run` keeps authoring for the categories that the later stages left short
//! until the release is full or a stop rule says why not, pays for no request twice, and states
//! each round's survival.

use serde_json::Value;

use saseval_testkit::fake_api::FakeApi;

use crate::responders::{author_slot, lossy_responder, one_speaker_dialogs};
use crate::world::{count_by_category, stable, World, CATEGORIES};

/// The shipped config at 20 per category with two verifiers and a three-model panel.
fn twenty_per_category(fake: &FakeApi) -> World {
    World::new(fake)
        .set("release.per_category=20")
        .set("repair.models=[\"v-a\", \"v-b\"]")
        .set("audit.models=[\"p-a\", \"p-b\", \"p-c\"]")
}

fn manifest(world: &World) -> Value {
    serde_json::from_slice(&std::fs::read(world.out().join("manifest.json")).expect("manifest"))
        .expect("manifest JSON")
}

/// The custom ids of the request lines the fake was sent in batches that `keep` accepts.
fn batched_ids(fake: &FakeApi, keep: impl Fn(&str) -> bool) -> Vec<String> {
    fake.counters()
        .lines_in_batches
        .keys()
        .filter(|id| keep(id))
        .cloned()
        .collect()
}

/// Whether a row of `table` starts with `category` and ends with `ending`.
fn row_ends(table: &str, category: &str, ending: &str) -> bool {
    table
        .lines()
        .any(|line| line.trim_start().starts_with(category) && line.ends_with(ending))
}

fn assert_nothing_sent_twice(fake: &FakeApi) {
    let counters = fake.counters();
    let twice: Vec<&String> = counters
        .lines_in_batches
        .iter()
        .chain(&counters.lines_uploaded)
        .filter(|(_, n)| **n > 1)
        .map(|(id, _)| id)
        .collect();
    assert!(
        twice.is_empty(),
        "lines uploaded or batched twice: {twice:?}"
    );
}

#[test]
fn the_shipped_config_at_twenty_per_category_fills_a_release_that_loses_items_after_the_gate() {
    let fake = FakeApi::start(lossy_responder());
    let world = twenty_per_category(&fake);
    let run = world.run(&["run"]);
    run.success();
    insta::assert_snapshot!(
        "run_at_twenty_per_category_needs_a_second_round",
        stable(&world, Some(&fake), &run.stdout)
    );
    let records = world.read_jsonl("saseval_v2_prompts.jsonl");
    let counts = count_by_category(&records);
    for category in CATEGORIES {
        assert_eq!(counts.get(category), Some(&20), "{category}: {counts:?}");
    }
    let verify = std::process::Command::new(env!("CARGO_BIN_EXE_saseval-gen"))
        .arg("verify")
        .arg(world.out())
        .output()
        .expect("verify runs");
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    assert_nothing_sent_twice(&fake);

    let manifest = manifest(&world);
    let survival = manifest["survival"].as_array().expect("survival rounds");
    assert!(survival.len() >= 2, "{survival:?}");
    let first = &survival[0]["categories"]["memory_update"];
    let lost = first["gate"].as_u64().unwrap_or(0) - first["after_dedup"].as_u64().unwrap_or(0);
    assert!(
        lost > 0,
        "the fake loses memory_update items after the gate: {first}"
    );
    let released: u64 = survival
        .iter()
        .filter_map(|r| r["categories"]["memory_update"]["released"].as_u64())
        .sum();
    assert_eq!(
        released, 20,
        "the rounds' released items add up to the release"
    );
    let usage: Value =
        serde_json::from_slice(&std::fs::read(world.out().join("usage.json")).expect("usage.json"))
            .expect("usage JSON");
    for (stage, model) in [
        ("author", "qwen/qwen3-32b"),
        ("audit", "p-a"),
        ("repair", "v-a"),
    ] {
        let spent = &usage[stage]["by_model"][model];
        assert!(
            spent["completion_tokens"].as_u64().is_some_and(|n| n > 0),
            "{stage} {model}: the fake's reported usage is counted: {spent}"
        );
    }
    let author = &usage["author"];
    let cost = author["cost_usd"].as_f64().unwrap_or(0.0);
    assert!(cost > 0.0, "the author model is priced: {author}");
    assert!(author["worst_case_usd"].as_f64().is_some_and(|w| w > cost));
    assert_eq!(
        manifest["usage"], usage,
        "the manifest states what usage.json holds"
    );
    let card = std::fs::read_to_string(world.out().join("README.md")).expect("card");
    assert!(
        card.contains("Survival through the loop"),
        "the card states survival"
    );
    let report = std::fs::read_to_string(world.out().join("report.html")).expect("report");
    assert!(report.contains("Survival through the loop"));

    let requests = fake.counters().http_requests;
    world.run(&["run"]).success();
    assert_eq!(
        fake.counters().http_requests,
        requests,
        "a finished loop re-runs without a request"
    );
}

#[test]
fn a_short_run_continues_when_max_rounds_is_raised_and_redoes_nothing() {
    let fake = FakeApi::start(lossy_responder());
    let mut world = twenty_per_category(&fake).set("author.max_rounds=1");
    let short = world.run(&["run"]);
    short.code(1);
    insta::assert_snapshot!(
        "a_run_cut_short_by_max_rounds",
        stable(&world, Some(&fake), &short.exit_and_stderr())
    );
    assert!(!world.out().join("manifest.json").exists());
    let before = fake.counters();
    assert!(
        !before.lines_in_batches.keys().any(|id| id.contains("/r1/")),
        "one round only"
    );
    world.also("author.max_rounds=3");
    world.run(&["run"]).success();
    assert_nothing_sent_twice(&fake);
    let after = fake.counters();
    let round0_again: Vec<&String> = after
        .lines_in_batches
        .keys()
        .filter(|id| !before.lines_in_batches.contains_key(*id))
        .filter(|id| id.starts_with("author/") && id.contains("/r0/"))
        .collect();
    assert!(
        round0_again.is_empty(),
        "round 0 authored again: {round0_again:?}"
    );
    assert!(after.lines_in_batches.keys().any(|id| id.contains("/r1/")));
}

#[test]
fn top_ups_stop_at_their_request_limit_and_share_it_across_the_short_categories() {
    // Round 0 leaves technical_code (19 of 30 survived) and long_document_qa (17 of 26) short;
    // the top-up rule asks for 1 and 3 requests. Two are allowed: each category gets one.
    let fake = FakeApi::start(lossy_responder());
    let world = twenty_per_category(&fake).set("author.max_topup_requests=2");
    let short = world.run(&["run"]);
    short.code(1).stderr_has(
        "its top-up rounds sent the 2 authoring request(s) author.max_topup_requests allows",
    );
    let mut topups: Vec<String> = batched_ids(&fake, |id| {
        id.starts_with("author/") && !id.contains("/r0/")
    })
    .iter()
    .filter_map(|id| id.rsplit_once('/').map(|(slot, _)| slot.to_string()))
    .collect();
    topups.sort();
    assert_eq!(
        topups,
        ["author/long_document_qa/r1", "author/technical_code/r1"]
    );
    for category in ["technical_code", "long_document_qa"] {
        assert!(
            row_ends(&short.stdout, category, "  1 request(s)"),
            "{category}: {}",
            short.stdout
        );
    }
    let requests = fake.counters().http_requests;
    world.run(&["run"]).code(1);
    assert_eq!(
        fake.counters().http_requests,
        requests,
        "a re-run of the stopped loop sends nothing"
    );
    assert_nothing_sent_twice(&fake);
}

#[test]
fn a_top_up_limit_smaller_than_the_short_categories_says_who_gets_none() {
    // The round 0 above with one top-up request allowed: technical_code comes first in the
    // categories' order and gets it; long_document_qa's row says why it gets none.
    let fake = FakeApi::start(lossy_responder());
    let world = twenty_per_category(&fake).set("author.max_topup_requests=1");
    let short = world.run(&["run"]);
    short.code(1);
    let topups = batched_ids(&fake, |id| {
        id.starts_with("author/") && !id.contains("/r0/")
    });
    assert_eq!(topups.len(), 1, "{topups:?}");
    assert!(
        topups[0].starts_with("author/technical_code/r1/"),
        "{topups:?}"
    );
    assert!(
        row_ends(
            &short.stdout,
            "long_document_qa",
            "none (author.max_topup_requests)"
        ),
        "{}",
        short.stdout
    );
    assert_nothing_sent_twice(&fake);
}

#[test]
fn a_category_at_prior_survival_zero_is_never_asked_and_the_release_says_so() {
    // Round 0 leaves technical_code and long_document_qa short; long_document_qa's prior of 0
    // says this author's documents do not survive, so no round asks for one.
    let fake = FakeApi::start(lossy_responder());
    let world = twenty_per_category(&fake)
        .set("categories.long_document_qa.prior_survival=0.0")
        .set("assemble.allow_short=true");
    let run = world.run(&["run"]);
    run.success();
    let asked = batched_ids(&fake, |id| id.starts_with("author/long_document_qa/"));
    assert!(asked.is_empty(), "{asked:?}");
    assert!(
        run.stdout.contains("not asked (prior_survival 0)"),
        "{}",
        run.stdout
    );
    let shortfall = manifest(&world)["shortfall"].clone();
    assert_eq!(
        shortfall,
        serde_json::json!([{"category": "long_document_qa", "have": 0, "want": 20, "reasons": {}, "asked": false}])
    );
    let card = std::fs::read_to_string(world.out().join("README.md")).expect("card");
    assert!(
        card.contains("`long_document_qa`: 0 of 20 (not asked: its `prior_survival` is 0)"),
        "{card}"
    );
    let status = world.run(&["status"]);
    status.success();
    assert!(
        row_ends(
            &status.stdout,
            "long_document_qa",
            "short; not asked (prior_survival 0)"
        ),
        "{}",
        status.stdout
    );
    let without_allow_short = twenty_per_category(&fake)
        .set("categories.long_document_qa.prior_survival=0.0")
        .run(&["run"]);
    without_allow_short
        .code(2)
        .stderr_has("categories.long_document_qa.prior_survival")
        .stderr_has("assemble.allow_short");
    assert_nothing_sent_twice(&fake);
}

#[test]
fn a_category_that_survives_near_zero_for_two_rounds_stops_with_its_top_reason() {
    let fake = FakeApi::start(one_speaker_dialogs());
    let world = World::new(&fake)
        .set("author.max_rounds=6")
        .set("assemble.allow_short=true");
    let run = world.run(&["run"]);
    run.success();
    insta::assert_snapshot!(
        "a_category_stops_with_its_top_reason",
        stable(&world, Some(&fake), &run.stdout)
    );
    let counters = fake.counters();
    let rounds: std::collections::BTreeSet<usize> = counters
        .lines_in_batches
        .keys()
        .filter_map(|id| author_slot(id))
        .filter(|(category, _, _)| *category == "conversational")
        .map(|(_, round, _)| round)
        .collect();
    assert_eq!(
        rounds.into_iter().collect::<Vec<_>>(),
        vec![0, 1],
        "two paid rounds, then no more"
    );
    let manifest = manifest(&world);
    assert_eq!(manifest["counts"]["conversational"], 0);
    assert_eq!(manifest["counts"]["simple_factual"], 4);
    assert!(manifest["short"].as_bool().unwrap_or(false));
}

/// The worst-case cost of round 0 as `author --dry-run` prints it (the `total` row's last column).
fn round0_worst_case(world: &World) -> f64 {
    let dry = world.run(&["author", "--dry-run"]);
    dry.success();
    dry.stdout
        .lines()
        .find(|l| l.trim_start().starts_with("total"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|usd| usd.parse().ok())
        .unwrap_or_else(|| panic!("no total row in:\n{}", dry.stdout))
}

#[test]
fn the_author_limit_counts_what_earlier_rounds_spent_before_a_top_up_is_submitted() {
    let fake = FakeApi::start(lossy_responder());
    // With 16 output tokens the worst case of a round is little more than its prompts, while the
    // replies really spend hundreds of tokens each: round 0 fits the limit, and what it spent
    // leaves no room for a top-up round.
    let world = World::new(&fake)
        .set("author.oversample=1.0")
        .set("author.max_tokens=16")
        .set("categories.long_document_qa.max_tokens=16")
        .set("categories.multi_document_qa.max_tokens=16");
    let limit = round0_worst_case(&world) * 1.2;
    let world = world.set(&format!("author.max_cost_usd={limit:.6}"));
    let run = world.run(&["run"]);
    run.code(2);
    insta::assert_snapshot!(
        "a_top_up_over_the_cost_limit_is_refused",
        stable(&world, Some(&fake), &run.exit_and_stderr())
    );
    let counters = fake.counters();
    assert!(counters
        .lines_in_batches
        .keys()
        .any(|id| id.contains("/r0/")));
    assert!(
        !counters
            .lines_in_batches
            .keys()
            .any(|id| id.contains("/r1/")),
        "the top-up was refused before anything of it was submitted"
    );
}

#[test]
fn status_shows_the_loop_round_and_each_categorys_survivors_against_its_need() {
    let fake = FakeApi::start(lossy_responder());
    let world = twenty_per_category(&fake).set("author.max_rounds=1");
    world.run(&["run"]).code(1);
    let status = world.run(&["status"]);
    status.success();
    insta::assert_snapshot!(
        "status_after_a_short_run",
        stable(&world, Some(&fake), &status.stdout)
    );
    let line_of = |category: &str| {
        status
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with(category))
            .unwrap_or_else(|| panic!("no {category} line in:\n{}", status.stdout))
            .to_string()
    };
    let documents = line_of("long_document_qa");
    assert!(
        documents.contains("17/20") && documents.ends_with("short"),
        "the fake leaves long_document_qa at 17 of 20 after round 0: {documents}"
    );
    assert!(line_of("simple_factual").ends_with("full"));
}

#[test]
fn no_wait_leaves_each_rounds_batches_running_and_a_rerun_goes_on_until_the_release() {
    let fake = FakeApi::start(lossy_responder());
    let world = World::new(&fake).set("author.oversample=1.0");
    let mut runs = 0;
    while !world.out().join("manifest.json").exists() {
        runs += 1;
        let run = world.run(&["run", "--no-wait"]);
        run.success();
        assert!(
            runs <= 60,
            "the loop never finishes under --no-wait:\n{}\n{}",
            run.stdout,
            run.stderr
        );
    }
    assert_nothing_sent_twice(&fake);
    let counters = fake.counters();
    assert!(
        counters
            .lines_in_batches
            .keys()
            .any(|id| id.starts_with("audit/") && id.contains(".r1.")),
        "a second round was audited"
    );
    assert!(
        runs > 6,
        "each job was left running at least once: {runs} runs"
    );
}
