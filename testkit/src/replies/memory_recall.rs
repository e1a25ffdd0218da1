//! The fake author's memory_recall items: a `Memory:` block of stored facts and a question about
//! one of them

use super::*;

pub(super) struct MemoryKey {
    pub(super) key: &'static str,
    pub(super) question: &'static str,
    pub(super) value: fn(&mut Pick, &Ctx) -> String,
    pub(super) golds: fn(&str) -> Vec<String>,
}

pub(super) fn single_gold(value: &str) -> Vec<String> {
    vec![value.to_string()]
}

pub(super) fn region_golds(value: &str) -> Vec<String> {
    vec![value.to_string(), spaced_region(value)]
}

pub(super) const MEMORY_KEYS: &[MemoryKey] = &[
    MemoryKey {
        key: "account_owner",
        question: "Who is the owner of this account?",
        value: |_, ctx| ctx.person(0).full(),
        golds: person_golds,
    },
    MemoryKey {
        key: "plan",
        question: "Which plan is the account on?",
        value: |pick, _| pick.one(PLANS).to_string(),
        golds: |v| vec![v.to_string(), format!("{v} plan")],
    },
    MemoryKey {
        key: "primary_region",
        question: "Which cloud region is the account's primary region?",
        value: |pick, _| pick.one(REGIONS).to_string(),
        golds: region_golds,
    },
    MemoryKey {
        key: "billing_cycle",
        question: "What billing cycle does the account use?",
        value: |pick, _| pick.one(&["annual", "monthly", "quarterly"]).to_string(),
        golds: |v| vec![v.to_string(), format!("{v} billing")],
    },
    MemoryKey {
        key: "sso_provider",
        question: "Which identity provider does the account use for single sign-on?",
        value: |pick, _| {
            pick.one(&[
                "Okta",
                "Azure AD",
                "Ping Identity",
                "Google Workspace",
                "OneLogin",
            ])
            .to_string()
        },
        golds: single_gold,
    },
    MemoryKey {
        key: "seat_limit",
        question: "How many seats does the account's contract allow?",
        value: |pick, _| (5 * pick.between(5, 200)).to_string(),
        golds: |v| vec![v.to_string(), format!("{v} seats")],
    },
    MemoryKey {
        key: "renewal_month",
        question: "In which month does the contract renew?",
        value: |pick, _| pick.one(MONTHS).to_string(),
        golds: single_gold,
    },
    MemoryKey {
        key: "support_tier",
        question: "Which support tier is the account entitled to?",
        value: |pick, _| {
            pick.one(&["Premier", "Standard", "Enhanced", "Mission Critical"])
                .to_string()
        },
        golds: |v| vec![v.to_string(), format!("{v} support")],
    },
    MemoryKey {
        key: "invoice_currency",
        question: "In which currency is the account invoiced?",
        value: |pick, _| {
            pick.one(&["EUR", "USD", "GBP", "CAD", "SGD", "AUD"])
                .to_string()
        },
        golds: single_gold,
    },
    MemoryKey {
        key: "api_rate_limit",
        question: "What API rate limit applies to the account?",
        value: |pick, _| format!("{} requests per minute", 100 * pick.between(3, 40)),
        golds: |v| {
            let n = v.split_whitespace().next().unwrap_or(v);
            vec![v.to_string(), format!("{n} per minute")]
        },
    },
    MemoryKey {
        key: "escalation_contact",
        question: "Who is the escalation contact for the account?",
        value: |_, ctx| ctx.person(1).full(),
        golds: person_golds,
    },
    MemoryKey {
        key: "data_residency",
        question: "In which jurisdiction must the account's data stay?",
        value: |pick, _| {
            pick.one(&["EU only", "US only", "UK only", "Canada only"])
                .to_string()
        },
        golds: |v| {
            let place = v.split_whitespace().next().unwrap_or(v);
            vec![v.to_string(), place.to_string()]
        },
    },
];

pub(super) const MEMORY_PREFACES: &[&str] = &[
    "",
    "Stored context for the <org> account (<product>):\n",
    "Profile facts saved by the assistant for the <team>:\n",
];

pub(super) fn memory_recall(pick: &mut Pick, ctx: &Ctx) -> Item {
    let facts = 4 + pick.below(5);
    memory_recall_with(pick, ctx, facts)
}

pub(super) fn memory_recall_with(pick: &mut Pick, ctx: &Ctx, facts: usize) -> Item {
    let chosen = pick.distinct(facts, MEMORY_KEYS.len());
    let asked = chosen[pick.below(chosen.len())];
    let mut asked_value = String::new();
    let lines: Vec<String> = chosen
        .iter()
        .map(|index| {
            let key = &MEMORY_KEYS[*index];
            let value = (key.value)(pick, ctx);
            if *index == asked {
                asked_value = value.clone();
            }
            format!("- {}: {value}", key.key)
        })
        .collect();
    let key = &MEMORY_KEYS[asked];
    let preface = ctx.fill(pick.one(MEMORY_PREFACES));
    Item {
        prompt: format!(
            "{preface}Memory:\n{}\n\nQuestion: {}",
            lines.join("\n"),
            key.question
        ),
        golds: (key.golds)(&asked_value),
        durable: Some(vec![asked_value]),
        stale: Some(Vec::new()),
    }
}
