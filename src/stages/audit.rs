//! The audit stage: every candidate that came through repair is answered by each panel model
//! (`audit.models`) the way the benchmark's own panel will answer it, and each answer is graded
//! by the card's grader against the item's golds. Keys the panel does not reach, numeric keys
//! written in a form correct answers do not grade, items answered without their context and
//! golds that grade other items' answers are flagged `_needs_review`; assemble leaves them out.
//! Its requests go through the one batch runner, so a crash, a re-run or a changed template
//! costs only the requests whose outcome is not cached yet.

use super::plan::sampling;
use super::{Ctx, StageEnd, AUDITED, AUDIT_REPORT, AUDIT_SUMMARY, REPAIRED};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::quality::panel::{self, Flag, Leniency, PanelAnswer, Verdict};
use crate::release::{PanelSampling, PassCount};
use crate::runner::usage::Usage;
use crate::runner::{estimate_cost, CostEstimate, OutcomeOf, ReplyOutcome, Request};
use crate::stages::item::{Candidate, Category};
use crate::stages::templates::{Template, TemplateError, AUDIT_REQUIRED};
use crate::util::seeded;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// The shipped audit template, used when the prompts folder has none of its own.
const DEFAULT_TEMPLATE: &str = include_str!("../../prompts/audit.md");
/// The template's file name in `author.prompts_dir`.
pub const TEMPLATE_FILE: &str = "audit.md";

/// What the audit asks: the template the panel's user message is rendered from, and whether
/// it is the prompts folder's own or the shipped one.
pub struct AuditTemplate {
    pub template: Template,
    pub shipped: bool,
}

impl AuditTemplate {
    /// `prompts_dir/audit.md`, or the shipped template when that file does not exist.
    pub fn load(prompts_dir: &Path) -> Result<AuditTemplate, TemplateError> {
        let path = prompts_dir.join(TEMPLATE_FILE);
        if path.exists() {
            let template = Template::load(&path, AUDIT_REQUIRED, AUDIT_REQUIRED)?;
            return Ok(AuditTemplate {
                template,
                shipped: false,
            });
        }
        let template = Template::parse(
            &path,
            DEFAULT_TEMPLATE.to_string(),
            AUDIT_REQUIRED,
            AUDIT_REQUIRED,
        )?;
        Ok(AuditTemplate {
            template,
            shipped: true,
        })
    }
}

/// One panel request and what it asks about.
pub struct PanelRequest {
    /// Index of the item in the audited list.
    pub item: usize,
    pub model: String,
    /// Asks the question alone, its context removed.
    pub probe: bool,
    pub request: Request,
}

/// The question of a context category's item, without its context, when the probe is on and
/// the item's structure is recognised.
fn probe_question<'p>(config: &Config, item: &'p Candidate) -> Option<&'p str> {
    if !config.audit.context_probe || !panel::has_context(item.category) {
        return None;
    }
    super::author::question_of(item.category, &item.prompt, &super::author::rules(config))
}

fn body(
    config: &Config,
    template: &Template,
    category: Category,
    model: &str,
    asked: &str,
    custom_id: &str,
) -> Value {
    let sampling = sampling(config, category);
    let user = template.render(&[("prompt", asked)]);
    let mut body = json!({
        "model": model,
        "messages": [{"role": "user", "content": user}],
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_tokens": sampling.max_tokens,
        "seed": seeded::derive_u32(config.release.seed, custom_id),
    });
    super::author::merge_extra(&mut body, &config.audit.extra_body);
    body
}

/// Every panel request for `items`: each model answers each item, and each probed item's
/// question alone.
pub fn requests(config: &Config, template: &Template, items: &[Candidate]) -> Vec<PanelRequest> {
    let mut requests = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let probe = probe_question(config, item);
        for model in &config.audit.models {
            let asked = [(false, Some(item.prompt.as_str())), (true, probe)];
            for (is_probe, text) in asked {
                let Some(text) = text else { continue };
                let custom_id = panel::custom_id(&item.id, model, is_probe);
                let body = body(config, template, item.category, model, text, &custom_id);
                requests.push(PanelRequest {
                    item: index,
                    model: model.clone(),
                    probe: is_probe,
                    request: Request::new(custom_id, body),
                });
            }
        }
    }
    requests
}

