//! The release: `run` writes a verified, byte-reproducible release; `assemble` drops near
//! duplicates of an earlier release (`--exclude`) and refuses a short category unless allowed;
//! `verify` reports bad input with its position and never panics.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use serde_json::Value;

use saseval_testkit::fake_api::{FakeApi, FakeReply, Responder};
use saseval_testkit::replies;

use crate::bar::Bar;
use crate::responders::{good_responder, repair_responder};
use crate::world::{
    count_by_category, fixture_prompts_copy, release_bytes, show_example_item, stable, World,
};

#[test]
fn run_writes_a_verified_reproducible_release() {
    let fake = FakeApi::start(repair_responder());
    let world = World::new(&fake).set("repair.models=[\"v-a\", \"v-b\"]");
    world.run(&["run"]).success();
    let records = world.read_jsonl("saseval_v2_prompts.jsonl");
    assert_eq!(records.len(), 40);
    assert_eq!(
        count_by_category(&records)
            .values()
            .copied()
            .collect::<Vec<_>>(),
        vec![4; 10]
    );
    assert!(
        records.iter().all(|r| r.get("_needs_review").is_none()),
        "flagged items are left out by default"
    );
    world
        .run(&["verify", world.out().to_str().expect("utf-8")])
        .success();
    let jsonl = world.out().join("saseval_v2_prompts.jsonl");
    world
        .run(&["verify", jsonl.to_str().expect("utf-8")])
        .success();
    if Command::new("sha256sum").arg("--version").output().is_ok() {
        let check = Command::new("sha256sum")
            .args(["-c", "SHA256SUMS"])
            .current_dir(world.out())
            .output()
            .expect("sha256sum");
        assert!(
            check.status.success(),
            "{}",
            String::from_utf8_lossy(&check.stdout)
        );
    }
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(world.out().join("manifest.json")).expect("manifest"),
    )
    .expect("json");
    assert_eq!(manifest["repair"]["repaired"], 2);
    let card = std::fs::read_to_string(world.out().join("README.md")).expect("card");
    assert!(
        card.contains(manifest["sha256"].as_str().expect("sha")),
        "the card states the hash"
    );

    let again = World::new(&fake).set("repair.models=[\"v-a\", \"v-b\"]");
    again.run(&["run"]).success();
    assert_eq!(
        release_bytes(&world),
        release_bytes(&again),
        "same inputs and seed give the same bytes"
    );
    check_with_datasets(&world.out());
}

/// Loads the release with the Hugging Face `datasets` library, as its users will.
fn check_with_datasets(out: &Path) {
    let script = r#"
import sys, datasets
ds = datasets.load_dataset(sys.argv[1], split="train")
assert len(ds) == 40, len(ds)
assert set(ds.column_names) >= {"id", "category", "prompt", "golds", "target_action", "T", "top_p", "mode", "max_new"}, ds.column_names
print("datasets OK", len(ds))
"#;
    let has_datasets = Command::new("python3")
        .args(["-c", "import datasets"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_datasets {
        assert!(
            std::env::var("SASEVAL_REQUIRE_DATASETS").is_err(),
            "python3 with the datasets library is required here"
        );
        eprintln!("skipping the datasets loader check: python3 -c 'import datasets' fails");
        return;
    }
    let output = Command::new("python3")
        .args(["-c", script, out.to_str().expect("utf-8")])
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", out.join("hf-home"))
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "datasets could not load the release:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn exclude_drops_near_duplicates_of_an_earlier_release() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake).set("assemble.allow_short=true");
    let victim = &audited_technical_code_item(&world);
    let earlier = world.dir.path().join("v1.jsonl");
    let near_copy = format!("{} Thanks!", victim["prompt"].as_str().expect("prompt"));
    std::fs::write(
        &earlier,
        format!(
            "{}\n",
            serde_json::json!({"id": "sas1k-0042", "prompt": near_copy})
        ),
    )
    .expect("write");
    world
        .run(&["assemble", "--exclude", earlier.to_str().expect("utf-8")])
        .success();
    let rejects = world.read_jsonl("rejects.jsonl");
    assert!(
        rejects.iter().any(|r| r["item_id"] == victim["id"]
            && r["collided_with"] == "sas1k-0042"
            && r["reason"].as_str().unwrap_or("").starts_with("duplicate")),
        "the near-copy of sas1k-0042 is dropped"
    );
    let records = world.read_jsonl("saseval_v2_prompts.jsonl");
    assert!(records.iter().all(|r| r["prompt"] != victim["prompt"]));
}

/// Runs author, repair and audit, and returns the first technical_code item authored.
fn audited_technical_code_item(world: &World) -> Value {
    world.run(&["author"]).success();
    world.run(&["repair"]).success();
    world.run(&["audit"]).success();
    world
        .read_jsonl("authored.jsonl")
        .into_iter()
        .find(|i| i["category"] == "technical_code")
        .expect("an item")
}

#[test]
fn a_candidate_copying_its_templates_example_item_is_dropped() {
    let prompts = fixture_prompts_copy();
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake)
        .set("assemble.allow_short=true")
        .set(&format!("author.prompts_dir={}", prompts.path().display()));
    let victim = &audited_technical_code_item(&world);
    let example = serde_json::json!({"prompt": victim["prompt"], "golds": ["x"]});
    show_example_item(prompts.path(), "technical_code.md", &example);

    world.run(&["assemble"]).success();
    let rejects = world.read_jsonl("rejects.jsonl");
    assert!(
        rejects.iter().any(|r| r["item_id"] == victim["id"]
            && r["collided_with"] == "the example item of technical_code.md"
            && r["reason"] == "duplicate_exact"),
        "the copy of the template's example is dropped"
    );
    let records = world.read_jsonl("saseval_v2_prompts.jsonl");
    assert!(records.iter().all(|r| r["prompt"] != victim["prompt"]));
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(world.out().join("manifest.json")).expect("manifest"),
    )
    .expect("manifest JSON");
    assert_eq!(
        manifest["dedup"]["against_template_example"], 1,
        "{}",
        manifest["dedup"]
    );
    assert_eq!(manifest["dedup"]["against_reference"], 0);
    let card = std::fs::read_to_string(world.out().join("README.md")).expect("card");
    assert!(
        card.contains("1 copied a category template's own example item"),
        "{card}"
    );
}

