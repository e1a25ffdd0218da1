//! Configuration and usage errors: bad keys, values out of range, `--set`s that are not TOML, a
//! config that is not UTF-8, bad templates and unusable out dirs are refused naming what to fix,
//! before any request.

use std::process::Command;

use saseval_testkit::fake_api::FakeApi;

use crate::bar::Bar;
use crate::responders::good_responder;
use crate::world::{fixture_prompts_copy, repo, Run, World};

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
fn template_with_unknown_placeholder_is_exit_2_naming_the_file() {
    let prompts = fixture_prompts_copy();
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
fn an_oversized_or_endless_template_is_exit_2_naming_the_file() {
    let prompts = fixture_prompts_copy();
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
