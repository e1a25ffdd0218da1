//! `saseval-gen diff A B` on two real releases the pipeline made against the fake: B's model
//! answers a few requests differently (one gold dropped, one prompt reworded, one request's items
//! replaced), its verifiers flag an item it keeps, and one category's target row differs. The
//! diff finds exactly that, as JSON and as a table; `assemble --exclude A` writes the card's
//! Changelog from the same diff; a path that is not a release is exit 2.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use serde_json::Value;

use saseval_testkit::fake_api::{FakeApi, FakeReply, Responder};
use saseval_testkit::replies::{self, VerifierStyle};

use crate::bar::Bar;
use crate::responders::{good_responder, items_of, verified_prompt};
use crate::world::{stable, Run, World};

/// Settings under which a release holds every valid item round 0 authored (20 is a multiple of
/// every category's items per request, and nothing is trimmed; no audit, whose flags would
/// leave items out of A that B keeps), so that A and B differ only where their model's answers
/// or their config do.
const EVERY_ITEM: [&str; 7] = [
    "audit.models=[]",
    "release.per_category=20",
    "author.oversample=1.0",
    "author.max_rounds=1",
    "assemble.allow_short=true",
    "repair.models=[\"v-a\", \"v-b\"]",
    "release.date=2026-11-29",
];

const GOLD_DROPPED_ID: &str = "author/simple_factual/r0/0001";
const REWORDED_ID: &str = "author/technical_code/r0/0000";
const REPLACED_ID: &str = "author/memory_recall/r0/0000";
const FLAGGED_BY: &str = "repair/bloated_reasoning.r0.0000.0/v-b";
const REWORDING: &str = " Please answer briefly.";

/// B's model: like A's, except for the three changed authoring requests and one verifier that
/// disagrees, so repair flags that item.
fn b_responder() -> Responder {
    let inner = good_responder();
    Arc::new(move |custom_id: &str, body: &Value| {
        if custom_id == FLAGGED_BY {
            return FakeReply::Content(replies::verifier_reply(
                verified_prompt(body),
                VerifierStyle::WrongBy(3.0),
            ));
        }
        let reply = inner(custom_id, body);
        let changed = [GOLD_DROPPED_ID, REWORDED_ID, REPLACED_ID].contains(&custom_id);
        let FakeReply::Content(content) = &reply else {
            return reply;
        };
        if !changed {
            return reply;
        }
        let mut items = items_of(content);
        match custom_id {
            GOLD_DROPPED_ID => {
                if let Some(golds) = items
                    .pointer_mut("/items/0/golds")
                    .and_then(Value::as_array_mut)
                {
                    golds.truncate(1);
                }
            }
            REWORDED_ID => {
                if let Some(prompt) = items.pointer_mut("/items/0/prompt") {
                    *prompt = format!("{}{REWORDING}", prompt.as_str().unwrap_or("")).into();
                }
            }
            REPLACED_ID => {
                let count = items["items"].as_array().map_or(1, Vec::len);
                return FakeReply::Content(replies::author_reply(
                    "memory_recall",
                    "telecom",
                    count,
                    7_777,
                ));
            }
            _ => return reply,
        }
        FakeReply::Content(items.to_string())
    })
}

/// Two releases: A from the good model, B from `b_responder` with its flagged item kept and
/// another conversational target row.
struct Releases {
    _fakes: (FakeApi, FakeApi),
    a: World,
    b: World,
}

fn two_releases() -> Releases {
    let fake_a = FakeApi::start(good_responder());
    let fake_b = FakeApi::start(b_responder());
    let mut a = World::new(&fake_a);
    let mut b = World::new(&fake_b);
    for kv in EVERY_ITEM {
        a.also(kv);
        b.also(kv);
    }
    b.also("release.version=v3");
    b.also("assemble.keep_flagged=true");
    b.also("categories.conversational.c=0.4");
    a.run(&["run"]).success();
    b.run(&["run"]).success();
    Releases {
        _fakes: (fake_a, fake_b),
        a,
        b,
    }
}

