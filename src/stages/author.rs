//! The author stage: renders one authoring request per (category, domain) slot from the
//! templates with a seeded domain rotation, runs them through the batch runner, parses and
//! validates every item on its own, and tops up short categories in further rounds.

use super::{Ctx, StageEnd, AUTHORED, AUTHOR_SUMMARY, REJECTS};
use crate::batch::{
    check_planned, estimate_weighted, BatchError, CostGuard, OutcomeOf, ReplyOutcome, Request,
    Usage,
};
use crate::config::{Config, Provider, ResponseFormat};
use crate::dedup::{DupKind, ReferenceSet};
use crate::error::Result;
use crate::jsonl;
use crate::parallel;
use crate::record::{excerpt, Candidate, Category, Reject};
use crate::reply;
use crate::seeded;
use crate::templates::Templates;
use crate::validate::{self, Patterns, Reason, Rejection, Rules};
use crate::yields::{self, Example, RoundYield, Tally};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One authoring request and where it sits in the rotation.
#[derive(Debug, Clone)]
pub struct AuthorRequest {
    pub request: Request,
    pub category: Category,
    pub domain: String,
    pub round: u32,
    pub index: usize,
    pub count: usize,
}

/// What the outcomes so far produced, counted; the items themselves stream to authored.jsonl
/// and rejects.jsonl as they are derived, so memory does not grow with the replies.
#[derive(Debug, Default)]
pub struct Derived {
    pub valid: BTreeMap<Category, usize>,
    pub reject_reasons: BTreeMap<String, usize>,
    pub usage: Usage,
    /// Valid items and rejects by round and category.
    pub yields: Vec<RoundYield>,
}

/// The example item of each category template, which an authored item must not copy. A copy is
/// rejected here, where a top-up round can still replace it; assemble drops it too, but only
/// after repair and audit have paid for it and with no round left to fill its place.
pub struct TemplateExamples {
    by_category: BTreeMap<Category, ReferenceSet>,
}

impl TemplateExamples {
    /// The examples of `templates`, compared by the release's near-duplicate `threshold`.
    pub fn of(templates: &Templates, threshold: f64) -> Result<TemplateExamples> {
        let mut by_category = BTreeMap::new();
        for (category, template) in &templates.categories {
            let set = ReferenceSet::new(&template.example_prompts(), threshold)?;
            by_category.insert(*category, set);
        }
        Ok(TemplateExamples { by_category })
    }

    fn check(&self, category: Category, prompt: &str) -> Result<(), Rejection> {
        let Some((_, kind)) = self
            .by_category
            .get(&category)
            .and_then(|set| set.duplicated(prompt))
        else {
            return Ok(());
        };
        let example = crate::templates::example_item_name(category);
        let detail = match kind {
            DupKind::Exact => format!("the prompt is {example} after normalisation"),
            DupKind::Near { similarity } => {
                format!("the prompt is a near duplicate (similarity {similarity:.2}) of {example}")
            }
        };
        Err(Rejection {
            reason: Reason::CopiesTemplateExample,
            detail,
        })
    }
}

/// Valid items wanted per category: `per_category × oversample`, rounded up.
pub fn target(config: &Config) -> usize {
    (config.release.per_category as f64 * config.author.oversample).ceil() as usize
}

/// The rotation of domains for one category: a seeded shuffle of `author.domains`.
fn domain_rotation(config: &Config, category: Category) -> Vec<String> {
    let mut domains = config.author.domains.clone();
    seeded::shuffle(
        &mut domains,
        &mut seeded::rng(config.release.seed, &format!("domains/{category}")),
    );
    domains
}

/// The validation rules of `config`: the defaults, with the limits the config sets.
pub fn rules(config: &Config) -> Rules {
    Rules {
        max_gold_words: config.author.max_gold_words,
        bloat_factor: config.author.bloat_factor,
        min_prompt_words: Category::ALL
            .into_iter()
            .filter_map(|c| config.category(c).min_prompt_words.map(|words| (c, words)))
            .collect(),
        ..Rules::default()
    }
}

