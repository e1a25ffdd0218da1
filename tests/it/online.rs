//! The `online` backend (`api.provider = "online"`): the whole pipeline against the fake
//! `/chat/completions` server (`saseval_testkit::fake_online`) and its faults — 429s with
//! `retry-after`, 503 bursts, resets, slow, cut, endless and oversized bodies, a 200 with an
//! error inside, a wrong model, the key echoed — a server that fails everything, a crash, bad
//! `[online]` values; and, when scripts/setup.sh has installed it, against llama.cpp's own
//! OpenAI-compatible server (`python3 -m llama_cpp.server`) on the bundled model.

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use saseval_gen::runner::online::MAX_REPLY_BYTES;
use saseval_testkit::fake_api::{FakeReply, Responder};
use saseval_testkit::fake_online::{FakeOnline, OnlineFault};

use crate::bar::Bar;
use crate::responders::good_responder;
use crate::world::{read_jsonl, World, CATEGORIES, KEY};

/// A world whose runs go to `fake` through the online backend.
fn online_world(fake: &FakeOnline) -> World {
    World::with_url(fake.base_url())
        .set("api.provider=online")
        .set("online.concurrency=4")
}

/// The cache's entries: custom_id → outcome.
fn cached(world: &World) -> BTreeMap<String, Value> {
    let path = world.out().join("state/cache.jsonl");
    if !path.exists() {
        return BTreeMap::new();
    }
    read_jsonl(&path)
        .into_iter()
        .filter_map(|e| {
            let id = e["entry"]["custom_id"].as_str()?.to_string();
            Some((id, e["entry"]["outcome"].clone()))
        })
        .collect()
}

/// The failure codes in the cache, by custom_id.
fn failure_codes(world: &World) -> BTreeMap<String, String> {
    cached(world)
        .into_iter()
        .filter_map(|(id, outcome)| Some((id, outcome["failed"]["code"].as_str()?.to_string())))
        .collect()
}

#[test]
fn an_online_run_writes_a_verified_release_pays_each_request_once_and_a_rerun_sends_nothing() {
    let fake = FakeOnline::start(good_responder());
    fake.set_expected_key(KEY);
    let world = online_world(&fake);
    let bar = Bar::before(&world);
    bar.ran(world.run(&["run"])).success();
    world
        .run(&["verify", world.out().to_str().expect("utf-8")])
        .success();
    let counters = fake.counters();
    assert!(
        counters.answers.values().all(|n| *n == 1),
        "no request paid twice: {:?}",
        counters
            .answers
            .iter()
            .filter(|(_, n)| **n > 1)
            .collect::<Vec<_>>()
    );
    assert_eq!(counters.unauthorized, 0);
    assert_eq!(
        counters.authorization_values,
        BTreeSet::from([Some(format!("Bearer {KEY}"))])
    );
    assert!(counters.most_in_flight <= 4, "{}", counters.most_in_flight);
    let cache = cached(&world);
    for id in counters.answers.keys() {
        assert!(
            cache.contains_key(id),
            "{id} was answered and is not cached"
        );
    }
    let usage: Value =
        serde_json::from_slice(&std::fs::read(world.out().join("usage.json")).expect("usage"))
            .expect("json");
    let author_prompt_tokens: u64 = cache
        .iter()
        .filter(|(id, _)| id.starts_with("author/"))
        .filter_map(|(_, o)| o["ok"]["usage"]["prompt_tokens"].as_u64())
        .sum();
    assert_eq!(usage["author"]["prompt_tokens"], author_prompt_tokens);
    let before = fake.counters().requests;
    bar.ran(world.run(&["run"])).success();
    assert_eq!(
        fake.counters().requests,
        before,
        "a finished re-run makes no request"
    );
    let status = world.run(&["status"]);
    status.success();
    assert!(
        !status.stdout.contains("no jobs yet")
            && status.stdout.contains("jobs: none journaled")
            && status
                .stdout
                .contains(&format!("response cache: {} result(s)", cache.len()))
            && status.stdout.contains("loop: round 0")
            && status
                .stdout
                .contains("the loop has ended and the release is written (manifest.json)"),
        "status of a finished online run:\n{}",
        status.stdout
    );
    bar.after();
}

