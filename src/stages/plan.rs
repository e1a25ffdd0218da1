//! What the repair and audit stages will ask for before any item exists: their request counts
//! and worst-case cost, planned from the valid items the author stage aims for. `author
//! --dry-run` shows every stage this way, so a user sees the whole run's price before paying
//! for any of it; once items exist, `audit --dry-run` counts its real requests instead. The two
//! facts the stages and the plan share live here too: the valid items each category aims for
//! ([`target`]) and the panel's sampling ([`sampling`]), so no stage imports another's.

use crate::config::Config;
use crate::runner::{message_tokens, CostEstimate};
use crate::stages::item::Category;
use std::collections::BTreeSet;

/// Valid items wanted per category: `per_category × oversample`, rounded up.
pub fn target(config: &Config) -> usize {
    (config.release.per_category as f64 * config.author.oversample).ceil() as usize
}

/// The sampling of one category's panel requests: the `[audit]` override where set, else the
/// category's target row (`T`, `p`, `L`), as the benchmark's panel will answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    pub temperature: f64,
    pub top_p: f64,
    pub max_tokens: u32,
}

pub fn sampling(config: &Config, category: Category) -> Sampling {
    let row = config.category(category).target;
    let audit = &config.audit;
    Sampling {
        temperature: audit.temperature.unwrap_or(row.t),
        top_p: audit.top_p.unwrap_or(row.p),
        max_tokens: audit.max_tokens.unwrap_or(row.l),
    }
}

/// The planned requests of one category in one stage.
pub struct Row {
    pub category: Category,
    pub requests: u64,
    pub estimate: CostEstimate,
}

/// A stage's planned requests, per category.
pub struct Plan {
    pub stage: &'static str,
    pub models: Vec<String>,
    pub rows: Vec<Row>,
    /// What the estimate assumes about the items.
    pub basis: String,
    pub limit_key: &'static str,
    pub limit: f64,
}

impl Plan {
    pub fn total(&self) -> (u64, CostEstimate) {
        let mut estimate = CostEstimate::zero();
        let mut requests = 0;
        for row in &self.rows {
            requests += row.requests;
            estimate.input_tokens += row.estimate.input_tokens;
            estimate.output_tokens += row.estimate.output_tokens;
            estimate.usd += row.estimate.usd;
            estimate.priced &= row.estimate.priced;
        }
        (requests, estimate)
    }
}

/// The most tokens one authored item can hold: its share of the authoring reply's budget.
fn item_tokens(config: &Config, category: Category) -> u64 {
    let reply = config.author_max_tokens(category);
    u64::from(reply) / config.category(category).items_per_request.max(1) as u64
}

/// One stage's plan: `requests_per_item` requests per model for each planned item of the
/// categories it covers and the run asks, each sending the template and the item, with
/// `max_tokens` out.
fn plan(
    config: &Config,
    models: &[String],
    template_tokens: u64,
    per_item: impl Fn(Category) -> (u64, u64),
) -> Vec<Row> {
    let items = target(config) as u64;
    Category::ALL
        .into_iter()
        .filter(|category| config.category(*category).is_asked())
        .filter_map(|category| {
            let (requests_per_item, max_tokens) = per_item(category);
            if requests_per_item == 0 {
                return None;
            }
            let mut estimate = CostEstimate::zero();
            let per_model = items * requests_per_item;
            let input = per_model * (template_tokens + item_tokens(config, category));
            for model in models {
                estimate.add(config, model, input, per_model * max_tokens);
            }
            Some(Row {
                category,
                requests: per_model * models.len() as u64,
                estimate,
            })
        })
        .collect()
}

/// The repair stage: each verifier re-solves every numeric item.
pub fn repair(config: &Config, verify_template: &str) -> Plan {
    let max_tokens = u64::from(config.repair.max_tokens);
    Plan {
        stage: "repair",
        models: config.repair.models.clone(),
        rows: plan(
            config,
            &config.repair.models,
            message_tokens(verify_template),
            |category| (u64::from(category.is_numeric()), max_tokens),
        ),
        basis: basis(config),
        limit_key: "repair.max_cost_usd",
        limit: config.repair.max_cost_usd,
    }
}

