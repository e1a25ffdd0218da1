//! The response cache: an append-only JSONL file of final outcomes keyed by custom_id and the
//! SHA-256 of the request body. It is the record of everything paid for, so every line carries a
//! checksum, appends are fsynced, damage is reported instead of silently skipped, and no line is
//! written that would not read back.
//!
//! One outcome per key: the key's first line, unless that is a failure and a success follows, in
//! which case the first success. A success is final; a failure gives way only to a success
//! appended after it (an import of corrected results), and its line stays in the file, so a
//! crash during that append leaves the failure in force and the import can simply be repeated.

use super::{Outcome, OutcomeOf};
use crate::util::digest::sha256_hex;
use crate::util::fsio;
use crate::util::json_walk::Walked;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::hash_map::Entry as Slot;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("cannot read the response cache {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the response cache {path} is damaged at line {line} ({what}). Paid responses are never dropped silently: move the file aside (`mv {} {}.damaged`) and re-run. The run rebuilds the cache from the journal and the downloaded output files under state/downloads, buying nothing again; results imported with --import are imported again by passing the same files, and local results are computed again.", crate::util::fsio::shell_word(.path), crate::util::fsio::shell_word(.path))]
    Corrupt {
        path: PathBuf,
        line: usize,
        what: String,
    },
}

/// An entry as read, its response body as `B`.
#[derive(Deserialize)]
struct Entry<B> {
    outcome: OutcomeOf<B>,
}

/// An entry as written: any outcome that serialises like [`Outcome`] (ingest writes response
/// bodies through unparsed).
#[derive(Serialize)]
struct EntryOut<'a, O> {
    custom_id: &'a str,
    body_sha256: &'a str,
    outcome: &'a O,
    source: &'a str,
}

/// An entry's key and whether it is a failure, read without building its outcome (opening a
/// large cache stays cheap).
#[derive(Deserialize)]
struct EntryKey {
    custom_id: String,
    body_sha256: String,
    outcome: OutcomeKind,
}

/// Which [`Outcome`] variant an entry holds, its content skipped.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum OutcomeKind {
    Ok(serde::de::IgnoredAny),
    Failed(serde::de::IgnoredAny),
}

#[derive(Serialize, Deserialize)]
struct Line<'a> {
    sum: String,
    #[serde(borrow)]
    entry: &'a RawValue,
}

/// One entry as its checksummed cache line, rendered apart from the cache (on any thread)
/// before [`Cache::append`] writes it.
pub struct CacheLine {
    key: (String, String),
    failed: bool,
    bytes: Vec<u8>,
}

impl CacheLine {
    /// Renders the checksummed line, refusing (as `InvalidData`) an entry whose body would not
    /// read back as a `Value`; the check walks the body instead of building it.
    pub fn render<O: Serialize>(
        custom_id: String,
        body_sha256: String,
        outcome: &O,
        source: &str,
    ) -> std::io::Result<CacheLine> {
        let entry = EntryOut {
            custom_id: &custom_id,
            body_sha256: &body_sha256,
            outcome,
            source,
        };
        let entry_json = serde_json::to_string(&entry).map_err(std::io::Error::other)?;
        let failed = match serde_json::from_str::<Entry<Walked>>(&entry_json) {
            Ok(entry) => matches!(entry.outcome, OutcomeOf::Failed(_)),
            Err(e) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("it would not read back: {e}"),
                ))
            }
        };
        let sum = sha256_hex(entry_json.as_bytes());
        let mut bytes = Vec::with_capacity(entry_json.len() + 90);
        writeln!(bytes, "{{\"sum\":\"{sum}\",\"entry\":{entry_json}}}")?;
        Ok(CacheLine {
            key: (custom_id, body_sha256),
            failed,
            bytes,
        })
    }
}

/// Where one entry's line sits in the file.
#[derive(Clone, Copy)]
struct Span {
    offset: u64,
    len: usize,
    line: usize,
    failed: bool,
}

impl Span {
    /// Whether a line of this outcome kind, coming after the one at `self`, becomes the key's
    /// outcome: only a success after a failure does.
    fn gives_way_to(&self, failed: bool) -> bool {
        self.failed && !failed
    }
}

/// The cache: an index of keys to lines in memory, outcomes read from disk on demand, so that
/// memory grows with the number of requests but not with the size of their responses.
pub struct Cache {
    path: PathBuf,
    index: HashMap<(String, String), Span>,
    len_bytes: u64,
    lines: usize,
    /// The line number of a torn last line that `open` cut off.
    torn_line: Option<usize>,
    /// Read with positioned reads, so that threads share it without a lock.
    reader: OnceLock<File>,
}

