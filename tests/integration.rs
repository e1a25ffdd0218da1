//! The one integration-test binary: drives the real `saseval-gen` binary through the Contract
//! (CLI, config keys, files in the out dir, exit codes) against a fake Batch API on loopback.

use saseval_testkit::fake_api::{
    ErrorsShape, FakeApi, FakeReply, Fault, ListStyle, Responder, Route,
};
use saseval_testkit::replies::{self, VerifierStyle};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

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
    user.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
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
            let count = template_field(body, "count")
                .and_then(|c| c.parse().ok())
                .unwrap_or(1);
            let domain = template_field(body, "domain").unwrap_or("cloud/DevOps");
            return FakeReply::Content(replies::author_reply(
                category,
                domain,
                count,
                round * 1000 + index,
            ));
        }
        let prompt = body
            .pointer("/messages/0/content")
            .and_then(Value::as_str)
            .and_then(|m| m.strip_prefix("verify:\n"))
            .unwrap_or("");
        FakeReply::Content(replies::verifier_reply(
            prompt.trim_end(),
            VerifierStyle::Correct,
        ))
    })
}

/// One test's world: a temp dir with the out dir, and the command line that reaches the fake.
struct World {
    dir: tempfile::TempDir,
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
            format!(
                "author.prompts_dir={}",
                repo().join("tests/fixtures/prompts").display()
            ),
            "author.extra_body={}".into(),
        ]
        .into_iter()
        .collect();
        World {
            dir: tempfile::tempdir().expect("temp dir"),
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
        cmd.env("SASEVAL_TEST_KEY", KEY)
            .env_remove("SASEVAL_CRASH_AFTER")
            .env_remove("RUST_LOG");
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
        assert_eq!(
            self.code,
            Some(0),
            "expected success\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    fn code(&self, code: i32) -> &Run {
        assert_eq!(
            self.code,
            Some(code),
            "expected exit {code}\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    fn stderr_has(&self, needle: &str) -> &Run {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}:\n{}",
            self.stderr
        );
        self
    }
}

fn count_by_category(items: &[Value]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for item in items {
        *counts
            .entry(item["category"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
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
        assert!(
            counts.get(category).copied().unwrap_or(0) >= 4,
            "{category}: {counts:?}"
        );
    }
    let ids: std::collections::BTreeSet<_> = items
        .iter()
        .map(|i| i["id"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(ids.len(), items.len(), "item ids are unique");
    let before = fake.counters();
    assert!(
        before.lines_in_batches.values().all(|n| *n == 1),
        "no request line sent twice"
    );
    assert_eq!(before.unauthorized, 0);
    world.run(&["author"]).success();
    assert_eq!(
        fake.counters().http_requests,
        before.http_requests,
        "a finished re-run makes no HTTP request"
    );
}

#[test]
fn rate_limit_with_retry_after_is_honoured() {
    let fake = FakeApi::start(good_responder());
    fake.push_fault(Fault::RateLimit {
        route: Route::Upload,
        times: 1,
        retry_after: Some(1),
    });
    fake.push_fault(Fault::RateLimit {
        route: Route::GetBatch,
        times: 2,
        retry_after: None,
    });
    let world = World::new(&fake);
    let started = std::time::Instant::now();
    world.run(&["author"]).success();
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(1),
        "retry-after: 1 was not waited for"
    );
    assert!(fake.counters().lines_in_batches.values().all(|n| *n == 1));
}

#[test]
fn server_error_bursts_and_connection_resets_are_retried() {
    let fake = FakeApi::start(good_responder());
    for status in [500, 502, 503] {
        fake.push_fault(Fault::ServerError {
            route: Route::GetBatch,
            status,
            times: 1,
        });
    }
    fake.push_fault(Fault::ResetConnection {
        route: Route::Upload,
        times: 1,
    });
    fake.push_fault(Fault::ResetConnection {
        route: Route::Download,
        times: 1,
    });
    fake.push_fault(Fault::TruncatedDownload { times: 1 });
    let world = World::new(&fake);
    world.run(&["author"]).success();
    let counters = fake.counters();
    assert!(
        counters.lines_in_batches.values().all(|n| *n == 1),
        "no request line sent twice"
    );
    assert!(
        counters.faults_fired >= 6,
        "faults fired: {}",
        counters.faults_fired
    );
    assert!(!world.read_jsonl("authored.jsonl").is_empty());
}

#[test]
fn an_expired_batch_keeps_its_done_half_and_resubmits_only_the_rest() {
    let fake = FakeApi::start(good_responder());
    fake.push_fault(Fault::ExpireNextBatch { completed: 20 });
    let world = World::new(&fake).set("api.max_requests_per_batch=1000");
    world.run(&["author"]).success();
    let counters = fake.counters();
    let twice: Vec<_> = counters
        .lines_in_batches
        .iter()
        .filter(|(_, n)| **n == 2)
        .collect();
    let total = counters.lines_in_batches.len();
    assert_eq!(
        twice.len() + 20,
        total,
        "only the unserved lines went into a second batch"
    );
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
        assert_eq!(
            fake.counters().batches_created,
            created,
            "no new batch without --retry-failed"
        );
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
    assert!(rejects
        .iter()
        .any(|r| r["custom_id"] == "author/technical_code/r0/0001"
            && r["reason"] == "request_failed"
            && r["detail"]
                .as_str()
                .unwrap_or("")
                .contains("json_validate_failed")));
    let before = fake.counters().http_requests;
    world.run(&["author"]).success();
    assert_eq!(
        fake.counters().http_requests,
        before,
        "a failed request's final outcome is cached"
    );
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
        assert_ne!(
            crashed.code,
            Some(0),
            "{step}: the hook did not fire\n{}",
            crashed.stderr
        );
        assert!(
            crashed
                .stderr
                .contains(&format!("crashing after step `{step}`")),
            "{step}: {}",
            crashed.stderr
        );
        world.run(&["author"]).success();
        let counters = fake.counters();
        assert!(
            counters.lines_in_batches.values().all(|n| *n == 1),
            "{step}: a line was sent twice: {:?}",
            counters.lines_in_batches.values().max()
        );
        assert_eq!(
            counters.batches_created, 1,
            "{step}: a second batch was created"
        );
        let items = world.read_jsonl("authored.jsonl");
        assert!(
            count_by_category(&items).len() == 10,
            "{step}: authoring incomplete"
        );
    }
}

#[test]
fn the_api_key_never_reaches_a_file_or_the_terminal() {
    let fake = FakeApi::start(good_responder());
    fake.set_expected_key(KEY);
    let world = World::new(&fake);
    let run = world.run_env(&["run"], &[("RUST_LOG", "trace")]);
    run.success();
    assert!(
        !run.stdout.contains(KEY) && !run.stderr.contains(KEY),
        "the key was printed"
    );
    for file in all_files(&world.out()) {
        let bytes = std::fs::read(&file).expect("readable");
        let found = bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes());
        assert!(!found, "the key is in {}", file.display());
    }
    assert_eq!(
        fake.counters().unauthorized,
        0,
        "every request carried the key"
    );
}

#[test]
fn no_wait_submits_and_exits_then_a_rerun_collects() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake);
    world
        .run(&["author", "--no-wait"])
        .success()
        .stderr_has("--no-wait");
    assert!(
        !world.out().join("authored.jsonl").exists()
            || world.read_jsonl("authored.jsonl").is_empty()
    );
    assert_eq!(fake.counters().polls, 0);
    let status = world.run(&["status"]);
    status.success();
    assert!(
        status.stdout.contains("created") && status.stdout.contains("batch_"),
        "{}",
        status.stdout
    );
    world.run(&["author"]).success();
    assert_eq!(
        count_by_category(&world.read_jsonl("authored.jsonl")).len(),
        10
    );
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
    assert_eq!(
        counters
            .lines_in_batches
            .values()
            .filter(|n| **n == 1)
            .count(),
        10
    );
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
    assert!(
        status.stdout.contains("finished"),
        "the batch stays journaled for a later re-run: {}",
        status.stdout
    );
}

