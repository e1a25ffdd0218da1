//! The release's dataset card (`README.md`, shaped like the v1 card, with front matter the
//! Hugging Face hub reads). It only prints what `ReleaseInfo` and the records measured: no number
//! in it is typed by hand, and its schema table is derived from the record's columns.

use crate::util::printable::printable;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::dataset::{
    pretty_name, CITATION, LICENSE_FILE, LICENSE_NAME, LICENSE_TERMS, PAPER, TAGS,
};
use super::files::REPORT;
use super::info::{ChangesSince, FlagCounts, ReleaseInfo};
use crate::release::schema::{json_number, HubFeature, ReleaseRecord, RowSource, COLUMNS};
use crate::stages::item::Category;
use serde_json::Value;

const GRADING: &str = r#"import re
def norm(t): return re.sub(r"[^a-z0-9 ]", " ", t.lower())
def graded(answer, golds):
    n = norm(answer)
    return int(any(norm(g) in n for g in golds))   # 1 if any gold is a substring"#;
/// v1's dataset hash as its card's header states it (its changelog abbreviates another value).
const V1_SHA256: &str = "ad7a6b932b8d59dc46483e6e7c53c17253e0b376e9796b4ade5d8ff2cab7460d";
/// A gold longer than this many words is counted as lenient (the v1 card's measure).
const LONG_GOLD_WORDS: usize = 4;

/// The v1 card's one-line character of each category.
pub(super) fn character(category: Category) -> &'static str {
    match category {
        Category::SimpleFactual => "Short enterprise/technical Q&A, low compressibility",
        Category::BloatedFactual => {
            "A simple question wrapped in corporate-email filler/politeness"
        }
        Category::Reasoning => {
            "Multi-step quantitative business problems (SLA math, unit economics, capacity)"
        }
        Category::BloatedReasoning => "Same, wrapped in verbose filler",
        Category::TechnicalCode => "Code review, debugging, API/config; short-token answers",
        Category::LongDocumentQa => {
            "250–450-word enterprise doc (policy/postmortem/SOW/RFC/SLA) + question"
        }
        Category::MultiDocumentQa => "4–6 labeled snippets with distractors + question",
        Category::Conversational => {
            "2–4 turn support dialog ending on an implicit-context question"
        }
        Category::MemoryRecall => "Stored profile/account/config facts + retrieval question",
        Category::MemoryUpdate => "Stale fact → correction → question requiring the latest value",
    }
}

/// Hugging Face `size_categories` bucket for `n` records.
pub fn size_category(n: usize) -> &'static str {
    const BUCKETS: [(u64, &str); 10] = [
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
        (100_000_000, "10M<n<100M"),
        (1_000_000_000, "100M<n<1B"),
        (10_000_000_000, "1B<n<10B"),
        (100_000_000_000, "10B<n<100B"),
        (1_000_000_000_000, "100B<n<1T"),
    ];
    let n = n as u64;
    BUCKETS
        .iter()
        .find(|(limit, _)| n < *limit)
        .map_or("n>1T", |(_, name)| name)
}

/// `README.md`: YAML front matter for the Hugging Face hub, then the card. `records` are the
/// release's records in file order (the first is shown as the example; flags are counted).
pub fn render_card(
    info: &ReleaseInfo,
    jsonl_name: &str,
    sha256: &str,
    bytes: u64,
    records: &[ReleaseRecord],
) -> String {
    let mut card = String::new();
    front_matter(&mut card, info, jsonl_name);
    header(&mut card, info, jsonl_name, sha256, bytes);
    composition(&mut card, info);
    schema(&mut card);
    target_actions(&mut card, info);
    example(&mut card, records);
    how_built(&mut card, info, records);
    intended_use(&mut card);
    limitations(&mut card, info, records);
    closing(&mut card, info, sha256, records);
    card
}

fn front_matter(card: &mut String, info: &ReleaseInfo, jsonl_name: &str) {
    card.push_str("---\n");
    let _ = writeln!(
        card,
        "license: other\nlicense_name: {LICENSE_NAME}\nlicense_link: {LICENSE_FILE}"
    );
    card.push_str("task_categories:\n  - text-generation\n  - question-answering\n");
    card.push_str("language:\n  - en\n");
    card.push_str("tags:\n");
    for tag in TAGS {
        let _ = writeln!(card, "  - {tag}");
    }
    let _ = writeln!(card, "pretty_name: {}", yaml_scalar(&pretty_name(info)));
    let _ = writeln!(
        card,
        "size_categories:\n  - {}",
        size_category(info.total())
    );
    let _ = writeln!(
        card,
        "configs:\n  - config_name: default\n    data_files: {}",
        yaml_scalar(jsonl_name)
    );
    dataset_info(card);
    card.push_str("---\n\n");
}

/// `dataset_info.features`: every column with its type, so the loaded schema is the same in every
/// release; `datasets` fills a declared column that no line carries with null (falsy), and
/// `ds.filter(lambda r: not r["_needs_review"])` works on a release where nothing is flagged.
fn dataset_info(card: &mut String) {
    card.push_str("dataset_info:\n  features:\n");
    for column in &COLUMNS {
        let _ = writeln!(card, "    - name: {}", yaml_scalar(column.name));
        match column.kind.hub_feature() {
            HubFeature::Value(dtype) => {
                let _ = writeln!(card, "      dtype: {dtype}");
            }
            HubFeature::List { dtype, length } => {
                let _ = writeln!(card, "      list: {dtype}");
                if let Some(length) = length {
                    let _ = writeln!(card, "      length: {length}");
                }
            }
        }
    }
}