impl Cache {
    /// Loads the cache index. A torn last line (a crash during an append) is cut off, and
    /// [`Cache::torn_line`] says so: its outcome is re-collected from the journal. Any other
    /// damage is an error.
    pub fn open(path: &Path) -> Result<Cache, CacheError> {
        let mut cache = Cache {
            path: path.to_path_buf(),
            index: HashMap::new(),
            len_bytes: 0,
            lines: 0,
            torn_line: None,
            reader: OnceLock::new(),
        };
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(cache),
            Err(e) => return Err(cache.io_err(e)),
        };
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let n = reader
                .read_until(b'\n', &mut buf)
                .map_err(|e| cache.io_err(e))?;
            if n == 0 {
                break;
            }
            if buf.last() != Some(&b'\n') {
                cache.torn_line = Some(cache.lines + 1);
                crate::util::fsio::truncate_durable(path, cache.len_bytes)
                    .map_err(|e| cache.io_err(e))?;
                break;
            }
            cache.lines += 1;
            let key =
                checked_entry::<EntryKey>(&buf).map_err(|what| cache.corrupt(cache.lines, what))?;
            let span = Span {
                offset: cache.len_bytes,
                len: n,
                line: cache.lines,
                failed: matches!(key.outcome, OutcomeKind::Failed(_)),
            };
            match cache.index.entry((key.custom_id, key.body_sha256)) {
                Slot::Vacant(vacant) => {
                    vacant.insert(span);
                }
                Slot::Occupied(mut held) => {
                    if held.get().gives_way_to(span.failed) {
                        held.insert(span);
                    }
                }
            }
            cache.len_bytes += n as u64;
        }
        Ok(cache)
    }

    /// The line number of the torn last line `open` cut off (a crash during an append).
    pub fn torn_line(&self) -> Option<usize> {
        self.torn_line
    }

    pub fn contains(&self, custom_id: &str, body_sha256: &str) -> bool {
        self.index
            .contains_key(&(custom_id.to_string(), body_sha256.to_string()))
    }

    /// Whether the key's outcome is a failure (which a later success would replace).
    pub fn holds_failure(&self, custom_id: &str, body_sha256: &str) -> bool {
        self.index
            .get(&(custom_id.to_string(), body_sha256.to_string()))
            .is_some_and(|span| span.failed)
    }

    /// The cached outcome, read from disk and checked against its checksum again.
    pub fn get(&self, custom_id: &str, body_sha256: &str) -> Result<Option<Outcome>, CacheError> {
        self.get_as(custom_id, body_sha256)
    }

    /// [`Cache::get`], with the response body read as `B`: a reader of a few fields is spared
    /// building the whole body. Every body in the cache reads as a `Value` ([`CacheLine::render`]
    /// makes sure), so it reads as any `B` that walks what it skips (`crate::util::json_walk`).
    pub fn get_as<B: DeserializeOwned>(
        &self,
        custom_id: &str,
        body_sha256: &str,
    ) -> Result<Option<OutcomeOf<B>>, CacheError> {
        let Some(span) = self
            .index
            .get(&(custom_id.to_string(), body_sha256.to_string()))
            .copied()
        else {
            return Ok(None);
        };
        let mut buf = vec![0; span.len];
        let reader = match self.reader.get() {
            Some(file) => file,
            None => {
                let file = File::open(&self.path).map_err(|e| self.io_err(e))?;
                self.reader.get_or_init(|| file)
            }
        };
        crate::util::fsio::read_exact_at(reader, &mut buf, span.offset)
            .map_err(|e| self.io_err(e))?;
        let entry =
            checked_entry::<Entry<B>>(&buf).map_err(|what| self.corrupt(span.line, what))?;
        Ok(Some(entry.outcome))
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Appends outcomes with one fsync, skipping those that would not become their key's outcome
    /// (every key already present, except a failure followed by a success); returns how many were
    /// written. An outcome is an [`Outcome`] or anything that serialises the same way.
    pub fn put_all<O: Serialize>(
        &mut self,
        items: impl IntoIterator<Item = (String, String, O)>,
        source: &str,
    ) -> Result<usize, CacheError> {
        let mut lines = Vec::new();
        for (custom_id, body_sha256, outcome) in items {
            lines.push(
                CacheLine::render(custom_id, body_sha256, &outcome, source)
                    .map_err(|e| self.io_err(e))?,
            );
        }
        self.append(lines)
    }

    /// Appends rendered lines with one fsync, skipping those that would not become their key's
    /// outcome (as [`Cache::put_all`]); returns how many were written.
    pub fn append(&mut self, lines: Vec<CacheLine>) -> Result<usize, CacheError> {
        let mut bytes = Vec::new();
        let mut added: HashMap<(String, String), Span> = HashMap::new();
        let mut offset = self.len_bytes;
        let mut line_no = self.lines;
        let mut count = 0;
        for line in lines {
            let held = added.get(&line.key).or_else(|| self.index.get(&line.key));
            if held.is_some_and(|span| !span.gives_way_to(line.failed)) {
                continue;
            }
            bytes.extend_from_slice(&line.bytes);
            line_no += 1;
            let span = Span {
                offset,
                len: line.bytes.len(),
                line: line_no,
                failed: line.failed,
            };
            added.insert(line.key, span);
            offset += span.len as u64;
            count += 1;
        }
        if added.is_empty() {
            return Ok(0);
        }
        fsio::append_durable(&self.path, &bytes).map_err(|e| self.io_err(e))?;
        self.index.extend(added);
        self.len_bytes = offset;
        self.lines = line_no;
        Ok(count)
    }

    pub fn put(
        &mut self,
        custom_id: &str,
        body_sha256: &str,
        outcome: Outcome,
        source: &str,
    ) -> Result<bool, CacheError> {
        Ok(self.put_all(
            [(custom_id.to_string(), body_sha256.to_string(), outcome)],
            source,
        )? == 1)
    }

    fn io_err(&self, source: std::io::Error) -> CacheError {
        CacheError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn corrupt(&self, line: usize, what: String) -> CacheError {
        CacheError::Corrupt {
            path: self.path.clone(),
            line,
            what,
        }
    }
}

/// Parses one cache line whose checksum matches into `T` (the whole entry or just its key).
fn checked_entry<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?;
    let text = text.trim_end();
    let parsed: Line;
    let (sum, entry) = match rendered_parts(text) {
        Some(parts) => parts,
        None => {
            parsed = serde_json::from_str(text).map_err(|e| format!("not a cache record: {e}"))?;
            (parsed.sum.as_str(), parsed.entry.get())
        }
    };
    if sha256_hex(entry.as_bytes()) != sum {
        return Err("checksum mismatch".into());
    }
    serde_json::from_str(entry).map_err(|e| format!("bad entry: {e}"))
}

