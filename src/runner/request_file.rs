//! The batch input file format (one `{"custom_id","method","url","body"}` line per request), which
//! the OpenAI and Groq Batch APIs and vLLM's `run-batch` all read, and its reverse: which requests
//! (custom_id and body hash) a stored request file holds.

use super::Request;
use crate::util::digest::sha256_hex;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

pub const ENDPOINT: &str = "/v1/chat/completions";

/// One input line, with its trailing newline. The `body` bytes are the body's compact JSON, the
/// very bytes its body hash is taken of, so `read_keys` can hash them without re-serialising.
pub fn line(request: &Request) -> String {
    format!(
        "{{\"custom_id\":{},\"method\":\"POST\",\"url\":\"{ENDPOINT}\",\"body\":{}}}\n",
        Value::from(request.custom_id.as_str()),
        request.body
    )
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
    #[derive(Deserialize)]
    struct Line<'a> {
        custom_id: String,
        #[serde(borrow)]
        body: &'a RawValue,
    }
    let reader = BufReader::new(std::fs::File::open(path)?);
    let mut keys = BTreeMap::new();
    for (n, line) in reader.lines().enumerate() {
        let line = line?;
        let parsed: Line = serde_json::from_str(&line).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: line {} is not a request line", path.display(), n + 1),
            )
        })?;
        let hash = sha256_hex(parsed.body.get().as_bytes());
        keys.insert(parsed.custom_id, hash);
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn read_keys_gives_the_body_hash_of_every_written_request() {
        let requests = [
            Request::new(
                "a/1".into(),
                json!({"model": "m", "messages": [{"role": "user", "content": "é \"quoted\"\n\u{1}"}]}),
            ),
            Request::new(
                "b \"odd\" id".into(),
                json!({"z": 1, "a": [1.5, null, true]}),
            ),
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("requests.jsonl");
        let text: String = requests.iter().map(line).collect();
        std::fs::write(&path, &text).unwrap();
        let keys = read_keys(&path).unwrap();
        for r in &requests {
            assert_eq!(
                keys.get(&r.custom_id).map(String::as_str),
                Some(r.body_hash())
            );
        }
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["method"], "POST");
        assert_eq!(first["url"], ENDPOINT);
        assert_eq!(&first["body"], requests[0].body());
    }
}
