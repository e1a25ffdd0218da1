//! The author stage: renders one authoring request per (category, domain) slot from the
//! templates with a seeded domain rotation, runs them through the batch runner, parses and
//! validates every item on its own, and tops up short categories in further rounds.

use super::plan::target;
use super::rounds::{Rounds, Slice};
use super::{Ctx, StageEnd, AUTHORED, AUTHOR_SUMMARY, REJECTS};
use crate::config::{Config, Provider, ResponseFormat};
use crate::error::Result;
use crate::quality::dedup::{DupKind, ReferenceSet};
use crate::quality::grade::graded_words;
use crate::quality::panel::has_context;
use crate::quality::validate::{self, ExampleLayout, Patterns, Reason, Rejection, Rules};
use crate::runner::{
    check_planned, estimate_cost, estimate_weighted, BatchError, CostEstimate, CostGuard,
    OutcomeOf, ReplyOutcome, Request,
};
use crate::stages::item::{excerpt, Candidate, Category, Reject};
use crate::stages::reply;
use crate::stages::templates::Templates;
use crate::stages::yields::{self, Example, RoundYield, Tally};
use crate::util::jsonl;
use crate::util::parallel;
use crate::util::seeded;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One round's authoring requests, by category.
pub type Plan = BTreeMap<Category, Slice>;

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
    /// Valid items and rejects by round and category.
    pub yields: Vec<RoundYield>,
}

/// The example item of each category template, which an authored item must not copy. A copy is
/// rejected here, where a top-up round can still replace it; assemble drops it too, but only
/// after repair and audit have paid for it and with no round left to fill its place.
pub struct TemplateExamples {
    by_category: BTreeMap<Category, ReferenceSet>,
    /// The question of each example whose prompt sets a scene before it (a context, or code):
    /// an item that keeps it has retold the example with other names and numbers, whatever its
    /// whole prompt's similarity.
    questions: BTreeMap<Category, ReferenceSet>,
    /// The stored facts of each memory template's example: an item that keeps them with one
    /// changed has copied the example, whatever question it asks.
    stored_facts: BTreeMap<Category, Vec<Vec<String>>>,
    /// The keys of each memory template's example: an item that keeps every one of them has
    /// filled the example's own block with other values.
    stored_keys: BTreeMap<Category, Vec<Vec<String>>>,
    /// The opening clause of each of those example questions (`Under the approved
    /// standard and the board's decision,`): an item whose question opens with it has written
    /// its context to fit the example's frame.
    opening_clauses: BTreeMap<Category, Vec<Vec<String>>>,
    /// The golds of each example, as the grader reads them: an item whose golds hold every one
    /// of an example's has kept the example's answer, the topic the template says not to reuse.
    golds: BTreeMap<Category, Vec<BTreeSet<String>>>,
    /// The words of each example prompt of at least [`MIN_RETOLD_WORDS`] words, as the grader
    /// reads them: an item that keeps [`RETOLD_SHARE`] of them in their order has retold the
    /// example with other names, whatever its similarity.
    wordings: BTreeMap<Category, Vec<Vec<String>>>,
}

/// Share of an example prompt's words, in their order, that marks an item keeping them as a
/// retelling (`Can we trigger an extra backup by hand before a maintenance window?` for the
/// example's `…an extra refresh by hand before a release?`, every turn so). Read on three seeds
/// of the 1.5B author: retellings kept 0.48–1.0 of their example's words, and every item that
/// was not one at most 0.35.
const RETOLD_SHARE: f64 = 0.45;

/// Fewest words an example prompt has for [`RETOLD_SHARE`] to mark a retelling: a one-line
/// question's frame (`What is the default port for … under RFC …?`) is common to real questions.
const MIN_RETOLD_WORDS: usize = 40;

/// Consecutive words of a template example that an item repeating them verbatim has copied: a
/// passage, not a shared phrase. In the 123 distinct items that passed the gate in this
/// machine's measured runs, the longest run shared with the example was 10 words, but for three
/// items that had copied a 33-word passage (a postmortem's Impact paragraph, a cluster note).
const COPIED_PASSAGE_WORDS: usize = 15;

/// The most consecutive words `theirs` and `ours` share (their longest common run).
fn longest_shared_run(theirs: &[String], ours: &[String]) -> usize {
    let mut row = vec![0; ours.len() + 1];
    let mut longest = 0;
    for word in theirs {
        for j in (0..ours.len()).rev() {
            row[j + 1] = if *word == ours[j] { row[j] + 1 } else { 0 };
            longest = longest.max(row[j + 1]);
        }
    }
    longest
}

/// How many of `theirs` words `ours` keeps in their order (the longest common subsequence).
fn kept_in_order(theirs: &[String], ours: &[String]) -> usize {
    let mut row = vec![0; ours.len() + 1];
    for word in theirs {
        let mut diagonal = 0;
        for (j, our) in ours.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if word == our {
                diagonal + 1
            } else {
                above.max(row[j])
            };
            diagonal = above;
        }
    }
    row[ours.len()]
}

/// Fewest distinct golds an example has for keeping them all to mark a copy: one short gold
/// (`12`) is too common an answer to tell.
const MIN_EXAMPLE_GOLDS: usize = 2;

/// `golds` as the grader reads them, each once.
fn graded_golds<S: AsRef<str>>(golds: &[S]) -> BTreeSet<String> {
    golds
        .iter()
        .map(|gold| {
            crate::quality::grade::norm(gold.as_ref())
                .trim()
                .to_string()
        })
        .filter(|gold| !gold.is_empty())
        .collect()
}

