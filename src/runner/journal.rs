//! The journal: one small JSON file per job recording every remote side effect (file uploaded,
//! batch created, batch finished, output downloaded, results collected). It is rewritten
//! atomically after each step, before the next side effect, so a re-run always knows what exists.

use super::status::BatchStatus;
use crate::util::fsio;
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

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub total: u64,
    pub completed: u64,
    pub failed: u64,
}

/// One batch file of a job, and where it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "WireSubmission", into = "WireSubmission")]
pub struct Submission {
    pub seq: usize,
    pub fingerprint: String,
    pub model: String,
    pub requests: usize,
    pub bytes: u64,
    /// The request file, relative to the state folder.
    pub input: String,
    pub stage: Stage,
}

/// Where a submission stands, with exactly the data the stage has.
#[derive(Debug, Clone, PartialEq)]
pub enum Stage {
    /// The request file is written locally; nothing sent yet.
    Planned,
    /// The request file is uploaded.
    Uploaded { file_id: String },
    /// The batch exists on the server and has not ended.
    Created(Running),
    /// The batch reached a terminal status; its files are not all collected yet.
    Finished(Ended),
    /// Every outcome in its output and error files is in the cache.
    Collected(Ended),
    /// Dropped before any batch was created (its requests changed or were already answered).
    Abandoned { file_id: Option<String> },
    /// Written for another engine (`file` backend), waiting for `--import`.
    Exported,
    /// Its results were imported from another engine's output.
    Imported,
}

/// A created batch, as its last poll showed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Running {
    pub file_id: String,
    pub batch_id: String,
    pub status: Option<BatchStatus>,
    pub counts: Option<Counts>,
}

/// A batch that ended, and what of it is collected.
#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    pub file_id: String,
    pub batch_id: String,
    pub status: BatchStatus,
    pub counts: Option<Counts>,
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
    /// Files downloaded completely into state/downloads (by file id).
    pub downloaded: Vec<String>,
    /// The server's `errors` of a failed batch, as text.
    pub errors: Vec<String>,
}

impl Running {
    /// The batch as a poll ended it.
    pub fn ended(
        &self,
        status: BatchStatus,
        output: Option<String>,
        error: Option<String>,
        errors: Vec<String>,
    ) -> Ended {
        Ended {
            file_id: self.file_id.clone(),
            batch_id: self.batch_id.clone(),
            status,
            counts: self.counts.clone(),
            output_file_id: output,
            error_file_id: error,
            downloaded: Vec::new(),
            errors,
        }
    }
}

impl Ended {
    /// The output and error files the batch has, in that order.
    pub fn files(&self) -> impl Iterator<Item = &String> {
        [&self.output_file_id, &self.error_file_id]
            .into_iter()
            .flatten()
    }
}

impl Stage {
    /// The stage's name as the journal file spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Stage::Planned => "planned",
            Stage::Uploaded { .. } => "uploaded",
            Stage::Created(_) => "created",
            Stage::Finished(_) => "finished",
            Stage::Collected(_) | Stage::Imported => "collected",
            Stage::Abandoned { .. } => "abandoned",
            Stage::Exported => "exported",
        }
    }
}

impl Submission {
    /// Live submissions own their requests: they are never planned again while live.
    pub fn is_live(&self) -> bool {
        matches!(
            self.stage,
            Stage::Planned
                | Stage::Uploaded { .. }
                | Stage::Created(_)
                | Stage::Finished(_)
                | Stage::Exported
        )
    }

    /// The server's batch, once one exists.
    pub fn batch_id(&self) -> Option<&str> {
        match &self.stage {
            Stage::Created(running) => Some(&running.batch_id),
            Stage::Finished(ended) | Stage::Collected(ended) => Some(&ended.batch_id),
            _ => None,
        }
    }

    /// The batch's last known status.
    pub fn status(&self) -> Option<&BatchStatus> {
        match &self.stage {
            Stage::Created(running) => running.status.as_ref(),
            Stage::Finished(ended) | Stage::Collected(ended) => Some(&ended.status),
            _ => None,
        }
    }

    /// The batch's last known request counts.
    pub fn counts(&self) -> Option<&Counts> {
        match &self.stage {
            Stage::Created(running) => running.counts.as_ref(),
            Stage::Finished(ended) | Stage::Collected(ended) => ended.counts.as_ref(),
            _ => None,
        }
    }
}

/// A submission as the journal file holds it: flat, with the fields of every stage, so that the
/// journals written before the stages were typed read back, and this binary writes the same
/// bytes they did.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct WireSubmission {
    seq: usize,
    fingerprint: String,
    model: String,
    requests: usize,
    bytes: u64,
    input: String,
    state: String,
    #[serde(default)]
    file_id: Option<String>,
    #[serde(default)]
    batch_id: Option<String>,
    #[serde(default)]
    status: Option<BatchStatus>,
    #[serde(default)]
    counts: Option<Counts>,
    #[serde(default)]
    output_file_id: Option<String>,
    #[serde(default)]
    error_file_id: Option<String>,
    #[serde(default)]
    downloaded: Vec<String>,
    #[serde(default)]
    errors: Vec<String>,
}

