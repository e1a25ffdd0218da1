//! Configuration and usage errors: bad keys, values out of range, `--set`s that are not TOML, a
//! config that is not UTF-8, bad templates and unusable out dirs are refused naming what to fix,
//! before any request.

use std::process::Command;

use saseval_testkit::fake_api::FakeApi;

use crate::bar::Bar;
use crate::responders::good_responder;
use crate::world::{author_refused_with_each_set, fixture_prompts_copy, repo, stable, Run, World};

#[test]
fn config_errors_exit_2_naming_the_key_before_any_request() {
    let fake = FakeApi::start(good_responder());
    let sets = [
        "api.bogus=1",
        "release.per_category=0",
        "author.temperature=-1",
        "categories.reasoning.T=\"hot\"",
        "categories.made_up.c=0.1",
        "api.base_url=http://10.1.2.3/v1",
        "api.api_key_env=SASEVAL_NO_SUCH_KEY",
    ];
    let text = author_refused_with_each_set(&fake, &sets);
    insta::assert_snapshot!("config_errors_name_the_key", text);
    assert_eq!(fake.counters().http_requests, 0);
}

#[test]
fn absurd_numbers_credentials_in_the_url_and_bad_sets_are_exit_2_before_any_request() {
    let fake = FakeApi::start(good_responder());
    let local_creds = fake.base_url().replace("http://", "http://user:hunter2@");
    let cases: Vec<Vec<String>> = vec![
        vec!["api.retry_initial_secs=1e300".into()],
        vec!["api.poll_interval_secs=1e300".into()],
        vec!["api.request_timeout_secs=1e300".into()],
        vec!["release.per_category=1000000000000".into()],
        vec![
            "release.per_category=1000000000000000000".into(),
            "author.oversample=10".into(),
        ],
        vec!["repair.models=[\"\"]".into()],
        vec![format!("api.base_url={local_creds}")],
        vec!["api.base_url=https://user:hunter2@api.example.com/v1".into()],
        vec!["api.base_url=http://user:hunter2@10.1.2.3/v1".into()],
        vec!["api.poll_interval_secs=0.o5".into()],
    ];
    let mut text = String::new();
    for sets in cases {
        let mut world = World::new(&fake);
        for set in &sets {
            world.also(set);
        }
        let bar = Bar::before(&world);
        let run = bar.ran(world.run_within(&["run"], &[], 60));
        run.code(2);
        assert!(!run.stderr.contains("hunter2"), "{sets:?}: {}", run.stderr);
        bar.after();
        let shown = stable(&world, Some(&fake), &run.exit_and_stderr());
        let sets = stable(&world, Some(&fake), &sets.join(" "));
        text.push_str(&format!("## --set {sets}\n{shown}\n"));
    }
    let world = World::new(&fake);
    let config = world.dir.path().join("latin1.toml");
    let mut bytes = std::fs::read(repo().join("pipeline.toml")).expect("config");
    bytes.insert(2, 0xE9);
    std::fs::write(&config, bytes).expect("write");
    let mut cmd = world.command(&["author"]);
    cmd.arg("--config").arg(&config);
    let bar = Bar::before(&world);
    let run = bar.ran(Run::of(cmd.output().expect("runs")));
    run.code(2);
    bar.after();
    let shown = stable(&world, Some(&fake), &run.exit_and_stderr());
    text.push_str(&format!("## a config that is not UTF-8\n{shown}\n"));
    insta::assert_snapshot!("absurd_numbers_credentials_and_bad_sets", text);
    assert_eq!(fake.counters().http_requests, 0, "nothing was sent");
}

#[test]
fn template_with_unknown_placeholder_is_exit_2_naming_the_file() {
    let prompts = fixture_prompts_copy();
    std::fs::write(
        prompts.path().join("memory_recall.md"),
        "{{count}} {{domain}} {{colour}}",
    )
    .expect("write");
    let world = World::with_url("http://127.0.0.1:9/v1".into())
        .set(&format!("author.prompts_dir={}", prompts.path().display()));
    let run = world.run(&["author"]);
    run.code(2);
    insta::assert_snapshot!(
        "unknown_placeholder",
        in_prompts(&prompts, &world, &run.exit_and_stderr())
    );
}

#[test]
fn an_oversized_or_endless_template_is_exit_2_naming_the_file() {
    let prompts = fixture_prompts_copy();
    let template = prompts.path().join("reasoning.md");
    let big = format!("{{{{count}}}} {{{{domain}}}} {}", "x".repeat(2 << 20));
    std::fs::write(&template, big).expect("write");
    let world = World::with_url("http://127.0.0.1:9/v1".into())
        .set(&format!("author.prompts_dir={}", prompts.path().display()));
    let bar = Bar::before(&world);
    let run = bar.ran(world.run_within(&["author"], &[], 60));
    run.code(2);
    insta::assert_snapshot!(
        "oversized_template",
        in_prompts(&prompts, &world, &run.exit_and_stderr())
    );
    std::fs::remove_file(&template).expect("remove");
    std::os::unix::fs::symlink("/dev/zero", &template).expect("symlink");
    let run = bar.ran(world.run_within(&["author"], &[], 60));
    run.code(2);
    insta::assert_snapshot!(
        "endless_template",
        in_prompts(&prompts, &world, &run.exit_and_stderr())
    );
    bar.after();
}

/// `text` made stable, with the temporary copy of the templates shown as `[PROMPTS]`.
fn in_prompts(prompts: &tempfile::TempDir, world: &World, text: &str) -> String {
    let text = text.replace(&prompts.path().display().to_string(), "[PROMPTS]");
    stable(world, None, &text)
}

#[test]
fn a_second_process_on_the_same_out_dir_is_refused() {
    let world = World::with_url("http://127.0.0.1:9/v1".into());
    std::fs::create_dir_all(world.out()).expect("out dir");
    std::fs::write(world.out().join(".saseval.lock"), "1").expect("lock");
    let run = world.run(&["author"]);
    insta::assert_snapshot!(
        "locked_out_dir",
        stable(&world, None, &run.exit_and_stderr())
    );
}

#[test]
fn an_out_dir_that_is_a_file_is_a_usage_error() {
    let world = World::with_url("http://127.0.0.1:9/v1".into());
    std::fs::write(world.out(), "not a folder").expect("file");
    let run = world.run(&["author"]);
    insta::assert_snapshot!(
        "out_dir_is_a_file",
        stable(&world, None, &run.exit_and_stderr())
    );
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
    let run = Run::of(cmd.output().expect("the binary runs"));
    insta::assert_snapshot!(
        "read_only_out_dir",
        stable(&world, Some(&fake), &run.exit_and_stderr())
    );
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
