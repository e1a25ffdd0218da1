//! What the manifest, the card and the report state about a release, as the stages measured it:
//! counts, repair and dedup numbers, usage, author yield, rejects, flagged items, shortfall and
//! target rows, and the audit panel's numbers once an audit ran.

use std::collections::BTreeMap;

use crate::quality::panel::Flag;
use serde::{Deserialize, Serialize};

use crate::release::schema::{ReleaseRecord, TargetRow};
use crate::runner::usage::StageUsage;
use crate::stages::item::Category;
use crate::stages::yields::{RoundSurvival, RoundYield};

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

/// How one verifier model's re-solves went (over every numeric candidate it was asked about):
/// counted by the repair stage into `repair_summary.json`, stated by the manifest and the card.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerifierNumbers {
    /// Replies with a number read off them.
    pub answered: usize,
    /// Replies with no number (or no reply).
    pub unparseable: usize,
    /// Answers taken from the last number because the `ANSWER:` line was missing.
    pub fell_back: usize,
    /// Answers whose `EXPR` did not evaluate to the `ANSWER`.
    pub expr_mismatch: usize,
    pub agreed_with_key: usize,
    pub disagreed_with_key: usize,
}

/// The audit panel's numbers, once an audit ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AuditNumbers {
    /// The panel, in config order.
    pub models: Vec<String>,
    /// Panel models that had to reach a key for it to pass.
    pub min_correct: usize,
    /// The context categories' questions were also asked without their context.
    pub context_probe: bool,
    pub sampling: PanelSampling,
    /// Candidates audited, passed and flagged (before dedup and trimming).
    pub audited: usize,
    pub passed: usize,
    /// Candidates per flag code (an item may carry several).
    pub flags: BTreeMap<Flag, usize>,
    /// Numeric keys given surface variants so that correct answers grade (value unchanged).
    pub golds_extended: usize,
    /// Per category, per panel model, over the records of this release: the Identity
    /// governor's accuracy, since the panel answered the prompts unchanged.
    pub pass: BTreeMap<Category, BTreeMap<String, PassCount>>,
}

/// The `[audit]` sampling overrides; `None` means each category's target row (`T`, `p`, `L`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PanelSampling {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
}

impl PanelSampling {
    /// In words: which value came from where.
    pub fn describe(&self) -> String {
        let part = |name: &str, value: Option<String>, row: &str| match value {
            Some(v) => format!("{name} {v} (audit.{name})"),
            None => format!("{name} = each category's {row}"),
        };
        [
            part("temperature", self.temperature.map(|t| t.to_string()), "T"),
            part("top_p", self.top_p.map(|p| p.to_string()), "p"),
            part("max_tokens", self.max_tokens.map(|n| n.to_string()), "L"),
        ]
        .join(", ")
    }
}

/// Items one panel model answered in one category, and how many of them graded correct.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PassCount {
    pub answered: usize,
    pub correct: usize,
}

/// Where a flagged item went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlagOutcome {
    /// Kept (`--keep-flagged`) as this record id, carrying `_needs_review`.
    Released(String),
    /// Left out because `keep_flagged` was off.
    LeftOut,
    /// Dropped as a duplicate before the flag policy applied.
    Duplicate,
    /// Kept but not chosen when its category was trimmed.
    NotChosen,
}

/// An item some stage flagged `_needs_review`, with why.
#[derive(Debug, Clone, PartialEq)]
pub struct FlaggedItem {
    /// The candidate's id (as in `authored.jsonl`).
    pub item_id: String,
    pub category: Category,
    /// SHA-256 of its prompt: the manifest lists it, so `verify` can tell the item if it is in
    /// the release.
    pub prompt_sha256: String,
    /// The stage that flagged it (`repair` or `audit`).
    pub stage: String,
    /// The stage's reason code.
    pub reason: String,
    /// What led to it, e.g. the key and each verifier's answer.
    pub detail: String,
    /// The start of the prompt.
    pub excerpt: String,
    pub outcome: FlagOutcome,
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
    /// Copies of a category template's own example item.
    pub against_template_example: usize,
    /// Factual items whose key a kept item of their category has: the same fact asked again.
    pub same_fact: usize,
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
    /// False when the run asked the category for nothing (its `prior_survival` is 0).
    pub asked: bool,
}

/// What changed since an earlier release, as `saseval-gen diff` measures it; the card's Changelog
/// states it when `assemble --exclude` names that release.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChangesSince {
    /// The earlier release's file name (not its path: the card reads the same wherever it was).
    pub earlier: String,
    pub earlier_records: usize,
    pub earlier_sha256: String,
    pub added: usize,
    pub removed: usize,
    /// Kept records matched by the same prompt after the card's normalisation.
    pub kept_exact: usize,
    /// Kept records matched as near duplicates.
    pub kept_near: usize,
    pub golds_changed: usize,
    pub flags_changed: usize,
    pub targets_changed: usize,
    /// Near-duplicate pairs across the two releases.
    pub near_duplicates: usize,
    /// Per category name: records in the earlier release and in this one.
    pub counts: Vec<(String, usize, usize)>,
    /// Categories whose target row differs between the two.
    pub rows_changed: Vec<String>,
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
    /// Every reject in `rejects.jsonl` (authoring and assembly) by category and reason code.
    pub rejects_by_category: BTreeMap<Category, BTreeMap<String, usize>>,
    pub repair: RepairNumbers,
    /// Per verifier model.
    pub verifiers: BTreeMap<String, VerifierNumbers>,
    /// Every item flagged `_needs_review`, whether or not the release keeps it.
    pub flagged: Vec<FlaggedItem>,
    /// `None` until an audit ran; the report's audit section appears only with it.
    pub audit: Option<AuditNumbers>,
    pub dedup: DedupNumbers,
    /// What each stage spent, with its cost by model and its worst-case estimate.
    pub usage: BTreeMap<String, StageUsage>,
    /// Valid items and reject codes per authoring round and category.
    pub author_yield: Vec<RoundYield>,
    /// Per round of the loop and category, how many items each stage let through.
    pub survival: Vec<RoundSurvival>,
    /// Non-empty only when the release was allowed to be short.
    pub shortfall: Vec<Shortfall>,
    /// Whether `_needs_review` items were kept (marked) instead of left out.
    pub keep_flagged: bool,
    /// Every category's target row; [`RowSource::of`] tells which come from the v1 card.
    pub target_rows: BTreeMap<Category, TargetRow>,
    /// What changed since each earlier release given to `assemble --exclude`.
    pub earlier: Vec<ChangesSince>,
}

impl ReleaseInfo {
    pub fn total(&self) -> usize {
        self.counts.values().sum()
    }

    /// The flagged candidates' prompt hashes, sorted. A flagged duplicate is left out: the
    /// record kept in its place may have the very same prompt, and is not flagged.
    pub fn flagged_prompt_hashes(&self) -> Vec<&str> {
        let mut hashes: Vec<&str> = self
            .flagged
            .iter()
            .filter(|item| item.outcome != FlagOutcome::Duplicate)
            .map(|item| item.prompt_sha256.as_str())
            .collect();
        hashes.sort_unstable();
        hashes.dedup();
        hashes
    }

    pub fn jsonl_name(&self) -> String {
        format!("saseval_{}_prompts.jsonl", self.version)
    }
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
