//! The closed loop's memory: which authoring requests each round of the loop asked for, written
//! to `state/loop.json` before the round's first request is submitted, and what each round's
//! evaluation found. A resumed run re-uses a recorded round's plan as it is (even if the config
//! changed since), so no request it already submitted is planned differently; `status` reads
//! the evaluations without the network.

use crate::error::{Error, Result};
use crate::stages::item::Category;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The state file, inside the out dir's `state/` folder.
const FILE: &str = "loop.json";

/// The authoring requests of one category in one round: `requests` requests from position
/// `first` of its domain rotation on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slice {
    pub first: usize,
    pub requests: usize,
}

/// One round of the loop: what it asked the author for and, once its items went through every
/// stage, what would be released per category.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    pub round: u32,
    pub plan: BTreeMap<Category, Slice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<Evaluation>,
}

/// After a round: per category, what would be released and what the release needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    pub categories: BTreeMap<Category, Standing>,
}

/// One category after a round.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Standing {
    /// Items that passed every stage and dedup (before the trim to `per_category`).
    pub survivors: usize,
    /// `release.per_category`.
    pub needed: usize,
    /// No more rounds for this category: its survival stayed near zero.
    #[serde(default)]
    pub stopped: bool,
}

/// Every round so far, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rounds {
    pub rounds: Vec<Round>,
}

impl Rounds {
    pub fn path(out_dir: &Path) -> PathBuf {
        crate::runner::StateDir::new(out_dir).root.join(FILE)
    }

    /// The recorded rounds, or none on a fresh out dir.
    pub fn load(out_dir: &Path) -> Result<Rounds> {
        let path = Rounds::path(out_dir);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let rounds: Rounds =
                    serde_json::from_slice(&bytes).map_err(|e| Error::DamagedLoopState {
                        path: path.clone(),
                        why: e.to_string(),
                    })?;
                rounds.check(&path)?;
                Ok(rounds)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Rounds::default()),
            Err(source) => Err(Error::Read { path, source }),
        }
    }

    /// Rounds numbered 0, 1, … in order: anything else was not written by this tool.
    fn check(&self, path: &Path) -> Result<()> {
        for (k, round) in self.rounds.iter().enumerate() {
            if round.round as usize != k {
                return Err(Error::DamagedLoopState {
                    path: path.to_path_buf(),
                    why: format!("entry {k} is round {}", round.round),
                });
            }
        }
        Ok(())
    }

    /// Writes the rounds atomically.
    pub fn save(&self, out_dir: &Path) -> Result<()> {
        super::write_json(&Rounds::path(out_dir), "state/loop.json", self)
    }

    /// The plans of every recorded round.
    pub fn plans(&self) -> Vec<&BTreeMap<Category, Slice>> {
        self.rounds.iter().map(|r| &r.plan).collect()
    }

    /// The latest evaluation, if a round was evaluated.
    pub fn latest(&self) -> Option<(u32, &Evaluation)> {
        self.rounds
            .iter()
            .rev()
            .find_map(|r| r.evaluation.as_ref().map(|e| (r.round, e)))
    }
}