#[test]
fn list_paging_in_openai_style_finds_a_batch_after_a_crash() {
    let fake = FakeApi::start(good_responder());
    fake.set_list_style(ListStyle::OpenAi);
    let world = World::new(&fake).set("api.max_requests_per_batch=5");
    let crashed = world.run_env(
        &["author"],
        &[("SASEVAL_CRASH_AFTER", "created-unjournaled:4")],
    );
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
    for entry in std::fs::read_dir(repo().join("tests/fixtures/prompts"))
        .expect("fixtures")
        .flatten()
    {
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
        let expected =
            first.get(id).copied().unwrap_or(0) + usize::from(id.starts_with("author/reasoning/"));
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
            let FakeReply::Content(content) = responder(id, &line["body"]) else {
                unreachable!()
            };
            output.push_str(&serde_json::json!({"id": "x", "custom_id": id, "response": {"status_code": 200, "body": {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}}, "error": null}).to_string());
            output.push('\n');
        }
    }
    let results = world.dir.path().join("results.jsonl");
    std::fs::write(&results, output).expect("write results");
    world
        .run(&["author", "--import", results.to_str().expect("utf-8 path")])
        .success();
    assert!(count_by_category(&world.read_jsonl("authored.jsonl"))
        .values()
        .all(|n| *n >= 4));
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
    world
        .run(&["author"])
        .code(2)
        .stderr_has("SASEVAL_NO_SUCH_KEY");
    assert_eq!(fake.counters().http_requests, 0);
}

#[test]
fn template_with_unknown_placeholder_is_exit_2_naming_the_file() {
    let prompts = tempfile::tempdir().expect("temp dir");
    for entry in std::fs::read_dir(repo().join("tests/fixtures/prompts"))
        .expect("fixtures")
        .flatten()
    {
        std::fs::copy(entry.path(), prompts.path().join(entry.file_name())).expect("copy");
    }
    std::fs::write(
        prompts.path().join("memory_recall.md"),
        "{{count}} {{domain}} {{colour}}",
    )
    .expect("write");
    let world = World::with_url("http://127.0.0.1:9/v1".into())
        .set(&format!("author.prompts_dir={}", prompts.path().display()));
    world
        .run(&["author"])
        .code(2)
        .stderr_has("memory_recall.md")
        .stderr_has("{{colour}}");
}

#[test]
fn the_cost_guard_refuses_before_submitting() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake).set("author.max_cost_usd=0.0001");
    world
        .run(&["author"])
        .code(2)
        .stderr_has("author.max_cost_usd");
    let world = World::new(&fake).set("api.max_requests_per_job=3");
    world
        .run(&["author"])
        .code(2)
        .stderr_has("api.max_requests_per_job");
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

#[test]
fn a_read_only_out_dir_is_a_usage_error_before_any_request() {
    use std::os::unix::fs::PermissionsExt;
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake);
    let out = world.out();
    std::fs::create_dir_all(&out).expect("out dir");
    std::fs::set_permissions(world.dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let mut cmd = world.command(&["author"]);
    let root_ignores_modes = std::fs::write(out.join("probe"), b"").is_ok();
    if root_ignores_modes {
        let _ = std::fs::remove_file(out.join("probe"));
        cmd = as_unprivileged_user(&cmd);
    }
    Run::of(cmd.output().expect("the binary runs"))
        .code(2)
        .stderr_has("is not writable")
        .stderr_has("--out");
    assert_eq!(fake.counters().http_requests, 0, "nothing was sent");
}

/// `cmd` run through `setpriv` as the unprivileged user nobody, for whom file modes apply.
fn as_unprivileged_user(cmd: &Command) -> Command {
    let available = Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        available,
        "running as root, the read-only test needs setpriv (util-linux)"
    );
    let mut wrapped = Command::new("setpriv");
    wrapped
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    wrapped
}

// ---------------------------------------------------------------------------------------------
// Author validation, repair and assemble
// ---------------------------------------------------------------------------------------------

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
    world.run(&["author"]).success();
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
    let authored = world.read_jsonl("authored.jsonl");
    assert!(
        count_by_category(&authored).values().all(|n| *n >= 4),
        "top-ups refill what the defects cost"
    );
    let planted_ids: Vec<&str> = planted.iter().map(|(id, _)| id.as_str()).collect();
    assert!(authored
        .iter()
        .all(|i| !planted_ids.contains(&i["id"].as_str().unwrap_or(""))));
}

