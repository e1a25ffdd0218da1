//! Turns assembled items into a release: the record shape of the v1 card (field order and number
//! spelling included), and the five release files written atomically, hashed, and checked by the
//! same verifier users run, so a written release always passes `verify`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

use crate::batch::{hex, Usage};
use crate::card;
use crate::fsio::write_atomic;
use crate::record::{Candidate, Category};
use crate::verify::{self, Problem};
use crate::yields::RoundYield;

/// One category's target action `(c, T, p, d, L)` as Appendix B of the SASEval paper states it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TargetRow {
    pub c: f64,
    #[serde(rename = "T")]
    pub t: f64,
    pub p: f64,
    pub d: u8,
    #[serde(rename = "L")]
    pub l: u32,
}

impl TargetRow {
    /// `[c, T, p, d, L/2048]`, the record's `target_action`.
    pub fn target_action(&self) -> [f64; 5] {
        [
            self.c,
            self.t,
            self.p,
            f64::from(self.d),
            f64::from(self.l) / MAX_NEW_SCALE,
        ]
    }

    /// `DEEP` iff `d == 1`, else `STRICT`.
    pub fn mode(&self) -> &'static str {
        if self.d == 1 {
            "DEEP"
        } else {
            "STRICT"
        }
    }
}

/// `target_action[4]` is `L / 2048`.
pub const MAX_NEW_SCALE: f64 = 2048.0;

/// The five rows the v1 card publishes (its Appendix-B table and its example record).
pub const CARD_ROWS: [(Category, TargetRow); 5] = [
    (
        Category::SimpleFactual,
        TargetRow {
            c: 0.10,
            t: 0.30,
            p: 0.90,
            d: 0,
            l: 128,
        },
    ),
    (
        Category::Reasoning,
        TargetRow {
            c: 0.20,
            t: 0.20,
            p: 0.90,
            d: 1,
            l: 768,
        },
    ),
    (
        Category::LongDocumentQa,
        TargetRow {
            c: 0.45,
            t: 0.20,
            p: 0.90,
            d: 1,
            l: 512,
        },
    ),
    (
        Category::MultiDocumentQa,
        TargetRow {
            c: 0.55,
            t: 0.20,
            p: 0.90,
            d: 1,
            l: 512,
        },
    ),
    (
        Category::MemoryUpdate,
        TargetRow {
            c: 0.45,
            t: 0.2,
            p: 0.9,
            d: 1,
            l: 512,
        },
    ),
];

/// The v1 card's row for `category`, when the card publishes one.
pub fn card_row(category: Category) -> Option<TargetRow> {
    CARD_ROWS
        .iter()
        .find(|(known, _)| *known == category)
        .map(|(_, row)| *row)
}

/// Where a category's target row comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowSource {
    /// Published by the v1 card; `verify` holds every release to it.
    V1Card,
    /// Not published by v1; set in this project's `pipeline.toml`.
    Project,
}

impl RowSource {
    pub fn of(category: Category) -> RowSource {
        if card_row(category).is_some() {
            RowSource::V1Card
        } else {
            RowSource::Project
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            RowSource::V1Card => "v1_card",
            RowSource::Project => "saseval_gen",
        }
    }
}

/// One line of the release file, exactly the v1 schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseRecord {
    pub id: String,
    pub category: Category,
    pub prompt: String,
    pub golds: Vec<String>,
    pub target_action: [f64; 5],
    pub t: f64,
    pub top_p: f64,
    pub mode: &'static str,
    pub max_new: u32,
    pub durable: Option<Vec<String>>,
    pub stale: Option<Vec<String>>,
    pub gold_repaired: bool,
    pub needs_review: bool,
}

