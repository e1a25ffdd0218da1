//! Checks a release file or folder, ours or v1's, against the card's schema and the release's own
//! promises (counts, target rows, hashes). Every content defect is a `Problem` with its line; only
//! failing to read the target is an error. Lines are read with a bound, so a huge or binary file
//! yields problems, never an allocation the size of the file.

mod checker;
mod lines;
mod manifest;

use checker::*;
use lines::*;
use manifest::*;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::quality::grade::norm;
use crate::release::files::{MANIFEST, SUMS};
use crate::release::schema::columns::{
    CATEGORY, DURABLE, GOLDS, ID, MAX_NEW, MODE, NEEDS_REVIEW, PROMPT, STALE, T, TARGET_ACTION,
    TOP_P,
};
use crate::release::schema::{card_row, column, Presence, TargetRow, COLUMNS, MAX_NEW_SCALE};
use crate::stages::item::Category;
use crate::util::digest::hex;

/// A line longer than this is reported, not parsed (v1's longest record is a few KiB).
const MAX_LINE_BYTES: usize = 1 << 20;
/// Problems kept in the report; the rest are counted in one closing problem.
const MAX_PROBLEMS: usize = 1000;
/// `manifest.json` and `SHA256SUMS` larger than this are not read.
const MAX_SIDE_FILE_BYTES: u64 = 16 << 20;
/// Numbers that should be equal are compared with this slack.
const TOLERANCE: f64 = 1e-9;

/// Where the expected record count of each category comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// The counts in `manifest.json` (a folder's, or the file's folder's); a short release says so there.
    FromManifest,
    /// This many records in each of the ten categories (`release.per_category`).
    PerCategory(usize),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct VerifyOptions {
    /// Our rows for the five categories the v1 card leaves open; compared only when given.
    pub our_rows: Option<BTreeMap<Category, TargetRow>>,
}

/// One content defect; `line` is the JSONL line (1-based) when it belongs to one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct VerifyReport {
    /// Lines read (records or not).
    pub records: usize,
    pub problems: Vec<Problem>,
    /// Memory records with `durable` but no `stale` (v1 allows it).
    pub lacking_stale: usize,
    /// Records per known category name.
    pub counts: BTreeMap<String, usize>,
    /// SHA-256 of the JSONL bytes, hex; empty when no JSONL could be located.
    pub sha256: String,
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// `verify DIR` checks against `DIR/manifest.json`; `verify FILE` expects `per_category` records
/// in each category.
pub fn verify_path(
    path: &Path,
    per_category: usize,
    options: &VerifyOptions,
) -> Result<VerifyReport, VerifyError> {
    let expected = if path.is_dir() {
        Expected::FromManifest
    } else {
        Expected::PerCategory(per_category)
    };
    verify(path, expected, options)
}