/// The responder for repair tests: reasoning r0/0000 carries the wrong-key fixture; verifier
/// `v-b` misbehaves on chosen bloated_reasoning items.
fn repair_responder() -> Responder {
    let inner = good_responder();
    Arc::new(move |custom_id: &str, body: &Value| {
        if custom_id == "author/reasoning/r0/0000" {
            return FakeReply::Content(replies::wrong_key_reasoning_reply("fintech & payments", 0));
        }
        if let Some(rest) = custom_id.strip_prefix("repair/") {
            let prompt = body
                .pointer("/messages/0/content")
                .and_then(Value::as_str)
                .and_then(|m| m.strip_prefix("verify:\n"))
                .unwrap_or("")
                .trim_end();
            let style = match rest {
                "bloated_reasoning.r0.0000.0/v-b" => VerifierStyle::WrongBy(3.0),
                "bloated_reasoning.r0.0000.1/v-b" => VerifierStyle::Unparseable,
                "bloated_reasoning.r0.0000.2/v-b" => VerifierStyle::ExprMismatch,
                _ => VerifierStyle::Correct,
            };
            return FakeReply::Content(replies::verifier_reply(prompt, style));
        }
        inner(custom_id, body)
    })
}

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
            let answer = saseval_gen::numeric::format_value(item.true_answer);
            assert!(
                saseval_gen::grade::graded(&answer, &golds),
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

fn release_bytes(world: &World) -> BTreeMap<String, Vec<u8>> {
    [
        "saseval_v2_prompts.jsonl",
        "SHA256SUMS",
        "manifest.json",
        "README.md",
        "croissant.json",
    ]
    .into_iter()
    .map(|name| {
        (
            name.to_string(),
            std::fs::read(world.out().join(name)).unwrap_or_else(|e| panic!("{name}: {e}")),
        )
    })
    .collect()
}

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

// ---------------------------------------------------------------------------------------------
// The quality gate: structure by meaning, junk refused, yield shown
// ---------------------------------------------------------------------------------------------

/// The prompts of the items `reply` holds at the `planted` positions.
fn planted_prompts(reply: &str, planted: &[(usize, &'static str)]) -> Vec<String> {
    let items = saseval_gen::reply::parse_items(reply)
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
    assert!(
        run.stdout.contains("author: round 0 yield:"),
        "{}",
        run.stdout
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
    let prompts = tempfile::tempdir().expect("temp dir");
    for entry in std::fs::read_dir(repo().join("tests/fixtures/prompts")).expect("fixtures") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("file name");
        std::fs::copy(&path, prompts.path().join(name)).expect("copy");
    }
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
    let inner = good_responder();
    let responder: Responder = Arc::new(move |custom_id: &str, body: &Value| {
        if let Some(("conversational", round, index)) = author_slot(custom_id) {
            let count = template_field(body, "count")
                .and_then(|c| c.parse().ok())
                .unwrap_or(1);
            return FakeReply::Content(replies::author_reply_with_labels(
                "conversational",
                "telecom",
                count,
                round * 1000 + index,
                ("Customer:", "Customer:"),
            ));
        }
        inner(custom_id, body)
    });
    let fake = FakeApi::start(responder);
    let world = World::new(&fake)
        .set("author.max_rounds=2")
        .set("assemble.allow_short=true");
    let run = world.run(&["run"]);
    run.success();
    for expected in [
        "author: round 0 yield:",
        "author: round 1 yield:",
        "author: conversational yielded 0 of the 6 it needed in round 0; most rejects were turn_structure",
        "only one speaker (Customer)",
        "    e.g. ",
        "fix prompts/conversational.md",
    ] {
        assert!(run.stdout.contains(expected), "{expected:?} in:\n{}", run.stdout);
    }
    assert!(
        !run.stdout.contains("author: simple_factual yielded"),
        "a category that fills gets no hint:\n{}",
        run.stdout
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
fn exclude_drops_near_duplicates_of_an_earlier_release() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake).set("assemble.allow_short=true");
    world.run(&["author"]).success();
    world.run(&["repair"]).success();
    let authored = world.read_jsonl("authored.jsonl");
    let victim = authored
        .iter()
        .find(|i| i["category"] == "technical_code")
        .expect("an item");
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
    run.code(1)
        .stderr_has("conversational")
        .stderr_has("no_json");
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
    for (name, bytes) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        let run = world.run(&["verify", path.to_str().expect("utf-8")]);
        run.code(1);
        assert!(run.stdout.contains("problem"), "{name}: {}", run.stdout);
    }
}

#[test]
fn the_readme_documents_every_reject_code() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let missing: Vec<String> = saseval_gen::validate::Reason::all()
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

#[test]
fn a_run_crashed_in_author_or_repair_ends_byte_identical_to_an_uninterrupted_one() {
    let fake = FakeApi::start(repair_responder());
    let clean = World::new(&fake).set("repair.models=[\"v-a\", \"v-b\"]");
    clean.run(&["run"]).success();
    let expected = release_bytes(&clean);
    // The author job's batch is the first one created, the repair job's the second.
    for step in [
        "uploaded:1",
        "created-unjournaled:1",
        "finished:1",
        "uploaded:2",
        "created-unjournaled:2",
        "downloaded:2",
        "collected:2",
    ] {
        let fake = FakeApi::start(repair_responder());
        let world = World::new(&fake).set("repair.models=[\"v-a\", \"v-b\"]");
        let crashed = world.run_env(&["run"], &[("SASEVAL_CRASH_AFTER", step)]);
        assert_ne!(crashed.code, Some(0), "{step}: the hook did not fire");
        let lines_before = fake.counters().lines_in_batches;
        world.run(&["run"]).success();
        let got = release_bytes(&world);
        let differing: Vec<&String> = expected
            .keys()
            .filter(|name| got.get(*name) != expected.get(*name))
            .collect();
        assert!(
            differing.is_empty(),
            "{step}: these release files differ from an uninterrupted run: {differing:?}"
        );
        let lines_after = fake.counters().lines_in_batches;
        let resent: Vec<_> = lines_after
            .iter()
            .filter(|(id, n)| lines_before.get(*id).is_some_and(|b| *n > b))
            .map(|(id, _)| id)
            .collect();
        assert!(
            resent.is_empty(),
            "{step}: lines sent again after the crash: {resent:?}"
        );
    }
}

#[test]
fn a_wrong_key_stops_with_the_servers_message_and_exit_2() {
    let fake = FakeApi::start(good_responder());
    fake.set_expected_key("sk-the-right-one");
    let world = World::new(&fake);
    world
        .run(&["author"])
        .code(2)
        .stderr_has("401")
        .stderr_has("api.api_key_env");
    assert_eq!(fake.counters().batches_created, 0);
}

#[test]
fn a_completed_batch_without_output_file_resubmits_only_unserved_lines() {
    let fake = FakeApi::start(good_responder());
    fake.push_fault(Fault::NullOutputFileId);
    let world = World::new(&fake);
    world.run(&["author"]).success();
    let counters = fake.counters();
    assert_eq!(
        counters.batches_created, 2,
        "the 5xx lines of the error file were resubmitted once"
    );
    assert!(counters.lines_in_batches.values().all(|n| *n == 2));
    assert_eq!(
        count_by_category(&world.read_jsonl("authored.jsonl")).len(),
        10
    );
}

#[test]
fn cancel_stops_a_mistaken_submission_and_a_rerun_keeps_what_completed() {
    let fake = FakeApi::start(good_responder());
    fake.set_steps_to_complete(50);
    let world = World::new(&fake);
    world.run(&["author", "--no-wait"]).success();
    let cancel = world.run(&["cancel"]);
    cancel.success();
    assert!(
        cancel.stdout.contains("cancelling") || cancel.stdout.contains("cancelled"),
        "{}",
        cancel.stdout
    );
    assert_eq!(fake.counters().cancels, 1);
    world.run(&["author"]).code(1).stderr_has("cancelled");
}

#[test]
fn a_damaged_journal_is_reported_with_how_to_recover() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake);
    world.run(&["author", "--no-wait"]).success();
    let journal = world.out().join("state/journal/author-r0.json");
    let text = std::fs::read_to_string(&journal).expect("journal");
    std::fs::write(&journal, &text[..text.len() / 2]).expect("truncate");
    world
        .run(&["author"])
        .code(1)
        .stderr_has("author-r0.json")
        .stderr_has("fingerprint");
    let created = fake.counters().batches_created;
    std::fs::rename(&journal, journal.with_extension("damaged")).expect("move aside");
    world.run(&["author"]).success();
    assert_eq!(
        fake.counters().batches_created,
        created,
        "the batch is found by its fingerprint, not created again"
    );
}

