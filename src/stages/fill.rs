//! `run` as a closed loop whose target is the release, not the author gate. Each round authors,
//! repairs, audits and deduplicates; then it counts per category what assemble would release,
//! and the categories still short get a top-up round sized by the survival measured so far.
//! The loop stops when the release is full, when `author.max_rounds` rounds are done, or when
//! every short category's survival stayed near zero or it is not asked; the cost guards hold for
//! all rounds together. Every decision is derived from cached replies and `state/loop.json`, so a resumed
//! run takes the same rounds and ends in the same bytes.

use super::assemble::{self, Selection};
use super::author::{self, Plan, TemplateExamples};
use super::rounds::{Evaluation, Round, Rounds, Slice, Standing};
use super::{audit, repair, Ctx, StageEnd, REJECTS};
use crate::config::Config;
use crate::error::Result;
use crate::stages::assemble::AssembleOptions;
use crate::stages::item::{excerpt, Category, Reject};
use crate::stages::templates::Templates;
use crate::stages::yields::{RoundSurvival, Survival};
use std::collections::BTreeMap;

/// A round whose items survive at less than this share counts as near zero; a category with
/// two such rounds in a row gets no more rounds.
pub const NEAR_ZERO: f64 = 0.05;

/// How many items the prior rate (a category's `prior_survival`, else the whole run's survival
/// rate) counts as in a category's estimate: a category that asked for few items leans on the
/// prior, one that asked for many on its own rate.
pub const PRIOR_WEIGHT_ITEMS: f64 = 10.0;

/// The lowest rate a top-up is sized by, so that a poor round cannot ask for an unbounded one.
pub const RATE_FLOOR: f64 = 0.1;

/// The job name of `stage` in loop round `round`: round 0 keeps the stage's own name.
fn job(stage: &str, round: usize) -> String {
    match round {
        0 => stage.to_string(),
        _ => format!("{stage}-r{round}"),
    }
}

/// Runs the loop, then writes the release (or refuses a short one unless `allow_short`).
pub async fn run(
    ctx: &mut Ctx<'_>,
    templates: &Templates,
    args: &AssembleOptions,
) -> Result<StageEnd> {
    let config = ctx.config;
    let keep_flagged = args.keep_flagged || config.assemble.keep_flagged;
    let examples = TemplateExamples::of(templates, config.assemble.near_dup_threshold)?;
    let mut rounds = Rounds::load(ctx.out_dir())?;
    if rounds.rounds.is_empty() {
        author::check_round0(config, templates)?;
        rounds.rounds.push(Round {
            round: 0,
            plan: author::round0_plan(config),
            evaluation: None,
        });
        rounds.save(ctx.out_dir())?;
    }
    let mut round = 0;
    loop {
        let plans: Vec<Plan> = rounds.rounds.iter().map(|r| r.plan.clone()).collect();
        let plan_refs: Vec<&Plan> = plans.iter().collect();
        if author::run_round(ctx, templates, &examples, &plan_refs, round)
            .await?
            .is_none()
        {
            return Ok(StageEnd::Waiting);
        }
        if repair::run(ctx, templates, &job("repair", round)).await? == StageEnd::Waiting {
            return Ok(StageEnd::Waiting);
        }
        if audit::run(ctx, &job("audit", round)).await? == StageEnd::Waiting {
            return Ok(StageEnd::Waiting);
        }
        let selection = assemble::select(ctx, &args.excludes, keep_flagged)?;
        let costs = match config.author.max_topup_requests {
            Some(_) => tokens_per_request(ctx, templates, &plan_refs)?,
            None => BTreeMap::new(),
        };
        let next = next_round(config, &plan_refs, round, &selection, &costs);
        rounds.rounds[round].evaluation = Some(next.evaluation.clone());
        ctx.printer
            .out(render_round(config, round, &selection, &next));
        for category in &next.stopped {
            ctx.printer.out(stop_hint(ctx, &selection, *category)?);
        }
        let stop = match next.decision {
            Decision::Full => None,
            Decision::Stop(why) => Some(why),
            Decision::Plan(_) if round + 1 >= config.author.max_rounds as usize => Some(format!(
                "The loop stopped after author.max_rounds = {} round(s).",
                config.author.max_rounds
            )),
            Decision::Plan(plan) => {
                if rounds.rounds.len() == round + 1 {
                    rounds.rounds.push(Round {
                        round: round as u32 + 1,
                        plan,
                        evaluation: None,
                    });
                    let plans: Vec<&Plan> = rounds.rounds.iter().map(|r| &r.plan).collect();
                    author::check_round(ctx, templates, &plans, round + 1)?;
                }
                rounds.save(ctx.out_dir())?;
                round += 1;
                continue;
            }
        };
        rounds.save(ctx.out_dir())?;
        let stopped = stop.unwrap_or_default();
        assemble::write(ctx, &args.excludes, selection, &stopped)?;
        return Ok(StageEnd::Done);
    }
}

