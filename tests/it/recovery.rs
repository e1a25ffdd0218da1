//! Recovery: a crash after any journal step or HTTP reply, a reply lost after the server acted,
//! and damaged state (a journal, a cache, request files) each end like a clean run — the batch
//! found by its fingerprint, no line batched twice, nothing paid for lost, the same release bytes
//! — or stop with a message whose recovery works when followed.

use saseval_testkit::fake_api::{FakeApi, Fault, ListStyle, LostReply, Route};

use crate::bar::Bar;
use crate::responders::{good_responder, losing, repair_responder};
use crate::world::{
    all_files, assert_same_release, count_by_category, release_bytes, stable, World,
};

/// A run that needs two rounds of the loop: the repair fixtures' planted keys and misbehaving
/// verifier, items lost after the gate, and round 0 sized for no loss at all.
fn two_round_run(fake: &FakeApi) -> World {
    World::new(fake)
        .set("repair.models=[\"v-a\", \"v-b\"]")
        .set("author.oversample=1.0")
}

fn two_round_responder() -> saseval_testkit::fake_api::Responder {
    losing(repair_responder())
}

/// Asserts that the clean run's batches held lines of a second round of the loop.
fn assert_two_rounds(fake: &FakeApi) {
    let lines = fake.counters().lines_in_batches;
    for stage in ["author/", "audit/"] {
        assert!(
            lines
                .keys()
                .any(|id| id.starts_with(stage) && (id.contains("/r1/") || id.contains(".r1."))),
            "the clean run has a second round of {stage} lines"
        );
    }
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
fn a_run_crashed_in_any_stage_of_either_round_ends_byte_identical_to_an_uninterrupted_one() {
    let fake = FakeApi::start(two_round_responder());
    let clean = two_round_run(&fake);
    clean.run(&["run"]).success();
    assert_two_rounds(&fake);
    let expected = release_bytes(&clean);
    // Batches are created in the loop's order: round 0's author, repair and audit jobs are the
    // first three, round 1's the next three.
    for step in [
        "uploaded:1",
        "created-unjournaled:1",
        "finished:1",
        "uploaded:2",
        "created-unjournaled:2",
        "downloaded:2",
        "collected:2",
        "collected:3",
        "uploaded:4",
        "created-unjournaled:4",
        "downloaded:4",
        "collected:4",
        "created:5",
        "finished:6",
        "collected:6",
    ] {
        let fake = FakeApi::start(two_round_responder());
        let world = two_round_run(&fake);
        let crashed = world.run_env(&["run"], &[("SASEVAL_CRASH_AFTER", step)]);
        assert_ne!(crashed.code, Some(0), "{step}: the hook did not fire");
        let lines_before = fake.counters().lines_in_batches;
        world.run(&["run"]).success();
        assert_same_release(&expected, &release_bytes(&world), step);
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
fn a_crash_after_any_http_reply_of_a_two_round_run_ends_like_a_clean_run() {
    let fake = FakeApi::start(two_round_responder());
    let clean = two_round_run(&fake);
    clean.run(&["run"]).success();
    assert_two_rounds(&fake);
    let expected = release_bytes(&clean);
    let expected_counters = fake.counters();
    assert!(
        expected_counters
            .lines_in_batches
            .keys()
            .any(|id| id.starts_with("audit/")),
        "the run audits, so the matrix covers the audit's calls"
    );
    let calls = expected_counters.calls.len();
    for nth in 1..=calls {
        let fake = FakeApi::start(two_round_responder());
        let world = two_round_run(&fake);
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
        assert_same_release(&expected, &release_bytes(&world), &format!("call {nth}"));
    }
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
fn a_lost_reply_at_any_http_call_of_a_two_round_run_ends_like_a_clean_run() {
    let fake = FakeApi::start(two_round_responder());
    let clean = two_round_run(&fake);
    clean.run(&["run"]).success();
    assert_two_rounds(&fake);
    let expected = release_bytes(&clean);
    let expected_counters = fake.counters();
    let calls = expected_counters.calls.len();
    assert!(calls >= 10, "a run makes its calls: {calls}");
    for nth in 1..=calls {
        for how in LostReply::ALL {
            let fake = FakeApi::start(two_round_responder());
            fake.push_fault(Fault::LoseReply { nth, how });
            let world = two_round_run(&fake);
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
            assert_same_release(
                &expected,
                &release_bytes(&world),
                &format!("call {nth} {how:?}"),
            );
            bar.nothing_lost(&fake);
        }
    }
}

#[test]
fn a_damaged_journal_is_reported_with_how_to_recover() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake);
    world.run(&["author", "--no-wait"]).success();
    let journal = world.out().join("state/journal/author-r0.json");
    let text = std::fs::read_to_string(&journal).expect("journal");
    std::fs::write(&journal, &text[..text.len() / 2]).expect("truncate");
    let damaged = world.run(&["author"]);
    insta::assert_snapshot!(
        "a_damaged_journal",
        stable(&world, Some(&fake), &damaged.exit_and_stderr())
    );
    let created = fake.counters().batches_created;
    std::fs::rename(&journal, journal.with_extension("damaged")).expect("move aside");
    world.run(&["author"]).success();
    assert_eq!(
        fake.counters().batches_created,
        created,
        "the batch is found by its fingerprint, not created again"
    );
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
    let rebuilt = bar.ran(world.run(&["author"]));
    rebuilt.success();
    insta::assert_snapshot!(
        "a_cut_cache_is_re_collected",
        stable(&world, Some(&fake), &rebuilt.stderr)
    );
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
    insta::assert_snapshot!(
        "a_flipped_byte_in_the_cache",
        stable(&world, Some(&fake), &damaged.exit_and_stderr())
    );
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
fn a_journal_naming_a_batch_the_server_does_not_know_says_what_to_do() {
    let first = FakeApi::start(good_responder());
    let mut world = World::new(&first);
    world.run(&["author", "--no-wait"]).success();
    drop(first);
    let other = FakeApi::start(good_responder());
    world.also(&format!("api.base_url={}", other.base_url()));
    let bar = Bar::before(&world);
    let stuck = bar.ran(world.run(&["author"]));
    insta::assert_snapshot!(
        "a_batch_the_server_does_not_know",
        stable(&world, Some(&other), &stuck.exit_and_stderr())
    );
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
    insta::assert_snapshot!(
        "request_files_deleted_while_a_batch_runs",
        stable(&world, Some(&fake), &stuck.exit_and_stderr())
    );
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