impl TryFrom<WireSubmission> for Submission {
    type Error = String;

    fn try_from(wire: WireSubmission) -> Result<Submission, String> {
        let seq = wire.seq;
        let state = wire.state.clone();
        let needs = |field: Option<String>, name: &str| {
            field.ok_or_else(|| format!("submission {seq} is `{state}` but names no {name}"))
        };
        let ended = |wire: WireSubmission| -> Result<Ended, String> {
            Ok(Ended {
                file_id: needs(wire.file_id, "file_id")?,
                batch_id: needs(wire.batch_id, "batch_id")?,
                status: wire
                    .status
                    .ok_or_else(|| format!("submission {seq} is `{state}` but names no status"))?,
                counts: wire.counts,
                output_file_id: wire.output_file_id,
                error_file_id: wire.error_file_id,
                downloaded: wire.downloaded,
                errors: wire.errors,
            })
        };
        let stage = match wire.state.as_str() {
            "planned" => Stage::Planned,
            "uploaded" => Stage::Uploaded {
                file_id: needs(wire.file_id.clone(), "file_id")?,
            },
            "created" => Stage::Created(Running {
                file_id: needs(wire.file_id.clone(), "file_id")?,
                batch_id: needs(wire.batch_id.clone(), "batch_id")?,
                status: wire.status.clone(),
                counts: wire.counts.clone(),
            }),
            "finished" => Stage::Finished(ended(wire.clone())?),
            "collected" if wire.batch_id.is_none() => Stage::Imported,
            "collected" => Stage::Collected(ended(wire.clone())?),
            "abandoned" => Stage::Abandoned {
                file_id: wire.file_id.clone(),
            },
            "exported" => Stage::Exported,
            other => return Err(format!("submission {seq} has the unknown state `{other}`")),
        };
        Ok(Submission {
            seq: wire.seq,
            fingerprint: wire.fingerprint,
            model: wire.model,
            requests: wire.requests,
            bytes: wire.bytes,
            input: wire.input,
            stage,
        })
    }
}