// ---------------------------------------------------------------------------------------------
// The local backend on the real bundled model (needs SASEVAL_TEST_MODEL; scripts/test.sh sets it)
// ---------------------------------------------------------------------------------------------

#[test]
fn the_local_backend_runs_the_real_model_resumes_after_a_crash_and_never_recomputes() {
    let Ok(model) = std::env::var("SASEVAL_TEST_MODEL") else {
        eprintln!(
            "skipping the local-model job: SASEVAL_TEST_MODEL is not set (scripts/test.sh sets it)"
        );
        return;
    };
    let mut world = World::with_url("https://unused.example/v1".into())
        .set("api.provider=local")
        .set(&format!("local.model_path={model}"))
        .set("release.per_category=1")
        .set("author.oversample=1.0")
        .set("author.max_rounds=1")
        .set("author.response_format=\"json_schema\"")
        .set("author.max_tokens=400")
        .set("local.threads=1");
    for category in CATEGORIES {
        world = world
            .set(&format!("categories.{category}.items_per_request=1"))
            .set(&format!("categories.{category}.max_tokens=400"));
    }
    let crashed = world.run_env(&["author"], &[("SASEVAL_CRASH_AFTER", "local-result:3")]);
    assert_ne!(
        crashed.code,
        Some(0),
        "the crash hook fired: {}",
        crashed.stderr
    );
    let cache = world.out().join("state/cache.jsonl");
    assert_eq!(
        std::fs::read_to_string(&cache)
            .expect("cache")
            .lines()
            .count(),
        3,
        "three results were stored before the crash"
    );

    world.run(&["author"]).success();
    let entries: Vec<Value> = read_jsonl(&cache);
    let ids: std::collections::BTreeSet<&str> = entries
        .iter()
        .filter_map(|e| e["entry"]["custom_id"].as_str())
        .collect();
    assert_eq!(
        (entries.len(), ids.len()),
        (10, 10),
        "each request computed exactly once across the crash"
    );
    for entry in &entries {
        let body = &entry["entry"]["outcome"]["ok"];
        let content = body
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .expect("a completion");
        let finish = body
            .pointer("/choices/0/finish_reason")
            .and_then(Value::as_str);
        if finish == Some("stop") {
            let parsed: Result<Value, _> = serde_json::from_str(content);
            assert!(
                parsed.is_ok_and(|v| v["items"].is_array()),
                "the grammar yields schema JSON: {content}"
            );
        }
    }
    let rejects = world.read_jsonl("rejects.jsonl");
    for reason in [
        "no_json",
        "only_thinking",
        "no_items",
        "empty_reply",
        "no_content",
    ] {
        assert!(
            rejects.iter().all(|r| r["reason"] != reason),
            "a reply failed to parse: {reason}"
        );
    }
    let before = std::fs::metadata(&cache).expect("cache").len();
    let rerun = world.run(&["author"]);
    rerun.success();
    assert_eq!(
        std::fs::metadata(&cache).expect("cache").len(),
        before,
        "a re-run computes nothing"
    );
    assert!(
        !rerun.stderr.contains("computed locally"),
        "{}",
        rerun.stderr
    );
}

#[test]
fn an_https_endpoint_with_an_untrusted_certificate_is_refused_at_once() {
    for (tool, arg) in [("openssl", "version"), ("python3", "--version")] {
        let found = Command::new(tool)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(found, "the TLS test needs {tool}: run scripts/setup.sh");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (cert, key, log, connections) = (
        dir.path().join("cert.pem"),
        dir.path().join("key.pem"),
        dir.path().join("requests.log"),
        dir.path().join("connections.log"),
    );
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
        ])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let server = r#"
import http.server, ssl, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self):
        open(sys.argv[3], "a").write(self.path + "\n")
        self.send_response(200); self.end_headers(); self.wfile.write(b"{}")
    do_GET = do_POST = answer
    def log_message(self, *args): pass
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
class Server(http.server.HTTPServer):
    def get_request(self):
        sock, addr = self.socket.accept()
        open(sys.argv[4], "a").write("connection\n")
        return context.wrap_socket(sock, server_side=True), addr
server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;
    let mut child = Command::new("python3")
        .args(["-c", server])
        .arg(&cert)
        .arg(&key)
        .arg(&log)
        .arg(&connections)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("python3 starts");
    let mut port = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
        &mut port,
    )
    .expect("port");
    let world =
        World::with_url(format!("https://127.0.0.1:{}/v1", port.trim())).set("api.max_retries=5");
    let run = world.run(&["author"]);
    let _ = child.kill();
    let _ = child.wait();
    run.code(1)
        .stderr_has("certificate is not trusted")
        .stderr_has("api.base_url");
    assert!(
        !log.exists(),
        "no request reached a server whose certificate is not trusted"
    );
    let attempts = std::fs::read_to_string(&connections).unwrap_or_default();
    assert_eq!(
        attempts.lines().count(),
        1,
        "a certificate error fails at once instead of being retried"
    );
}

#[test]
fn a_batch_stuck_in_validating_past_its_window_ends_with_a_clear_message() {
    let fake = FakeApi::start(good_responder());
    fake.set_clock(1_000_000_000);
    fake.push_fault(Fault::StuckValidating);
    let world = World::new(&fake);
    world
        .run(&["author"])
        .code(1)
        .stderr_has("after its completion window ended")
        .stderr_has("saseval-gen cancel");
    world.run(&["cancel"]).success();
    assert_eq!(fake.counters().cancels, 1);
}

// ---------------------------------------------------------------------------------------------
// Issue 16, items 6–9: the release as the Hub's `datasets`, `mlcroissant` and a browser read it.
// Self-contained: every helper below is used only by this section.
// ---------------------------------------------------------------------------------------------

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
        !dom.contains("Audit panel pass rates"),
        "no audit ran, so the report has no audit section"
    );
    let flagged: Vec<Value> = world
        .read_jsonl("rejects.jsonl")
        .into_iter()
        .filter(|r| r["reason"] == "needs_review")
        .collect();
    assert_eq!(flagged.len(), 4);
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

// ---------------------------------------------------------------------------------------------
// Round 2 (issue 13): a hostile server, damaged state and absurd config must not write outside
// the out dir, bill twice, leak the key, panic, hang or lose a paid response.
// ---------------------------------------------------------------------------------------------

use saseval_testkit::fake_api::{BadLine, LostReply};

impl World {
    /// Adds a `--set` for the runs from now on (a later `--set` of the same key wins).
    fn also(&mut self, kv: &str) {
        self.sets.push(kv.to_string());
    }

