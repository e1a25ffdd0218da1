//! The one integration-test binary: drives the real `saseval-gen` binary through the Contract
//! (CLI, config keys, files in the out dir, exit codes) against a fake Batch API on loopback.

mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use support::fake_api::{Counters, ErrorsShape, FakeApi, FakeReply, Fault, ListStyle, Responder, Route};
use support::replies::{self, VerifierStyle};

const KEY: &str = "sk-test-RECOGNISABLE-7f3a9c";
const CATEGORIES: [&str; 10] = [
    "simple_factual",
    "bloated_factual",
    "reasoning",
    "bloated_reasoning",
    "technical_code",
    "long_document_qa",
    "multi_document_qa",
    "conversational",
    "memory_recall",
    "memory_update",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The parts of a test-template user message: `category=… count=… domain=…`.
fn template_field<'a>(body: &'a Value, key: &str) -> Option<&'a str> {
    let user = body.pointer("/messages/1/content")?.as_str()?;
    user.split_whitespace().find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

/// `author/<category>/r<round>/<index>` → (category, round, index).
fn author_slot(custom_id: &str) -> Option<(&str, usize, usize)> {
    let mut parts = custom_id.strip_prefix("author/")?.split('/');
    let category = parts.next()?;
    let round = parts.next()?.strip_prefix('r')?.parse().ok()?;
    let index = parts.next()?.parse().ok()?;
    Some((category, round, index))
}

/// A responder that answers authoring requests with valid fixture items and verifier requests
/// with the correct re-solve.
fn good_responder() -> Responder {
    Arc::new(|custom_id: &str, body: &Value| {
        if let Some((category, round, index)) = author_slot(custom_id) {
            let count = template_field(body, "count").and_then(|c| c.parse().ok()).unwrap_or(1);
            let domain = template_field(body, "domain").unwrap_or("cloud/DevOps");
            return FakeReply::Content(replies::author_reply(category, domain, count, round * 1000 + index));
        }
        let prompt = body
            .pointer("/messages/0/content")
            .and_then(Value::as_str)
            .and_then(|m| m.strip_prefix("verify:\n"))
            .unwrap_or("");
        FakeReply::Content(replies::verifier_reply(prompt.trim_end(), VerifierStyle::Correct))
    })
}

/// One test's world: a temp dir with the out dir, and the command line that reaches the fake.
struct World {
    dir: tempfile::TempDir,
    base_url: String,
    sets: Vec<String>,
}

impl World {
    fn new(fake: &FakeApi) -> World {
        World::with_url(fake.base_url())
    }

    fn with_url(base_url: String) -> World {
        let sets = [
            format!("api.base_url={base_url}"),
            "api.poll_interval_secs=0.05".into(),
            "api.retry_initial_secs=0.02".into(),
            "api.max_retries=6".into(),
            "api.api_key_env=SASEVAL_TEST_KEY".into(),
            "release.per_category=4".into(),
            "release.date=2026-11-29".into(),
            format!("author.prompts_dir={}", repo().join("tests/fixtures/prompts").display()),
            "author.extra_body={}".into(),
        ]
        .into_iter()
        .collect();
        World {
            dir: tempfile::tempdir().expect("temp dir"),
            base_url,
            sets,
        }
    }

    fn set(mut self, kv: &str) -> World {
        self.sets.push(kv.to_string());
        self
    }

    fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_saseval-gen"));
        cmd.arg("--config").arg(repo().join("pipeline.toml"));
        cmd.arg("--out").arg(self.out());
        for s in &self.sets {
            cmd.arg("--set").arg(s);
        }
        cmd.args(args);
        cmd.env("SASEVAL_TEST_KEY", KEY).env_remove("SASEVAL_CRASH_AFTER").env_remove("RUST_LOG");
        cmd
    }

    fn run(&self, args: &[&str]) -> Run {
        Run::of(self.command(args).output().expect("the binary runs"))
    }

    fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = self.command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Run::of(cmd.output().expect("the binary runs"))
    }

    fn read_jsonl(&self, name: &str) -> Vec<Value> {
        read_jsonl(&self.out().join(name))
    }
}

fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSONL line"))
        .collect()
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn of(output: Output) -> Run {
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    fn success(&self) -> &Run {
        assert_eq!(self.code, Some(0), "expected success\nstdout:\n{}\nstderr:\n{}", self.stdout, self.stderr);
        self
    }

    fn code(&self, code: i32) -> &Run {
        assert_eq!(self.code, Some(code), "expected exit {code}\nstdout:\n{}\nstderr:\n{}", self.stdout, self.stderr);
        self
    }

    fn stderr_has(&self, needle: &str) -> &Run {
        assert!(self.stderr.contains(needle), "stderr lacks {needle:?}:\n{}", self.stderr);
        self
    }
}

/// No request line was ever part of two batches that could both bill it: a line appears in a
/// second batch only if the first never served it.
fn assert_no_line_billed_twice(counters: &Counters, served_once: &[String]) {
    for id in served_once {
        assert_eq!(counters.lines_in_batches.get(id), Some(&1), "{id} was submitted more than once");
    }
}

fn count_by_category(items: &[Value]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for item in items {
        *counts.entry(item["category"].as_str().unwrap_or("?").to_string()).or_default() += 1;
    }
    counts
}

fn all_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("readable dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(all_files(&path));
        } else {
            files.push(path);
        }
    }
    files
}

// ---------------------------------------------------------------------------------------------
// Author against the fake Batch API
// ---------------------------------------------------------------------------------------------

#[test]
fn author_fills_every_category_and_a_rerun_makes_no_request() {
    let fake = FakeApi::start(good_responder());
    fake.set_expected_key(KEY);
    let world = World::new(&fake);
    world.run(&["author"]).success();
    let items = world.read_jsonl("authored.jsonl");
    let counts = count_by_category(&items);
    for category in CATEGORIES {
        assert!(counts.get(category).copied().unwrap_or(0) >= 4, "{category}: {counts:?}");
    }
    let ids: std::collections::BTreeSet<_> = items.iter().map(|i| i["id"].as_str().unwrap_or("")).collect();
    assert_eq!(ids.len(), items.len(), "item ids are unique");
    let before = fake.counters();
    assert!(before.lines_in_batches.values().all(|n| *n == 1), "no request line sent twice");
    assert_eq!(before.unauthorized, 0);
    world.run(&["author"]).success();
    assert_eq!(fake.counters().http_requests, before.http_requests, "a finished re-run makes no HTTP request");
}

#[test]
fn rate_limit_with_retry_after_is_honoured() {
    let fake = FakeApi::start(good_responder());
    fake.push_fault(Fault::RateLimit { route: Route::Upload, times: 1, retry_after: Some(1) });
    fake.push_fault(Fault::RateLimit { route: Route::GetBatch, times: 2, retry_after: None });
    let world = World::new(&fake);
    let started = std::time::Instant::now();
    world.run(&["author"]).success();
    assert!(started.elapsed() >= std::time::Duration::from_secs(1), "retry-after: 1 was not waited for");
    assert!(fake.counters().lines_in_batches.values().all(|n| *n == 1));
}

#[test]
fn server_error_bursts_and_connection_resets_are_retried() {
    let fake = FakeApi::start(good_responder());
    for status in [500, 502, 503] {
        fake.push_fault(Fault::ServerError { route: Route::GetBatch, status, times: 1 });
    }
    fake.push_fault(Fault::ResetConnection { route: Route::Upload, times: 1 });
    fake.push_fault(Fault::ResetConnection { route: Route::Download, times: 1 });
    fake.push_fault(Fault::TruncatedDownload { times: 1 });
    let world = World::new(&fake);
    world.run(&["author"]).success();
    let counters = fake.counters();
    assert!(counters.lines_in_batches.values().all(|n| *n == 1), "no request line sent twice");
    assert!(counters.faults_fired >= 6, "faults fired: {}", counters.faults_fired);
    assert!(!world.read_jsonl("authored.jsonl").is_empty());
}

