//! The release as its readers see it (issue 16, items 6–9): the Hub's `datasets` library,
//! `mlcroissant`, the card's license link, and `report.html` in headless Chromium. Where python3's
//! modules or Chromium are missing, a test is skipped with a note, unless
//! `SASEVAL_REQUIRE_DATASETS` is set (scripts/test.sh sets it). Every helper here is used only here.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use saseval_testkit::fake_api::FakeApi;

use crate::responders::repair_responder;
use crate::world::{repo, World};

/// A release made by the whole pipeline against the fake: two verifiers, two wrong keys repaired
/// and four ill-posed items flagged and left out, so no record carries `_needs_review`.
fn pipeline_release(fake: &FakeApi) -> World {
    let world = World::new(fake).set("repair.models=[\"v-a\", \"v-b\"]");
    world.run(&["run"]).success();
    let records = world.read_jsonl("saseval_v2_prompts.jsonl");
    assert_eq!(records.len(), 40);
    assert!(
        records.iter().all(|r| r.get("_needs_review").is_none()),
        "the release under test has no flagged record"
    );
    world
}

/// Whether `python3` can import `module`. Where it cannot, the check is skipped with a note,
/// unless `SASEVAL_REQUIRE_DATASETS` is set (scripts/test.sh sets it), where that is a failure.
fn python_has(module: &str) -> bool {
    let found = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("SASEVAL_REQUIRE_DATASETS").is_err(),
            "python3 with {module} is required here (scripts/setup.sh installs it)"
        );
        eprintln!("skipping: python3 -c 'import {module}' fails");
    }
    found
}

/// Runs a Python script offline with `args`; returns its stdout, or panics with its stderr.
fn run_python(script: &str, args: &[&Path], home: &Path) -> String {
    let output = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HOME", home.join("hf-home"))
        .env("HOME", home)
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "python failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn datasets_loads_every_column_of_a_release_without_flags_and_the_cards_filter_runs() {
    if !python_has("datasets") {
        return;
    }
    let fake = FakeApi::start(repair_responder());
    let world = pipeline_release(&fake);
    let script = r#"
import sys, datasets
ds = datasets.load_dataset(sys.argv[1], split="train")
assert ds.column_names == ["id", "category", "prompt", "golds", "target_action", "T", "top_p",
                           "mode", "max_new", "durable", "stale", "_gold_repaired",
                           "_needs_review"], ds.column_names
assert ds.features["_needs_review"].dtype == "bool", ds.features
assert ds.features["_gold_repaired"].dtype == "bool", ds.features
kept = ds.filter(lambda r: not r["_needs_review"])
assert len(kept) == len(ds) == 40, (len(kept), len(ds))
repaired = ds.filter(lambda r: r["_gold_repaired"])
assert len(repaired) == int(sys.argv[2]) > 0, (len(repaired), sys.argv[2])
plain = ds.filter(lambda r: r["category"] == "simple_factual")[0]
assert plain["durable"] is None and plain["_needs_review"] is None, plain
memory = ds.filter(lambda r: r["category"] == "memory_update")[0]
assert isinstance(memory["stale"], list) and memory["durable"], memory
assert all(len(r["target_action"]) == 5 for r in ds)
print("datasets OK", len(kept))
"#;
    let repaired = world
        .read_jsonl("saseval_v2_prompts.jsonl")
        .iter()
        .filter(|r| r["_gold_repaired"] == true)
        .count()
        .to_string();
    let stdout = run_python(
        script,
        &[&world.out(), Path::new(&repaired)],
        world.dir.path(),
    );
    assert!(stdout.contains("datasets OK 40"), "{stdout}");
}

/// The value of a top-level `key:` in the card's YAML front matter.
fn front_matter_value(card: &str, key: &str) -> Option<String> {
    let front = card.strip_prefix("---\n")?.split("\n---\n").next()?;
    front
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{key}: ")))
        .map(str::to_string)
}

