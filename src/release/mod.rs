//! Turns assembled items into a release: the release files written atomically, hashed, and
//! checked by the same verifier users run, so a written release always passes `verify`. What a
//! record is lives in `crate::release::schema`; what the files state lives in `info`.

mod card;
mod croissant;
mod dataset;
pub mod diff;
pub mod files;
mod info;
mod manifest;
mod report;
pub mod schema;
#[cfg(test)]
pub(crate) mod test_support;
pub mod verify;

use files::{CARD, CROISSANT, MANIFEST, REPORT, SUMS};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use info::{
    AuditNumbers, ChangesSince, DedupNumbers, FlagCounts, FlagOutcome, FlaggedItem, PanelSampling,
    PassCount, ReleaseInfo, RepairCounts, RepairNumbers, Shortfall, VerifierNumbers,
};
pub(crate) use report::summary as five_number_summary;

use crate::release::schema::ReleaseRecord;
use crate::stages::item::Category;
use crate::util::digest::sha256_hex;
use crate::util::fsio::write_atomic;
use verify::Problem;

/// What `write_release` produced.
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenRelease {
    pub jsonl_name: String,
    pub sha256: String,
    /// Every file written, in write order (`SHA256SUMS` last).
    pub files: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "release.version {0:?} cannot name a file: use letters, digits, '.', '_' or '-' (e.g. \"v2\")"
    )]
    BadVersion(String),
    #[error("release date {0:?} is not YYYY-MM-DD")]
    BadDate(String),
    #[error(
        "{category} has {have} of {want} records but the shortfall list does not say so; \
         record the shortfall or fill the category"
    )]
    UnrecordedShortfall {
        category: Category,
        have: usize,
        want: usize,
    },
    #[error("cannot serialise manifest.json: {0}")]
    Manifest(#[source] serde_json::Error),
    #[error("the release would not pass verify ({} problems), first: {}", .0.len(), first_problem(.0))]
    Invalid(Vec<Problem>),
}

fn first_problem(problems: &[Problem]) -> String {
    problems
        .first()
        .map(ToString::to_string)
        .unwrap_or_default()
}

/// Writes the JSONL, manifest, card, Croissant metadata, license, report and `SHA256SUMS` into
/// `out_dir` (which must exist), each atomically. The JSONL is verified in memory first, against `info.counts` and
/// every row in `info.target_rows`; a release that would not pass `verify` is not written.
pub fn write_release(
    out_dir: &Path,
    records: &[ReleaseRecord],
    info: &ReleaseInfo,
) -> Result<WrittenRelease, ReleaseError> {
    check_info(info)?;
    let jsonl_name = info.jsonl_name();
    let jsonl: String = records
        .iter()
        .map(|record| record.to_line() + "\n")
        .collect();
    let expected: BTreeMap<Category, usize> = Category::ALL
        .into_iter()
        .map(|category| (category, info.counts.get(&category).copied().unwrap_or(0)))
        .collect();
    let own_check = verify::check_jsonl(
        jsonl.as_bytes(),
        &expected,
        &verify::VerifyOptions {
            our_rows: Some(info.target_rows.clone()),
        },
    )
    .map_err(|source| ReleaseError::Io {
        path: out_dir.join(&jsonl_name),
        source,
    })?;
    if !own_check.problems.is_empty() {
        return Err(ReleaseError::Invalid(own_check.problems));
    }
    let sha256 = sha256_hex(jsonl.as_bytes());
    let bytes = jsonl.len() as u64;

    let manifest = manifest::render_manifest(info, &jsonl_name, &sha256, bytes, records)?;
    let readme = card::render_card(info, &jsonl_name, &sha256, bytes, records);
    let croissant = croissant::render_croissant(info, &jsonl_name, &sha256, bytes, records);
    let license = dataset::license_file(info);
    let report = report::render_report(info, &jsonl_name, &sha256, records);
    let outputs: [(&str, &[u8]); 6] = [
        (&jsonl_name, jsonl.as_bytes()),
        (MANIFEST, manifest.as_bytes()),
        (CARD, readme.as_bytes()),
        (CROISSANT, croissant.as_bytes()),
        (dataset::LICENSE_FILE, license.as_bytes()),
        (REPORT, report.as_bytes()),
    ];
    let mut sums = String::new();
    let mut files = Vec::with_capacity(outputs.len() + 1);
    for (name, content) in outputs {
        let path = out_dir.join(name);
        write_file(&path, content)?;
        // `sha256sum` text mode: hash, two spaces, file name.
        let _ = writeln!(sums, "{}  {name}", sha256_hex(content));
        files.push(path);
    }
    let sums_path = out_dir.join(SUMS);
    write_file(&sums_path, sums.as_bytes())?;
    files.push(sums_path);
    Ok(WrittenRelease {
        jsonl_name,
        sha256,
        files,
    })
}