/// A YAML scalar: plain when it cannot be misread, else double-quoted (JSON escaping is valid
/// YAML double-quoted syntax).
fn yaml_scalar(text: &str) -> String {
    let plain = text
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '.' | '_' | '-' | '—'))
        && text
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        && !text.ends_with(' ');
    if plain {
        text.to_string()
    } else {
        Value::String(text.to_string()).to_string()
    }
}

fn header(card: &mut String, info: &ReleaseInfo, jsonl_name: &str, sha256: &str, bytes: u64) {
    let total = info.total();
    let _ = writeln!(card, "# {} (Dataset Card)\n", pretty_name(info));
    let _ = writeln!(
        card,
        "**{} enterprise-grade prompts with substring-checkable answer keys, for benchmarking\n\
         *context governors* under the Strategic Alignment Score (SAS) protocol.**\n",
        group(total)
    );
    let _ = writeln!(
        card,
        "- **File:** `{jsonl_name}` ({} lines, JSON Lines, UTF-8, {} bytes)",
        group(total),
        group_u64(bytes)
    );
    let _ = writeln!(card, "- **SHA-256:** `{sha256}`");
    let _ = writeln!(
        card,
        "- **Version:** {} · **Built:** {} with saseval-gen {} (seed {}, config fingerprint `{}`)",
        info.version, info.date, info.tool_version, info.seed, info.config_fingerprint
    );
    let _ = writeln!(
        card,
        "- **Report:** [`{REPORT}`]({REPORT}) shows this release's numbers as charts (one \
         self-contained page)"
    );
    let _ = writeln!(card, "- **Protocol:** *{PAPER}*\n\n---\n");
    card.push_str(
        "## What this dataset is (and is not)\n\n\
         SASEval evaluates a **context governor** — the layer that sits between an application and a\n\
         downstream LLM and decides *which context, memory, and generation policy* reach the model\n\
         under a token/latency budget. This dataset is the **test-suite input** for that protocol: the\n\
         prompts a governor must optimize and the gold answers used to grade whether the optimized\n\
         prompt still yields a correct downstream answer.\n\n\
         - ✅ **It is** a stress set of enterprise prompts spanning compression, long-context,\n  \
         multi-doc, conversational, and memory workloads, each with short gold answers.\n\
         - ❌ **It is not** a model-capability benchmark (like MMLU/HotpotQA). Scores depend on the\n  \
         *governor* under test and the grading panel you pair with it — not on this data alone.\n\n",
    );
}