/// One line of `audit_report.jsonl`: what each panel model answered, how it graded, and what
/// the audit decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportLine {
    pub item_id: String,
    pub category: Category,
    /// SHA-256 of the prompt, as the manifest lists flagged items.
    pub prompt_sha256: String,
    /// The golds the answers were graded against (the repaired key, plus any variants added).
    pub golds: Vec<String>,
    pub answers: Vec<PanelAnswer>,
    /// The question the probe asked, when the item was probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_question: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probe_answers: Vec<PanelAnswer>,
    pub verdict: Verdict,
    pub leniency: Leniency,
}

impl ReportLine {
    /// The key, then what each panel model answered and how it graded (for the release report).
    pub fn detail(&self) -> String {
        let key = self.golds.first().map_or("none", String::as_str);
        let answers = self.answers.iter().map(|a| {
            let said = match (&a.answer, &a.error) {
                (Some(text), _) => crate::stages::item::quote(text),
                (None, Some(error)) => error.clone(),
                (None, None) => "no answer".into(),
            };
            let mark = if a.correct {
                "graded correct"
            } else {
                "graded wrong"
            };
            format!("{}: {said} ({mark})", a.model)
        });
        std::iter::once(format!("key {key}"))
            .chain(answers)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Items audited, passed and flagged (an item may carry several flags).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    pub audited: usize,
    pub passed: usize,
    pub flagged: usize,
    pub probed: usize,
    /// Numeric keys given surface variants so that correct answers grade (not a repair).
    pub golds_extended: usize,
    pub flags: BTreeMap<Flag, usize>,
}

/// How one panel model's requests went, over every audited item.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelCounts {
    pub answered: usize,
    pub correct: usize,
    /// Requests that failed or replied with nothing to grade.
    pub errors: usize,
}

/// `audit_summary.json`: the numbers the release states.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// SHA-256 of the `repaired.jsonl` the audit read; assemble refuses a stale audit.
    pub input_sha256: String,
    pub models: Vec<String>,
    pub min_correct: usize,
    pub context_probe: bool,
    /// The `[audit]` sampling overrides; unset values came from each category's target row.
    pub sampling: PanelSampling,
    pub total: Counts,
    pub by_category: BTreeMap<Category, Counts>,
    pub by_model: BTreeMap<String, ModelCounts>,
    /// Per category and panel model, over every audited item.
    pub pass: BTreeMap<Category, BTreeMap<String, PassCount>>,
    pub usage: Usage,
}

impl Summary {
    fn new(config: &Config, input_sha256: String) -> Summary {
        let mut flags = BTreeMap::new();
        for flag in Flag::ALL {
            flags.insert(flag, 0);
        }
        Summary {
            input_sha256,
            models: config.audit.models.clone(),
            min_correct: config.audit.min_correct(),
            context_probe: config.audit.context_probe,
            sampling: PanelSampling {
                temperature: config.audit.temperature,
                top_p: config.audit.top_p,
                max_tokens: config.audit.max_tokens,
            },
            total: Counts {
                flags,
                ..Counts::default()
            },
            ..Summary::default()
        }
    }

    fn count(&mut self, line: &ReportLine) {
        let category = self
            .by_category
            .entry(line.category)
            .or_insert_with(|| Counts {
                flags: self.total.flags.keys().map(|f| (*f, 0)).collect(),
                ..Counts::default()
            });
        for counts in [&mut self.total, category] {
            counts.audited += 1;
            counts.probed += usize::from(line.verdict.probe_correct.is_some());
            counts.golds_extended += usize::from(!line.verdict.added_golds.is_empty());
            if line.verdict.passed() {
                counts.passed += 1;
            } else {
                counts.flagged += 1;
            }
            for flag in &line.verdict.flags {
                *counts.flags.entry(*flag).or_default() += 1;
            }
        }
        for answer in &line.answers {
            let model = self.by_model.entry(answer.model.clone()).or_default();
            if answer.answer.is_some() {
                model.answered += 1;
            } else {
                model.errors += 1;
            }
            model.correct += usize::from(answer.correct);
            let pass = self
                .pass
                .entry(line.category)
                .or_default()
                .entry(answer.model.clone())
                .or_default();
            pass.answered += 1;
            pass.correct += usize::from(answer.correct);
        }
    }
}