/// Verifies a release folder (its manifest names the JSONL) or a JSONL file.
pub fn verify(
    path: &Path,
    expected: Expected,
    options: &VerifyOptions,
) -> Result<VerifyReport, VerifyError> {
    let metadata = fs::metadata(path).map_err(io_error(path))?;
    let (dir, named_file) = if metadata.is_dir() {
        (path.to_path_buf(), None)
    } else {
        let dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        (dir, Some(path.to_path_buf()))
    };

    let mut problems = Problems::default();
    let manifest = if metadata.is_dir() || expected == Expected::FromManifest {
        Some(read_manifest(&dir, &mut problems)?)
    } else {
        None
    };
    let jsonl = match (&named_file, &manifest) {
        (Some(file), _) => Some(file.clone()),
        (None, Some(manifest)) => manifest.prompts_file.as_ref().map(|name| dir.join(name)),
        (None, None) => None,
    };
    // The manifest's hash is about the file it names, which a named file need not be.
    let manifest_sha = manifest
        .as_ref()
        .filter(|m| {
            let name = jsonl.as_ref().and_then(|path| path.file_name());
            m.prompts_file.as_deref().map(std::ffi::OsStr::new) == name
        })
        .and_then(|m| m.sha256.clone());
    let counts = match expected {
        Expected::PerCategory(n) => Some(Category::ALL.into_iter().map(|c| (c, n)).collect()),
        Expected::FromManifest => manifest.as_ref().and_then(|m| m.counts.clone()),
    };
    let flagged_prompts = manifest.map(|m| m.flagged_prompts).unwrap_or_default();

    let Some(jsonl) = jsonl else {
        return Ok(problems.into_report(Scan::default()));
    };
    let file = match File::open(&jsonl) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound && named_file.is_none() => {
            problems.push(
                None,
                format!("{MANIFEST} names {}, which is missing", jsonl.display()),
            );
            return Ok(problems.into_report(Scan::default()));
        }
        Err(source) => return Err(io_error(&jsonl)(source)),
    };
    let mut checker = Checker::new(options, counts, problems);
    checker.flagged_prompts = flagged_prompts;
    let scan = checker.scan(file).map_err(io_error(&jsonl))?;
    let mut problems = checker.finish();
    if let Some(stated) = manifest_sha.filter(|stated| *stated != scan.sha256) {
        problems.push(
            None,
            format!("SHA-256 is {}, {MANIFEST} says {stated}", scan.sha256),
        );
    }
    check_sums(&dir, &jsonl, &scan.sha256, &mut problems);
    Ok(problems.into_report(scan))
}

