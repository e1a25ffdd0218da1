//! Moves the outcomes in a batch output file (downloaded from the API or imported from another
//! engine) into the response cache. The file is streamed line by line and written to the cache
//! in bounded chunks, so memory does not grow with the file.

use super::cache::{Cache, CacheLine};
use super::{BatchError, Failure};
use crate::parallel;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

/// Lines parsed together and appended to the cache with one fsync.
const CHUNK_BYTES: usize = 8 << 20;

/// A final outcome as the cache stores it ([`super::Outcome`]'s shape), with a served response
/// body passed through as the server's bytes instead of being parsed and written again.
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
enum LineOutcome {
    Ok(Box<RawValue>),
    Failed(Failure),
}

/// The parts of an output or error line that decide its outcome.
#[derive(Deserialize)]
struct OutputLine<'a> {
    #[serde(borrow, default)]
    custom_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    response: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Response<'a> {
    #[serde(borrow, default)]
    status_code: Option<&'a RawValue>,
    #[serde(borrow, default)]
    body: Option<&'a RawValue>,
}

/// The final outcome a line's `response` carries, or None when the request was not served
/// (so it is resubmitted, never paid for twice).
fn line_outcome(response: Option<&RawValue>) -> Option<LineOutcome> {
    let response: Response = serde_json::from_str(response?.get()).ok()?;
    let status = response
        .status_code
        .and_then(|s| serde_json::from_str::<u64>(s.get()).ok())
        .and_then(|s| u16::try_from(s).ok())
        .unwrap_or(0);
    let body = response.body;
    let is_object = body.is_some_and(|b| b.get().trim_start().starts_with('{'));
    match (status, body) {
        (200, Some(body)) if is_object => Some(LineOutcome::Ok(body.to_owned())),
        (429 | 500..=599 | 0, _) => None,
        _ => {
            let body: Value = body
                .and_then(|b| serde_json::from_str(b.get()).ok())
                .unwrap_or(Value::Null);
            let text = |pointer: &str| body.pointer(pointer).and_then(Value::as_str);
            Some(LineOutcome::Failed(Failure {
                code: text("/error/code").unwrap_or("request_failed").to_string(),
                status: Some(status),
                message: text("/error/message")
                    .unwrap_or("the server gave no message")
                    .chars()
                    .take(500)
                    .collect(),
            }))
        }
    }
}

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
/// (what was read before it is kept either way). Lines are read a chunk at a time, parsed and
/// rendered on every core, then handled and appended in file order.
pub fn ingest_file(
    cache: &mut Cache,
    path: &Path,
    keys: &BTreeMap<String, String>,
    source: &str,
    mut bad_line: impl FnMut(usize, String) -> Result<(), BatchError>,
) -> Result<Ingested, BatchError> {
    let read_err =
        |e: std::io::Error| BatchError::Runtime(format!("cannot read {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(read_err)?;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let threads = parallel::threads();
    let mut ingested = Ingested::default();
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut chunk_bytes = 0;
    let mut first_line_no = 1;
    loop {
        let mut buf = Vec::new();
        let n = reader.read_until(b'\n', &mut buf).map_err(read_err)?;
        if n > 0 {
            chunk_bytes += n;
            lines.push(buf);
            if chunk_bytes < CHUNK_BYTES {
                continue;
            }
        }
        let parsed = parallel::map(&lines, threads, |line| parse_line(line, keys, source));
        let mut ready = Vec::new();
        let mut stopped = None;
        for (k, line) in parsed.into_iter().enumerate() {
            match line {
                Line::Blank | Line::Unserved => {}
                Line::Foreign => ingested.foreign += 1,
                Line::Served(rendered) => ready.push(rendered.map_err(|e| {
                    BatchError::Runtime(format!("cannot prepare a cache line: {e}"))
                })?),
                Line::Bad(why) => {
                    if let Err(e) = bad_line(first_line_no + k, why) {
                        stopped = Some(e);
                        break;
                    }
                }
            }
        }
        ingested.added += cache.append(ready)?;
        if let Some(e) = stopped {
            return Err(e);
        }
        if n == 0 {
            return Ok(ingested);
        }
        first_line_no += lines.len();
        lines.clear();
        chunk_bytes = 0;
    }
}

/// What one line of an output file is.
enum Line {
    Blank,
    Bad(String),
    /// Its custom_id was never sent in this submission.
    Foreign,
    /// The request was not served (expired, 429, 5xx): it is resubmitted.
    Unserved,
    Served(std::io::Result<CacheLine>),
}

fn parse_line(buf: &[u8], keys: &BTreeMap<String, String>, source: &str) -> Line {
    if buf.trim_ascii().is_empty() {
        return Line::Blank;
    }
    let line: OutputLine = match serde_json::from_slice(buf) {
        Ok(line) => line,
        Err(e) => return Line::Bad(format!("not a batch output line ({e})")),
    };
    let custom_id = line
        .custom_id
        .and_then(|id| serde_json::from_str::<String>(id.get()).ok());
    let Some(custom_id) = custom_id else {
        return Line::Bad("no custom_id".into());
    };
    let Some(hash) = keys.get(&custom_id) else {
        return Line::Foreign;
    };
    match line_outcome(line.response) {
        Some(outcome) => Line::Served(CacheLine::render(custom_id, hash.clone(), &outcome, source)),
        None => Line::Unserved,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::Outcome;
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
        assert_eq!(
            cache.get("a", "hash-a").unwrap(),
            Some(Outcome::Ok(
                json!({"choices": [{"message": {"content": "first"}}]})
            )),
            "a body passed through unparsed reads back as the same outcome"
        );
        assert!(cache.contains("c", "hash-c"));
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

    proptest::proptest! {
        #[test]
        fn any_line_is_classified_without_a_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let _ = parse_line(&bytes, &keys(&["a"]), "s");
        }

        #[test]
        fn any_response_value_is_classified_without_a_panic(text in ".{0,120}") {
            if let Ok(raw) = serde_json::from_str::<Box<RawValue>>(&text) {
                let _ = line_outcome(Some(&raw));
            }
        }
    }

    #[test]
    fn a_refused_request_is_a_final_failure_and_odd_statuses_are_unserved() {
        let refused = json!({"status_code": 400, "body": {"error": {"code": "json_validate_failed", "message": "bad json"}}});
        let raw = serde_json::value::to_raw_value(&refused).unwrap();
        let Some(LineOutcome::Failed(failure)) = line_outcome(Some(&raw)) else {
            panic!("a 400 is a final failure");
        };
        assert_eq!(
            (
                failure.code.as_str(),
                failure.status,
                failure.message.as_str()
            ),
            ("json_validate_failed", Some(400), "bad json")
        );
        for response in [
            json!(null),
            json!("text"),
            json!({"status_code": "200", "body": {}}),
            json!({"status_code": 70000, "body": {}}),
            json!({"status_code": 503, "body": {}}),
            json!({"status_code": 200, "body": "not an object"}),
        ] {
            let raw = serde_json::value::to_raw_value(&response).unwrap();
            let outcome = line_outcome(Some(&raw));
            assert!(
                outcome.is_none() || matches!(outcome, Some(LineOutcome::Failed(_))),
                "{response}: {outcome:?}"
            );
        }
        assert!(line_outcome(None).is_none());
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