#[test]
fn the_license_link_names_a_file_the_release_carries_under_sha256sums() {
    let fake = FakeApi::start(repair_responder());
    let world = pipeline_release(&fake);
    let card = std::fs::read_to_string(world.out().join("README.md")).expect("card");
    assert_eq!(
        front_matter_value(&card, "license").as_deref(),
        Some("other")
    );
    let link = front_matter_value(&card, "license_link").expect("a license_link");
    let license = std::fs::read_to_string(world.out().join(&link)).expect("the linked file");
    assert!(license.contains("cosavu-eval"), "{license}");
    let sums = std::fs::read_to_string(world.out().join("SHA256SUMS")).expect("sums");
    assert!(
        sums.lines().any(|l| l.ends_with(&format!("  {link}"))),
        "{sums}"
    );
}

#[test]
fn mlcroissant_validates_the_croissant_and_loads_every_record_with_its_hash_checked() {
    if !python_has("mlcroissant") {
        return;
    }
    let fake = FakeApi::start(repair_responder());
    let world = pipeline_release(&fake);
    // Loads every record; with a second argument, expects the load to fail on the file's hash.
    let script = r#"
import json, sys, logging
import mlcroissant as mlc
logging.disable(logging.CRITICAL)
folder = sys.argv[1]
ds = mlc.Dataset(jsonld=folder + "/croissant.json")
issues = ds.metadata.ctx.issues
assert not issues.errors and not issues.warnings, issues.report()
assert ds.metadata.version == "2.0.0", ds.metadata.version
tampered = len(sys.argv) > 2
try:
    records = list(ds.records("prompts"))
except Exception as error:
    chain = []
    while error is not None:
        chain.append(str(error))
        error = error.__cause__ or error.__context__
    if tampered and any("Hash of downloaded file" in text for text in chain):
        print("hash mismatch refused")
        sys.exit(0)
    raise
assert not tampered, "a tampered file loaded"
with open(folder + "/saseval_v2_prompts.jsonl") as f:
    ids = [json.loads(line)["id"] for line in f]
loaded = [r["prompts/id"].decode() for r in records]
assert loaded == ids, (loaded, ids)
print("mlcroissant OK", len(records))
"#;
    let stdout = run_python(script, &[&world.out()], world.dir.path());
    assert!(stdout.contains("mlcroissant OK 40"), "{stdout}");

    let tampered = world.dir.path().join("tampered");
    std::fs::create_dir(&tampered).expect("dir");
    for name in ["croissant.json", "saseval_v2_prompts.jsonl"] {
        std::fs::copy(world.out().join(name), tampered.join(name)).expect("copy");
    }
    let jsonl = tampered.join("saseval_v2_prompts.jsonl");
    let text = std::fs::read_to_string(&jsonl).expect("jsonl");
    std::fs::write(&jsonl, text.replacen("\"golds\":[\"", "\"golds\":[\"0", 1)).expect("write");
    let stdout = run_python(
        script,
        &[&tampered, Path::new("tampered")],
        world.dir.path(),
    );
    assert!(stdout.contains("hash mismatch refused"), "{stdout}");
}

/// Runs Chromium headless (Debian's package) on `args` with a fresh profile and no network
/// services, ending it if it takes more than two minutes; returns (stdout, stderr).
fn chromium(args: &[String]) -> (String, String) {
    let profile = tempfile::tempdir().expect("profile dir");
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().expect("chromium status").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("chromium output");
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Whether Chromium is installed; a missing one is a failure where SASEVAL_REQUIRE_DATASETS is
/// set (scripts/test.sh), else the check is skipped with a note.
fn chromium_installed() -> bool {
    let found = Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("SASEVAL_REQUIRE_DATASETS").is_err(),
            "chromium is required here (scripts/setup.sh installs Debian's package)"
        );
        eprintln!("skipping: chromium --version fails");
    }
    found
}

/// The console messages Chromium logged (`--enable-logging=stderr` prints each as a `CONSOLE`
/// line, whatever its level); a page without a script should log none.
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    let header = png.get(..24)?;
    if header.get(..8)? != b"\x89PNG\r\n\x1a\n" || header.get(12..16)? != b"IHDR" {
        return None;
    }
    let width = u32::from_be_bytes(header.get(16..20)?.try_into().ok()?);
    let height = u32::from_be_bytes(header.get(20..24)?.try_into().ok()?);
    Some((width, height))
}

