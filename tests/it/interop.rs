//! The `file` backend against vLLM's `run-batch`: the export hint gives the command vLLM accepts
//! (and the README repeats it), vLLM's exact success and error lines import with their messages
//! (`tests/fixtures/vllm/`), a later import replaces failed outcomes but never successful ones,
//! lines that answer nothing exported are counted or refused, and what still waits is counted
//! the same way everywhere.

use std::path::{Path, PathBuf};

use serde_json::Value;

use saseval_testkit::fake_api::FakeReply;

use crate::bar::Bar;
use crate::responders::{good_responder, losing};
use crate::world::{all_files, read_jsonl, repo, Run, World};

/// A world on the file backend (the base URL is never used).
fn file_world() -> World {
    World::with_url("https://unused.example/v1".into()).set("api.provider=file")
}

/// Every request line of the world's export folder.
fn exported(world: &World) -> Vec<Value> {
    let mut files = all_files(&world.out().join("export"));
    files.retain(|f| !f.to_string_lossy().ends_with(".results.jsonl"));
    files.sort();
    files.iter().flat_map(|f| read_jsonl(f)).collect()
}

/// vLLM's exact lines from `tests/fixtures/vllm/<name>`.
fn fixture_lines(name: &str) -> Vec<String> {
    let path = repo().join("tests/fixtures/vllm").join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::to_string)
        .collect()
}

/// A success line in vLLM's newer shape (the fixture's, field for field) for `custom_id`,
/// carrying `content`.
fn vllm_success(custom_id: &str, content: &str) -> String {
    let template = &fixture_lines("success-newer.jsonl")[0];
    let mut line: Value = serde_json::from_str(template).expect("fixture JSON");
    line["custom_id"] = custom_id.into();
    line["response"]["body"]["choices"][0]["message"]["content"] = content.into();
    line.to_string()
}

/// What the good responder answers to an exported request line.
fn good_content(request: &Value) -> String {
    let id = request["custom_id"].as_str().expect("custom_id");
    match good_responder()(id, &request["body"]) {
        FakeReply::Content(content) => content,
        _ => unreachable!("the good responder answers with content"),
    }
}

fn write_lines(world: &World, name: &str, lines: &[String]) -> PathBuf {
    let path = world.dir.path().join(name);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).expect("write import");
    path
}

fn import(world: &World, path: &Path) -> Run {
    world.run(&["author", "--import", path.to_str().expect("utf-8 path")])
}

/// The four custom_ids the fixtures answer.
const SUCCESS_ID: &str = "author/simple_factual/r0/0000";
const TOO_LONG_ID: &str = "author/memory_update/r0/0000";
const NO_MODEL_ID: &str = "author/memory_recall/r0/0000";
const NEWER_ID: &str = "author/conversational/r0/0000";

/// Exports round 0 and imports vLLM's fixture lines verbatim for their four requests and a
/// newer-vLLM success for every other one.
fn import_the_fixtures(world: &World) -> Run {
    world.run(&["author"]).success();
    let mut lines: Vec<String> = ["success.jsonl", "errors.jsonl", "success-newer.jsonl"]
        .iter()
        .flat_map(|name| fixture_lines(name))
        .collect();
    for request in exported(world) {
        let id = request["custom_id"].as_str().expect("custom_id");
        if ![SUCCESS_ID, TOO_LONG_ID, NO_MODEL_ID, NEWER_ID].contains(&id) {
            lines.push(vllm_success(id, &good_content(&request)));
        }
    }
    let path = write_lines(world, "vllm-results.jsonl", &lines);
    let run = import(world, &path);
    run.success();
    run
}