/// What the loop does after a round.
enum Decision {
    /// Every category can fill its share of the release.
    Full,
    /// No category that is short can get another round; why.
    Stop(String),
    /// The next round's requests.
    Plan(Plan),
}

/// A round's evaluation and what follows from it.
struct Next {
    evaluation: Evaluation,
    /// Categories that stop here for near-zero survival.
    stopped: Vec<Category>,
    decision: Decision,
}

/// Each category's survival over the rounds, from the selection's counts.
fn by_category(survival: &[RoundSurvival]) -> BTreeMap<Category, Vec<(u32, Survival)>> {
    let mut by_category: BTreeMap<Category, Vec<(u32, Survival)>> = BTreeMap::new();
    for round in survival {
        for (category, s) in &round.categories {
            by_category
                .entry(*category)
                .or_default()
                .push((round.round, *s));
        }
    }
    by_category
}

/// The rate of all rounds of all categories, or `None` before anything was asked.
fn run_rate(survival: &[RoundSurvival]) -> Option<f64> {
    let mut total = Survival::default();
    for round in survival {
        for s in round.categories.values() {
            total.add(s);
        }
    }
    total.rate()
}

/// Whether a category's last two rounds (in which it asked for items) both survived near zero.
fn near_zero_twice(history: &[(u32, Survival)]) -> bool {
    let rates: Vec<f64> = history.iter().filter_map(|(_, s)| s.rate()).collect();
    rates.len() >= 2 && rates[rates.len() - 2..].iter().all(|r| *r < NEAR_ZERO)
}

/// A category's survival rate: its own survivors plus a prior rate counted as
/// [`PRIOR_WEIGHT_ITEMS`] items, over the items it asked for plus as many. The prior is the
/// category's `prior_survival` where the config states one (its measured rate with this author
/// in earlier runs), else the run's rate. Two survivors of five asked is a weak measurement, and
/// a run rate pulled down by other categories' failures says little about this one; the blend
/// trusts each as far as its items allow.
fn estimated_rate(own: &Survival, prior: f64) -> f64 {
    (own.after_dedup as f64 + PRIOR_WEIGHT_ITEMS * prior) / (own.asked as f64 + PRIOR_WEIGHT_ITEMS)
}

/// The items to ask for so that `missing` more survive at `rate`, with the configured margin.
pub fn items_to_ask(missing: usize, rate: f64, margin: f64) -> usize {
    (missing as f64 / rate.max(RATE_FLOOR) * (1.0 + margin)).ceil() as usize
}