/// Builds the request body: model, messages, sampling, response format, then `extra_body`.
fn body(
    config: &Config,
    templates: &Templates,
    category: Category,
    domain: &str,
    count: usize,
    custom_id: &str,
) -> Value {
    let author = &config.author;
    let count_text = count.to_string();
    let words = author.max_gold_words.to_string();
    let user = templates.categories[&category].render(&[
        ("domain", domain),
        ("count", &count_text),
        ("max_gold_words", &words),
    ]);
    let mut body = json!({
        "model": author.model,
        "messages": [
            {"role": "system", "content": templates.system},
            {"role": "user", "content": user},
        ],
        "temperature": author.temperature,
        "max_tokens": config.category(category).max_tokens.unwrap_or(author.max_tokens),
        "seed": seeded::derive_u32(config.release.seed, custom_id),
    });
    match author.response_format {
        ResponseFormat::None => {}
        ResponseFormat::JsonObject => body["response_format"] = json!({"type": "json_object"}),
        ResponseFormat::JsonSchema => {
            let patterns = match config.api.provider {
                Provider::Local => Patterns::RawJson,
                Provider::Groq | Provider::Openai | Provider::Online | Provider::File => {
                    Patterns::Decoded
                }
            };
            let schema = validate::reply_schema(category, &rules(config), patterns);
            let mut spec = json!({"name": "saseval_items", "schema": schema});
            if author.strict_schema {
                spec["strict"] = json!(true);
            }
            body["response_format"] = json!({"type": "json_schema", "json_schema": spec});
        }
    }
    merge_extra(&mut body, &author.extra_body);
    body
}

/// Merges a `extra_body` TOML table into a request body (its keys win).
pub fn merge_extra(body: &mut Value, extra: &toml::Table) {
    if let (Some(obj), Ok(Value::Object(extra))) =
        (body.as_object_mut(), serde_json::to_value(extra))
    {
        obj.extend(extra);
    }
}

/// Plans `n` more requests for `category` in `round`, continuing its domain rotation.
fn plan(
    config: &Config,
    templates: &Templates,
    category: Category,
    round: u32,
    first_index: usize,
    n: usize,
) -> Vec<AuthorRequest> {
    let rotation = domain_rotation(config, category);
    let count = config.category(category).items_per_request;
    (first_index..first_index + n)
        .map(|index| {
            let domain = rotation[index % rotation.len()].clone();
            let custom_id = format!("author/{category}/r{round}/{index:04}");
            let body = body(config, templates, category, &domain, count, &custom_id);
            AuthorRequest {
                request: Request::new(custom_id, body),
                category,
                domain,
                round,
                index,
                count,
            }
        })
        .collect()
}

/// Round 0: enough requests per category to reach the target if every item were valid.
pub fn plan_round0(config: &Config, templates: &Templates) -> Vec<AuthorRequest> {
    let target = target(config);
    Category::ALL
        .into_iter()
        .flat_map(|category| {
            let n = target.div_ceil(config.category(category).items_per_request);
            plan(config, templates, category, 0, 0, n)
        })
        .collect()
}

/// Round 0 from counts alone: per category and domain, one request standing for the round-0
/// requests that use that domain (they differ only in their seed), so that the cost guard and
/// the dry run need not build a round that may hold millions of requests.
fn round0_samples(config: &Config, templates: &Templates) -> Vec<(Category, Request, usize)> {
    let target = target(config);
    let mut samples = Vec::new();
    for category in Category::ALL {
        let ipr = config.category(category).items_per_request;
        let n = target.div_ceil(ipr);
        let rotation = domain_rotation(config, category);
        for (d, domain) in rotation.iter().enumerate().take(n) {
            let uses = (n - d).div_ceil(rotation.len());
            let custom_id = format!("author/{category}/r0/{d:04}");
            let body = body(config, templates, category, domain, ipr, &custom_id);
            samples.push((category, Request::new(custom_id, body), uses));
        }
    }
    samples
}