#[test]
fn without_a_key_in_the_environment_no_authorization_header_is_sent() {
    let fake = FakeOnline::start(good_responder());
    let world = online_world(&fake).set("api.api_key_env=SASEVAL_TEST_UNSET_KEY");
    world
        .run_env(&["author"], &[("SASEVAL_TEST_UNSET_KEY", "")])
        .success();
    assert_eq!(fake.counters().authorization_values, BTreeSet::from([None]));
}

#[test]
fn retry_after_is_honoured_and_503_bursts_resets_and_slow_or_cut_bodies_are_retried() {
    let fake = FakeOnline::start(good_responder());
    fake.record_timeline();
    fake.push_fault(OnlineFault::RateLimit {
        times: 2,
        retry_after: Some(1.0),
    });
    fake.push_fault(OnlineFault::ServerError {
        status: 503,
        times: 5,
    });
    fake.push_fault(OnlineFault::Reset { times: 3 });
    fake.push_fault(OnlineFault::SlowBody {
        pause: Duration::from_secs(3),
        times: 1,
    });
    fake.push_fault(OnlineFault::CutBody { times: 2 });
    let world = online_world(&fake).set("api.request_timeout_secs=1.5");
    let bar = Bar::before(&world);
    let run = bar.ran(world.run(&["author"]));
    run.success();
    assert_eq!(fake.counters().faults_fired, 13);
    assert!(
        failure_codes(&world).is_empty(),
        "{:?}",
        failure_codes(&world)
    );
    let timeline = fake.counters().timeline;
    let refused_at = timeline
        .iter()
        .find(|(_, status)| *status == 429)
        .map(|(at, _)| *at)
        .expect("a 429");
    let too_soon: Vec<f64> = timeline
        .iter()
        .map(|(at, _)| at - refused_at)
        .filter(|after| (0.1..0.95).contains(after))
        .collect();
    assert!(
        too_soon.is_empty(),
        "requests came {too_soon:?} s after a 429 that said retry-after: 1"
    );
    let billed_twice = fake.counters().answers.values().filter(|n| **n > 1).count();
    assert!(
        billed_twice <= 3,
        "only replies lost on the way (cut, too slow) are bought again: {billed_twice}"
    );
    bar.after();
}

#[test]
fn hostile_replies_are_kept_as_failures_or_retried_and_the_key_never_leaks() {
    let fake = FakeOnline::start(good_responder());
    fake.set_expected_key(KEY);
    fake.push_fault(OnlineFault::EchoKey { times: 2 });
    fake.push_fault(OnlineFault::ErrorInside { times: 1 });
    fake.push_fault(OnlineFault::WrongModel { times: 1 });
    fake.push_fault(OnlineFault::NotJson { times: 1 });
    fake.push_fault(OnlineFault::EndlessBody { times: 1 });
    fake.push_fault(OnlineFault::Oversized {
        bytes: MAX_REPLY_BYTES + 1024,
        times: 1,
    });
    let world = online_world(&fake).set("online.concurrency=1");
    let bar = Bar::before(&world);
    bar.ran(world.run(&["author"])).success();
    bar.after();
    let codes: BTreeSet<String> = failure_codes(&world).into_values().collect();
    assert_eq!(
        codes,
        BTreeSet::from([
            "invalid_output".to_string(),
            "oversized_reply".to_string(),
            "wrong_model".to_string(),
        ]),
        "the endless body is cut off as oversized; the HTML page is retried"
    );
    let cache = std::fs::read_to_string(world.out().join("state/cache.jsonl")).expect("cache");
    assert!(
        cache.contains("Bearer [redacted]"),
        "the echoed key is stored redacted"
    );
    let rejects = world.read_jsonl("rejects.jsonl");
    assert!(
        rejects
            .iter()
            .any(|r| r.to_string().contains("answered as `some-other-model`")),
        "the wrong model is a reject that says so"
    );
}