    /// Runs the binary, killing it after `secs` seconds: a test of "never hangs" must not hang.
    fn run_within(&self, args: &[&str], env: &[(&str, &str)], secs: u64) -> Run {
        let mut cmd = self.command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        run_killed_after(cmd, secs)
    }
}

/// Runs `cmd`, killing it after `secs` seconds (then `code` is `None` and stderr says so).
fn run_killed_after(mut cmd: Command, secs: u64) -> Run {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stderr = err.join().unwrap_or_default();
    if status.is_none() {
        stderr.push_str(&format!("\n[test: killed after {secs} s]"));
    }
    Run {
        code: status.and_then(|s| s.code()),
        stdout: out.join().unwrap_or_default(),
        stderr,
    }
}

/// Every file under `dir` outside `skip`, with its bytes.
fn files_outside(dir: &Path, skip: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    all_files(dir)
        .into_iter()
        .filter(|f| !f.starts_with(skip))
        .map(|f| {
            let bytes = std::fs::read(&f).unwrap_or_default();
            (f, bytes)
        })
        .collect()
}

/// Does what an error message tells the user between backticks, `mv SOURCE DEST`, word by word.
fn follow_mv(stderr: &str) {
    let start = stderr
        .find("`mv ")
        .unwrap_or_else(|| panic!("no `mv …` in:\n{stderr}"));
    let rest = &stderr[start + 4..];
    let command = &rest[..rest.find('`').expect("closing backtick")];
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(
        words.len(),
        2,
        "mv takes a source and a destination: {command}"
    );
    std::fs::rename(words[0], words[1]).unwrap_or_else(|e| panic!("following `mv {command}`: {e}"));
}

/// `good_responder`, except that one technical_code request fails, so batches have error files.
fn responder_with_one_failure() -> Responder {
    let inner = good_responder();
    Arc::new(move |custom_id: &str, body: &Value| {
        if custom_id == "author/technical_code/r0/0001" {
            return FakeReply::Error {
                status: 400,
                body: serde_json::json!({"error": {"message": "Failed to generate JSON", "type": "invalid_request_error", "code": "json_validate_failed"}}),
            };
        }
        inner(custom_id, body)
    })
}

fn key_in(bytes: &[u8]) -> bool {
    bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes())
}

/// The bar every bad input is held to (the README's "bad input" table): each run ends with an
/// exit code of the Contract and no panic or abort; the key is in no output and no file of the
/// out dir; no file outside the out dir changes; and, where the run ends well, every request
/// line a server batched has its outcome in the cache (no paid response lost).
struct Bar {
    dir: PathBuf,
    out: PathBuf,
    before: BTreeMap<PathBuf, Vec<u8>>,
}

impl Bar {
    /// Takes the snapshot of everything beside the out dir, after the test's own setup.
    fn before(world: &World) -> Bar {
        Bar {
            dir: world.dir.path().to_path_buf(),
            out: world.out(),
            before: files_outside(world.dir.path(), &world.out()),
        }
    }

    /// Holds one run to the bar and hands it back.
    fn ran(&self, run: Run) -> Run {
        assert!(
            matches!(run.code, Some(0..=2)) && !run.stderr.contains("panicked"),
            "not an exit code of the Contract, or a panic:\n{}",
            run.stderr
        );
        assert!(
            !key_in(run.stdout.as_bytes()) && !key_in(run.stderr.as_bytes()),
            "the key was printed:\n{}",
            run.stderr
        );
        run
    }

    /// Holds the out dir and its surroundings to the bar once the runs are over.
    fn after(&self) {
        assert_eq!(
            files_outside(&self.dir, &self.out),
            self.before,
            "a file outside the out dir changed"
        );
        if self.out.is_dir() {
            for file in all_files(&self.out) {
                let bytes = std::fs::read(&file).unwrap_or_default();
                assert!(!key_in(&bytes), "the key is in {}", file.display());
            }
        }
    }
}

impl Bar {
    /// Every request line `fake` batched has its outcome in the cache.
    fn nothing_lost(&self, fake: &FakeApi) {
        let cache = self.out.join("state/cache.jsonl");
        let cached: std::collections::BTreeSet<String> = read_jsonl(&cache)
            .iter()
            .filter_map(|e| e["entry"]["custom_id"].as_str().map(str::to_string))
            .collect();
        for custom_id in fake.counters().lines_in_batches.keys() {
            assert!(
                cached.contains(custom_id),
                "{custom_id} was batched and its outcome is not cached"
            );
        }
    }
}

#[test]
fn server_given_file_ids_never_write_outside_the_out_dir() {
    let probe = tempfile::tempdir().expect("temp dir");
    let dir = probe.path().display().to_string();
    let cases = [
        (
            "../../../victim".to_string(),
            "../../../victim-errors".to_string(),
        ),
        (format!("{dir}/abs-victim"), format!("{dir}/abs-errors")),
        ("../../../beside".to_string(), "../../authored".to_string()),
    ];
    for (output, error) in cases {
        let fake = FakeApi::start(responder_with_one_failure());
        fake.push_fault(Fault::FileIds {
            output: output.clone(),
            error: error.clone(),
        });
        let world = World::new(&fake);
        std::fs::create_dir_all(world.out()).expect("out dir");
        for name in ["victim.jsonl", "beside.jsonl", "abs-victim.jsonl"] {
            std::fs::write(world.dir.path().join(name), "precious\n").expect("write");
        }
        let bar = Bar::before(&world);
        let probe_before = files_outside(probe.path(), &world.out());
        bar.ran(world.run(&["author"])).success();
        bar.after();
        bar.nothing_lost(&fake);
        assert_eq!(
            files_outside(probe.path(), &world.out()),
            probe_before,
            "ids {output} / {error}: a file was written at an absolute path"
        );
        assert!(fake.counters().lines_in_batches.values().all(|n| *n == 1));
        assert_eq!(
            count_by_category(&world.read_jsonl("authored.jsonl")).len(),
            10,
            "ids {output} / {error}: the results were still collected"
        );
    }
}

#[test]
fn state_entries_that_are_symlinks_out_of_the_out_dir_are_refused() {
    for entry in ["state/cache.jsonl", "state/journal", "state/downloads"] {
        let fake = FakeApi::start(good_responder());
        let mut world = World::new(&fake).set("release.per_category=2");
        world.run(&["author"]).success();
        let inside = world.out().join(entry);
        let outside = world.dir.path().join("elsewhere");
        std::fs::rename(&inside, &outside).expect("move out");
        std::os::unix::fs::symlink(&outside, &inside).expect("symlink");
        let before = if outside.is_dir() {
            files_outside(&outside, &world.out())
        } else {
            BTreeMap::from([(outside.clone(), std::fs::read(&outside).expect("read"))])
        };
        world.also("release.per_category=4");
        let bar = Bar::before(&world);
        bar.ran(world.run(&["author"]))
            .code(2)
            .stderr_has("symbolic link")
            .stderr_has(entry);
        bar.after();
        let after = if outside.is_dir() {
            files_outside(&outside, &world.out())
        } else {
            BTreeMap::from([(outside.clone(), std::fs::read(&outside).expect("read"))])
        };
        assert_eq!(after, before, "{entry}: written through the symlink");
    }
}

