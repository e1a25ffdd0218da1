//! Planted defects: replies with known faults (junk, broken JSON, truncation, wrong keys) for the
//! tests that check each is caught.

use super::*;

/// A name that appears in no fixture text.
pub(super) const ABSENT_NAME: &str = "Quentin Marlowe";

pub(super) fn planted_items(
    category: &str,
    domain: &str,
    seq: usize,
) -> Vec<(Value, &'static str)> {
    let base = authored_item(category, domain, seq, 2, PLANTED_SLOTS);
    let first_gold = base.golds.first().cloned().unwrap_or_default();
    let with = |edit: &dyn Fn(&mut Item)| {
        let mut item = base.clone();
        edit(&mut item);
        item.to_value()
    };
    let mut planted = vec![
        (json!({ "prompt": base.prompt }), "missing_field"),
        (
            with(&|item| item.prompt = " \n ".to_string()),
            "empty_prompt",
        ),
        (
            json!({ "prompt": base.prompt, "golds": first_gold }),
            "wrong_type",
        ),
        (with(&|item| item.golds.clear()), "empty_golds"),
        (
            with(&|item| item.golds = vec!["—".to_string()]),
            "gold_blank",
        ),
        (
            with(&|item| item.golds = vec![format!("the answer is exactly {first_gold}")]),
            "gold_too_long",
        ),
        (
            with(&|item| item.golds = vec![first_gold.clone(), "ISO 9001".to_string()]),
            "golds_distinct_facts",
        ),
        (
            with(&|item| item.prompt = "…".to_string()),
            "placeholder_prompt",
        ),
        (
            with(&|item| item.prompt = cut_mid_sentence(&item.prompt)),
            "prompt_cut",
        ),
        (
            with(&|item| item.golds = vec!["TBD".to_string()]),
            "gold_placeholder",
        ),
        (
            with(&|item| item.golds = vec!["N".to_string()]),
            "gold_too_short",
        ),
        (
            with(&|item| item.golds = vec![MACHINE_MADE_GOLD.to_string()]),
            "gold_machine_made",
        ),
    ];
    if matches!(
        category,
        "long_document_qa" | "multi_document_qa" | "memory_recall" | "memory_update"
    ) {
        planted.push((
            with(&|item| {
                item.prompt.push_str(
                    "\n\nThe figures above were last reviewed by the governance board in March.",
                )
            }),
            "question_not_last",
        ));
    }
    if matches!(
        category,
        "long_document_qa"
            | "multi_document_qa"
            | "conversational"
            | "memory_recall"
            | "memory_update"
    ) {
        planted.push((
            with(&|item| {
                let gold = item.golds.first().cloned().unwrap_or_default();
                item.prompt.push_str(&format!(" Is it {gold}?"));
            }),
            "gold_in_question",
        ));
    }
    let mut more: Vec<(Value, &'static str)> = match category {
        "simple_factual" | "bloated_factual" | "reasoning" | "bloated_reasoning" => {
            vec![(
                with(&|item| item.prompt.push_str(&format!(" My guess is {first_gold}."))),
                "gold_in_prompt",
            )]
        }
        "long_document_qa" => {
            let short = drawn(
                category,
                domain,
                seq,
                100,
                PLANTED_SLOTS,
                |pick, ctx| {
                    let document = any_document(pick, ctx);
                    let (question, golds) = document.questions[0].clone();
                    Item::plain(
                        format!("{}\n\nQuestion: {question}", document_body(&document, 2)),
                        golds,
                    )
                },
                |_| true,
            );
            vec![
                (short.to_value(), "doc_length"),
                (
                    with(&|item| item.golds = vec![ABSENT_NAME.to_string()]),
                    "gold_not_in_context",
                ),
                (
                    with(&|item| {
                        if let Some(at) = item.prompt.rfind("\n\nQuestion: ") {
                            item.prompt.truncate(at);
                            item.prompt
                                .push_str("\n\nThese terms apply from the start of next quarter.");
                        }
                    }),
                    "no_question",
                ),
            ]
        }
        "multi_document_qa" => {
            let three = drawn(
                category,
                domain,
                seq,
                100,
                PLANTED_SLOTS,
                |pick, ctx| multi_document_with(pick, ctx, 3),
                |_| true,
            );
            vec![
                (three.to_value(), "snippet_count"),
                (
                    with(&|item| item.prompt = item.prompt.replace("[Doc 2]", "[Doc 7]")),
                    "snippet_labels",
                ),
                (
                    with(&|item| item.golds = vec![ABSENT_NAME.to_string()]),
                    "gold_not_in_context",
                ),
            ]
        }
        "conversational" => vec![
            (
                with(&|item| item.prompt.push_str("\nAgent: Let me check that for you.")),
                "turn_structure",
            ),
            (
                with(&|item| item.golds = vec![ABSENT_NAME.to_string()]),
                "gold_not_in_context",
            ),
        ],
        "memory_recall" => {
            let three = drawn(
                category,
                domain,
                seq,
                100,
                PLANTED_SLOTS,
                |pick, ctx| memory_recall_with(pick, ctx, 2),
                |_| true,
            );
            vec![
                (three.to_value(), "memory_block"),
                (
                    with(&|item| {
                        item.golds = vec![ABSENT_NAME.to_string()];
                        item.durable = Some(vec![ABSENT_NAME.to_string()]);
                    }),
                    "gold_not_in_context",
                ),
                (
                    with(&|item| item.durable = Some(Vec::new())),
                    "missing_durable",
                ),
                (
                    with(&|item| item.durable = Some(vec![ABSENT_NAME.to_string()])),
                    "durable_not_gold",
                ),
                (
                    with(&|item| item.stale = Some(vec![ABSENT_NAME.to_string()])),
                    "stale_not_in_prompt",
                ),
            ]
        }
        "memory_update" => {
            let subsumed = drawn(
                category,
                domain,
                seq,
                100,
                PLANTED_SLOTS,
                stale_contains_gold,
                |_| true,
            );
            vec![
                (subsumed.to_value(), "stale_graded_correct"),
                (with(&|item| item.stale = Some(Vec::new())), "missing_stale"),
                (
                    with(&|item| item.stale = Some(vec![ABSENT_NAME.to_string()])),
                    "stale_not_in_prompt",
                ),
                (
                    with(&|item| item.durable = Some(Vec::new())),
                    "missing_durable",
                ),
                (
                    with(&|item| item.durable = item.stale.clone()),
                    "durable_not_gold",
                ),
            ]
        }
        _ => Vec::new(),
    };
    match category {
        "reasoning" | "bloated_reasoning" => {
            more.push((
                with(&|item| item.golds = vec!["roughly a dozen".to_string()]),
                "gold_not_numeric",
            ));
        }
        _ => {}
    }
    match category {
        "bloated_factual" => {
            let plain = drawn(
                category,
                domain,
                seq,
                100,
                PLANTED_SLOTS,
                simple_factual,
                gold_not_in_prompt,
            );
            more.push((plain.to_value(), "not_bloated"));
        }
        "bloated_reasoning" => {
            let terse = drawn(
                category,
                domain,
                seq,
                100,
                PLANTED_SLOTS,
                terse_capacity,
                gold_not_in_prompt,
            );
            more.push((terse.to_value(), "not_bloated"));
        }
        _ => {}
    }
    planted.extend(more);
    planted
}

