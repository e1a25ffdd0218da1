//! The assemble stage: drops exact and near-duplicate prompts (also against earlier releases and
//! the category templates' example items) and factual questions that ask a kept one's fact
//! again, leaves out flagged items unless asked to keep them,
//! trims each category to `release.per_category` with a seeded, domain-balanced choice, attaches
//! target actions, and writes the hashed release with its manifest, card, Croissant metadata and
//! report.

use super::audit::{self, ReportLine};
use super::{
    Ctx, AUDITED, AUDIT_REPORT, AUDIT_SUMMARY, AUTHORED, AUTHOR_SUMMARY, REJECTS, REPAIRED,
    REPAIR_REPORT, REPAIR_SUMMARY, USAGE,
};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::quality::dedup::{self, Against, DedupConfig, DupKind, Method};
use crate::release::diff;
use crate::release::schema::ReleaseRecord;
use crate::release::{
    self, AuditNumbers, ChangesSince, DedupNumbers, FlagOutcome, FlaggedItem, PassCount,
    ReleaseInfo, Shortfall, WrittenRelease,
};
use crate::runner::usage::StageUsage;
use crate::stages::item::{excerpt, quote, Candidate, Category, Reject};
use crate::stages::repair::Summary;
use crate::stages::yields::{RoundSurvival, RoundYield, Survival};
use crate::util::jsonl::{ChunkReader, JsonlError, RawLine, Span, SpanReader};
use crate::util::seeded;
use std::borrow::Cow;
use std::collections::{hash_map, BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// A prompt that candidates must not duplicate.
struct Reference {
    id: String,
    prompt: String,
    origin: Origin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// A record of an `--exclude` release.
    EarlierRelease,
    /// The example item of a category template, which a model may copy instead of writing.
    TemplateExample,
}

/// The example items of the category templates in `prompts_dir`; a template that does not
/// exist there (assemble may run without the authoring templates) shows none.
fn template_examples(prompts_dir: &Path) -> Result<Vec<Reference>> {
    let mut examples = Vec::new();
    for category in Category::ALL {
        let path = prompts_dir.join(crate::stages::templates::category_file(category));
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(Error::Read { path, source }),
        };
        examples.extend(
            crate::stages::templates::example_prompts(&text)
                .into_iter()
                .map(|prompt| Reference {
                    id: crate::stages::templates::example_item_name(category),
                    prompt,
                    origin: Origin::TemplateExample,
                }),
        );
    }
    Ok(examples)
}

/// Reads the prompts of an earlier release JSONL (`--exclude`).
fn read_reference(path: &Path) -> Result<Vec<Reference>> {
    let exclude = |line: Option<usize>, reason: String| Error::Exclude {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| exclude(None, e.to_string()))?;
    let mut refs = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| {
            exclude(
                Some(n + 1),
                format!("not JSON ({e}); expected a release JSONL"),
            )
        })?;
        let prompt = v
            .get("prompt")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| {
                exclude(
                    Some(n + 1),
                    "no \"prompt\" string; expected a release JSONL".into(),
                )
            })?;
        let id = v
            .get("id")
            .and_then(serde_json::Value::as_str)
            .map_or_else(|| format!("{}:{}", path.display(), n + 1), str::to_string);
        refs.push(Reference {
            id,
            prompt: prompt.to_string(),
            origin: Origin::EarlierRelease,
        });
    }
    Ok(refs)
}

fn assemble_reject(
    c: &Candidate,
    reason: &str,
    detail: String,
    collided_with: Option<String>,
) -> Reject {
    Reject {
        stage: "assemble".into(),
        reason: reason.into(),
        detail,
        category: c.category,
        custom_id: c.custom_id.clone(),
        item_id: Some(c.id.clone()),
        domain: c.domain.clone(),
        round: c.round,
        collided_with,
        excerpt: excerpt(&c.prompt, 600),
    }
}

/// What assemble keeps of a candidate while its file streams past: enough to order, dedup, trim
/// and count it. Everything else is read back by its span when a record or a reject is written.
struct Entry {
    span: Span,
    /// The prompt's JSON string within the line.
    prompt: Span,
    id: Box<str>,
    category: Category,
    /// Index into [`Scanned::domains`].
    domain: u32,
    round: u32,
    needs_review: bool,
    /// The normalised key of an item that asks for a fact ([`Category::asks_a_fact`]).
    fact: Option<Box<str>>,
}

/// A flagged candidate as the release report lists it.
struct FlaggedCandidate {
    id: String,
    category: Category,
    prompt_sha256: String,
    excerpt: String,
}

impl FlaggedCandidate {
    fn of(c: &Candidate) -> Self {
        Self {
            id: c.id.clone(),
            category: c.category,
            prompt_sha256: crate::util::digest::sha256_hex(c.prompt.as_bytes()),
            excerpt: excerpt(&c.prompt, FLAGGED_EXCERPT),
        }
    }
}

/// The candidates file read once: an entry per candidate, in file order.
struct Scanned {
    entries: Vec<Entry>,
    domains: Vec<String>,
    authored: BTreeMap<Category, usize>,
    flagged: Vec<FlaggedCandidate>,
}

impl Scanned {
    fn domain(&self, entry: &Entry) -> &str {
        &self.domains[entry.domain as usize]
    }
}

/// What the scan keeps of one candidate line, made on a worker thread, so the serial part of the
/// scan only numbers domains and appends.
struct ScannedLine {
    span: Span,
    prompt: Option<Span>,
    id: Box<str>,
    category: Category,
    domain: String,
    round: u32,
    flagged: Option<FlaggedCandidate>,
    sketch: dedup::Sketch,
    fact: Option<Box<str>>,
}