#[test]
fn an_expired_batch_keeps_its_done_half_and_resubmits_only_the_rest() {
    let fake = FakeApi::start(good_responder());
    fake.push_fault(Fault::ExpireNextBatch { completed: 20 });
    let world = World::new(&fake).set("api.max_requests_per_batch=1000");
    world.run(&["author"]).success();
    let counters = fake.counters();
    let twice: Vec<_> = counters.lines_in_batches.iter().filter(|(_, n)| **n == 2).collect();
    let total = counters.lines_in_batches.len();
    assert_eq!(twice.len() + 20, total, "only the unserved lines went into a second batch");
    assert!(counters.lines_in_batches.values().all(|n| *n <= 2));
    assert_eq!(counters.batches_created, 2);
}

#[test]
fn a_failed_batch_is_reported_and_not_resubmitted_blindly() {
    for shape in [ErrorsShape::Sdk, ErrorsShape::Bare] {
        let fake = FakeApi::start(good_responder());
        fake.push_fault(Fault::FailNextBatch { shape });
        let world = World::new(&fake);
        world.run(&["author"]).code(1).stderr_has("failed");
        let created = fake.counters().batches_created;
        world.run(&["author"]).code(1).stderr_has("--retry-failed");
        assert_eq!(fake.counters().batches_created, created, "no new batch without --retry-failed");
        world.run(&["author", "--retry-failed"]).success();
    }
}

#[test]
fn error_file_lines_become_rejects_and_are_cached() {
    let inner = good_responder();
    let responder: Responder = Arc::new(move |custom_id: &str, body: &Value| {
        if custom_id == "author/technical_code/r0/0001" {
            return FakeReply::Error {
                status: 400,
                body: serde_json::json!({"error": {"message": "Failed to generate JSON", "type": "invalid_request_error", "code": "json_validate_failed"}}),
            };
        }
        inner(custom_id, body)
    });
    let fake = FakeApi::start(responder);
    let world = World::new(&fake);
    world.run(&["author"]).success();
    let rejects = world.read_jsonl("rejects.jsonl");
    assert!(rejects.iter().any(|r| r["custom_id"] == "author/technical_code/r0/0001"
        && r["reason"] == "request_failed"
        && r["detail"].as_str().unwrap_or("").contains("json_validate_failed")));
    let before = fake.counters().http_requests;
    world.run(&["author"]).success();
    assert_eq!(fake.counters().http_requests, before, "a failed request's final outcome is cached");
}

#[test]
fn a_crash_after_any_journal_step_resumes_without_sending_a_line_twice() {
    let steps = [
        "planned",
        "uploaded-unjournaled",
        "uploaded",
        "created-unjournaled",
        "created",
        "polled",
        "finished",
        "downloaded",
        "collected",
    ];
    for step in steps {
        let fake = FakeApi::start(good_responder());
        let world = World::new(&fake);
        let crashed = world.run_env(&["author"], &[("SASEVAL_CRASH_AFTER", step)]);
        assert_ne!(crashed.code, Some(0), "{step}: the hook did not fire\n{}", crashed.stderr);
        assert!(crashed.stderr.contains(&format!("crashing after step `{step}`")), "{step}: {}", crashed.stderr);
        world.run(&["author"]).success();
        let counters = fake.counters();
        assert!(counters.lines_in_batches.values().all(|n| *n == 1), "{step}: a line was sent twice: {:?}", counters.lines_in_batches.values().max());
        assert_eq!(counters.batches_created, 1, "{step}: a second batch was created");
        let items = world.read_jsonl("authored.jsonl");
        assert!(count_by_category(&items).len() == 10, "{step}: authoring incomplete");
    }
}

#[test]
fn the_api_key_never_reaches_a_file_or_the_terminal() {
    let fake = FakeApi::start(good_responder());
    fake.set_expected_key(KEY);
    let world = World::new(&fake);
    let run = world.run_env(&["run"], &[("RUST_LOG", "trace")]);
    run.success();
    assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY), "the key was printed");
    for file in all_files(&world.out()) {
        let bytes = std::fs::read(&file).expect("readable");
        let found = bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes());
        assert!(!found, "the key is in {}", file.display());
    }
    assert_eq!(fake.counters().unauthorized, 0, "every request carried the key");
}