/// A top-up round for the categories still short of the target, sized by the yield so far.
fn plan_topup(
    config: &Config,
    templates: &Templates,
    round: u32,
    done: &[AuthorRequest],
    derived: &Derived,
) -> Vec<AuthorRequest> {
    let target = target(config);
    let valid = &derived.valid;
    let mut requests = Vec::new();
    for category in Category::ALL {
        let have = valid.get(&category).copied().unwrap_or(0);
        if have >= target {
            continue;
        }
        let asked: usize = done
            .iter()
            .filter(|r| r.category == category)
            .map(|r| r.count)
            .sum();
        let sent = done.iter().filter(|r| r.category == category).count();
        let ipr = config.category(category).items_per_request;
        let yield_rate = (have as f64 / asked.max(1) as f64).clamp(0.1, 1.0);
        let round0 = target.div_ceil(ipr);
        let n = (((target - have) as f64 / yield_rate / ipr as f64).ceil() as usize)
            .clamp(1, round0.max(1));
        requests.extend(plan(config, templates, category, round, sent, n));
    }
    requests
}

/// Requests parsed and validated together on the worker threads before their results are
/// written in order: large enough to keep the threads busy, small enough to bound memory.
const DERIVE_CHUNK: usize = 256;

/// Parses and validates the outcome of every request (read through `outcome`) into candidates
/// and rejects, streamed to the two writers in (category, round, index) order. Requests are
/// parsed and validated on all cores a chunk at a time; the results are applied in order, so the
/// output does not depend on the thread count.
pub fn derive(
    config: &Config,
    examples: &TemplateExamples,
    requests: &[AuthorRequest],
    outcome: impl Fn(&Request) -> Result<Option<ReplyOutcome>, BatchError> + Sync,
    candidates: &mut jsonl::Writer,
    rejects: &mut jsonl::Writer,
) -> Result<Derived> {
    let rules = rules(config);
    let mut deriver = Deriver {
        rules: &rules,
        derived: Derived {
            valid: Category::ALL.iter().map(|c| (*c, 0)).collect(),
            ..Derived::default()
        },
        plain_words: BTreeMap::new(),
        medians: BTreeMap::new(),
        tally: Tally::default(),
        candidates,
        rejects,
    };
    let mut ordered: Vec<&AuthorRequest> = requests.iter().collect();
    ordered.sort_by_key(|r| (r.category, r.round, r.index));
    let threads = parallel::threads();
    let parse = |chunk: &[&AuthorRequest]| {
        parallel::map(chunk, threads, |r| {
            outcome(&r.request).map(|o| o.map(|o| parse_request(r, &o, &rules, examples)))
        })
    };
    let mut chunks = ordered.chunks(DERIVE_CHUNK);
    parallel::pipelined(
        || Ok::<_, crate::error::Error>(chunks.next()),
        |chunk: &&[&AuthorRequest]| parse(chunk),
        |chunk, parsed| {
            for (r, parsed) in chunk.iter().zip(parsed) {
                deriver.tally.request(r.round, r.category);
                if let Some(parsed) = parsed? {
                    deriver.apply(r, parsed)?;
                }
            }
            Ok(())
        },
    )?;
    let mut derived = deriver.derived;
    derived.yields = deriver.tally.finish(target(config));
    Ok(derived)
}

/// What one request's outcome gave, before the order-dependent bloat check.
struct Parsed {
    usage: Usage,
    items: Vec<Result<Valid, Reject>>,
}

/// A valid item and the words of its prompt, which the bloat check and its baseline count.
struct Valid {
    candidate: Candidate,
    prompt_words: usize,
}

