//! The repair stage: every numeric item (reasoning, bloated_reasoning) is re-solved by each
//! verifier model at temperature 0; answers are compared numerically with the authored key; keys
//! that all verifiers contradict are replaced, and ill-posed or unverifiable items are flagged.

use super::{Ctx, StageEnd, AUTHORED, REPAIRED, REPAIR_REPORT, REPAIR_SUMMARY};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::quality::expr;
use crate::quality::grade::graded;
use crate::quality::numeric::{self, Quantity};
use crate::release::{RepairCounts, RepairNumbers, VerifierNumbers};
use crate::runner::{OutcomeOf, ReplyOutcome, Request, Usage};
use crate::stages::item::{Candidate, Category};
use crate::stages::templates::Templates;
use crate::util::seeded;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// What one verifier said about one item.
#[derive(Debug, Clone, Serialize)]
pub struct VerifierAnswer {
    pub model: String,
    /// The raw ANSWER text (or the fallback number), as the verifier wrote it.
    pub raw_answer: Option<String>,
    pub fell_back: bool,
    pub value: Option<f64>,
    pub expr: Option<String>,
    pub expr_value: Option<f64>,
    /// False when the verifier's EXPR does not evaluate to its own ANSWER.
    pub expr_consistent: Option<bool>,
    /// A parsed ANSWER line whose EXPR (when given) agrees with it.
    pub reliable: bool,
    pub agrees_with_key: Option<bool>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Agree,
    Repaired,
    Flagged,
}

/// One line of `repair_report.jsonl`.
#[derive(Debug, Clone, Serialize)]
pub struct ReportLine {
    pub item_id: String,
    pub category: Category,
    pub key_golds: Vec<String>,
    pub key_value: Option<f64>,
    pub rate_question: bool,
    pub verifiers: Vec<VerifierAnswer>,
    pub decision: Decision,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_golds: Option<Vec<String>>,
}

/// `repair_summary.json`: the numbers the release card states.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Summary {
    pub verifiers: Vec<String>,
    pub total: RepairCounts,
    pub by_category: BTreeMap<Category, RepairCounts>,
    pub by_verifier: BTreeMap<String, VerifierNumbers>,
    pub flag_reasons: BTreeMap<String, usize>,
    pub usage: Usage,
}

impl Summary {
    /// The numbers the release manifest and card state.
    pub fn numbers(&self) -> RepairNumbers {
        RepairNumbers {
            checked: self.total.checked,
            agreed: self.total.agreed,
            repaired: self.total.repaired,
            flagged: self.total.flagged,
            by_category: self.by_category.clone(),
        }
    }
}

pub fn custom_id(item_id: &str, model: &str) -> String {
    format!("repair/{item_id}/{model}")
}

fn body(
    config: &Config,
    templates: &Templates,
    item: &Candidate,
    model: &str,
    custom_id: &str,
) -> Value {
    let user = templates.verify.render(&[("prompt", &item.prompt)]);
    let mut body = json!({
        "model": model,
        "messages": [{"role": "user", "content": user}],
        "temperature": config.repair.temperature,
        "max_tokens": config.repair.max_tokens,
        "seed": seeded::derive_u32(config.release.seed, custom_id),
    });
    super::author::merge_extra(&mut body, &config.repair.extra_body);
    body
}

/// One request per verifier for a numeric item; none for the others.
fn requests_of(config: &Config, templates: &Templates, item: &Candidate) -> Vec<Request> {
    if !item.category.is_numeric() {
        return Vec::new();
    }
    config
        .repair
        .models
        .iter()
        .map(|model| {
            let custom_id = custom_id(&item.id, model);
            let body = body(config, templates, item, model, &custom_id);
            Request::new(custom_id, body)
        })
        .collect()
}

/// The verified key of an item: the first gold that parses as a quantity.
fn key_quantity(golds: &[String]) -> Option<Quantity> {
    golds.iter().find_map(|g| numeric::parse_quantity(g))
}