/// Fewest of its example's facts a memory block repeats, all of them but one at most, to be a
/// copy of the example.
const MIN_REPEATED_FACTS: usize = 3;

/// Fewest words an example question's opening clause has for a question opening with it to be
/// a copy, and the share of them, word for word in place, that makes it one.
const MIN_CLAUSE_WORDS: usize = 6;
const CLAUSE_SHARE: f64 = 0.75;

/// The words of `question` before its first comma, lower-cased, without the punctuation around
/// them; none when it has no comma.
fn opening_clause(question: &str) -> Vec<String> {
    let Some((clause, _)) = question.split_once(',') else {
        return Vec::new();
    };
    clause
        .split_whitespace()
        .map(|word| {
            word.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|word| !word.is_empty())
        .collect()
}

impl TemplateExamples {
    /// The examples of `templates`, compared by the release's near-duplicate `threshold`.
    pub fn of(templates: &Templates, threshold: f64) -> Result<TemplateExamples> {
        let mut by_category = BTreeMap::new();
        let mut questions = BTreeMap::new();
        let mut stored_facts = BTreeMap::new();
        let mut stored_keys = BTreeMap::new();
        let mut opening_clauses = BTreeMap::new();
        let mut golds = BTreeMap::new();
        let mut wordings = BTreeMap::new();
        for (category, template) in &templates.categories {
            let prompts = template.example_prompts();
            let long: Vec<Vec<String>> = prompts
                .iter()
                .map(|p| graded_words(p))
                .filter(|words| words.len() >= MIN_RETOLD_WORDS)
                .collect();
            wordings.insert(*category, long);
            let answers: Vec<BTreeSet<String>> = template
                .example_golds()
                .iter()
                .map(|g| graded_golds(g))
                .filter(|g| g.len() >= MIN_EXAMPLE_GOLDS)
                .collect();
            golds.insert(*category, answers);
            if category.is_memory() {
                let facts = prompts.iter().map(|p| validate::stored_facts(p)).collect();
                stored_facts.insert(*category, facts);
                let keys = prompts.iter().map(|p| validate::stored_keys(p)).collect();
                stored_keys.insert(*category, keys);
            }
            if sets_a_scene(*category) {
                let asked: Vec<String> = prompts
                    .iter()
                    .filter_map(|p| question_of(*category, p, &Rules::default()))
                    .map(str::to_owned)
                    .collect();
                let clauses = asked
                    .iter()
                    .map(|question| opening_clause(question))
                    .filter(|clause| clause.len() >= MIN_CLAUSE_WORDS)
                    .collect();
                opening_clauses.insert(*category, clauses);
                questions.insert(*category, ReferenceSet::new(&asked, threshold)?);
            }
            by_category.insert(*category, ReferenceSet::new(&prompts, threshold)?);
        }
        Ok(TemplateExamples {
            by_category,
            questions,
            stored_facts,
            stored_keys,
            opening_clauses,
            golds,
            wordings,
        })
    }

    /// Rejects an item that copies its template's example: one of its parts first, each named,
    /// then its wording as a whole.
    fn check(&self, category: Category, prompt: &str, golds: &[String]) -> Result<(), Rejection> {
        self.check_parts(category, prompt, golds)?;
        let ours = graded_words(prompt);
        let example = crate::stages::templates::example_item_name(category);
        let examples = self.wordings.get(&category).map_or(&[][..], Vec::as_slice);
        let copied = |detail: String| {
            Err(Rejection {
                reason: Reason::CopiesTemplateExample,
                detail,
            })
        };
        if let Some((kept, of)) = examples.iter().find_map(|theirs| {
            let kept = kept_in_order(theirs, &ours);
            (kept as f64 >= RETOLD_SHARE * theirs.len() as f64).then_some((kept, theirs.len()))
        }) {
            return copied(format!(
                "the prompt keeps {kept} of the {of} words of {example} in their order: a \
                 retelling with other names"
            ));
        }
        match examples
            .iter()
            .map(|theirs| longest_shared_run(theirs, &ours))
            .find(|run| *run >= COPIED_PASSAGE_WORDS)
        {
            Some(run) => copied(format!(
                "the prompt repeats {run} consecutive words of {example} verbatim: a passage \
                 copied into it"
            )),
            None => Ok(()),
        }
    }

    fn check_parts(
        &self,
        category: Category,
        prompt: &str,
        golds: &[String],
    ) -> Result<(), Rejection> {
        let example = crate::stages::templates::example_item_name(category);
        let copied = |detail: String| {
            Err(Rejection {
                reason: Reason::CopiesTemplateExample,
                detail,
            })
        };
        if let Some((_, kind)) = self
            .by_category
            .get(&category)
            .and_then(|set| set.duplicated(prompt))
        {
            return copied(match kind {
                DupKind::Exact => format!("the prompt is {example} after normalisation"),
                DupKind::Near { similarity } => format!(
                    "the prompt is a near duplicate (similarity {similarity:.2}) of {example}"
                ),
            });
        }
        let asked = question_of(category, prompt, &Rules::default());
        if let Some((_, kind)) = self
            .questions
            .get(&category)
            .zip(asked)
            .and_then(|(set, asked)| set.duplicated(asked))
        {
            return copied(match kind {
                DupKind::Exact => format!("the question is the question of {example}"),
                DupKind::Near { similarity } => format!(
                    "the question is a near duplicate (similarity {similarity:.2}) of the question of {example}"
                ),
            });
        }
        let graded = graded_golds(golds);
        if let Some(theirs) = self
            .golds
            .get(&category)
            .and_then(|examples| examples.iter().find(|theirs| theirs.is_subset(&graded)))
        {
            let theirs: Vec<&str> = theirs.iter().map(String::as_str).collect();
            return copied(format!(
                "the golds hold every gold of {example} ({}): its answer, and so its topic",
                theirs.join(", ")
            ));
        }
        let clause = asked.map(opening_clause).unwrap_or_default();
        if let Some((theirs, changed)) = self.opening_clauses.get(&category).and_then(|examples| {
            examples.iter().find_map(|theirs| {
                let changed = theirs.iter().zip(&clause).filter(|(a, b)| a != b).count();
                let same = theirs.len() - changed;
                (theirs.len() == clause.len() && same as f64 >= CLAUSE_SHARE * theirs.len() as f64)
                    .then_some((theirs, changed))
            })
        }) {
            return copied(format!(
                "the question opens with the clause \"{}\" of the question of {example}, with \
                 {changed} of its {} words changed",
                theirs.join(" "),
                theirs.len()
            ));
        }
        let Some(examples) = self.stored_facts.get(&category) else {
            return Ok(());
        };
        let facts = validate::stored_facts(prompt);
        if let Some((repeated, of)) = examples.iter().find_map(|theirs| {
            let repeated = theirs.iter().filter(|fact| facts.contains(fact)).count();
            (repeated >= MIN_REPEATED_FACTS && repeated + 1 >= theirs.len())
                .then_some((repeated, theirs.len()))
        }) {
            return copied(format!(
                "the memory block repeats {repeated} of the {of} facts of the memory block of \
                 {example}"
            ));
        }
        let keys = validate::stored_keys(prompt);
        match self.stored_keys.get(&category).and_then(|examples| {
            examples.iter().find(|theirs| {
                theirs.len() >= MIN_REPEATED_FACTS && theirs.iter().all(|key| keys.contains(key))
            })
        }) {
            Some(theirs) => copied(format!(
                "the memory block has every key of the memory block of {example} ({}), with \
                 other values",
                theirs.join(", ")
            )),
            None => Ok(()),
        }
    }
}

/// Whether a category's prompt sets a scene (a document, snippets, a dialog, stored facts, code)
/// before its question, so that its example's question can be kept while the scene is retold.
fn sets_a_scene(category: Category) -> bool {
    has_context(category) || category == Category::TechnicalCode
}

/// The question of a context category's prompt, when its structure is recognised.
pub fn question_of<'p>(category: Category, prompt: &'p str, rules: &Rules) -> Option<&'p str> {
    validate::structure(category, prompt, rules)
        .ok()
        .map(|structure| structure.question.trim())
        .filter(|question| !question.is_empty())
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
        "max_tokens": config.author_max_tokens(category),
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
            let layout = example_layout(templates, category);
            let schema =
                validate::reply_schema(category, &rules(config), patterns, layout.as_ref());
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

