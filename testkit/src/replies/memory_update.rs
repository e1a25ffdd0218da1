//! The fake author's memory_update items: an earlier value, a correction, a question about the
//! latest value

use super::*;

/// A fact that changed: what it is, its values from oldest to latest (each as written in the
/// prompt and in `stale`/`durable`), the golds of the latest value, and two ways to ask for it.
pub(super) struct Change {
    pub(super) subject: String,
    pub(super) values: Vec<String>,
    pub(super) golds: Vec<String>,
    pub(super) questions: [&'static str; 2],
}

/// Two or three values drawn in order from sets whose members are never substrings of one another
/// once normalised, so no stale value grades a later value's gold as correct.
pub(super) fn change(pick: &mut Pick, ctx: &Ctx) -> Change {
    let steps = 2 + pick.below(2);
    let take = |pick: &mut Pick, values: &[u64]| -> Vec<u64> {
        pick.distinct(steps, values.len())
            .into_iter()
            .map(|at| values[at])
            .collect()
    };
    match ctx.turn(8) {
        0 => {
            let mut minors = take(pick, &[21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]);
            minors.sort_unstable();
            let values: Vec<String> = minors.iter().map(|minor| format!("1.{minor}")).collect();
            let latest = values.last().cloned().unwrap_or_default();
            Change {
                subject: format!(
                    "the minimum Kubernetes version for new {} clusters",
                    ctx.org
                ),
                golds: vec![
                    latest.clone(),
                    format!("version {latest}"),
                    format!("Kubernetes {latest}"),
                ],
                values,
                questions: [
                    "What is the current minimum Kubernetes version for new clusters?",
                    "Which Kubernetes version must a new cluster run at least, as of now?",
                ],
            }
        }
        1 => {
            let values: Vec<String> = take(pick, &[30, 45, 60, 90, 120, 365, 400])
                .iter()
                .map(|days| format!("{days} days"))
                .collect();
            let latest = values.last().cloned().unwrap_or_default();
            Change {
                subject: format!("the retention period for {} audit logs", ctx.system),
                golds: vec![latest.clone(), latest.replace(" days", "-day")],
                values,
                questions: [
                    "How long are audit logs kept now?",
                    "What retention period applies to the audit logs today?",
                ],
            }
        }
        2 => {
            let values: Vec<String> = pick
                .distinct(steps, PEOPLE_FOR_SNIPPETS.len())
                .into_iter()
                .map(|at| PEOPLE_FOR_SNIPPETS[at].to_string())
                .collect();
            let latest = values.last().cloned().unwrap_or_default();
            Change {
                subject: format!("the escalation owner for the {}", ctx.system),
                golds: person_golds(&latest),
                values,
                questions: [
                    "Who is the escalation owner today?",
                    "Whom should the on-call engineer escalate to now?",
                ],
            }
        }
        3 => {
            let values: Vec<String> = take(pick, &[300, 450, 600, 900, 1200, 1500, 2400])
                .iter()
                .map(|n| format!("{n} requests per minute"))
                .collect();
            let latest = values.last().cloned().unwrap_or_default();
            Change {
                subject: format!("the per-client rate limit of {}", ctx.service),
                golds: per_minute_golds(latest.split_whitespace().next().unwrap_or_default()),
                values,
                questions: [
                    "What is the per-client rate limit today?",
                    "How many requests per minute may one client send now?",
                ],
            }
        }
        4 => {
            let amounts = take(pick, &[2_000, 3_500, 7_500, 10_000, 12_500, 40_000]);
            let latest = amounts.last().copied().unwrap_or_default();
            Change {
                subject: format!(
                    "the amount above which a purchase at {} needs director approval",
                    ctx.org
                ),
                golds: money_golds(latest * 100),
                values: amounts
                    .iter()
                    .map(|amount| format!("${}", grouped(*amount)))
                    .collect(),
                questions: [
                    "Above what amount does a purchase need director approval now?",
                    "What is the current director-approval threshold for purchases?",
                ],
            }
        }
        5 => {
            let values: Vec<String> = pick
                .distinct(steps, REGIONS.len())
                .into_iter()
                .map(|at| REGIONS[at].to_string())
                .collect();
            let latest = values.last().cloned().unwrap_or_default();
            Change {
                subject: format!("the region of the primary {} database", ctx.system),
                golds: region_golds(&latest),
                values,
                questions: [
                    "Which region hosts the primary database today?",
                    "Where does the primary database run now?",
                ],
            }
        }
        6 => {
            let versions: &[&str] = if steps == 2 {
                pick.one(&[
                    &["1.0", "1.2"][..],
                    &["1.1", "1.2"],
                    &["1.2", "1.3"],
                    &["1.1", "1.3"],
                ])
            } else {
                &["1.0", "1.2", "1.3"]
            };
            let values: Vec<String> = versions
                .iter()
                .map(|version| format!("TLS {version}"))
                .collect();
            let latest = versions.last().copied().unwrap_or_default();
            Change {
                subject: format!(
                    "the minimum TLS version accepted by the {} load balancer",
                    ctx.service
                ),
                golds: vec![format!("TLS {latest}"), latest.to_string()],
                values,
                questions: [
                    "What is the minimum TLS version accepted now?",
                    "Which TLS version do clients need at least, as of today?",
                ],
            }
        }
        _ => {
            let values: Vec<String> = take(pick, &[6, 8, 10, 12])
                .iter()
                .map(|hours| format!("{hours} hours"))
                .collect();
            let latest = values.last().cloned().unwrap_or_default();
            Change {
                subject: format!("the maximum session length in the {}", ctx.system),
                golds: vec![latest.clone(), latest.replace(" hours", "-hour")],
                values,
                questions: [
                    "How long may a session last now?",
                    "What is the current maximum session length?",
                ],
            }
        }
    }
}

pub(super) const STALE_SOURCES: &[&str] = &[
    "According to the <system> runbook, {subject} is {value}.",
    "An older page on the <org> wiki says that {subject} is {value}.",
    "In last year's onboarding deck, the <team> wrote that {subject} was {value}.",
    "A note that <first> sent in the spring states that {subject} is {value}.",
    "Until recently, {subject} was {value}.",
    "The original design document for <svc> sets {subject} to {value}.",
];

pub(super) const UPDATE_OPENERS: &[&str] = &[
    "",
    "For the <team>'s records:",
    "Background for <first>, who joined the <team> this week.",
    "From the <org> change log for the <system>.",
    "<first2> asked the assistant to keep track of this.",
];

pub(super) const INTERMEDIATE: &[&str] = &[
    "During the pilot it was briefly changed to {value}.",
    "A temporary exception later set it to {value}.",
    "For a few weeks after the migration it was {value}.",
];

pub(super) const UPDATES: &[&str] = &[
    "However, a change approved by <name3> on {weekday} set it to {value}.",
    "The <team> has since updated it to {value}.",
    "As of this month it is {value}, per the revised standard.",
    "<first2> confirmed in the latest review that it is now {value}.",
    "That is out of date: the current value, effective this quarter, is {value}.",
];

pub(super) fn memory_update(pick: &mut Pick, ctx: &Ctx) -> Item {
    let change = change(pick, ctx);
    let fill = |template: &str, value: &str| {
        ctx.fill(template)
            .replace("{subject}", &change.subject)
            .replace("{value}", value)
    };
    let (stale, latest) = change.values.split_at(change.values.len() - 1);
    let mut sentences = Vec::new();
    let opener = ctx.fill(pick.one(UPDATE_OPENERS));
    if !opener.is_empty() {
        sentences.push(opener);
    }
    for (step, value) in stale.iter().enumerate() {
        let template = if step == 0 {
            pick.one(STALE_SOURCES)
        } else {
            pick.one(INTERMEDIATE)
        };
        sentences.push(fill(template, value));
    }
    let weekday = pick.one(WEEKDAYS);
    sentences.push(fill(pick.one(UPDATES), &latest[0]).replace("{weekday}", weekday));
    sentences.push(pick.one(&change.questions).to_string());
    Item {
        prompt: sentences.join(" "),
        golds: change.golds,
        durable: Some(latest.to_vec()),
        stale: Some(stale.to_vec()),
    }
}