/// Evaluates round `round` and plans the next one for the categories still short; `costs` holds
/// the tokens a request of each category is expected to generate (only a top-up limit reads
/// them).
fn next_round(
    config: &Config,
    plans: &[&Plan],
    round: usize,
    selection: &Selection,
    costs: &BTreeMap<Category, f64>,
) -> Next {
    let needed = config.release.per_category;
    let survivors = selection.survivors();
    let history = by_category(selection.survival());
    let run_rate = run_rate(selection.survival()).unwrap_or(config.author.prior_survival);
    let mut categories = BTreeMap::new();
    let mut stopped = Vec::new();
    let mut plan = Plan::new();
    for category in Category::ALL {
        let have = survivors.get(&category).copied().unwrap_or(0);
        let own = history.get(&category).map_or(&[][..], Vec::as_slice);
        let short = have < needed;
        let stops = short && near_zero_twice(own);
        categories.insert(
            category,
            Standing {
                survivors: have,
                needed,
                stopped: stops,
            },
        );
        if !short {
            continue;
        }
        if stops {
            stopped.push(category);
            continue;
        }
        if !config.category(category).is_asked() {
            continue;
        }
        let mut total = Survival::default();
        for (_, s) in own {
            total.add(s);
        }
        let prior = config.category(category).prior_survival.unwrap_or(run_rate);
        let rate = estimated_rate(&total, prior);
        let items = items_to_ask(needed - have, rate, config.author.topup_margin);
        let ipr = config.category(category).items_per_request;
        plan.insert(
            category,
            Slice {
                first: author::next_first(&plans[..=round], category),
                requests: items.div_ceil(ipr),
            },
        );
    }
    let sent = topup_requests(&plans[1..=round]);
    let (plan, limit_spent) = within_topup_limit(config, plan, sent, costs);
    let decision = if categories.values().all(|s| s.survivors >= s.needed) {
        Decision::Full
    } else if limit_spent {
        Decision::Stop(format!(
            "The loop stopped: its top-up rounds sent the {} authoring request(s) author.max_topup_requests allows.",
            config.author.max_topup_requests.unwrap_or_default()
        ))
    } else if plan.is_empty() {
        Decision::Stop(no_round_left(config, &categories, &stopped))
    } else {
        Decision::Plan(plan)
    };
    Next {
        evaluation: Evaluation { categories },
        stopped,
        decision,
    }
}

