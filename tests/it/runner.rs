//! The batch runner against the fake Batch API: a job's lifecycle (submit, wait, collect, re-run
//! for free, `--no-wait`, `cancel`, the file backend), the faults a paid API throws at it (429,
//! 5xx bursts, resets, expiry, cancellation, failed and stuck batches, unknown statuses), and
//! output files that are missing, short, foreign or bad. No line is paid for twice.

use std::sync::Arc;

use serde_json::Value;

use saseval_testkit::fake_api::{
    BadLine, ErrorsShape, FakeApi, FakeReply, Fault, Responder, Route,
};

use crate::bar::Bar;
use crate::responders::{good_responder, responder_with_one_failure};
use crate::world::{
    all_files, count_by_category, fixture_prompts_copy, read_jsonl, stable, World, CATEGORIES, KEY,
};

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
fn no_wait_submits_looks_once_and_exits_then_a_rerun_with_no_wait_collects() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake);
    let submitted = world.run(&["author", "--no-wait"]);
    submitted.success();
    insta::assert_snapshot!(
        "author_no_wait_submits_and_exits",
        stable(&world, Some(&fake), &submitted.stderr)
    );
    assert!(
        !world.out().join("authored.jsonl").exists()
            || world.read_jsonl("authored.jsonl").is_empty()
    );
    assert_eq!(
        fake.counters().polls,
        1,
        "one look at the new batch, and no waiting"
    );
    let status = world.run(&["status"]);
    status.success();
    insta::assert_snapshot!(
        "status_of_a_batch_not_waited_for",
        stable(&world, Some(&fake), &status.stdout)
    );
    // The fake completes a batch at its second poll: the re-run's one look collects it.
    world.run(&["author", "--no-wait"]).success();
    assert_eq!(
        count_by_category(&world.read_jsonl("authored.jsonl")).len(),
        10
    );
    assert!(fake.counters().lines_in_batches.values().all(|n| *n == 1));
}

#[test]
fn changing_one_template_resends_only_its_requests() {
    let fake = FakeApi::start(good_responder());
    let prompts = fixture_prompts_copy();
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
    let exported = world.run(&["author"]);
    exported.success();
    insta::assert_snapshot!(
        "file_backend_exports_and_names_the_import",
        stable(&world, None, &exported.stderr)
    );
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
        let failed = world.run(&["author"]);
        failed.code(1);
        let created = fake.counters().batches_created;
        let rerun = world.run(&["author"]);
        rerun.code(1);
        insta::assert_snapshot!(
            format!("a_failed_batch_{shape:?}"),
            stable(
                &world,
                Some(&fake),
                &format!(
                    "## author\n{}\n## author again\n{}",
                    failed.exit_and_stderr(),
                    rerun.exit_and_stderr()
                )
            )
        );
        assert_eq!(
            fake.counters().batches_created,
            created,
            "no new batch without --retry-failed"
        );
        world.run(&["author", "--retry-failed"]).success();
    }
}

#[test]
fn a_batch_cancelled_by_someone_else_keeps_its_lines_and_a_rerun_sends_only_the_rest() {
    let fake = FakeApi::start(good_responder());
    fake.push_fault(Fault::CancelNextBatch { completed: 10 });
    let world = World::new(&fake);
    let cancelled = world.run(&["author"]);
    insta::assert_snapshot!(
        "a_batch_cancelled_by_someone_else",
        stable(&world, Some(&fake), &cancelled.exit_and_stderr())
    );
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
    let after_cancel = world.run(&["author"]);
    insta::assert_snapshot!(
        "author_after_cancel",
        stable(&world, Some(&fake), &after_cancel.exit_and_stderr())
    );
}

#[test]
fn a_batch_stuck_in_validating_past_its_window_ends_with_a_clear_message() {
    let fake = FakeApi::start(good_responder());
    fake.set_clock(1_000_000_000);
    fake.push_fault(Fault::StuckValidating);
    let world = World::new(&fake);
    let stuck = world.run(&["author"]).exit_and_stderr();
    // How long ago the fake's clock ended the window depends on today's date.
    let minutes = stuck
        .split(" minutes after")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .unwrap_or_default();
    let stuck = stuck.replacen(&format!("{minutes} minutes"), "[N] minutes", 1);
    insta::assert_snapshot!(
        "a_batch_stuck_past_its_window",
        stable(&world, Some(&fake), &stuck)
    );
    world.run(&["cancel"]).success();
    assert_eq!(fake.counters().cancels, 1);
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
fn foreign_and_duplicate_output_lines_are_ignored_with_a_warning() {
    let fake = FakeApi::start(good_responder());
    fake.push_fault(Fault::ShuffleDuplicateForeign);
    let world = World::new(&fake);
    let run = world.run(&["author"]);
    run.success();
    insta::assert_snapshot!(
        "foreign_and_duplicate_lines_are_warned",
        stable(&world, Some(&fake), &run.stderr)
    );
}

#[test]
fn an_output_file_that_404s_stops_with_a_clear_message_and_loses_nothing() {
    let fake = FakeApi::start(good_responder());
    fake.push_fault(Fault::OutputFile404);
    let world = World::new(&fake);
    let run = world.run(&["author"]);
    insta::assert_snapshot!(
        "an_output_file_that_404s",
        stable(&world, Some(&fake), &run.exit_and_stderr())
    );
    let status = world.run(&["status"]);
    // The batch stays journaled for a later re-run.
    insta::assert_snapshot!(
        "status_after_an_output_file_404",
        stable(&world, Some(&fake), &status.stdout)
    );
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
