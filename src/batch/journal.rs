//! The journal: one small JSON file per job recording every remote side effect (file uploaded,
//! batch created, batch finished, output downloaded, results collected). It is rewritten
//! atomically after each step, before the next side effect, so a re-run always knows what exists.

use crate::fsio;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("cannot read journal {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("journal {path} is damaged ({message}). It records batches you may have paid for: do not delete it. Restore it from a backup, or move it aside and re-run — the run then finds its batches on the server by their fingerprint before submitting anything")]
    Corrupt { path: PathBuf, message: String },
    #[error("cannot write journal {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where a submission (one batch file) stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubState {
    /// The request file is written locally; nothing sent yet.
    Planned,
    /// The request file is uploaded (`file_id` known).
    Uploaded,
    /// The batch exists on the server (`batch_id` known).
    Created,
    /// The batch reached a terminal status; its files are not all collected yet.
    Finished,
    /// Every outcome in its output and error files is in the cache.
    Collected,
    /// Dropped before any batch was created (its requests changed or were already answered).
    Abandoned,
    /// Written for another engine (`file` backend), waiting for `--import`.
    Exported,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub total: u64,
    pub completed: u64,
    pub failed: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submission {
    pub seq: usize,
    pub fingerprint: String,
    pub model: String,
    pub requests: usize,
    pub bytes: u64,
    /// The request file, relative to the state folder.
    pub input: String,
    pub state: SubState,
    #[serde(default)]
    pub file_id: Option<String>,
    #[serde(default)]
    pub batch_id: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub counts: Option<Counts>,
    #[serde(default)]
    pub output_file_id: Option<String>,
    #[serde(default)]
    pub error_file_id: Option<String>,
    /// Files downloaded completely into state/downloads (by file id).
    #[serde(default)]
    pub downloaded: Vec<String>,
    /// The server's `errors` of a failed batch, as text.
    #[serde(default)]
    pub errors: Vec<String>,
}

impl Submission {
    pub fn new(
        seq: usize,
        fingerprint: String,
        model: &str,
        requests: usize,
        bytes: u64,
        input: String,
        state: SubState,
    ) -> Self {
        Submission {
            seq,
            fingerprint,
            model: model.to_string(),
            requests,
            bytes,
            input,
            state,
            file_id: None,
            batch_id: None,
            status: None,
            counts: None,
            output_file_id: None,
            error_file_id: None,
            downloaded: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Live submissions own their requests: they are never planned again while live.
    pub fn is_live(&self) -> bool {
        matches!(
            self.state,
            SubState::Planned
                | SubState::Uploaded
                | SubState::Created
                | SubState::Finished
                | SubState::Exported
        )
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    pub job: String,
    pub submissions: Vec<Submission>,
    #[serde(skip)]
    path: PathBuf,
}

impl Journal {
    pub fn path_for(dir: &Path, job: &str) -> PathBuf {
        dir.join(format!("{job}.json"))
    }

    /// Loads the journal of `job`, or an empty one when the job never ran.
    pub fn load(dir: &Path, job: &str) -> Result<Journal, JournalError> {
        let path = Journal::path_for(dir, job);
        let mut journal = match std::fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice::<Journal>(&bytes).map_err(|e| JournalError::Corrupt {
                    path: path.clone(),
                    message: e.to_string(),
                })?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Journal {
                job: job.to_string(),
                ..Journal::default()
            },
            Err(source) => return Err(JournalError::Read { path, source }),
        };
        if journal.job != job {
            return Err(JournalError::Corrupt {
                path,
                message: format!("it names job `{}`, expected `{job}`", journal.job),
            });
        }
        journal.path = path;
        Ok(journal)
    }

    /// Every journal in `dir`, sorted by job name (for `status`).
    pub fn load_all(dir: &Path) -> Result<Vec<Journal>, JournalError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(JournalError::Read {
                    path: dir.to_path_buf(),
                    source,
                })
            }
        };
        let mut jobs: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".json"))
                    .map(str::to_string)
            })
            .filter(|n| !n.starts_with('.'))
            .collect();
        jobs.sort();
        jobs.iter().map(|job| Journal::load(dir, job)).collect()
    }

    /// Writes the journal atomically, then passes the named crash point (test builds only).
    pub fn save(&self, step: &str) -> Result<(), JournalError> {
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| JournalError::Write {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        fsio::write_atomic(&self.path, &bytes).map_err(|source| JournalError::Write {
            path: self.path.clone(),
            source,
        })?;
        crate::hooks::crash_point(step);
        Ok(())
    }

    /// Writes a new submission's request file under `state_root` (its name carries the job,
    /// sequence number and fingerprint) and adds the submission in `state`; the caller saves.
    pub fn add_submission(
        &mut self,
        state_root: &Path,
        model: &str,
        requests: usize,
        text: &str,
        state: SubState,
    ) -> std::io::Result<&Submission> {
        let seq = self.next_seq();
        let fingerprint = fingerprint(&self.job, seq, model, text);
        let input = format!("requests/{}-{seq:03}-{fingerprint}.jsonl", self.job);
        fsio::write_atomic(&state_root.join(&input), text.as_bytes())?;
        let sub = Submission::new(
            seq,
            fingerprint,
            model,
            requests,
            text.len() as u64,
            input,
            state,
        );
        self.submissions.push(sub);
        Ok(&self.submissions[self.submissions.len() - 1])
    }

    pub fn next_seq(&self) -> usize {
        self.submissions
            .iter()
            .map(|s| s.seq + 1)
            .max()
            .unwrap_or(0)
    }
}

/// The fingerprint of one submission: what its upload name and batch metadata carry, so that a
/// run that lost its journal finds them on the server.
pub fn fingerprint(job: &str, seq: usize, model: &str, text: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(job.as_bytes());
    h.update(b"\n");
    h.update(seq.to_string().as_bytes());
    h.update(b"\n");
    h.update(model.as_bytes());
    h.update(b"\n");
    h.update(text.as_bytes());
    crate::digest::hex(&h.finalize())[..24].to_string()
}