/// Parses and validates one request's outcome; everything but the bloat check, which needs
/// the items of the requests before it.
fn parse_request(
    r: &AuthorRequest,
    outcome: &ReplyOutcome,
    rules: &Rules,
    examples: &TemplateExamples,
) -> Parsed {
    let reject = |reason: &str, detail: String, item_id: Option<String>, raw: &str| Reject {
        stage: "author".into(),
        reason: reason.into(),
        detail,
        category: r.category,
        custom_id: r.request.custom_id.clone(),
        item_id,
        domain: r.domain.clone(),
        round: r.round,
        collided_with: None,
        excerpt: excerpt(raw, 600),
    };
    let body = match outcome {
        OutcomeOf::Ok(body) => body,
        OutcomeOf::Failed(f) => {
            let status = f.status.map(|s| format!(" (HTTP {s})")).unwrap_or_default();
            return Parsed {
                usage: Usage::default(),
                items: vec![Err(reject(
                    "request_failed",
                    format!("{}{status}: {}", f.code, f.message),
                    None,
                    "",
                ))],
            };
        }
    };
    let mut parsed = Parsed {
        usage: Usage::default(),
        items: Vec::new(),
    };
    parsed.usage.add_response(body);
    let reply = body.reply().and_then(|reply| {
        let truncated_by_length = reply.finish_reason.as_deref() == Some("length");
        reply::parse_items(&reply.content).map(|items| (items, truncated_by_length, reply.content))
    });
    let (items, cut, content) = match reply {
        Ok(ok) => ok,
        Err(e) => {
            let raw = body.reply().map(|r| r.content).unwrap_or_default();
            parsed
                .items
                .push(Err(reject(e.code(), e.to_string(), None, &raw)));
            return parsed;
        }
    };
    if items.truncated || cut {
        parsed.items.push(Err(reject(
            "reply_truncated",
            format!(
                "the reply was cut off (max_tokens); {} complete item(s) salvaged of {} asked",
                items.items.len(),
                r.count
            ),
            None,
            &content,
        )));
    }
    for raw in &items.malformed {
        parsed.items.push(Err(reject(
            "malformed_item",
            "an element of the items array is not valid JSON".into(),
            None,
            raw,
        )));
    }
    for (k, value) in items.items.iter().enumerate() {
        let id = format!("{}.r{}.{:04}.{k}", r.category, r.round, r.index);
        let checked = validate::fields_from_value(r.category, value).and_then(|fields| {
            validate::check_item(r.category, &fields, rules)?;
            examples.check(r.category, &fields.prompt)?;
            Ok(fields)
        });
        parsed.items.push(match checked {
            Ok(fields) => Ok(Valid {
                prompt_words: validate::word_count(&fields.prompt),
                candidate: Candidate {
                    id,
                    category: r.category,
                    domain: r.domain.clone(),
                    prompt: fields.prompt,
                    golds: fields.golds,
                    durable: fields.durable,
                    stale: fields.stale,
                    custom_id: r.request.custom_id.clone(),
                    model: r.request.model().to_string(),
                    round: r.round,
                    gold_repaired: false,
                    needs_review: false,
                },
            }),
            Err(rejection) => Err(reject(
                rejection.reason.code(),
                rejection.detail,
                Some(id),
                &value.to_string(),
            )),
        });
    }
    parsed
}

/// The order-dependent part of a derivation: the bloat check, the counts and the writes.
struct Deriver<'w> {
    rules: &'w Rules,
    derived: Derived,
    /// Word counts of the valid plain items, by category: the bloat check's baseline.
    plain_words: BTreeMap<Category, Vec<usize>>,
    medians: BTreeMap<Category, Option<f64>>,
    tally: Tally,
    candidates: &'w mut jsonl::Writer,
    rejects: &'w mut jsonl::Writer,
}

/// The plain category whose prompts a bloated category's must clearly outgrow.
fn plain_twin(category: Category) -> Option<Category> {
    match category {
        Category::BloatedFactual => Some(Category::SimpleFactual),
        Category::BloatedReasoning => Some(Category::Reasoning),
        _ => None,
    }
}