impl ReleaseRecord {
    /// Builds the record from a candidate and its category's row. `T`, `top_p`, `mode` and
    /// `max_new` are read off the same row as `target_action`. Memory categories always get both
    /// `durable` and `stale` (empty when the candidate has none); other categories get neither.
    pub fn new(id: String, candidate: &Candidate, row: &TargetRow) -> ReleaseRecord {
        let memory = candidate.category.is_memory();
        let annotation =
            |values: &Option<Vec<String>>| memory.then(|| values.clone().unwrap_or_default());
        ReleaseRecord {
            id,
            category: candidate.category,
            prompt: candidate.prompt.clone(),
            golds: candidate.golds.clone(),
            target_action: row.target_action(),
            t: row.t,
            top_p: row.p,
            mode: row.mode(),
            max_new: row.l,
            durable: annotation(&candidate.durable),
            stale: annotation(&candidate.stale),
            gold_repaired: candidate.gold_repaired,
            needs_review: candidate.needs_review,
        }
    }

    /// One compact JSON object in the card's field order, numbers spelled as v1 spells them.
    pub fn to_line(&self) -> String {
        let strings =
            |values: &[String]| Value::Array(values.iter().cloned().map(Value::String).collect());
        let mut object = Map::new();
        object.insert("id".into(), Value::String(self.id.clone()));
        object.insert(
            "category".into(),
            Value::String(self.category.name().into()),
        );
        object.insert("prompt".into(), Value::String(self.prompt.clone()));
        object.insert("golds".into(), strings(&self.golds));
        object.insert(
            "target_action".into(),
            Value::Array(self.target_action.iter().map(|&x| json_number(x)).collect()),
        );
        object.insert("T".into(), json_number(self.t));
        object.insert("top_p".into(), json_number(self.top_p));
        object.insert("mode".into(), Value::String(self.mode.into()));
        object.insert("max_new".into(), Value::Number(self.max_new.into()));
        if let Some(durable) = &self.durable {
            object.insert("durable".into(), strings(durable));
        }
        if let Some(stale) = &self.stale {
            object.insert("stale".into(), strings(stale));
        }
        if self.gold_repaired {
            object.insert("_gold_repaired".into(), Value::Bool(true));
        }
        if self.needs_review {
            object.insert("_needs_review".into(), Value::Bool(true));
        }
        Value::Object(object).to_string()
    }
}

/// A number as v1 prints it: integral values as integers (`1`, not `1.0`), others in their
/// shortest round-trip form (`0.45`). Non-finite values have no JSON spelling and become `null`,
/// which the release's own verification then rejects.
pub(crate) fn json_number(x: f64) -> Value {
    const EXACT_INTEGER_LIMIT: f64 = 9_007_199_254_740_992.0; // 2^53
    if x.is_finite() && x.fract() == 0.0 && x.abs() < EXACT_INTEGER_LIMIT {
        // Exact: |x| < 2^53 and integral, so the conversion loses nothing.
        Value::Number(Number::from(x as i64))
    } else {
        Number::from_f64(x).map_or(Value::Null, Value::Number)
    }
}

/// Repair-stage numbers for one category.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RepairCounts {
    pub checked: usize,
    pub agreed: usize,
    pub repaired: usize,
    pub flagged: usize,
}

/// Repair-stage numbers over every numeric candidate checked (before trimming).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RepairNumbers {
    pub checked: usize,
    pub agreed: usize,
    pub repaired: usize,
    pub flagged: usize,
    pub by_category: BTreeMap<Category, RepairCounts>,
}

/// Items the assemble stage dropped before trimming.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DedupNumbers {
    /// Same prompt after the grading normalisation.
    pub exact: usize,
    /// Near duplicates (shingle Jaccard over the threshold).
    pub near: usize,
    /// Duplicates of a prompt in an earlier release.
    pub against_reference: usize,
    /// `_needs_review` items left out because `keep_flagged` was off.
    pub flagged_left_out: usize,
}

/// A category the release could not fill, and why its candidates were dropped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shortfall {
    pub category: Category,
    pub have: usize,
    pub want: usize,
    pub reasons: BTreeMap<String, usize>,
}

