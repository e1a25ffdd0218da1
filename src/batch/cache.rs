//! The response cache: an append-only JSONL file of final outcomes keyed by custom_id and the
//! SHA-256 of the request body. It is the record of everything paid for, so every line carries a
//! checksum, appends are fsynced, and damage is reported instead of silently skipped.

use super::{hex, Outcome};
use crate::fsio;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("cannot read the response cache {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the response cache {path} is damaged at line {line} ({what}). Paid responses are never dropped silently: move the file aside (e.g. `mv {path} {path}.damaged`) and re-run; the run re-collects completed batches from the journal and the downloaded output files under state/downloads. Restore lines from the moved file by hand if needed.")]
    Corrupt {
        path: PathBuf,
        line: usize,
        what: String,
    },
}

#[derive(Serialize, Deserialize)]
struct Entry {
    custom_id: String,
    body_sha256: String,
    outcome: Outcome,
    source: String,
}

#[derive(Serialize, Deserialize)]
struct Line<'a> {
    sum: String,
    #[serde(borrow)]
    entry: &'a RawValue,
}

/// The cache, loaded into memory and appended to durably.
pub struct Cache {
    path: PathBuf,
    entries: HashMap<(String, String), Outcome>,
}

impl Cache {
    /// Loads the cache. A torn last line (a crash during an append) is cut off with a warning:
    /// its outcome is re-collected from the journal. Any other damage is an error.
    pub fn open(path: &Path) -> Result<Cache, CacheError> {
        let io_err = |source| CacheError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut cache = Cache {
            path: path.to_path_buf(),
            entries: HashMap::new(),
        };
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(cache),
            Err(e) => return Err(io_err(e)),
        };
        let mut reader = BufReader::new(file);
        let mut buf = Vec::new();
        let mut good_len: u64 = 0;
        let mut line_no = 0;
        loop {
            buf.clear();
            let n = reader.read_until(b'\n', &mut buf).map_err(io_err)?;
            if n == 0 {
                break;
            }
            line_no += 1;
            if buf.last() != Some(&b'\n') {
                tracing::warn!(path = %path.display(), line = line_no, "cutting off a torn last cache line left by a crash; its outcome is re-collected");
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(io_err)?;
                file.set_len(good_len).map_err(io_err)?;
                file.sync_all().map_err(io_err)?;
                break;
            }
            let (key, outcome) = parse_line(&buf).map_err(|what| CacheError::Corrupt {
                path: path.to_path_buf(),
                line: line_no,
                what,
            })?;
            cache.entries.entry(key).or_insert(outcome);
            good_len += n as u64;
        }
        Ok(cache)
    }

    pub fn get(&self, custom_id: &str, body_sha256: &str) -> Option<&Outcome> {
        self.entries
            .get(&(custom_id.to_string(), body_sha256.to_string()))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Appends outcomes (skipping keys already present) with one fsync; returns how many were new.
    pub fn put_all<'o>(
        &mut self,
        items: impl IntoIterator<Item = (&'o str, &'o str, Outcome)>,
        source: &str,
    ) -> Result<usize, CacheError> {
        let mut bytes = Vec::new();
        let mut added = Vec::new();
        for (custom_id, body_sha256, outcome) in items {
            let key = (custom_id.to_string(), body_sha256.to_string());
            if self.entries.contains_key(&key) || added.iter().any(|(k, _)| k == &key) {
                continue;
            }
            let entry = Entry {
                custom_id: key.0.clone(),
                body_sha256: key.1.clone(),
                outcome,
                source: source.to_string(),
            };
            let entry_json = serde_json::to_string(&entry).map_err(|e| CacheError::Io {
                path: self.path.clone(),
                source: std::io::Error::other(e),
            })?;
            let sum = hex(&Sha256::digest(entry_json.as_bytes()));
            writeln!(bytes, "{{\"sum\":\"{sum}\",\"entry\":{entry_json}}}").map_err(|e| {
                CacheError::Io {
                    path: self.path.clone(),
                    source: e,
                }
            })?;
            added.push((key, entry.outcome));
        }
        if added.is_empty() {
            return Ok(0);
        }
        fsio::append_durable(&self.path, &bytes).map_err(|source| CacheError::Io {
            path: self.path.clone(),
            source,
        })?;
        let count = added.len();
        self.entries.extend(added);
        Ok(count)
    }

    pub fn put(
        &mut self,
        custom_id: &str,
        body_sha256: &str,
        outcome: Outcome,
        source: &str,
    ) -> Result<bool, CacheError> {
        Ok(self.put_all([(custom_id, body_sha256, outcome)], source)? == 1)
    }
}