#[test]
fn a_server_that_echoes_the_key_never_gets_it_into_a_file_or_the_terminal() {
    type Scenario = (&'static str, Vec<Fault>, i32);
    let scenarios: Vec<Scenario> = vec![
        (
            "400 and 500 bodies and output lines",
            vec![
                Fault::EchoKeyInError {
                    route: Route::ListFiles,
                    status: 400,
                    times: 1,
                },
                Fault::EchoKeyInError {
                    route: Route::GetBatch,
                    status: 500,
                    times: 2,
                },
                Fault::EchoKeyInOutput,
            ],
            0,
        ),
        (
            "a failed batch's errors",
            vec![Fault::FailNextBatchEchoingKey],
            1,
        ),
        (
            "the body of a refused create",
            vec![Fault::EchoKeyInError {
                route: Route::CreateBatch,
                status: 400,
                times: 1,
            }],
            1,
        ),
    ];
    for (what, faults, code) in scenarios {
        let fake = FakeApi::start(good_responder());
        fake.set_expected_key(KEY);
        let fault_count = faults.len();
        for fault in faults {
            fake.push_fault(fault);
        }
        let world = World::new(&fake);
        let bar = Bar::before(&world);
        let run = bar.ran(world.run_env(&["author"], &[("RUST_LOG", "debug")]));
        run.code(code);
        assert!(
            fake.counters().faults_fired >= fault_count,
            "{what}: the fake echoed the key"
        );
        bar.after();
        if code == 0 {
            bar.nothing_lost(&fake);
        }
        let redacted = run.stderr.contains("[redacted]")
            || all_files(&world.out())
                .iter()
                .any(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains("[redacted]")));
        assert!(redacted, "{what}: the echo is shown redacted");
    }
}

#[test]
fn absurd_numbers_credentials_in_the_url_and_bad_sets_are_exit_2_before_any_request() {
    let fake = FakeApi::start(good_responder());
    let local_creds = fake.base_url().replace("http://", "http://user:hunter2@");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["api.retry_initial_secs=1e300".into()],
            "api.retry_initial_secs",
        ),
        (
            vec!["api.poll_interval_secs=1e300".into()],
            "api.poll_interval_secs",
        ),
        (
            vec!["api.request_timeout_secs=1e300".into()],
            "api.request_timeout_secs",
        ),
        (
            vec!["release.per_category=1000000000000".into()],
            "release.per_category",
        ),
        (
            vec![
                "release.per_category=1000000000000000000".into(),
                "author.oversample=10".into(),
            ],
            "release.per_category",
        ),
        (vec!["repair.models=[\"\"]".into()], "repair.models"),
        (vec![format!("api.base_url={local_creds}")], "api.base_url"),
        (
            vec!["api.base_url=https://user:hunter2@api.example.com/v1".into()],
            "api.base_url",
        ),
        (
            vec!["api.base_url=http://user:hunter2@10.1.2.3/v1".into()],
            "api.base_url",
        ),
        (
            vec!["api.poll_interval_secs=0.o5".into()],
            "--set api.poll_interval_secs=0.o5",
        ),
    ];
    for (sets, needle) in cases {
        let mut world = World::new(&fake);
        for set in &sets {
            world.also(set);
        }
        let bar = Bar::before(&world);
        let run = bar.ran(world.run_within(&["run"], &[], 60));
        run.code(2).stderr_has(needle);
        assert!(!run.stderr.contains("hunter2"), "{sets:?}: {}", run.stderr);
        bar.after();
    }
    let world = World::new(&fake);
    let config = world.dir.path().join("latin1.toml");
    let mut bytes = std::fs::read(repo().join("pipeline.toml")).expect("config");
    bytes.insert(2, 0xE9);
    std::fs::write(&config, bytes).expect("write");
    let mut cmd = world.command(&["author"]);
    cmd.arg("--config").arg(&config);
    let bar = Bar::before(&world);
    bar.ran(Run::of(cmd.output().expect("runs")))
        .code(2)
        .stderr_has("UTF-8")
        .stderr_has("line 1, column 3");
    bar.after();
    assert_eq!(fake.counters().http_requests, 0, "nothing was sent");
}

#[test]
fn a_huge_release_is_refused_from_counts_before_any_request_is_built() {
    use std::os::unix::process::CommandExt;
    let fake = FakeApi::start(good_responder());
    for (sets, needle) in [
        (
            &["release.per_category=1000000"][..],
            "api.max_requests_per_job",
        ),
        (
            &[
                "release.per_category=1000000",
                "api.max_requests_per_job=10000000",
            ][..],
            "author.max_cost_usd",
        ),
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
            if args.contains(&"--dry-run") {
                run.success();
                assert!(
                    run.stdout.contains("a run would stop here") && run.stdout.contains(needle),
                    "the dry run shows the refusal: {}",
                    run.stdout
                );
            } else {
                run.code(2).stderr_has(needle).stderr_has("refusing");
            }
        }
    }
    assert_eq!(fake.counters().http_requests, 0);
}

#[test]
fn an_oversized_or_endless_template_is_exit_2_naming_the_file() {
    let prompts = tempfile::tempdir().expect("temp dir");
    for entry in std::fs::read_dir(repo().join("tests/fixtures/prompts"))
        .expect("fixtures")
        .flatten()
    {
        std::fs::copy(entry.path(), prompts.path().join(entry.file_name())).expect("copy");
    }
    let template = prompts.path().join("reasoning.md");
    let big = format!("{{{{count}}}} {{{{domain}}}} {}", "x".repeat(2 << 20));
    std::fs::write(&template, big).expect("write");
    let world = World::with_url("http://127.0.0.1:9/v1".into())
        .set(&format!("author.prompts_dir={}", prompts.path().display()));
    let bar = Bar::before(&world);
    bar.ran(world.run_within(&["author"], &[], 60))
        .code(2)
        .stderr_has("reasoning.md")
        .stderr_has("1 MB");
    std::fs::remove_file(&template).expect("remove");
    std::os::unix::fs::symlink("/dev/zero", &template).expect("symlink");
    bar.ran(world.run_within(&["author"], &[], 60))
        .code(2)
        .stderr_has("reasoning.md")
        .stderr_has("not a regular file");
    bar.after();
}

