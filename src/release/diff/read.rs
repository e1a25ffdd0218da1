//! Reads a release for `diff`: a folder (the prompts file its `manifest.json` names, else its one
//! `*_prompts.jsonl`) or a JSONL file, ours or v1's. Only `prompt` is required of a record, since
//! checking the schema is `verify`'s work; every other field is read when it has the card's type
//! and left out otherwise. Lines are read with a bound, so a file without newlines is an error
//! that names it, not an allocation the size of the file.

use crate::release::files::MANIFEST;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::DiffError;
use crate::release::schema::ReleaseRecord;
use crate::util::digest::hex;

/// The longest record line read (v1's longest record is a few KiB).
const MAX_LINE_BYTES: u64 = 4 << 20;
/// A `manifest.json` larger than this is not read.
const MAX_MANIFEST_BYTES: u64 = 16 << 20;
/// The suffix of a release's prompts file (`saseval_<version>_prompts.jsonl`).
const PROMPTS_SUFFIX: &str = "_prompts.jsonl";

/// One record as `diff` compares it.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub id: String,
    pub category: Option<String>,
    pub prompt: String,
    pub golds: Vec<String>,
    pub gold_repaired: bool,
    pub needs_review: bool,
    pub target_action: Option<Vec<f64>>,
}

impl Record {
    pub fn of(record: &ReleaseRecord) -> Record {
        Record {
            id: record.id.clone(),
            category: Some(record.category.name().to_string()),
            prompt: record.prompt.clone(),
            golds: record.golds.clone(),
            gold_repaired: record.gold_repaired,
            needs_review: record.needs_review,
            target_action: Some(record.target_action.to_vec()),
        }
    }

    /// Words of the prompt, counted as validation and the report count them.
    pub fn words(&self) -> usize {
        crate::quality::validate::word_count(&self.prompt)
    }
}

/// A release as read: where from, its prompts file's hash, and its records in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    /// The path given on the command line.
    pub path: PathBuf,
    /// The prompts file read (the path itself, or the file in the folder).
    pub file: PathBuf,
    /// SHA-256 of the prompts file, hex.
    pub sha256: String,
    pub records: Vec<Record>,
}

impl Release {
    /// A release made of records already in memory (the one `assemble` is writing).
    pub fn of_records(name: &str, sha256: &str, records: &[ReleaseRecord]) -> Release {
        Release {
            path: PathBuf::from(name),
            file: PathBuf::from(name),
            sha256: sha256.to_string(),
            records: records.iter().map(Record::of).collect(),
        }
    }
}

/// Reads the release at `path` (a folder or a prompts JSONL file).
pub fn read_release(path: &Path) -> Result<Release, DiffError> {
    let metadata = std::fs::metadata(path).map_err(|source| DiffError::Missing {
        path: path.to_path_buf(),
        source,
    })?;
    let file = if metadata.is_dir() {
        prompts_file(path)?
    } else {
        path.to_path_buf()
    };
    let (records, sha256) = read_records(&file)?;
    Ok(Release {
        path: path.to_path_buf(),
        file,
        sha256,
        records,
    })
}

/// The prompts file of a release folder.
fn prompts_file(dir: &Path) -> Result<PathBuf, DiffError> {
    if let Some(name) = manifest_prompts_file(dir) {
        let file = dir.join(name);
        if file.is_file() {
            return Ok(file);
        }
    }
    let entries = std::fs::read_dir(dir).map_err(|source| DiffError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut found: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_file())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|name| name.ends_with(PROMPTS_SUFFIX))
        .collect();
    found.sort();
    match found.len() {
        1 => Ok(dir.join(&found[0])),
        _ => Err(DiffError::NoPromptsFile {
            dir: dir.to_path_buf(),
            found,
        }),
    }
}

/// The `prompts_file` a folder's `manifest.json` names, when it is a plain file name.
fn manifest_prompts_file(dir: &Path) -> Option<String> {
    let file = File::open(dir.join(MANIFEST)).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_MANIFEST_BYTES).read_to_end(&mut bytes).ok()?;
    let manifest: Value = serde_json::from_slice(&bytes).ok()?;
    let name = manifest.get("prompts_file")?.as_str()?;
    let plain = !name.is_empty()
        && !name.contains(['/', '\\'])
        && name != "."
        && name != ".."
        && !name.contains('\0');
    plain.then(|| name.to_string())
}

