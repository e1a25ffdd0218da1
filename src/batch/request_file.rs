//! The batch input file format (one `{"custom_id","method","url","body"}` line per request), which
//! the OpenAI and Groq Batch APIs and vLLM's `run-batch` all read, and its reverse: which requests
//! (custom_id and body hash) a stored request file holds.

use super::Request;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

pub const ENDPOINT: &str = "/v1/chat/completions";

/// One input line, with its trailing newline.
pub fn line(request: &Request) -> String {
    let mut s = json!({
        "custom_id": request.custom_id,
        "method": "POST",
        "url": ENDPOINT,
        "body": request.body,
    })
    .to_string();
    s.push('\n');
    s
}

/// Splits requests into files of at most `max_lines` lines and `max_bytes` bytes, keeping order.
/// A single request larger than `max_bytes` is an error naming it.
pub fn chunk<'r>(
    requests: &[&'r Request],
    max_lines: usize,
    max_bytes: u64,
) -> Result<Vec<(Vec<&'r Request>, String)>, String> {
    let mut chunks = Vec::new();
    let mut current: Vec<&Request> = Vec::new();
    let mut text = String::new();
    for r in requests {
        let l = line(r);
        if l.len() as u64 > max_bytes {
            return Err(format!(
                "request {} is {} bytes, more than api.max_bytes_per_batch = {max_bytes}",
                r.custom_id,
                l.len()
            ));
        }
        if !current.is_empty()
            && (current.len() >= max_lines || (text.len() + l.len()) as u64 > max_bytes)
        {
            chunks.push((std::mem::take(&mut current), std::mem::take(&mut text)));
        }
        current.push(r);
        text.push_str(&l);
    }
    if !current.is_empty() {
        chunks.push((current, text));
    }
    Ok(chunks)
}

/// custom_id → body hash of every request in a stored request file.
pub fn read_keys(path: &Path) -> std::io::Result<BTreeMap<String, String>> {
    let reader = BufReader::new(std::fs::File::open(path)?);
    let mut keys = BTreeMap::new();
    for (n, line) in reader.lines().enumerate() {
        let line = line?;
        let bad = || {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: line {} is not a request line", path.display(), n + 1),
            )
        };
        let v: Value = serde_json::from_str(&line).map_err(|_| bad())?;
        let custom_id = v.get("custom_id").and_then(Value::as_str).ok_or_else(bad)?;
        let body = v.get("body").ok_or_else(bad)?.clone();
        let request = Request::new(custom_id.to_string(), body);
        keys.insert(request.custom_id.clone(), request.body_hash().to_string());
    }
    Ok(keys)
}