#[test]
fn a_short_category_fails_assemble_unless_allowed() {
    let inner = good_responder();
    let responder: Responder = Arc::new(move |custom_id: &str, body: &Value| {
        if custom_id.starts_with("author/conversational/") {
            return FakeReply::Content(replies::broken_reply(replies::BrokenReply::NoJson));
        }
        inner(custom_id, body)
    });
    let fake = FakeApi::start(responder);
    let world = World::new(&fake);
    let run = world.run(&["run"]);
    run.code(1);
    insta::assert_snapshot!(
        "a_short_release_is_refused",
        stable(&world, Some(&fake), &run.exit_and_stderr())
    );
    assert!(
        !world.out().join("saseval_v2_prompts.jsonl").exists(),
        "no short release is written silently"
    );
    let allowed = World::new(&fake).set("assemble.allow_short=true");
    allowed.run(&["run"]).success();
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(allowed.out().join("manifest.json")).expect("manifest"),
    )
    .expect("json");
    assert_eq!(manifest["counts"]["conversational"], 0);
    assert!(manifest["shortfall"]
        .as_array()
        .is_some_and(|s| !s.is_empty()));
    allowed
        .run(&["verify", allowed.out().to_str().expect("utf-8")])
        .success();
}

#[test]
fn verify_reports_problems_and_never_panics_on_bad_input() {
    let world = World::with_url("http://127.0.0.1:9/v1".into());
    let dir = world.dir.path();
    let cases: [(&str, Vec<u8>); 3] = [
        ("not-json.jsonl", b"this is not json\n".to_vec()),
        ("huge-line.jsonl", vec![b'x'; 10 * 1024 * 1024]),
        (
            "wrong-schema.jsonl",
            b"{\"id\": 5, \"category\": \"poetry\"}\n".to_vec(),
        ),
    ];
    let mut text = String::new();
    for (name, bytes) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        let run = world.run(&["verify", path.to_str().expect("utf-8")]);
        run.code(1);
        text.push_str(&format!("## {name}\n{}\n", run.exit_and_stdout()));
    }
    insta::assert_snapshot!("verify_of_bad_inputs", stable(&world, None, &text));
}

#[test]
fn verify_names_a_byte_order_mark_and_where_a_line_stops_being_utf8() {
    let world = World::with_url("http://127.0.0.1:9/v1".into());
    let path = world.dir.path().join("bom.jsonl");
    std::fs::write(
        &path,
        b"\xEF\xBB\xBF{\"id\": \"x\"}\n{\"id\": \"caf\xE9\"}\n",
    )
    .expect("write");
    let bar = Bar::before(&world);
    let run = bar.ran(world.run(&["verify", path.to_str().expect("utf-8")]));
    run.code(1);
    bar.after();
    insta::assert_snapshot!(
        "verify_of_a_bom_and_a_non_utf8_line",
        stable(&world, None, &run.exit_and_stdout())
    );
}