#[test]
fn the_console_check_sees_a_planted_script_error() {
    if !chromium_installed() {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let page = dir.path().join("planted.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><title>planted</title><h1>planted</h1>\
         <script>console.error('planted error'); notDefinedAnywhere();</script>",
    )
    .expect("page");
    let (_, stderr) = chromium(&["--dump-dom".into(), format!("file://{}", page.display())]);
    let console = console_lines(&stderr);
    assert!(
        console.iter().any(|l| l.contains("planted error"))
            && console
                .iter()
                .any(|l| l.contains("notDefinedAnywhere is not defined")),
        "{stderr}"
    );
}

/// The report's title and section headings, as a reader sees them (no audit ran here).
const REPORT_HEADINGS: [&str; 7] = [
    "Composition by category and domain",
    "Prompt length by category",
    "Authoring yield by round",
    "Reject codes by category",
    "Numeric repair outcomes",
    "Deduplication",
    "Flagged items",
];

#[test]
fn the_release_report_renders_in_headless_chromium_without_console_errors() {
    if !chromium_installed() {
        return;
    }
    let fake = FakeApi::start(repair_responder());
    let world = pipeline_release(&fake);
    let report = world.out().join("report.html");
    let html = std::fs::read_to_string(&report).expect("report.html");
    for outside in ["<script", "<link", " src=", "url(", "@import"] {
        assert!(
            !html.contains(outside),
            "the report loads something: {outside}"
        );
    }
    let card = std::fs::read_to_string(world.out().join("README.md")).expect("card");
    assert!(card.contains("](report.html)"), "the card links the report");
    let sums = std::fs::read_to_string(world.out().join("SHA256SUMS")).expect("sums");
    assert!(sums.lines().any(|l| l.ends_with("  report.html")), "{sums}");

    let url = format!("file://{}", report.display());
    let (dom, stderr) = chromium(&["--dump-dom".into(), url.clone()]);
    assert!(
        dom.contains("<title>SASEval v2 — release report</title>"),
        "no title in the DOM:\n{dom}"
    );
    assert!(dom.contains("<h1>SASEval v2 — release report</h1>"));
    for heading in REPORT_HEADINGS {
        assert!(
            dom.contains(&format!("<h2>{heading}</h2>")),
            "no section {heading:?} in the DOM"
        );
    }
    assert!(
        dom.contains("Audit panel pass rates"),
        "the run audited, so the report has its audit section"
    );
    let flagged: Vec<Value> = world
        .read_jsonl("rejects.jsonl")
        .into_iter()
        .filter(|r| r["reason"] == "needs_review")
        .collect();
    assert!(
        flagged.len() >= 4,
        "the repair's four and any the audit flags"
    );
    for reject in &flagged {
        let id = reject["item_id"].as_str().expect("item id");
        assert!(dom.contains(id), "flagged item {id} is not in the report");
    }
    assert_eq!(
        console_lines(&stderr),
        Vec::<&str>::new(),
        "console messages"
    );

    // The screenshot a laptop shows first, kept for CI under target/, and the whole page.
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo().join("target"), PathBuf::from);
    std::fs::create_dir_all(&target).expect("target dir");
    for (name, size) in [
        ("report-screenshot.png", "1280,800"),
        ("report-full-page.png", "1280,3600"),
    ] {
        let shot = target.join(name);
        let _ = std::fs::remove_file(&shot);
        let (_, stderr) = chromium(&[
            format!("--window-size={size}"),
            format!("--screenshot={}", shot.display()),
            url.clone(),
        ]);
        assert_eq!(
            console_lines(&stderr),
            Vec::<&str>::new(),
            "console messages"
        );
        let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("{name}: {e}\n{stderr}"));
        let (width, height) = png_size(&png).expect("a PNG");
        assert_eq!(format!("{width},{height}"), size);
        // A blank page of that size compresses to about 5 KB; the rendered report to far more.
        assert!(
            png.len() > 40_000,
            "{name} looks blank: {} bytes",
            png.len()
        );
    }
}

#[test]
fn the_report_and_license_of_two_runs_are_byte_identical() {
    let fake = FakeApi::start(repair_responder());
    let first = pipeline_release(&fake);
    let second = pipeline_release(&fake);
    for name in ["report.html", "LICENSE.md", "SHA256SUMS"] {
        let read = |world: &World| {
            std::fs::read(world.out().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
        };
        assert_eq!(
            read(&first),
            read(&second),
            "{name} differs between two runs"
        );
    }
}
