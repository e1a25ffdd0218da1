//! The bar every bad input is held to (round 2, issue 13): a hostile server, damaged state and
//! absurd config must not write outside the out dir, bill twice, leak the key, panic, hang or
//! lose a paid response. `Bar` checks that around the runs of one test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use saseval_testkit::fake_api::FakeApi;

use crate::world::{all_files, read_jsonl, Run, World, KEY};

/// Whether `bytes` contain the test key.
fn key_in(bytes: &[u8]) -> bool {
    bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes())
}

/// Every file under `dir` outside `skip`, with its bytes.
pub(crate) fn files_outside(dir: &Path, skip: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    all_files(dir)
        .into_iter()
        .filter(|f| !f.starts_with(skip))
        .map(|f| {
            let bytes = std::fs::read(&f).unwrap_or_default();
            (f, bytes)
        })
        .collect()
}

/// The bar every bad input is held to (the README's "bad input" table): each run ends with an exit
/// code of the Contract (README.md) and no panic or abort; the key is in no output and no file of
/// the out dir; no file outside the out dir changes; and, where the run ends well, every request
/// line a server batched has its outcome in the cache (no paid response lost).
pub(crate) struct Bar {
    dir: PathBuf,
    out: PathBuf,
    before: BTreeMap<PathBuf, Vec<u8>>,
}

impl Bar {
    /// Takes the snapshot of everything beside the out dir, after the test's own setup.
    pub(crate) fn before(world: &World) -> Bar {
        Bar {
            dir: world.dir.path().to_path_buf(),
            out: world.out(),
            before: files_outside(world.dir.path(), &world.out()),
        }
    }

    /// Holds one run to the bar and hands it back.
    pub(crate) fn ran(&self, run: Run) -> Run {
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
    pub(crate) fn after(&self) {
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

    /// Every request line `fake` batched has its outcome in the cache.
    pub(crate) fn nothing_lost(&self, fake: &FakeApi) {
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
