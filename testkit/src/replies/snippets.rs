//! The fake author's multi_document_qa items: one attribute over several keys; the other keys'
//! snippets are distractors

use super::*;

pub(super) struct SnippetTopic {
    /// `{key}` and `{value}` are filled per snippet; `<…>` from the item's context.
    pub(super) titles: [&'static str; 2],
    pub(super) bodies: [&'static str; 2],
    pub(super) question: &'static str,
    pub(super) keys: &'static [&'static str],
    pub(super) values: &'static [&'static str],
    pub(super) golds: fn(&str) -> Vec<String>,
    pub(super) unrelated: [&'static str; 2],
    /// Values rise with the keys' order (severities, tiers), as real tables do.
    pub(super) ordered: bool,
}

pub(super) fn days_golds(value: &str) -> Vec<String> {
    vec![format!("{value} days")]
}

pub(super) fn per_minute_golds(value: &str) -> Vec<String> {
    vec![
        format!("{value} requests per minute"),
        format!("{value} per minute"),
    ]
}

pub(super) fn person_golds(value: &str) -> Vec<String> {
    let last = value.split_whitespace().last().unwrap_or(value);
    vec![value.to_string(), last.to_string()]
}

pub(super) fn minutes_golds(value: &str) -> Vec<String> {
    vec![format!("{value} minutes")]
}

pub(super) fn every_days_golds(value: &str) -> Vec<String> {
    vec![format!("every {value} days"), format!("{value} days")]
}

pub(super) fn time_golds(value: &str) -> Vec<String> {
    vec![value.to_string(), format!("{value} local time")]
}

pub(super) const PEOPLE_FOR_SNIPPETS: &[&str] = &[
    "Priya Raman",
    "Marcus Okafor",
    "Dana Whitfield",
    "Aisha Lindqvist",
    "Jonas Tanaka",
    "Mei Moreau",
    "Rafael Castillo",
    "Ingrid Brennan",
    "Kwame Haddad",
    "Sofia Novak",
];

pub(super) const SNIPPET_TOPICS: &[SnippetTopic] = &[
    SnippetTopic {
        titles: ["Log retention: {key}", "{key} logging standard"],
        bodies: [
            "Application logs for the <system> in the {key} region are retained for {value} days, after which the lifecycle job deletes them.",
            "In {key}, the <team> keeps <system> logs for {value} days to satisfy local audit requirements; older entries are purged nightly.",
        ],
        question: "How long are <system> logs retained in the {key} region?",
        keys: &["EU (Frankfurt)", "US East", "US West", "Asia Pacific (Singapore)", "UK (London)", "Canada (Central)"],
        values: &["14", "30", "45", "60", "90", "180", "365"],
        golds: days_golds,
        unrelated: [
            "Backup schedule\nFull backups of the <system> run nightly and are copied to a second region for disaster recovery.",
            "Access to logs\nOnly members of the <team> may query production logs, and every query is itself recorded in the audit trail.",
        ],
        ordered: false,
    },
    SnippetTopic {
        titles: ["{key} tier limits", "API quotas: {key}"],
        bodies: [
            "Customers on the {key} tier of <product> may make up to {value} requests per minute against the public API; calls above the limit are throttled.",
            "The {key} tier includes an API quota of {value} requests per minute per organisation, enforced at the <org> gateway.",
        ],
        question: "What is the API rate limit for the {key} tier of <product>?",
        keys: &["Starter", "Growth", "Business", "Enterprise", "Partner"],
        values: &["60", "120", "300", "600", "1,200", "3,000"],
        golds: per_minute_golds,
        unrelated: [
            "Billing cycles\nAll <product> tiers can be billed monthly or annually; annual billing includes a discount negotiated in the order form.",
            "Support channels\nEvery tier of <product> includes email support, and higher tiers add a shared chat channel with the <team>.",
        ],
        ordered: true,
    },
    SnippetTopic {
        titles: ["On-call: {key}", "{key} ownership"],
        bodies: [
            "The primary on-call owner for {key} this rotation is {value}, with escalation to the <team> lead.",
            "{value} is the named owner of {key} and carries the pager for it during the current rotation.",
        ],
        question: "Who is the primary on-call owner for {key}?",
        keys: &["billing-api", "search-indexer", "notification-service", "report-builder", "sso-gateway", "webhook-relay"],
        values: PEOPLE_FOR_SNIPPETS,
        golds: person_golds,
        unrelated: [
            "Rotation rules\nOn-call rotations at <org> last one week and hand over on Monday mornings after the operations review.",
            "Escalation policy\nIf the primary owner does not acknowledge a page quickly, it escalates to the secondary and then to the <team> lead.",
        ],
        ordered: false,
    },
    SnippetTopic {
        titles: ["{key} response target", "Support targets: {key}"],
        bodies: [
            "{key} tickets for the <system> must receive a first response within {value} minutes, at any hour.",
            "For {key} cases raised against the <system>, the support desk commits to a first response within {value} minutes.",
        ],
        question: "What is the first-response target for {key} tickets?",
        keys: &["Severity 1", "Severity 2", "Severity 3", "Severity 4"],
        values: &["15", "30", "60", "240", "480"],
        golds: minutes_golds,
        unrelated: [
            "Ticket channels\nCustomers can open tickets through the portal, by email, or by phone for the most urgent cases.",
            "Resolution updates\nThe assigned engineer posts updates on open tickets at a cadence that depends on the severity.",
        ],
        ordered: true,
    },
    SnippetTopic {
        titles: ["Key rotation: {key}", "{key} encryption"],
        bodies: [
            "Encryption keys protecting the {key} of the <system> are rotated every {value} days by the key management service.",
            "The <team> rotates the data keys for the {key} every {value} days; old keys stay available for decryption only.",
        ],
        question: "How often are the encryption keys for the {key} rotated?",
        keys: &["customer database", "object storage", "message queue", "analytics warehouse", "backup vault"],
        values: &["30", "60", "90", "180", "365"],
        golds: every_days_golds,
        unrelated: [
            "Key custody\nMaster keys for the <system> live in hardware security modules, and no engineer can export them.",
            "Access reviews\nPermissions to use encryption keys are reviewed by the <team> as part of the access certification cycle.",
        ],
        ordered: false,
    },
    SnippetTopic {
        titles: ["{key} cut-off", "Same-day shipping: {key}"],
        bodies: [
            "Orders for the {key} warehouse must be released to the <system> by {value} local time to ship the same day.",
            "The {key} site ships same day for every order released to the <system> before {value} local time.",
        ],
        question: "What is the same-day cut-off time for the {key} warehouse?",
        keys: &["Rotterdam", "Memphis", "Singapore", "Leipzig", "Dallas", "Toronto"],
        values: &["11:00", "13:00", "14:30", "15:00", "16:00", "17:30"],
        golds: time_golds,
        unrelated: [
            "Carrier pickups\nCarriers collect from each warehouse in the late afternoon, and the dock schedule is published in the <system>.",
            "Holiday calendar\nWarehouses follow the local public holiday calendar, and cut-offs do not apply on days without carrier service.",
        ],
        ordered: false,
    },
];

pub(super) const SNIPPET_SOURCES: &[&str] = &[
    "<org> handbook",
    "<team> wiki",
    "runbook for <svc>",
    "audit memo",
    "onboarding guide",
    "architecture notes",
    "<system> FAQ",
    "change record",
    "policy register",
    "<first>'s summary",
];

pub(super) const SNIPPET_PREFACES: &[&str] = &[
    "",
    "Use the excerpts below from the <org> knowledge base.\n",
    "Internal documentation extracts (<org>):\n",
];

pub(super) fn multi_document(pick: &mut Pick, ctx: &Ctx) -> Item {
    let docs = 4 + pick.below(3);
    multi_document_with(pick, ctx, docs)
}

/// `docs` snippets: the answer, `docs - 2` distractors on other keys, one unrelated snippet.
pub(super) fn multi_document_with(pick: &mut Pick, ctx: &Ctx, docs: usize) -> Item {
    let topic = &SNIPPET_TOPICS[ctx.turn(SNIPPET_TOPICS.len())];
    let related = (docs - 1).min(topic.keys.len()).min(topic.values.len());
    let mut keys = pick.distinct(related, topic.keys.len());
    let mut values = pick.distinct(related, topic.values.len());
    if topic.ordered {
        keys.sort_unstable();
        values.sort_unstable();
    }
    let asked = pick.below(related);
    let golds = (topic.golds)(topic.values[values[asked]]);
    let mut snippets: Vec<String> = keys
        .iter()
        .zip(&values)
        .map(|(key, value)| {
            let (key, value) = (topic.keys[*key], topic.values[*value]);
            let title = format!(
                "{} ({})",
                pick.one(&topic.titles).replace("{key}", key),
                pick.one(SNIPPET_SOURCES)
            );
            let body = pick
                .one(&topic.bodies)
                .replace("{key}", key)
                .replace("{value}", value);
            ctx.fill(&format!("{title}\n{body}"))
        })
        .collect();
    snippets.push(ctx.fill(pick.one(&topic.unrelated)));
    let snippets = shuffled(pick, snippets);
    let labelled: Vec<String> = snippets
        .iter()
        .enumerate()
        .map(|(index, snippet)| format!("[Doc {}] {snippet}", index + 1))
        .collect();
    let question = ctx.fill(&topic.question.replace("{key}", topic.keys[keys[asked]]));
    let preface = ctx.fill(pick.one(SNIPPET_PREFACES));
    Item::plain(
        format!("{preface}{}\n\nQuestion: {question}", labelled.join("\n")),
        golds,
    )
}