/// Writes the streaming-assemble fixture into `dir`: 25,000 generated candidates (MinHash LSH
/// runs above 20,000), every 7th flagged and every 11th with a repaired gold; author and old
/// assemble lines in `rejects.jsonl`; and an earlier release holding every 997th prompt.
fn write_streaming_fixture(dir: &Path) -> std::path::PathBuf {
    use std::io::Write;
    let mut candidates = Vec::new();
    for reply in 0.. {
        candidates.extend(saseval_testkit::synth::candidates_of(reply));
        if candidates.len() >= 25_000 {
            break;
        }
    }
    candidates.truncate(25_000);
    let mut repaired = std::io::BufWriter::new(
        std::fs::File::create(dir.join("repaired.jsonl")).expect("repaired.jsonl"),
    );
    let mut rejects = std::io::BufWriter::new(
        std::fs::File::create(dir.join("rejects.jsonl")).expect("rejects.jsonl"),
    );
    let mut earlier = std::io::BufWriter::new(
        std::fs::File::create(dir.join("earlier.jsonl")).expect("earlier.jsonl"),
    );
    for (i, mut c) in candidates.into_iter().enumerate() {
        c.needs_review = i % 7 == 0;
        c.gold_repaired = i % 11 == 0;
        serde_json::to_writer(&mut repaired, &c).expect("write");
        writeln!(repaired).expect("write");
        for (every, stage) in [(13, "author"), (17, "assemble")] {
            if i % every == 0 {
                let reject = serde_json::json!({"stage": stage, "reason": "prompt_too_short",
                    "detail": "short", "category": c.category, "custom_id": c.custom_id,
                    "domain": c.domain, "round": c.round, "excerpt": "é…"});
                writeln!(rejects, "{reject}").expect("write");
            }
        }
        if i % 997 == 0 {
            let record = serde_json::json!({"id": format!("v1-{i:05}"), "prompt": c.prompt});
            writeln!(earlier, "{record}").expect("write");
        }
    }
    for mut file in [repaired, rejects, earlier] {
        file.flush().expect("flush");
    }
    dir.join("earlier.jsonl")
}

/// The SHA-256 of the release JSONL and of `rejects.jsonl` that assemble writes for
/// [`write_streaming_fixture`] with `--set audit.models=[] --set release.date=2026-11-29 --set
/// assemble.allow_short=true`. Until the fake author's facts became distinct per run, these were
/// the bytes of the in-memory assemble (commit c50f7ee, before assemble streamed its input); the
/// streaming assemble wrote them too. They were recorded again when the fixture's factual items
/// changed and the same-fact rule came in (it drops 5,013 of the fixture's factual candidates,
/// which ask for one of 60 facts).
const RECORDED_ASSEMBLE: [(&str, &str); 2] = [
    (
        "saseval_v2_prompts.jsonl",
        "44b599f6a9ab98d4f9cab80b1428a0b5476b708ac8aff314ab9ade456791343d",
    ),
    (
        "rejects.jsonl",
        "dadce0c2ac94e44251b453ed124167235db07ccb648112262127bfe9bfd42c74",
    ),
];

#[test]
fn assemble_of_25_000_candidates_writes_the_bytes_recorded_for_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let earlier = write_streaming_fixture(dir.path());
    let output = Command::new(env!("CARGO_BIN_EXE_saseval-gen"))
        .arg("--config")
        .arg(crate::world::repo().join("pipeline.toml"))
        .arg("--out")
        .arg(dir.path())
        .args(["--quiet", "--set", "audit.models=[]", "--set"])
        .args([
            "release.date=2026-11-29",
            "--set",
            "assemble.allow_short=true",
        ])
        .args(["assemble", "--exclude"])
        .arg(&earlier)
        .output()
        .expect("saseval-gen runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for (name, expected) in RECORDED_ASSEMBLE {
        let bytes = std::fs::read(dir.path().join(name)).expect("written");
        assert_eq!(
            saseval_gen::util::digest::sha256_hex(&bytes),
            expected,
            "{name} differs from the bytes recorded for the fixture"
        );
    }
}

#[test]
fn a_factual_question_keyed_like_a_kept_one_asks_for_the_same_fact_and_is_dropped() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake).set("assemble.allow_short=true");
    world.run(&["author"]).success();
    world.run(&["repair"]).success();
    world.run(&["audit"]).success();
    let mut items = world.read_jsonl("audited.jsonl");
    let mut factual: Vec<usize> = (0..items.len())
        .filter(|&k| items[k]["category"] == "simple_factual")
        .collect();
    factual.sort_by_key(|&k| items[k]["id"].as_str().unwrap_or("").to_string());
    let (holder, victim) = (factual[0], factual[1]);
    let key = items[holder]["golds"][0]
        .as_str()
        .expect("a key")
        .to_string();
    assert_ne!(
        items[victim]["golds"][0],
        key.as_str(),
        "the fake asks distinct facts"
    );
    items[victim]["golds"] = serde_json::json!([format!(" {}.", key.to_uppercase())]);
    let lines: Vec<String> = items.iter().map(Value::to_string).collect();
    std::fs::write(world.out().join("audited.jsonl"), lines.join("\n") + "\n").expect("write");

    world.run(&["assemble"]).success();
    let rejects = world.read_jsonl("rejects.jsonl");
    assert!(
        rejects.iter().any(|r| r["item_id"] == items[victim]["id"]
            && r["reason"] == "duplicate_fact"
            && r["collided_with"] == items[holder]["id"]),
        "the second question keyed {key} is dropped: {rejects:?}"
    );
    let records = world.read_jsonl("saseval_v2_prompts.jsonl");
    assert!(records
        .iter()
        .all(|r| r["prompt"] != items[victim]["prompt"]));
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(world.out().join("manifest.json")).expect("manifest"),
    )
    .expect("manifest JSON");
    assert_eq!(manifest["dedup"]["same_fact"], 1, "{}", manifest["dedup"]);
    let card = std::fs::read_to_string(world.out().join("README.md")).expect("card");
    assert!(
        card.contains("(the\n   same fact asked again): 1."),
        "{card}"
    );
}