/// Every record of a prompts file, and the file's SHA-256.
fn read_records(path: &Path) -> Result<(Vec<Record>, String), DiffError> {
    let read_err = |source: std::io::Error| DiffError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = BufReader::new(File::open(path).map_err(read_err)?);
    let mut hasher = Sha256::new();
    let mut records = Vec::new();
    let mut buf = Vec::new();
    for line_no in 1.. {
        buf.clear();
        let n = (&mut reader)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut buf)
            .map_err(read_err)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf);
        let line_err = |why: String| DiffError::Line {
            path: path.to_path_buf(),
            line: line_no,
            why,
        };
        if buf.last() != Some(&b'\n') && n as u64 > MAX_LINE_BYTES {
            return Err(line_err(format!(
                "the line is longer than {} MiB; expected a release JSONL",
                MAX_LINE_BYTES >> 20
            )));
        }
        let text = std::str::from_utf8(&buf)
            .map_err(|e| line_err(format!("not UTF-8 ({e}); expected a release JSONL")))?;
        let text = text.trim_start_matches('\u{feff}').trim();
        if text.is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(text)
            .map_err(|e| line_err(format!("not JSON ({e}); expected a release JSONL")))?;
        records.push(record(&value, line_no).map_err(line_err)?);
    }
    Ok((records, hex(&hasher.finalize())))
}

/// The record a release line holds; only `prompt` is required.
fn record(value: &Value, line_no: usize) -> Result<Record, String> {
    let object = value
        .as_object()
        .ok_or("not a JSON object; expected a release record")?;
    let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_string);
    let prompt = text("prompt").ok_or("no \"prompt\" string; expected a release record")?;
    let flag = |key: &str| object.get(key).and_then(Value::as_bool) == Some(true);
    let golds = object
        .get("golds")
        .and_then(Value::as_array)
        .map(|golds| {
            golds
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let target_action = object
        .get("target_action")
        .and_then(Value::as_array)
        .and_then(|values| values.iter().map(Value::as_f64).collect());
    Ok(Record {
        id: text("id").unwrap_or_else(|| format!("line {line_no}")),
        category: text("category"),
        prompt,
        golds,
        gold_repaired: flag("_gold_repaired"),
        needs_review: flag("_needs_review"),
        target_action,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1s_example_record_and_a_bare_prompt_read_and_bad_lines_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("saseval_v1_prompts.jsonl");
        let example = r#"{"id":"sas1k-0881","category":"memory_update","prompt":"The security policy previously required Kubernetes clusters to use version 1.22. A recent update mandates a minimum version of 1.25. What is the current minimum supported Kubernetes version for new clusters?","golds":["1.25","kubernetes 1.25","version 1.25"],"target_action":[0.45,0.2,0.9,1,0.25],"T":0.2,"top_p":0.9,"mode":"DEEP","max_new":512,"durable":["1.25"],"stale":["1.22"]}"#;
        std::fs::write(
            &path,
            format!("\u{feff}{example}\n\n{{\"prompt\": \"Only a prompt?\", \"golds\": 5}}\n"),
        )
        .unwrap();
        for at in [dir.path(), path.as_path()] {
            let release = read_release(at).unwrap();
            assert_eq!(release.file, path);
            assert_eq!(release.records.len(), 2);
            let first = &release.records[0];
            assert_eq!(first.id, "sas1k-0881");
            assert_eq!(first.category.as_deref(), Some("memory_update"));
            assert_eq!(first.golds.len(), 3);
            assert_eq!(first.target_action, Some(vec![0.45, 0.2, 0.9, 1.0, 0.25]));
            assert_eq!(release.records[1].id, "line 3");
            assert!(release.records[1].golds.is_empty());
        }
        let bad = dir.path().join("bad.jsonl");
        for (text, why) in [
            ("{\"prompt\": \"ok\"}\nnot json\n", "line 2: not JSON"),
            ("[1, 2]\n", "line 1: not a JSON object"),
            ("{\"id\": \"x\"}\n", "line 1: no \"prompt\" string"),
            (
                "{\"prompt\": \"caf\u{e9}\"}\n\u{0}\u{ff}",
                "line 2: not JSON",
            ),
        ] {
            std::fs::write(&bad, text).unwrap();
            let err = read_release(&bad).unwrap_err();
            assert!(err.to_string().contains(why), "{err}");
            assert_eq!(err.code(), 2);
        }
        std::fs::write(&bad, b"{\"prompt\": \"\xff\"}\n").unwrap();
        assert!(read_release(&bad)
            .unwrap_err()
            .to_string()
            .contains("line 1: not UTF-8"));
    }

    #[test]
    fn a_folder_without_one_prompts_file_is_named_with_what_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_release(dir.path()).unwrap_err();
        assert!(err.to_string().contains("no *_prompts.jsonl"), "{err}");
        std::fs::write(dir.path().join("saseval_v1_prompts.jsonl"), "").unwrap();
        std::fs::write(dir.path().join("saseval_v2_prompts.jsonl"), "").unwrap();
        let err = read_release(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("saseval_v1_prompts.jsonl, saseval_v2_prompts.jsonl"),
            "{err}"
        );
        std::fs::write(
            dir.path().join("manifest.json"),
            r#"{"prompts_file": "saseval_v2_prompts.jsonl"}"#,
        )
        .unwrap();
        assert_eq!(
            read_release(dir.path()).unwrap().file,
            dir.path().join("saseval_v2_prompts.jsonl"),
            "the manifest names the file"
        );
        let missing = dir.path().join("nowhere");
        let err = read_release(&missing).unwrap_err();
        assert_eq!(err.code(), 2);
    }
}