/// The reply text of an outcome, or why there is none.
fn reply_text(outcome: Option<&ReplyOutcome>) -> Result<String, String> {
    match outcome {
        None => Err("no result".into()),
        Some(OutcomeOf::Failed(failure)) => Err(format!("{}: {}", failure.code, failure.message)),
        Some(OutcomeOf::Ok(body)) => body
            .reply()
            .map(|reply| reply.content)
            .map_err(|e| e.to_string()),
    }
}

/// Grades every answer, judges every item (extending numeric golds where the panel reached the
/// value in another form), then flags the golds that grade the other items' answers.
pub fn apply(
    config: &Config,
    items: &mut [Candidate],
    requests: &[PanelRequest],
    outcomes: &BTreeMap<String, ReplyOutcome>,
    input_sha256: String,
) -> (Vec<ReportLine>, Summary) {
    let mut answers: Vec<Vec<PanelAnswer>> = vec![Vec::new(); items.len()];
    let mut probes: Vec<Vec<PanelAnswer>> = vec![Vec::new(); items.len()];
    for r in requests {
        let reply = reply_text(outcomes.get(&r.request.custom_id));
        let graded = panel::grade(
            &items[r.item],
            &r.model,
            reply.as_deref().map_err(Clone::clone),
        );
        if r.probe {
            probes[r.item].push(graded);
        } else {
            answers[r.item].push(graded);
        }
    }
    let min_correct = config.audit.min_correct();
    let mut lines: Vec<ReportLine> = items
        .iter_mut()
        .zip(answers.iter_mut().zip(&probes))
        .map(|(item, (answers, probe))| {
            let probe_question = probe_question(config, item).map(str::to_string);
            let probe = (!probe.is_empty()).then_some(probe.as_slice());
            let verdict = panel::judge(item, answers, probe, min_correct);
            ReportLine {
                item_id: item.id.clone(),
                category: item.category,
                prompt_sha256: crate::util::digest::sha256_hex(item.prompt.as_bytes()),
                golds: item.golds.clone(),
                answers: answers.clone(),
                probe_question: probe.and(probe_question),
                probe_answers: probe.map(<[PanelAnswer]>::to_vec).unwrap_or_default(),
                verdict,
                leniency: Leniency { hits: 0, others: 0 },
            }
        })
        .collect();
    let golds: Vec<Vec<String>> = lines.iter().map(|l| l.golds.clone()).collect();
    let texts: Vec<(usize, &str)> = lines
        .iter()
        .enumerate()
        .flat_map(|(index, line)| {
            line.answers
                .iter()
                .filter_map(move |a| a.answer.as_deref().map(|text| (index, text)))
        })
        .collect();
    let leniency = panel::leniency(&golds, &texts);
    let mut summary = Summary::new(config, input_sha256);
    for ((line, leniency), item) in lines.iter_mut().zip(leniency).zip(items.iter_mut()) {
        line.leniency = leniency;
        if leniency.too_lenient() {
            line.verdict.flags.push(Flag::GoldTooLenient);
        }
        item.needs_review |= !line.verdict.passed();
        summary.count(line);
    }
    for outcome in outcomes.values() {
        if let OutcomeOf::Ok(body) = outcome {
            summary.usage.add_response(body);
        }
    }
    (lines, summary)
}

/// Refuses a panel that repeats the author: its answers would not be independent.
fn warn_about_panel(ctx: &Ctx<'_>) {
    let config = ctx.config;
    if config.audit.models.contains(&config.author.model) {
        ctx.printer.warn(format!(
            "panel model {} is also the author model: its answers are not independent of the keys; use other models in audit.models for a real release",
            config.author.model
        ));
    }
}

