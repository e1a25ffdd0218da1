//! The fake author's reasoning and bloated_reasoning items: small formulas the verifier can
//! recompute from the prompt

use super::*;

pub(super) const EVENTS: &[&str] = &[
    "the end-of-month billing run",
    "the holiday sales weekend",
    "the quarter-end close",
    "the Monday morning login surge",
    "the annual open-enrolment window",
    "a product launch",
    "the Black Friday promotion",
    "the year-end audit export",
];

pub(super) const UNITS: &[(&str, &str)] = &[
    ("pod", "pods"),
    ("instance", "instances"),
    ("worker node", "worker nodes"),
    ("container", "containers"),
    ("VM", "VMs"),
    ("replica", "replicas"),
];

pub(super) const CAPACITY_TEMPLATES: &[&str] = &[
    "The <system> at <org> peaks at {R} requests per second during {event}. Each {unit} sustains {C} requests per second, but the <team> only runs them at {U}% utilisation to keep headroom, and it always keeps {S} extra {units} on standby for failover. How many {units} should be provisioned in total?",
    "Load testing shows that a single {unit} of <org>'s <system> can serve {C} requests per second. Capacity policy caps every {unit} at {U}% of that figure. Forecasts put the peak during {event} at {R} requests per second, and the runbook adds {S} {units} of redundancy on top of whatever the peak needs. What is the total number of {units} required?",
    "We need to size the <system> at <org> for {event}. The forecast peak is {R} requests per second, and one {unit} handles {C} requests per second at full load. The <team> targets {U}% utilisation and adds {S} {units} beyond the peak requirement for resilience. How many {units} does the deployment need?",
    "<first> from the <team> asks how many {units} to run for {event}. The <system> must absorb {R} requests per second at peak; each {unit} tops out at {C} requests per second, and nobody runs a single {unit} above {U}% load. Add {S} {units} for a zone failure. What total should <first> request?",
];

/// capacity, SLA downtime, payback, monthly cost.
pub(super) const REASONING_KINDS: usize = 4;