/// A gold such as a careless model invents: a URL under a placeholder host with a random token.
pub(super) const MACHINE_MADE_GOLD: &str =
    "https://example.com/port-5946wvmccsxpjyznyaamf3sb21rspd07c8hqwsti";

/// The first 60% of the prompt's words, ending on a dangling "the", as a reply cut mid-sentence.
pub(super) fn cut_mid_sentence(prompt: &str) -> String {
    let words: Vec<&str> = prompt.split(' ').collect();
    let keep = (words.len() * 3 / 5).max(1);
    format!("{} and the", words[..keep].join(" "))
}

/// A memory_update item whose stale value contains its gold: stale `300 days`, gold `30`.
pub(super) fn stale_contains_gold(pick: &mut Pick, ctx: &Ctx) -> Item {
    let latest = pick.one(&[14_u64, 21, 30, 45, 60]);
    let stale = latest * 10;
    Item {
        prompt: format!(
            "Until this spring, {} kept {} debug logs for {stale} days. To cut storage costs, the {} reduced the period to {latest} days. How many days are debug logs kept now?",
            ctx.org, ctx.system, ctx.team
        ),
        golds: vec![latest.to_string(), format!("{latest} days")],
        durable: Some(vec![format!("{latest} days")]),
        stale: Some(vec![format!("{stale} days")]),
    }
}

/// A capacity problem in about thirty words: valid except that it is not bloated.
pub(super) fn terse_capacity(pick: &mut Pick, _ctx: &Ctx) -> Item {
    let needed = pick.between(6, 48);
    let per_unit = 20 * pick.between(4, 40);
    let utilisation = 5 * pick.between(10, 17);
    let spares = pick.between(2, 4);
    let peak = needed * per_unit * utilisation / 100;
    let answer = (needed + spares).to_string();
    Item::plain(
        format!(
            "Peak load is {} requests per second; each pod handles {} requests per second at {utilisation}% target utilisation, and {spares} spare pods are kept. How many pods are needed?",
            grouped(peak),
            grouped(per_unit)
        ),
        vec![answer.clone(), format!("{answer} pods")],
    )
}