fn reject_detail(world: &World, custom_id: &str) -> String {
    world
        .read_jsonl("rejects.jsonl")
        .iter()
        .find(|r| r["custom_id"] == custom_id && r["reason"] == "request_failed")
        .and_then(|r| r["detail"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no request_failed reject for {custom_id}"))
}

fn authored_from(world: &World, custom_id: &str) -> Vec<Value> {
    world
        .read_jsonl("authored.jsonl")
        .into_iter()
        .filter(|i| i["custom_id"] == custom_id)
        .collect()
}

#[test]
fn vllm_success_and_error_lines_import_with_their_messages() {
    let world = file_world();
    import_the_fixtures(&world);
    assert_eq!(
        reject_detail(&world, TOO_LONG_ID),
        "request_failed (HTTP 400): This model's maximum context length is 4096 tokens. However, you requested 7312 tokens (1312 in the messages, 6000 in the completion). Please reduce the length of the messages or completion."
    );
    assert_eq!(
        reject_detail(&world, NO_MODEL_ID),
        "NotFoundError (HTTP 404): The model `qwen/qwen3-32b` does not exist."
    );
    let prompts: Vec<String> = authored_from(&world, SUCCESS_ID)
        .iter()
        .map(|i| i["prompt"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        prompts.contains(
            &"What is the default TCP port of a PostgreSQL 16 server listening for client connections?"
                .to_string()
        ),
        "the older vLLM success line (reasoning_content, tool_calls: []) authors its items: {prompts:?}"
    );
    assert!(
        world
            .read_jsonl("rejects.jsonl")
            .iter()
            .any(|r| r["custom_id"] == NEWER_ID && r["reason"] != "request_failed"),
        "the newer vLLM line (reasoning, token_ids) reads as a reply: its empty item list is a reject of its own"
    );
}

#[test]
fn an_import_replaces_failed_outcomes_and_never_successful_ones() {
    let world = file_world();
    import_the_fixtures(&world);
    let requests = exported(&world);
    let request = |id: &str| {
        requests
            .iter()
            .find(|r| r["custom_id"] == id)
            .unwrap_or_else(|| panic!("{id} was exported"))
    };
    let before = authored_from(&world, SUCCESS_ID);
    let corrected = vec![
        vllm_success(TOO_LONG_ID, &good_content(request(TOO_LONG_ID))),
        vllm_success(NO_MODEL_ID, &good_content(request(NO_MODEL_ID))),
        vllm_success(SUCCESS_ID, &good_content(request(SUCCESS_ID))),
    ];
    let path = write_lines(&world, "corrected.jsonl", &corrected);
    let run = import(&world, &path);
    run.success().stderr_has(&format!(
        "--import {}: 3 line(s) answer exported requests; 0 new result(s), 2 failed outcome(s) replaced by a success",
        path.display()
    ));
    for id in [TOO_LONG_ID, NO_MODEL_ID] {
        assert!(
            !authored_from(&world, id).is_empty(),
            "{id} now authors items"
        );
        assert!(
            !world
                .read_jsonl("rejects.jsonl")
                .iter()
                .any(|r| r["custom_id"] == id && r["reason"] == "request_failed"),
            "{id}'s failure is gone"
        );
    }
    assert_eq!(
        authored_from(&world, SUCCESS_ID),
        before,
        "a successful outcome is never replaced"
    );
    import(&world, &path)
        .success()
        .stderr_has("3 line(s) answer exported requests; nothing new: the requests it answers already have their outcome");

    // A crash in the middle of appending the last replacement leaves a torn line: the failure it
    // was replacing is in force again, and importing again replaces it.
    let cache = world.out().join("state/cache.jsonl");
    let bytes = std::fs::read(&cache).expect("cache");
    let last_start = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |at| at + 1);
    let torn = last_start + (bytes.len() - last_start) / 2;
    std::fs::write(&cache, &bytes[..torn]).expect("tear the last line");
    world.run(&["author"]).success();
    assert!(reject_detail(&world, NO_MODEL_ID).contains("does not exist"));
    import(&world, &path)
        .success()
        .stderr_has("0 new result(s), 1 failed outcome(s) replaced by a success");
    assert!(!authored_from(&world, NO_MODEL_ID).is_empty());
}

#[test]
fn a_failure_does_not_replace_a_failure_and_a_later_success_still_can() {
    let world = file_world();
    import_the_fixtures(&world);
    let path = write_lines(&world, "errors-again.jsonl", &fixture_lines("errors.jsonl"));
    import(&world, &path).success().stderr_has("nothing new");
    assert!(reject_detail(&world, TOO_LONG_ID).contains("maximum context length"));
}

#[test]
fn foreign_lines_are_counted_and_an_import_of_nothing_else_is_refused() {
    let world = file_world();
    world.run(&["author"]).success();
    let requests = exported(&world);
    let mut lines: Vec<String> = requests
        .iter()
        .take(2)
        .map(|r| vllm_success(r["custom_id"].as_str().unwrap_or(""), &good_content(r)))
        .collect();
    let strangers = [
        vllm_success("author/poetry/r0/0000", "{\"items\": []}"),
        vllm_success("someone-elses/request/7", "{\"items\": []}"),
    ];
    lines.extend(strangers.iter().cloned());
    let mixed = write_lines(&world, "mixed.jsonl", &lines);
    let foreign = write_lines(&world, "foreign.jsonl", &strangers);
    let empty = write_lines(&world, "empty.jsonl", &[]);
    let missing = world.dir.path().join("no-such-results.jsonl");
    let bar = Bar::before(&world);
    bar.ran(import(&world, &mixed))
        .success()
        .stderr_has(&format!(
            "warning: --import {}: 2 of its 4 line(s) answer no request exported from this out dir (the first: custom_id `author/poetry/r0/0000`); they were ignored",
            mixed.display()
        ));
    bar.ran(import(&world, &foreign)).code(1).stderr_has(&format!(
        "--import {}: none of its 2 line(s) answers a request exported from this out dir (the first unknown custom_id is `author/poetry/r0/0000`)",
        foreign.display()
    ));
    bar.ran(import(&world, &empty))
        .code(1)
        .stderr_has("holds no output lines");
    bar.ran(import(&world, &missing))
        .code(2)
        .stderr_has("no-such-results.jsonl");
    bar.after();
}

/// The vLLM command lines of a run's hint.
fn vllm_commands(run: &Run) -> Vec<String> {
    run.stderr
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("python -m vllm.entrypoints.openai.run_batch"))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_export_hint_gives_the_vllm_command_that_serves_the_requests_model() {
    let world = file_world();
    let run = world.run(&["author"]);
    run.success();
    let commands = vllm_commands(&run);
    assert_eq!(commands.len(), 1, "one file, one model: {}", run.stderr);
    let export = world.out().join("export");
    let file = exported_file(&world);
    let stem = file.trim_end_matches(".jsonl");
    assert_eq!(
        commands[0],
        format!(
            "python -m vllm.entrypoints.openai.run_batch -i {dir}/{file} -o {dir}/{stem}.results.jsonl --model <path or HF id of the weights> --served-model-name qwen/qwen3-32b",
            dir = export.display()
        )
    );
    run.stderr_has(&format!(
        "then re-run this command with --import {}/{stem}.results.jsonl",
        export.display()
    ));
    let fingerprint = stem.rsplit('-').next().expect("a fingerprint");
    let in_readme = commands[0]
        .replace(&world.out().display().to_string(), "out")
        .replace(fingerprint, "<fingerprint>");
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README");
    assert!(
        readme.lines().any(|l| l.trim() == in_readme),
        "README.md shows the command the hint prints:\n{in_readme}"
    );
}

/// The one export file's name.
fn exported_file(world: &World) -> String {
    let files: Vec<String> = all_files(&world.out().join("export"))
        .iter()
        .filter_map(|f| f.file_name()?.to_str().map(str::to_string))
        .filter(|n| !n.ends_with(".results.jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// The number before `marker` in the first stderr line holding it, e.g. `12 request(s) wait`.
fn count_before(stderr: &str, marker: &str) -> usize {
    let line = stderr
        .lines()
        .find(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no {marker:?} in:\n{stderr}"));
    let head = &line[..line.find(marker).unwrap_or(0)];
    head.split_whitespace()
        .last()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count before {marker:?} in {line:?}"))
}

#[test]
fn after_a_partial_import_only_what_still_waits_is_counted() {
    let world = file_world();
    let first = world.run(&["author"]);
    first.success();
    let requests = exported(&world);
    let total = requests.len();
    assert_eq!(count_before(&first.stderr, "request(s) wait in"), total);
    let answered = 3;
    let lines: Vec<String> = requests
        .iter()
        .take(answered)
        .map(|r| vllm_success(r["custom_id"].as_str().unwrap_or(""), &good_content(r)))
        .collect();
    let partial = write_lines(&world, "partial.jsonl", &lines);
    let run = import(&world, &partial);
    run.success();
    let waiting = total - answered;
    assert_eq!(
        count_before(&run.stderr, "request(s) wait in 1 file(s)"),
        waiting,
        "{}",
        run.stderr
    );
    assert_eq!(
        count_before(&run.stderr, "request(s); re-run the same command"),
        waiting
    );
    run.stderr_has(&format!("# {waiting} of its {total} request(s) still wait"));
    assert_eq!(exported(&world).len(), total, "nothing is exported twice");
}

/// Exports `stage`'s requests and imports, for every exported line of the stage, the good
/// responder's answer as a newer-vLLM success line.
fn run_stage_through_vllm_files(world: &World, stage: &str) {
    world.run(&[stage]).success();
    let lines: Vec<String> = exported(world)
        .iter()
        .filter(|r| {
            r["custom_id"]
                .as_str()
                .is_some_and(|id| id.starts_with(&format!("{stage}/")))
        })
        .map(|r| vllm_success(r["custom_id"].as_str().unwrap_or(""), &good_content(r)))
        .collect();
    assert!(!lines.is_empty(), "{stage} exported its requests");
    let path = write_lines(world, &format!("{stage}-results.jsonl"), &lines);
    world
        .run(&[stage, "--import", path.to_str().expect("utf-8 path")])
        .success();
}

#[test]
fn the_whole_pipeline_with_its_audit_runs_through_vllm_batch_files() {
    let world = file_world().set("audit.models=[\"p-a\", \"p-b\"]");
    for stage in ["author", "repair", "audit"] {
        run_stage_through_vllm_files(&world, stage);
    }
    let summary: Value = serde_json::from_slice(
        &std::fs::read(world.out().join("audit_summary.json")).expect("the audit ran"),
    )
    .expect("JSON");
    assert_eq!(summary["models"], serde_json::json!(["p-a", "p-b"]));
    assert!(summary["total"]["audited"].as_u64().is_some_and(|n| n > 0));
    world.run(&["assemble"]).success();
    world
        .run(&["verify", world.out().to_str().expect("utf-8")])
        .success();
}

#[test]
fn the_loop_exports_each_rounds_requests_as_it_needs_them_and_ends_in_a_release() {
    let world = file_world()
        .set("author.oversample=1.0")
        .set("repair.models=[\"v-a\", \"v-b\"]");
    let responder = losing(good_responder());
    world.run(&["run"]).success();
    let mut answered = std::collections::BTreeSet::new();
    for step in 0.. {
        assert!(step < 20, "the loop keeps asking for imports");
        let pending: Vec<Value> = exported(&world)
            .into_iter()
            .filter(|r| !answered.contains(r["custom_id"].as_str().unwrap_or("")))
            .collect();
        if pending.is_empty() {
            break;
        }
        let lines: Vec<String> = pending
            .iter()
            .map(|r| {
                let id = r["custom_id"].as_str().expect("custom_id");
                answered.insert(id.to_string());
                match responder(id, &r["body"]) {
                    FakeReply::Content(content) => vllm_success(id, &content),
                    _ => unreachable!("the lossy responder answers with content"),
                }
            })
            .collect();
        let path = write_lines(&world, &format!("step-{step}.jsonl"), &lines);
        world
            .run(&["run", "--import", path.to_str().expect("utf-8 path")])
            .success();
    }
    let ids: Vec<String> = exported(&world)
        .iter()
        .filter_map(|r| r["custom_id"].as_str().map(str::to_string))
        .collect();
    let unique: std::collections::BTreeSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "a request was exported twice");
    assert!(
        ids.iter()
            .any(|id| id.starts_with("author/") && id.contains("/r1/")),
        "the loop needed a second round"
    );
    world
        .run(&["verify", world.out().to_str().expect("utf-8")])
        .success();
}