#[test]
fn no_wait_submits_and_exits_then_a_rerun_collects() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake);
    world.run(&["author", "--no-wait"]).success().stderr_has("--no-wait");
    assert!(!world.out().join("authored.jsonl").exists() || world.read_jsonl("authored.jsonl").is_empty());
    assert_eq!(fake.counters().polls, 0);
    let status = world.run(&["status"]);
    status.success();
    assert!(status.stdout.contains("created") && status.stdout.contains("batch_"), "{}", status.stdout);
    world.run(&["author"]).success();
    assert_eq!(count_by_category(&world.read_jsonl("authored.jsonl")).len(), 10);
    assert!(fake.counters().lines_in_batches.values().all(|n| *n == 1));
}

#[test]
fn a_batch_cancelled_by_someone_else_keeps_its_lines_and_a_rerun_sends_only_the_rest() {
    let fake = FakeApi::start(good_responder());
    fake.push_fault(Fault::CancelNextBatch { completed: 10 });
    let world = World::new(&fake);
    world.run(&["author"]).code(1).stderr_has("cancelled");
    world.run(&["author"]).success();
    let counters = fake.counters();
    assert_eq!(counters.lines_in_batches.values().filter(|n| **n == 1).count(), 10);
    assert!(counters.lines_in_batches.values().all(|n| *n <= 2));
}

#[test]
fn foreign_and_duplicate_output_lines_are_ignored_with_a_warning() {
    let fake = FakeApi::start(good_responder());
    fake.push_fault(Fault::ShuffleDuplicateForeign);
    let world = World::new(&fake);
    world.run(&["author"]).success().stderr_has("never sent");
}

#[test]
fn an_output_file_that_404s_stops_with_a_clear_message_and_loses_nothing() {
    let fake = FakeApi::start(good_responder());
    fake.push_fault(Fault::OutputFile404);
    let world = World::new(&fake);
    world.run(&["author"]).code(1).stderr_has("404");
    let status = world.run(&["status"]);
    assert!(status.stdout.contains("finished"), "the batch stays journaled for a later re-run: {}", status.stdout);
}

#[test]
fn list_paging_in_openai_style_finds_a_batch_after_a_crash() {
    let fake = FakeApi::start(good_responder());
    fake.set_list_style(ListStyle::OpenAi);
    let world = World::new(&fake).set("api.max_requests_per_batch=5");
    let crashed = world.run_env(&["author"], &[("SASEVAL_CRASH_AFTER", "created-unjournaled:4")]);
    assert_ne!(crashed.code, Some(0));
    world.run(&["author"]).success();
    let counters = fake.counters();
    assert!(counters.lines_in_batches.values().all(|n| *n == 1));
    assert!(counters.batch_lists >= 1);
}

#[test]
fn changing_one_template_resends_only_its_requests() {
    let fake = FakeApi::start(good_responder());
    let prompts = tempfile::tempdir().expect("temp dir");
    for entry in std::fs::read_dir(repo().join("tests/fixtures/prompts")).expect("fixtures").flatten() {
        std::fs::copy(entry.path(), prompts.path().join(entry.file_name())).expect("copy");
    }
    let world = World::new(&fake).set(&format!("author.prompts_dir={}", prompts.path().display()));
    world.run(&["author"]).success();
    let first = fake.counters().lines_in_batches;
    let path = prompts.path().join("reasoning.md");
    let text = std::fs::read_to_string(&path).expect("template");
    std::fs::write(&path, format!("{text}\nBe precise.")).expect("edit");
    world.run(&["author"]).success();
    let second = fake.counters().lines_in_batches;
    for (id, n) in &second {
        let expected = first.get(id).copied().unwrap_or(0) + usize::from(id.starts_with("author/reasoning/"));
        assert_eq!(*n, expected, "{id}");
    }
}

