//! Moves the outcomes in a batch output file (downloaded from the API or imported from another
//! engine) into the response cache. The file is streamed line by line and written to the cache
//! in bounded chunks, so memory does not grow with the file. A line is untrusted: one that would
//! not read back from the cache (nested too deep, a number out of range) is kept as a failed
//! outcome with its reason instead of damaging the cache, and a line that is not JSON but still
//! names one of the submission's requests can be kept as that request's failure.

use super::cache::{Cache, CacheLine};
use super::{BatchError, Failure};
use crate::util::parallel;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

/// Lines parsed together and appended to the cache with one fsync.
const CHUNK_BYTES: usize = 8 << 20;

/// The longest output line read whole: a chat completion of a million tokens is a few MB, so a
/// longer line is a server's junk, and is reported without being held in memory.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// A final outcome as the cache stores it ([`super::Outcome`]'s shape), with a served response
/// body passed through as the server's bytes instead of being parsed and written again.
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum LineOutcome {
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
    /// vLLM's `run-batch` puts a failed request's message here, with `response.body` null.
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Response<'a> {
    #[serde(borrow, default)]
    status_code: Option<&'a RawValue>,
    #[serde(borrow, default)]
    body: Option<&'a RawValue>,
}

/// The final outcome a line's `response` carries, or None when the request was not served
/// (so it is resubmitted, never paid for twice). A failure's message is looked for in the body
/// and in the line's top-level `error` (see [`failure`]).
fn line_outcome(response: Option<&RawValue>, error: Option<&RawValue>) -> Option<LineOutcome> {
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
        _ => Some(LineOutcome::Failed(failure(status, body, error))),
    }
}

/// Longest failure message kept, in characters.
const MAX_MESSAGE_CHARS: usize = 500;

/// The message of a failure whose server said nothing that reads as one.
pub(super) const NO_MESSAGE: &str = "the server gave no message";

/// A failed request's code and message, from the first place that has them:
/// - the response body's `error` object (OpenAI, Groq: `{"error": {"message", "code"}}`);
/// - the line's top-level `error` as vLLM's `run-batch` writes it with a null body: a plain
///   string, its `ErrorResponse` `{"error": {"message", "type", "code"}}`, or the older flat
///   `{"message", "type", "code"}`; OpenAI's error-file `{"code", "message"}` reads the same way.
///
/// The code is the first string `code`, else the first string `type` (vLLM's codes are numbers,
/// the HTTP status already kept), else `request_failed`.
pub(super) fn failure(status: u16, body: Option<&RawValue>, error: Option<&RawValue>) -> Failure {
    let parse = |raw: Option<&RawValue>| {
        raw.and_then(|r| serde_json::from_str::<Value>(r.get()).ok())
            .unwrap_or(Value::Null)
    };
    let (body, error) = (parse(body), parse(error));
    let places = [body.get("error"), error.get("error"), Some(&error)];
    let places: Vec<&Value> = places.into_iter().flatten().collect();
    let field = |key: &str| {
        places
            .iter()
            .find_map(|place| place.get(key).and_then(Value::as_str))
            .filter(|text| !text.trim().is_empty())
    };
    let message = field("message").or_else(|| {
        places
            .iter()
            .find_map(|place| place.as_str())
            .filter(|text| !text.trim().is_empty())
    });
    Failure {
        code: field("code")
            .or_else(|| field("type"))
            .unwrap_or("request_failed")
            .chars()
            .take(100)
            .collect(),
        status: Some(status),
        message: message
            .unwrap_or(NO_MESSAGE)
            .chars()
            .take(MAX_MESSAGE_CHARS)
            .collect(),
    }
}

/// What one file gave.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Ingested {
    /// Outcomes the cache recorded: new ones, and successes that replaced a failure.
    pub added: usize,
    /// Lines whose custom_id the submission never held.
    pub foreign: usize,
    /// The custom_id of the first of them.
    pub first_foreign: Option<String>,
    /// Non-blank lines in the file, bad ones included.
    pub lines: usize,
}

/// What to do with a line that is not JSON but names one of the submission's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedBadLines {
    /// Keep it as that request's failed outcome (a server's deterministic bad line).
    KeepAsFailure,
    /// Treat it like any other bad line (an import must be well-formed).
    Report,
}

/// A line that is not a usable output line, as `ingest_file` reports it.
pub struct BadLine<'a> {
    pub line_no: usize,
    pub why: String,
    /// The request it was kept for as a failed outcome, if any.
    pub kept_for: Option<&'a str>,
}