/// Runs the panel over every repaired item as `job`: only items without cached answers (those
/// of the loop's newest round) send requests.
pub async fn run(ctx: &mut Ctx<'_>, job: &str) -> Result<StageEnd> {
    let config = ctx.config;
    if config.audit.models.is_empty() {
        ctx.printer
            .out("audit: skipped (audit.models is empty): the release's keys are not checked by an answering panel");
        return Ok(StageEnd::Done);
    }
    let (mut items, input_sha256) = read_input(ctx)?;
    let template = AuditTemplate::load(&config.author.prompts_dir)?;
    if template.shipped {
        ctx.printer.note(format!(
            "audit: {} has no {TEMPLATE_FILE}; using the shipped audit template",
            config.author.prompts_dir.display()
        ));
    }
    warn_about_panel(ctx);
    let requests = requests(config, &template.template, &items);
    crate::runner::check_request_count(config, requests.len())?;
    let batch: Vec<Request> = requests.iter().map(|r| r.request.clone()).collect();
    let Some(outcomes) = ctx
        .run_job(job, &batch, config.audit.max_cost_usd, "audit.max_cost_usd")
        .await?
    else {
        return Ok(StageEnd::Waiting);
    };
    let (report, summary) = apply(config, &mut items, &requests, &outcomes, input_sha256);
    crate::util::jsonl::write(&ctx.out(AUDITED), &items)?;
    crate::util::jsonl::write(&ctx.out(AUDIT_REPORT), &report)?;
    super::write_json(&ctx.out(AUDIT_SUMMARY), AUDIT_SUMMARY, &summary)?;
    super::write_usage(ctx, "audit", &batch)?;
    ctx.printer.out(render_summary(&summary));
    for (category, counts) in &summary.by_category {
        if counts.audited > 0 && counts.passed == 0 {
            ctx.printer.warn(format!(
                "audit: the panel flagged every {category} item, so the release will have none: read audit_report.jsonl; with a weak panel (such as the bundled local model) set audit.min_correct = 0 to report the pass rates without flagging"
            ));
        }
    }
    Ok(StageEnd::Done)
}

/// `repaired.jsonl` and its SHA-256.
fn read_input(ctx: &Ctx<'_>) -> Result<(Vec<Candidate>, String)> {
    let path = ctx.out(REPAIRED);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::MissingInput {
                path,
                next: "run `saseval-gen repair` first (or `saseval-gen run`)",
            })
        }
        Err(source) => return Err(Error::Read { path, source }),
    };
    let items = crate::util::jsonl::read(&path)?;
    Ok((items, crate::util::digest::sha256_hex(&bytes)))
}

/// The SHA-256 of `repaired.jsonl` as it is now, for the staleness check in assemble.
pub fn input_digest(out_dir: &Path) -> Result<String> {
    let path = out_dir.join(REPAIRED);
    std::fs::read(&path)
        .map(|bytes| crate::util::digest::sha256_hex(&bytes))
        .map_err(|source| Error::Read { path, source })
}