fn path_arg(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

fn diff_json(world: &World, a: &Path, b: &Path) -> Value {
    let run = world.run(&["diff", path_arg(a), path_arg(b), "--json"]);
    run.success();
    serde_json::from_str(&run.stdout).expect("diff --json prints JSON")
}

fn records(world: &World, name: &str) -> Vec<Value> {
    world.read_jsonl(name)
}

/// The record of `release` whose prompt starts like `prompt`.
fn id_of(release: &[Value], prompt: &str) -> String {
    release
        .iter()
        .find(|r| r["prompt"].as_str() == Some(prompt))
        .and_then(|r| r["id"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no record with prompt {prompt:?}"))
}

/// The items one authoring request gave, as authored.jsonl holds them.
fn authored_by(world: &World, custom_id: &str) -> Vec<Value> {
    world
        .read_jsonl("authored.jsonl")
        .into_iter()
        .filter(|i| i["custom_id"] == custom_id)
        .collect()
}

fn strings(values: &Value) -> Vec<String> {
    values
        .as_array()
        .map(|v| {
            v.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn diff_finds_what_changed_between_two_real_releases() {
    let releases = two_releases();
    let (a, b) = (&releases.a, &releases.b);
    let a_records = records(a, "saseval_v2_prompts.jsonl");
    let b_records = records(b, "saseval_v3_prompts.jsonl");
    let d = diff_json(a, &a.out(), &b.out());
    assert_eq!(d["a"]["records"], a_records.len());
    assert_eq!(d["b"]["records"], b_records.len());
    assert_eq!(d["threshold"], 0.8);

    let replaced: Vec<Value> = authored_by(a, REPLACED_ID);
    assert!(!replaced.is_empty());
    let mut removed: Vec<String> = d["removed"]
        .as_array()
        .expect("removed")
        .iter()
        .map(|o| o["id"].as_str().unwrap_or("").to_string())
        .collect();
    let mut replaced_ids: Vec<String> = replaced
        .iter()
        .map(|i| id_of(&a_records, i["prompt"].as_str().unwrap_or("")))
        .collect();
    removed.sort();
    replaced_ids.sort();
    assert_eq!(
        removed, replaced_ids,
        "A's replaced memory_recall items are removed"
    );
    let added = d["added"].as_array().expect("added");
    assert_eq!(added.len(), authored_by(b, REPLACED_ID).len());
    assert!(added.iter().all(|o| o["category"] == "memory_recall"));

    let kept = d["kept"].as_array().expect("kept");
    assert_eq!(kept.len(), a_records.len() - removed.len());
    let golds: Vec<&Value> = kept
        .iter()
        .filter(|k| k.get("golds_changed").is_some())
        .collect();
    assert_eq!(golds.len(), 1, "{golds:?}");
    let first_item = &authored_by(a, GOLD_DROPPED_ID)[0];
    let golds_in = |records: &[Value]| {
        let record = records
            .iter()
            .find(|r| r["prompt"] == first_item["prompt"])
            .expect("both releases hold the item");
        strings(&record["golds"])
    };
    let b_golds = golds_in(&b_records);
    let dropped: Vec<String> = golds_in(&a_records)
        .into_iter()
        .filter(|gold| !b_golds.contains(gold))
        .collect();
    assert!(!dropped.is_empty(), "the item has gold variants to drop");
    assert_eq!(strings(&golds[0]["golds_changed"]["removed"]), dropped);
    assert!(strings(&golds[0]["golds_changed"]["added"]).is_empty());
    assert_eq!(
        golds[0]["a_id"],
        id_of(&a_records, first_item["prompt"].as_str().unwrap_or(""))
    );

    let near: Vec<&Value> = kept
        .iter()
        .filter(|k| k["match"]["kind"] == "near")
        .collect();
    assert_eq!(near.len(), 1, "the reworded prompt is kept as a near match");
    let similarity = near[0]["match"]["similarity"].as_f64().expect("similarity");
    assert!((0.8..1.0).contains(&similarity), "{similarity}");
    assert_eq!(near[0]["category"], "technical_code");
    let across = d["near_duplicates"].as_array().expect("near duplicates");
    assert_eq!(across.len(), 1);
    assert_eq!(across[0]["paired"], true);
    assert_eq!(across[0]["b_id"], near[0]["b_id"]);

    let flagged: Vec<&Value> = kept
        .iter()
        .filter(|k| k.get("flags_changed").is_some())
        .collect();
    assert_eq!(flagged.len(), 1, "{flagged:?}");
    assert_eq!(flagged[0]["category"], "bloated_reasoning");
    assert_eq!(
        flagged[0]["flags_changed"],
        serde_json::json!([{"flag": "_needs_review", "a": false, "b": true}])
    );

    let conversational = b_records
        .iter()
        .filter(|r| r["category"] == "conversational")
        .count();
    let targets: Vec<&Value> = kept
        .iter()
        .filter(|k| k.get("target_changed").is_some())
        .collect();
    assert_eq!(targets.len(), conversational);
    assert!(targets.iter().all(|k| k["category"] == "conversational"));
    assert_eq!(targets[0]["target_changed"][0][0], 0.35);
    assert_eq!(targets[0]["target_changed"][1][0], 0.4);

    let summary = &d["summary"];
    assert_eq!(summary["kept"], kept.len());
    assert_eq!(summary["golds_changed"], 1);
    assert_eq!(summary["flags_changed"], 1);
    assert_eq!(summary["targets_changed"], conversational);
    let categories = d["categories"].as_array().expect("categories");
    let names: Vec<&str> = categories
        .iter()
        .filter_map(|c| c["category"].as_str())
        .collect();
    assert_eq!(
        names,
        crate::world::CATEGORIES,
        "the card's ten, in its order"
    );
    for row in categories {
        let name = row["category"].as_str().unwrap_or("");
        let count = |records: &[Value]| records.iter().filter(|r| r["category"] == name).count();
        assert_eq!(row["a"]["records"], count(&a_records), "{name}");
        assert_eq!(row["b"]["records"], count(&b_records), "{name}");
        assert_eq!(row["row_changed"], name == "conversational", "{name}");
        assert_eq!(
            row["a"]["words"].as_array().map(Vec::len),
            Some(5),
            "{name}"
        );
    }

    let table = a.run(&["diff", path_arg(&a.out()), path_arg(&b.out())]);
    table.success();
    let expected_head = format!(
        "matched by prompt (exact after the card's normalisation, then near: Jaccard >= 0.8): {} kept ({} exact, 1 near), {} added, {} removed",
        kept.len(),
        kept.len() - 1,
        added.len(),
        removed.len()
    );
    assert!(
        table.stdout.lines().any(|line| line == expected_head),
        "the table's head agrees with --json: {expected_head:?} in:\n{}",
        table.stdout
    );
    let table_text = table
        .stdout
        .replace(&b.out().display().to_string(), "[OUT-B]");
    insta::assert_snapshot!("diff_table_of_two_releases", stable(a, None, &table_text));
    let conversational_line = table
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("conversational "))
        .expect("a conversational row");
    assert!(
        conversational_line.contains("[0.35, 0.2, 0.9, 0, 0.125] -> [0.4, 0.2, 0.9, 0, 0.125]"),
        "{conversational_line}"
    );

    let same = diff_json(a, &a.out().join("saseval_v2_prompts.jsonl"), &a.out());
    assert_eq!(same["summary"]["kept_exact"], a_records.len());
    assert_eq!(same["summary"]["added"], 0);

    changelog_is_the_diff_of_the_excluded_release(&releases);
}

/// `assemble --exclude A` in B's out dir writes a card whose Changelog states what
/// `diff A B` then finds.
fn changelog_is_the_diff_of_the_excluded_release(releases: &Releases) {
    let (a, b) = (&releases.a, &releases.b);
    let earlier = a.out().join("saseval_v2_prompts.jsonl");
    b.run(&["assemble", "--exclude", path_arg(&earlier)])
        .success();
    let d = diff_json(b, &earlier, &b.out());
    let s = &d["summary"];
    assert_eq!(
        s["kept"], 0,
        "--exclude drops every copy and near copy of A"
    );
    let card = std::fs::read_to_string(b.out().join("README.md")).expect("card");
    let changelog = card.split("## Changelog\n\n").nth(1).expect("a Changelog");
    let n = |v: &Value| {
        let n = v.as_u64().expect("a count") as usize;
        group(n)
    };
    let head = format!(
        "  - Since `saseval_v2_prompts.jsonl` ({} records, SHA-256 `{}`), as `saseval-gen diff` measures it: {} records\n    added, {} removed, 0 kept (0 with the same prompt, 0 near duplicates reworded).",
        n(&d["a"]["records"]),
        d["a"]["sha256"].as_str().unwrap_or(""),
        n(&s["added"]),
        n(&s["removed"]),
    );
    assert!(changelog.contains(&head), "{head}\nin:\n{changelog}");
    let per_category: Vec<String> = d["categories"]
        .as_array()
        .expect("categories")
        .iter()
        .map(|c| {
            format!(
                "`{}` {} → {}",
                c["category"].as_str().unwrap_or(""),
                n(&c["a"]["records"]),
                n(&c["b"]["records"])
            )
        })
        .collect();
    assert!(
        changelog.contains(&format!(
            "  - Records per category (then → now): {}.",
            per_category.join(", ")
        )),
        "{changelog}"
    );
    assert!(
        changelog.contains("  - Target rows changed: `conversational`."),
        "{changelog}"
    );
    b.run(&["verify", path_arg(&b.out())]).success();
}

/// `1,000` as the card writes it.
fn group(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn a_path_that_is_not_a_release_is_exit_2_and_v1_records_are_read() {
    let world = World::with_url("http://127.0.0.1:9/v1".into());
    let dir = world.dir.path();
    let v1 = dir.join("saseval_v1_prompts.jsonl");
    std::fs::write(
        &v1,
        "{\"id\":\"sas1k-0881\",\"category\":\"memory_update\",\"prompt\":\"The security policy previously required Kubernetes clusters to use version 1.22. A recent update mandates a minimum version of 1.25. What is the current minimum supported Kubernetes version for new clusters?\",\"golds\":[\"1.25\",\"kubernetes 1.25\",\"version 1.25\"],\"target_action\":[0.45,0.2,0.9,1,0.25],\"T\":0.2,\"top_p\":0.9,\"mode\":\"DEEP\",\"max_new\":512,\"durable\":[\"1.25\"]}\n",
    )
    .expect("write");
    let missing = dir.join("no-such-release");
    let bad_line = dir.join("bad.jsonl");
    std::fs::write(
        &bad_line,
        "{\"prompt\": \"fine\"}\n{\"id\": \"no prompt\"}\n",
    )
    .expect("write");
    let empty_dir = dir.join("empty");
    std::fs::create_dir(&empty_dir).expect("mkdir");
    let bar = Bar::before(&world);
    let ok = bar.ran(world.run(&["diff", path_arg(&v1), path_arg(&v1)]));
    ok.success();
    insta::assert_snapshot!(
        "diff_of_a_v1_file_with_itself",
        stable(&world, None, &ok.stdout)
    );
    let mut refusals = String::new();
    for target in [missing.clone(), bad_line.clone(), empty_dir.clone()] {
        let run = bar.ran(world.run(&["diff", path_arg(&v1), path_arg(&target)]));
        run.code(2);
        refusals.push_str(&stable(&world, None, &run.exit_and_stderr()));
    }
    insta::assert_snapshot!("diff_refuses_what_is_not_a_release", refusals);
    bar.ran(world.run(&["diff", path_arg(&v1)])).code(2);
    bar.after();
}

#[test]
fn diff_needs_no_config_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let release = dir.path().join("r_prompts.jsonl");
    std::fs::write(
        &release,
        "{\"id\": \"x\", \"prompt\": \"What is the default port of PostgreSQL?\"}\n",
    )
    .expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_saseval-gen"))
        .args(["diff", path_arg(&release), path_arg(&release), "--json"])
        .current_dir(dir.path())
        .output()
        .expect("the binary runs");
    let run = Run::of(output);
    run.success();
    let d: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(d["threshold"], 0.8, "assemble's default threshold");
    assert_eq!(d["summary"]["kept_exact"], 1);
    let explicit = Command::new(env!("CARGO_BIN_EXE_saseval-gen"))
        .args([
            "--config",
            "missing.toml",
            "diff",
            path_arg(&release),
            path_arg(&release),
        ])
        .current_dir(dir.path())
        .output()
        .expect("the binary runs");
    Run::of(explicit).code(2);
}
