//! The local backend on the real bundled model: a small job that crashes, resumes and never
//! recomputes a result, and a GGUF without a chat template. Both need `SASEVAL_TEST_MODEL` (a path
//! to the model; scripts/test.sh sets it) and are skipped with a note without it.

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