/// Streams `path` into `cache`. `keys` maps each custom_id the submission held to its body hash;
/// `bad_line` decides whether a line that is not a usable output line stops the ingest (what was
/// read before it is kept either way). Lines are read a chunk at a time and parsed and rendered
/// on every core; a writer thread appends each chunk in file order and fsyncs it while the next
/// chunk is parsed. It returns only once every chunk is durable.
pub fn ingest_file(
    cache: &mut Cache,
    path: &Path,
    keys: &BTreeMap<String, String>,
    source: &str,
    named_bad_lines: NamedBadLines,
    bad_line: impl FnMut(BadLine<'_>) -> Result<(), BatchError>,
) -> Result<Ingested, BatchError> {
    let file = std::fs::File::open(path).map_err(|source| BatchError::ReadFile {
        path: path.to_path_buf(),
        source,
    })?;
    std::thread::scope(|scope| {
        let (chunks, received) = std::sync::mpsc::sync_channel::<Vec<CacheLine>>(1);
        let writer = scope.spawn(move || -> Result<usize, BatchError> {
            let mut added = 0;
            for ready in received {
                added += cache.append(ready)?;
            }
            Ok(added)
        });
        let read = read_chunks(file, path, keys, source, named_bad_lines, bad_line, &chunks);
        drop(chunks);
        let written = writer
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let added = written?;
        let mut ingested = read?;
        ingested.added = added;
        Ok(ingested)
    })
}

/// The reading side of [`ingest_file`]: reads, parses and classifies each chunk, and hands its
/// cache lines to the writer. Stops early when the writer has stopped (its error is the
/// ingest's) or `bad_line` says so.
fn read_chunks(
    file: std::fs::File,
    path: &Path,
    keys: &BTreeMap<String, String>,
    source: &str,
    named_bad_lines: NamedBadLines,
    mut bad_line: impl FnMut(BadLine<'_>) -> Result<(), BatchError>,
    chunks: &std::sync::mpsc::SyncSender<Vec<CacheLine>>,
) -> Result<Ingested, BatchError> {
    let read_err = |source: std::io::Error| BatchError::ReadFile {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let threads = parallel::threads();
    let mut ingested = Ingested::default();
    let mut lines: Vec<RawLine> = Vec::new();
    let mut chunk_bytes = 0;
    let mut first_line_no = 1;
    loop {
        let (n, line) = read_line(&mut reader, MAX_LINE_BYTES).map_err(read_err)?;
        if n > 0 {
            chunk_bytes += line.held();
            lines.push(line);
            if chunk_bytes < CHUNK_BYTES {
                continue;
            }
        }
        let parsed = parallel::map(&lines, threads, |line| {
            parse_line(line, keys, source, named_bad_lines)
        });
        let prepare =
            |rendered: std::io::Result<CacheLine>| rendered.map_err(BatchError::CacheLine);
        let mut ready = Vec::new();
        let mut stopped = None;
        for (k, line) in parsed.into_iter().enumerate() {
            if !matches!(line, Line::Blank) {
                ingested.lines += 1;
            }
            match line {
                Line::Blank | Line::Unserved => {}
                Line::Foreign(custom_id) => {
                    ingested.foreign += 1;
                    ingested.first_foreign.get_or_insert(custom_id);
                }
                Line::Served(rendered) => ready.push(prepare(rendered)?),
                Line::Bad { why, kept } => {
                    let kept_for = match kept {
                        Some((custom_id, rendered)) => {
                            ready.push(prepare(rendered)?);
                            Some(custom_id)
                        }
                        None => None,
                    };
                    let reported = bad_line(BadLine {
                        line_no: first_line_no + k,
                        why,
                        kept_for: kept_for.as_deref(),
                    });
                    if let Err(e) = reported {
                        stopped = Some(e);
                        break;
                    }
                }
            }
        }
        let writer_running = chunks.send(ready).is_ok();
        if let Some(e) = stopped {
            return Err(e);
        }
        if n == 0 || !writer_running {
            return Ok(ingested);
        }
        first_line_no += lines.len();
        lines.clear();
        chunk_bytes = 0;
    }
}

/// One line as read: whole, or only the start of a line longer than the limit.
enum RawLine {
    Whole(Vec<u8>),
    TooLong { head: Vec<u8>, bytes: u64 },
}

impl RawLine {
    fn held(&self) -> usize {
        match self {
            RawLine::Whole(bytes) | RawLine::TooLong { head: bytes, .. } => bytes.len(),
        }
    }
}

/// Reads one line (through its `\n`), holding at most `limit` bytes of it; returns how many
/// bytes it took from the reader (0 at the end).
fn read_line(reader: &mut impl BufRead, limit: usize) -> std::io::Result<(u64, RawLine)> {
    let mut held = Vec::new();
    let mut taken: u64 = 0;
    let mut ended = false;
    while !ended {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let part = match memchr::memchr(b'\n', buf) {
            Some(nl) => {
                ended = true;
                &buf[..=nl]
            }
            None => buf,
        };
        let room = (limit + 1).saturating_sub(held.len());
        held.extend_from_slice(&part[..part.len().min(room)]);
        let used = part.len();
        taken += used as u64;
        reader.consume(used);
    }
    let content = taken - u64::from(ended);
    let line = if content > limit as u64 {
        held.truncate(limit);
        RawLine::TooLong {
            head: held,
            bytes: content,
        }
    } else {
        RawLine::Whole(held)
    };
    Ok((taken, line))
}

/// What one line of an output file is.
enum Line {
    Blank,
    /// Not a usable output line; `kept` holds the failed outcome recorded for the request it
    /// names, when it is kept as one.
    Bad {
        why: String,
        kept: Option<(String, std::io::Result<CacheLine>)>,
    },
    /// Its custom_id (given) was never sent in this submission.
    Foreign(String),
    /// The request was not served (expired, 429, 5xx): it is resubmitted.
    Unserved,
    Served(std::io::Result<CacheLine>),
}

fn parse_line(
    raw: &RawLine,
    keys: &BTreeMap<String, String>,
    source: &str,
    named_bad_lines: NamedBadLines,
) -> Line {
    let buf = match raw {
        RawLine::Whole(buf) => buf,
        RawLine::TooLong { head, bytes } => {
            let why = format!(
                "the line is {bytes} bytes, more than the {} MB an output line may be",
                MAX_LINE_BYTES >> 20
            );
            let kept = keep_named(head, keys, source, named_bad_lines, &why);
            return Line::Bad { why, kept };
        }
    };
    if buf.trim_ascii().is_empty() {
        return Line::Blank;
    }
    let line: OutputLine = match serde_json::from_slice(buf) {
        Ok(line) => line,
        Err(e) => {
            let why = format!("not a batch output line ({e})");
            let kept = keep_named(buf, keys, source, named_bad_lines, &why);
            return Line::Bad { why, kept };
        }
    };
    let custom_id = line
        .custom_id
        .and_then(|id| serde_json::from_str::<String>(id.get()).ok());
    let Some(custom_id) = custom_id else {
        return Line::Bad {
            why: "no custom_id".into(),
            kept: None,
        };
    };
    let Some(hash) = keys.get(&custom_id) else {
        return Line::Foreign(custom_id);
    };
    let Some(outcome) = line_outcome(line.response, line.error) else {
        return Line::Unserved;
    };
    match render_storable(custom_id.clone(), hash.clone(), &outcome, source) {
        Storable::Unreadable { why, rendered } => Line::Bad {
            why,
            kept: Some((custom_id, rendered)),
        },
        Storable::AsIs(rendered) => Line::Served(rendered),
    }
}

/// A served outcome as a cache line: as it is, or, when it would not read back from the cache,
/// as the failed outcome that says why.
pub(super) enum Storable {
    AsIs(std::io::Result<CacheLine>),
    Unreadable {
        why: String,
        rendered: std::io::Result<CacheLine>,
    },
}

/// Renders `outcome`'s cache line; a response that would not read back (nested deeper than the
/// JSON reader's limit, numbers out of range) becomes an `unreadable_response` failure instead
/// of damaging the cache.
pub(super) fn render_storable(
    custom_id: String,
    hash: String,
    outcome: &LineOutcome,
    source: &str,
) -> Storable {
    match CacheLine::render(custom_id.clone(), hash.clone(), outcome, source) {
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            let why = format!("the response cannot be stored and read back ({e}): bodies nested deeper than the JSON reader's limit, or holding numbers out of range, are kept as failed outcomes");
            let failure = Failure {
                code: "unreadable_response".into(),
                status: Some(200),
                message: why.clone(),
            };
            let rendered =
                CacheLine::render(custom_id, hash, &LineOutcome::Failed(failure), source);
            Storable::Unreadable { why, rendered }
        }
        rendered => Storable::AsIs(rendered),
    }
}

/// The failed outcome kept for the request that an unusable line still names, if that is the
/// policy and the request is one of the submission's.
fn keep_named(
    buf: &[u8],
    keys: &BTreeMap<String, String>,
    source: &str,
    named_bad_lines: NamedBadLines,
    why: &str,
) -> Option<(String, std::io::Result<CacheLine>)> {
    if named_bad_lines == NamedBadLines::Report {
        return None;
    }
    let (id, hash) = keys.get_key_value(&named_custom_id(buf)?)?;
    let failure = Failure {
        code: "unreadable_output_line".into(),
        status: None,
        message: format!(
            "the server's output line for this request is unusable, the same in every download: {why}"
        ),
    };
    let rendered = CacheLine::render(
        id.clone(),
        hash.clone(),
        &LineOutcome::Failed(failure),
        source,
    );
    Some((id.clone(), rendered))
}

/// The custom_id a line that is not JSON still names (`"custom_id": "…"` near its start), so
/// that the request's outcome can be recorded instead of the request being bought again.
fn named_custom_id(buf: &[u8]) -> Option<String> {
    const KEY: &[u8] = b"\"custom_id\"";
    let at = buf.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let rest = buf[at..]
        .trim_ascii_start()
        .strip_prefix(b":")?
        .trim_ascii_start();
    let body = rest.strip_prefix(b"\"")?;
    let mut escaped = false;
    let end = body.iter().position(|b| {
        let closes = *b == b'"' && !escaped;
        escaped = *b == b'\\' && !escaped;
        closes
    })?;
    serde_json::from_slice(&rest[..end + 2]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::Outcome;
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
            NamedBadLines::KeepAsFailure,
            |bad_line| {
                bad.push((bad_line.line_no, bad_line.why));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(
            ingested,
            Ingested {
                added: 2,
                foreign: 1,
                first_foreign: Some("stranger".into()),
                lines: 5
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
            NamedBadLines::KeepAsFailure,
            |_| Ok(()),
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
            let _ = parse_line(&RawLine::Whole(bytes), &keys(&["a"]), "s", NamedBadLines::KeepAsFailure);
        }

        #[test]
        fn any_response_value_is_classified_without_a_panic(text in ".{0,120}") {
            if let Ok(raw) = serde_json::from_str::<Box<RawValue>>(&text) {
                let _ = line_outcome(Some(&raw), Some(&raw));
            }
        }
    }

    #[test]
    fn a_refused_request_is_a_final_failure_and_odd_statuses_are_unserved() {
        let refused = json!({"status_code": 400, "body": {"error": {"code": "json_validate_failed", "message": "bad json"}}});
        let raw = serde_json::value::to_raw_value(&refused).unwrap();
        let Some(LineOutcome::Failed(failure)) = line_outcome(Some(&raw), None) else {
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
            let outcome = line_outcome(Some(&raw), None);
            assert!(
                outcome.is_none() || matches!(outcome, Some(LineOutcome::Failed(_))),
                "{response}: {outcome:?}"
            );
        }
        assert!(line_outcome(None, None).is_none());
    }

    #[test]
    fn every_shape_of_error_line_gives_its_code_and_message() {
        let cases = [
            (
                json!({"response": {"status_code": 400, "body": null}, "error": "context too long"}),
                ("request_failed", 400, "context too long"),
            ),
            (
                json!({"response": {"status_code": 404, "body": null}, "error": {"error": {"message": "no such model", "type": "NotFoundError", "param": null, "code": 404}}}),
                ("NotFoundError", 404, "no such model"),
            ),
            (
                json!({"response": {"status_code": 400, "body": null}, "error": {"object": "error", "message": "flat", "type": "BadRequestError", "code": 400}}),
                ("BadRequestError", 400, "flat"),
            ),
            (
                json!({"response": {"status_code": 400, "body": {"error": {"message": "in the body", "code": "json_validate_failed"}}}, "error": "ignored, the body says it"}),
                ("json_validate_failed", 400, "in the body"),
            ),
            (
                json!({"response": {"status_code": 403, "body": {}}, "error": {"code": "forbidden", "message": "openai error file shape"}}),
                ("forbidden", 403, "openai error file shape"),
            ),
            (
                json!({"response": {"status_code": 400, "body": null}, "error": null}),
                ("request_failed", 400, "the server gave no message"),
            ),
            (
                json!({"response": {"status_code": 400, "body": null}, "error": {"error": {"message": "   ", "code": 5}}}),
                ("request_failed", 400, "the server gave no message"),
            ),
        ];
        for (line, (code, status, message)) in cases {
            let raw = |v: &Value| serde_json::value::to_raw_value(v).unwrap();
            let response = raw(&line["response"]);
            let error = raw(&line["error"]);
            let Some(LineOutcome::Failed(failure)) = line_outcome(Some(&response), Some(&error))
            else {
                panic!("{line} is a final failure");
            };
            assert_eq!(
                (
                    failure.code.as_str(),
                    failure.status,
                    failure.message.as_str()
                ),
                (code, Some(status), message),
                "{line}"
            );
        }
    }

    /// The lines vLLM's `run-batch` writes, verbatim (tests/fixtures/vllm/).
    fn vllm_fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/vllm")
            .join(name)
    }

    #[test]
    fn vllm_success_and_error_lines_read_as_their_outcomes() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = Cache::open(&dir.path().join("cache.jsonl")).unwrap();
        let ids = [
            "author/simple_factual/r0/0000",
            "author/memory_update/r0/0000",
            "author/memory_recall/r0/0000",
            "author/conversational/r0/0000",
        ];
        for name in ["success.jsonl", "errors.jsonl", "success-newer.jsonl"] {
            let ingested = ingest_file(
                &mut cache,
                &vllm_fixture(name),
                &keys(&ids),
                "import",
                NamedBadLines::Report,
                |bad| panic!("{name} line {}: {}", bad.line_no, bad.why),
            )
            .unwrap();
            assert_eq!(ingested.added, ingested.lines, "{name}: {ingested:?}");
        }
        let outcome = |id: &str| cache.get(id, &format!("hash-{id}")).unwrap();
        for id in [ids[0], ids[3]] {
            let Some(Outcome::Ok(body)) = outcome(id) else {
                panic!("{id} is a success");
            };
            assert_eq!(body["model"], "qwen/qwen3-32b");
            let content = body["choices"][0]["message"]["content"].as_str().unwrap();
            assert!(content.starts_with("{\"items\":"), "{id}: {content}");
        }
        let failed = |id: &str| match outcome(id) {
            Some(Outcome::Failed(f)) => (f.code, f.status, f.message),
            other => panic!("{id} is a failure: {other:?}"),
        };
        let (code, status, message) = failed(ids[1]);
        assert_eq!((code.as_str(), status), ("request_failed", Some(400)));
        assert!(
            message.starts_with("This model's maximum context length is 4096 tokens."),
            "{message}"
        );
        assert_eq!(
            failed(ids[2]),
            (
                "NotFoundError".to_string(),
                Some(404),
                "The model `qwen/qwen3-32b` does not exist.".to_string()
            )
        );
    }

    #[test]
    fn a_cache_that_cannot_be_written_stops_the_ingest_with_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.jsonl");
        let text: String = (0..3).map(|i| line(&format!("r{i}"), 200, "x")).collect();
        std::fs::write(&output, text).unwrap();
        let cache_path = dir.path().join("cache.jsonl");
        let mut cache = Cache::open(&cache_path).unwrap();
        std::fs::create_dir(&cache_path).unwrap();
        let err = ingest_file(
            &mut cache,
            &output,
            &keys(&["r0", "r1", "r2"]),
            "download",
            NamedBadLines::KeepAsFailure,
            |_| Ok(()),
        )
        .expect_err("the append fails");
        assert!(err.to_string().contains("cache.jsonl"), "{err}");
        assert!(
            !cache.contains("r0", "hash-r0"),
            "nothing unwritten is indexed"
        );
    }

    #[test]
    fn a_strict_caller_stops_at_the_first_bad_line_and_keeps_what_came_before() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.jsonl");
        std::fs::write(&output, line("a", 200, "x") + "{\"custom_id\": 5}\n").unwrap();
        let mut cache = Cache::open(&dir.path().join("cache.jsonl")).unwrap();
        let err = ingest_file(
            &mut cache,
            &output,
            &keys(&["a"]),
            "import",
            NamedBadLines::Report,
            |bad| {
                Err(BatchError::ImportLine {
                    path: "results.jsonl".into(),
                    line: bad.line_no,
                    why: bad.why.to_string(),
                })
            },
        )
        .expect_err("the bad line stops the import");
        assert_eq!(
            err.to_string(),
            "--import results.jsonl line 2: no custom_id; expected the OpenAI batch output format"
        );
        assert_eq!(err.code(), 2);
        assert!(
            cache.contains("a", "hash-a"),
            "the line before the bad one is kept"
        );
    }

    #[test]
    fn a_body_that_would_not_read_back_is_kept_as_a_failure_and_the_cache_stays_readable() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.jsonl");
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let huge_number = "1e999";
        let text = [
            format!("{{\"custom_id\":\"a\",\"response\":{{\"status_code\":200,\"body\":{{\"x\":{deep}}}}}}}\n"),
            format!("{{\"custom_id\":\"b\",\"response\":{{\"status_code\":200,\"body\":{{\"x\":{huge_number}}}}}}}\n"),
            line("c", 200, "fine"),
        ]
        .concat();
        std::fs::write(&output, text).unwrap();
        let cache_path = dir.path().join("cache.jsonl");
        let mut cache = Cache::open(&cache_path).unwrap();
        let mut kept = Vec::new();
        ingest_file(
            &mut cache,
            &output,
            &keys(&["a", "b", "c"]),
            "batch_1",
            NamedBadLines::KeepAsFailure,
            |bad| {
                kept.push(bad.kept_for.map(str::to_string));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(kept, [Some("a".to_string()), Some("b".to_string())]);
        let reopened = Cache::open(&cache_path).unwrap();
        for id in ["a", "b"] {
            let outcome = reopened.get(id, &format!("hash-{id}")).unwrap();
            assert!(
                matches!(&outcome, Some(Outcome::Failed(f)) if f.code == "unreadable_response"),
                "{id}: {outcome:?}"
            );
        }
        assert!(matches!(
            reopened.get("c", "hash-c").unwrap(),
            Some(Outcome::Ok(_))
        ));
    }

    #[test]
    fn a_line_that_is_not_json_but_names_its_request_is_that_requests_failure() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.jsonl");
        let cut = line("b", 200, "cut");
        let text = [
            line("a", 200, "fine"),
            format!("{}\u{0}junk\n", &cut[..cut.len() / 2]),
            "\u{0}\u{0}\n".into(),
        ]
        .concat();
        std::fs::write(&output, text).unwrap();
        let mut cache = Cache::open(&dir.path().join("cache.jsonl")).unwrap();
        let mut reported = Vec::new();
        ingest_file(
            &mut cache,
            &output,
            &keys(&["a", "b"]),
            "batch_1",
            NamedBadLines::KeepAsFailure,
            |bad| {
                reported.push((bad.line_no, bad.kept_for.map(str::to_string)));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(reported, [(2, Some("b".to_string())), (3, None)]);
        assert!(matches!(
            cache.get("b", "hash-b").unwrap(),
            Some(Outcome::Failed(f)) if f.code == "unreadable_output_line"
        ));
        assert_eq!(
            named_custom_id(br#"{"custom_id" : "x\"y", "resp"#),
            Some("x\"y".into())
        );
        assert_eq!(named_custom_id(b"garbage"), None);
    }

    #[test]
    fn a_line_longer_than_the_limit_is_held_only_up_to_it_and_the_next_line_is_whole() {
        let text = format!("{}\n{{\"b\":1}}\nlast", "x".repeat(100));
        let mut reader = std::io::BufReader::with_capacity(7, text.as_bytes());
        let (taken, first) = read_line(&mut reader, 10).unwrap();
        assert_eq!(taken, 101);
        assert!(matches!(first, RawLine::TooLong { ref head, bytes: 100 } if head.len() == 10));
        let (_, second) = read_line(&mut reader, 10).unwrap();
        assert!(matches!(second, RawLine::Whole(ref b) if b == b"{\"b\":1}\n"));
        let (_, third) = read_line(&mut reader, 10).unwrap();
        assert!(matches!(third, RawLine::Whole(ref b) if b == b"last"));
        assert_eq!(read_line(&mut reader, 10).unwrap().0, 0);
        let exact = "0123456789\n";
        let (_, line) = read_line(&mut exact.as_bytes(), 10).unwrap();
        assert!(
            matches!(line, RawLine::Whole(_)),
            "a line of exactly the limit is whole"
        );
    }
}
