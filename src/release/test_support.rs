//! Builders shared by the unit tests of the release, card, Croissant and verify modules.

use std::collections::BTreeMap;

use super::info::{DedupNumbers, ReleaseInfo, RepairCounts, RepairNumbers, VerifierNumbers};
use crate::release::schema::{ReleaseRecord, TargetRow, CARD_ROWS};
use crate::runner::usage::{ModelUsage, StageUsage, Usage};
use crate::stages::item::{Candidate, Category};

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
        rejects_by_category: [
            (
                Category::LongDocumentQa,
                [("gold_not_in_document".to_string(), 2)]
                    .into_iter()
                    .collect(),
            ),
            (
                Category::SimpleFactual,
                [("no_json".to_string(), 3)].into_iter().collect(),
            ),
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
        verifiers: [(
            "test-verifier".to_string(),
            VerifierNumbers {
                answered: 2 * per_category + 4,
                agreed_with_key: 2 * per_category,
                disagreed_with_key: 4,
                ..VerifierNumbers::default()
            },
        )]
        .into_iter()
        .collect(),
        flagged: Vec::new(),
        audit: None,
        dedup: DedupNumbers {
            exact: 4,
            near: 3,
            against_reference: 1,
            against_template_example: 0,
            same_fact: 0,
            flagged_left_out: 2,
        },
        usage: [
            (
                "author".to_string(),
                StageUsage {
                    total: Usage {
                        requests: 12,
                        prompt_tokens: 34_567,
                        completion_tokens: 8_901,
                    },
                    cost_usd: 0.0153,
                    worst_case_usd: 0.0612,
                    by_model: [(
                        "qwen/qwen3-32b".to_string(),
                        ModelUsage {
                            usage: Usage {
                                requests: 12,
                                prompt_tokens: 34_567,
                                completion_tokens: 8_901,
                            },
                            cost_usd: 0.0153,
                        },
                    )]
                    .into(),
                },
            ),
            (
                "repair".to_string(),
                StageUsage {
                    total: Usage {
                        requests: 8,
                        prompt_tokens: 2_000,
                        completion_tokens: 1_500,
                    },
                    ..StageUsage::default()
                },
            ),
        ]
        .into_iter()
        .collect(),
        author_yield: Vec::new(),
        survival: Vec::new(),
        shortfall: Vec::new(),
        keep_flagged: false,
        target_rows: all_rows(),
        earlier: Vec::new(),
    }
}
