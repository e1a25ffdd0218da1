//! Moves the outcomes in a batch output file (downloaded from the API or imported from another
//! engine) into the response cache. The file is streamed line by line and written to the cache
//! in bounded chunks, so memory does not grow with the file.

use super::cache::Cache;
use super::{BatchError, Outcome};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

/// Outcomes held before one durable append to the cache.
const CHUNK_BYTES: usize = 8 << 20;

/// What one file gave.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Ingested {
    /// Outcomes new to the cache.
    pub added: usize,
    /// Lines whose custom_id the submission never held.
    pub foreign: usize,
}

/// Streams `path` into `cache`. `keys` maps each custom_id the submission held to its body hash;
/// `bad_line(line_no, why)` decides whether a line that is not an output line stops the ingest
/// (what was read before it is kept either way).
pub fn ingest_file(
    cache: &mut Cache,
    path: &Path,
    keys: &BTreeMap<String, String>,
    source: &str,
    bad_line: impl FnMut(usize, String) -> Result<(), BatchError>,
) -> Result<Ingested, BatchError> {
    let mut sink = Sink {
        cache,
        source,
        chunk: Vec::new(),
        chunk_bytes: 0,
        ingested: Ingested::default(),
    };
    let read = sink.read(path, keys, bad_line);
    sink.flush()?;
    read.map(|()| sink.ingested)
}

/// Outcomes on their way to the cache, appended a chunk at a time.
struct Sink<'c> {
    cache: &'c mut Cache,
    source: &'c str,
    chunk: Vec<(String, String, Outcome)>,
    chunk_bytes: usize,
    ingested: Ingested,
}

impl Sink<'_> {
    fn read(
        &mut self,
        path: &Path,
        keys: &BTreeMap<String, String>,
        mut bad_line: impl FnMut(usize, String) -> Result<(), BatchError>,
    ) -> Result<(), BatchError> {
        let read_err =
            |e: std::io::Error| BatchError::Runtime(format!("cannot read {}: {e}", path.display()));
        let file = std::fs::File::open(path).map_err(read_err)?;
        let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
        let mut buf = Vec::new();
        let mut line_no = 0;
        loop {
            buf.clear();
            if reader.read_until(b'\n', &mut buf).map_err(read_err)? == 0 {
                return Ok(());
            }
            line_no += 1;
            if buf.trim_ascii().is_empty() {
                continue;
            }
            let v: Value = match serde_json::from_slice(&buf) {
                Ok(v) => v,
                Err(e) => {
                    bad_line(line_no, format!("not a batch output line ({e})"))?;
                    continue;
                }
            };
            let Some(custom_id) = v.get("custom_id").and_then(Value::as_str) else {
                bad_line(line_no, "no custom_id".into())?;
                continue;
            };
            let Some(hash) = keys.get(custom_id) else {
                self.ingested.foreign += 1;
                continue;
            };
            if let Some(outcome) = super::remote::line_outcome(&v) {
                self.chunk_bytes += buf.len();
                self.chunk
                    .push((custom_id.to_string(), hash.clone(), outcome));
            }
            if self.chunk_bytes >= CHUNK_BYTES {
                self.flush()?;
            }
        }
    }

    fn flush(&mut self) -> Result<(), BatchError> {
        self.ingested.added += self.cache.put_all(self.chunk.drain(..), self.source)?;
        self.chunk_bytes = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(id: &str, status: u16, text: &str) -> String {
        json!({"id": "r", "custom_id": id, "response": {"status_code": status, "body": {"choices": [{"message": {"content": text}}]}}, "error": null}).to_string() + "\n"
    }

    fn keys(ids: &[&str]) -> BTreeMap<String, String> {
        ids.iter()
            .map(|id| (id.to_string(), format!("hash-{id}")))
            .collect()
    }

    #[test]
    fn served_lines_reach_the_cache_and_the_rest_are_counted_or_reported() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.jsonl");
        let text = [
            line("a", 200, "first"),
            "not json\n".into(),
            line("stranger", 200, "never sent"),
            "\n".into(),
            line("b", 500, "unserved"),
            line("c", 200, "third"),
        ]
        .concat();
        std::fs::write(&output, text).unwrap();
        let mut cache = Cache::open(&dir.path().join("cache.jsonl")).unwrap();
        let mut bad = Vec::new();
        let ingested = ingest_file(
            &mut cache,
            &output,
            &keys(&["a", "b", "c"]),
            "batch_1",
            |n, why| {
                bad.push((n, why));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(
            ingested,
            Ingested {
                added: 2,
                foreign: 1
            }
        );
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].0, 2, "the bad line is named by its number");
        assert!(cache.contains("a", "hash-a") && cache.contains("c", "hash-c"));
        assert!(
            !cache.contains("b", "hash-b"),
            "a 500 line stays unserved, to be resubmitted"
        );
        let again = ingest_file(
            &mut cache,
            &output,
            &keys(&["a", "b", "c"]),
            "batch_1",
            |_, _| Ok(()),
        )
        .unwrap();
        assert_eq!(
            again.added, 0,
            "re-ingesting after a crash appends nothing twice"
        );
    }

    #[test]
    fn a_strict_caller_stops_at_the_first_bad_line_and_keeps_what_came_before() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.jsonl");
        std::fs::write(&output, line("a", 200, "x") + "{\"custom_id\": 5}\n").unwrap();
        let mut cache = Cache::open(&dir.path().join("cache.jsonl")).unwrap();
        let err = ingest_file(&mut cache, &output, &keys(&["a"]), "import", |n, why| {
            Err(BatchError::Usage(format!("line {n}: {why}")))
        })
        .expect_err("the bad line stops the import");
        assert_eq!(err.to_string(), "line 2: no custom_id");
        assert_eq!(err.exit_code(), 2);
        assert!(
            cache.contains("a", "hash-a"),
            "the line before the bad one is kept"
        );
    }
}