/// Everything the manifest and the card state about a release. The caller measures these; the
/// release files only print them.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseInfo {
    pub version: String,
    /// `YYYY-MM-DD`, supplied by the caller (the release never reads the clock).
    pub date: String,
    pub seed: u64,
    pub id_prefix: String,
    /// The target number of records per category (`release.per_category`).
    pub per_category: usize,
    pub tool_version: String,
    pub provider: String,
    pub author_model: String,
    pub verifier_models: Vec<String>,
    /// Hex fingerprint of the pipeline config that produced the release.
    pub config_fingerprint: String,
    /// Records in the release per category.
    pub counts: BTreeMap<Category, usize>,
    /// Records in the release per category and domain.
    pub domain_counts: BTreeMap<Category, BTreeMap<String, usize>>,
    /// Valid candidates authored per category (before dedup and trimming).
    pub authored: BTreeMap<Category, usize>,
    /// Authoring rejects by reason code.
    pub rejects: BTreeMap<String, usize>,
    pub repair: RepairNumbers,
    pub dedup: DedupNumbers,
    /// Batch usage per stage name.
    pub usage: BTreeMap<String, Usage>,
    /// Valid items and reject codes per authoring round and category.
    pub author_yield: Vec<RoundYield>,
    /// Non-empty only when the release was allowed to be short.
    pub shortfall: Vec<Shortfall>,
    /// Whether `_needs_review` items were kept (marked) instead of left out.
    pub keep_flagged: bool,
    /// Every category's target row; [`RowSource::of`] tells which come from the v1 card.
    pub target_rows: BTreeMap<Category, TargetRow>,
}

impl ReleaseInfo {
    pub fn total(&self) -> usize {
        self.counts.values().sum()
    }

    pub fn jsonl_name(&self) -> String {
        format!("saseval_{}_prompts.jsonl", self.version)
    }
}

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

const MANIFEST: &str = "manifest.json";
const CARD: &str = "README.md";
const CROISSANT: &str = "croissant.json";
const SUMS: &str = "SHA256SUMS";

/// Writes the JSONL, manifest, card, Croissant metadata and `SHA256SUMS` into `out_dir` (which
/// must exist), each atomically. The JSONL is verified in memory first, against `info.counts` and
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

    let manifest = render_manifest(info, &jsonl_name, &sha256, bytes, records)?;
    let readme = card::render_card(info, &jsonl_name, &sha256, bytes, records);
    let croissant = card::render_croissant(info, &jsonl_name, &sha256, bytes, records);
    let outputs: [(&str, &[u8]); 4] = [
        (&jsonl_name, jsonl.as_bytes()),
        (MANIFEST, manifest.as_bytes()),
        (CARD, readme.as_bytes()),
        (CROISSANT, croissant.as_bytes()),
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
    if !is_iso_date(&info.date) {
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

fn is_iso_date(date: &str) -> bool {
    let bytes = date.as_bytes();
    bytes.len() == 10
        && bytes.iter().enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            _ => b.is_ascii_digit(),
        })
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Records carrying each flag, as the release holds them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct FlagCounts {
    pub gold_repaired: usize,
    pub needs_review: usize,
}

impl FlagCounts {
    pub fn of(records: &[ReleaseRecord]) -> FlagCounts {
        FlagCounts {
            gold_repaired: records.iter().filter(|r| r.gold_repaired).count(),
            needs_review: records.iter().filter(|r| r.needs_review).count(),
        }
    }
}

#[derive(Serialize)]
struct Manifest<'a> {
    dataset: &'static str,
    version: &'a str,
    date: &'a str,
    prompts_file: &'a str,
    sha256: &'a str,
    bytes: u64,
    records: usize,
    per_category: usize,
    short: bool,
    counts: BTreeMap<Category, usize>,
    shortfall: &'a [Shortfall],
    counts_by_domain: &'a BTreeMap<Category, BTreeMap<String, usize>>,
    flags_in_release: FlagCounts,
    keep_flagged: bool,
    seed: u64,
    id_prefix: &'a str,
    tool: Tool<'a>,
    config_fingerprint: &'a str,
    provider: &'a str,
    author_model: &'a str,
    verifier_models: &'a [String],
    authored: &'a BTreeMap<Category, usize>,
    rejects: &'a BTreeMap<String, usize>,
    repair: &'a RepairNumbers,
    dedup: &'a DedupNumbers,
    usage: &'a BTreeMap<String, Usage>,
    author_yield: &'a [RoundYield],
    target_actions: BTreeMap<Category, ManifestRow>,
}