#[test]
fn a_server_failing_every_request_trips_the_breaker_and_caches_nothing_it_refused() {
    let refuse = Arc::new(AtomicBool::new(true));
    let inner = good_responder();
    let switch = Arc::clone(&refuse);
    let responder: Responder = Arc::new(move |custom_id: &str, body: &Value| {
        if switch.load(Ordering::SeqCst) {
            return FakeReply::Error {
                status: 422,
                body: serde_json::json!({"detail": "response_format: unsupported type"}),
            };
        }
        inner(custom_id, body)
    });
    let fake = FakeOnline::start(responder);
    let world = online_world(&fake);
    let bar = Bar::before(&world);
    let started = Instant::now();
    bar.ran(world.run(&["author"]))
        .code(1)
        .stderr_has("attempts in a row")
        .stderr_has("HTTP 422");
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(
        fake.counters().requests < 40,
        "{}",
        fake.counters().requests
    );
    assert!(
        cached(&world).is_empty(),
        "refusals before any answer are not cached"
    );

    fake.push_fault(OnlineFault::ServerError {
        status: 500,
        times: 10_000,
    });
    bar.ran(world.run(&["author"]))
        .code(1)
        .stderr_has("HTTP 500");
    assert!(cached(&world).is_empty());

    let fixed = FakeOnline::start(good_responder());
    let mut world = world;
    world.also(&format!("api.base_url={}", fixed.base_url()));
    bar.ran(world.run(&["author"])).success();
    assert!(failure_codes(&world).is_empty());
    bar.after();
}

#[test]
fn a_request_still_failing_after_its_retries_stops_the_job_and_a_rerun_sends_only_it() {
    let flaky = Arc::new(AtomicBool::new(true));
    let inner = good_responder();
    let switch = Arc::clone(&flaky);
    let responder: Responder = Arc::new(move |custom_id: &str, body: &Value| {
        if switch.load(Ordering::SeqCst) && custom_id == "author/reasoning/r0/0000" {
            return FakeReply::Error {
                status: 500,
                body: serde_json::json!({"error": {"message": "worker crashed", "type": "server_error"}}),
            };
        }
        inner(custom_id, body)
    });
    let fake = FakeOnline::start(responder);
    let world = online_world(&fake).set("api.max_retries=2");
    let bar = Bar::before(&world);
    bar.ran(world.run(&["author"]))
        .code(1)
        .stderr_has("1 request(s) got no answer in 3 attempts each")
        .stderr_has("worker crashed");
    let first = cached(&world);
    assert!(!first.contains_key("author/reasoning/r0/0000"));
    assert!(!first.is_empty(), "every other answer is cached");
    flaky.store(false, Ordering::SeqCst);
    let before = fake.counters().answers;
    bar.ran(world.run(&["author"])).success();
    let after = fake.counters().answers;
    let sent_again: Vec<&String> = after
        .iter()
        .filter(|(id, n)| before.get(*id).copied().unwrap_or(0) != **n)
        .map(|(id, _)| id)
        .collect();
    assert_eq!(sent_again, vec!["author/reasoning/r0/0000"]);
    bar.after();
}

#[test]
fn a_crash_loses_at_most_the_requests_in_flight_and_a_rerun_sends_only_the_rest() {
    let fake = FakeOnline::start(good_responder());
    fake.set_latency(Duration::from_millis(30));
    let world = online_world(&fake);
    let crashed = world.run_env(&["author"], &[("SASEVAL_CRASH_AFTER", "online-result:3")]);
    assert_ne!(
        crashed.code,
        Some(0),
        "the crash hook fired: {}",
        crashed.stderr
    );
    let kept = cached(&world).len();
    assert!(kept >= 3, "{kept}");
    world.run(&["author"]).success();
    let answers = fake.counters().answers;
    let paid_twice: usize = answers.values().map(|n| n - 1).sum();
    assert!(
        paid_twice <= 4,
        "at most online.concurrency requests were in flight at the crash: {paid_twice}"
    );
    assert!(answers.keys().all(|id| cached(&world).contains_key(id)));
}

#[test]
fn bad_online_values_and_a_refusing_server_are_exit_2_naming_the_key() {
    let fake = FakeOnline::start(good_responder());
    for (set, key) in [
        ("online.concurrency=0", "online.concurrency"),
        ("online.concurrency=-1", "online.concurrency"),
        ("online.rpm=-5", "online.rpm"),
        ("online.tpm=0", "online.tpm"),
        ("online.colour=1", "colour"),
    ] {
        let world = online_world(&fake).set(set);
        world.run(&["author"]).code(2).stderr_has(key);
    }
    assert_eq!(fake.counters().requests, 0, "refused before any request");

    fake.set_expected_key("sk-another-key-entirely");
    online_world(&fake)
        .run(&["author"])
        .code(2)
        .stderr_has("401")
        .stderr_has("api.api_key_env");
    let wrong_path = World::with_url(format!("{}/extra", fake.base_url()))
        .set("api.provider=online")
        .run(&["author"]);
    wrong_path
        .code(2)
        .stderr_has("404")
        .stderr_has("api.base_url");
}