/// The audit stage: each panel model answers every item, and probed items once more.
pub fn audit(config: &Config, audit_template: &str) -> Plan {
    let probe = config.audit.context_probe;
    Plan {
        stage: "audit",
        models: config.audit.models.clone(),
        rows: plan(
            config,
            &config.audit.models,
            message_tokens(audit_template),
            |category| {
                let probed = probe && crate::quality::panel::has_context(category);
                let sampling = sampling(config, category);
                (1 + u64::from(probed), u64::from(sampling.max_tokens))
            },
        ),
        basis: basis(config),
        limit_key: "audit.max_cost_usd",
        limit: config.audit.max_cost_usd,
    }
}

fn basis(config: &Config) -> String {
    format!(
        "{} valid items per category (release.per_category × author.oversample), each at most its share of the authoring reply's max_tokens",
        target(config)
    )
}

impl Plan {
    /// The worst-case cost of one item of `category` in this stage (0 for a category it skips).
    pub fn per_item_usd(&self, config: &Config, category: Category) -> f64 {
        let items = target(config).max(1) as f64;
        self.rows
            .iter()
            .find(|row| row.category == category)
            .map_or(0.0, |row| row.estimate.usd / items)
    }
}

/// The dry runs' cost table header; `cached` adds the column of requests already answered.
pub fn table_header(cached: bool) -> String {
    let cached = if cached {
        format!(" {:>8}", "cached")
    } else {
        String::new()
    };
    format!(
        "  {:<20} {:>8}{cached} {:>12} {:>14} {:>10}",
        "category", "requests", "input tok", "max output tok", "cost USD"
    )
}

/// One line of the dry runs' cost table.
pub fn table_row(
    name: &str,
    requests: u64,
    cached: Option<u64>,
    estimate: &CostEstimate,
) -> String {
    let cached = cached.map_or(String::new(), |n| format!(" {n:>8}"));
    format!(
        "  {:<20} {:>8}{cached} {:>12} {:>14} {:>10.4}",
        name, requests, estimate.input_tokens, estimate.output_tokens, estimate.usd
    )
}

/// The plan as the dry run prints it.
pub fn render(config: &Config, plan: &Plan) -> String {
    let mut lines = vec![format!(
        "{} (planned; models {}):",
        plan.stage,
        plan.models.join(", ")
    )];
    lines.push(table_header(false));
    for row in &plan.rows {
        lines.push(table_row(
            row.category.name(),
            row.requests,
            None,
            &row.estimate,
        ));
    }
    let (requests, estimate) = plan.total();
    lines.push(table_row("total", requests, None, &estimate));
    lines.push(format!("  assumes {}", plan.basis));
    lines.push(pricing_note(config, &plan.models, &estimate));
    lines.push(format!(
        "  worst case: every reply uses max_tokens; {}",
        limit_verdict(estimate.usd, plan.limit_key, plan.limit)
    ));
    lines.join("\n")
}

/// Whether a worst-case cost fits its guard, as a dry run states it.
pub fn limit_verdict(usd: f64, key: &str, limit: f64) -> String {
    if usd > limit {
        format!("over {key} = {limit:.2}: a run would stop here")
    } else {
        format!("within {key} = {limit:.2}")
    }
}

/// Which models have no price (their cost counts as 0), or that every one has one.
pub fn pricing_note(config: &Config, models: &[String], estimate: &CostEstimate) -> String {
    if estimate.priced {
        return format!(
            "  priced at [prices] with the batch discount ({:.0}%) where the provider gives one",
            config.api.batch_discount * 100.0
        );
    }
    let unpriced: BTreeSet<&str> = models
        .iter()
        .map(String::as_str)
        .filter(|m| !config.prices.contains_key(*m))
        .collect();
    format!(
        "  note: no price for {} in [prices]; its cost counts as 0",
        unpriced.into_iter().collect::<Vec<_>>().join(", ")
    )
}