/// The sum and the entry of a line laid out as [`CacheLine::render`] writes it,
/// `{"sum":"<64 hex digits>","entry":{…}}`, sliced out without a first parse of the line. Any
/// other layout of the same JSON is None, and is parsed. Where this gives parts, the parse would
/// give the same ones: the entry is then read as JSON on its own, which fails where the line
/// would not parse.
fn rendered_parts(line: &str) -> Option<(&str, &str)> {
    const SUM_DIGITS: usize = 64;
    let rest = line.strip_prefix(r#"{"sum":""#)?;
    let (sum, rest) = rest.split_at_checked(SUM_DIGITS)?;
    let entry = rest.strip_prefix(r#"","entry":"#)?.strip_suffix('}')?;
    let laid_out = sum.bytes().all(|b| b.is_ascii_hexdigit())
        && entry.starts_with('{')
        && entry.ends_with('}');
    laid_out.then_some((sum, entry))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::Failure;
    use serde_json::{json, Value};

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
        assert_eq!(reopened.get("a", "h1").unwrap(), Some(ok(1)));
        assert_eq!(reopened.get("b", "h2").unwrap(), Some(failure));
        assert_eq!(
            reopened.get("a", "other-body").unwrap(),
            None,
            "a changed body is a miss"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
    }

    fn failed(message: &str) -> Outcome {
        Outcome::Failed(Failure {
            code: "request_failed".into(),
            status: Some(400),
            message: message.into(),
        })
    }

    #[test]
    fn a_later_success_replaces_a_failure_and_nothing_replaces_a_success() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.jsonl");
        let mut cache = Cache::open(&path).unwrap();
        cache.put("f", "h", failed("first"), "import:a").unwrap();
        cache.put("s", "h", ok(1), "import:a").unwrap();
        assert!(cache.holds_failure("f", "h") && !cache.holds_failure("s", "h"));
        assert!(
            !cache.put("f", "h", failed("second"), "import:b").unwrap(),
            "a failure does not replace a failure"
        );
        assert!(
            !cache.put("s", "h", failed("late"), "import:b").unwrap(),
            "a failure never replaces a success"
        );
        assert!(
            !cache.put("s", "h", ok(2), "import:b").unwrap(),
            "a success never replaces a success"
        );
        assert!(cache.put("f", "h", ok(3), "import:b").unwrap());
        assert!(
            !cache.put("f", "h", ok(4), "import:c").unwrap(),
            "the replacing success is final"
        );
        for reading in [&cache, &Cache::open(&path).unwrap()] {
            assert_eq!(reading.len(), 2);
            assert_eq!(reading.get("f", "h").unwrap(), Some(ok(3)));
            assert_eq!(reading.get("s", "h").unwrap(), Some(ok(1)));
            assert!(!reading.holds_failure("f", "h"));
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text.lines().count(),
            3,
            "the failure's line stays: the file is only ever appended to"
        );
    }

    #[test]
    fn a_batch_with_a_failure_then_a_success_for_one_key_keeps_the_success() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.jsonl");
        let mut cache = Cache::open(&path).unwrap();
        let written = cache
            .put_all(
                [
                    ("k".to_string(), "h".to_string(), failed("x")),
                    ("k".to_string(), "h".to_string(), ok(1)),
                    ("k".to_string(), "h".to_string(), failed("y")),
                ],
                "s",
            )
            .unwrap();
        assert_eq!(written, 2);
        assert_eq!(cache.get("k", "h").unwrap(), Some(ok(1)));
        assert_eq!(
            Cache::open(&path).unwrap().get("k", "h").unwrap(),
            Some(ok(1))
        );
    }

    #[test]
    fn a_crash_while_a_success_replaces_a_failure_leaves_the_failure() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.jsonl");
        let mut cache = Cache::open(&path).unwrap();
        cache.put("f", "h", failed("first"), "import:a").unwrap();
        let before = std::fs::read(&path).unwrap();
        cache.put("f", "h", ok(1), "import:b").unwrap();
        let after = std::fs::read(&path).unwrap();
        std::fs::write(
            &path,
            &after[..before.len() + (after.len() - before.len()) / 2],
        )
        .unwrap();
        let mut reopened = Cache::open(&path).unwrap();
        assert_eq!(reopened.get("f", "h").unwrap(), Some(failed("first")));
        assert!(
            reopened.put("f", "h", ok(1), "import:b").unwrap(),
            "importing again after the crash replaces the failure"
        );
        assert_eq!(
            Cache::open(&path).unwrap().get("f", "h").unwrap(),
            Some(ok(1))
        );
    }

    /// A cache on disk holding outcomes `a` (reply 1) and `b` (reply 2).
    fn cache_with_a_and_b() -> (tempfile::TempDir, PathBuf, Cache) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.jsonl");
        let mut cache = Cache::open(&path).unwrap();
        cache.put("a", "h", ok(1), "s").unwrap();
        cache.put("b", "h", ok(2), "s").unwrap();
        (dir, path, cache)
    }

    #[test]
    fn outcomes_are_read_from_disk_and_checked_on_every_get() {
        let (_dir, path, cache) = cache_with_a_and_b();
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replacen("reply 2", "reply 7", 1);
        std::fs::write(&path, text).unwrap();
        assert_eq!(cache.get("a", "h").unwrap(), Some(ok(1)));
        let err = cache
            .get("b", "h")
            .expect_err("damage is detected")
            .to_string();
        assert!(
            err.contains("line 2") && err.contains("checksum mismatch"),
            "{err}"
        );
    }

    #[test]
    fn a_torn_last_line_is_cut_off_and_the_rest_kept() {
        let (_dir, path, _cache) = cache_with_a_and_b();
        let full = std::fs::read(&path).unwrap();
        std::fs::write(&path, &full[..full.len() - 10]).unwrap();
        let reopened = Cache::open(&path).unwrap();
        assert_eq!(reopened.len(), 1);
        assert!(reopened.contains("a", "h"));
        let first_line_len = full.iter().position(|b| *b == b'\n').unwrap() + 1;
        assert_eq!(
            std::fs::metadata(&path).unwrap().len() as usize,
            first_line_len,
            "the torn tail is gone"
        );
    }

    #[test]
    fn a_line_in_another_layout_of_the_same_json_reads_as_the_rendered_one() {
        let (_dir, path, _cache) = cache_with_a_and_b();
        let text = std::fs::read_to_string(&path).unwrap();
        let first = text.lines().next().unwrap();
        assert!(rendered_parts(first).is_some(), "render's own layout");
        let line: serde_json::Value = serde_json::from_str(first).unwrap();
        let spaced = format!(
            "{{ \"entry\" : {}, \"sum\": {} }}",
            line["entry"], line["sum"]
        );
        assert!(rendered_parts(&spaced).is_none());
        let as_rendered = checked_entry::<Entry<Value>>(first.as_bytes()).unwrap();
        let as_spaced = checked_entry::<Entry<Value>>(spaced.as_bytes()).unwrap();
        assert_eq!(as_spaced.outcome, as_rendered.outcome);
        assert_eq!(as_rendered.outcome, ok(1));
        let broken = first.replacen("reply 1", "reply 1\"", 1);
        assert!(rendered_parts(&broken).is_some());
        assert!(checked_entry::<Entry<Value>>(broken.as_bytes()).is_err());
    }

    #[test]
    fn a_corrupted_line_is_an_error_that_says_how_to_recover() {
        let (_dir, path, _cache) = cache_with_a_and_b();
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