#[test]
fn the_file_backend_exports_requests_and_imports_another_engines_output() {
    let world = World::with_url("https://unused.example/v1".into()).set("api.provider=file");
    world.run(&["author"]).success().stderr_has("--import");
    let export_dir = world.out().join("export");
    let responder = good_responder();
    let mut output = String::new();
    for file in all_files(&export_dir) {
        for line in read_jsonl(&file) {
            let id = line["custom_id"].as_str().expect("custom_id");
            let FakeReply::Content(content) = responder(id, &line["body"]) else { unreachable!() };
            output.push_str(&serde_json::json!({"id": "x", "custom_id": id, "response": {"status_code": 200, "body": {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}}, "error": null}).to_string());
            output.push('\n');
        }
    }
    let results = world.dir.path().join("results.jsonl");
    std::fs::write(&results, output).expect("write results");
    world.run(&["author", "--import", results.to_str().expect("utf-8 path")]).success();
    assert!(count_by_category(&world.read_jsonl("authored.jsonl")).values().all(|n| *n >= 4));
}

// ---------------------------------------------------------------------------------------------
// Configuration and usage errors
// ---------------------------------------------------------------------------------------------

#[test]
fn config_errors_exit_2_naming_the_key_before_any_request() {
    let fake = FakeApi::start(good_responder());
    let cases: [(&str, &str); 6] = [
        ("api.bogus=1", "bogus"),
        ("release.per_category=0", "release.per_category"),
        ("author.temperature=-1", "author.temperature"),
        ("categories.reasoning.T=\"hot\"", "T"),
        ("categories.made_up.c=0.1", "made_up"),
        ("api.base_url=http://10.1.2.3/v1", "https://"),
    ];
    for (set, needle) in cases {
        let world = World::new(&fake).set(set);
        world.run(&["author"]).code(2).stderr_has(needle);
    }
    let world = World::new(&fake).set("api.api_key_env=SASEVAL_NO_SUCH_KEY");
    world.run(&["author"]).code(2).stderr_has("SASEVAL_NO_SUCH_KEY");
    assert_eq!(fake.counters().http_requests, 0);
}

#[test]
fn template_with_unknown_placeholder_is_exit_2_naming_the_file() {
    let prompts = tempfile::tempdir().expect("temp dir");
    for entry in std::fs::read_dir(repo().join("tests/fixtures/prompts")).expect("fixtures").flatten() {
        std::fs::copy(entry.path(), prompts.path().join(entry.file_name())).expect("copy");
    }
    std::fs::write(prompts.path().join("memory_recall.md"), "{{count}} {{domain}} {{colour}}").expect("write");
    let world = World::with_url("http://127.0.0.1:9/v1".into()).set(&format!("author.prompts_dir={}", prompts.path().display()));
    world.run(&["author"]).code(2).stderr_has("memory_recall.md").stderr_has("{{colour}}");
}

#[test]
fn the_cost_guard_refuses_before_submitting() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake).set("author.max_cost_usd=0.0001");
    world.run(&["author"]).code(2).stderr_has("author.max_cost_usd");
    let world = World::new(&fake).set("api.max_requests_per_job=3");
    world.run(&["author"]).code(2).stderr_has("api.max_requests_per_job");
    assert_eq!(fake.counters().uploads, 0);
}

#[test]
fn a_second_process_on_the_same_out_dir_is_refused() {
    let world = World::with_url("http://127.0.0.1:9/v1".into());
    std::fs::create_dir_all(world.out()).expect("out dir");
    std::fs::write(world.out().join(".saseval.lock"), "1").expect("lock");
    world.run(&["author"]).code(1).stderr_has("pid 1");
}

#[test]
fn an_out_dir_that_is_a_file_is_a_usage_error() {
    let world = World::with_url("http://127.0.0.1:9/v1".into());
    std::fs::write(world.out(), "not a folder").expect("file");
    world.run(&["author"]).code(2).stderr_has("not a folder");
}