impl Deriver<'_> {
    fn apply(&mut self, r: &AuthorRequest, parsed: Parsed) -> Result<()> {
        self.derived.usage.add(parsed.usage);
        for item in parsed.items {
            match item {
                Ok(Valid {
                    candidate: c,
                    prompt_words,
                }) => match self.check_bloated(c.category, prompt_words) {
                    Ok(()) => self.candidate(c, prompt_words)?,
                    Err(rejection) => self.reject(&Reject {
                        stage: "author".into(),
                        reason: rejection.reason.code().into(),
                        detail: rejection.detail,
                        category: c.category,
                        custom_id: r.request.custom_id.clone(),
                        item_id: Some(c.id.clone()),
                        domain: c.domain.clone(),
                        round: c.round,
                        collided_with: None,
                        excerpt: excerpt(&c.prompt, 600),
                    })?,
                },
                Err(reject) => self.reject(&reject)?,
            }
        }
        Ok(())
    }

    /// Bloated prompts must be clearly longer than the median of their plain twins, which sort
    /// (and so are all derived) before them.
    fn check_bloated(
        &mut self,
        category: Category,
        prompt_words: usize,
    ) -> Result<(), validate::Rejection> {
        let Some(twin) = plain_twin(category) else {
            return Ok(());
        };
        let plain_words = &self.plain_words;
        let median = *self
            .medians
            .entry(twin)
            .or_insert_with(|| median(plain_words.get(&twin).map_or(&[], Vec::as_slice)));
        validate::check_bloated(prompt_words, median, self.rules)
    }

    fn candidate(&mut self, c: Candidate, prompt_words: usize) -> Result<()> {
        if Category::ALL
            .iter()
            .any(|b| plain_twin(*b) == Some(c.category))
        {
            self.plain_words
                .entry(c.category)
                .or_default()
                .push(prompt_words);
        }
        *self.derived.valid.entry(c.category).or_default() += 1;
        self.tally.valid(c.round, c.category);
        self.candidates.push(&c)?;
        Ok(())
    }

    fn reject(&mut self, r: &Reject) -> Result<()> {
        *self
            .derived
            .reject_reasons
            .entry(r.reason.clone())
            .or_default() += 1;
        self.tally.reject(
            r.round,
            r.category,
            &r.reason,
            Example {
                code: r.reason.clone(),
                detail: r.detail.clone(),
                excerpt: r.excerpt.clone(),
            },
        );
        self.rejects.push(r)?;
        Ok(())
    }
}

fn median(values: &[usize]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let mid = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 {
        sorted[mid] as f64
    } else {
        (sorted[mid - 1] + sorted[mid]) as f64 / 2.0
    })
}

/// Runs the stage: round 0, then top-ups until every category reaches its target or
/// `author.max_rounds` is spent. Writes authored.jsonl and rejects.jsonl after every round.
pub async fn run(ctx: &mut Ctx<'_>, templates: &Templates) -> Result<StageEnd> {
    let config = ctx.config;
    let guard = CostGuard {
        max_cost_usd: config.author.max_cost_usd,
        cost_key: "author.max_cost_usd",
    };
    let samples: Vec<(Request, usize)> = round0_samples(config, templates)
        .into_iter()
        .map(|(_, r, n)| (r, n))
        .collect();
    check_planned(config, &samples, &guard)?;
    let examples = TemplateExamples::of(templates, config.assemble.near_dup_threshold)?;
    let mut all: Vec<AuthorRequest> = Vec::new();
    let mut round_requests = plan_round0(config, templates);
    let mut derived;
    let mut round = 0;
    loop {
        let requests: Vec<Request> = round_requests.iter().map(|r| r.request.clone()).collect();
        let result = ctx
            .runner
            .run(&format!("author-r{round}"), &requests, &guard)
            .await?;
        all.append(&mut round_requests);
        derived = write_outputs(ctx, &examples, &all)?;
        if result.waiting == 0 {
            report_round(ctx, &derived, round);
        }
        if result.waiting > 0 {
            ctx.printer.note(format!(
                "author: round {round} waits for {} request(s); re-run `saseval-gen author` to continue",
                result.waiting
            ));
            return Ok(StageEnd::Waiting);
        }
        round += 1;
        if round >= config.author.max_rounds {
            break;
        }
        round_requests = plan_topup(config, templates, round, &all, &derived);
        if round_requests.is_empty() {
            break;
        }
        ctx.printer.note(format!(
            "author: top-up round {round}: {} request(s) for the categories short of {} valid items",
            round_requests.len(),
            target(config)
        ));
    }
    summarize(ctx, &derived);
    Ok(StageEnd::Done)
}