impl ScannedLine {
    fn of(line: &RawLine, path: &Path) -> Result<Self, JsonlError> {
        let candidate: Candidate = line.parse(path)?;
        let raw: RawPrompt = line.parse(path)?;
        Ok(Self {
            span: line.span,
            prompt: line.span_of(raw.prompt.get().as_bytes()),
            sketch: dedup::sketch(&candidate.prompt),
            fact: fact_key(&candidate),
            flagged: candidate
                .needs_review
                .then(|| FlaggedCandidate::of(&candidate)),
            id: candidate.id.into_boxed_str(),
            category: candidate.category,
            domain: candidate.domain,
            round: candidate.round,
        })
    }
}

/// The key of a candidate that asks for a fact, normalised as the grader reads it.
fn fact_key(candidate: &Candidate) -> Option<Box<str>> {
    if !candidate.category.asks_a_fact() {
        return None;
    }
    let key = dedup::normalise(candidate.golds.first()?);
    (!key.is_empty()).then(|| key.into_boxed_str())
}

/// Streams the candidates file: its entries, and the MinHash sketches of `references` then of
/// the candidates (so the references' dedup ids come first). Each chunk is parsed and sketched
/// while the next one is read and the one before is appended.
fn scan(path: &Path, references: &[Reference]) -> Result<(Scanned, Vec<dedup::Sketch>)> {
    let threads = crate::util::parallel::threads();
    let mut scanned = Scanned {
        entries: Vec::new(),
        domains: Vec::new(),
        authored: Category::ALL.iter().map(|c| (*c, 0)).collect(),
        flagged: Vec::new(),
    };
    let mut sketches =
        crate::util::parallel::map(references, threads, |r| dedup::sketch(&r.prompt));
    let mut domain_ids: HashMap<String, u32> = Default::default();
    let mut append = |lines: Vec<Result<ScannedLine, JsonlError>>| -> Result<()> {
        for line in lines {
            let line = line?;
            let domain = match domain_ids.get(&line.domain) {
                Some(&id) => id,
                None => {
                    let id = u32::try_from(scanned.domains.len()).unwrap_or(u32::MAX);
                    domain_ids.insert(line.domain.clone(), id);
                    scanned.domains.push(line.domain);
                    id
                }
            };
            *scanned.authored.entry(line.category).or_default() += 1;
            let needs_review = line.flagged.is_some();
            scanned.flagged.extend(line.flagged);
            scanned.entries.push(Entry {
                span: line.span,
                prompt: line.prompt.unwrap_or(line.span),
                id: line.id,
                category: line.category,
                domain,
                round: line.round,
                needs_review,
                fact: line.fact,
            });
            sketches.push(line.sketch);
        }
        Ok(())
    };
    let mut reader = ChunkReader::open(path)?;
    crate::util::parallel::pipelined(
        || {
            let chunk = reader.next_chunk(crate::util::jsonl::CHUNK_BYTES)?;
            Ok((!chunk.is_empty()).then_some(chunk))
        },
        |chunk| crate::util::parallel::map(chunk, threads, |line| ScannedLine::of(line, path)),
        |_, lines| append(lines),
    )?;
    Ok((scanned, sketches))
}

/// The prompts dedup compares: the references held in memory, then the candidates in priority
/// order, read back from their file.
struct Prompts<'a> {
    references: &'a [Reference],
    entries: &'a [Entry],
    priority: &'a [u32],
    file: &'a SpanReader,
}

/// A candidate line's prompt, as the JSON text it is written in.
#[derive(serde::Deserialize)]
struct RawPrompt<'a> {
    #[serde(borrow)]
    prompt: &'a serde_json::value::RawValue,
}

impl dedup::Texts for Prompts<'_> {
    type Error = Error;

    fn text(&self, id: usize) -> Result<Cow<'_, str>> {
        match id.checked_sub(self.references.len()) {
            None => Ok(Cow::Borrowed(&self.references[id].prompt)),
            Some(position) => {
                let entry = &self.entries[self.priority[position] as usize];
                Ok(Cow::Owned(self.file.read::<String>(entry.prompt)?))
            }
        }
    }
}