/// Checks JSONL bytes against exact per-category counts (the release writer's own check).
pub(crate) fn check_jsonl(
    reader: impl Read,
    expected: &BTreeMap<Category, usize>,
    options: &VerifyOptions,
) -> io::Result<VerifyReport> {
    let mut checker = Checker::new(options, Some(expected.clone()), Problems::default());
    let scan = checker.scan(reader)?;
    Ok(checker.finish().into_report(scan))
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> VerifyError + '_ {
    move |source| VerifyError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Problems collected so far, bounded.
#[derive(Default)]
struct Problems {
    kept: Vec<Problem>,
    dropped: usize,
}

impl Problems {
    fn push(&mut self, line: Option<usize>, message: impl Into<String>) {
        if self.kept.len() < MAX_PROBLEMS {
            self.kept.push(Problem {
                line,
                message: message.into(),
            });
        } else {
            self.dropped += 1;
        }
    }

    fn into_report(mut self, scan: Scan) -> VerifyReport {
        if self.dropped > 0 {
            self.kept.push(Problem {
                line: None,
                message: format!("{} more problems not listed", self.dropped),
            });
        }
        VerifyReport {
            records: scan.lines,
            problems: self.kept,
            lacking_stale: scan.lacking_stale,
            counts: scan.counts,
            sha256: scan.sha256,
        }
    }
}

/// What one pass over the JSONL measured.
#[derive(Default)]
struct Scan {
    lines: usize,
    lacking_stale: usize,
    counts: BTreeMap<String, usize>,
    sha256: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::schema::TargetRow;
    use crate::release::test_support::{all_rows, card_example_line, info, records};
    use crate::release::write_release;
    use serde_json::json;
    use std::io::Write;

    const PER_CATEGORY: usize = 3;

    /// v1-shaped lines built from the card's example record: ten categories × `PER_CATEGORY`, the
    /// first memory record of each memory category with `durable` only, as 24 of v1's 200 are.
    fn v1_lines() -> Vec<Value> {
        let example: Value = serde_json::from_str(&card_example_line()).expect("card example");
        let rows = all_rows();
        let mut lines = Vec::new();
        for category in Category::ALL {
            let row = rows[&category];
            for i in 0..PER_CATEGORY {
                let mut record = example.clone();
                let n = lines.len();
                record["id"] = json!(format!("sas1k-{n:04}"));
                record["category"] = json!(category.name());
                record["prompt"] = json!(format!(
                    "{} (variant {n})",
                    example["prompt"].as_str().unwrap_or("")
                ));
                record["target_action"] = json!(row.target_action());
                record["T"] = json!(row.t);
                record["top_p"] = json!(row.p);
                record["mode"] = json!(row.mode());
                record["max_new"] = json!(row.l);
                let object = record.as_object_mut().expect("object");
                if !category.is_memory() {
                    object.remove("durable");
                    object.remove("stale");
                } else if i == 0 {
                    object.remove("stale");
                }
                lines.push(record);
            }
        }
        lines
    }

    fn write_lines(dir: &Path, lines: &[Value]) -> PathBuf {
        let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
        write_text(dir, &text)
    }

    fn write_text(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("prompts.jsonl");
        fs::write(&path, text).expect("write fixture");
        path
    }

    fn verify_lines(lines: &[Value], options: &VerifyOptions) -> VerifyReport {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = write_lines(dir.path(), lines);
        verify_path(&path, PER_CATEGORY, options).expect("readable")
    }

    fn messages(report: &VerifyReport) -> String {
        report.problems.iter().map(|p| format!("{p}\n")).collect()
    }

    #[test]
    fn v1_shaped_file_verifies_clean_and_counts_records_lacking_stale() {
        let report = verify_lines(&v1_lines(), &VerifyOptions::default());
        assert!(report.problems.is_empty(), "{}", messages(&report));
        assert_eq!(report.records, 10 * PER_CATEGORY);
        assert_eq!(report.lacking_stale, 2);
        assert_eq!(report.counts.len(), 10);
        assert!(report.counts.values().all(|n| *n == PER_CATEGORY));
        assert_eq!(report.sha256.len(), 64);
    }

    /// Each mutation of one clean line and the problem it must produce.
    #[test]
    fn every_problem_kind_is_detected() {
        type Mutation = fn(&mut Vec<Value>);
        let cases: Vec<(&str, Mutation, &str)> = vec![
            (
                "invalid json",
                |l| l[0] = json!("PLACEHOLDER-INVALID"),
                "not valid JSON",
            ),
            (
                "not an object",
                |l| l[0] = json!([1, 2]),
                "not a JSON object",
            ),
            (
                "missing field",
                |l| remove(&mut l[0], "golds"),
                "missing field golds",
            ),
            (
                "wrong type",
                |l| l[0]["T"] = json!("0.3"),
                "T must be a number",
            ),
            (
                "golds not strings",
                |l| l[0]["golds"] = json!([1]),
                "golds must be an array of strings",
            ),
            (
                "empty golds",
                |l| l[0]["golds"] = json!([]),
                "golds is empty",
            ),
            (
                "blank gold",
                |l| l[0]["golds"] = json!(["?!"]),
                "normalises to blanks",
            ),
            (
                "unknown category",
                |l| l[0]["category"] = json!("trivia"),
                "unknown category \"trivia\"",
            ),
            (
                "extra field",
                |l| l[0]["domain"] = json!("fintech"),
                "field \"domain\" is not in the schema",
            ),
            (
                "duplicate id",
                |l| l[1]["id"] = l[0]["id"].clone(),
                "duplicate id",
            ),
            (
                "duplicate prompt after norm",
                |l| {
                    l[1]["prompt"] = json!(l[0]["prompt"]
                        .as_str()
                        .map(|p| p.to_uppercase().replace('.', "!")))
                },
                "duplicate prompt after normalisation (first on line 1)",
            ),
            (
                "count",
                |l| {
                    l.pop();
                },
                "memory_update: 2 records, expected 3",
            ),
            (
                "T vs action",
                |l| l[0]["T"] = json!(0.5),
                "T 0.5 disagrees with target_action[1]",
            ),
            (
                "top_p vs action",
                |l| l[0]["top_p"] = json!(0.5),
                "top_p 0.5 disagrees",
            ),
            (
                "mode vs d",
                |l| l[0]["mode"] = json!("DEEP"),
                "mode DEEP disagrees with d = 0",
            ),
            (
                "mode value",
                |l| l[0]["mode"] = json!("FAST"),
                "neither DEEP nor STRICT",
            ),
            (
                "d not 0/1",
                |l| l[0]["target_action"][3] = json!(2),
                "(d) is 2, not 0 or 1",
            ),
            (
                "max_new vs L",
                |l| l[0]["max_new"] = json!(100),
                "max_new 100 disagrees",
            ),
            (
                "max_new type",
                |l| l[0]["max_new"] = json!(128.5),
                "max_new must be a non-negative integer",
            ),
            (
                "action shape",
                |l| l[0]["target_action"] = json!([0.1, 0.3]),
                "array of 5 numbers",
            ),
            (
                "two rows in a category",
                |l| set_row(&mut l[4], 0.31, 0.9),
                "differs from",
            ),
            (
                "card row",
                |l| {
                    for r in l.iter_mut().take(3) {
                        set_row(r, 0.3, 0.8)
                    }
                },
                "differs from the v1 card's",
            ),
            (
                "flag false",
                |l| l[0]["_needs_review"] = json!(false),
                "_needs_review must be true",
            ),
            (
                "flag type",
                |l| l[0]["_gold_repaired"] = json!("yes"),
                "_gold_repaired must be true",
            ),
            (
                "memory without durable",
                |l| remove(&mut l[27], "durable"),
                "missing field durable",
            ),
            (
                "stale not strings",
                |l| l[28]["stale"] = json!("1.22"),
                "stale must be an array of strings",
            ),
            (
                "annotation off memory",
                |l| l[0]["durable"] = json!(["x"]),
                "durable on simple_factual",
            ),
            (
                "empty line",
                |l| l[0] = json!("PLACEHOLDER-EMPTY"),
                "empty line",
            ),
        ];
        for (name, mutate, expected) in cases {
            let mut lines = v1_lines();
            mutate(&mut lines);
            let text: String = lines
                .iter()
                .map(|line| match line.as_str() {
                    Some("PLACEHOLDER-INVALID") => "{\"id\": \n".to_string(),
                    Some("PLACEHOLDER-EMPTY") => "\n".to_string(),
                    _ => format!("{line}\n"),
                })
                .collect();
            let dir = tempfile::tempdir().expect("temp dir");
            let path = write_text(dir.path(), &text);
            let report =
                verify_path(&path, PER_CATEGORY, &VerifyOptions::default()).expect("readable");
            assert!(
                report.problems.iter().any(|p| p.message.contains(expected)),
                "{name}: no problem containing {expected:?}; got:\n{}",
                messages(&report)
            );
        }
    }

    fn remove(record: &mut Value, key: &str) {
        if let Some(object) = record.as_object_mut() {
            object.remove(key);
        }
    }

    /// Gives `record` another consistent row: `c` and `T` changed, the rest derived.
    fn set_row(record: &mut Value, c: f64, t: f64) {
        let row = TargetRow {
            c,
            t,
            p: 0.9,
            d: 0,
            l: 128,
        };
        record["target_action"] = json!(row.target_action());
        record["T"] = json!(row.t);
        record["mode"] = json!(row.mode());
        record["max_new"] = json!(row.l);
    }

    #[test]
    fn our_rows_are_compared_only_on_request() {
        let mut lines = v1_lines();
        for record in lines.iter_mut().skip(3).take(3) {
            set_row(record, 0.31, 0.3); // bloated_factual: ours says c = 0.30
        }
        let loose = verify_lines(&lines, &VerifyOptions::default());
        assert!(loose.problems.is_empty(), "{}", messages(&loose));
        let strict = verify_lines(
            &lines,
            &VerifyOptions {
                our_rows: Some(all_rows()),
            },
        );
        assert_eq!(strict.problems.len(), 1, "{}", messages(&strict));
        assert!(strict.problems[0].message.contains("bloated_factual"));
        assert!(strict.problems[0].message.contains("differs from our row"));
        assert_eq!(strict.problems[0].line, Some(4));
    }

    #[test]
    fn a_ten_megabyte_line_is_a_problem_not_an_allocation() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("huge.jsonl");
        let mut file = File::create(&path).expect("create");
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..10 {
            file.write_all(&chunk).expect("write");
        }
        file.write_all(b"\n").expect("write");
        drop(file);
        let report = verify_path(&path, 1, &VerifyOptions::default()).expect("readable");
        assert_eq!(report.records, 1);
        assert_eq!(report.problems[0].line, Some(1));
        assert!(report.problems[0]
            .message
            .contains("10485760 bytes, over the 1048576-byte line limit"));
        assert_eq!(
            report.sha256,
            crate::util::digest::sha256_hex(&fs::read(&path).expect("read"))
        );
    }

    #[test]
    fn a_binary_file_gives_problems() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("blob.bin");
        let mut state: u32 = 12345;
        let bytes: Vec<u8> = (0..200_000)
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (state >> 16) as u8
            })
            .collect();
        fs::write(&path, &bytes).expect("write");
        let report = verify_path(&path, 100, &VerifyOptions::default()).expect("readable");
        assert!(report.records > 0);
        assert!(report
            .problems
            .iter()
            .any(|p| p.message.starts_with("not UTF-8 text: invalid byte")));
        assert!(report
            .problems
            .iter()
            .any(|p| p.message.contains("expected 100")));
    }

    #[test]
    fn problems_beyond_the_cap_are_counted_not_kept() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = write_text(dir.path(), &"[]\n".repeat(MAX_PROBLEMS + 500));
        let report = verify_path(&path, 0, &VerifyOptions::default()).expect("readable");
        assert_eq!(report.problems.len(), MAX_PROBLEMS + 1);
        assert_eq!(
            report.problems[MAX_PROBLEMS].message,
            "500 more problems not listed"
        );
    }

    #[test]
    fn a_missing_path_is_an_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let err = verify_path(&dir.path().join("nope.jsonl"), 1, &VerifyOptions::default())
            .expect_err("missing");
        assert!(err.to_string().contains("nope.jsonl"));
    }

    #[test]
    fn a_folder_without_manifest_is_a_problem() {
        let dir = tempfile::tempdir().expect("temp dir");
        let report = verify_path(dir.path(), 1, &VerifyOptions::default()).expect("readable");
        assert!(report.problems[0]
            .message
            .contains("manifest.json is missing"));
        assert_eq!(report.records, 0);
    }

    fn written_release() -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().expect("temp dir");
        let records = records(2);
        let written = write_release(dir.path(), &records, &info(&records, 2)).expect("written");
        (dir, written.jsonl_name)
    }

    #[test]
    fn a_record_whose_prompt_the_manifest_lists_as_flagged_must_carry_needs_review() {
        use crate::release::{FlagOutcome, FlaggedItem};
        let release = |needs_review: bool| {
            let dir = tempfile::tempdir().expect("temp dir");
            let mut records = records(2);
            records[0].needs_review = needs_review;
            let mut info = info(&records, 2);
            info.flagged = vec![FlaggedItem {
                item_id: "author/simple_factual/0/0".to_string(),
                category: Category::SimpleFactual,
                prompt_sha256: crate::util::digest::sha256_hex(records[0].prompt.as_bytes()),
                stage: "audit".to_string(),
                reason: "panel_disagrees".to_string(),
                detail: String::new(),
                excerpt: String::new(),
                outcome: FlagOutcome::Released(records[0].id.clone()),
            }];
            write_release(dir.path(), &records, &info).expect("written");
            let report = verify_path(dir.path(), 2, &VerifyOptions::default()).expect("readable");
            (dir, report)
        };
        let (_dir, flagged) = release(true);
        assert!(flagged.problems.is_empty(), "{}", messages(&flagged));
        let (_dir, unflagged) = release(false);
        assert_eq!(unflagged.problems.len(), 1, "{}", messages(&unflagged));
        assert_eq!(unflagged.problems[0].line, Some(1));
        assert!(unflagged.problems[0]
            .message
            .contains("flagged_prompts_sha256, but the record lacks \"_needs_review\": true"));
    }

    #[test]
    fn a_folder_uses_manifest_counts_and_checks_sums() {
        let (dir, jsonl_name) = written_release();
        let clean = verify_path(dir.path(), 100, &VerifyOptions::default()).expect("readable");
        assert!(clean.problems.is_empty(), "{}", messages(&clean));
        let as_file = verify_path(&dir.path().join(&jsonl_name), 2, &VerifyOptions::default())
            .expect("readable");
        assert!(as_file.problems.is_empty(), "{}", messages(&as_file));

        let readme = dir.path().join("README.md");
        let mut text = fs::read_to_string(&readme).expect("card");
        text.push_str("edited\n");
        fs::write(&readme, text).expect("edit");
        let edited = verify_path(dir.path(), 100, &VerifyOptions::default()).expect("readable");
        assert_eq!(edited.problems.len(), 1, "{}", messages(&edited));
        assert!(edited.problems[0]
            .message
            .starts_with("README.md: SHA-256 is"));
    }

    #[test]
    fn a_changed_jsonl_fails_its_hash() {
        let (dir, jsonl_name) = written_release();
        let path = dir.path().join(&jsonl_name);
        let text = fs::read_to_string(&path)
            .expect("jsonl")
            .replacen("quota", "Quota", 1);
        fs::write(&path, text).expect("edit");
        let report = verify_path(dir.path(), 100, &VerifyOptions::default()).expect("readable");
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.message.starts_with(&format!("{jsonl_name}: SHA-256 is"))),
            "{}",
            messages(&report)
        );
        assert!(
            report.problems.iter().any(|p| p
                .message
                .ends_with(&format!("{MANIFEST} says {}", report_sha(&dir)))),
            "{}",
            messages(&report)
        );
    }

    /// The JSONL hash the release's manifest states.
    fn report_sha(dir: &tempfile::TempDir) -> String {
        let text = fs::read_to_string(dir.path().join(MANIFEST)).expect("manifest");
        let manifest: Value = serde_json::from_str(&text).expect("json");
        manifest["sha256"].as_str().expect("sha256").to_string()
    }

    #[test]
    fn a_manifest_cannot_point_outside_its_folder() {
        let (dir, _) = written_release();
        let path = dir.path().join(MANIFEST);
        let mut manifest: Value =
            serde_json::from_str(&fs::read_to_string(&path).expect("manifest")).expect("json");
        manifest["prompts_file"] = json!("../elsewhere.jsonl");
        manifest["counts"]["reasoning"] = json!("many");
        fs::write(&path, manifest.to_string()).expect("edit");
        let report = verify_path(dir.path(), 100, &VerifyOptions::default()).expect("readable");
        let text = messages(&report);
        assert!(text.contains("not a file in its own folder"), "{text}");
        assert!(
            text.contains("count for reasoning is not a non-negative integer"),
            "{text}"
        );
        assert_eq!(report.records, 0);
    }

    #[test]
    fn sums_lines_are_parsed_as_sha256sum_writes_them() {
        let hash = "ab".repeat(32);
        assert_eq!(
            parse_sum_line(&format!("{hash}  a.jsonl")),
            Some((hash.clone(), "a.jsonl"))
        );
        assert_eq!(
            parse_sum_line(&format!("{hash} *./a.jsonl")),
            Some((hash.clone(), "a.jsonl"))
        );
        assert_eq!(parse_sum_line(&format!("{hash} a.jsonl")), None);
        assert_eq!(parse_sum_line("short  a.jsonl"), None);
        assert_eq!(parse_sum_line(&format!("{}  a", "zz".repeat(32))), None);
    }
}