#[test]
fn the_dry_run_and_status_work_unchanged_and_send_nothing() {
    let fake = FakeOnline::start(good_responder());
    let world = online_world(&fake);
    world.run(&["author", "--dry-run"]).success();
    world.run(&["status"]).success();
    assert_eq!(fake.counters().requests, 0);
}

/// A port on 127.0.0.1 that was free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// llama.cpp's OpenAI-compatible server from llama-cpp-python, killed when dropped.
struct LlamaServer {
    child: Child,
    base_url: String,
}

impl LlamaServer {
    /// Starts `python3 -m llama_cpp.server` on `model` and waits until it answers; `None` (with
    /// a note) when llama-cpp-python is not installed, unless `SASEVAL_REQUIRE_LLAMA_SERVER` is
    /// set (scripts/test.sh sets it), where that is a failure.
    fn start(model: &str) -> Option<LlamaServer> {
        let installed = Command::new("python3")
            .args(["-c", "import llama_cpp.server"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !installed {
            assert!(
                std::env::var("SASEVAL_REQUIRE_LLAMA_SERVER").is_err(),
                "llama-cpp-python's server is required here (scripts/setup.sh installs it)"
            );
            eprintln!("skipping: python3 -c 'import llama_cpp.server' fails");
            return None;
        }
        let port = free_port();
        let child = Command::new("python3")
            .args(["-m", "llama_cpp.server", "--model", model])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--n_ctx", "4096", "--n_threads", "2", "--seed", "7"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 -m llama_cpp.server starts");
        let server = LlamaServer {
            child,
            base_url: format!("http://127.0.0.1:{port}/v1"),
        };
        let deadline = Instant::now() + Duration::from_secs(180);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(server);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("llama_cpp.server did not listen on port {port} within 180 s");
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        // It may have exited already; then there is nothing to stop.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_whole_pipeline_runs_against_llama_cpp_server_and_its_usage_reaches_usage_json() {
    let Ok(model) = std::env::var("SASEVAL_TEST_MODEL") else {
        eprintln!("skipping the llama.cpp server run: SASEVAL_TEST_MODEL is not set (scripts/test.sh sets it)");
        return;
    };
    let Some(server) = LlamaServer::start(&model) else {
        return;
    };
    let served = "smollm2";
    let mut world = World::with_url(server.base_url.clone())
        .set("api.provider=online")
        .set("api.api_key_env=SASEVAL_TEST_UNSET_KEY")
        .set("api.request_timeout_secs=600")
        .set("online.concurrency=2")
        .set(&format!("author.model=\"{served}\""))
        .set(&format!("repair.models=[\"{served}\"]"))
        .set(&format!("audit.models=[\"{served}\"]"))
        .set("audit.min_correct=0")
        .set("audit.max_tokens=32")
        .set("audit.context_probe=false")
        .set("repair.max_tokens=64")
        .set("release.per_category=1")
        .set("author.oversample=1.0")
        .set("author.max_rounds=1")
        .set("author.response_format=\"json_object\"")
        .set("author.max_tokens=200")
        .set("assemble.allow_short=true");
    for category in CATEGORIES {
        world = world
            .set(&format!("categories.{category}.items_per_request=1"))
            .set(&format!("categories.{category}.max_tokens=200"));
    }
    let env = [("SASEVAL_TEST_UNSET_KEY", "")];
    world.run_env(&["run"], &env).success();
    world
        .run(&["verify", world.out().to_str().expect("utf-8")])
        .success();
    let cache = cached(&world);
    let author: Vec<&Value> = cache
        .iter()
        .filter(|(id, _)| id.starts_with("author/"))
        .map(|(_, outcome)| outcome)
        .collect();
    assert_eq!(author.len(), 10, "one request per category");
    let served_tokens = |field: &str| -> u64 {
        author
            .iter()
            .filter_map(|o| o["ok"]["usage"][field].as_u64())
            .sum()
    };
    assert!(author.iter().all(|o| o["ok"]["model"] == served));
    let usage: Value =
        serde_json::from_slice(&std::fs::read(world.out().join("usage.json")).expect("usage"))
            .expect("json");
    assert!(served_tokens("completion_tokens") > 0);
    assert_eq!(
        usage["author"]["prompt_tokens"],
        served_tokens("prompt_tokens")
    );
    assert_eq!(
        usage["author"]["completion_tokens"],
        served_tokens("completion_tokens")
    );
    drop(server);
}