pub(super) fn template(ctx: &Ctx, templates: &[&'static str]) -> &'static str {
    templates[ctx.turn_within(REASONING_KINDS, templates.len())]
}

pub(super) struct CapacityProblem {
    pub(super) prompt: String,
    pub(super) value: f64,
    pub(super) spares: u64,
    pub(super) unit_plural: &'static str,
}

pub(super) fn capacity(pick: &mut Pick, ctx: &Ctx) -> CapacityProblem {
    let needed = pick.between(6, 48);
    let per_unit = 20 * pick.between(4, 40);
    let utilisation = 5 * pick.between(10, 17);
    let peak = needed * per_unit * utilisation / 100;
    let spares = pick.between(2, 4);
    let (unit, units) = pick.one(UNITS);
    let prompt = ctx
        .fill(template(ctx, CAPACITY_TEMPLATES))
        .replace("{R}", &grouped(peak))
        .replace("{C}", &grouped(per_unit))
        .replace("{U}", &utilisation.to_string())
        .replace("{S}", &spares.to_string())
        .replace("{event}", pick.one(EVENTS))
        .replace("{units}", units)
        .replace("{unit}", unit);
    CapacityProblem {
        prompt,
        value: (needed + spares) as f64,
        spares,
        unit_plural: units,
    }
}

pub(super) const SLA_TEMPLATES: &[&str] = &[
    "<org> promises customers {A}% monthly availability for the <system>. This billing period has {D} days, and incidents have already consumed {X} minutes of downtime. How many minutes of downtime remain in the error budget for the rest of the period?",
    "The <system> carries an availability SLA of {A}%, measured over a {D}-day month. The status page shows {X} minutes of outage so far this month. How many more minutes of downtime can occur before the SLA is breached?",
    "Error budget check for the <system>, owned by the <team>. Availability target in the contract: {A}%. Length of the current measurement window: {D} days. Downtime already recorded in this window: {X} minutes. How many minutes of downtime budget are left?",
    "After last week's incident, <first> wants to know how much slack is left. The <system>'s contract guarantees {A}% availability per calendar month, this month has {D} days, and the outages so far added up to {X} minutes. What is the remaining allowable downtime in minutes?",
];

/// Availability targets as (text, unavailability in hundredths of a percent).
pub(super) const AVAILABILITY: &[(&str, u64)] = &[
    ("99.5", 50),
    ("99.9", 10),
    ("99.95", 5),
    ("99.99", 1),
    ("99.8", 20),
];

pub(super) struct SlaProblem {
    pub(super) prompt: String,
    pub(super) remaining_thousandths: u64,
}

pub(super) fn sla(pick: &mut Pick, ctx: &Ctx) -> SlaProblem {
    let (availability, unavailable) = pick.one(AVAILABILITY);
    let days = pick.one(&[28_u64, 30, 31]);
    // Allowed downtime in thousandths of a minute: days × 1440 × unavailable / 10,000.
    let allowed = days * 144 * unavailable;
    let used_tenths = pick.between(allowed / 1000, allowed * 8 / 1000).max(1);
    let prompt = ctx
        .fill(template(ctx, SLA_TEMPLATES))
        .replace("{A}", availability)
        .replace("{D}", &days.to_string())
        .replace("{X}", &plain_number(used_tenths as f64 / 10.0));
    SlaProblem {
        prompt,
        remaining_thousandths: allowed - used_tenths * 100,
    }
}

pub(super) const PAYBACK_TEMPLATES: &[&str] = &[
    "<org> sells its <product> plan for ${P} per month. Gross margin on the plan is {M}%, and the blended customer acquisition cost is ${CAC}. How many months does it take to recover the acquisition cost from gross profit?",
    "Finance wants the CAC payback period for <org>'s <product> tier. Customer acquisition cost: ${CAC}. Subscription price: ${P} a month. Gross margin: {M}%. How many months until a new customer pays back its acquisition cost?",
    "A new <product> customer at <org> costs ${CAC} to win, counting sales and marketing, which is the full customer acquisition cost. Each customer pays ${P} monthly, and {M}% of that is gross profit after hosting and support. After how many months is the acquisition cost recovered?",
];

pub(super) struct PaybackProblem {
    pub(super) prompt: String,
    pub(super) months: u64,
}

pub(super) fn payback(pick: &mut Pick, ctx: &Ctx) -> PaybackProblem {
    let months = pick.between(5, 30);
    let price = 20 * pick.between(3, 25);
    let margin = 5 * pick.between(12, 17);
    let cac = months * price * margin / 100;
    let prompt = ctx
        .fill(template(ctx, PAYBACK_TEMPLATES))
        .replace("{P}", &grouped(price))
        .replace("{M}", &margin.to_string())
        .replace("{CAC}", &grouped(cac));
    PaybackProblem { prompt, months }
}

pub(super) const COST_TEMPLATES: &[&str] = &[
    "The <system> runs on {N} virtual machines that cost ${H} per hour each, billed for 730 hours a month. It also stores {S} GB of data at ${G} per GB-month. What is the total monthly bill for compute and storage, in dollars?",
    "<first> is budgeting the <system>. Compute: {N} nodes at ${H} per hour each, running all month (use 730 hours). Storage: {S} GB of block volumes at ${G} per GB per month. What is the monthly cost in dollars?",
    "For <org>'s <system>, estimate one month of spend. There are {N} instances priced at ${H} per hour, each running 730 hours, plus {S} GB of snapshots priced at ${G} per GB-month. What does the month cost in total?",
];

/// Hourly prices and per-GB prices in thousandths of a dollar.
pub(super) const HOURLY_MILLIS: &[u64] =
    &[96, 192, 384, 85, 170, 340, 680, 126, 252, 504, 500, 416];
pub(super) const GB_MILLIS: &[u64] = &[23, 45, 80, 100, 125, 90];

pub(super) struct CostProblem {
    pub(super) prompt: String,
    pub(super) cents: u64,
    pub(super) instances: u64,
    pub(super) hourly_millis: u64,
    pub(super) gigabytes: u64,
    pub(super) gb_millis: u64,
}

impl CostProblem {
    pub(super) fn cents_with_hours(&self, hours: u64) -> u64 {
        (self.instances * self.hourly_millis * hours + self.gigabytes * self.gb_millis) / 10
    }
}

pub(super) fn monthly_cost(pick: &mut Pick, ctx: &Ctx) -> CostProblem {
    let instances = pick.between(2, 40);
    let hourly_millis = pick.one(HOURLY_MILLIS);
    let gigabytes = 50 * pick.between(2, 160);
    let gb_millis = pick.one(GB_MILLIS);
    let prompt = ctx
        .fill(template(ctx, COST_TEMPLATES))
        .replace("{N}", &instances.to_string())
        .replace("{H}", &plain_number(hourly_millis as f64 / 1000.0))
        .replace("{S}", &grouped(gigabytes))
        .replace("{G}", &plain_number(gb_millis as f64 / 1000.0));
    let mut problem = CostProblem {
        prompt,
        cents: 0,
        instances,
        hourly_millis,
        gigabytes,
        gb_millis,
    };
    problem.cents = problem.cents_with_hours(730);
    problem
}

pub(super) struct GrowthProblem {
    pub(super) prompt: String,
    pub(super) percent: u64,
}

/// Ill-posed on purpose: a percentage question whose answer is a large integer.
pub(super) fn growth(pick: &mut Pick, ctx: &Ctx) -> GrowthProblem {
    let before = pick.between(2, 9);
    let multiple = pick.between(20, 80);
    let after = before * (multiple + 1);
    let prompt = ctx.fill(
        "Weekly <entity> exports from the <system> at <org> grew from {A} to {B} after the <team> shipped bulk export. What was the percentage increase?",
    )
    .replace("{A}", &before.to_string())
    .replace("{B}", &after.to_string());
    GrowthProblem {
        prompt,
        percent: multiple * 100,
    }
}

/// A reasoning problem as an item: the core prompt and its golds.
pub(super) fn reasoning_core(pick: &mut Pick, ctx: &Ctx) -> Item {
    match ctx.turn(REASONING_KINDS) {
        0 => {
            let problem = capacity(pick, ctx);
            let answer = plain_number(problem.value);
            Item::plain(
                problem.prompt,
                vec![answer.clone(), format!("{answer} {}", problem.unit_plural)],
            )
        }
        1 => {
            let problem = sla(pick, ctx);
            let answer = plain_number(problem.remaining_thousandths as f64 / 1000.0);
            Item::plain(
                problem.prompt,
                vec![answer.clone(), format!("{answer} minutes")],
            )
        }
        2 => {
            let problem = payback(pick, ctx);
            Item::plain(
                problem.prompt,
                vec![
                    problem.months.to_string(),
                    format!("{} months", problem.months),
                ],
            )
        }
        _ => {
            let problem = monthly_cost(pick, ctx);
            Item::plain(problem.prompt, money_golds(problem.cents))
        }
    }
}

/// Openers that make two problems of one template read differently. Digit-free.
pub(super) const REASONING_LEADS: &[&str] = &[
    "",
    "<first> needs this figure for the next budget review.",
    "Finance asked the <team> to double-check the following numbers.",
    "Context: <org>, <system>.",
    "A quick sanity check before the business review with leadership.",
    "We are preparing the operations section of the <system> design review.",
    "Please work this out for the <org> operations report.",
    "From the <team>'s weekly metrics review:",
    "The numbers below come from the latest dashboard export.",
    "Our auditors asked for this calculation to be documented.",
    "Before the steering committee meets, <first2> wants to confirm one figure.",
    "This question came from the account team at <org>.",
];

/// Closing requests, digit-free and free of the verifier's marker phrases.
pub(super) const REASONING_ASKS: &[&str] = &[
    "",
    "Please show the working so that <first> can check it.",
    "<first2> will use the result in the <org> budget deck.",
    "Give the final figure on its own line for the <team>.",
    "The <team> needs the number before the review with leadership.",
    "An exact figure is needed, not an estimate.",
    "Explain each step briefly; <name3> will review the logic.",
];

pub(super) fn reasoning(pick: &mut Pick, ctx: &Ctx) -> Item {
    let lead = ctx.fill(pick.one(REASONING_LEADS));
    let core = reasoning_core(pick, ctx);
    let ask = ctx.fill(pick.one(REASONING_ASKS));
    let prompt = [lead.as_str(), core.prompt.as_str(), ask.as_str()]
        .iter()
        .filter(|part| !part.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    Item::plain(prompt, core.golds)
}

pub(super) fn bloated_reasoning(pick: &mut Pick, ctx: &Ctx) -> Item {
    let core = reasoning_core(pick, ctx);
    Item::plain(corporate_email(pick, ctx, &core.prompt, 280), core.golds)
}

// ---------------------------------------------------------------------------------------------
// The verifier's solver: recognise the kind by its marker phrase, find each quantity by the
// unit written after it, recompute.
// ---------------------------------------------------------------------------------------------

/// A number in a prompt, whether `$` precedes it or `%` follows it, and the lower-cased text
/// right after it.
pub(super) struct Quantity {
    pub(super) value: f64,
    pub(super) dollars: bool,
    pub(super) percent: bool,
    /// The lower-cased text right before and right after the number.
    pub(super) before: String,
    pub(super) after: String,
}

pub(super) fn quantities(prompt: &str) -> Vec<Quantity> {
    let chars: Vec<char> = prompt.chars().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let starts_number = chars[at].is_ascii_digit()
            && (at == 0 || !(chars[at - 1].is_ascii_alphanumeric() || chars[at - 1] == '.'));
        if !starts_number {
            at += 1;
            continue;
        }
        let start = at;
        while at < chars.len()
            && (chars[at].is_ascii_digit()
                || ((chars[at] == ',' || chars[at] == '.')
                    && chars.get(at + 1).is_some_and(char::is_ascii_digit)))
        {
            at += 1;
        }
        let raw: String = chars[start..at].iter().filter(|c| **c != ',').collect();
        let after: String = chars[at..]
            .iter()
            .take(24)
            .collect::<String>()
            .to_lowercase();
        let before: String = chars[start.saturating_sub(12)..start]
            .iter()
            .collect::<String>()
            .to_lowercase();
        found.push(Quantity {
            value: raw.parse().unwrap_or(f64::NAN),
            dollars: before.ends_with('$'),
            percent: after.starts_with('%'),
            before,
            after,
        });
    }
    found
}

pub(super) enum AnswerUnit {
    Count,
    Minutes,
    Months,
    Dollars,
}

pub(super) struct Solution {
    pub(super) steps: Vec<String>,
    pub(super) expr: String,
    pub(super) value: f64,
    pub(super) unit: AnswerUnit,
}

impl Solution {
    pub(super) fn answer(&self, value: f64) -> String {
        match self.unit {
            AnswerUnit::Count | AnswerUnit::Dollars => plain_number(value),
            AnswerUnit::Minutes => format!("{} minutes", plain_number(value)),
            AnswerUnit::Months => format!("{} months", plain_number(value)),
        }
    }
}

pub(super) fn solve(prompt: &str) -> Option<Solution> {
    let lower = prompt.to_lowercase();
    let found = quantities(prompt);
    let take = |test: &dyn Fn(&Quantity) -> bool| found.iter().find(|q| test(q)).map(|q| q.value);
    if lower.contains("percentage increase") {
        let before = take(&|q| q.before.ends_with("from "))?;
        let after = take(&|q| q.before.ends_with(" to "))?;
        let value = (after - before) / before * 100.0;
        return Some(Solution {
            steps: vec![
                format!(
                    "The increase is {} - {} = {}.",
                    plain_number(after),
                    plain_number(before),
                    plain_number(after - before)
                ),
                format!(
                    "Relative to the starting value: {} / {} × 100 = {}%.",
                    plain_number(after - before),
                    plain_number(before),
                    plain_number(value)
                ),
            ],
            expr: format!(
                "({} - {}) / {} * 100",
                plain_number(after),
                plain_number(before),
                plain_number(before)
            ),
            value,
            unit: AnswerUnit::Count,
        });
    }
    if lower.contains("requests per second") {
        let rates: Vec<f64> = found
            .iter()
            .filter(|q| q.after.starts_with(" requests per second"))
            .map(|q| q.value)
            .collect();
        let peak = rates.iter().copied().fold(f64::MIN, f64::max);
        let per_unit = rates.iter().copied().fold(f64::MAX, f64::min);
        let utilisation = take(&|q| q.percent)?;
        let spares = take(&|q| {
            ["extra", "spare", "additional"]
                .iter()
                .chain(UNITS.iter().map(|(_, units)| units))
                .any(|noun| q.after.starts_with(&format!(" {}", noun.to_lowercase())))
        })?;
        let usable = per_unit * utilisation / 100.0;
        let for_peak = peak / usable;
        return Some(Solution {
            steps: vec![
                format!(
                    "Usable capacity per unit: {} × {}% = {} requests per second.",
                    plain_number(per_unit),
                    plain_number(utilisation),
                    plain_number(usable)
                ),
                format!(
                    "Units for the peak: {} / {} = {}.",
                    plain_number(peak),
                    plain_number(usable),
                    plain_number(for_peak)
                ),
                format!(
                    "Adding {} for redundancy gives {}.",
                    plain_number(spares),
                    plain_number(for_peak + spares)
                ),
            ],
            expr: format!(
                "{} / ({} * {}) + {}",
                plain_number(peak),
                plain_number(per_unit),
                plain_number(utilisation / 100.0),
                plain_number(spares)
            ),
            value: for_peak + spares,
            unit: AnswerUnit::Count,
        });
    }
    if lower.contains("availability") {
        let availability = take(&|q| q.percent)?;
        let days = take(&|q| q.after.starts_with(" day") || q.after.starts_with("-day"))?;
        let used = take(&|q| q.after.starts_with(" minute"))?;
        let allowed = days * 24.0 * 60.0 * (100.0 - availability) / 100.0;
        return Some(Solution {
            steps: vec![
                format!(
                    "Minutes in the period: {} × 24 × 60 = {}.",
                    plain_number(days),
                    plain_number(days * 1440.0)
                ),
                format!(
                    "Allowed downtime at {}%: {} × {} = {} minutes.",
                    plain_number(availability),
                    plain_number(days * 1440.0),
                    plain_number((100.0 - availability) / 100.0),
                    plain_number(allowed)
                ),
                format!(
                    "Remaining: {} - {} = {} minutes.",
                    plain_number(allowed),
                    plain_number(used),
                    plain_number(allowed - used)
                ),
            ],
            expr: format!(
                "{} * 24 * 60 * (1 - {} / 100) - {}",
                plain_number(days),
                plain_number(availability),
                plain_number(used)
            ),
            value: allowed - used,
            unit: AnswerUnit::Minutes,
        });
    }
    if lower.contains("acquisition cost") {
        let margin = take(&|q| q.percent)?;
        let money: Vec<f64> = found
            .iter()
            .filter(|q| q.dollars)
            .map(|q| q.value)
            .collect();
        let price = money.iter().copied().fold(f64::MAX, f64::min);
        let cac = money.iter().copied().fold(f64::MIN, f64::max);
        let monthly_profit = price * margin / 100.0;
        return Some(Solution {
            steps: vec![
                format!(
                    "Gross profit per month: ${} × {}% = ${}.",
                    plain_number(price),
                    plain_number(margin),
                    plain_number(monthly_profit)
                ),
                format!(
                    "Payback: ${} / ${} = {} months.",
                    plain_number(cac),
                    plain_number(monthly_profit),
                    plain_number(cac / monthly_profit)
                ),
            ],
            expr: format!(
                "{} / ({} * {} / 100)",
                plain_number(cac),
                plain_number(price),
                plain_number(margin)
            ),
            value: cac / monthly_profit,
            unit: AnswerUnit::Months,
        });
    }
    if lower.contains("per hour") {
        let hourly = take(&|q| q.dollars && q.after.starts_with(" per hour"))?;
        let hours = take(&|q| q.after.starts_with(" hours"))?;
        let per_gb = take(&|q| q.dollars && q.after.starts_with(" per gb"))?;
        let gigabytes = take(&|q| q.after.starts_with(" gb"))?;
        let machines = take(&|q| {
            [" virtual machines", " nodes", " instances"]
                .iter()
                .any(|noun| q.after.starts_with(noun))
        })?;
        let compute = machines * hourly * hours;
        let storage = gigabytes * per_gb;
        return Some(Solution {
            steps: vec![
                format!(
                    "Compute: {} × ${} × {} hours = ${}.",
                    plain_number(machines),
                    plain_number(hourly),
                    plain_number(hours),
                    plain_number(compute)
                ),
                format!(
                    "Storage: {} GB × ${} = ${}.",
                    plain_number(gigabytes),
                    plain_number(per_gb),
                    plain_number(storage)
                ),
                format!(
                    "Total: ${} + ${} = ${}.",
                    plain_number(compute),
                    plain_number(storage),
                    plain_number(compute + storage)
                ),
            ],
            expr: format!(
                "{} * {} * {} + {} * {}",
                plain_number(machines),
                plain_number(hourly),
                plain_number(hours),
                plain_number(gigabytes),
                plain_number(per_gb)
            ),
            value: compute + storage,
            unit: AnswerUnit::Dollars,
        });
    }
    None
}