/// Reorders `items` in place so that position `k` holds what was at `order[k]` (`order` is a
/// permutation), following each cycle once.
fn permute<T>(items: &mut [T], order: &[u32]) {
    let mut placed = vec![false; items.len()];
    for start in 0..items.len() {
        let mut at = start;
        while !placed[at] {
            placed[at] = true;
            let from = order[at] as usize;
            if from == start {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

/// A candidate assemble drops, by entry, with what its reject line says.
struct Dropped {
    entry: u32,
    reason: &'static str,
    detail: String,
    collided_with: Option<String>,
}

/// What survives dedup and the flag policy (entries in priority order), and what was dropped,
/// in the order the reject lines are written.
struct Filtered {
    kept: Vec<u32>,
    dropped: Vec<Dropped>,
    numbers: DedupNumbers,
}

/// Dedup in a deterministic priority order: clean items before flagged ones, then by category,
/// round and id (then file position) — so of two duplicates the earlier-authored clean one
/// survives.
fn filter(
    config: &Config,
    scanned: &Scanned,
    mut sketches: Vec<dedup::Sketch>,
    references: &[Reference],
    file: &SpanReader,
    keep_flagged: bool,
) -> Result<Filtered> {
    let entries = &scanned.entries;
    let mut priority: Vec<u32> = (0..entries.len() as u32).collect();
    priority.sort_unstable_by(|&a, &b| {
        let (x, y) = (&entries[a as usize], &entries[b as usize]);
        (x.needs_review, x.category, x.round, &x.id, a).cmp(&(
            y.needs_review,
            y.category,
            y.round,
            &y.id,
            b,
        ))
    });
    permute(&mut sketches[references.len()..], &priority);
    let prompts = Prompts {
        references,
        entries,
        priority: &priority,
        file,
    };
    let drops = dedup::find_duplicates_sketched(
        sketches,
        &prompts,
        references.len(),
        &DedupConfig {
            threshold: config.assemble.near_dup_threshold,
            method: Method::Auto,
        },
    )?;
    let mut numbers = DedupNumbers::default();
    let mut dropped = Vec::new();
    let mut is_dropped = vec![false; entries.len()];
    for drop in &drops {
        is_dropped[drop.index] = true;
        let (with, described) = match drop.against {
            Against::Reference(r) => {
                let reference = &references[r];
                let described = match reference.origin {
                    Origin::EarlierRelease => {
                        numbers.against_reference += 1;
                        format!("an earlier release's prompt {}", reference.id)
                    }
                    Origin::TemplateExample => {
                        numbers.against_template_example += 1;
                        reference.id.clone()
                    }
                };
                (reference.id.clone(), described)
            }
            Against::Candidate(c) => {
                let id = entries[priority[c] as usize].id.to_string();
                let described = format!("a kept candidate {id}");
                (id, described)
            }
        };
        let (reason, detail) = match drop.kind {
            DupKind::Exact => {
                numbers.exact += 1;
                (
                    "duplicate_exact",
                    format!("same prompt as {described} after normalisation"),
                )
            }
            DupKind::Near { similarity } => {
                numbers.near += 1;
                (
                    "duplicate_near",
                    format!("near-duplicate of {described} (Jaccard {similarity:.3})"),
                )
            }
        };
        dropped.push(Dropped {
            entry: priority[drop.index],
            reason,
            detail,
            collided_with: Some(with),
        });
    }
    let mut kept = Vec::new();
    let mut facts: HashMap<(Category, &str), &str> = HashMap::new();
    for (&entry, is_dropped) in priority.iter().zip(is_dropped) {
        if is_dropped {
            continue;
        }
        let e = &entries[entry as usize];
        if e.needs_review && !keep_flagged {
            numbers.flagged_left_out += 1;
            dropped.push(Dropped {
                entry,
                reason: "needs_review",
                detail: format!("flagged for review (see {REPAIR_REPORT} and {AUDIT_REPORT}); left out — pass --keep-flagged to keep it flagged"),
                collided_with: None,
            });
            continue;
        }
        if let Some(key) = &e.fact {
            match facts.entry((e.category, key)) {
                hash_map::Entry::Occupied(holder) => {
                    numbers.same_fact += 1;
                    dropped.push(Dropped {
                        entry,
                        reason: "duplicate_fact",
                        detail: format!(
                            "asks for the fact that the kept candidate {} asks for: both are keyed {}",
                            holder.get(),
                            quote(key)
                        ),
                        collided_with: Some(holder.get().to_string()),
                    });
                    continue;
                }
                hash_map::Entry::Vacant(slot) => {
                    slot.insert(&e.id);
                }
            }
        }
        kept.push(entry);
    }
    Ok(Filtered {
        kept,
        dropped,
        numbers,
    })
}

/// Picks `want` items of one category: domains in a seeded order take turns, each domain's
/// items in a seeded order, so every domain is represented about equally. The chosen items
/// are then put in a seeded order.
fn trim<'d, T>(
    seed: u64,
    category: Category,
    items: Vec<T>,
    domain_of: impl Fn(&T) -> &'d str,
    want: usize,
) -> Vec<T> {
    let mut by_domain: BTreeMap<&str, Vec<T>> = BTreeMap::new();
    for item in items {
        by_domain.entry(domain_of(&item)).or_default().push(item);
    }
    let mut queues: Vec<std::collections::VecDeque<T>> = Vec::new();
    for (domain, mut list) in by_domain {
        seeded::shuffle(
            &mut list,
            &mut seeded::rng(seed, &format!("trim/{category}/{domain}")),
        );
        queues.push(list.into());
    }
    seeded::shuffle(
        &mut queues,
        &mut seeded::rng(seed, &format!("trim/{category}")),
    );
    let mut chosen = Vec::with_capacity(want);
    while chosen.len() < want && queues.iter().any(|q| !q.is_empty()) {
        for q in queues.iter_mut() {
            if chosen.len() == want {
                break;
            }
            if let Some(item) = q.pop_front() {
                chosen.push(item);
            }
        }
    }
    seeded::shuffle(
        &mut chosen,
        &mut seeded::rng(seed, &format!("order/{category}")),
    );
    chosen
}

/// `author_summary.json`: what the author stage's rounds yielded.
#[derive(Debug, Default, serde::Deserialize)]
struct AuthorSummary {
    rounds: Vec<RoundYield>,
}

/// What `repair_report.jsonl` says of an item: the parts the release report shows.
#[derive(Debug, serde::Deserialize)]
struct RepairVerdict {
    item_id: String,
    decision: String,
    reason: String,
    #[serde(default)]
    key_golds: Vec<String>,
    #[serde(default)]
    verifiers: Vec<VerifierSaid>,
}

#[derive(Debug, serde::Deserialize)]
struct VerifierSaid {
    model: String,
    raw_answer: Option<String>,
    error: Option<String>,
}

impl RepairVerdict {
    /// The key, then what each verifier answered.
    fn detail(&self) -> String {
        let key = self.key_golds.first().map_or("none", String::as_str);
        let answers = self.verifiers.iter().map(|v| {
            let said = match (&v.raw_answer, &v.error) {
                (Some(answer), _) => answer.as_str(),
                (None, Some(error)) => error.as_str(),
                (None, None) => "no answer",
            };
            format!("{}: {said}", v.model)
        });
        std::iter::once(format!("key {key}"))
            .chain(answers)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Characters of a flagged item's prompt the report shows.
const FLAGGED_EXCERPT: usize = 160;

/// Every flagged candidate, with the reason of the stage that flagged it (repair before audit)
/// and where it went: kept as a record, dropped as a duplicate, left out, or not chosen when
/// its category was trimmed.
fn flagged_items(
    flagged: &[FlaggedCandidate],
    verdicts: &[RepairVerdict],
    audit: &[ReportLine],
    dropped: &BTreeMap<&str, &str>,
    released: &BTreeMap<String, String>,
) -> Vec<FlaggedItem> {
    let audit: BTreeMap<&str, &ReportLine> = audit
        .iter()
        .filter(|line| !line.verdict.passed())
        .map(|line| (line.item_id.as_str(), line))
        .collect();
    let verdicts: BTreeMap<&str, &RepairVerdict> = verdicts
        .iter()
        .filter(|v| v.decision == "flagged")
        .map(|v| (v.item_id.as_str(), v))
        .collect();
    let mut items: Vec<FlaggedItem> = flagged
        .iter()
        .map(|item| {
            let outcome = match (released.get(&item.id), dropped.get(item.id.as_str())) {
                (Some(record_id), _) => FlagOutcome::Released(record_id.clone()),
                (None, Some(reason)) if reason.starts_with("duplicate") => FlagOutcome::Duplicate,
                (None, Some(_)) => FlagOutcome::LeftOut,
                (None, None) => FlagOutcome::NotChosen,
            };
            let id = item.id.as_str();
            let (stage, reason, detail) = match (verdicts.get(id), audit.get(id)) {
                (Some(verdict), _) => ("repair", verdict.reason.clone(), verdict.detail()),
                (None, Some(line)) => {
                    let codes: Vec<&str> = line.verdict.flags.iter().map(|f| f.code()).collect();
                    ("audit", codes.join(", "), line.detail())
                }
                (None, None) => (
                    "unrecorded",
                    "needs_review".to_string(),
                    format!(
                        "it is flagged, but neither {REPAIR_REPORT} nor {AUDIT_REPORT} says why"
                    ),
                ),
            };
            FlaggedItem {
                item_id: item.id.clone(),
                category: item.category,
                prompt_sha256: item.prompt_sha256.clone(),
                stage: stage.to_string(),
                reason,
                detail,
                excerpt: item.excerpt.clone(),
                outcome,
            }
        })
        .collect();
    items.sort_by(|a, b| (a.category, &a.item_id).cmp(&(b.category, &b.item_id)));
    items
}

fn read_json_or_default<T: serde::de::DeserializeOwned + Default>(path: &Path) -> Result<T> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| Error::InvalidSideFile {
            path: path.to_path_buf(),
            source,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
        Err(source) => Err(Error::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The candidates to release: `audited.jsonl` when a panel is configured, refused when the audit
/// has not run or read another `repaired.jsonl` or panel; else `repaired.jsonl`.
fn input(ctx: &Ctx<'_>) -> Result<(PathBuf, Option<audit::Summary>)> {
    let repaired = ctx.out(REPAIRED);
    if !repaired.exists() {
        let hint = if ctx.out(AUTHORED).exists() {
            "run `saseval-gen repair` first"
        } else {
            "run `saseval-gen author` and `saseval-gen repair` first (or `saseval-gen run`)"
        };
        return Err(Error::MissingInput {
            path: repaired,
            next: hint,
        });
    }
    let models = &ctx.config.audit.models;
    if models.is_empty() {
        return Ok((repaired, None));
    }
    let audited = ctx.out(AUDITED);
    let summary_path = ctx.out(AUDIT_SUMMARY);
    if !audited.exists() || !summary_path.exists() {
        return Err(Error::MissingInput {
            path: audited,
            next: "run `saseval-gen audit` first, or set audit.models = [] to release without the panel's audit",
        });
    }
    let summary: audit::Summary = read_json_or_default(&summary_path)?;
    let stale = |input| Error::StaleInput {
        path: audited.clone(),
        input,
        next: "re-run `saseval-gen audit` (answers already paid for are read from the cache)",
    };
    if summary.input_sha256 != audit::input_digest(ctx.out_dir())? {
        return Err(stale(REPAIRED));
    }
    if &summary.models != models || summary.min_correct != ctx.config.audit.min_correct() {
        return Err(stale("the [audit] panel"));
    }
    Ok((audited, Some(summary)))
}

/// Each panel model's answers to the records released (`released` holds their item ids), and
/// how many of them the card's grader counts correct: the score of the Identity governor, since
/// the panel answered the prompts unchanged. The grader, not the audit's stricter reading of
/// whether an answer reaches the key, is what a user of the release will score with.
fn identity_accuracy(
    report: &[ReportLine],
    released: &[(Category, String)],
) -> BTreeMap<Category, BTreeMap<String, PassCount>> {
    let lines: BTreeMap<&str, &ReportLine> =
        report.iter().map(|l| (l.item_id.as_str(), l)).collect();
    let mut pass: BTreeMap<Category, BTreeMap<String, PassCount>> = BTreeMap::new();
    for (category, item_id) in released {
        let Some(line) = lines.get(item_id.as_str()) else {
            continue;
        };
        for answer in &line.answers {
            let count = pass
                .entry(*category)
                .or_default()
                .entry(answer.model.clone())
                .or_default();
            count.answered += 1;
            let graded = answer
                .answer
                .as_deref()
                .is_some_and(|text| crate::quality::grade::graded(text, &line.golds));
            count.correct += usize::from(graded);
        }
    }
    pass
}

/// The audit's numbers for the release: the summary's counts, and each panel model's pass rate
/// over the records released (`released` holds their item ids).
fn audit_numbers(
    summary: &audit::Summary,
    report: &[ReportLine],
    released: &[(Category, String)],
) -> AuditNumbers {
    let pass = identity_accuracy(report, released);
    AuditNumbers {
        models: summary.models.clone(),
        min_correct: summary.min_correct,
        context_probe: summary.context_probe,
        sampling: summary.sampling,
        audited: summary.total.audited,
        passed: summary.total.passed,
        flags: summary.total.flags.clone(),
        golds_extended: summary.total.golds_extended,
        pass,
    }
}

/// What assemble would release from the out dir's candidates as they are: the entries chosen
/// per category, what dedup and the flag policy dropped, and how many items of every round and
/// category each stage let through. The loop reads it after every round; assemble writes it.
pub struct Selection {
    audit_summary: Option<audit::Summary>,
    keep_flagged: bool,
    scanned: Scanned,
    file: SpanReader,
    filtered: Filtered,
    /// The chosen entries of each category, in release order.
    chosen: Vec<(Category, Vec<u32>)>,
    reject_counts: RejectCounts,
    verdicts: Vec<RepairVerdict>,
    shortfall: Vec<Shortfall>,
    survival: Vec<RoundSurvival>,
}

impl Selection {
    /// Per category, the items that passed every stage and dedup (before the trim).
    pub fn survivors(&self) -> BTreeMap<Category, usize> {
        let mut survivors: BTreeMap<Category, usize> =
            Category::ALL.iter().map(|c| (*c, 0)).collect();
        for &entry in &self.filtered.kept {
            *survivors
                .entry(self.scanned.entries[entry as usize].category)
                .or_default() += 1;
        }
        survivors
    }

    /// How many items of every round and category each stage let through.
    pub fn survival(&self) -> &[RoundSurvival] {
        &self.survival
    }

    /// Why `category`'s candidates were dropped, most frequent first: its top reason and count.
    pub fn top_loss(&self, category: Category) -> Option<(String, usize)> {
        self.reject_counts
            .of(category)
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
    }

    /// A dropped candidate of `category` with `reason`, as its reject line would say it.
    pub fn example_drop(&self, category: Category, reason: &str) -> Result<Option<Reject>> {
        let Some(dropped) = self.filtered.dropped.iter().find(|d| {
            d.reason == reason && self.scanned.entries[d.entry as usize].category == category
        }) else {
            return Ok(None);
        };
        let item: Candidate = self
            .file
            .read(self.scanned.entries[dropped.entry as usize].span)?;
        Ok(Some(assemble_reject(
            &item,
            dropped.reason,
            dropped.detail.clone(),
            dropped.collided_with.clone(),
        )))
    }
}

/// Reads the candidates, dedups them against each other, the template examples and the
/// `excludes` releases, applies the flag policy and trims each category, writing nothing.
pub fn select(ctx: &Ctx<'_>, excludes: &[PathBuf], keep_flagged: bool) -> Result<Selection> {
    let config = ctx.config;
    let (input_path, audit_summary) = input(ctx)?;
    let mut references = template_examples(&config.author.prompts_dir)?;
    for path in excludes {
        references.extend(read_reference(path)?);
    }
    let mut reject_counts = RejectCounts::default();
    let rejects_path = ctx.out(REJECTS);
    if rejects_path.exists() {
        for_each_author_reject(&rejects_path, |reject| {
            if crate::quality::validate::Reason::is_loss(&reject.reason) {
                reject_counts.count_author(reject);
            }
            Ok(())
        })?;
    }
    let file = SpanReader::open(&input_path)?;
    let (scanned, sketches) = scan(&input_path, &references)?;
    let filtered = filter(config, &scanned, sketches, &references, &file, keep_flagged)?;
    for dropped in &filtered.dropped {
        reject_counts.count(
            scanned.entries[dropped.entry as usize].category,
            dropped.reason,
        );
    }
    let per_category = config.release.per_category;
    let mut pool: BTreeMap<Category, Vec<u32>> = BTreeMap::new();
    for &entry in &filtered.kept {
        pool.entry(scanned.entries[entry as usize].category)
            .or_default()
            .push(entry);
    }
    let mut chosen = Vec::new();
    let mut shortfall = Vec::new();
    for category in Category::ALL {
        let picked = trim(
            config.release.seed,
            category,
            pool.remove(&category).unwrap_or_default(),
            |&entry| scanned.domain(&scanned.entries[entry as usize]),
            per_category,
        );
        if picked.len() < per_category {
            shortfall.push(Shortfall {
                category,
                have: picked.len(),
                want: per_category,
                reasons: reject_counts.of(category),
                asked: config.category(category).is_asked(),
            });
        }
        chosen.push((category, picked));
    }
    let verdicts: Vec<RepairVerdict> = read_jsonl_or_empty(&ctx.out(REPAIR_REPORT))?;
    let author: AuthorSummary = read_json_or_default(&ctx.out(AUTHOR_SUMMARY))?;
    let survival = survival(&author, &scanned, &filtered, &chosen, &verdicts);
    Ok(Selection {
        audit_summary,
        keep_flagged,
        scanned,
        file,
        filtered,
        chosen,
        reject_counts,
        verdicts,
        shortfall,
        survival,
    })
}

/// Counts, per round and category, what each stage let through: asked and gate from the
/// author's yields, the rest from the candidates' fates.
fn survival(
    author: &AuthorSummary,
    scanned: &Scanned,
    filtered: &Filtered,
    chosen: &[(Category, Vec<u32>)],
    verdicts: &[RepairVerdict],
) -> Vec<RoundSurvival> {
    let mut rounds: BTreeMap<u32, BTreeMap<Category, Survival>> = BTreeMap::new();
    for y in &author.rounds {
        for (category, counts) in &y.categories {
            let s = rounds
                .entry(y.round)
                .or_default()
                .entry(*category)
                .or_default();
            s.asked += counts.items_asked;
            s.gate += counts.valid;
        }
    }
    let entries = &scanned.entries;
    let mut count = |entry: u32, field: fn(&mut Survival) -> &mut usize| {
        let e = &entries[entry as usize];
        *field(
            rounds
                .entry(e.round)
                .or_default()
                .entry(e.category)
                .or_default(),
        ) += 1;
    };
    for (entry, e) in entries.iter().enumerate() {
        if !e.needs_review {
            count(entry as u32, |s| &mut s.audit_passed);
        }
    }
    for &entry in &filtered.kept {
        count(entry, |s| &mut s.after_dedup);
    }
    for (_, picked) in chosen {
        for &entry in picked {
            count(entry, |s| &mut s.released);
        }
    }
    let by_id: BTreeMap<&str, u32> = entries
        .iter()
        .enumerate()
        .map(|(k, e)| (&*e.id, k as u32))
        .collect();
    for verdict in verdicts {
        let Some(&entry) = by_id.get(verdict.item_id.as_str()) else {
            continue;
        };
        match verdict.decision.as_str() {
            "repaired" => count(entry, |s| &mut s.repaired),
            "flagged" => count(entry, |s| &mut s.repair_flagged),
            _ => {}
        }
    }
    rounds
        .into_iter()
        .map(|(round, categories)| RoundSurvival { round, categories })
        .collect()
}

/// What a command asks of the assemble step beyond the config: the command line's `--exclude`
/// and `--keep-flagged`, converted by `cli`.
#[derive(Debug, Clone, Default)]
pub struct AssembleOptions {
    /// Earlier release JSONLs; candidates that duplicate or near-duplicate them are dropped.
    pub excludes: Vec<std::path::PathBuf>,
    /// Keep flagged items (flagged, as v1 did) instead of replacing them.
    pub keep_flagged: bool,
}

pub fn run(ctx: &mut Ctx<'_>, args: &AssembleOptions) -> Result<()> {
    let keep_flagged = args.keep_flagged || ctx.config.assemble.keep_flagged;
    let selection = select(ctx, &args.excludes, keep_flagged)?;
    write(ctx, &args.excludes, selection, "")
}

/// Writes the release `selection` holds (or refuses a short one unless `allow_short`), with the
/// reject lines of what it dropped; `stopped` says why the loop stopped authoring, if it did.
pub fn write(
    ctx: &Ctx<'_>,
    excludes: &[PathBuf],
    selection: Selection,
    stopped: &str,
) -> Result<()> {
    let config = ctx.config;
    let Selection {
        audit_summary,
        keep_flagged,
        scanned,
        file,
        filtered,
        chosen,
        reject_counts,
        verdicts,
        shortfall,
        survival,
    } = selection;
    let rejects_path = ctx.out(REJECTS);
    let mut rejects = crate::util::jsonl::Writer::create(&rejects_path)?;
    if rejects_path.exists() {
        for_each_author_reject(&rejects_path, |reject| Ok(rejects.push(reject)?))?;
    }
    let per_category = config.release.per_category;
    let Picked {
        records,
        counts,
        domain_counts,
        released_flagged,
        released,
    } = records_of(config, &file, &scanned, chosen)?;
    let audit_report: Vec<ReportLine> = match audit_summary {
        Some(_) => read_jsonl_or_empty(&ctx.out(AUDIT_REPORT))?,
        None => Vec::new(),
    };
    let dropped_reasons: BTreeMap<&str, &str> = filtered
        .dropped
        .iter()
        .map(|d| (&*scanned.entries[d.entry as usize].id, d.reason))
        .collect();
    let flagged = flagged_items(
        &scanned.flagged,
        &verdicts,
        &audit_report,
        &dropped_reasons,
        &released_flagged,
    );
    push_dropped(&mut rejects, &file, &scanned, &filtered)?;
    rejects.commit()?;
    if !shortfall.is_empty() && !config.assemble.allow_short {
        return Err(Error::ShortRelease {
            per_category,
            short: shortfall.iter().map(describe_shortfall).collect(),
            stopped: stopped.to_string(),
        });
    }
    let repair: Summary = read_json_or_default(&ctx.out(REPAIR_SUMMARY))?;
    let usage: BTreeMap<String, StageUsage> = read_json_or_default(&ctx.out(USAGE))?;
    let author: AuthorSummary = read_json_or_default(&ctx.out(AUTHOR_SUMMARY))?;
    let verifiers = repair.by_verifier.clone();
    let info = ReleaseInfo {
        version: config.release.version.clone(),
        date: if config.release.date.is_empty() {
            crate::util::clock::today_utc()
        } else {
            config.release.date.clone()
        },
        seed: config.release.seed,
        id_prefix: config.release.id_prefix.clone(),
        per_category,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        provider: config.api.provider.to_string(),
        author_model: config.author.model.clone(),
        verifier_models: config.repair.models.clone(),
        config_fingerprint: config.content_fingerprint(),
        counts,
        domain_counts,
        authored: scanned.authored,
        rejects: reject_counts.author,
        rejects_by_category: reject_counts.by_category,
        repair: repair.numbers(),
        verifiers,
        flagged,
        audit: audit_summary
            .as_ref()
            .map(|summary| audit_numbers(summary, &audit_report, &released)),
        dedup: filtered.numbers,
        usage,
        author_yield: author.rounds.iter().map(RoundYield::counts_only).collect(),
        survival,
        shortfall,
        keep_flagged,
        target_rows: Category::ALL
            .into_iter()
            .map(|c| (c, config.category(c).target))
            .collect(),
        earlier: changes_since(config, excludes, &records)?,
    };
    let written = release::write_release(ctx.out_dir(), &records, &info)?;
    ctx.printer
        .out(written_summary(ctx, &written, &info, records.len()));
    Ok(())
}

/// The release records of the chosen entries, in category order, and what the manifest counts
/// of them.
struct Picked {
    records: Vec<ReleaseRecord>,
    counts: BTreeMap<Category, usize>,
    domain_counts: BTreeMap<Category, BTreeMap<String, usize>>,
    /// The flagged items released (with `--keep-flagged`): item id to record id.
    released_flagged: BTreeMap<String, String>,
    released: Vec<(Category, String)>,
}

/// Reads the chosen entries back and numbers them as release records.
fn records_of(
    config: &Config,
    file: &SpanReader,
    scanned: &Scanned,
    chosen: Vec<(Category, Vec<u32>)>,
) -> Result<Picked> {
    let mut picked = Picked {
        records: Vec::new(),
        counts: BTreeMap::new(),
        domain_counts: BTreeMap::new(),
        released_flagged: BTreeMap::new(),
        released: Vec::new(),
    };
    for (category, entries) in chosen {
        picked.counts.insert(category, entries.len());
        let row = config.category(category).target;
        for entry in entries {
            let item: Candidate = file.read(scanned.entries[entry as usize].span)?;
            *picked
                .domain_counts
                .entry(category)
                .or_default()
                .entry(item.domain.clone())
                .or_default() += 1;
            let id = format!(
                "{}-{:04}",
                config.release.id_prefix,
                picked.records.len() + 1
            );
            if item.needs_review {
                picked.released_flagged.insert(item.id.clone(), id.clone());
            }
            picked.released.push((category, item.id.clone()));
            picked.records.push(ReleaseRecord::new(id, &item, &row));
        }
    }
    Ok(picked)
}

/// Adds a reject line for every candidate the filters dropped.
fn push_dropped(
    rejects: &mut crate::util::jsonl::Writer,
    file: &SpanReader,
    scanned: &Scanned,
    filtered: &Filtered,
) -> Result<()> {
    for dropped in &filtered.dropped {
        let item: Candidate = file.read(scanned.entries[dropped.entry as usize].span)?;
        rejects.push(&assemble_reject(
            &item,
            dropped.reason,
            dropped.detail.clone(),
            dropped.collided_with.clone(),
        ))?;
    }
    Ok(())
}

/// What `assemble` says it wrote and dropped.
fn written_summary(
    ctx: &Ctx<'_>,
    written: &WrittenRelease,
    info: &ReleaseInfo,
    records: usize,
) -> String {
    let mut lines = vec![format!(
        "assemble: wrote {} ({} records, sha256 {}) with SHA256SUMS, manifest.json, README.md, croissant.json, LICENSE.md and report.html in {}",
        written.jsonl_name,
        records,
        written.sha256,
        ctx.out_dir().display()
    )];
    let copied_examples = match info.dedup.against_template_example {
        0 => String::new(),
        n => format!(", {n} copying a template's example item"),
    };
    let same_facts = match info.dedup.same_fact {
        0 => String::new(),
        n => format!(", {n} asking a kept item's fact again"),
    };
    lines.push(format!(
        "  dropped: {} exact and {} near duplicates ({} against earlier releases{copied_examples}){same_facts}, {} flagged item(s) left out",
        info.dedup.exact, info.dedup.near, info.dedup.against_reference, info.dedup.flagged_left_out
    ));
    for s in &info.shortfall {
        lines.push(format!(
            "  short (allowed by assemble.allow_short): {}",
            describe_shortfall(s)
        ));
    }
    lines.join("\n")
}

/// What changed since each `--exclude` release, for the card's Changelog: the `diff` of it and
/// the records about to be written (with this config's target rows), naming it by its file name.
fn changes_since(
    config: &Config,
    excludes: &[PathBuf],
    records: &[ReleaseRecord],
) -> Result<Vec<ChangesSince>> {
    let this = diff::Release::of_records("this release", "", records);
    let rows: BTreeMap<String, Vec<f64>> = Category::ALL
        .into_iter()
        .map(|c| {
            (
                c.name().to_string(),
                config.category(c).target.target_action().to_vec(),
            )
        })
        .collect();
    let threshold = config.assemble.near_dup_threshold;
    excludes
        .iter()
        .map(|path| {
            let earlier = diff::read_release(path)?;
            let name = earlier.file.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            Ok(diff::diff(&earlier, &this, threshold)?.changes(&name, &rows))
        })
        .collect()
}

/// The lines of a side file, or none when it does not exist.
fn read_jsonl_or_empty<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    if path.exists() {
        Ok(crate::util::jsonl::read(path)?)
    } else {
        Ok(Vec::new())
    }
}

/// Reject lines by reason: the author stage's, and every stage's per category.
#[derive(Default)]
struct RejectCounts {
    author: BTreeMap<String, usize>,
    by_category: BTreeMap<Category, BTreeMap<String, usize>>,
}

impl RejectCounts {
    fn count_author(&mut self, reject: &Reject) {
        *self.author.entry(reject.reason.clone()).or_default() += 1;
        self.count(reject.category, &reject.reason);
    }

    fn count(&mut self, category: Category, reason: &str) {
        *self
            .by_category
            .entry(category)
            .or_default()
            .entry(reason.to_string())
            .or_default() += 1;
    }

    /// Why a category's candidates were dropped, by reason.
    fn of(&self, category: Category) -> BTreeMap<String, usize> {
        self.by_category.get(&category).cloned().unwrap_or_default()
    }
}

/// Calls `each` with the author stage's lines of `rejects.jsonl` (assemble rewrites its own).
fn for_each_author_reject(path: &Path, mut each: impl FnMut(&Reject) -> Result<()>) -> Result<()> {
    crate::util::jsonl::for_each(path, |reject: Reject| {
        if reject.stage == "author" {
            each(&reject)?;
        }
        Ok(())
    })
}

fn describe_shortfall(s: &Shortfall) -> String {
    let reasons: Vec<String> = s.reasons.iter().map(|(r, n)| format!("{r} {n}")).collect();
    format!(
        "{}: {} of {} ({} missing); dropped candidates by reason: {}",
        s.category,
        s.have,
        s.want,
        s.want - s.have,
        if !s.asked {
            "none (not asked: its prior_survival is 0)".to_string()
        } else if reasons.is_empty() {
            "none (too few were authored)".to_string()
        } else {
            reasons.join(", ")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: &str, category: Category) -> Candidate {
        Candidate {
            id: id.to_string(),
            category,
            domain: "fintech".to_string(),
            prompt: format!("Prompt of {id}: what is the rate?"),
            golds: vec!["12".to_string()],
            durable: None,
            stale: None,
            custom_id: format!("author/{category}/r0/0000"),
            model: "m".to_string(),
            round: 0,
            gold_repaired: false,
            needs_review: true,
        }
    }

    fn verdict(item_id: &str, decision: &str, reason: &str) -> RepairVerdict {
        RepairVerdict {
            item_id: item_id.to_string(),
            decision: decision.to_string(),
            reason: reason.to_string(),
            key_golds: vec!["12%".to_string()],
            verifiers: vec![
                VerifierSaid {
                    model: "v-a".to_string(),
                    raw_answer: Some("12".to_string()),
                    error: None,
                },
                VerifierSaid {
                    model: "v-b".to_string(),
                    raw_answer: None,
                    error: Some("no ANSWER line".to_string()),
                },
            ],
        }
    }

    fn orders() -> impl proptest::strategy::Strategy<Value = Vec<u32>> {
        use proptest::strategy::{Just, Strategy};
        (0u32..60).prop_flat_map(|n| Just((0..n).collect::<Vec<u32>>()).prop_shuffle())
    }

    proptest::proptest! {
        #[test]
        fn permute_puts_what_was_at_order_k_at_k(order in orders()) {
            let items: Vec<String> = (0..order.len()).map(|i| format!("item {i}")).collect();
            let expected: Vec<String> = order.iter().map(|&k| items[k as usize].clone()).collect();
            let mut permuted = items;
            permute(&mut permuted, &order);
            proptest::prop_assert_eq!(permuted, expected);
        }
    }

    #[test]
    fn each_flagged_item_gets_its_repair_reason_and_where_it_went() {
        let flagged = [
            candidate("b.kept", Category::Reasoning),
            candidate("a.left", Category::BloatedReasoning),
            candidate("c.dup", Category::Reasoning),
            candidate("d.spare", Category::Reasoning),
            candidate("e.unknown", Category::Reasoning),
        ];
        let verdicts = [
            verdict("b.kept", "flagged", "verifiers_disagree"),
            verdict("a.left", "flagged", "ill_posed"),
            verdict("c.dup", "flagged", "ill_posed"),
            verdict("d.spare", "flagged", "verifier_unreliable"),
            verdict("e.unknown", "agree", "agree"),
        ];
        let dropped = [("a.left", "needs_review"), ("c.dup", "duplicate_near")]
            .into_iter()
            .collect();
        let released = [("b.kept".to_string(), "sas-0007".to_string())]
            .into_iter()
            .collect();
        let flagged = flagged.map(|c| FlaggedCandidate::of(&c));
        let items = flagged_items(&flagged, &verdicts, &[], &dropped, &released);
        let seen: Vec<(&str, &str, &FlagOutcome)> = items
            .iter()
            .map(|i| (i.item_id.as_str(), i.reason.as_str(), &i.outcome))
            .collect();
        assert_eq!(
            seen,
            [
                (
                    "b.kept",
                    "verifiers_disagree",
                    &FlagOutcome::Released("sas-0007".to_string())
                ),
                ("c.dup", "ill_posed", &FlagOutcome::Duplicate),
                ("d.spare", "verifier_unreliable", &FlagOutcome::NotChosen),
                ("e.unknown", "needs_review", &FlagOutcome::NotChosen),
                ("a.left", "ill_posed", &FlagOutcome::LeftOut),
            ]
        );
        assert_eq!(items[0].stage, "repair");
        assert_eq!(items[0].detail, "key 12%; v-a: 12; v-b: no ANSWER line");
        assert_eq!(items[3].stage, "unrecorded");
    }

    fn audit_line(item_id: &str, flags: Vec<crate::quality::panel::Flag>) -> ReportLine {
        ReportLine {
            item_id: item_id.to_string(),
            category: Category::Reasoning,
            prompt_sha256: String::new(),
            golds: vec!["12".to_string()],
            answers: vec![crate::quality::panel::PanelAnswer {
                model: "p-a".to_string(),
                answer: Some("about 15".to_string()),
                error: None,
                correct: false,
                numeric: Some(false),
            }],
            probe_question: None,
            probe_answers: Vec::new(),
            verdict: crate::quality::panel::Verdict {
                correct: 0,
                probe_correct: None,
                added_golds: Vec::new(),
                flags,
            },
            leniency: crate::quality::panel::Leniency { hits: 0, others: 0 },
        }
    }

    #[test]
    fn the_identity_accuracy_is_scored_by_the_cards_grader() {
        let mut line = audit_line("a", Vec::new());
        line.category = Category::TechnicalCode;
        line.golds = vec!["error".to_string()];
        line.answers[0].answer = Some("`errors='ignore'`".to_string());
        line.answers[0].correct = false;
        let released = [(Category::TechnicalCode, "a".to_string())];
        let pass = identity_accuracy(&[line], &released);
        let count = &pass[&Category::TechnicalCode]["p-a"];
        assert_eq!(
            (count.answered, count.correct),
            (1, 1),
            "the grader credits what the audit did not count as reaching the key"
        );
    }

    #[test]
    fn an_item_the_audit_flagged_gets_its_flags_unless_repair_flagged_it_first() {
        use crate::quality::panel::Flag;
        let flagged = [
            candidate("a.audit", Category::Reasoning),
            candidate("b.both", Category::Reasoning),
        ];
        let verdicts = [verdict("b.both", "flagged", "ill_posed")];
        let audit = [
            audit_line("a.audit", vec![Flag::PanelDisagrees, Flag::GoldTooLenient]),
            audit_line("b.both", vec![Flag::PanelDisagrees]),
        ];
        let items = flagged_items(
            &flagged.clone().map(|c| FlaggedCandidate::of(&c)),
            &verdicts,
            &audit,
            &BTreeMap::new(),
            &BTreeMap::new(),
        );
        assert_eq!(items[0].stage, "audit");
        assert_eq!(items[0].reason, "panel_disagrees, gold_too_lenient");
        assert_eq!(items[0].detail, "key 12; p-a: about 15 (graded wrong)");
        assert_eq!(
            items[0].prompt_sha256,
            crate::util::digest::sha256_hex(flagged[0].prompt.as_bytes())
        );
        assert_eq!(
            (items[1].stage.as_str(), items[1].reason.as_str()),
            ("repair", "ill_posed")
        );
    }
}