/// Why no short category of `categories` gets another round: those in `stopped` survived near
/// zero twice, the others are not asked (`prior_survival` 0).
fn no_round_left(
    config: &Config,
    categories: &BTreeMap<Category, Standing>,
    stopped: &[Category],
) -> String {
    let names = |categories: &[Category]| {
        categories
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let not_asked: Vec<Category> = categories
        .iter()
        .filter(|(c, s)| s.survivors < s.needed && !config.category(**c).is_asked())
        .map(|(c, _)| *c)
        .collect();
    let mut why = Vec::new();
    if !stopped.is_empty() {
        why.push(format!(
            "survival stayed below {:.0}% for two rounds ({}); more rounds would be paid for nothing",
            NEAR_ZERO * 100.0,
            names(stopped)
        ));
    }
    if !not_asked.is_empty() {
        why.push(format!(
            "not asked, at prior_survival 0 ({})",
            names(&not_asked)
        ));
    }
    format!(
        "The loop stopped: no short category can get another round: {}.",
        why.join("; ")
    )
}

/// The authoring requests of `plans`.
fn topup_requests(plans: &[&Plan]) -> usize {
    plans
        .iter()
        .flat_map(|plan| plan.values())
        .map(|slice| slice.requests)
        .sum()
}

/// `plan` within what `author.max_topup_requests` leaves after `sent` top-up requests, and
/// whether the limit, not the need, left it empty. `costs` holds what a request of each
/// category is expected to generate.
fn within_topup_limit(
    config: &Config,
    plan: Plan,
    sent: usize,
    costs: &BTreeMap<Category, f64>,
) -> (Plan, bool) {
    let Some(max) = config.author.max_topup_requests else {
        return (plan, false);
    };
    let wanted = !plan.is_empty();
    let cut = cut_to(plan, max.saturating_sub(sent), costs);
    let spent = wanted && cut.is_empty();
    (cut, spent)
}

/// `plan` cut to `left` requests, shared one request at a time: the next goes to the category
/// whose requests so far are expected to generate the fewest tokens (`costs` holds a request's
/// tokens per category; on a tie, the one given fewer requests, then the categories' order),
/// until none is left or every category has what the top-up rule asks for. Each short category
/// gets an equal share of the generation, not of the requests, so a category whose replies are
/// short is asked proportionally more often, and none is starved for another's sake: a release
/// that draws on more categories beats a deeper one in fewer.
fn cut_to(plan: Plan, mut left: usize, costs: &BTreeMap<Category, f64>) -> Plan {
    if topup_requests(&[&plan]) <= left {
        return plan;
    }
    let cost = |c: &Category| costs.get(c).copied().unwrap_or(0.0);
    let mut given: BTreeMap<Category, usize> = plan.keys().map(|c| (*c, 0)).collect();
    while left > 0 {
        let next = given
            .iter()
            .filter(|(c, n)| plan.get(c).is_some_and(|slice| **n < slice.requests))
            .min_by(|(a, m), (b, n)| {
                (**m as f64 * cost(a))
                    .total_cmp(&(**n as f64 * cost(b)))
                    .then(m.cmp(n))
            })
            .map(|(c, _)| *c);
        let Some(category) = next else { break };
        *given.entry(category).or_default() += 1;
        left -= 1;
    }
    plan.into_iter()
        .filter_map(|(category, slice)| {
            let requests = given.get(&category).copied().unwrap_or(0);
            (requests > 0).then_some((category, Slice { requests, ..slice }))
        })
        .collect()
}

/// Per category, the tokens one authoring request of `plans` generated on average: the
/// expected cost of asking it again. A category with no reply yet counts at its `max_tokens`.
fn tokens_per_request(
    ctx: &Ctx<'_>,
    templates: &Templates,
    plans: &[&Plan],
) -> Result<BTreeMap<Category, f64>> {
    let requests = author::requests_of(ctx.config, templates, plans);
    let mut costs = BTreeMap::new();
    for category in Category::ALL {
        let of: Vec<_> = requests
            .iter()
            .filter(|r| r.category == category)
            .map(|r| &r.request)
            .collect();
        let used = ctx.runner.usage(of)?.total;
        let cost = match used.requests {
            0 => f64::from(ctx.config.author_max_tokens(category)),
            n => used.completion_tokens as f64 / n as f64,
        };
        costs.insert(category, cost);
    }
    Ok(costs)
}

/// The round's table: per category, what it asked, what survived, where it stands, and what
/// the next round asks.
fn render_round(config: &Config, round: usize, selection: &Selection, next: &Next) -> String {
    let this = selection
        .survival()
        .iter()
        .find(|r| r.round as usize == round);
    let mut lines = vec![
        format!(
            "run: loop round {round} of at most {} — what the release can draw on (needs {} per category):",
            config.author.max_rounds, config.release.per_category
        ),
        format!(
            "  {:<20} {:>6} {:>6} {:>8} {:>9} {:>10}  next",
            "category", "asked", "gate", "audit ok", "survived", "survivors"
        ),
    ];
    for (category, standing) in &next.evaluation.categories {
        let s = this
            .and_then(|r| r.categories.get(category))
            .copied()
            .unwrap_or_default();
        let then = match &next.decision {
            _ if standing.survivors >= standing.needed => "full".to_string(),
            _ if standing.stopped => "stopped (survival near zero)".to_string(),
            _ if !config.category(*category).is_asked() => {
                "not asked (prior_survival 0)".to_string()
            }
            Decision::Plan(plan) => plan.get(category).map_or_else(
                || "none (author.max_topup_requests)".to_string(),
                |slice| format!("{} request(s)", slice.requests),
            ),
            Decision::Full | Decision::Stop(_) => "short".to_string(),
        };
        lines.push(format!(
            "  {:<20} {:>6} {:>6} {:>8} {:>9} {:>6}/{:<3}  {then}",
            category.name(),
            s.asked,
            s.gate,
            s.audit_passed,
            s.after_dedup,
            standing.survivors,
            standing.needed
        ));
    }
    lines.join("\n")
}

/// The hint of a category that stops: the reason most of its items were lost, with an example.
fn stop_hint(ctx: &Ctx<'_>, selection: &Selection, category: Category) -> Result<String> {
    let Some((reason, n)) = selection.top_loss(category) else {
        return Ok(format!(
            "run: {category} stops: its survival stayed below {:.0}% for two rounds, and no item was rejected: the replies held too few items",
            NEAR_ZERO * 100.0
        ));
    };
    let example = match selection.example_drop(category, &reason)? {
        Some(reject) => Some(reject),
        None => first_author_reject(ctx, category, &reason)?,
    };
    let example = example.map_or_else(String::new, |r| {
        format!(
            ": {}\n    e.g. {}",
            r.detail,
            excerpt(&r.excerpt, EXAMPLE_CHARS)
        )
    });
    Ok(format!(
        "run: {category} stops: its survival stayed below {:.0}% for two rounds; most of its items were lost as {reason} ({n}){example}\n    \
         fix prompts/{category}.md (or the rule's limit), then raise author.max_rounds and re-run `saseval-gen run`",
        NEAR_ZERO * 100.0
    ))
}

/// Characters of an example shown in a hint.
const EXAMPLE_CHARS: usize = 160;

/// The first author reject of `category` with `reason` in `rejects.jsonl`.
fn first_author_reject(ctx: &Ctx<'_>, category: Category, reason: &str) -> Result<Option<Reject>> {
    let mut found = None;
    let path = ctx.out(REJECTS);
    if path.exists() {
        crate::util::jsonl::for_each(&path, |r: Reject| {
            if found.is_none()
                && r.stage == "author"
                && r.category == category
                && r.reason == reason
            {
                found = Some(r);
            }
            Ok::<_, crate::error::Error>(())
        })?;
    }
    Ok(found)
}

/// One predicted round: requests and items per category, and their worst-case cost by stage.
struct Predicted {
    requests: usize,
    items: usize,
    author_usd: f64,
    checks_usd: f64,
}

/// `author --dry-run`'s prediction of the loop: the rounds it takes if every category's items
/// survive at its `prior_survival` (else `author.prior_survival`), and their worst-case cost
/// (every reply at max_tokens, every item passing the gate into repair and audit).
pub fn predict(
    config: &Config,
    templates: &Templates,
    repair: &super::plan::Plan,
    audit: Option<&super::plan::Plan>,
) -> String {
    let p = config.author.prior_survival;
    let prior = |c: Category| config.category(c).prior_survival.unwrap_or(p);
    let costs: BTreeMap<Category, f64> = Category::ALL
        .into_iter()
        .map(|c| (c, f64::from(config.author_max_tokens(c))))
        .collect();
    let needed = config.release.per_category;
    let round0 = author::round0_plan(config);
    let mut survivors: BTreeMap<Category, f64> = BTreeMap::new();
    let mut rounds: Vec<Predicted> = Vec::new();
    let mut asks: Plan = round0;
    let mut topups_spent = false;
    let request_usd: BTreeMap<Category, f64> = Category::ALL
        .into_iter()
        .map(|c| (c, author::request_cost(config, templates, c).usd))
        .collect();
    let item_usd = |c: Category| {
        repair.per_item_usd(config, c) + audit.map_or(0.0, |a| a.per_item_usd(config, c))
    };
    while !asks.is_empty() && rounds.len() < config.author.max_rounds as usize {
        let mut round = Predicted {
            requests: 0,
            items: 0,
            author_usd: 0.0,
            checks_usd: 0.0,
        };
        for (category, slice) in &asks {
            let requests = slice.requests;
            let items = requests * config.category(*category).items_per_request;
            round.requests += requests;
            round.items += items;
            round.author_usd += requests as f64 * request_usd[category];
            round.checks_usd += items as f64 * item_usd(*category);
            *survivors.entry(*category).or_default() += items as f64 * prior(*category);
        }
        rounds.push(round);
        let wanted = Category::ALL
            .into_iter()
            .filter(|c| config.category(*c).is_asked())
            .filter_map(|c| {
                let have = survivors.get(&c).copied().unwrap_or(0.0).floor() as usize;
                let missing = needed.saturating_sub(have);
                (missing > 0).then(|| {
                    let items = items_to_ask(missing, prior(c), config.author.topup_margin);
                    let requests = items.div_ceil(config.category(c).items_per_request);
                    (c, Slice { first: 0, requests })
                })
            })
            .collect();
        let sent = rounds[1..].iter().map(|r| r.requests).sum();
        (asks, topups_spent) = within_topup_limit(config, wanted, sent, &costs);
    }
    let own_priors = Category::ALL
        .into_iter()
        .filter_map(|c| {
            config
                .category(c)
                .prior_survival
                .map(|own| format!("{c} {:.0}%", own * 100.0))
        })
        .collect::<Vec<_>>();
    let others = format!("{:.0}% (author.prior_survival)", p * 100.0);
    let survival = match own_priors.len() {
        0 => others,
        n if n == Category::ALL.len() => {
            format!("each category's prior_survival ({})", own_priors.join(", "))
        }
        _ => format!(
            "each category's prior_survival ({}; the others {others})",
            own_priors.join(", ")
        ),
    };
    let mut lines = vec![format!(
        "run (the closed loop) predicted at a survival of {survival} from what is asked to what the release can draw on:"
    )];
    let (mut author_usd, mut checks_usd) = (0.0, 0.0);
    for (k, round) in rounds.iter().enumerate() {
        author_usd += round.author_usd;
        checks_usd += round.checks_usd;
        lines.push(format!(
            "  round {k}: {} authoring request(s), {} item(s) asked; worst case ${:.4} authoring, ${:.4} repair + audit",
            round.requests, round.items, round.author_usd, round.checks_usd
        ));
    }
    let full = asks.is_empty() && !topups_spent;
    lines.push(if topups_spent {
        format!(
            "  predicted: still short once the top-up rounds sent the {} request(s) author.max_topup_requests allows; worst case ${author_usd:.4} authoring, ${checks_usd:.4} repair + audit",
            config.author.max_topup_requests.unwrap_or_default()
        )
    } else if full {
        format!(
            "  predicted: the release fills in {} round(s); worst case ${author_usd:.4} authoring (limit author.max_cost_usd = {:.2}), ${checks_usd:.4} repair + audit",
            rounds.len(),
            config.author.max_cost_usd
        )
    } else {
        format!(
            "  predicted: still short after author.max_rounds = {} round(s) at this survival; worst case ${author_usd:.4} authoring, ${checks_usd:.4} repair + audit",
            config.author.max_rounds
        )
    });
    lines.push(format!(
        "  a top-up asks for the missing items ÷ the measured survival × {:.2} (author.topup_margin); before each round, what a stage already spent plus the round's worst case must fit its max_cost_usd",
        1.0 + config.author.topup_margin
    ));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn survival(asked: usize, after_dedup: usize) -> Survival {
        Survival {
            asked,
            after_dedup,
            ..Survival::default()
        }
    }

    #[test]
    fn a_top_up_asks_for_the_missing_items_over_the_rate_with_the_margin() {
        assert_eq!(items_to_ask(5, 0.5, 0.25), 13, "5 / 0.5 × 1.25 = 12.5");
        assert_eq!(items_to_ask(4, 1.0, 0.0), 4);
        assert_eq!(
            items_to_ask(5, 0.01, 0.25),
            63,
            "a rate under the floor counts as 10%"
        );
    }

    #[test]
    fn a_top_up_over_its_limit_shares_the_generation_across_the_short_categories() {
        let slice = |first: usize, requests: usize| Slice { first, requests };
        let plan: Plan = [
            (Category::SimpleFactual, slice(5, 4)),
            (Category::Reasoning, slice(7, 3)),
            (Category::MemoryRecall, slice(9, 6)),
            (Category::MemoryUpdate, slice(2, 2)),
        ]
        .into();
        let tokens: BTreeMap<Category, f64> = [
            (Category::SimpleFactual, 50.0),
            (Category::Reasoning, 200.0),
            (Category::MemoryRecall, 100.0),
            (Category::MemoryUpdate, 100.0),
        ]
        .into();
        let cut = cut_to(plan.clone(), 9, &tokens);
        let expected: Plan = [
            (Category::SimpleFactual, slice(5, 4)),
            (Category::Reasoning, slice(7, 1)),
            (Category::MemoryRecall, slice(9, 2)),
            (Category::MemoryUpdate, slice(2, 2)),
        ]
        .into();
        assert_eq!(
            cut, expected,
            "each category is expected to generate about 200 tokens: the short replies of simple_factual buy 4 requests, reasoning's long ones 1"
        );
        assert_eq!(
            cut_to(plan.clone(), 4, &tokens).len(),
            4,
            "a limit as small as the categories are many still asks each of them once"
        );
        let unreported: BTreeMap<Category, f64> =
            plan.keys().map(|category| (*category, 0.0)).collect();
        let even = cut_to(plan.clone(), 8, &unreported);
        assert_eq!(
            even.values()
                .map(|slice| slice.requests)
                .collect::<Vec<_>>(),
            [2, 2, 2, 2],
            "a backend that reports no tokens: the requests are shared evenly"
        );
        assert_eq!(cut_to(plan.clone(), 100, &tokens), plan, "within the limit");
        assert!(cut_to(plan, 0, &tokens).is_empty(), "nothing left");
    }

    #[test]
    fn a_category_that_asked_few_items_blends_its_own_rate_with_the_runs() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(
            close(estimated_rate(&survival(5, 2), 0.1), 0.2),
            "2 of 5 beside a 10% run: (2 + 1) / 15, not the run's 10%"
        );
        assert!(
            close(estimated_rate(&survival(0, 0), 0.4), 0.4),
            "nothing asked yet: the run's rate"
        );
        assert!(
            close(estimated_rate(&survival(190, 95), 0.1), 0.48),
            "many items asked: near its own 50%"
        );
        assert_eq!(
            items_to_ask(3, estimated_rate(&survival(5, 2), 0.1), 0.25),
            19,
            "3 missing at 20% with the margin, not the 38 the run's rate asked for"
        );
    }

    #[test]
    fn only_two_near_zero_rounds_in_a_row_stop_a_category() {
        let zero = (0, survival(10, 0));
        let some = (1, survival(10, 3));
        assert!(!near_zero_twice(&[zero]));
        assert!(near_zero_twice(&[some, zero, zero]));
        assert!(!near_zero_twice(&[zero, some]));
        assert!(
            !near_zero_twice(&[zero, (1, survival(0, 0))]),
            "a round that asked nothing has no rate"
        );
    }

    /// `author --dry-run`'s prediction for the shipped config `file` with `sets` applied.
    fn dry_run(file: &str, sets: &[&str]) -> String {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let templates = Templates::load(&root.join("prompts")).expect("templates");
        let sets: Vec<String> = sets.iter().map(|set| set.to_string()).collect();
        let config = Config::load(&root.join(file), &sets).expect("config");
        let repair = super::super::plan::repair(&config, templates.verify.text());
        predict(&config, &templates, &repair, None)
    }

    #[test]
    fn the_dry_run_predicts_more_rounds_at_a_lower_prior_survival() {
        let predict_at = |prior: f64| {
            dry_run(
                "pipeline.toml",
                &[&format!("author.prior_survival={prior}")],
            )
        };
        let likely = predict_at(0.9);
        assert!(
            likely.contains("the release fills in 1 round(s)"),
            "{likely}"
        );
        let poor = predict_at(0.5);
        assert!(poor.contains("round 1:"), "{poor}");
        let hopeless = predict_at(0.05);
        assert!(
            hopeless.contains("still short after author.max_rounds = 3 round(s)"),
            "{hopeless}"
        );
    }

    #[test]
    fn the_dry_run_predicts_a_category_at_its_own_prior_survival() {
        let predicted = dry_run(
            "pipeline.toml",
            &[
                "author.prior_survival=0.9",
                "categories.conversational.prior_survival=0.3",
            ],
        );
        assert!(
            predicted.contains("conversational 30%; the others 90% (author.prior_survival)"),
            "{predicted}"
        );
        // Round 0 asks 33 requests of 4 items; 132 at 30% leave 61 missing: 61 ÷ 0.3 × 1.25 =
        // 255 items, 64 requests. Every other category fills in round 0.
        assert!(
            predicted.contains("round 1: 64 authoring request(s)"),
            "{predicted}"
        );
        let local = dry_run("pipeline.local.toml", &[]);
        assert!(
            local.contains("each category's prior_survival (simple_factual 2%,")
                && !local.contains("the others"),
            "every category of the local profile has its own: {local}"
        );
    }

    #[test]
    fn the_dry_run_predicts_top_ups_cut_to_their_request_limit() {
        let predicted = dry_run(
            "pipeline.toml",
            &["author.prior_survival=0.5", "author.max_topup_requests=7"],
        );
        assert!(
            predicted.contains("round 1: 7 authoring request(s)"),
            "{predicted}"
        );
        assert!(!predicted.contains("round 2:"), "{predicted}");
        assert!(
            predicted.contains(
                "still short once the top-up rounds sent the 7 request(s) author.max_topup_requests allows"
            ),
            "{predicted}"
        );
    }
}