/// The dialog or memory layout the example item of `category`'s template shows.
fn example_layout(templates: &Templates, category: Category) -> Option<ExampleLayout> {
    let examples = templates.categories.get(&category)?.example_prompts();
    ExampleLayout::of_example(category, examples.first()?)
}

/// The requests of `slice` of `category` in `round`, continuing its domain rotation.
fn slice_requests(
    config: &Config,
    templates: &Templates,
    category: Category,
    round: u32,
    slice: Slice,
) -> Vec<AuthorRequest> {
    let rotation = domain_rotation(config, category);
    let count = config.category(category).items_per_request;
    (slice.first..slice.first + slice.requests)
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

/// Round 0's plan: enough requests per category to reach the target if every item were valid,
/// for every category the run asks (see [`crate::config::CategoryConfig::is_asked`]).
pub fn round0_plan(config: &Config) -> Plan {
    let target = target(config);
    Category::ALL
        .into_iter()
        .filter(|category| config.category(*category).is_asked())
        .map(|category| {
            let requests = target.div_ceil(config.category(category).items_per_request);
            (category, Slice { first: 0, requests })
        })
        .collect()
}

/// The requests of every round in `plans` (round k is `plans[k]`), round by round.
pub fn requests_of(config: &Config, templates: &Templates, plans: &[&Plan]) -> Vec<AuthorRequest> {
    let mut requests = Vec::new();
    for (round, plan) in plans.iter().enumerate() {
        for (category, slice) in plan.iter() {
            requests.extend(slice_requests(
                config,
                templates,
                *category,
                round as u32,
                *slice,
            ));
        }
    }
    requests
}

/// Round 0's requests.
pub fn plan_round0(config: &Config, templates: &Templates) -> Vec<AuthorRequest> {
    requests_of(config, templates, &[&round0_plan(config)])
}

/// Where `category`'s next request starts in its domain rotation after the rounds of `plans`.
pub fn next_first(plans: &[&Plan], category: Category) -> usize {
    plans
        .iter()
        .filter_map(|plan| plan.get(&category))
        .map(|slice| slice.first + slice.requests)
        .max()
        .unwrap_or(0)
}

/// Round 0 from counts alone: per category and domain, one request standing for the round-0
/// requests that use that domain (they differ only in their seed), so that the cost guard and
/// the dry run need not build a round that may hold millions of requests.
fn round0_samples(config: &Config, templates: &Templates) -> Vec<(Category, Request, usize)> {
    let mut samples = Vec::new();
    for (category, Slice { requests: n, .. }) in round0_plan(config) {
        let ipr = config.category(category).items_per_request;
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

/// The worst-case cost of one authoring request of `category` (its first domain's).
pub fn request_cost(config: &Config, templates: &Templates, category: Category) -> CostEstimate {
    let sample = slice_requests(
        config,
        templates,
        category,
        0,
        Slice {
            first: 0,
            requests: 1,
        },
    );
    estimate_cost(config, sample.iter().map(|r| &r.request))
}

/// The guard of the author stage, with what `earlier` requests already cost counted against it.
fn guard(ctx: &Ctx<'_>, earlier: &[&Request]) -> Result<CostGuard> {
    let spent = ctx.runner.usage(earlier.iter().copied())?;
    Ok(CostGuard::new(
        ctx.config.author.max_cost_usd,
        "author.max_cost_usd",
        spent.cost_usd,
    ))
}

/// Refuses round 0 from its counts when it is over a limit, before it is built.
pub fn check_round0(config: &Config, templates: &Templates) -> Result<()> {
    let samples: Vec<(Request, usize)> = round0_samples(config, templates)
        .into_iter()
        .map(|(_, r, n)| (r, n))
        .collect();
    let guard = CostGuard::new(config.author.max_cost_usd, "author.max_cost_usd", 0.0);
    check_planned(config, &samples, &guard)?;
    Ok(())
}

/// Refuses the requests of round `round` of `plans` when what the stage spent in the rounds
/// before plus their worst case is over `author.max_cost_usd`.
pub fn check_round(
    ctx: &Ctx<'_>,
    templates: &Templates,
    plans: &[&Plan],
    round: usize,
) -> Result<()> {
    let all = requests_of(ctx.config, templates, &plans[..=round]);
    let (earlier, this): (Vec<&AuthorRequest>, Vec<&AuthorRequest>) =
        all.iter().partition(|r| (r.round as usize) < round);
    let earlier: Vec<&Request> = earlier.iter().map(|r| &r.request).collect();
    let this: Vec<&Request> = this.iter().map(|r| &r.request).collect();
    crate::runner::check_guard(ctx.config, &this, &guard(ctx, &earlier)?)?;
    Ok(())
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
                deriver.tally.request(r.round, r.category, r.count);
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
                items: vec![Err(reject(
                    "request_failed",
                    format!("{}{status}: {}", f.code, f.message),
                    None,
                    "",
                ))],
            };
        }
    };
    let mut parsed = Parsed { items: Vec::new() };
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
            let kept = validate::check_item(r.category, fields, rules)?;
            examples.check(r.category, &kept.item.prompt, &kept.item.golds)?;
            Ok(kept)
        });
        let item = match checked {
            Ok(validate::Kept {
                item: fields,
                dropped,
            }) => {
                for gold in dropped {
                    parsed.items.push(Err(reject(
                        Reason::GoldVariantDropped.code(),
                        gold.detail,
                        Some(id.clone()),
                        &value.to_string(),
                    )));
                }
                Ok(Valid {
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
                })
            }
            Err(rejection) => Err(reject(
                rejection.reason.code(),
                rejection.detail,
                Some(id),
                &value.to_string(),
            )),
        };
        parsed.items.push(item);
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
        self.rejects.push(r)?;
        if !Reason::is_loss(&r.reason) {
            return Ok(());
        }
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

