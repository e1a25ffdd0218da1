//! A test's world: a temp dir holding the out dir, the command line that points the real binary
//! at it (and at the fake Batch API), and what a run of that binary printed and returned.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use saseval_testkit::fake_api::FakeApi;

/// The API key every world's binary is given: no output and no file may ever contain it.
pub(crate) const KEY: &str = "sk-test-RECOGNISABLE-7f3a9c";

/// The ten categories of the card, in its order.
pub(crate) const CATEGORIES: [&str; 10] = [
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

/// The crate's folder: `pipeline.toml`, `README.md` and `tests/fixtures/`.
pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `text` with what differs between runs replaced by placeholders, so that a snapshot pins the
/// rest whole: the out dir (`[OUT]`), the rest of the world's temp dir (`[DIR]`), the fake's
/// address (`[API]`, its bare host and port `[API-HOST]`) and the crate's folder (`[REPO]`).
pub(crate) fn stable(world: &World, fake: Option<&FakeApi>, text: &str) -> String {
    let mut text = text
        .replace(&world.out().display().to_string(), "[OUT]")
        .replace(&world.dir.path().display().to_string(), "[DIR]");
    if let Some(fake) = fake {
        let url = fake.base_url();
        text = text.replace(&url, "[API]");
        let host = url.trim_start_matches("http://").split('/').next();
        if let Some(host) = host.filter(|host| !host.is_empty()) {
            text = text.replace(host, "[API-HOST]");
        }
    }
    text.replace(&repo().display().to_string(), "[REPO]")
}

/// `author` run in a new world for each `--set` alone, each refused with exit 2: the `--set`s
/// with what was printed, stable, as one text to pin in a snapshot.
pub(crate) fn author_refused_with_each_set(fake: &FakeApi, sets: &[&str]) -> String {
    let mut text = String::new();
    for set in sets {
        let world = World::new(fake).set(set);
        let run = world.run(&["author"]);
        run.code(2);
        let shown = stable(&world, Some(fake), &run.exit_and_stderr());
        text.push_str(&format!("## --set {set}\n{shown}\n"));
    }
    text
}

/// One test's world: a temp dir with the out dir, and the command line that reaches the fake.
pub(crate) struct World {
    pub(crate) dir: tempfile::TempDir,
    sets: Vec<String>,
}

/// A temporary copy of the fixture templates, for a test that edits one.
pub(crate) fn fixture_prompts_copy() -> tempfile::TempDir {
    let prompts = tempfile::tempdir().expect("temp dir");
    for entry in std::fs::read_dir(repo().join("tests/fixtures/prompts")).expect("fixtures") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("file name");
        std::fs::copy(&path, prompts.path().join(name)).expect("copy");
    }
    prompts
}

/// Appends an example item to the template `file` in a prompts folder, as a template shows one.
pub(crate) fn show_example_item(prompts: &Path, file: &str, example: &Value) {
    let template = prompts.join(file);
    let mut text = std::fs::read_to_string(&template).expect("template");
    text.push_str(&format!("\n## Example item\n```json\n{example}\n```\n"));
    std::fs::write(&template, text).expect("show an example item");
}

impl World {
    pub(crate) fn new(fake: &FakeApi) -> World {
        World::with_url(fake.base_url())
    }

    pub(crate) fn with_url(base_url: String) -> World {
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
            "audit.models=[\"p-a\"]".into(),
        ]
        .into_iter()
        .collect();
        World {
            dir: tempfile::tempdir().expect("temp dir"),
            sets,
        }
    }

    pub(crate) fn set(mut self, kv: &str) -> World {
        self.sets.push(kv.to_string());
        self
    }

    pub(crate) fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    pub(crate) fn command(&self, args: &[&str]) -> Command {
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

    pub(crate) fn run(&self, args: &[&str]) -> Run {
        Run::of(self.command(args).output().expect("the binary runs"))
    }

    pub(crate) fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = self.command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Run::of(cmd.output().expect("the binary runs"))
    }

    pub(crate) fn read_jsonl(&self, name: &str) -> Vec<Value> {
        read_jsonl(&self.out().join(name))
    }

    /// Adds a `--set` for the runs from now on (a later `--set` of the same key wins).
    pub(crate) fn also(&mut self, kv: &str) {
        self.sets.push(kv.to_string());
    }

    /// Runs the binary, killing it after `secs` seconds: a test of "never hangs" must not hang.
    pub(crate) fn run_within(&self, args: &[&str], env: &[(&str, &str)], secs: u64) -> Run {
        let mut cmd = self.command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        run_killed_after(cmd, secs)
    }
}

/// Every line of the JSONL file at `path`, parsed; panics naming the file if it is unreadable.
pub(crate) fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSONL line"))
        .collect()
}

/// What one run of the binary returned (`None`: killed or ended by a signal) and printed.
pub(crate) struct Run {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    pub(crate) fn of(output: Output) -> Run {
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    pub(crate) fn success(&self) -> &Run {
        assert_eq!(
            self.code,
            Some(0),
            "expected success\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    pub(crate) fn code(&self, code: i32) -> &Run {
        assert_eq!(
            self.code,
            Some(code),
            "expected exit {code}\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    /// The exit code and stderr, as one text to pin in a snapshot.
    pub(crate) fn exit_and_stderr(&self) -> String {
        format!("exit {:?}\n{}", self.code, self.stderr)
    }

    /// The exit code and stdout, as one text to pin in a snapshot.
    pub(crate) fn exit_and_stdout(&self) -> String {
        format!("exit {:?}\n{}", self.code, self.stdout)
    }

    pub(crate) fn stderr_has(&self, needle: &str) -> &Run {
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}:\n{}",
            self.stderr
        );
        self
    }
}

/// Runs `cmd`, killing it after `secs` seconds (then `code` is `None` and stderr says so).
pub(crate) fn run_killed_after(mut cmd: Command, secs: u64) -> Run {
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

/// How many of `items` each category holds.
pub(crate) fn count_by_category(items: &[Value]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for item in items {
        *counts
            .entry(item["category"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
    }
    counts
}

/// Every file under `dir`, recursively.
pub(crate) fn all_files(dir: &Path) -> Vec<PathBuf> {
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

/// The bytes of the release files in the world's out dir, by name.
pub(crate) fn release_bytes(world: &World) -> BTreeMap<String, Vec<u8>> {
    [
        "saseval_v2_prompts.jsonl",
        "SHA256SUMS",
        "manifest.json",
        "README.md",
        "croissant.json",
        "LICENSE.md",
        "report.html",
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

/// Asserts that two releases are byte-identical, naming the files that differ and the first
/// line where each differs.
pub(crate) fn assert_same_release(
    expected: &BTreeMap<String, Vec<u8>>,
    got: &BTreeMap<String, Vec<u8>>,
    what: &str,
) {
    let differing: Vec<String> = expected
        .iter()
        .filter(|(name, bytes)| got.get(*name) != Some(*bytes))
        .map(|(name, bytes)| {
            let theirs = String::from_utf8_lossy(bytes);
            let ours = String::from_utf8_lossy(got.get(name).map_or(&[][..], Vec::as_slice));
            let first = theirs
                .lines()
                .zip(ours.lines())
                .find(|(a, b)| a != b)
                .map_or_else(String::new, |(a, b)| {
                    format!("\n  clean: {a}\n  this:  {b}")
                });
            format!("{name}{first}")
        })
        .collect();
    assert!(
        differing.is_empty(),
        "{what}: these release files differ from an uninterrupted run:\n{}",
        differing.join("\n")
    );
}