#[derive(Serialize)]
struct Tool<'a> {
    name: &'static str,
    version: &'a str,
}

#[derive(Serialize)]
struct ManifestRow {
    #[serde(flatten)]
    row: TargetRow,
    target_action: Vec<Value>,
    source: &'static str,
}

/// `manifest.json`: pretty JSON, keys in declaration order, maps in category/name order.
fn render_manifest(
    info: &ReleaseInfo,
    jsonl_name: &str,
    sha256: &str,
    bytes: u64,
    records: &[ReleaseRecord],
) -> Result<String, ReleaseError> {
    let counts = Category::ALL
        .into_iter()
        .map(|category| (category, info.counts.get(&category).copied().unwrap_or(0)))
        .collect();
    let target_actions = info
        .target_rows
        .iter()
        .map(|(&category, row)| {
            let entry = ManifestRow {
                row: *row,
                target_action: row
                    .target_action()
                    .iter()
                    .map(|&x| json_number(x))
                    .collect(),
                source: RowSource::of(category).label(),
            };
            (category, entry)
        })
        .collect();
    let manifest = Manifest {
        dataset: "SASEval",
        version: &info.version,
        date: &info.date,
        prompts_file: jsonl_name,
        sha256,
        bytes,
        records: records.len(),
        per_category: info.per_category,
        short: !info.shortfall.is_empty(),
        counts,
        shortfall: &info.shortfall,
        counts_by_domain: &info.domain_counts,
        flags_in_release: FlagCounts::of(records),
        keep_flagged: info.keep_flagged,
        seed: info.seed,
        id_prefix: &info.id_prefix,
        tool: Tool {
            name: "saseval-gen",
            version: &info.tool_version,
        },
        config_fingerprint: &info.config_fingerprint,
        provider: &info.provider,
        author_model: &info.author_model,
        verifier_models: &info.verifier_models,
        authored: &info.authored,
        rejects: &info.rejects,
        repair: &info.repair,
        dedup: &info.dedup,
        usage: &info.usage,
        author_yield: &info.author_yield,
        target_actions,
    };
    let mut text = serde_json::to_string_pretty(&manifest).map_err(ReleaseError::Manifest)?;
    text.push('\n');
    Ok(text)
}