/// `audit --dry-run`: the panel requests the items in `repaired.jsonl` need, how many are
/// cached already, and the worst-case cost of the rest; before any item exists, the plan.
pub fn dry_run(config: &Config, out_dir: &Path) -> Result<String> {
    if config.audit.models.is_empty() {
        return Ok("audit dry run: audit.models is empty; the audit is skipped".into());
    }
    let template = AuditTemplate::load(&config.author.prompts_dir)?;
    let input = out_dir.join(REPAIRED);
    if !input.exists() {
        let plan = super::plan::audit(config, template.template.text());
        return Ok(super::plan::render(config, &plan));
    }
    let items: Vec<Candidate> = crate::util::jsonl::read(&input)?;
    let cache = crate::runner::cache::Cache::open(&crate::runner::StateDir::new(out_dir).cache())?;
    let requests = requests(config, &template.template, &items);
    let cached = |r: &PanelRequest| cache.contains(&r.request.custom_id, r.request.body_hash());
    let mut lines = vec![format!(
        "audit dry run: {} items of {REPAIRED} × panel {} (context probe {}):",
        items.len(),
        config.audit.models.join(", "),
        if config.audit.context_probe {
            "on"
        } else {
            "off"
        }
    )];
    lines.push(super::plan::table_header(true));
    let row = |name: &str, of: &[&PanelRequest]| -> (String, CostEstimate) {
        let pending: Vec<&Request> = of
            .iter()
            .filter(|r| !cached(r))
            .map(|r| &r.request)
            .collect();
        let estimate = estimate_cost(config, pending.iter().copied());
        let cached = (of.len() - pending.len()) as u64;
        let line = super::plan::table_row(name, of.len() as u64, Some(cached), &estimate);
        (line, estimate)
    };
    for category in Category::ALL {
        let of: Vec<&PanelRequest> = requests
            .iter()
            .filter(|r| items[r.item].category == category)
            .collect();
        lines.push(row(category.name(), &of).0);
    }
    let all: Vec<&PanelRequest> = requests.iter().collect();
    let (total, estimate) = row("total", &all);
    lines.push(total);
    lines.push(super::plan::pricing_note(
        config,
        &config.audit.models,
        &estimate,
    ));
    lines.push(format!(
        "  worst case: every reply uses max_tokens; cached requests are not sent again; {}",
        super::plan::limit_verdict(
            estimate.usd,
            "audit.max_cost_usd",
            config.audit.max_cost_usd
        )
    ));
    Ok(lines.join("\n"))
}

/// The printed table: by category, items audited, passed, flagged by reason, and each panel
/// model's pass rate.
pub fn render_summary(s: &Summary) -> String {
    let probe = if s.context_probe { "on" } else { "off" };
    let mut lines = vec![format!(
        "audit: {} items answered by {} (min_correct {} of {}; context probe {probe})",
        s.total.audited,
        s.models.join(", "),
        s.min_correct,
        s.models.len()
    )];
    let mut head = format!("  {:<20} {:>7} {:>6}", "category", "audited", "passed");
    for flag in Flag::ALL {
        head.push_str(&format!(" {:>w$}", flag.code(), w = flag.code().len()));
    }
    for model in &s.models {
        head.push_str(&format!(" {:>w$}", model, w = model.len().max(6)));
    }
    lines.push(head);
    let row = |name: &str, c: &Counts, pass: &dyn Fn(&str) -> Option<PassCount>| {
        let mut line = format!("  {:<20} {:>7} {:>6}", name, c.audited, c.passed);
        for flag in Flag::ALL {
            let n = c.flags.get(&flag).copied().unwrap_or(0);
            line.push_str(&format!(" {:>w$}", n, w = flag.code().len()));
        }
        for model in &s.models {
            let rate = pass(model).map_or("-".to_string(), |p| percent(p.correct, p.answered));
            line.push_str(&format!(" {:>w$}", rate, w = model.len().max(6)));
        }
        line
    };
    for (category, counts) in &s.by_category {
        let of_category = s.pass.get(category);
        lines.push(row(category.name(), counts, &|model| {
            of_category.and_then(|m| m.get(model)).copied()
        }));
    }
    lines.push(row("total", &s.total, &|model| {
        s.by_model.get(model).map(|m| PassCount {
            answered: m.answered + m.errors,
            correct: m.correct,
        })
    }));
    for (model, m) in s.by_model.iter().filter(|(_, m)| m.errors > 0) {
        lines.push(format!(
            "  {model}: {} request(s) gave no answer to grade (see audit_report.jsonl)",
            m.errors
        ));
    }
    if s.total.golds_extended > 0 {
        lines.push(format!(
            "  {} numeric key(s) gained surface variants so that correct answers grade (value unchanged)",
            s.total.golds_extended
        ));
    }
    lines.push(format!("  sampling: {}", s.sampling.describe()));
    lines.join("\n")
}

fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * part as f64 / whole as f64)
    }
}
