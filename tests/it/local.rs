//! The local backend on the real bundled model: a small job that crashes, resumes and never
//! recomputes a result, a job decoded in parallel that gives every request its outcome and the
//! same bytes twice, and a GGUF without a chat template. These need `SASEVAL_TEST_MODEL` (a path
//! to the model; scripts/test.sh sets it) and are skipped with a note without it. A model name
//! whose GGUF file is missing is refused without any model.

use serde_json::Value;

use crate::bar::Bar;
use crate::world::{read_jsonl, World, CATEGORIES};

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
            // The grammar admits a lone surrogate escape (`\uD8b6`), which the parser repairs.
            let parsed = saseval_gen::stages::reply::parse_items(content);
            assert!(
                parsed.is_ok_and(|p| p.malformed.is_empty() && !p.truncated),
                "the grammar yields schema JSON whose every item parses: {content}"
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

/// A world on the local backend whose requests are short (`max_tokens` per category), so a job
/// of ten requests on the test model takes seconds.
fn short_local_job(model: &str, max_tokens: u32) -> World {
    let mut world = World::with_url("https://unused.example/v1".into())
        .set("api.provider=local")
        .set(&format!("local.model_path={model}"))
        .set("release.per_category=1")
        .set("author.oversample=1.0")
        .set("author.max_rounds=1")
        .set("author.response_format=\"json_schema\"")
        .set(&format!("author.max_tokens={max_tokens}"))
        .set("local.threads=1");
    for category in CATEGORIES {
        world = world
            .set(&format!("categories.{category}.items_per_request=1"))
            .set(&format!("categories.{category}.max_tokens={max_tokens}"));
    }
    world
}

/// Each cached outcome of the out dir's response cache, by custom_id.
fn cached_outcomes(world: &World) -> std::collections::BTreeMap<String, Value> {
    read_jsonl(&world.out().join("state/cache.jsonl"))
        .into_iter()
        .filter_map(|entry| {
            let entry = &entry["entry"];
            Some((
                entry["custom_id"].as_str()?.to_string(),
                entry["outcome"].clone(),
            ))
        })
        .collect()
}

#[test]
fn a_parallel_local_job_gives_every_request_its_outcome_and_the_same_bytes_twice() {
    let Ok(model) = std::env::var("SASEVAL_TEST_MODEL") else {
        eprintln!("skipping the parallel local job: SASEVAL_TEST_MODEL is not set (scripts/test.sh sets it)");
        return;
    };
    let runs: Vec<_> = (0..2)
        .map(|_| {
            let world = short_local_job(&model, 96).set("local.parallel=3");
            let run = world.run(&["author"]);
            run.success();
            assert!(
                run.stderr
                    .contains("10 request(s) computed locally, up to 3 decoded together"),
                "{}",
                run.stderr
            );
            // The test's stderr is a pipe, not a terminal: a line per finished request.
            let lines = run
                .stderr
                .lines()
                .filter(|line| line.contains("requests done after") && line.contains("tokens/s"))
                .count();
            assert_eq!(lines, 10, "{}", run.stderr);
            cached_outcomes(&world)
        })
        .collect();
    assert_eq!(runs[0].len(), 10, "every request has its outcome");
    for outcome in runs[0].values() {
        assert!(
            outcome["ok"]
                .pointer("/choices/0/message/content")
                .is_some(),
            "{outcome}"
        );
    }
    assert_eq!(
        runs[0], runs[1],
        "the same requests, seed and local.parallel give the same bytes"
    );
}

#[test]
fn a_model_name_whose_gguf_file_is_missing_is_exit_2_naming_its_key() {
    let world = World::with_url("https://unused.example/v1".into())
        .set("api.provider=local")
        .set("author.model=\"the-author\"")
        .set("repair.models=[\"the-verifier\"]")
        .set("audit.models=[]")
        .set("local.models.the-verifier=\"/nonexistent/verifier.gguf\"");
    let run = world.run(&["author"]);
    run.code(2)
        .stderr_has("`author.model`")
        .stderr_has("\"the-author\" has no GGUF file in [local.models]");
    let world = world.set("local.models.the-author=\"/nonexistent/author.gguf\"");
    let run = world.run(&["author"]);
    run.code(2)
        .stderr_has("local.models.\"the-author\"")
        .stderr_has("/nonexistent/author.gguf")
        .stderr_has("scripts/fetch-model.sh --profile local");
}