/// A confirmed key's golds with the key's canonical forms that no gold grades yet, so that an
/// answer writing the value another usual way passes (`100000` beside `100,000`, which the grader
/// reads as `100 000`); a form the prompt holds is left out. `None` when nothing is added.
fn completed_golds(prompt: &str, golds: &[String], key: &Quantity) -> Option<Vec<String>> {
    let missing: Vec<String> = numeric::canonical_golds(key)
        .into_iter()
        .filter(|form| !graded(form, golds) && !graded(prompt, std::slice::from_ref(form)))
        .collect();
    (!missing.is_empty()).then(|| golds.iter().cloned().chain(missing).collect())
}

/// True when `expr_value` is `answer` up to the rounding the answer text shows
/// (a percentage may be written as a fraction in the expression).
fn expr_matches(expr_value: f64, answer: &Quantity) -> bool {
    let text = numeric::format_value(answer.value);
    let decimals = text.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    let tolerance = 0.5 * 10f64.powi(-decimals) + 1e-9 * answer.value.abs().max(1.0);
    let candidates = [expr_value, expr_value * 100.0];
    let scaled: &[f64] = if answer.unit == numeric::UnitClass::Percent {
        &candidates
    } else {
        &candidates[..1]
    };
    scaled.iter().any(|v| (v - answer.value).abs() <= tolerance)
}

fn judge_verifier(
    model: &str,
    outcome: Option<&ReplyOutcome>,
    key: Option<&Quantity>,
    rate: bool,
) -> VerifierAnswer {
    let mut answer = VerifierAnswer {
        model: model.to_string(),
        raw_answer: None,
        fell_back: false,
        value: None,
        expr: None,
        expr_value: None,
        expr_consistent: None,
        reliable: false,
        agrees_with_key: None,
        error: None,
    };
    let content = match outcome {
        None => {
            answer.error = Some("no result".into());
            return answer;
        }
        Some(OutcomeOf::Failed(f)) => {
            answer.error = Some(format!("{}: {}", f.code, f.message));
            return answer;
        }
        Some(OutcomeOf::Ok(body)) => match body.reply() {
            Ok(reply) => reply.content,
            Err(e) => {
                answer.error = Some(e.to_string());
                return answer;
            }
        },
    };
    let Some(extracted) = numeric::extract_answer(&content) else {
        answer.error = Some("no ANSWER line and no number in the reply".into());
        return answer;
    };
    answer.fell_back = extracted.fell_back;
    answer.raw_answer = Some(extracted.text.clone());
    let Some(value) = numeric::parse_quantity(&extracted.text) else {
        answer.error = Some("the answer is not a number".into());
        return answer;
    };
    answer.value = Some(value.value);
    answer.expr = numeric::extract_expr(&content);
    if let Some(e) = &answer.expr {
        match expr::eval(e) {
            Ok(v) => {
                answer.expr_value = Some(v);
                answer.expr_consistent = Some(expr_matches(v, &value));
            }
            Err(err) => {
                answer.expr_consistent = Some(false);
                answer.error = Some(format!("EXPR does not evaluate: {err}"));
            }
        }
    }
    answer.reliable = !answer.fell_back && answer.expr_consistent != Some(false);
    answer.agrees_with_key = key.map(|k| numeric::agree(&value, k, rate));
    answer
}