/// Derives authored.jsonl and rejects.jsonl afresh from every request's cached outcome.
fn write_outputs(
    ctx: &Ctx<'_>,
    examples: &TemplateExamples,
    requests: &[AuthorRequest],
) -> Result<Derived> {
    let mut candidates = jsonl::Writer::create(&ctx.out(AUTHORED))?;
    let mut rejects = jsonl::Writer::create(&ctx.out(REJECTS))?;
    let runner = &ctx.runner;
    let derived = derive(
        ctx.config,
        examples,
        requests,
        |r| runner.outcome(r),
        &mut candidates,
        &mut rejects,
    )?;
    candidates.commit()?;
    rejects.commit()?;
    super::write_usage(ctx, "author", derived.usage)?;
    let summary = serde_json::json!({"rounds": derived.yields});
    super::write_json(&ctx.out(AUTHOR_SUMMARY), AUTHOR_SUMMARY, &summary)?;
    Ok(derived)
}

/// Prints what `round` yielded per category and a hint for every category it left far short.
fn report_round(ctx: &Ctx<'_>, derived: &Derived, round: u32) {
    let Some(this) = derived.yields.iter().find(|y| y.round == round) else {
        return;
    };
    ctx.printer.out(yields::render(this));
    for hint in yields::hints(this) {
        ctx.printer.out(hint);
    }
}

fn summarize(ctx: &Ctx<'_>, derived: &Derived) {
    let target = target(ctx.config);
    let valid = &derived.valid;
    let mut lines = vec![format!(
        "author: valid items per category (target {target}):"
    )];
    for (category, n) in valid {
        let mark = if *n >= target { "" } else { "  (short)" };
        lines.push(format!("  {category:<20} {n:>5}{mark}"));
    }
    let reasons = &derived.reject_reasons;
    if !reasons.is_empty() {
        lines.push(format!(
            "author: {} reject(s) in {}:",
            reasons.values().sum::<usize>(),
            REJECTS
        ));
        for (reason, n) in reasons {
            lines.push(format!("  {reason:<24} {n:>5}"));
        }
    }
    ctx.printer.out(lines.join("\n"));
}