impl From<Submission> for WireSubmission {
    fn from(sub: Submission) -> WireSubmission {
        let mut wire = WireSubmission {
            seq: sub.seq,
            fingerprint: sub.fingerprint,
            model: sub.model,
            requests: sub.requests,
            bytes: sub.bytes,
            input: sub.input,
            state: sub.stage.name().to_string(),
            file_id: None,
            batch_id: None,
            status: None,
            counts: None,
            output_file_id: None,
            error_file_id: None,
            downloaded: Vec::new(),
            errors: Vec::new(),
        };
        match sub.stage {
            Stage::Planned | Stage::Exported | Stage::Imported => {}
            Stage::Uploaded { file_id } => wire.file_id = Some(file_id),
            Stage::Abandoned { file_id } => wire.file_id = file_id,
            Stage::Created(running) => {
                wire.file_id = Some(running.file_id);
                wire.batch_id = Some(running.batch_id);
                wire.status = running.status;
                wire.counts = running.counts;
            }
            Stage::Finished(ended) | Stage::Collected(ended) => {
                wire.file_id = Some(ended.file_id);
                wire.batch_id = Some(ended.batch_id);
                wire.status = Some(ended.status);
                wire.counts = ended.counts;
                wire.output_file_id = ended.output_file_id;
                wire.error_file_id = ended.error_file_id;
                wire.downloaded = ended.downloaded;
                wire.errors = ended.errors;
            }
        }
        wire
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
        crate::util::hooks::crash_point(step);
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
        stage: Stage,
    ) -> std::io::Result<&Submission> {
        let seq = self.next_seq();
        let fingerprint = fingerprint(&self.job, seq, model, text);
        let input = format!("requests/{}-{seq:03}-{fingerprint}.jsonl", self.job);
        fsio::write_atomic(&state_root.join(&input), text.as_bytes())?;
        let sub = Submission {
            seq,
            fingerprint,
            model: model.to_string(),
            requests,
            bytes: text.len() as u64,
            input,
            stage,
        };
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
    crate::util::digest::hex(&h.finalize())[..24].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal as the binary wrote it before the stages were typed: every field of every
    /// submission, flat, in declaration order, one submission per state.
    const FLAT_JOURNAL: &str = r#"{
  "job": "author-r0",
  "submissions": [
    {
      "seq": 0,
      "fingerprint": "aaaaaaaaaaaaaaaaaaaaaaaa",
      "model": "m",
      "requests": 2,
      "bytes": 100,
      "input": "requests/author-r0-000-aaaaaaaaaaaaaaaaaaaaaaaa.jsonl",
      "state": "planned",
      "file_id": null,
      "batch_id": null,
      "status": null,
      "counts": null,
      "output_file_id": null,
      "error_file_id": null,
      "downloaded": [],
      "errors": []
    },
    {
      "seq": 1,
      "fingerprint": "bbbbbbbbbbbbbbbbbbbbbbbb",
      "model": "m",
      "requests": 2,
      "bytes": 100,
      "input": "requests/author-r0-001-bbbbbbbbbbbbbbbbbbbbbbbb.jsonl",
      "state": "uploaded",
      "file_id": "file_1",
      "batch_id": null,
      "status": null,
      "counts": null,
      "output_file_id": null,
      "error_file_id": null,
      "downloaded": [],
      "errors": []
    },
    {
      "seq": 2,
      "fingerprint": "cccccccccccccccccccccccc",
      "model": "m",
      "requests": 2,
      "bytes": 100,
      "input": "requests/author-r0-002-cccccccccccccccccccccccc.jsonl",
      "state": "created",
      "file_id": "file_2",
      "batch_id": "batch_2",
      "status": "in_progress",
      "counts": {
        "total": 2,
        "completed": 1,
        "failed": 0
      },
      "output_file_id": null,
      "error_file_id": null,
      "downloaded": [],
      "errors": []
    },
    {
      "seq": 3,
      "fingerprint": "dddddddddddddddddddddddd",
      "model": "m",
      "requests": 2,
      "bytes": 100,
      "input": "requests/author-r0-003-dddddddddddddddddddddddd.jsonl",
      "state": "finished",
      "file_id": "file_3",
      "batch_id": "batch_3",
      "status": "expired",
      "counts": {
        "total": 2,
        "completed": 1,
        "failed": 0
      },
      "output_file_id": "file_out_3",
      "error_file_id": "file_err_3",
      "downloaded": [
        "file_out_3"
      ],
      "errors": []
    },
    {
      "seq": 4,
      "fingerprint": "eeeeeeeeeeeeeeeeeeeeeeee",
      "model": "m",
      "requests": 2,
      "bytes": 100,
      "input": "requests/author-r0-004-eeeeeeeeeeeeeeeeeeeeeeee.jsonl",
      "state": "collected",
      "file_id": "file_4",
      "batch_id": "batch_4",
      "status": "failed",
      "counts": null,
      "output_file_id": null,
      "error_file_id": null,
      "downloaded": [],
      "errors": [
        "line 1: invalid model"
      ]
    },
    {
      "seq": 5,
      "fingerprint": "ffffffffffffffffffffffff",
      "model": "m",
      "requests": 2,
      "bytes": 100,
      "input": "requests/author-r0-005-ffffffffffffffffffffffff.jsonl",
      "state": "abandoned",
      "file_id": "file_5",
      "batch_id": null,
      "status": null,
      "counts": null,
      "output_file_id": null,
      "error_file_id": null,
      "downloaded": [],
      "errors": []
    },
    {
      "seq": 6,
      "fingerprint": "gggggggggggggggggggggggg",
      "model": "m",
      "requests": 2,
      "bytes": 100,
      "input": "requests/author-r0-006-gggggggggggggggggggggggg.jsonl",
      "state": "exported",
      "file_id": null,
      "batch_id": null,
      "status": null,
      "counts": null,
      "output_file_id": null,
      "error_file_id": null,
      "downloaded": [],
      "errors": []
    },
    {
      "seq": 7,
      "fingerprint": "hhhhhhhhhhhhhhhhhhhhhhhh",
      "model": "m",
      "requests": 2,
      "bytes": 100,
      "input": "requests/author-r0-007-hhhhhhhhhhhhhhhhhhhhhhhh.jsonl",
      "state": "collected",
      "file_id": null,
      "batch_id": null,
      "status": null,
      "counts": null,
      "output_file_id": null,
      "error_file_id": null,
      "downloaded": [],
      "errors": []
    }
  ]
}"#;

    #[test]
    fn a_journal_written_before_the_stages_were_typed_reads_back_and_writes_the_same_bytes() {
        let journal: Journal = serde_json::from_str(FLAT_JOURNAL).unwrap();
        let stages: Vec<&str> = journal.submissions.iter().map(|s| s.stage.name()).collect();
        assert_eq!(
            stages,
            [
                "planned",
                "uploaded",
                "created",
                "finished",
                "collected",
                "abandoned",
                "exported",
                "collected"
            ]
        );
        assert!(matches!(
            &journal.submissions[2].stage,
            Stage::Created(Running { batch_id, status: Some(BatchStatus::InProgress), .. }) if batch_id == "batch_2"
        ));
        assert!(matches!(
            &journal.submissions[4].stage,
            Stage::Collected(Ended { status: BatchStatus::Failed, errors, .. }) if errors.len() == 1
        ));
        assert_eq!(journal.submissions[7].stage, Stage::Imported);
        assert_eq!(
            serde_json::to_string_pretty(&journal).unwrap(),
            FLAT_JOURNAL,
            "the journal is written back byte for byte"
        );
    }

    #[test]
    fn a_submission_missing_the_data_its_state_needs_is_a_damaged_journal() {
        let broken = FLAT_JOURNAL.replacen(r#""batch_id": "batch_2""#, r#""batch_id": null"#, 1);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("author-r0.json"), broken).unwrap();
        let message = Journal::load(dir.path(), "author-r0")
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("submission 2 is `created` but names no batch_id")
                && message.contains("do not delete it"),
            "{message}"
        );
    }
}