fn composition(card: &mut String, info: &ReleaseInfo) {
    card.push_str("## Composition\n\n");
    let counts: Vec<usize> = Category::ALL
        .iter()
        .map(|c| count(&info.counts, *c))
        .collect();
    let uniform = counts.iter().all(|n| *n == info.per_category);
    if uniform {
        let _ = writeln!(
            card,
            "Exactly **{} prompts per category**, 10 categories (uniform, `N = {}`):\n",
            group(info.per_category),
            group(info.total())
        );
    } else {
        let _ = writeln!(
            card,
            "Target **{} prompts per category**; this release is **short** (`N = {}`, see\n\
             [Limitations](#limitations--known-issues)):\n",
            group(info.per_category),
            group(info.total())
        );
    }
    card.push_str("| Category | N | Character |\n|---|---|---|\n");
    for (category, n) in Category::ALL.into_iter().zip(counts) {
        let _ = writeln!(
            card,
            "| `{category}` | {} | {} |",
            group(n),
            character(category)
        );
    }
    card.push_str("\nEnterprise domains per category (records in this release):\n\n");
    card.push_str("| Category | Domains |\n|---|---|\n");
    for category in Category::ALL {
        let domains = info
            .domain_counts
            .get(&category)
            .filter(|domains| !domains.is_empty())
            .map_or_else(
                || "—".to_string(),
                |domains| {
                    domains
                        .iter()
                        .map(|(domain, n)| format!("{} ({n})", table_cell(domain)))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            );
        let _ = writeln!(card, "| `{category}` | {domains} |");
    }
    card.push('\n');
}

fn schema(card: &mut String) {
    card.push_str(
        "## Schema (per JSON line)\n\n\
         | Field | Type | Description |\n\
         |---|---|---|\n",
    );
    for column in &COLUMNS {
        let _ = writeln!(
            card,
            "| `{}` | {} | {} |",
            column.name,
            column.kind.card_type(),
            column.card
        );
    }
    card.push_str("\nNo other fields: provenance is in `manifest.json`.\n\n");
}

fn target_actions(card: &mut String, info: &ReleaseInfo) {
    card.push_str(
        "## Target actions\n\n\
         One row per category; `T`, `top_p`, `mode` and `max_new` of every record are read off it.\n\
         Rows marked *v1 card* are the values the v1 card publishes (Appendix B of the SASEval paper);\n\
         v1 does not publish the others, so they are this release's choice.\n\n\
         | Category | c | T | p | d | L | mode | Source |\n|---|---|---|---|---|---|---|---|\n",
    );
    for category in Category::ALL {
        let source = match RowSource::of(category) {
            RowSource::V1Card => "v1 card",
            RowSource::Project => "saseval-gen choice",
        };
        match info.target_rows.get(&category) {
            Some(row) => {
                let _ = writeln!(
                    card,
                    "| `{category}` | {} | {} | {} | {} | {} | {} | {source} |",
                    number(row.c),
                    number(row.t),
                    number(row.p),
                    row.d,
                    row.l,
                    row.mode()
                );
            }
            None => {
                let _ = writeln!(card, "| `{category}` | — | — | — | — | — | — | not set |");
            }
        }
    }
    card.push('\n');
}

fn example(card: &mut String, records: &[ReleaseRecord]) {
    card.push_str("### Example record\n\n");
    match records.first() {
        Some(record) => {
            let _ = writeln!(card, "```json\n{}\n```\n", record.to_line());
        }
        None => card.push_str("The release holds no records.\n\n"),
    }
}

fn how_built(card: &mut String, info: &ReleaseInfo, records: &[ReleaseRecord]) {
    card.push_str("## How it was built\n\n");
    let authored: usize = info.authored.values().sum();
    let rejected: usize = info.rejects.values().sum();
    let _ = writeln!(
        card,
        "1. **Authoring:** `{}` (provider `{}`) wrote the prompts **and** gold answers, category by\n   \
         category with enterprise domain rotation (seed {}). {} valid candidates were authored ({});\n   \
         {} replies or items were rejected by validation{}.",
        info.author_model,
        info.provider,
        info.seed,
        group(authored),
        per_category_list(&info.authored),
        group(rejected),
        reasons_suffix(&info.rejects),
    );
    let repair = &info.repair;
    let verifiers = model_list(&info.verifier_models);
    let _ = writeln!(
        card,
        "2. **Numeric verification:** {} `reasoning` / `bloated_reasoning` candidates were re-solved\n   \
         independently by {verifiers} at `T=0` and compared numerically with the authored key:\n   \
         {} agreed, **{} of {} numeric keys were repaired**{}, and {} were flagged `_needs_review`.",
        group(repair.checked),
        group(repair.agreed),
        group(repair.repaired),
        group(repair.checked),
        percent_suffix(repair.repaired, repair.checked),
        group(repair.flagged),
    );
    for (category, counts) in &repair.by_category {
        let _ = writeln!(
            card,
            "   - `{category}`: {} checked, {} agreed, {} repaired, {} flagged",
            counts.checked, counts.agreed, counts.repaired, counts.flagged
        );
    }
    audit_step(card, info);
    let dedup = &info.dedup;
    let flagged = if info.keep_flagged {
        "flagged items were kept and carry `_needs_review`".to_string()
    } else {
        format!(
            "{} flagged items were left out",
            group(dedup.flagged_left_out)
        )
    };
    let _ = writeln!(
        card,
        "{}. **Assembly:** {} exact duplicates (same prompt after grading normalisation), {} near\n   \
         duplicates and {} copies of prompts in an earlier release were dropped; {flagged}; each category\n   \
         was trimmed to at most {} records (seeded, domain-balanced) and its target row attached.",
        if info.audit.is_some() { 4 } else { 3 },
        group(dedup.exact),
        group(dedup.near),
        group(dedup.against_reference),
        group(info.per_category),
    );
    if dedup.against_template_example > 0 {
        let _ = writeln!(
            card,
            "   Of the duplicates, {} copied a category template's own example item.",
            group(dedup.against_template_example)
        );
    }
    if dedup.same_fact > 0 {
        let _ = writeln!(
            card,
            "   Factual questions dropped because a kept question of their category has their key (the\n   \
             same fact asked again): {}.",
            group(dedup.same_fact)
        );
    }
    survival(card, info);
    let flags = FlagCounts::of(records);
    let _ = writeln!(
        card,
        "\nIn this release, {} records carry `_gold_repaired` and {} carry `_needs_review`.\n",
        group(flags.gold_repaired),
        group(flags.needs_review)
    );
    card.push_str(
        "Usage (tokens the backend reported; cost at the config's `[prices]`, beside the worst case \
         estimated before submitting, every reply at `max_tokens`):\n\n\
         | Stage | Model | Requests | Prompt tokens | Completion tokens | Cost USD | Worst case USD |\n\
         |---|---|---|---|---|---|---|\n",
    );
    let mut totals = (0u64, 0u64, 0u64, 0.0f64, 0.0f64);
    for (stage, usage) in &info.usage {
        let total = &usage.total;
        let _ = writeln!(
            card,
            "| {} | all | {} | {} | {} | {:.4} | {:.4} |",
            table_cell(stage),
            group_u64(total.requests),
            group_u64(total.prompt_tokens),
            group_u64(total.completion_tokens),
            usage.cost_usd,
            usage.worst_case_usd
        );
        for (model, by_model) in &usage.by_model {
            let _ = writeln!(
                card,
                "| {} | `{}` | {} | {} | {} | {:.4} | |",
                table_cell(stage),
                table_cell(model),
                group_u64(by_model.usage.requests),
                group_u64(by_model.usage.prompt_tokens),
                group_u64(by_model.usage.completion_tokens),
                by_model.cost_usd
            );
        }
        totals.0 += total.requests;
        totals.1 += total.prompt_tokens;
        totals.2 += total.completion_tokens;
        totals.3 += usage.cost_usd;
        totals.4 += usage.worst_case_usd;
    }
    let _ = writeln!(
        card,
        "| **total** | | {} | {} | {} | {:.4} | {:.4} |\n",
        group_u64(totals.0),
        group_u64(totals.1),
        group_u64(totals.2),
        totals.3,
        totals.4
    );
    let _ = writeln!(
        card,
        "Reproduction: `saseval-gen run` with the pipeline config of fingerprint\n\
         `{}` (saseval-gen {}); `manifest.json` holds every number above.\n",
        info.config_fingerprint, info.tool_version
    );
}

/// The loop's survival table: per round and category, what each stage let through.
fn survival(card: &mut String, info: &ReleaseInfo) {
    if info.survival.is_empty() {
        return;
    }
    card.push_str(
        "\nSurvival through the loop (each round authors for the categories still short, sized by \
         their survival so far; items asked → passed the gate → keys repaired / flagged by repair → \
         flagged by neither repair nor the audit → left after dedup → released):\n\n\
         | Round | Category | Asked | Gate | Repaired | Repair-flagged | Audit passed | After dedup | Released |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for round in &info.survival {
        for (category, s) in &round.categories {
            let _ = writeln!(
                card,
                "| {} | `{category}` | {} | {} | {} | {} | {} | {} | {} |",
                round.round,
                s.asked,
                s.gate,
                s.repaired,
                s.repair_flagged,
                s.audit_passed,
                s.after_dedup,
                s.released
            );
        }
    }
}

/// Step 3 when an audit ran: the panel, its rule and flags, and each panel model's accuracy on
/// the released records per category.
fn audit_step(card: &mut String, info: &ReleaseInfo) {
    let Some(audit) = &info.audit else {
        return;
    };
    let probe = if audit.context_probe {
        " The questions of the context categories were also asked with their context removed."
    } else {
        ""
    };
    let rule = if audit.min_correct == 0 {
        "`audit.min_correct = 0`: the panel's pass rates are reported, and no key was flagged for\n   \
         the panel missing it"
            .to_string()
    } else {
        format!(
            "A key passed when at least {} of {} panel models reached it",
            audit.min_correct,
            audit.models.len()
        )
    };
    let _ = writeln!(
        card,
        "3. **Audit panel:** every candidate was answered by {} as the benchmark's panel answers it\n   \
         ({}), and each answer graded by the grader below. {rule}; **{} of {} candidates passed**,\n   \
         and the rest were flagged `_needs_review`.{probe}",
        model_list(&audit.models),
        audit.sampling.describe(),
        group(audit.passed),
        group(audit.audited),
    );
    for (flag, n) in &audit.flags {
        let _ = writeln!(
            card,
            "   - `{}` ({}): {}",
            flag.code(),
            group(*n),
            flag.meaning()
        );
    }
    if audit.golds_extended > 0 {
        let _ = writeln!(
            card,
            "   - {} numeric keys gained surface variants of the same value so that correct answers grade.",
            group(audit.golds_extended)
        );
    }
    if audit.pass.is_empty() {
        return;
    }
    let _ = write!(
        card,
        "\n   Accuracy of each panel model on this release's records (no governor in front):\n\n   | Category |"
    );
    for model in &audit.models {
        let _ = write!(card, " `{}` |", table_cell(model));
    }
    let _ = write!(card, "\n   |---|");
    for _ in &audit.models {
        card.push_str("---|");
    }
    card.push('\n');
    for (category, by_model) in &audit.pass {
        let _ = write!(card, "   | `{category}` |");
        for model in &audit.models {
            match by_model.get(model) {
                Some(p) if p.answered > 0 => {
                    let _ = write!(
                        card,
                        " {:.1}% ({}/{}) |",
                        100.0 * p.correct as f64 / p.answered as f64,
                        p.correct,
                        p.answered
                    );
                }
                _ => card.push_str(" — |"),
            }
        }
        card.push('\n');
    }
    card.push('\n');
}

fn intended_use(card: &mut String) {
    card.push_str(
        "## Intended use\n\n\
         - **Primary:** run the SASEval protocol — send each `prompt` to a context governor, forward the\n  \
         optimized prompt to a frozen 3-model LLM panel, grade panel answers against `golds` by substring\n  \
         match, and compute per-prompt SAS = `700·Q + 200·C·ρ + 100·s`.\n\
         - **Also useful for:** prompt-compression evaluation, long-context/multi-doc retention tests, and\n  \
         memory-freshness diagnostics (`durable`/`stale`).\n\n",
    );
}

fn limitations(card: &mut String, info: &ReleaseInfo, records: &[ReleaseRecord]) {
    card.push_str("## Limitations & known issues\n\n");
    let checked = match &info.audit {
        Some(audit) if audit.min_correct == 0 => format!(
            "Every key was answered by an audit panel of {} model(s); with `audit.min_correct = 0`\n  \
             its pass rates are reported and no key was left out for the panel missing it.",
            audit.models.len()
        ),
        Some(audit) => format!(
            "Every key was answered by an audit panel of {} model(s), and kept only when at least {}\n  \
             reached it; a panel agreeing with a key does not prove it, and the benchmark's own panel may differ.",
            audit.models.len(),
            audit.min_correct
        ),
        None => "No audit panel answered the other golds: they were checked by rules (e.g. a document\n  \
             item's gold must occur in its document), not re-solved."
            .to_string(),
    };
    let _ = writeln!(
        card,
        "- **LLM-authored keys.** Every prompt and gold was written by `{}`. The numeric keys\n  \
         (`reasoning`, `bloated_reasoning`) were re-solved by independent models. {checked}",
        info.author_model
    );
    let flags = FlagCounts::of(records);
    if info.keep_flagged {
        let _ = writeln!(
            card,
            "- **`_needs_review` ({} items).** Kept on request; **filter these out** for strict use.",
            group(flags.needs_review)
        );
    } else {
        let _ = writeln!(
            card,
            "- **`_needs_review`.** {} flagged items were left out; {} records in this release carry the flag.",
            group(info.dedup.flagged_left_out),
            group(flags.needs_review)
        );
    }
    let golds: usize = records.iter().map(|r| r.golds.len()).sum();
    let long_golds = records
        .iter()
        .flat_map(|r| &r.golds)
        .filter(|gold| gold.split_whitespace().count() > LONG_GOLD_WORDS)
        .count();
    let _ = writeln!(
        card,
        "- **Substring grading is lenient.** A mention of any gold counts as correct; {} of {} gold\n  \
         strings exceed {LONG_GOLD_WORDS} words.",
        group(long_golds),
        group(golds)
    );
    if !info.shortfall.is_empty() {
        card.push_str("- **Short release.** Categories below target, with why their candidates were dropped:\n");
        for short in &info.shortfall {
            let _ = writeln!(
                card,
                "  - `{}`: {} of {}{}",
                short.category,
                group(short.have),
                group(short.want),
                if short.asked {
                    reasons_suffix(&short.reasons)
                } else {
                    " (not asked: its `prior_survival` is 0)".to_string()
                }
            );
        }
    }
    let _ = writeln!(
        card,
        "- **English only; synthetic.** Scenarios are model-written from the prompt templates; they\n  \
         describe fictional enterprises.\n"
    );
    let verifiers = model_list(&info.verifier_models);
    let memory = records.iter().filter(|r| r.category.is_memory()).count();
    let memory_complete = records
        .iter()
        .filter(|r| r.category.is_memory() && r.durable.is_some() && r.stale.is_some())
        .count();
    card.push_str("### What this release changes from v1\n\n");
    let _ = writeln!(
        card,
        "- v1's verification replaced 71 of its 200 authored numeric keys; here every numeric\n  \
         candidate was re-solved by {verifiers} and compared by value (units, separators, fractions\n  \
         and percent parsed; relative tolerance), and {} of {} keys were replaced.",
        group(info.repair.repaired),
        group(info.repair.checked)
    );
    let _ = writeln!(
        card,
        "- v1 shipped 14 `_needs_review` items in the main file; here {}.",
        if info.keep_flagged {
            format!(
                "flagged items were kept on request ({} in this release)",
                group(flags.needs_review)
            )
        } else {
            format!(
                "{} flagged items were left out",
                group(info.dedup.flagged_left_out)
            )
        }
    );
    let _ = writeln!(
        card,
        "- v1 gave 24 of 200 memory records `durable` only; here {} of {} memory records carry both\n  \
         `durable` and `stale`.",
        group(memory_complete),
        group(memory)
    );
    let _ = writeln!(
        card,
        "- v1 de-duplicated by exact prompt; here exact ({}), near-duplicate ({}) and earlier-release\n  \
         ({}) duplicates were dropped.",
        group(info.dedup.exact),
        group(info.dedup.near),
        group(info.dedup.against_reference)
    );
    card.push_str(
        "- v1's card numbers were written by hand; every number in this card is measured and repeated\n  \
         in `manifest.json`, and `SHA256SUMS` covers every release file.\n\n",
    );
}

fn closing(card: &mut String, info: &ReleaseInfo, sha256: &str, records: &[ReleaseRecord]) {
    let _ = writeln!(
        card,
        "## Grading normalization (reference)\n\n```python\n{GRADING}\n```\n"
    );
    let _ = writeln!(
        card,
        "## Licensing\n\n{LICENSE_TERMS}\n\n\
         The front matter marks it `other`/`{LICENSE_NAME}` with `license_link: {LICENSE_FILE}`:\n\
         [`{LICENSE_FILE}`]({LICENSE_FILE}) travels with the release and `SHA256SUMS` covers it.\n"
    );
    let _ = writeln!(card, "## Citation\n\n```bibtex\n{CITATION}\n```\n");
    let flags = FlagCounts::of(records);
    let _ = writeln!(
        card,
        "## Changelog\n\n\
         - **{} ({}):** {}-prompt release built by saseval-gen {}; {} records carry `_gold_repaired`;\n  \
         {} records flagged `_needs_review`. Dataset SHA-256 `{sha256}`.",
        info.version,
        info.date,
        group(info.total()),
        info.tool_version,
        group(flags.gold_repaired),
        group(flags.needs_review),
    );
    for earlier in &info.earlier {
        changes_since(card, earlier);
    }
    let _ = writeln!(
        card,
        "- **v1 (2026-07-09):** initial 1,000-prompt release; 71 numeric keys repaired; 14 items flagged\n  \
         `_needs_review`. Dataset SHA-256 `{V1_SHA256}` (as its card's header states)."
    );
}

/// The Changelog's account of what changed since an earlier release (`assemble --exclude`), as
/// `saseval-gen diff` measures it, nested under this release's entry. Names read from the
/// earlier release's file are shown as inline code with their control characters escaped.
fn changes_since(card: &mut String, changes: &ChangesSince) {
    let code = |text: &str| {
        let text = printable(text).replace('`', "'");
        format!("`{}`", table_cell(&text))
    };
    let _ = writeln!(
        card,
        "  - Since {} ({} records, SHA-256 `{}`), as `saseval-gen diff` measures it: {} records\n    \
         added, {} removed, {} kept ({} with the same prompt, {} near duplicates reworded).",
        code(&changes.earlier),
        group(changes.earlier_records),
        changes.earlier_sha256,
        group(changes.added),
        group(changes.removed),
        group(changes.kept_exact + changes.kept_near),
        group(changes.kept_exact),
        group(changes.kept_near),
    );
    let _ = writeln!(
        card,
        "  - Kept records whose golds changed: {}, flags: {}, target rows: {}; near duplicates across\n    \
         the two releases: {}.",
        group(changes.golds_changed),
        group(changes.flags_changed),
        group(changes.targets_changed),
        group(changes.near_duplicates),
    );
    let counts: Vec<String> = changes
        .counts
        .iter()
        .map(|(category, earlier, now)| {
            format!("{} {} → {}", code(category), group(*earlier), group(*now))
        })
        .collect();
    let _ = writeln!(
        card,
        "  - Records per category (then → now): {}.",
        if counts.is_empty() {
            "none in either".to_string()
        } else {
            counts.join(", ")
        }
    );
    let rows: Vec<String> = changes
        .rows_changed
        .iter()
        .map(|category| code(category))
        .collect();
    let _ = writeln!(
        card,
        "  - Target rows changed: {}.",
        if rows.is_empty() {
            "none".to_string()
        } else {
            rows.join(", ")
        }
    );
}

/// Text inside a Markdown table cell: a `|` would end the cell.
fn table_cell(text: &str) -> String {
    text.replace('|', "\\|")
}

fn model_list(models: &[String]) -> String {
    if models.is_empty() {
        return "no verifier model".to_string();
    }
    models
        .iter()
        .map(|model| format!("`{model}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn count(counts: &BTreeMap<Category, usize>, category: Category) -> usize {
    counts.get(&category).copied().unwrap_or(0)
}

fn per_category_list(counts: &BTreeMap<Category, usize>) -> String {
    if counts.is_empty() {
        return "none per category recorded".to_string();
    }
    counts
        .iter()
        .map(|(category, n)| format!("`{category}` {}", group(*n)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn reasons_suffix(reasons: &BTreeMap<String, usize>) -> String {
    if reasons.is_empty() {
        return String::new();
    }
    let list = reasons
        .iter()
        .map(|(reason, n)| format!("`{reason}` {}", group(*n)))
        .collect::<Vec<_>>()
        .join(", ");
    format!(" ({list})")
}

fn percent_suffix(part: usize, whole: usize) -> String {
    if whole == 0 {
        return String::new();
    }
    format!(" ({:.1}%)", part as f64 * 100.0 / whole as f64)
}

fn number(x: f64) -> String {
    json_number(x).to_string()
}

pub(super) fn group(n: usize) -> String {
    group_u64(n as u64)
}

/// `1234567` → `1,234,567`, as the v1 card writes counts.
fn group_u64(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::test_support::{info, records};
    use crate::release::Shortfall;

    const SHA: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    fn card_for(per_category: usize) -> (String, Vec<ReleaseRecord>, ReleaseInfo) {
        let records = records(per_category);
        let info = info(&records, per_category);
        let card = render_card(&info, "saseval_v2_prompts.jsonl", SHA, 12_345, &records);
        (card, records, info)
    }

    /// The lines between the two `---` markers.
    fn front_matter_lines(card: &str) -> Vec<&str> {
        let mut lines = card.lines();
        assert_eq!(lines.next(), Some("---"));
        lines.take_while(|line| *line != "---").collect()
    }

    #[test]
    fn front_matter_is_the_hub_yaml_with_this_release_values() {
        let (card, _, _) = card_for(3);
        let lines = front_matter_lines(&card);
        for line in &lines {
            let item = line
                .trim_start()
                .strip_prefix("- ")
                .unwrap_or(line.trim_start());
            let indent = line.len() - line.trim_start().len();
            assert!(indent % 2 == 0, "odd indent: {line:?}");
            assert!(
                line.trim_start().starts_with("- ") || item.contains(':'),
                "neither a key nor a list item: {line:?}"
            );
        }
        let expected = [
            "license: other",
            "license_name: cosavu-eval",
            "license_link: LICENSE.md",
            "pretty_name: SASEval v2 — Public Prompt Set",
            "size_categories:",
            "  - n<1K",
            "configs:",
            "  - config_name: default",
            "    data_files: saseval_v2_prompts.jsonl",
            "  - question-answering",
            "  - llm-evaluation",
        ];
        for want in expected {
            assert!(lines.contains(&want), "missing {want:?} in {lines:#?}");
        }
        let size = lines
            .iter()
            .position(|l| *l == "size_categories:")
            .expect("key");
        assert_eq!(lines[size + 1], "  - n<1K");
    }

    #[test]
    fn dataset_info_declares_every_column_with_its_hub_type_and_the_flags_as_bool() {
        let (card, records, _) = card_for(2);
        assert!(
            records.iter().all(|r| !r.needs_review),
            "the card must declare the flag even when no record carries it"
        );
        let lines = front_matter_lines(&card);
        let start = lines
            .iter()
            .position(|l| *l == "dataset_info:")
            .expect("dataset_info");
        assert_eq!(lines[start + 1], "  features:");
        let features: Vec<&str> = lines[start + 2..]
            .iter()
            .take_while(|l| l.starts_with("    "))
            .copied()
            .collect();
        let expected = "    - name: id
      dtype: string
    - name: category
      dtype: string
    - name: prompt
      dtype: string
    - name: golds
      list: string
    - name: target_action
      list: float64
      length: 5
    - name: T
      dtype: float64
    - name: top_p
      dtype: float64
    - name: mode
      dtype: string
    - name: max_new
      dtype: int64
    - name: durable
      list: string
    - name: stale
      list: string
    - name: _gold_repaired
      dtype: bool
    - name: _needs_review
      dtype: bool";
        assert_eq!(features.join("\n"), expected);
        let names = features.iter().filter(|l| l.contains("- name: ")).count();
        assert_eq!(names, COLUMNS.len());
    }

    #[test]
    fn the_licensing_section_links_the_license_file() {
        let (card, _, _) = card_for(1);
        let section = card
            .split("## Licensing\n")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .expect("a Licensing section");
        assert!(section.contains("[`LICENSE.md`](LICENSE.md)"), "{section}");
        assert!(section.contains(LICENSE_TERMS), "{section}");
    }

    #[test]
    fn the_changelog_states_the_changes_since_each_excluded_release() {
        let records = records(1);
        let mut info = info(&records, 1);
        let changelog = |info: &ReleaseInfo| {
            let card = render_card(info, "saseval_v2_prompts.jsonl", SHA, 12_345, &records);
            card.split("## Changelog\n\n")
                .nth(1)
                .unwrap_or_default()
                .to_string()
        };
        let without = changelog(&info);
        assert!(without.starts_with("- **v2 (2026-08-01):**"), "{without}");
        assert!(
            without.ends_with("(as its card's header states).\n"),
            "{without}"
        );
        info.earlier = vec![ChangesSince {
            earlier: "saseval_v1_prompts.jsonl".into(),
            earlier_records: 1_000,
            earlier_sha256: "ad7a".into(),
            added: 10,
            removed: 1_000,
            counts: vec![
                ("simple_factual".into(), 100, 1),
                ("poetry`\n## Injected".into(), 3, 0),
            ],
            rows_changed: vec!["technical_code".into()],
            ..ChangesSince::default()
        }];
        let with = changelog(&info);
        let entry: Vec<&str> = with.lines().collect();
        assert!(entry[0].starts_with("- **v2 (2026-08-01):**"));
        assert_eq!(
            entry[2..7],
            [
                "  - Since `saseval_v1_prompts.jsonl` (1,000 records, SHA-256 `ad7a`), as `saseval-gen diff` measures it: 10 records",
                "    added, 1,000 removed, 0 kept (0 with the same prompt, 0 near duplicates reworded).",
                "  - Kept records whose golds changed: 0, flags: 0, target rows: 0; near duplicates across",
                "    the two releases: 0.",
                "  - Records per category (then → now): `simple_factual` 100 → 1, `poetry'\\n## Injected` 3 → 0.",
            ]
        );
        assert_eq!(entry[7], "  - Target rows changed: `technical_code`.");
        assert!(entry[8].starts_with("- **v1 (2026-07-09):**"));
        assert!(
            !with.contains("\n## Injected"),
            "a name cannot start a section"
        );
    }

    #[test]
    fn size_categories_follow_the_hub_buckets() {
        assert_eq!(size_category(0), "n<1K");
        assert_eq!(size_category(999), "n<1K");
        assert_eq!(size_category(1_000), "1K<n<10K");
        assert_eq!(size_category(9_999), "1K<n<10K");
        assert_eq!(size_category(10_000), "10K<n<100K");
        assert_eq!(size_category(2_000_000), "1M<n<10M");
    }

    #[test]
    fn odd_scalars_are_quoted_in_the_front_matter() {
        assert_eq!(
            yaml_scalar("SASEval v2 — Public Prompt Set"),
            "SASEval v2 — Public Prompt Set"
        );
        assert_eq!(yaml_scalar("v2: beta #1"), "\"v2: beta #1\"");
        assert_eq!(yaml_scalar("-v2"), "\"-v2\"");
        assert_eq!(yaml_scalar("_needs_review"), "_needs_review");
    }

    #[test]
    fn header_states_file_hash_and_size() {
        let (card, _, _) = card_for(3);
        let body = card
            .split("\n---\n")
            .nth(1)
            .expect("a card after the front matter");
        let head: String = body.lines().take(12).collect::<Vec<_>>().join("\n");
        assert!(head.contains(&format!("- **SHA-256:** `{SHA}`")), "{head}");
        assert!(
            head.contains("(30 lines, JSON Lines, UTF-8, 12,345 bytes)"),
            "{head}"
        );
        assert!(
            head.contains("seed 7, config fingerprint `ab12cd34`"),
            "{head}"
        );
    }

    #[test]
    fn composition_table_has_the_real_counts() {
        let (card, _, _) = card_for(3);
        assert!(
            card.contains("Exactly **3 prompts per category**, 10 categories (uniform, `N = 30`)")
        );
        assert!(card.contains("| `memory_update` | 3 | Stale fact"));
        assert!(
            card.contains("| `reasoning` | fintech (2), logistics (1) |"),
            "{card}"
        );
    }

    #[test]
    fn example_is_the_first_record_line() {
        let (card, records, _) = card_for(2);
        let block = format!("```json\n{}\n```", records[0].to_line());
        assert!(card.contains(&block));
    }

    #[test]
    fn target_table_marks_which_rows_come_from_the_v1_card() {
        let (card, _, _) = card_for(1);
        assert!(card.contains("| `reasoning` | 0.2 | 0.2 | 0.9 | 1 | 768 | DEEP | v1 card |"));
        assert!(card.contains("| `memory_update` | 0.45 | 0.2 | 0.9 | 1 | 512 | DEEP | v1 card |"));
        assert!(card.contains(
            "| `technical_code` | 0.25 | 0.2 | 0.9 | 0 | 256 | STRICT | saseval-gen choice |"
        ));
        let rows = card.lines().filter(|l| l.ends_with(" | v1 card |")).count();
        assert_eq!(rows, 5);
    }

    #[test]
    fn build_numbers_come_from_the_info() {
        let (card, _, info) = card_for(2);
        assert!(
            card.contains("**4 of 8 numeric keys were repaired** (50.0%)"),
            "{card}"
        );
        assert!(card.contains("5 replies or items were rejected by validation (`gold_not_in_document` 2, `no_json` 3)"));
        assert!(card.contains("| **total** | | 20 | 36,567 | 10,401 | 0.0153 | 0.0612 |"));
        assert!(card.contains("| author | `qwen/qwen3-32b` | 12 | 34,567 | 8,901 | 0.0153 | |"));
        assert!(card.contains("2 flagged items were left out"));
        assert!(card.contains(
            "In this release, 2 records carry `_gold_repaired` and 0 carry `_needs_review`."
        ));
        assert!(card.contains(&format!("`{}`", info.author_model)));
        assert!(card.contains(&format!("Dataset SHA-256 `{SHA}`")));
    }

    #[test]
    fn a_short_release_states_its_shortfall_and_reasons() {
        let (card, _, _) = card_for(2);
        assert!(!card.contains("Short release"));
        let records = records(2);
        let mut info = info(&records, 3);
        info.shortfall = vec![Shortfall {
            category: Category::TechnicalCode,
            have: 2,
            want: 3,
            reasons: [("duplicate".to_string(), 5), ("no_json".to_string(), 1)]
                .into_iter()
                .collect(),
            asked: true,
        }];
        let card = render_card(&info, "f.jsonl", SHA, 1, &records);
        assert!(card.contains("this release is **short** (`N = 20`"));
        assert!(
            card.contains("  - `technical_code`: 2 of 3 (`duplicate` 5, `no_json` 1)"),
            "{card}"
        );
        info.shortfall[0].asked = false;
        let card = render_card(&info, "f.jsonl", SHA, 1, &records);
        assert!(
            card.contains("  - `technical_code`: 2 of 3 (not asked: its `prior_survival` is 0)"),
            "{card}"
        );
    }

    #[test]
    fn the_audit_step_states_its_rule_and_says_when_it_only_reports() {
        use crate::release::AuditNumbers;
        let records = records(1);
        let mut info = info(&records, 1);
        let card = render_card(&info, "f.jsonl", SHA, 1, &records);
        assert!(card.contains("No audit panel answered the other golds"));
        assert!(
            card.contains("3. **Assembly:**"),
            "without an audit, assembly is step 3"
        );
        info.audit = Some(AuditNumbers {
            models: vec!["p-a".to_string(), "p-b".to_string(), "p-c".to_string()],
            min_correct: 2,
            audited: 12,
            passed: 10,
            ..AuditNumbers::default()
        });
        let card = render_card(&info, "f.jsonl", SHA, 1, &records);
        assert!(card.contains("A key passed when at least 2 of 3 panel models reached it"));
        assert!(card.contains("**10 of 12 candidates passed**"), "{card}");
        assert!(card.contains("4. **Assembly:**"));
        assert!(
            card.contains("kept only when at least 2\n  reached it"),
            "{card}"
        );
        info.audit = info.audit.map(|audit| AuditNumbers {
            min_correct: 0,
            ..audit
        });
        let card = render_card(&info, "f.jsonl", SHA, 1, &records);
        assert!(
            card.contains("`audit.min_correct = 0`: the panel's pass rates are reported"),
            "{card}"
        );
        assert!(
            card.contains("no key was left out for the panel missing it"),
            "{card}"
        );
    }

    #[test]
    fn domain_names_cannot_break_the_table() {
        let records = records(1);
        let mut info = info(&records, 1);
        info.domain_counts.insert(
            Category::Reasoning,
            [("cloud/DevOps | SRE".to_string(), 1)]
                .into_iter()
                .collect(),
        );
        let card = render_card(&info, "f.jsonl", SHA, 1, &records);
        assert!(
            card.contains("| `reasoning` | cloud/DevOps \\| SRE (1) |"),
            "{card}"
        );
    }

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(group_u64(0), "0");
        assert_eq!(group_u64(999), "999");
        assert_eq!(group_u64(1_000), "1,000");
        assert_eq!(group_u64(1_234_567), "1,234,567");
    }
}
