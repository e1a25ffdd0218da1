//! `manifest.json`: the release's counts, hashes, provenance and measured numbers, as pretty JSON
//! with keys in declaration order and maps in category/name order.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::info::{
    AuditNumbers, DedupNumbers, FlagCounts, ReleaseInfo, RepairNumbers, Shortfall, VerifierNumbers,
};
use super::ReleaseError;
use crate::release::schema::{json_number, ReleaseRecord, RowSource, TargetRow};
use crate::runner::usage::StageUsage;
use crate::stages::item::Category;
use crate::stages::yields::{RoundSurvival, RoundYield};

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
    /// SHA-256 of each flagged candidate's prompt bytes: `verify` checks that a record with one
    /// of these prompts carries `_needs_review: true`.
    flagged_prompts_sha256: Vec<&'a str>,
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
    rejects_by_category: &'a BTreeMap<Category, BTreeMap<String, usize>>,
    repair: &'a RepairNumbers,
    verifiers: &'a BTreeMap<String, VerifierNumbers>,
    #[serde(skip_serializing_if = "Option::is_none")]
    audit: Option<&'a AuditNumbers>,
    dedup: &'a DedupNumbers,
    usage: &'a BTreeMap<String, StageUsage>,
    author_yield: &'a [RoundYield],
    survival: &'a [RoundSurvival],
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
pub(super) fn render_manifest(
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
        flagged_prompts_sha256: info.flagged_prompt_hashes(),
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
        rejects_by_category: &info.rejects_by_category,
        repair: &info.repair,
        verifiers: &info.verifiers,
        audit: info.audit.as_ref(),
        dedup: &info.dedup,
        usage: &info.usage,
        author_yield: &info.author_yield,
        survival: &info.survival,
        target_actions,
    };
    let mut text = serde_json::to_string_pretty(&manifest).map_err(ReleaseError::Manifest)?;
    text.push('\n');
    Ok(text)
}