/// Decides one item from its verifiers' answers.
pub fn decide(item: &Candidate, answers: Vec<VerifierAnswer>, verified: &[Quantity]) -> ReportLine {
    let key = key_quantity(&item.golds);
    let rate = numeric::is_rate_question(&item.prompt);
    let mut line = ReportLine {
        item_id: item.id.clone(),
        category: item.category,
        key_golds: item.golds.clone(),
        key_value: key.as_ref().map(|k| k.value),
        rate_question: rate,
        verifiers: answers,
        decision: Decision::Flagged,
        reason: String::new(),
        new_golds: None,
    };
    let flag = |mut line: ReportLine, reason: &str| {
        line.decision = Decision::Flagged;
        line.reason = reason.into();
        line
    };
    if key.is_none() {
        return flag(line, "key_unparseable");
    }
    if verified.is_empty() {
        return flag(line, "no_reliable_answer");
    }
    if verified.len() != line.verifiers.len() {
        return flag(line, "verifier_unreliable");
    }
    let first = &verified[0];
    if verified
        .iter()
        .skip(1)
        .any(|q| !numeric::agree(q, first, rate))
    {
        return flag(line, "verifiers_disagree");
    }
    if numeric::looks_ill_posed(&item.prompt, first) {
        return flag(line, "ill_posed");
    }
    if line
        .verifiers
        .iter()
        .all(|v| v.agrees_with_key == Some(true))
    {
        line.decision = Decision::Agree;
        line.reason = "agree".into();
        line.new_golds = key
            .as_ref()
            .and_then(|key| completed_golds(&item.prompt, &item.golds, key));
        return line;
    }
    let golds = numeric::canonical_golds(first);
    if graded(&item.prompt, &golds) {
        line.new_golds = Some(golds);
        return flag(line, "repaired_gold_in_prompt");
    }
    line.decision = Decision::Repaired;
    line.reason = "key_contradicted".into();
    line.new_golds = Some(golds);
    line
}

/// Decides a numeric item from its verifiers' outcomes, applies the decision to it and counts it
/// in `summary`; other items pass unchanged.
fn apply(
    config: &Config,
    item: &mut Candidate,
    outcomes: &BTreeMap<String, ReplyOutcome>,
    summary: &mut Summary,
) -> Option<ReportLine> {
    if !item.category.is_numeric() {
        return None;
    }
    let key = key_quantity(&item.golds);
    let rate = numeric::is_rate_question(&item.prompt);
    let mut verified = Vec::new();
    let answers: Vec<VerifierAnswer> = config
        .repair
        .models
        .iter()
        .map(|model| {
            let outcome = outcomes.get(&custom_id(&item.id, model));
            let answer = judge_verifier(model, outcome, key.as_ref(), rate);
            if answer.reliable {
                if let Some(q) = answer
                    .raw_answer
                    .as_deref()
                    .and_then(numeric::parse_quantity)
                {
                    verified.push(q);
                }
            }
            let counts = summary.by_verifier.entry(model.clone()).or_default();
            match (&answer.value, answer.fell_back, answer.expr_consistent) {
                (None, _, _) => counts.unparseable += 1,
                (Some(_), fell_back, consistent) => {
                    counts.answered += 1;
                    counts.fell_back += usize::from(fell_back);
                    counts.expr_mismatch += usize::from(consistent == Some(false));
                    match answer.agrees_with_key {
                        Some(true) => counts.agreed_with_key += 1,
                        Some(false) => counts.disagreed_with_key += 1,
                        None => {}
                    }
                }
            }
            answer
        })
        .collect();
    let line = decide(item, answers, &verified);
    let counts = summary.by_category.entry(item.category).or_default();
    counts.checked += 1;
    summary.total.checked += 1;
    match line.decision {
        Decision::Agree => {
            counts.agreed += 1;
            summary.total.agreed += 1;
            if let Some(golds) = &line.new_golds {
                item.golds = golds.clone();
            }
        }
        Decision::Repaired => {
            counts.repaired += 1;
            summary.total.repaired += 1;
            if let Some(golds) = &line.new_golds {
                item.golds = golds.clone();
            }
            item.gold_repaired = true;
        }
        Decision::Flagged => {
            counts.flagged += 1;
            summary.total.flagged += 1;
            *summary.flag_reasons.entry(line.reason.clone()).or_default() += 1;
            item.needs_review = true;
        }
    }
    Some(line)
}