/// `--dry-run`: round 0's requests per category with token and cost estimates, computed from
/// counts (no round is built); sends nothing.
pub fn dry_run(config: &Config, templates: &Templates) -> Result<String, BatchError> {
    let samples = round0_samples(config, templates);
    let mut lines = vec![format!(
        "author dry run (round 0, model {}, provider {}):",
        config.author.model, config.api.provider
    )];
    lines.push(super::plan::table_header(false));
    let row = |name: &str, of: &mut dyn Iterator<Item = &(Category, Request, usize)>| {
        let of: Vec<(&Request, u64)> = of.map(|(_, r, n)| (r, *n as u64)).collect();
        let requests: u64 = of.iter().map(|(_, n)| n).sum();
        let est = estimate_weighted(config, of);
        (super::plan::table_row(name, requests, None, &est), est)
    };
    for category in Category::ALL {
        let (line, _) = row(
            category.name(),
            &mut samples.iter().filter(|(c, _, _)| *c == category),
        );
        lines.push(line);
    }
    let (line, est) = row("total", &mut samples.iter());
    lines.push(line);
    if !est.priced {
        lines.push(format!(
            "  note: no price for model {} in [prices]; its cost counts as 0",
            config.author.model
        ));
    }
    lines.push(format!(
        "  worst case: every reply uses max_tokens; batch discount {:.0}% applied; limit author.max_cost_usd = {:.2}",
        config.api.batch_discount * 100.0,
        config.author.max_cost_usd
    ));
    let guard = CostGuard {
        max_cost_usd: config.author.max_cost_usd,
        cost_key: "author.max_cost_usd",
    };
    let weighted: Vec<(Request, usize)> = samples.into_iter().map(|(_, r, n)| (r, n)).collect();
    if let Err(refusal) = check_planned(config, &weighted, &guard) {
        lines.push(format!("  a run would stop here: {refusal}"));
    }
    Ok(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A provider's prompt cache (and the local engine's kept KV cache) reuses only the prefix
    /// two requests share, so the shipped templates name the domain and the count last.
    #[test]
    fn requests_of_one_category_differ_only_in_their_last_line() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let config = Config::load(&root.join("pipeline.toml"), &[]).unwrap();
        let templates = Templates::load(&root.join("prompts")).unwrap();
        let requests = plan_round0(&config, &templates);
        for category in Category::ALL {
            let users: Vec<&str> = requests
                .iter()
                .filter(|r| r.category == category)
                .map(|r| r.request.body()["messages"][1]["content"].as_str().unwrap())
                .take(2)
                .collect();
            let [first, second] = users[..] else {
                panic!("{category}: round 0 plans fewer than two requests");
            };
            assert_ne!(first, second, "{category}");
            let shared = first
                .char_indices()
                .zip(second.chars())
                .find(|((_, a), b)| a != b)
                .map_or(first.len(), |((at, _), _)| at);
            let rest = first[shared..].trim_end();
            let before: Vec<char> = first[..shared].chars().rev().take(60).collect();
            assert!(
                !rest.contains('\n') && rest.len() < 80,
                "{category}: the requests part after {:?}",
                before.iter().rev().collect::<String>()
            );
        }
    }

    #[test]
    fn json_schema_requests_carry_the_validation_rules_and_strict_only_on_request() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let load = |strict: bool| {
            let sets = [
                "author.response_format=\"json_schema\"".to_string(),
                format!("author.strict_schema={strict}"),
                "categories.conversational.min_prompt_words=33".to_string(),
            ];
            Config::load(&root.join("pipeline.toml"), &sets).unwrap()
        };
        let templates = Templates::load(&root.join("prompts")).unwrap();
        for strict in [false, true] {
            let config = load(strict);
            let requests = plan_round0(&config, &templates);
            let dialog = requests
                .iter()
                .find(|r| r.category == Category::Conversational)
                .unwrap();
            let spec = &dialog.request.body()["response_format"]["json_schema"];
            assert_eq!(
                spec["schema"],
                validate::reply_schema(
                    Category::Conversational,
                    &rules(&config),
                    Patterns::Decoded
                )
            );
            assert!(spec["schema"].to_string().contains("{132,}"), "{spec}");
            assert_eq!(spec.get("strict"), strict.then_some(&json!(true)));
        }
        let local = Config::load(
            &root.join("pipeline.toml"),
            &[
                "author.response_format=\"json_schema\"".to_string(),
                "api.provider=\"local\"".to_string(),
            ],
        )
        .unwrap();
        let requests = plan_round0(&local, &templates);
        let dialog = requests
            .iter()
            .find(|r| r.category == Category::Conversational)
            .unwrap();
        assert_eq!(
            dialog.request.body()["response_format"]["json_schema"]["schema"],
            validate::reply_schema(Category::Conversational, &rules(&local), Patterns::RawJson),
            "the local grammar reads patterns on raw JSON text"
        );
    }

    #[test]
    fn plain_categories_sort_before_their_bloated_twins() {
        for bloated in Category::ALL {
            if let Some(plain) = plain_twin(bloated) {
                assert!(plain < bloated, "{plain} must be derived before {bloated}");
            }
        }
    }
}
