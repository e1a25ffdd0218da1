//! The exact text the CLI prints, pinned by snapshots (`tests/it/snapshots/`): `status`, the
//! author and repair summaries, `author --dry-run`, and the main error messages. A change of
//! wording or of a column is then a reviewed diff (`cargo insta review`), never an accident.
//! Paths of the temporary out dir and the fake's port are replaced by placeholders.

use saseval_testkit::fake_api::FakeApi;

use crate::responders::{good_responder, repair_responder};
use crate::world::{stable, World};

#[test]
fn the_author_summary_prints_each_round_and_the_totals_in_aligned_columns() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake);
    let run = world.run(&["author"]);
    run.success();
    insta::assert_snapshot!("author_stdout", stable(&world, Some(&fake), &run.stdout));
    insta::assert_snapshot!("author_stderr", stable(&world, Some(&fake), &run.stderr));
}

#[test]
fn status_lists_every_submission_and_what_a_rerun_does_next() {
    let fake = FakeApi::start(good_responder());
    let world = World::new(&fake);
    world.run(&["author"]).success();
    let run = world.run(&["status"]);
    run.success();
    insta::assert_snapshot!("status", stable(&world, Some(&fake), &run.stdout));
}

#[test]
fn the_repair_summary_counts_by_category_and_by_verifier() {
    let fake = FakeApi::start(repair_responder());
    let world = World::new(&fake).set("repair.models=[\"v-a\", \"v-b\"]");
    world.run(&["author"]).success();
    let run = world.run(&["repair"]);
    run.success();
    insta::assert_snapshot!("repair_stdout", stable(&world, Some(&fake), &run.stdout));
}

#[test]
fn the_dry_run_prints_requests_tokens_and_cost_per_category() {
    let world = World::with_url("http://127.0.0.1:9/v1".into());
    let run = world.run(&["author", "--dry-run"]);
    run.success();
    insta::assert_snapshot!("dry_run", stable(&world, None, &run.stdout));
}

#[test]
fn the_main_error_messages_say_what_is_wrong_and_what_to_do() {
    let world = World::with_url("http://127.0.0.1:9/v1".into());
    /// A command line, and whether the API key is left out of its environment.
    struct Case {
        name: &'static str,
        args: &'static [&'static str],
        without_key: bool,
    }
    let case = |name, args, without_key| Case {
        name,
        args,
        without_key,
    };
    let cases = [
        case("missing_key", &["author"], true),
        case("repair_first", &["repair"], false),
        case("assemble_first", &["assemble"], false),
        case(
            "bad_set",
            &["--set", "release.per_category=0", "author"],
            false,
        ),
        case(
            "insecure_url",
            &["--set", "api.base_url=http://10.1.2.3/v1", "author"],
            false,
        ),
    ];
    let mut text = String::new();
    for Case {
        name,
        args,
        without_key,
    } in cases
    {
        let mut cmd = world.command(args);
        if without_key {
            cmd.env_remove("SASEVAL_TEST_KEY");
        }
        let output = cmd.output().expect("the binary runs");
        text.push_str(&format!(
            "## {name} (exit {:?})\n{}\n",
            output.status.code(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    insta::assert_snapshot!("errors", stable(&world, None, &text));
}