/// Runs the stage over every authored item as `job`: only items without cached re-solves
/// (those of the loop's newest round) send requests.
pub async fn run(ctx: &mut Ctx<'_>, templates: &Templates, job: &str) -> Result<StageEnd> {
    let config = ctx.config;
    let authored_path = ctx.out(AUTHORED);
    if !authored_path.exists() {
        return Err(Error::MissingInput {
            path: authored_path,
            next: "run `saseval-gen author` first",
        });
    }
    for model in &config.repair.models {
        if *model == config.author.model {
            ctx.printer.warn(format!(
                "verifier {model} is also the author model: its re-solves are not independent; use another model in repair.models for a real release"
            ));
        }
    }
    let mut requests = Vec::new();
    crate::util::jsonl::for_each(&authored_path, |item: Candidate| {
        requests.extend(requests_of(config, templates, &item));
        Ok::<_, Error>(())
    })?;
    crate::runner::check_request_count(config, requests.len())?;
    let Some(outcomes) = ctx
        .run_job(
            job,
            &requests,
            config.repair.max_cost_usd,
            "repair.max_cost_usd",
        )
        .await?
    else {
        return Ok(StageEnd::Waiting);
    };
    let mut summary = Summary {
        verifiers: config.repair.models.clone(),
        ..Summary::default()
    };
    let mut repaired = crate::util::jsonl::Writer::create(&ctx.out(REPAIRED))?;
    let mut report = crate::util::jsonl::Writer::create(&ctx.out(REPAIR_REPORT))?;
    crate::util::jsonl::for_each(&authored_path, |mut item: Candidate| {
        if let Some(line) = apply(config, &mut item, &outcomes, &mut summary) {
            report.push(&line)?;
        }
        repaired.push(&item)
    })?;
    for outcome in outcomes.values() {
        if let OutcomeOf::Ok(body) = outcome {
            summary.usage.add_response(body);
        }
    }
    repaired.commit()?;
    report.commit()?;
    super::write_json(&ctx.out(REPAIR_SUMMARY), REPAIR_SUMMARY, &summary)?;
    super::write_usage(ctx, "repair", &requests)?;
    ctx.printer.out(render_summary(&summary));
    Ok(StageEnd::Done)
}

fn render_summary(s: &Summary) -> String {
    let row = |name: &str, c: &RepairCounts| {
        format!(
            "  {name:<20} {:>7} {:>7} {:>8} {:>7}",
            c.checked, c.agreed, c.repaired, c.flagged
        )
    };
    let mut lines = vec![
        "repair: numeric keys re-solved by ".to_string() + &s.verifiers.join(", "),
        format!(
            "  {:<20} {:>7} {:>7} {:>8} {:>7}",
            "category", "checked", "agreed", "repaired", "flagged"
        ),
    ];
    for (category, c) in &s.by_category {
        lines.push(row(category.name(), c));
    }
    lines.push(row("total", &s.total));
    for (model, v) in &s.by_verifier {
        lines.push(format!(
            "  verifier {model}: {} answered, {} unparseable, {} fell back to the last number, {} EXPR mismatches, {} agreed / {} disagreed with the key",
            v.answered, v.unparseable, v.fell_back, v.expr_mismatch, v.agreed_with_key, v.disagreed_with_key
        ));
    }
    for (reason, n) in &s.flag_reasons {
        lines.push(format!("  flagged {reason}: {n}"));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    /// The golds of a reasoning item the 1.5B author wrote and the verifier confirmed (500 leads
    /// a day at $200 each): the grader reads `100,000` as `100 000`, so the answer `$100000`
    /// failed every one of them.
    #[test]
    fn a_confirmed_key_gains_the_forms_its_golds_do_not_grade() {
        let prompt = "A CRM system receives an average of 500 new leads per day. On average, each \
                      lead generates an average of $200 in revenue. What is the expected revenue \
                      generated per day by the CRM system?";
        let golds = strings(&["100,000", "100,000$", "$100,000"]);
        let key = numeric::parse_quantity(&golds[0]).expect("a quantity");
        assert!(!graded("$100000", &golds));
        let completed = completed_golds(prompt, &golds, &key).expect("a form added");
        assert_eq!(completed[..3], golds[..]);
        assert!(graded("$100000", &completed), "{completed:?}");
        assert!(graded("100,000 dollars", &completed), "{completed:?}");
        let whole = strings(&["100000", "100,000"]);
        assert_eq!(completed_golds(prompt, &whole, &key), None);
        let stated = "Revenue was 100000 dollars last year; at 500 leads a day and $200 each, \
                      what is the revenue per day now?";
        assert_eq!(completed_golds(stated, &golds, &key), None);
    }
}