fn write_file(path: &Path, content: &[u8]) -> Result<(), ReleaseError> {
    write_atomic(path, content).map_err(|source| ReleaseError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn check_info(info: &ReleaseInfo) -> Result<(), ReleaseError> {
    let version_ok = !info.version.is_empty()
        && info.version != "."
        && info.version != ".."
        && info
            .version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !version_ok {
        return Err(ReleaseError::BadVersion(info.version.clone()));
    }
    if !crate::util::clock::is_iso_date(&info.date) {
        return Err(ReleaseError::BadDate(info.date.clone()));
    }
    for category in Category::ALL {
        let have = info.counts.get(&category).copied().unwrap_or(0);
        if have < info.per_category {
            let recorded = info
                .shortfall
                .iter()
                .any(|short| short.category == category && short.have == have);
            if !recorded {
                return Err(ReleaseError::UnrecordedShortfall {
                    category,
                    have,
                    want: info.per_category,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use crate::release::schema::{card_row, json_number, TargetRow, MAX_NEW_SCALE};
    use crate::release::verify::{verify_path, VerifyOptions};
    use crate::stages::item::Candidate;
    use serde_json::Value;
    use std::fs;
    use std::process::Command;

    fn card_example_candidate() -> Candidate {
        Candidate {
            id: "author/memory_update/3/1".to_string(),
            category: Category::MemoryUpdate,
            domain: "cloud".to_string(),
            prompt: "The security policy previously required Kubernetes clusters to use version 1.22. A recent update mandates a minimum version of 1.25. What is the current minimum supported Kubernetes version for new clusters?".to_string(),
            golds: vec!["1.25".into(), "kubernetes 1.25".into(), "version 1.25".into()],
            durable: Some(vec!["1.25".into()]),
            stale: Some(vec!["1.22".into()]),
            custom_id: "author/memory_update/3".to_string(),
            model: "qwen/qwen3-32b".to_string(),
            round: 0,
            gold_repaired: false,
            needs_review: false,
        }
    }

    #[test]
    fn card_example_record_serialises_byte_for_byte() {
        let row = card_row(Category::MemoryUpdate).expect("the card publishes memory_update");
        let record = ReleaseRecord::new("sas1k-0881".to_string(), &card_example_candidate(), &row);
        assert_eq!(record.to_line(), card_example_line());
    }

    #[test]
    fn numbers_are_spelled_as_v1_spells_them() {
        let spell = |x: f64| json_number(x).to_string();
        assert_eq!(spell(1.0), "1");
        assert_eq!(spell(0.0), "0");
        assert_eq!(spell(0.25), "0.25");
        assert_eq!(spell(0.45), "0.45");
        assert_eq!(spell(0.2), "0.2");
        assert_eq!(spell(2048.0 / MAX_NEW_SCALE), "1");
        assert_eq!(spell(f64::NAN), "null");
        let row = TargetRow {
            c: 0.1,
            t: 0.3,
            p: 0.9,
            d: 0,
            l: 128,
        };
        let record = ReleaseRecord::new("x".into(), &candidate(Category::SimpleFactual, 1), &row);
        assert!(record
            .to_line()
            .contains(r#""target_action":[0.1,0.3,0.9,0,0.0625],"T":0.3,"top_p":0.9,"mode":"STRICT","max_new":128"#));
    }

    #[test]
    fn derived_fields_come_from_the_row() {
        let row = TargetRow {
            c: 0.2,
            t: 0.25,
            p: 0.8,
            d: 1,
            l: 1024,
        };
        let record = ReleaseRecord::new("x".into(), &candidate(Category::Reasoning, 1), &row);
        assert_eq!(record.target_action, [0.2, 0.25, 0.8, 1.0, 0.5]);
        assert_eq!(
            (record.t, record.top_p, record.mode, record.max_new),
            (0.25, 0.8, "DEEP", 1024)
        );
        assert_eq!(TargetRow { d: 0, ..row }.mode(), "STRICT");
    }

    #[test]
    fn memory_records_always_carry_both_annotations_and_others_neither() {
        let row = card_row(Category::MemoryUpdate).expect("card row");
        let mut memory = candidate(Category::MemoryRecall, 1);
        memory.stale = None;
        let record = ReleaseRecord::new("m".into(), &memory, &row);
        assert_eq!(record.stale, Some(Vec::new()));
        assert!(record
            .to_line()
            .ends_with(r#""durable":["101"],"stale":[]}"#));

        let mut plain = candidate(Category::SimpleFactual, 1);
        plain.durable = Some(vec!["stray".into()]);
        let record = ReleaseRecord::new("s".into(), &plain, &row);
        assert_eq!((record.durable, record.stale), (None, None));
    }

    #[test]
    fn flags_appear_only_when_true_and_last() {
        let row = card_row(Category::Reasoning).expect("card row");
        let mut item = candidate(Category::Reasoning, 1);
        assert!(!ReleaseRecord::new("r".into(), &item, &row)
            .to_line()
            .contains("_gold"));
        item.gold_repaired = true;
        item.needs_review = true;
        let line = ReleaseRecord::new("r".into(), &item, &row).to_line();
        assert!(line.ends_with(r#""max_new":768,"_gold_repaired":true,"_needs_review":true}"#));
    }

    #[test]
    fn written_release_passes_verify_and_sha256sum() {
        let dir = tempfile::tempdir().expect("temp dir");
        let records = records(3);
        let written = write_release(dir.path(), &records, &info(&records, 3)).expect("written");
        assert_eq!(written.jsonl_name, "saseval_v2_prompts.jsonl");
        let names: Vec<_> = written
            .files
            .iter()
            .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
            .collect();
        assert_eq!(
            names,
            [
                "saseval_v2_prompts.jsonl",
                "manifest.json",
                "README.md",
                "croissant.json",
                "LICENSE.md",
                "report.html",
                "SHA256SUMS"
            ]
        );

        let report = verify_path(dir.path(), 999, &VerifyOptions::default()).expect("readable");
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert_eq!(report.records, 30);
        assert_eq!(report.sha256, written.sha256);
        assert_eq!(report.lacking_stale, 0);

        let jsonl = fs::read_to_string(dir.path().join(&written.jsonl_name)).expect("jsonl");
        assert!(jsonl.ends_with('\n'));
        assert_eq!(jsonl.lines().count(), 30);

        if Command::new("sha256sum").arg("--version").output().is_ok() {
            let check = Command::new("sha256sum")
                .args(["-c", "SHA256SUMS"])
                .current_dir(dir.path())
                .output()
                .expect("sha256sum runs");
            let stdout = String::from_utf8_lossy(&check.stdout);
            assert!(check.status.success(), "{stdout}");
            assert_eq!(stdout.matches(": OK").count(), 6, "{stdout}");
        }
    }

    #[test]
    fn two_writes_of_the_same_input_are_byte_identical() {
        let records = records(2);
        let info = info(&records, 2);
        let first = tempfile::tempdir().expect("temp dir");
        let second = tempfile::tempdir().expect("temp dir");
        let a = write_release(first.path(), &records, &info).expect("first");
        let b = write_release(second.path(), &records, &info).expect("second");
        assert_eq!(a.sha256, b.sha256);
        for (left, right) in a.files.iter().zip(&b.files) {
            assert_eq!(
                fs::read(left).expect("a"),
                fs::read(right).expect("b"),
                "{left:?}"
            );
        }
    }

    #[test]
    fn manifest_states_counts_hash_and_row_sources() {
        let dir = tempfile::tempdir().expect("temp dir");
        let records = records(2);
        let written = write_release(dir.path(), &records, &info(&records, 2)).expect("written");
        let text = fs::read_to_string(dir.path().join(MANIFEST)).expect("manifest");
        let manifest: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(manifest["prompts_file"], "saseval_v2_prompts.jsonl");
        assert_eq!(manifest["sha256"], written.sha256.as_str());
        assert_eq!(manifest["records"], 20);
        assert_eq!(manifest["counts"]["memory_update"], 2);
        assert_eq!(manifest["flags_in_release"]["gold_repaired"], 2);
        assert_eq!(manifest["target_actions"]["reasoning"]["source"], "v1_card");
        assert_eq!(
            manifest["target_actions"]["technical_code"]["source"],
            "saseval_gen"
        );
        assert_eq!(manifest["target_actions"]["reasoning"]["L"], 768);
        assert_eq!(
            manifest["rejects_by_category"]["long_document_qa"]["gold_not_in_document"],
            2
        );
        assert_eq!(manifest["verifiers"]["test-verifier"]["answered"], 8);
        assert!(manifest.get("audit").is_none(), "no audit ran");
        let keys: Vec<_> = manifest
            .as_object()
            .expect("object")
            .keys()
            .take(4)
            .cloned()
            .collect();
        assert_eq!(keys, ["dataset", "version", "date", "prompts_file"]);
    }

    #[test]
    fn a_short_release_needs_its_shortfall_recorded() {
        let mut records = records(3);
        records.retain(|r| r.category != Category::TechnicalCode || r.id != "t-0012");
        let mut info = info(&records, 3);
        let dir = tempfile::tempdir().expect("temp dir");
        let err = write_release(dir.path(), &records, &info).expect_err("short without record");
        assert!(matches!(
            err,
            ReleaseError::UnrecordedShortfall {
                category: Category::TechnicalCode,
                have: 2,
                want: 3
            }
        ));
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 0);

        info.shortfall = vec![Shortfall {
            category: Category::TechnicalCode,
            have: 2,
            want: 3,
            reasons: [("duplicate".to_string(), 4)].into_iter().collect(),
            asked: true,
        }];
        write_release(dir.path(), &records, &info).expect("recorded shortfall");
        let report = verify_path(dir.path(), 3, &VerifyOptions::default()).expect("readable");
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert_eq!(report.counts["technical_code"], 2);
    }

    #[test]
    fn records_that_would_fail_verify_are_not_written() {
        let mut records = records(2);
        let duplicate = records[0].prompt.to_uppercase();
        records[1].prompt = duplicate;
        let dir = tempfile::tempdir().expect("temp dir");
        let err = write_release(dir.path(), &records, &info(&records, 2)).expect_err("duplicate");
        let ReleaseError::Invalid(problems) = err else {
            panic!("expected Invalid, got {err}")
        };
        assert!(
            problems
                .iter()
                .any(|p| p.message.contains("duplicate prompt")),
            "{problems:?}"
        );
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 0);
    }

    #[test]
    fn counts_that_disagree_with_the_records_are_refused() {
        let records = records(2);
        let mut info = info(&records, 2);
        info.counts.insert(Category::Reasoning, 3);
        info.per_category = 2;
        let dir = tempfile::tempdir().expect("temp dir");
        let err = write_release(dir.path(), &records, &info).expect_err("wrong counts");
        assert!(
            err.to_string().contains("reasoning: 2 records, expected 3"),
            "{err}"
        );
    }

    #[test]
    fn version_and_date_are_checked_before_anything_is_written() {
        let records = records(1);
        let dir = tempfile::tempdir().expect("temp dir");
        let mut info = info(&records, 1);
        info.version = "../v2".to_string();
        assert!(matches!(
            write_release(dir.path(), &records, &info),
            Err(ReleaseError::BadVersion(_))
        ));
        info.version = "v2".to_string();
        for date in ["2026-8-1", "2026-02-29"] {
            info.date = date.to_string();
            assert!(
                matches!(
                    write_release(dir.path(), &records, &info),
                    Err(ReleaseError::BadDate(_))
                ),
                "{date}"
            );
        }
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 0);
    }
}