#[test]
fn a_lost_reply_to_an_upload_or_a_create_is_looked_up_before_any_retry() {
    let clean = FakeApi::start(good_responder());
    World::new(&clean).run(&["author"]).success();
    let calls = clean.counters().calls;
    for route in [Route::Upload, Route::CreateBatch] {
        let nth = calls
            .iter()
            .position(|c| *c == Some(route))
            .expect("the job makes the call")
            + 1;
        for how in LostReply::ALL {
            let fake = FakeApi::start(good_responder());
            fake.push_fault(Fault::LoseReply { nth, how });
            let world = World::new(&fake);
            let bar = Bar::before(&world);
            let run = bar.ran(world.run(&["author"]));
            run.success().stderr_has("reply was lost");
            bar.after();
            bar.nothing_lost(&fake);
            let counters = fake.counters();
            assert_eq!(
                (counters.uploads, counters.batches_created),
                (1, 1),
                "{route:?} {how:?}: uploaded or created twice"
            );
            assert!(counters.lines_in_batches.values().all(|n| *n == 1));
        }
    }
}

#[test]
fn a_lost_reply_at_any_http_call_of_a_run_ends_like_a_clean_run() {
    let fake = FakeApi::start(repair_responder());
    let clean = World::new(&fake).set("repair.models=[\"v-a\", \"v-b\"]");
    clean.run(&["run"]).success();
    let expected = release_bytes(&clean);
    let expected_counters = fake.counters();
    let calls = expected_counters.calls.len();
    assert!(calls >= 10, "a run makes its calls: {calls}");
    for nth in 1..=calls {
        for how in LostReply::ALL {
            let fake = FakeApi::start(repair_responder());
            fake.push_fault(Fault::LoseReply { nth, how });
            let world = World::new(&fake).set("repair.models=[\"v-a\", \"v-b\"]");
            let bar = Bar::before(&world);
            let run = bar.ran(world.run_within(&["run"], &[], 120));
            bar.after();
            assert_eq!(
                run.code,
                Some(0),
                "call {nth} ({:?}) {how:?}:\n{}",
                expected_counters.calls[nth - 1],
                run.stderr
            );
            let counters = fake.counters();
            assert!(
                counters.lines_in_batches.values().all(|n| *n == 1),
                "call {nth} {how:?}: a line was batched twice"
            );
            assert_eq!(
                (counters.uploads, counters.batches_created),
                (expected_counters.uploads, expected_counters.batches_created),
                "call {nth} {how:?}: uploads or batches differ from a clean run"
            );
            assert_eq!(
                release_bytes(&world),
                expected,
                "call {nth} {how:?}: the release differs from a clean run"
            );
            bar.nothing_lost(&fake);
        }
    }
}

#[test]
fn a_crash_after_any_http_reply_of_a_run_ends_like_a_clean_run() {
    let fake = FakeApi::start(repair_responder());
    let clean = World::new(&fake).set("repair.models=[\"v-a\", \"v-b\"]");
    clean.run(&["run"]).success();
    let expected = release_bytes(&clean);
    let expected_counters = fake.counters();
    let calls = expected_counters.calls.len();
    for nth in 1..=calls {
        let fake = FakeApi::start(repair_responder());
        let world = World::new(&fake).set("repair.models=[\"v-a\", \"v-b\"]");
        let step = format!("http-reply:{nth}");
        let bar = Bar::before(&world);
        let crashed = world.run_env(&["run"], &[("SASEVAL_CRASH_AFTER", step.as_str())]);
        assert!(
            crashed.code != Some(0) && crashed.stderr.contains("crashing after step `http-reply`"),
            "call {nth}: the hook did not fire\n{}",
            crashed.stderr
        );
        bar.ran(world.run(&["run"])).success();
        bar.after();
        bar.nothing_lost(&fake);
        let counters = fake.counters();
        assert!(
            counters.lines_in_batches.values().all(|n| *n == 1),
            "call {nth}: a line was batched twice"
        );
        assert_eq!(
            (counters.uploads, counters.batches_created),
            (expected_counters.uploads, expected_counters.batches_created),
            "call {nth}: uploads or batches differ from a clean run"
        );
        assert_eq!(
            release_bytes(&world),
            expected,
            "call {nth}: the release differs from a clean run"
        );
    }
}

#[test]
fn a_short_download_that_ends_at_a_line_boundary_is_fetched_again_not_bought_again() {
    let fake = FakeApi::start(responder_with_one_failure());
    fake.push_fault(Fault::ShortDownload {
        dropped: 2,
        times: 1,
    });
    let world = World::new(&fake);
    let bar = Bar::before(&world);
    bar.ran(world.run(&["author"]))
        .success()
        .stderr_has("request_counts");
    bar.after();
    bar.nothing_lost(&fake);
    let counters = fake.counters();
    assert_eq!(counters.faults_fired, 1, "the short download was served");
    assert!(
        counters.lines_in_batches.values().all(|n| *n == 1),
        "a paid line was bought again"
    );
}

/// A finished author job's out dir, its authored.jsonl and how many requests it took.
fn finished_author_run(fake: &FakeApi) -> (World, Vec<u8>, usize) {
    let world = World::new(fake);
    world.run(&["author"]).success();
    let authored = std::fs::read(world.out().join("authored.jsonl")).expect("authored");
    (world, authored, fake.counters().http_requests)
}

#[test]
fn a_cache_cut_in_the_middle_is_rebuilt_from_the_downloads_without_buying_anything() {
    let fake = FakeApi::start(good_responder());
    let (world, authored, requests) = finished_author_run(&fake);
    let cache = world.out().join("state/cache.jsonl");
    let bytes = std::fs::read(&cache).expect("cache");
    std::fs::write(&cache, &bytes[..bytes.len() / 2]).expect("cut");
    let bar = Bar::before(&world);
    bar.ran(world.run(&["author"]))
        .success()
        .stderr_has("re-collected");
    bar.after();
    bar.nothing_lost(&fake);
    assert_eq!(
        fake.counters().http_requests,
        requests,
        "the rebuild bought nothing and asked the server nothing"
    );
    assert_eq!(
        std::fs::read(world.out().join("authored.jsonl")).expect("authored"),
        authored
    );
}

#[test]
fn a_flipped_byte_in_the_cache_is_recovered_as_its_message_says_without_paying() {
    let fake = FakeApi::start(good_responder());
    let (world, authored, requests) = finished_author_run(&fake);
    let cache = world.out().join("state/cache.jsonl");
    let text = std::fs::read_to_string(&cache).expect("cache");
    let flipped = text.replacen("chat.completion", "chat.compleTion", 1);
    assert_ne!(flipped, text);
    std::fs::write(&cache, flipped).expect("flip");
    let bar = Bar::before(&world);
    let damaged = bar.ran(world.run(&["author"]));
    damaged.code(1).stderr_has("damaged");
    follow_mv(&damaged.stderr);
    bar.ran(world.run(&["author"])).success();
    bar.after();
    bar.nothing_lost(&fake);
    assert_eq!(
        fake.counters().http_requests,
        requests,
        "following the message bought nothing"
    );
    assert_eq!(
        std::fs::read(world.out().join("authored.jsonl")).expect("authored"),
        authored,
        "the recovered outcomes are the paid ones"
    );
}