/// Builders shared by the unit tests of the release, card and verify modules.
#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    /// The v1 card's example record, as the card prints it (one field group per line).
    pub(crate) const CARD_EXAMPLE: &str = r#"{"id":"sas1k-0881","category":"memory_update",
 "prompt":"The security policy previously required Kubernetes clusters to use version 1.22. A recent update mandates a minimum version of 1.25. What is the current minimum supported Kubernetes version for new clusters?",
 "golds":["1.25","kubernetes 1.25","version 1.25"],
 "target_action":[0.45,0.2,0.9,1,0.25],"T":0.2,"top_p":0.9,"mode":"DEEP","max_new":512,
 "durable":["1.25"],"stale":["1.22"]}"#;

    /// The card's example joined onto one line, as a JSONL file holds it.
    pub(crate) fn card_example_line() -> String {
        CARD_EXAMPLE.lines().map(str::trim_start).collect()
    }

    /// The card's rows plus test values for the five rows v1 leaves open.
    pub(crate) fn all_rows() -> BTreeMap<Category, TargetRow> {
        let mut rows: BTreeMap<Category, TargetRow> = CARD_ROWS.into_iter().collect();
        let ours = [
            (Category::BloatedFactual, (0.30, 0.30, 0.90, 0, 128)),
            (Category::BloatedReasoning, (0.35, 0.20, 0.90, 1, 768)),
            (Category::TechnicalCode, (0.25, 0.20, 0.90, 0, 256)),
            (Category::Conversational, (0.35, 0.30, 0.90, 0, 256)),
            (Category::MemoryRecall, (0.40, 0.20, 0.90, 0, 256)),
        ];
        for (category, (c, t, p, d, l)) in ours {
            rows.insert(category, TargetRow { c, t, p, d, l });
        }
        rows
    }

    pub(crate) fn candidate(category: Category, index: usize) -> Candidate {
        let memory = category.is_memory();
        Candidate {
            id: format!("author/{category}/0/{index}"),
            category,
            domain: ["fintech", "logistics"][index % 2].to_string(),
            prompt: format!("Question {index} about {category}: what is the quota value?"),
            golds: vec![format!("{}", 100 + index)],
            durable: memory.then(|| vec![format!("{}", 100 + index)]),
            stale: (memory && index % 2 == 0).then(|| vec![format!("{}", 50 + index)]),
            custom_id: format!("author/{category}/0"),
            model: "test-model".to_string(),
            round: 0,
            gold_repaired: category.is_numeric() && index == 0,
            needs_review: false,
        }
    }

    /// `per_category` records in each category, ids `t-0000`….
    pub(crate) fn records(per_category: usize) -> Vec<ReleaseRecord> {
        let rows = all_rows();
        Category::ALL
            .into_iter()
            .flat_map(|category| (0..per_category).map(move |i| (category, i)))
            .enumerate()
            .map(|(n, (category, i))| {
                ReleaseRecord::new(
                    format!("t-{n:04}"),
                    &candidate(category, i),
                    &rows[&category],
                )
            })
            .collect()
    }

    pub(crate) fn info(records: &[ReleaseRecord], per_category: usize) -> ReleaseInfo {
        let mut counts = BTreeMap::new();
        let mut domain_counts: BTreeMap<Category, BTreeMap<String, usize>> = BTreeMap::new();
        for (i, record) in records.iter().enumerate() {
            *counts.entry(record.category).or_default() += 1;
            let domain = ["fintech", "logistics"][i % 2].to_string();
            *domain_counts
                .entry(record.category)
                .or_default()
                .entry(domain)
                .or_default() += 1;
        }
        let authored = Category::ALL
            .into_iter()
            .map(|c| (c, per_category + 2))
            .collect();
        let repair_counts = RepairCounts {
            checked: per_category + 2,
            agreed: per_category,
            repaired: 2,
            flagged: 1,
        };
        ReleaseInfo {
            version: "v2".to_string(),
            date: "2026-08-01".to_string(),
            seed: 7,
            id_prefix: "t".to_string(),
            per_category,
            tool_version: "0.1.0".to_string(),
            provider: "file".to_string(),
            author_model: "test-author".to_string(),
            verifier_models: vec!["test-verifier".to_string()],
            config_fingerprint: "ab12cd34".to_string(),
            counts,
            domain_counts,
            authored,
            rejects: [
                ("no_json".to_string(), 3),
                ("gold_not_in_document".to_string(), 2),
            ]
            .into_iter()
            .collect(),
            repair: RepairNumbers {
                checked: 2 * repair_counts.checked,
                agreed: 2 * repair_counts.agreed,
                repaired: 2 * repair_counts.repaired,
                flagged: 2 * repair_counts.flagged,
                by_category: [
                    (Category::Reasoning, repair_counts.clone()),
                    (Category::BloatedReasoning, repair_counts),
                ]
                .into_iter()
                .collect(),
            },
            dedup: DedupNumbers {
                exact: 4,
                near: 3,
                against_reference: 1,
                flagged_left_out: 2,
            },
            usage: [
                (
                    "author".to_string(),
                    Usage {
                        requests: 12,
                        prompt_tokens: 34_567,
                        completion_tokens: 8_901,
                    },
                ),
                (
                    "repair".to_string(),
                    Usage {
                        requests: 8,
                        prompt_tokens: 2_000,
                        completion_tokens: 1_500,
                    },
                ),
            ]
            .into_iter()
            .collect(),
            author_yield: Vec::new(),
            shortfall: Vec::new(),
            keep_flagged: false,
            target_rows: all_rows(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use crate::verify::{verify_path, VerifyOptions};
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
            assert_eq!(stdout.matches(": OK").count(), 4, "{stdout}");
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
        info.date = "2026-8-1".to_string();
        assert!(matches!(
            write_release(dir.path(), &records, &info),
            Err(ReleaseError::BadDate(_))
        ));
        assert_eq!(fs::read_dir(dir.path()).expect("dir").count(), 0);
    }
}