/// Runs round `round` of `plans` (its job is `author-r<round>`), then derives authored.jsonl
/// and rejects.jsonl from every round up to it. `None` while some of its requests still wait.
pub async fn run_round(
    ctx: &mut Ctx<'_>,
    templates: &Templates,
    examples: &TemplateExamples,
    plans: &[&Plan],
    round: usize,
) -> Result<Option<Derived>> {
    let all = requests_of(ctx.config, templates, &plans[..=round]);
    let (earlier, this): (Vec<&AuthorRequest>, Vec<&AuthorRequest>) =
        all.iter().partition(|r| (r.round as usize) < round);
    let earlier: Vec<&Request> = earlier.iter().map(|r| &r.request).collect();
    let guard = guard(ctx, &earlier)?;
    let this: Vec<Request> = this.iter().map(|r| r.request.clone()).collect();
    let result = ctx
        .runner
        .run(&format!("author-r{round}"), &this, &guard)
        .await?;
    let derived = write_outputs(ctx, examples, &all)?;
    if result.waiting > 0 {
        ctx.printer.note(format!(
            "author: round {round} waits for {} request(s); re-run the same command to continue",
            result.waiting
        ));
        return Ok(None);
    }
    report_round(ctx, &derived, round as u32);
    Ok(Some(derived))
}