#[test]
fn a_deeply_nested_output_line_becomes_a_failed_outcome_and_the_cache_stays_readable() {
    let fake = FakeApi::start(good_responder());
    fake.push_fault(Fault::DeepOutput { depth: 100_000 });
    let world = World::new(&fake);
    let bar = Bar::before(&world);
    bar.ran(world.run_within(&["author"], &[], 120)).success();
    let rejects = world.read_jsonl("rejects.jsonl");
    assert!(
        rejects.iter().any(|r| r["reason"] == "request_failed"
            && r["detail"].as_str().unwrap_or("").contains("nest")),
        "the deep line is a failed outcome with its reason"
    );
    let before = fake.counters().http_requests;
    bar.ran(world.run(&["author"])).success();
    bar.ran(world.run(&["status"])).success();
    assert_eq!(
        fake.counters().http_requests,
        before,
        "nothing is bought again"
    );
    bar.after();
    bar.nothing_lost(&fake);
}

#[test]
fn a_journal_naming_a_batch_the_server_does_not_know_says_what_to_do() {
    let first = FakeApi::start(good_responder());
    let mut world = World::new(&first);
    world.run(&["author", "--no-wait"]).success();
    drop(first);
    let other = FakeApi::start(good_responder());
    world.also(&format!("api.base_url={}", other.base_url()));
    let bar = Bar::before(&world);
    let stuck = bar.ran(world.run(&["author"]));
    stuck
        .code(1)
        .stderr_has("does not know")
        .stderr_has("api.base_url");
    follow_mv(&stuck.stderr);
    bar.ran(world.run(&["author"])).success();
    bar.after();
    bar.nothing_lost(&other);
    assert!(other.counters().lines_in_batches.values().all(|n| *n == 1));
}

#[test]
fn request_files_deleted_while_a_batch_runs_are_named_with_the_recovery() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake);
    world.run(&["author", "--no-wait"]).success();
    for file in all_files(&world.out().join("state/requests")) {
        std::fs::remove_file(file).expect("delete");
    }
    let bar = Bar::before(&world);
    let stuck = bar.ran(world.run(&["author"]));
    stuck.code(1).stderr_has("state/requests");
    follow_mv(&stuck.stderr);
    bar.ran(world.run(&["author"])).success();
    bar.after();
    bar.nothing_lost(&fake);
    let counters = fake.counters();
    assert_eq!(
        counters.batches_created, 1,
        "the running batch was found by its fingerprint"
    );
    assert!(counters.lines_in_batches.values().all(|n| *n == 1));
}

#[test]
fn an_unknown_batch_status_is_warned_at_once_and_ends_with_cancel_named() {
    let fake = FakeApi::start(good_responder());
    fake.push_fault(Fault::UnknownStatus("paused_for_review".into()));
    let world = World::new(&fake);
    let bar = Bar::before(&world);
    let run = bar.ran(world.run_within(&["author"], &[], 120));
    run.code(1)
        .stderr_has("warning")
        .stderr_has("paused_for_review")
        .stderr_has("saseval-gen cancel");
    bar.ran(world.run(&["cancel"])).success();
    bar.after();
    assert_eq!(fake.counters().cancels, 1);
}

#[test]
fn a_bad_last_line_that_never_changes_is_kept_as_a_failure_not_retried_forever() {
    for bad in BadLine::ALL {
        let fake = FakeApi::start(good_responder());
        fake.push_fault(Fault::BadLastLine(bad));
        let world = World::new(&fake);
        let bar = Bar::before(&world);
        bar.ran(world.run_within(&["author"], &[], 120))
            .success()
            .stderr_has("not a cut-short transfer");
        let counters = fake.counters();
        let twice = counters
            .lines_in_batches
            .values()
            .filter(|n| **n > 1)
            .count();
        if bad == BadLine::CutThenJunk {
            assert_eq!(
                twice, 0,
                "{bad:?}: the line that names its request is final"
            );
            assert!(
                world
                    .read_jsonl("rejects.jsonl")
                    .iter()
                    .any(|r| r["reason"] == "request_failed"
                        && r["detail"].as_str().unwrap_or("").contains("output line")),
                "{bad:?}: the bad line is a failed outcome"
            );
        } else {
            assert!(twice <= 1, "{bad:?}: only the unnamed line is sent again");
        }
        let before = counters.http_requests;
        bar.ran(world.run(&["author"])).success();
        assert_eq!(
            fake.counters().http_requests,
            before,
            "{bad:?}: done is done"
        );
        bar.after();
        bar.nothing_lost(&fake);
    }
}

#[test]
fn a_redirect_is_reported_with_where_it_points_not_as_a_bad_key() {
    let elsewhere = FakeApi::start(good_responder());
    elsewhere.set_expected_key(KEY);
    let fake = FakeApi::start(good_responder());
    let location = format!("{}/files", elsewhere.base_url());
    fake.push_fault(Fault::Redirect {
        route: Route::Any,
        location: location.clone(),
        times: 100,
    });
    let world = World::new(&fake);
    let bar = Bar::before(&world);
    let run = bar.ran(world.run(&["author"]));
    run.code(2).stderr_has("redirected").stderr_has(&location);
    bar.after();
    assert!(!run.stderr.contains("check the key"), "{}", run.stderr);
    assert_eq!(
        elsewhere.counters().http_requests,
        0,
        "the redirect was not followed"
    );
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
    assert!(
        run.stdout.contains("line 1") && run.stdout.contains("byte-order mark"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("line 2") && run.stdout.contains("column 12"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_local_model_without_chat_template_is_exit_2_naming_local_chat_template() {
    let Ok(model) = std::env::var("SASEVAL_TEST_MODEL") else {
        eprintln!("skipping: SASEVAL_TEST_MODEL is not set (scripts/test.sh sets it)");
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let mut bytes = std::fs::read(&model).expect("test model");
    let key = b"tokenizer.chat_template";
    let at = bytes
        .windows(key.len())
        .position(|w| w == key)
        .expect("the test model has a chat template");
    bytes[at + key.len() - 1] = b'_';
    let patched = dir.path().join("own-model.gguf");
    std::fs::write(&patched, bytes).expect("write");
    let world = World::with_url("https://unused.example/v1".into())
        .set("api.provider=local")
        .set(&format!("local.model_path={}", patched.display()))
        .set("local.threads=1");
    let bar = Bar::before(&world);
    let run = bar.ran(world.run(&["author"]));
    bar.after();
    run.code(2)
        .stderr_has("no chat template")
        .stderr_has("local.chat_template");
    assert!(!run.stderr.contains("fetch-model.sh"), "{}", run.stderr);
}

#[test]
fn a_key_too_short_to_redact_safely_is_refused_before_any_request() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake);
    let bar = Bar::before(&world);
    let run = bar.ran(world.run_env(&["author"], &[("SASEVAL_TEST_KEY", "abc")]));
    run.code(2)
        .stderr_has("SASEVAL_TEST_KEY")
        .stderr_has("too short");
    bar.after();
    assert_eq!(fake.counters().http_requests, 0);
}