fn parse_line(bytes: &[u8]) -> Result<((String, String), Outcome), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?;
    let line: Line =
        serde_json::from_str(text.trim_end()).map_err(|e| format!("not a cache record: {e}"))?;
    let sum = hex(&Sha256::digest(line.entry.get().as_bytes()));
    if sum != line.sum {
        return Err("checksum mismatch".into());
    }
    let entry: Entry =
        serde_json::from_str(line.entry.get()).map_err(|e| format!("bad entry: {e}"))?;
    Ok(((entry.custom_id, entry.body_sha256), entry.outcome))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::Failure;
    use serde_json::json;

    fn ok(n: u64) -> Outcome {
        Outcome::Ok(json!({"choices": [{"message": {"content": format!("reply {n}")}}]}))
    }

    #[test]
    fn outcomes_survive_a_reopen_and_duplicates_are_not_appended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.jsonl");
        let mut cache = Cache::open(&path).unwrap();
        assert!(cache.put("a", "h1", ok(1), "batch_1").unwrap());
        assert!(
            !cache.put("a", "h1", ok(2), "batch_2").unwrap(),
            "first outcome wins"
        );
        let failure = Outcome::Failed(Failure {
            code: "json_validate_failed".into(),
            status: Some(400),
            message: "bad".into(),
        });
        cache.put("b", "h2", failure.clone(), "batch_1").unwrap();
        let reopened = Cache::open(&path).unwrap();
        assert_eq!(reopened.len(), 2);
        assert_eq!(reopened.get("a", "h1"), Some(&ok(1)));
        assert_eq!(reopened.get("b", "h2"), Some(&failure));
        assert_eq!(
            reopened.get("a", "other-body"),
            None,
            "a changed body is a miss"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
    }

    #[test]
    fn a_torn_last_line_is_cut_off_and_the_rest_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.jsonl");
        let mut cache = Cache::open(&path).unwrap();
        cache.put("a", "h", ok(1), "s").unwrap();
        cache.put("b", "h", ok(2), "s").unwrap();
        let full = std::fs::read(&path).unwrap();
        std::fs::write(&path, &full[..full.len() - 10]).unwrap();
        let reopened = Cache::open(&path).unwrap();
        assert_eq!(reopened.len(), 1);
        assert!(reopened.get("a", "h").is_some());
        let first_line_len = full.iter().position(|b| *b == b'\n').unwrap() + 1;
        assert_eq!(
            std::fs::metadata(&path).unwrap().len() as usize,
            first_line_len,
            "the torn tail is gone"
        );
    }

    #[test]
    fn a_corrupted_line_is_an_error_that_says_how_to_recover() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.jsonl");
        let mut cache = Cache::open(&path).unwrap();
        cache.put("a", "h", ok(1), "s").unwrap();
        cache.put("b", "h", ok(2), "s").unwrap();
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replacen("reply 1", "reply 9", 1);
        std::fs::write(&path, text).unwrap();
        let err = Cache::open(&path)
            .err()
            .expect("corruption is detected")
            .to_string();
        assert!(
            err.contains("line 1")
                && err.contains("checksum mismatch")
                && err.contains("move the file aside"),
            "{err}"
        );
        std::fs::write(&path, "garbage\n").unwrap();
        assert!(Cache::open(&path).is_err());
    }
}