/// The `author` command: the rounds the loop has planned in this out dir (round 0 on a fresh
/// one, which it records). Topping up short categories is the loop's work (`run`), which
/// sizes each round by what survived the later stages.
pub async fn run(ctx: &mut Ctx<'_>, templates: &Templates) -> Result<StageEnd> {
    let mut rounds = Rounds::load(ctx.out_dir())?;
    if rounds.rounds.is_empty() {
        check_round0(ctx.config, templates)?;
        rounds.rounds.push(super::rounds::Round {
            round: 0,
            plan: round0_plan(ctx.config),
            evaluation: None,
        });
        rounds.save(ctx.out_dir())?;
    }
    let examples = TemplateExamples::of(templates, ctx.config.assemble.near_dup_threshold)?;
    let plans = rounds.plans();
    let mut derived = None;
    for round in 0..plans.len() {
        match run_round(ctx, templates, &examples, &plans, round).await? {
            Some(d) => derived = Some(d),
            None => return Ok(StageEnd::Waiting),
        }
    }
    if let Some(derived) = derived {
        summarize(ctx, &derived);
    }
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
    super::write_usage(ctx, "author", requests.iter().map(|r| &r.request))?;
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
        let mark = if !ctx.config.category(*category).is_asked() {
            "  (not asked: prior_survival 0)"
        } else if *n >= target {
            ""
        } else {
            "  (short)"
        };
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
    let guard = CostGuard::new(config.author.max_cost_usd, "author.max_cost_usd", 0.0);
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
                    Patterns::Decoded,
                    None
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
        let layout = example_layout(&templates, Category::Conversational);
        let schema = &dialog.request.body()["response_format"]["json_schema"]["schema"];
        assert_eq!(
            schema,
            &validate::reply_schema(
                Category::Conversational,
                &rules(&local),
                Patterns::RawJson,
                layout.as_ref()
            ),
            "the local grammar reads patterns on raw JSON text"
        );
        assert!(
            schema.to_string().contains(r"^Customer: "),
            "the local grammar keeps the template example's layout: {schema}"
        );
    }

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    /// The example items of the bundled templates in `prompts/`.
    fn bundled_examples() -> TemplateExamples {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let templates = Templates::load(&root.join("prompts")).unwrap();
        TemplateExamples::of(&templates, crate::quality::dedup::DEFAULT_THRESHOLD).unwrap()
    }

    /// Memory items that keep their template example's memory block with one name changed, as
    /// a small model wrote several of them, asking other questions of it.
    #[test]
    fn a_memory_block_copied_from_the_template_example_is_a_copy_whatever_it_asks() {
        let examples = bundled_examples();
        let block = "Memory:\n- tenant: Riverside Family Clinic (HIPAA workspace)\n\
            - sso_provider: Okta\n- password_rotation: 90 days\n\
            - session_idle_timeout: 30 minutes\n- mfa_grace_period: 72 hours\n\
            - audit_log_retention: 6 years\n\nQuestion: ";
        for question in [
            "How often must staff at this clinic change their passwords?",
            "After how long without activity is a signed-in session closed?",
            "How long does the clinic keep its audit logs?",
        ] {
            let copy = examples.check(Category::MemoryRecall, &format!("{block}{question}"), &[]);
            let detail = copy.map_err(|r| (r.reason, r.detail));
            assert!(
                matches!(&detail, Err((Reason::CopiesTemplateExample, d))
                    if d.contains("the memory block of the example item of memory_recall.md")),
                "{question}: {detail:?}"
            );
        }
        let update = "Memory:\n- merchant: Harbor Lane Bakery\n- payout_schedule: weekly, Fridays\n\
            - settlement_currency: USD\n- payout_cutoff: 17:00 ET\n\n\
            Update from Finance Ops (9 July): the payout cutoff moves to 16:00 ET from next week.\n\n\
            Question: What is the latest time adjustments can be sent for the next payout?";
        assert_eq!(
            examples
                .check(Category::MemoryUpdate, update, &[])
                .map_err(|r| r.reason),
            Err(Reason::CopiesTemplateExample)
        );
        let own = "Memory:\n- fleet: Northgate Couriers (regional depot)\n- telematics_vendor: \
            Samsara\n- gps_report_interval: 30 seconds\n- idle_alert_after: 10 minutes\n\
            - data_retention: 13 months\n\nQuestion: How long is telematics data kept?";
        assert_eq!(examples.check(Category::MemoryRecall, own, &[]), Ok(()));
    }

    /// An item the 1.5B author wrote in a measured main job, which the panel passed: the
    /// example's memory block, key for key, with every value but one changed.
    #[test]
    fn a_memory_block_with_every_key_of_the_template_examples_block_is_a_copy() {
        let examples = bundled_examples();
        let refilled = "Memory:\n- tenant: Zebra Telecom (FCC workspace)\n- sso_provider: Okta\n\
            - password_rotation: 180 days\n- session_idle_timeout: 60 minutes\n\
            - mfa_grace_period: 48 hours\n- audit_log_retention: 2 years\n\n\
            Question: A new customer signed up to this tenant last week. How long does their \
            session need to be active before they must enrol a second authentication factor?";
        let detail = examples
            .check(Category::MemoryRecall, refilled, &[])
            .map_err(|r| (r.reason, r.detail));
        assert!(
            matches!(&detail, Err((Reason::CopiesTemplateExample, d))
                if d.contains("every key") && d.contains("mfa_grace_period")),
            "{detail:?}"
        );
        let own_keys = "Memory:\n- tenant: Data Warehouse (AWS)\n- instance_type: m5.large\n\
            - storage_size: 1000 GB\n- region: us-east-1\n- backup_region: us-west-2\n\
            - billing_frequency: monthly\n\nQuestion: What is the storage size of the Data \
            Warehouse instance?";
        assert_eq!(
            examples.check(Category::MemoryRecall, own_keys, &[]),
            Ok(())
        );
    }

    /// Two items the 1.5B author wrote in a measured main job (and the panel passed): each
    /// retells its template's example with other names and numbers and keeps its question, so
    /// the whole prompt stays under the near-duplicate threshold.
    #[test]
    fn an_item_that_keeps_its_template_examples_question_is_a_copy() {
        let examples = bundled_examples();
        let retold = [
            (Category::LongDocumentQa, RETOLD_POSTMORTEM),
            (Category::MemoryUpdate, RETOLD_PAYOUT_UPDATE),
        ];
        for (category, prompt) in retold {
            let detail = examples
                .check(category, prompt, &[])
                .map_err(|r| (r.reason, r.detail));
            assert!(
                matches!(&detail, Err((Reason::CopiesTemplateExample, d)) if d.contains("question")),
                "{category}: {detail:?}"
            );
        }
        let own_question = RETOLD_POSTMORTEM.replace(
            "Which team owns the corrective action that puts a connection pooler in front of the \
             claims database?",
            "Which team owns the alert on total database connections?",
        );
        assert_eq!(
            examples.check_parts(Category::LongDocumentQa, &own_question, &[]),
            Ok(()),
            "the question rule reads the question"
        );
    }

    /// A dialog the 1.5B author wrote on seed 20261206, which the gate and the panel passed into
    /// the main job's release: the conversational example turn for turn, its sandboxes now data
    /// centers and its refreshes backups, under the near-duplicate threshold (similarity 0.41).
    const RETOLD_DIALOG: &str = "Customer: Hi, our telecom company has two data centers, dc1 and \
        dc2. When do their automatic backups run?\nAgent: dc1 backups run every Monday at 02:00 \
        UTC, and dc2 backups run every Wednesday at 04:00 UTC.\nCustomer: Can we trigger an extra \
        backup by hand before a maintenance window?\nAgent: Yes, from Setup > Data Centers you can \
        start a manual backup, limited to two per data center per week.\nCustomer: Great. Our \
        maintenance window runs on the Monday, so what time does its scheduled backup start?";

    /// Two records of measured main jobs that share the most of their example's words in order
    /// (0.35 each), short of a retelling: a code item in the example's shape, and snippets whose
    /// last one is the example's cluster note, which makes them a copy of a passage instead.
    const OWN_CODE_ITEM: &str = "An IT professional (Python 3.9, Flask) occasionally struggles to \
        retrieve customer data from the CRM using a RESTful API:\n\n    def \
        get_customer_data(customer_id):\n        resp = \
        requests.get(f\"{API}/customers/{customer_id}\")\n        resp.raise_for_status()\n        \
        return resp.json()\n\nWhat HTTP status code must be returned to indicate that the \
        customer data could not be found?";
    const OWN_SNIPPETS: &str =
        "[Doc 1] Customer loyalty survey results\nThe survey showed that 55% \
        of customers prefer to contact the customer service team directly. 30% preferred to use \
        the support chat, and 15% preferred to go to the store in person.\n\n[Doc 2] Store \
        opening hours, 3 April\nThe store will open from 9:00 AM to 5:00 PM daily, except for \
        holidays.\n\n[Doc 3] Proposal: new online store features (rejected)\nA proposal to offer \
        free shipping and free returns was reviewed on 3 April and rejected due to high \
        operational costs.\n\n[Doc 4] EU cluster sizing note\nThe EU Kafka cluster will grow from \
        9 to 12 brokers in February; each broker has 4 TB of disk and the replication factor \
        stays at 3.\n\nQuestion: What is the percentage of customers who prefer to contact the \
        customer service team directly?";

    #[test]
    fn an_item_that_keeps_its_template_examples_words_in_order_is_a_retelling() {
        let examples = bundled_examples();
        let retold = examples
            .check(Category::Conversational, RETOLD_DIALOG, &[])
            .map_err(|r| (r.reason, r.detail));
        assert!(
            matches!(&retold, Err((Reason::CopiesTemplateExample, d)) if d.contains("in their order")),
            "{retold:?}"
        );
        assert_eq!(
            examples.check(Category::TechnicalCode, OWN_CODE_ITEM, &[]),
            Ok(())
        );
        let snippets = examples
            .check(Category::MultiDocumentQa, OWN_SNIPPETS, &[])
            .map_err(|r| r.detail);
        assert!(
            !matches!(&snippets, Err(d) if d.contains("in their order")),
            "{snippets:?}"
        );
    }

    /// A long document the 1.5B author wrote in the thirteenth session's main job, which the
    /// panel passed and the release held: its Impact paragraph and third corrective action are
    /// the template example's, word for word, in a telecom outage report. (`OWN_SNIPPETS` holds
    /// the example's cluster note as its last snippet, word for word.)
    const PASSAGE_COPIED: &str = "Incident report: network outages during the summer season\n\nSummary. During the summer months, the telecom company experienced several network outages, affecting the availability of critical services for customers in all regions. The outages occurred between 11:00 and 14:00 UTC on 25 June, and the total duration was approximately 2 hours. The outages affected 10,000 customers, and the company lost 500 customer sessions.\n\nImpact. Customers in all regions were affected. Mobile app users saw a generic \"try again\" banner; web users saw a spinning button for up to 30 seconds before an error page. Support received 600 contacts tagged network during the incident.\n\nRoot cause. The network infrastructure was overloaded due to high traffic during the summer months. The company's network team increased the bandwidth capacity of the affected networks, but the increase did not meet the demand. The network team also increased the number of backup servers, but the increase did not meet the demand.\n\nTimeline. At 11:00 the outages began. At 11:15 the network team increased the bandwidth capacity of the affected networks. At 12:00 the outages continued. At 12:15 the network team increased the number of backup servers. At 13:00 the outages continued. At 13:15 the network team increased the bandwidth capacity of the affected networks. At 14:00 the outages ended.\n\nCorrective actions. (1) Increase the bandwidth capacity of the affected networks by 50% and add 100 additional backup servers. Owner: Network Operations; due 15 June. (2) Increase the number of backup servers by 200 and add 50 additional backup servers. Owner: Network Operations; due 20 June. (3) Require a load forecast from Marketing for any campaign expected to double traffic; owner: Growth Engineering; due 21 June.\n\nQuestion: Which team is responsible for increasing the bandwidth capacity of the affected networks?";

    #[test]
    fn an_item_that_repeats_a_passage_of_its_template_example_is_a_copy() {
        let examples = bundled_examples();
        let copied = examples
            .check(Category::LongDocumentQa, PASSAGE_COPIED, &[])
            .map_err(|r| (r.reason, r.detail));
        assert!(
            matches!(&copied, Err((Reason::CopiesTemplateExample, d)) if d.contains("33 consecutive words")),
            "{copied:?}"
        );
        let distractor = examples
            .check(Category::MultiDocumentQa, OWN_SNIPPETS, &[])
            .map_err(|r| (r.reason, r.detail));
        assert!(
            matches!(&distractor, Err((Reason::CopiesTemplateExample, d)) if d.contains("22 consecutive words")),
            "{distractor:?}"
        );
    }

    #[test]
    fn longest_shared_run_counts_consecutive_words_only() {
        let words = |text: &str| graded_words(text);
        assert_eq!(longest_shared_run(&words("a b c d"), &words("x b c y")), 2);
        assert_eq!(longest_shared_run(&words("a b c"), &words("a x b x c")), 1);
        assert_eq!(longest_shared_run(&words("a b"), &[]), 0);
    }

    #[test]
    fn kept_in_order_counts_the_longest_common_subsequence_of_words() {
        let words = |text: &str| graded_words(text);
        assert_eq!(kept_in_order(&words("a b c d"), &words("a x c y d")), 3);
        assert_eq!(kept_in_order(&words("a b c"), &words("c b a")), 1);
        assert_eq!(kept_in_order(&words("a b"), &[]), 0);
    }

    /// A multi-document item the 1.5B author wrote in a measured main job, which the panel
    /// passed: its question opens with the example question's "Under the approved standard and
    /// the board's decision", and its snippets were written to fit that frame, one giving 12
    /// months and the other 2 years.
    const FRAMED_RETENTION: &str = "[Doc 1] Payment processing system documentation (approved)\nThe payment processing system documentation specifies a maximum of 12 months of data retention for all transactions. The documentation does not indicate any specific retention period for individual transactions.\n\n[Doc 2] e-commerce team meeting, 27 March\nThe team discussed the payment processing system documentation and agreed to retain data for 2 years. This decision was based on the agreement in the meeting minutes.\n\n[Doc 3] Product catalog update, 1 April\nThe product catalog update included a new feature: automatic payment processing. The documentation states that the new feature will not be subject to data retention as long as it does not collect or store sensitive payment information.\n\n[Doc 4] e-commerce cluster sizing note\nThe e-commerce cluster is currently growing from 5 to 10 brokers, with each broker having 2 TB of disk and the replication factor staying at 2.\n\nQuestion: Under the approved standard and the team's decision, what is the maximum data retention period for all transactions in the payment processing system?";

    #[test]
    fn a_question_opening_with_its_template_examples_clause_is_a_copy() {
        let examples = bundled_examples();
        let framed = [
            FRAMED_RETENTION.to_string(),
            FRAMED_RETENTION.replace(
                "Under the approved standard and the team's decision",
                "Under the approved plan and the department's decision",
            ),
        ];
        for prompt in &framed {
            let detail = examples
                .check(Category::MultiDocumentQa, prompt, &[])
                .map_err(|r| (r.reason, r.detail));
            assert!(
                matches!(&detail, Err((Reason::CopiesTemplateExample, d))
                    if d.contains("under the approved standard and the board's decision")),
                "{detail:?}"
            );
        }
        for own in [
            "Under the approved documentation, what is the maximum data retention period for \
             all transactions?",
            "According to the approved documentation and the team's meeting, what is the \
             maximum data retention period for all transactions?",
            "What is the maximum data retention period that the approved documentation sets?",
        ] {
            let prompt = FRAMED_RETENTION.replace(
                "Under the approved standard and the team's decision, what is the maximum data \
                 retention period for all transactions in the payment processing system?",
                own,
            );
            assert_ne!(prompt, FRAMED_RETENTION);
            assert_eq!(
                examples.check(Category::MultiDocumentQa, &prompt, &[]),
                Ok(()),
                "{own}"
            );
        }
    }

    /// A technical_code item the 1.5B author wrote at temperature 0.3, which the panel passed:
    /// the template example's requests.get scene with other names, and its question word for word.
    const RETOLD_TIMEOUT: &str = "Our sales team (Python 3.11, requests 2.31) sometimes hangs for hours when the customer service API stops sending data mid-response:\n\n    def fetch_customer_service_tickets(customer_id):\n        resp = requests.get(f\"{API}/tickets\", params={\"customer\": customer_id})\n        resp.raise_for_status()\n        return resp.json()\n\nWhich keyword argument must be added to the requests.get call so that it gives up instead of waiting indefinitely?";

    #[test]
    fn a_code_item_that_keeps_its_template_examples_question_is_a_copy() {
        let examples = bundled_examples();
        let detail = examples
            .check(Category::TechnicalCode, RETOLD_TIMEOUT, &[])
            .map_err(|r| (r.reason, r.detail));
        assert!(
            matches!(&detail, Err((Reason::CopiesTemplateExample, d)) if d.contains("question")),
            "{detail:?}"
        );
        let own_question = RETOLD_TIMEOUT.replace(
            "Which keyword argument must be added to the requests.get call so that it gives up \
             instead of waiting indefinitely?",
            "Which exception does raise_for_status() raise when the tickets API answers 503?",
        );
        assert_ne!(own_question, RETOLD_TIMEOUT);
        assert_eq!(
            examples.check_parts(Category::TechnicalCode, &own_question, &[]),
            Ok(()),
            "the question rule reads the question"
        );
    }

    /// Two technical_code items the 1.5B author wrote at temperature 0.3 (seed 20261206), which
    /// the gate and the panel passed: each keeps the example's timeout answer, golds and all,
    /// under a question that words it its own way.
    const KEPT_ANSWERS: [&str; 2] = [
        "Our logistics team (Go 1.21, gRPC 1.42) is having trouble with our order tracking system. The API returns a 500 error when we try to retrieve an order:\n\n    func getOrder(id string) (*Order, error) {\n        ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)\n        defer cancel()\n        resp, err := client.OrderService.Order(ctx, &OrderRequest{Id: id})\n        if err != nil {\n            return nil, err\n        }\n        return resp.Order, nil\n    }\n\nWhat keyword argument must be added to the gRPC client call to make it give up instead of waiting indefinitely?",
        "A sales representative (Python 3.11, requests 2.31) is trying to send an email to a customer but the email server is down. The sales representative logs an error message:\n\n    requests.exceptions.ConnectionError: HTTPConnectionPool(host='smtp.example.com', port=587): Failed to establish a new connection: [Errno 110] Connection timed out\n\nWhat keyword argument must be added to the requests.get call to handle this error?",
    ];

    #[test]
    fn an_item_that_keeps_its_template_examples_golds_is_a_copy() {
        let examples = bundled_examples();
        let golds = strings(&["timeout", "timeout=", "timeout argument"]);
        for prompt in KEPT_ANSWERS {
            assert_eq!(
                examples.check(Category::TechnicalCode, prompt, &[]),
                Ok(()),
                "the prompt alone is not a copy: {prompt}"
            );
            let detail = examples
                .check(Category::TechnicalCode, prompt, &golds)
                .map_err(|r| (r.reason, r.detail));
            assert!(
                matches!(&detail, Err((Reason::CopiesTemplateExample, d)) if d.contains("golds")),
                "{detail:?}"
            );
        }
        let one_of_them = strings(&["timeout", "read timeout"]);
        assert_eq!(
            examples.check(Category::TechnicalCode, KEPT_ANSWERS[0], &one_of_them),
            Ok(()),
            "a gold the example also has is not its answer kept whole"
        );
    }

    const RETOLD_POSTMORTEM: &str = "Incident report: claims denial during the winter season\n\nSummary. Between 12:00 and 14:00 UTC on 31 December, Smith & Associates' claims system returned errors or timed out for roughly 20% of claim submissions. No payment was captured twice and no claim data was lost, but an estimated 1,200 claims were denied during the window.\n\nImpact. Customers in all regions were affected. The claims app could not process claims, so they could not submit claims or receive a response. Support received 550 contacts tagged claims during the incident.\n\nRoot cause. A claim email sent at 11:30 UTC roughly quadrupled claim traffic. Each claim pod opens its own pool to the claims database, capped at 15 connections per pod. When the pods autoscaled from 10 to 20, total demand exceeded the database limit of 300 connections; new pods could not obtain connections and requests queued until they timed out.\n\nTimeline. At 11:30 the error-rate alert fired. At 12:10 the on-call engineer raised the per-pod pool to 20 connections, which made the problem worse. At 13:00 the team reverted the pool to 15 connections and capped the autoscaler at 14 pods; by 14:00 error rates were back to baseline.\n\nCorrective actions. (1) Route all claim database traffic through a shared PgBouncer layer with a fixed budget of 200 server connections; owner: Data Infrastructure; due 5 February. (2) Alert when total database connections exceed 70% of the limit; owner: Site Reliability; due 21 December. (3) Require a load forecast from Marketing for any campaign expected to double traffic; owner: Growth Engineering; due 21 February.\n\nQuestion: Which team owns the corrective action that puts a connection pooler in front of the claims database?";

    const RETOLD_PAYOUT_UPDATE: &str = "Memory:\n- merchant: **EcoGreen Finance**\n- payout_schedule: bi-weekly, Mondays\n- settlement_currency: EUR\n- payout_cutoff: 17:00 ET\n\nUpdate from IT Ops (1 July): starting with the next cycle, the payout cutoff moves to 15:30 ET; every other setting stays the same.\n\nQuestion: By what time of day must this merchant's adjustments be submitted to be included in the next payout?";

    #[test]
    fn plain_categories_sort_before_their_bloated_twins() {
        for bloated in Category::ALL {
            if let Some(plain) = plain_twin(bloated) {
                assert!(plain < bloated, "{plain} must be derived before {bloated}");
            }
        }
    }
}
