//! Finds exact and near-duplicate prompts, so a release never carries the same item twice (within
//! a category, across categories, or again after an earlier release) and the copy that survives
//! is always the same one: candidates come in priority order and the earlier one survives.
//!
//! * Exact duplicates have equal texts after the card's normalisation ([`crate::quality::grade::norm`])
//!   with runs of spaces collapsed and the ends trimmed.
//! * Near duplicates have the same sequence of numbers (maximal digit runs of the normalised
//!   text) and a Jaccard similarity of their character 5-gram sets, over the same normalised
//!   text, of at least the threshold. Numbers are never normalised away: the same question with
//!   other numbers is a different item for this benchmark. Prompts with fewer than
//!   [`MIN_SHINGLES`] distinct 5-grams (under seven characters) are compared exactly only.
//! * Character 5-grams, not word 3-grams: prompts run from 10 to 600 words. A substituted word
//!   changes three of the roughly one-per-word word 3-grams, so a single edit keeps any prompt
//!   under ~29 words below 0.8; it changes about `length + 4` of the roughly six-per-word
//!   character 5-grams, so the same edit is caught from ~15 words up. After normalisation the
//!   alphabet is `[a-z0-9 ]`, so a 5-gram packs into an integer and similarities are exact.
//! * A candidate is compared with the reference prompts and with the earlier candidates that
//!   survived, never with one already dropped: in a chain A ~ B ~ C where A and C are not near
//!   duplicates, B is dropped and C survives. Survivors are thus pairwise below the threshold,
//!   and nothing is dropped for resembling something that is itself gone. Among several matches
//!   the reported one is the earliest exact match, else the most similar near match (ties go to
//!   the earliest).
//!
//! Two methods give the same answers up to the misses LSH may make:
//! * [`Method::AllPairs`] is exact: an inverted index over each prompt's rarest shingles (the
//!   prefix filter of set-similarity joins, with PPJoin's positional filter) visits only pairs
//!   that can reach the threshold. It holds every shingle set in memory.
//! * [`Method::MinHashLsh`] keeps about a hundred bytes per prompt: a one-permutation MinHash of
//!   112 bins (one hash per shingle, optimal densification) cut into 14 bands × 8 rows as in
//!   datatrove, band keys salted with the number sequence, and each bin's two low bits to
//!   estimate similarity. Band partners the estimate does not rule out are confirmed with the
//!   exact Jaccard, recomputed from the caller's texts, so there are no false positives. It may
//!   miss pairs near the threshold (the bands catch a pair at 0.8 with probability 0.92, at 0.85
//!   with 0.99) and, where its per-candidate work is capped, in dense template families.
//!
//! Results never depend on hash-map iteration order or thread count: ids are the prompts'
//! positions, every hash is seeded with a constant, and ties are broken by position. The
//! MinHash sweep looks candidates up in parallel, a block at a time, and settles them in order,
//! so its answer is that of the one-by-one sweep.

use crate::quality::grade::norm;
use crate::util::bytescan::find_digit;
use crate::util::parallel;
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::iter;

/// The Jaccard similarity from which two prompts are near duplicates unless configured otherwise.
pub const DEFAULT_THRESHOLD: f64 = 0.8;
/// [`Method::Auto`] runs all-pairs up to this many prompts (references plus candidates) and
/// MinHash LSH above it.
pub const AUTO_ALL_PAIRS_LIMIT: usize = 20_000;
/// Prompts with fewer distinct shingles than this are compared exactly only.
pub const MIN_SHINGLES: usize = 3;

const SHINGLE_CHARS: usize = 5;
const SHINGLE_MASK: u64 = (1 << (8 * SHINGLE_CHARS)) - 1;
const BANDS: usize = 14;
const ROWS_PER_BAND: usize = 8;
const BINS: usize = BANDS * ROWS_PER_BAND;
const _: () = assert!(BINS <= 256, "probe orders store bins as u8");
/// A band collision is confirmed only when the signatures estimate a similarity within this
/// margin of the threshold (see [`Sketch::may_reach`]), so the filter adds next to no misses to
/// the banding's own.
const ESTIMATE_MARGIN: f64 = 0.2;
/// Survivors visited per band for one candidate, newest first, and band partners confirmed with
/// the exact Jaccard, most similar-looking first. Ordinary data never reaches these bounds (a
/// band bucket rarely holds more than a few survivors); a dense family of templated prompts,
/// all similar but few near duplicates, would otherwise cost time quadratic in its size. Where
/// they bind, LSH may miss a duplicate, which [`agreement`] measures.
const MAX_BAND_WALK: usize = 32;
const MAX_CONFIRMATIONS: usize = 8;
/// Candidates the MinHash sweep looks up in parallel before it settles them in order.
const SWEEP_BLOCK: usize = 1024;
/// Shingles between two checks of whether a confirmation can still reach the threshold.
const HOPE_CHECK_EVERY: usize = 64;
/// Chance that two two-bit signature values agree although their minima differ.
const LANE_MATCH_BY_CHANCE: f64 = 0.25;
/// Slack for comparing a float product with an integer count.
const ROUNDING_SLACK: f64 = 1e-9;
const NO_ITEM: u32 = u32::MAX;
const EXACT_SEED: u64 = 0x5a5e_e7a1_0000_0001;
const NUMBERS_SEED: u64 = 0x5a5e_e7a1_0000_0002;
const SHINGLE_SEED: u64 = 0x5a5e_e7a1_0000_0003;
const BAND_SEED: u64 = 0x5a5e_e7a1_0000_0004;
const PROBE_SEED: u64 = 0x5a5e_e7a1_0000_0005;
const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// How a dropped candidate duplicates what it collided with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DupKind {
    Exact,
    Near { similarity: f64 },
}

/// The prompt a dropped candidate collided with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Against {
    /// Index into the reference (earlier-release) prompts.
    Reference(usize),
    /// Index of an earlier candidate that survived.
    Candidate(usize),
}

/// A candidate dropped as a duplicate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Duplicate {
    /// Index into the candidates.
    pub index: usize,
    pub against: Against,
    pub kind: DupKind,
}

/// How near duplicates are searched for; exact duplicates are always found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// Exact Jaccard over every pair that could reach the threshold.
    AllPairs,
    /// MinHash signatures and LSH bands, confirmed with the exact Jaccard.
    MinHashLsh,
    /// All-pairs up to [`AUTO_ALL_PAIRS_LIMIT`] prompts, MinHash LSH above.
    #[default]
    Auto,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DedupConfig {
    /// Jaccard similarity in (0, 1] from which two prompts are near duplicates.
    pub threshold: f64,
    pub method: Method,
}

impl Default for DedupConfig {
    fn default() -> Self {
        Self {
            threshold: DEFAULT_THRESHOLD,
            method: Method::Auto,
        }
    }
}

/// How the survivors of [`Method::AllPairs`] and [`Method::MinHashLsh`] compare on one input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agreement {
    /// Candidates that survive both methods.
    pub survive_both: usize,
    /// Candidates only all-pairs keeps (LSH dropped them, e.g. after missing an earlier drop).
    pub survive_all_pairs_only: usize,
    /// Candidates only LSH keeps (it missed their collision).
    pub survive_min_hash_only: usize,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DedupError {
    #[error("near-duplicate threshold {0} is not a Jaccard similarity in (0, 1]; use e.g. 0.8")]
    InvalidThreshold(f64),
    #[error("{count} prompts are more than deduplication can index ({max}); split the input")]
    TooManyPrompts { count: usize, max: usize },
}

/// Returns the candidates to drop, sorted by index. `reference` holds earlier-release prompts,
/// which always survive; `candidates` come in priority order. A candidate is dropped when it is an
/// exact or near duplicate of a reference prompt or of an earlier surviving candidate.
pub fn find_duplicates(
    candidates: &[&str],
    reference: &[&str],
    config: &DedupConfig,
) -> Result<Vec<Duplicate>, DedupError> {
    let threshold = checked_threshold(config.threshold)?;
    let prompts = combined(reference, candidates)?;
    if uses_all_pairs(config.method, prompts.len()) {
        return Ok(all_pairs(&prompts, reference.len(), threshold));
    }
    let sketches = parallel::map(&prompts, parallel::threads(), |prompt| sketch(prompt));
    min_hash(sketches, prompts.as_slice(), reference.len(), threshold)
}

/// The prompts being deduplicated, by position: references first, then candidates in priority
/// order. A caller that streams its prompts from a file reads one back when a comparison needs
/// its text, so only the sketches stay in memory.
pub trait Texts {
    type Error: From<DedupError>;
    fn text(&self, id: usize) -> Result<Cow<'_, str>, Self::Error>;
}

impl Texts for [&str] {
    type Error = DedupError;

    fn text(&self, id: usize) -> Result<Cow<'_, str>, DedupError> {
        Ok(Cow::Borrowed(self[id]))
    }
}

/// [`find_duplicates`] over prompts sketched one by one ([`sketch`]) as they streamed past,
/// `sketches[id]` for `texts.text(id)`; `reference_count` of them come first. The same prompts
/// give the same answer as [`find_duplicates`].
pub fn find_duplicates_sketched<T: Texts + Sync + ?Sized>(
    sketches: Vec<Sketch>,
    texts: &T,
    reference_count: usize,
    config: &DedupConfig,
) -> Result<Vec<Duplicate>, T::Error>
where
    T::Error: Send,
{
    let threshold = checked_threshold(config.threshold)?;
    checked_count(sketches.len())?;
    if !uses_all_pairs(config.method, sketches.len()) {
        return min_hash(sketches, texts, reference_count, threshold);
    }
    let owned = (0..sketches.len())
        .map(|id| texts.text(id).map(Cow::into_owned))
        .collect::<Result<Vec<String>, _>>()?;
    let prompts: Vec<&str> = owned.iter().map(String::as_str).collect();
    Ok(all_pairs(&prompts, reference_count, threshold))
}

fn uses_all_pairs(method: Method, count: usize) -> bool {
    match method {
        Method::AllPairs => true,
        Method::MinHashLsh => false,
        Method::Auto => count <= AUTO_ALL_PAIRS_LIMIT,
    }
}

/// Runs both methods on the same input and counts the candidates that survive both or only one:
/// how far MinHash LSH strays from the exact answer on this data.
pub fn agreement(
    candidates: &[&str],
    reference: &[&str],
    threshold: f64,
) -> Result<Agreement, DedupError> {
    let threshold = checked_threshold(threshold)?;
    let prompts = combined(reference, candidates)?;
    let exact = survivors(
        &all_pairs(&prompts, reference.len(), threshold),
        candidates.len(),
    );
    let sketches = parallel::map(&prompts, parallel::threads(), |prompt| sketch(prompt));
    let sketched = survivors(
        &min_hash(sketches, prompts.as_slice(), reference.len(), threshold)?,
        candidates.len(),
    );
    Ok(Agreement::between(&exact, &sketched))
}

impl Agreement {
    /// Counts from each method's survival flags, one per candidate.
    fn between(exact: &[bool], sketched: &[bool]) -> Self {
        let count = |wanted: (bool, bool)| {
            exact
                .iter()
                .zip(sketched)
                .filter(|&(&e, &s)| (e, s) == wanted)
                .count()
        };
        Self {
            survive_both: count((true, true)),
            survive_all_pairs_only: count((true, false)),
            survive_min_hash_only: count((false, true)),
        }
    }
}

fn checked_threshold(threshold: f64) -> Result<f64, DedupError> {
    if threshold > 0.0 && threshold <= 1.0 {
        Ok(threshold)
    } else {
        Err(DedupError::InvalidThreshold(threshold))
    }
}

/// References then candidates: the order in which prompts claim survival. Ids are `u32`, with
/// [`NO_ITEM`] reserved, to keep the per-prompt indexes small at a million prompts.
fn combined<'a>(reference: &[&'a str], candidates: &[&'a str]) -> Result<Vec<&'a str>, DedupError> {
    checked_count(reference.len() + candidates.len())?;
    Ok(reference.iter().chain(candidates).copied().collect())
}

fn checked_count(count: usize) -> Result<(), DedupError> {
    let max = NO_ITEM as usize;
    if count > max {
        return Err(DedupError::TooManyPrompts { count, max });
    }
    Ok(())
}

fn survivors(duplicates: &[Duplicate], candidate_count: usize) -> Vec<bool> {
    let mut survives = vec![true; candidate_count];
    for duplicate in duplicates {
        if let Some(flag) = survives.get_mut(duplicate.index) {
            *flag = false;
        }
    }
    survives
}

/// What a candidate collided with, by combined id.
#[derive(Debug, Clone, Copy)]
struct Collision {
    id: u32,
    kind: DupKind,
}

impl Collision {
    /// Exact beats near, higher similarity beats lower, then the earlier prompt wins.
    fn is_better_than(&self, other: &Self) -> bool {
        match (self.kind, other.kind) {
            (DupKind::Exact, DupKind::Near { .. }) => true,
            (DupKind::Near { .. }, DupKind::Exact) => false,
            (DupKind::Exact, DupKind::Exact) => self.id < other.id,
            (DupKind::Near { similarity: mine }, DupKind::Near { similarity: theirs }) => {
                mine.total_cmp(&theirs).then(other.id.cmp(&self.id)).is_gt()
            }
        }
    }

    fn keep_better(best: &mut Option<Self>, found: Self) {
        if best
            .as_ref()
            .is_none_or(|current| found.is_better_than(current))
        {
            *best = Some(found);
        }
    }

    fn duplicate(self, index: usize, reference_count: usize) -> Duplicate {
        let against = match (self.id as usize).checked_sub(reference_count) {
            Some(candidate) => Against::Candidate(candidate),
            None => Against::Reference(self.id as usize),
        };
        Duplicate {
            index,
            against,
            kind: self.kind,
        }
    }
}

/// The card's normalisation ([`norm`]) with runs of spaces collapsed and the ends trimmed. An
/// ASCII prompt, the common case, is mapped byte by byte exactly as `norm` maps its characters.
pub fn normalise(prompt: &str) -> String {
    let spaced;
    let chars = if prompt.is_ascii() {
        prompt
    } else {
        spaced = norm(prompt);
        &spaced
    };
    let mut text = String::with_capacity(chars.len());
    let mut after_word_gap = false;
    for byte in chars.bytes().map(|byte| byte.to_ascii_lowercase()) {
        if byte.is_ascii_lowercase() || byte.is_ascii_digit() {
            if after_word_gap && !text.is_empty() {
                text.push(' ');
            }
            after_word_gap = false;
            text.push(char::from(byte));
        } else {
            after_word_gap = true;
        }
    }
    text
}

/// The maximal digit runs of a normalised text, space-separated: "1.25" counts as "1 25".
fn number_sequence(text: &str) -> String {
    let mut sequence = Vec::new();
    write_number_sequence(text, &mut sequence);
    String::from_utf8(sequence).unwrap_or_default()
}

/// The number sequence of an ASCII prompt's normalised text, read from the prompt itself: for
/// ASCII, normalising keeps every digit and turns only non-digits into gaps or letters, so the
/// digit runs stay the same. `None` for other prompts, whose normalisation may make digits.
fn ascii_number_sequence(prompt: &str) -> Option<String> {
    prompt.is_ascii().then(|| number_sequence(prompt))
}

/// [`number_sequence`] into a reused buffer.
fn write_number_sequence(text: &str, into: &mut Vec<u8>) {
    into.clear();
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(start) = find_digit(bytes, from) {
        let run = &bytes[start..];
        let end = start
            + run
                .iter()
                .position(|b| !b.is_ascii_digit())
                .unwrap_or(run.len());
        if !into.is_empty() {
            into.push(b' ');
        }
        into.extend_from_slice(&bytes[start..end]);
        from = end;
    }
}

/// Every character 5-gram of a normalised (ASCII) text, its bytes packed into an integer.
fn shingles(text: &str) -> impl Iterator<Item = u64> + '_ {
    let mut window = 0u64;
    text.bytes().zip(1..).filter_map(move |(byte, length)| {
        window = (window << 8 | u64::from(byte)) & SHINGLE_MASK;
        (length >= SHINGLE_CHARS).then_some(window)
    })
}

fn shingle_set(text: &str) -> Vec<u64> {
    let mut set: Vec<u64> = shingles(text).collect();
    set.sort_unstable();
    set.dedup();
    set
}

/// How many elements two sorted, duplicate-free sets share, or `None` as soon as it is clear
/// that they share fewer than `required`.
fn shared_at_least<T: Ord>(a: &[T], b: &[T], required: usize) -> Option<usize> {
    let (mut i, mut j, mut shared) = (0, 0, 0);
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
        if shared + (a.len() - i).min(b.len() - j) < required {
            return None;
        }
        match x.cmp(y) {
            Ordering::Less => i += 1,
            Ordering::Greater => j += 1,
            Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    (shared >= required).then_some(shared)
}

/// Jaccard similarity of two sets of sizes `a` and `b` that share `shared` elements.
fn jaccard(shared: usize, a: usize, b: usize) -> f64 {
    let union = a + b - shared;
    if union == 0 {
        0.0
    } else {
        shared as f64 / union as f64
    }
}

/// A prompt's normalised text and the number sequence in it.
#[derive(Debug)]
struct Normalised {
    text: String,
    numbers: String,
}

impl Normalised {
    fn new(prompt: &str) -> Self {
        let text = normalise(prompt);
        Self {
            numbers: number_sequence(&text),
            text,
        }
    }
}

/// Hash maps keyed by this module's own integers and normalised texts: lookups only (never
/// iterated into results), so a fast fixed hash replaces SipHash's DoS resistance.
type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<MixHasher>>;

#[derive(Debug, Default)]
struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        mix64(self.0)
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0 = hash_bytes(bytes, self.0);
    }

    fn write_u32(&mut self, value: u32) {
        self.write_u64(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = mix64(self.0 ^ value).wrapping_add(GOLDEN_GAMMA);
    }
}

// ---------------------------------------------------------------------------------------------
// A few fixed references, checked one prompt at a time

/// A few prompts that any later prompt is checked against alone, with the rules of
/// [`find_duplicates`] for a single candidate: the author stage uses it to reject a copy of a
/// template's example item while the run can still replace it.
#[derive(Debug)]
pub struct ReferenceSet {
    references: Vec<(Normalised, Vec<u64>)>,
    threshold: f64,
}

impl ReferenceSet {
    pub fn new(prompts: &[String], threshold: f64) -> Result<Self, DedupError> {
        let threshold = checked_threshold(threshold)?;
        let references = prompts
            .iter()
            .map(|prompt| {
                let normalised = Normalised::new(prompt);
                let set = shingle_set(&normalised.text);
                (normalised, set)
            })
            .collect();
        Ok(Self {
            references,
            threshold,
        })
    }

    /// The reference `prompt` duplicates, by index, as [`find_duplicates`] would name it with
    /// these references and `prompt` as the only candidate.
    pub fn duplicated(&self, prompt: &str) -> Option<(usize, DupKind)> {
        // Both kinds of duplicate share the number sequence, and an ASCII prompt's sequence is
        // known without normalising it: most prompts are ruled out here.
        if let Some(numbers) = ascii_number_sequence(prompt) {
            if self
                .references
                .iter()
                .all(|(theirs, _)| theirs.numbers != numbers)
            {
                return None;
            }
        }
        let own = Normalised::new(prompt);
        let mut own_set = None;
        let mut best: Option<Collision> = None;
        for ((theirs, their_set), id) in self.references.iter().zip(0u32..) {
            let kind = if theirs.text == own.text {
                DupKind::Exact
            } else if theirs.numbers == own.numbers {
                let own_set = own_set.get_or_insert_with(|| shingle_set(&own.text));
                let (a, b) = (own_set.len(), their_set.len());
                if a < MIN_SHINGLES || b < MIN_SHINGLES {
                    continue;
                }
                let Some(shared) =
                    shared_at_least(own_set, their_set, required_overlap(a, b, self.threshold))
                else {
                    continue;
                };
                let similarity = jaccard(shared, a, b);
                if similarity < self.threshold {
                    continue;
                }
                DupKind::Near { similarity }
            } else {
                continue;
            };
            Collision::keep_better(&mut best, Collision { id, kind });
        }
        best.map(|found| (found.id as usize, found.kind))
    }
}

// ---------------------------------------------------------------------------------------------
// All pairs

fn all_pairs(prompts: &[&str], reference_count: usize, threshold: f64) -> Vec<Duplicate> {
    let normalised = parallel::map(prompts, parallel::threads(), |prompt| {
        Normalised::new(prompt)
    });
    let groups = number_groups(&normalised);
    let grouped_texts: Vec<Option<&str>> = normalised
        .iter()
        .zip(&groups)
        .map(|(item, group)| group.map(|_| item.text.as_str()))
        .collect();
    let sets = parallel::map(&grouped_texts, parallel::threads(), |text| {
        text.map(shingle_set).unwrap_or_default()
    });
    let (ranks, distinct) = rank_by_rarity(sets);
    let mut index = AllPairsIndex {
        texts: normalised.iter().map(|item| item.text.as_str()).collect(),
        overlaps: vec![Overlap::default(); ranks.len()],
        touched: Vec::new(),
        postings: Postings::new(&ranks, distinct, threshold),
        ranks,
        groups: groups
            .into_iter()
            .map(|group| group.unwrap_or(NO_ITEM))
            .collect(),
        exact: FastMap::default(),
        threshold,
    };
    index.sweep(reference_count, prompts.len())
}

/// Numbers each distinct number sequence shared by several prompts; `None` for a sequence only
/// one prompt has, since such a prompt can be nobody's near duplicate.
fn number_groups(normalised: &[Normalised]) -> Vec<Option<u32>> {
    let mut group_of_numbers: FastMap<&str, (u32, usize)> = FastMap::default();
    for (item, next_group) in normalised.iter().zip(0u32..) {
        group_of_numbers
            .entry(&item.numbers)
            .or_insert((next_group, 0))
            .1 += 1;
    }
    normalised
        .iter()
        .map(|item| {
            group_of_numbers
                .get(item.numbers.as_str())
                .and_then(|&(group, members)| (members > 1).then_some(group))
        })
        .collect()
}

/// Ranks every shingle in a global order from rarest to most common and returns each prompt's
/// set as sorted ranks (so a set's prefix holds its rarest shingles, which have short posting
/// lists), with the number of distinct shingles.
fn rank_by_rarity(sets: Vec<Vec<u64>>) -> (Vec<Vec<u32>>, usize) {
    let mut partial_counts = parallel::chunks(&sets, parallel::threads(), |chunk| {
        let mut frequency: FastMap<u64, u32> = FastMap::default();
        for set in chunk {
            for &shingle in set {
                *frequency.entry(shingle).or_default() += 1;
            }
        }
        frequency
    });
    partial_counts.sort_by_key(|counts| std::cmp::Reverse(counts.len()));
    let mut counts = partial_counts.into_iter();
    let mut rank_of = counts.next().unwrap_or_default();
    for partial in counts {
        for (shingle, frequency) in partial {
            *rank_of.entry(shingle).or_default() += frequency;
        }
    }
    let mut by_rarity: Vec<(u32, u64)> = rank_of
        .iter()
        .map(|(&shingle, &frequency)| (frequency, shingle))
        .collect();
    by_rarity.sort_unstable();
    for (rank, &(_, shingle)) in (0u32..).zip(&by_rarity) {
        rank_of.insert(shingle, rank);
    }
    let ranks = parallel::map(&sets, parallel::threads(), |set| {
        let mut ranks: Vec<u32> = set
            .iter()
            .filter_map(|shingle| rank_of.get(shingle).copied())
            .collect();
        ranks.sort_unstable();
        ranks
    });
    (ranks, by_rarity.len())
}

/// How many of its rarest shingles a set must share with another for their Jaccard similarity to
/// reach the threshold: `size - ⌈threshold·size⌉ + 1` (rounded towards keeping more).
fn prefix_len(size: usize, threshold: f64) -> usize {
    let overlap = (threshold * size as f64 - ROUNDING_SLACK).ceil().max(1.0) as usize;
    (size + 1).saturating_sub(overlap).min(size)
}

/// The rarest shingles of a set long enough for near-duplicate search; empty otherwise.
fn prefix(set: &[u32], threshold: f64) -> &[u32] {
    if set.len() < MIN_SHINGLES {
        &[]
    } else {
        &set[..prefix_len(set.len(), threshold)]
    }
}

/// The fewest shared elements with which sets of sizes `a` and `b` reach the threshold:
/// `shared / (a + b - shared) ≥ t` ⇔ `shared ≥ t·(a + b) / (1 + t)` (rounded towards fewer).
fn required_overlap(a: usize, b: usize, threshold: f64) -> usize {
    (threshold * (a + b) as f64 / (1.0 + threshold) - ROUNDING_SLACK)
        .ceil()
        .max(0.0) as usize
}

/// The set sizes that can reach the threshold with a set of `size` elements: Jaccard similarity
/// never exceeds the ratio of the smaller size to the larger.
fn compatible_sizes(size: usize, threshold: f64) -> std::ops::RangeInclusive<usize> {
    let smallest = (threshold * size as f64 - ROUNDING_SLACK).ceil().max(0.0) as usize;
    let largest = (size as f64 / threshold + ROUNDING_SLACK).floor() as usize;
    smallest..=largest
}

/// What probing one candidate's prefix has learnt about one survivor (PPJoin's positional
/// filter): the shingles shared so far, and the positions just past the last one, in the
/// candidate's set and the survivor's. Sets are sorted in one global order, so any further
/// shared shingle lies beyond both positions.
#[derive(Debug, Clone, Copy, Default)]
struct Overlap {
    shared: usize,
    own_end: usize,
    their_end: usize,
    ruled_out: bool,
}

impl Overlap {
    fn most_possible(&self, own_len: usize, their_len: usize) -> usize {
        self.shared + (own_len - self.own_end).min(their_len - self.their_end)
    }
}

/// A survivor whose prefix holds a shingle: which survivor, its number group, where the shingle
/// sits in its set, and the set's size.
#[derive(Debug, Clone, Copy, Default)]
struct Posting {
    id: u32,
    group: u32,
    position: u32,
    set_len: u32,
}

/// Inverted index from shingle rank to the survivors holding it in their prefix, in insertion
/// order. Every prompt's prefix is known up front, so each list gets its slot in one flat array.
struct Postings {
    starts: Vec<usize>,
    ends: Vec<usize>,
    entries: Vec<Posting>,
}

impl Postings {
    fn new(ranks: &[Vec<u32>], distinct: usize, threshold: f64) -> Self {
        let mut starts = vec![0; distinct + 1];
        for set in ranks {
            for &token in prefix(set, threshold) {
                starts[token as usize + 1] += 1;
            }
        }
        for token in 0..distinct {
            starts[token + 1] += starts[token];
        }
        Self {
            ends: starts[..distinct].to_vec(),
            entries: vec![Posting::default(); starts[distinct]],
            starts,
        }
    }

    fn list(&self, token: u32) -> &[Posting] {
        let token = token as usize;
        &self.entries[self.starts[token]..self.ends[token]]
    }

    fn push(&mut self, token: u32, posting: Posting) {
        let end = &mut self.ends[token as usize];
        self.entries[*end] = posting;
        *end += 1;
    }
}

struct AllPairsIndex<'p> {
    texts: Vec<&'p str>,
    ranks: Vec<Vec<u32>>,
    /// Prompts with equal number sequences share a group; only they can be near duplicates.
    /// A prompt alone with its sequence ([`NO_ITEM`]) has an empty set: it is never indexed.
    groups: Vec<u32>,
    /// Normalised text → earliest survivor with it.
    exact: FastMap<&'p str, u32>,
    postings: Postings,
    /// Per prompt, what the current probe learnt about it; reset after each probe.
    overlaps: Vec<Overlap>,
    touched: Vec<u32>,
    threshold: f64,
}

impl AllPairsIndex<'_> {
    /// Counts, for every survivor of the same number group sharing a prefix shingle with `own`,
    /// the shingles shared within the two prefixes, ruling a survivor out as soon as the
    /// positions of a match leave too few shingles to reach the threshold.
    fn probe(&mut self, own: &[u32], group: u32) {
        let sizes = compatible_sizes(own.len(), self.threshold);
        for (position, &token) in prefix(own, self.threshold).iter().enumerate() {
            for posting in self.postings.list(token) {
                let their_len = posting.set_len as usize;
                if posting.group != group || !sizes.contains(&their_len) {
                    continue;
                }
                let overlap = &mut self.overlaps[posting.id as usize];
                if overlap.ruled_out {
                    continue;
                }
                if overlap.shared == 0 {
                    self.touched.push(posting.id);
                }
                let at_match = Overlap {
                    own_end: position,
                    their_end: posting.position as usize,
                    ..*overlap
                };
                if at_match.most_possible(own.len(), their_len)
                    < required_overlap(own.len(), their_len, self.threshold)
                {
                    overlap.ruled_out = true;
                    continue;
                }
                *overlap = Overlap {
                    shared: overlap.shared + 1,
                    own_end: position + 1,
                    their_end: posting.position as usize + 1,
                    ruled_out: false,
                };
            }
        }
    }
}

impl AllPairsIndex<'_> {
    /// Walks the prompts in priority order: references all survive, each candidate survives
    /// unless it collides with a survivor.
    fn sweep(&mut self, reference_count: usize, total: usize) -> Vec<Duplicate> {
        let mut duplicates = Vec::new();
        for (position, id) in (0..total).zip(0u32..) {
            if position < reference_count {
                self.insert(id);
                continue;
            }
            match self.collision(id) {
                Some(collision) => duplicates
                    .push(collision.duplicate(position - reference_count, reference_count)),
                None => self.insert(id),
            }
        }
        duplicates
    }

    /// The survivor this prompt collides with, from the survivors inserted so far.
    fn collision(&mut self, id: u32) -> Option<Collision> {
        let position = id as usize;
        if let Some(&earlier) = self.exact.get(self.texts[position]) {
            return Some(Collision {
                id: earlier,
                kind: DupKind::Exact,
            });
        }
        let own = std::mem::take(&mut self.ranks[position]);
        self.probe(&own, self.groups[position]);
        let mut best = None;
        for other in self.touched.drain(..) {
            let overlap = std::mem::take(&mut self.overlaps[other as usize]);
            let theirs = &self.ranks[other as usize];
            if overlap.ruled_out
                || overlap.most_possible(own.len(), theirs.len())
                    < required_overlap(own.len(), theirs.len(), self.threshold)
            {
                continue;
            }
            let required = required_overlap(own.len(), theirs.len(), self.threshold);
            let Some(later) = shared_at_least(
                &own[overlap.own_end..],
                &theirs[overlap.their_end..],
                required.saturating_sub(overlap.shared),
            ) else {
                continue;
            };
            let similarity = jaccard(overlap.shared + later, own.len(), theirs.len());
            if similarity >= self.threshold {
                Collision::keep_better(
                    &mut best,
                    Collision {
                        id: other,
                        kind: DupKind::Near { similarity },
                    },
                );
            }
        }
        self.ranks[position] = own;
        best
    }

    fn insert(&mut self, id: u32) {
        let position = id as usize;
        self.exact.entry(self.texts[position]).or_insert(id);
        let own = &self.ranks[position];
        let posting = Posting {
            id,
            group: self.groups[position],
            position: 0,
            set_len: own.len() as u32,
        };
        for (&token, position) in prefix(own, self.threshold).iter().zip(0u32..) {
            self.postings.push(
                token,
                Posting {
                    position,
                    ..posting
                },
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// MinHash LSH

fn min_hash<T: Texts + Sync + ?Sized>(
    sketches: Vec<Sketch>,
    texts: &T,
    reference_count: usize,
    threshold: f64,
) -> Result<Vec<Duplicate>, T::Error>
where
    T::Error: Send,
{
    let count = sketches.len();
    let index = MinHashIndex::new(sketches, texts, threshold);
    let sweep = index.sweep_in_blocks(reference_count, count, parallel::threads(), SWEEP_BLOCK)?;
    Ok(sweep.duplicates)
}

impl<'a, T: ?Sized> MinHashIndex<'a, T> {
    /// Groups the prompts by exact key and by each band's key; nothing is inserted yet.
    fn new(mut sketches: Vec<Sketch>, texts: &'a T, threshold: f64) -> Self {
        let (exact, exact_slots) =
            KeyGroups::new(sketches.iter().map(|sketch| Some(sketch.exact_key)));
        let band_numbers: Vec<usize> = (0..BANDS).collect();
        let grouped = parallel::map(&band_numbers, parallel::threads(), |&band| {
            KeyGroups::new(
                sketches
                    .iter()
                    .map(|sketch| sketch.is_near().then_some(sketch.bands[band])),
            )
        });
        let mut bands = Vec::with_capacity(BANDS);
        for (band, (groups, slots)) in grouped.into_iter().enumerate() {
            for (sketch, slot) in sketches.iter_mut().zip(slots) {
                sketch.bands[band] = slot;
            }
            bands.push(groups);
        }
        Self {
            texts,
            sketches,
            exact,
            exact_slots,
            bands,
            threshold,
        }
    }
}

/// What MinHash LSH keeps of one prompt; made by [`sketch`].
pub fn sketch(prompt: &str) -> Sketch {
    static PROBES: std::sync::LazyLock<ProbeOrder> = std::sync::LazyLock::new(ProbeOrder::new);
    Sketch::new(prompt, &PROBES)
}

/// 64-bit finaliser of SplitMix64: a bijection that mixes every input bit into every output bit.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn hash_bytes(bytes: &[u8], seed: u64) -> u64 {
    let mut chunks = bytes.chunks_exact(8);
    let mut hash = mix64(seed ^ bytes.len() as u64);
    for chunk in &mut chunks {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        hash = mix64(hash ^ u64::from_le_bytes(word));
    }
    let tail = chunks.remainder();
    let mut word = [0; 8];
    word[..tail.len()].copy_from_slice(tail);
    mix64(hash ^ u64::from_le_bytes(word))
}

/// For each bin, the order in which the other bins are tried to fill it when no shingle fell in
/// it (optimal densification, Shrivastava 2017): one fixed random permutation per bin, shared by
/// every prompt, so two prompts fill a bin from the same donor whenever their donors agree.
struct ProbeOrder([[u8; BINS]; BINS]);

impl ProbeOrder {
    fn new() -> Self {
        let mut orders = [[0u8; BINS]; BINS];
        let mut state = PROBE_SEED;
        for order in &mut orders {
            for (slot, bin) in order.iter_mut().zip(0u8..) {
                *slot = bin;
            }
            for last in (1..BINS).rev() {
                state = state.wrapping_add(GOLDEN_GAMMA);
                let pick = (mix64(state) % (last as u64 + 1)) as usize;
                order.swap(last, pick);
            }
        }
        Self(orders)
    }
}

/// Each bin's minimum reduced to its two low bits (b-bit MinHash), 32 bins to a word.
type Signature = [u64; SIGNATURE_WORDS];
const SIGNATURE_WORDS: usize = BINS.div_ceil(32);
/// Every even bit: the low bit of each two-bit lane.
const LANE_LOW_BITS: u64 = 0x5555_5555_5555_5555;

/// What MinHash LSH keeps per prompt: about a hundred bytes.
#[derive(Debug, Clone)]
pub struct Sketch {
    exact_key: u64,
    /// Bins a shingle fell in before densification; 0 when the prompt has fewer than
    /// [`MIN_SHINGLES`] distinct shingles and is compared exactly only.
    filled_bins: u8,
    signature: Signature,
    /// Per band, the band's key; once the band's groups are built, the prompt's slot in them
    /// ([`NO_ITEM`] when no other prompt shares the key).
    bands: [u32; BANDS],
}

impl Default for Sketch {
    fn default() -> Self {
        Self {
            exact_key: 0,
            filled_bins: 0,
            signature: [0; SIGNATURE_WORDS],
            bands: [0; BANDS],
        }
    }
}

impl Sketch {
    /// One hash per shingle: its high half picks a bin, its low half competes for the bin's
    /// minimum (one-permutation hashing); empty bins are then densified.
    fn new(prompt: &str, probes: &ProbeOrder) -> Self {
        let text = normalise(prompt);
        let mut sketch = Self {
            exact_key: hash_bytes(text.as_bytes(), EXACT_SEED),
            ..Self::default()
        };
        let mut minima = [u32::MAX; BINS];
        let mut filled = FilledBins(0);
        for shingle in shingles(&text) {
            let hash = mix64(shingle ^ SHINGLE_SEED);
            let bin = (((hash >> 32) * BINS as u64) >> 32) as usize;
            minima[bin] = minima[bin].min(hash as u32);
            filled.add(bin);
        }
        let filled_count = filled.0.count_ones() as usize;
        if filled_count < MIN_SHINGLES && shingle_set(&text).len() < MIN_SHINGLES {
            return sketch;
        }
        sketch.filled_bins = filled_count as u8;
        let values = densify(minima, filled, probes);
        for (bin, value) in values.iter().enumerate() {
            sketch.signature[bin / 32] |= u64::from(value & 3) << (2 * (bin % 32));
        }
        let numbers_key = hash_bytes(number_sequence(&text).as_bytes(), NUMBERS_SEED);
        for ((key, rows), band) in sketch
            .bands
            .iter_mut()
            .zip(values.chunks_exact(ROWS_PER_BAND))
            .zip(1u64..)
        {
            let salt = mix64(numbers_key ^ band.wrapping_mul(BAND_SEED));
            let hash = rows
                .iter()
                .fold(salt, |hash, &value| mix64(hash ^ u64::from(value)));
            *key = (hash >> 32) as u32;
        }
        sketch
    }

    fn is_near(&self) -> bool {
        self.filled_bins > 0
    }

    /// How many bins hold equal two-bit values in both signatures.
    fn equal_bins(&self, other: &Self) -> usize {
        let unused_lanes = SIGNATURE_WORDS * 32 - BINS;
        let equal_lanes: usize = self
            .signature
            .iter()
            .zip(&other.signature)
            .map(|(a, b)| {
                let differing = a ^ b;
                (!(differing | differing >> 1) & LANE_LOW_BITS).count_ones() as usize
            })
            .sum();
        equal_lanes - unused_lanes
    }

    /// Whether `equal_bins` leaves the threshold within reach. Only prompts that filled at least
    /// half the bins are judged (fewer make the estimate too coarse). The estimate, the share of
    /// equal two-bit values corrected for the quarter that agree by chance, then has a standard
    /// deviation under 0.065 near the threshold (0.045 once all bins are filled), so
    /// [`ESTIMATE_MARGIN`] is three of them or more: a pair at the threshold is ruled out with a
    /// chance of 0.13% at most, next to the 7.6% the banding itself misses there.
    fn may_reach(&self, other: &Self, equal_bins: usize, threshold: f64) -> bool {
        if usize::from(self.filled_bins.min(other.filled_bins)) < BINS / 2 {
            return true;
        }
        let equal_share = equal_bins as f64 / BINS as f64;
        let estimate = (equal_share - LANE_MATCH_BY_CHANCE) / (1.0 - LANE_MATCH_BY_CHANCE);
        estimate >= threshold - ESTIMATE_MARGIN
    }
}

/// Which bins a shingle fell in, one bit each.
#[derive(Debug, Clone, Copy)]
struct FilledBins(u128);
const _: () = assert!(BINS <= 128, "a u128 holds one bit per bin");

impl FilledBins {
    fn add(&mut self, bin: usize) {
        self.0 |= 1 << bin;
    }

    fn contains(self, bin: usize) -> bool {
        self.0 >> bin & 1 == 1
    }
}

/// Fills each empty bin from the first originally filled bin in its probe order.
fn densify(minima: [u32; BINS], filled: FilledBins, probes: &ProbeOrder) -> [u32; BINS] {
    let mut values = minima;
    for (bin, (value, order)) in values.iter_mut().zip(&probes.0).enumerate() {
        if !filled.contains(bin) {
            let donor = order
                .iter()
                .map(|&bin| usize::from(bin))
                .find(|&bin| filled.contains(bin));
            *value = donor.map_or(0, |donor| minima[donor]);
        }
    }
    values
}

/// The prompts that share a key with at least one other prompt, grouped by key, each holding a
/// slot; the survivors of each group are threaded on a chain, newest first, so a lookup visits
/// only the survivors that share the prompt's key. Prompts with a key of their own get no slot
/// and cost nothing.
#[derive(Debug, Default)]
struct KeyGroups {
    id_of_slot: Vec<u32>,
    group_of_slot: Vec<u32>,
    next_of_slot: Vec<u32>,
    newest_of_group: Vec<u32>,
}

impl KeyGroups {
    /// Groups prompts by key (`None`: takes no part) and returns each prompt's slot.
    fn new<K: Ord + Copy>(keys: impl ExactSizeIterator<Item = Option<K>>) -> (Self, Vec<u32>) {
        let mut slots = vec![NO_ITEM; keys.len()];
        let mut by_key: Vec<(K, u32)> = keys
            .zip(0u32..)
            .filter_map(|(key, id)| key.map(|key| (key, id)))
            .collect();
        by_key.sort_unstable();
        let mut groups = Self::default();
        for run in by_key
            .chunk_by(|a, b| a.0 == b.0)
            .filter(|run| run.len() > 1)
        {
            let group = groups.newest_of_group.len() as u32;
            groups.newest_of_group.push(NO_ITEM);
            for &(_, id) in run {
                slots[id as usize] = groups.id_of_slot.len() as u32;
                groups.id_of_slot.push(id);
                groups.group_of_slot.push(group);
                groups.next_of_slot.push(NO_ITEM);
            }
        }
        (groups, slots)
    }

    fn insert(&mut self, slot: u32) {
        let group = self.group_of_slot[slot as usize] as usize;
        self.next_of_slot[slot as usize] = self.newest_of_group[group];
        self.newest_of_group[group] = slot;
    }

    /// The newest inserted prompt in `slot`'s group.
    fn newest(&self, slot: u32) -> Option<u32> {
        let newest = self.newest_of_group[self.group_of_slot[slot as usize] as usize];
        (newest != NO_ITEM).then(|| self.id_of_slot[newest as usize])
    }

    /// The inserted prompts in `slot`'s group, newest first.
    fn members(&self, slot: u32) -> impl Iterator<Item = u32> + '_ {
        let mut cursor = self.newest_of_group[self.group_of_slot[slot as usize] as usize];
        iter::from_fn(move || {
            let member = cursor;
            (member != NO_ITEM).then(|| {
                cursor = self.next_of_slot[member as usize];
                self.id_of_slot[member as usize]
            })
        })
    }
}

struct MinHashIndex<'a, T: ?Sized> {
    texts: &'a T,
    sketches: Vec<Sketch>,
    exact: KeyGroups,
    exact_slots: Vec<u32>,
    bands: Vec<KeyGroups>,
    threshold: f64,
}

/// What one thread needs to confirm band partners: the shingles and number sequences of the
/// candidate being confirmed and of the partner it is compared with, and recently read texts.
struct Confirmer {
    own_shingles: ShingleTable,
    their_shingles: ShingleTable,
    own_numbers: Vec<u8>,
    their_numbers: Vec<u8>,
    recent: RecentTexts,
}

impl Confirmer {
    /// One of `threads` confirmers, which share the budget of [`RecentTexts`].
    fn one_of(threads: usize) -> Self {
        Self {
            own_shingles: ShingleTable::default(),
            their_shingles: ShingleTable::default(),
            own_numbers: Vec::new(),
            their_numbers: Vec::new(),
            recent: RecentTexts::with_budget(RecentTexts::BUDGET / threads.max(1)),
        }
    }
}

/// The distinct shingles of one text in an open-addressing table, so the MinHash confirmation
/// counts the shingles two texts share without sorting either set. Reused from text to text:
/// each slot packs a shingle (40 bits) with the stamp of the fill that wrote it (24 bits), and a
/// slot belongs to the current fill only when its stamp is the table's.
#[derive(Debug, Default)]
struct ShingleTable {
    slots: Vec<u64>,
    stamp: u64,
    len: usize,
}

impl ShingleTable {
    const KEY_BITS: u32 = 8 * SHINGLE_CHARS as u32;
    const STAMPS: u64 = 1 << (64 - Self::KEY_BITS);

    /// Empties the table and adds every shingle of `text`.
    fn fill(&mut self, text: &str) {
        self.clear(text.len());
        for shingle in shingles(text) {
            self.insert(shingle);
        }
    }

    /// Empties the table, with room for `most` shingles at half load or less.
    fn clear(&mut self, most: usize) {
        let slots = (2 * most).next_power_of_two().max(16);
        self.stamp += 1;
        if self.slots.len() < slots || self.stamp == Self::STAMPS {
            self.slots = vec![0; slots.max(self.slots.len())];
            self.stamp = 1;
        }
        self.len = 0;
    }

    /// The slot holding `shingle`, or the free slot where it belongs, and whether it holds it.
    fn slot(&self, shingle: u64) -> (usize, bool) {
        let mask = self.slots.len() - 1;
        let wanted = self.stamp << Self::KEY_BITS | shingle;
        let mut slot = (shingle.wrapping_mul(GOLDEN_GAMMA) >> 32) as usize & mask;
        loop {
            let held = self.slots[slot];
            if held == wanted {
                return (slot, true);
            }
            if held >> Self::KEY_BITS != self.stamp {
                return (slot, false);
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Adds a shingle; true when it was not in the table yet.
    fn insert(&mut self, shingle: u64) -> bool {
        let (slot, held) = self.slot(shingle);
        if !held {
            self.slots[slot] = self.stamp << Self::KEY_BITS | shingle;
            self.len += 1;
        }
        !held
    }

    fn contains(&self, shingle: u64) -> bool {
        self.slot(shingle).1
    }
}

/// The normalised texts of recently compared prompts, by id, in a fixed number of slots (one
/// place per id) holding at most a budget of bytes of text (96 MiB, shared out among the
/// sweep's threads). In a template family one survivor is the confirmation partner of many later
/// candidates, and a streaming caller would read it back from disk every time.
struct RecentTexts {
    slots: Vec<Option<(u32, std::sync::Arc<str>)>>,
    bytes: usize,
    budget: usize,
}

impl RecentTexts {
    const SLOTS: usize = 65_536;
    const BUDGET: usize = 96 << 20;

    fn with_budget(budget: usize) -> Self {
        Self {
            slots: vec![None; Self::SLOTS],
            bytes: 0,
            budget,
        }
    }

    fn normalised<T: Texts + ?Sized>(
        &mut self,
        texts: &T,
        id: u32,
    ) -> Result<std::sync::Arc<str>, T::Error> {
        let slot = &mut self.slots[id as usize % Self::SLOTS];
        if let Some((held, text)) = slot {
            if *held == id {
                return Ok(text.clone());
            }
        }
        let text: std::sync::Arc<str> = normalise(&texts.text(id as usize)?).into();
        if let Some((_, evicted)) = slot.take() {
            self.bytes -= evicted.len();
        }
        if self.bytes + text.len() <= self.budget {
            self.bytes += text.len();
            *slot = Some((id, text.clone()));
        }
        Ok(text)
    }
}

impl Confirmer {
    /// The Jaccard similarity of the candidate's shingle set (in `own_shingles`) and the set of
    /// `theirs`, when both are long enough to compare and it reaches the threshold.
    ///
    /// Gives up as soon as the shingles still to come could not lift it to the threshold even if
    /// every one were new and shared.
    fn near_similarity(&mut self, theirs: &str, threshold: f64) -> Option<f64> {
        let table = &mut self.their_shingles;
        table.clear(theirs.len());
        let a = self.own_shingles.len;
        let total = theirs.len().saturating_sub(SHINGLE_CHARS - 1);
        let mut shared = 0;
        for (seen, shingle) in (1..).zip(shingles(theirs)) {
            if table.insert(shingle) && self.own_shingles.contains(shingle) {
                shared += 1;
            }
            if seen % HOPE_CHECK_EVERY == 0 {
                let left = total - seen;
                if jaccard(shared + left, a, table.len + left) < threshold {
                    return None;
                }
            }
        }
        let b = table.len;
        if a < MIN_SHINGLES || b < MIN_SHINGLES || shared < required_overlap(a, b, threshold) {
            return None;
        }
        let similarity = jaccard(shared, a, b);
        (similarity >= threshold).then_some(similarity)
    }
}

impl<T: Texts + ?Sized> MinHashIndex<'_, T> {
    /// The earliest survivor whose normalised text equals this prompt's.
    fn exact_match(
        &self,
        confirmer: &mut Confirmer,
        id: u32,
    ) -> Result<Option<Collision>, T::Error> {
        let slot = self.exact_slots[id as usize];
        if slot == NO_ITEM {
            return Ok(None);
        }
        let same_key: Vec<u32> = self.exact.members(slot).collect();
        if same_key.is_empty() {
            return Ok(None);
        }
        let text = confirmer.recent.normalised(self.texts, id)?;
        let mut earliest = None;
        for other in same_key {
            if confirmer.recent.normalised(self.texts, other)? == text {
                earliest = Some(earliest.map_or(other, |found: u32| found.min(other)));
            }
        }
        Ok(earliest.map(|other| Collision {
            id: other,
            kind: DupKind::Exact,
        }))
    }

    /// Survivors sharing a band with this prompt whose signatures do not rule out the threshold,
    /// most similar-looking first: at most [`MAX_BAND_WALK`] per band, [`MAX_CONFIRMATIONS`] in
    /// all.
    fn near_partners(&self, id: u32) -> Vec<u32> {
        let own = &self.sketches[id as usize];
        let mut partners: Vec<u32> = self
            .bands
            .iter()
            .zip(own.bands)
            .filter(|&(_, slot)| slot != NO_ITEM)
            .flat_map(|(band, slot)| band.members(slot).take(MAX_BAND_WALK))
            .collect();
        partners.sort_unstable();
        partners.dedup();
        let mut promising: Vec<(std::cmp::Reverse<usize>, u32)> = partners
            .into_iter()
            .filter_map(|other| {
                let theirs = &self.sketches[other as usize];
                let equal_bins = own.equal_bins(theirs);
                own.may_reach(theirs, equal_bins, self.threshold)
                    .then_some((std::cmp::Reverse(equal_bins), other))
            })
            .collect();
        promising.sort_unstable();
        promising.truncate(MAX_CONFIRMATIONS);
        promising.into_iter().map(|(_, other)| other).collect()
    }

    /// The survivor this prompt collides with, from the survivors inserted so far, with every
    /// band partner's confirmation. A partner found in `earlier` (an earlier lookup of the same
    /// prompt) is not confirmed again: a pair's similarity never changes.
    fn collision(
        &self,
        confirmer: &mut Confirmer,
        id: u32,
        earlier: &[Confirmation],
    ) -> Result<Lookup, T::Error> {
        if let Some(exact) = self.exact_match(confirmer, id)? {
            return Ok(Lookup::settled(exact));
        }
        let partners = self.near_partners(id);
        let mut lookup = Lookup {
            collision: None,
            confirmations: Vec::with_capacity(partners.len()),
            reused: 0,
        };
        let mut own_read = false;
        for other in partners {
            let known = earlier.iter().find(|done| done.partner == other);
            let similarity = match known {
                Some(done) => {
                    lookup.reused += 1;
                    done.similarity
                }
                None => {
                    if !own_read {
                        let own = confirmer.recent.normalised(self.texts, id)?;
                        confirmer.own_shingles.fill(&own);
                        write_number_sequence(&own, &mut confirmer.own_numbers);
                        own_read = true;
                    }
                    self.confirm(confirmer, other)?
                }
            };
            lookup.confirmations.push(Confirmation {
                partner: other,
                similarity,
            });
            if let Some(similarity) = similarity {
                let found = Collision {
                    id: other,
                    kind: DupKind::Near { similarity },
                };
                Collision::keep_better(&mut lookup.collision, found);
            }
        }
        Ok(lookup)
    }

    /// The similarity of the candidate in `confirmer` to survivor `other`, when they are near
    /// duplicates: the same number sequence and a Jaccard similarity at the threshold or above.
    fn confirm(&self, confirmer: &mut Confirmer, other: u32) -> Result<Option<f64>, T::Error> {
        let theirs = confirmer.recent.normalised(self.texts, other)?;
        write_number_sequence(&theirs, &mut confirmer.their_numbers);
        if confirmer.their_numbers != confirmer.own_numbers {
            return Ok(None);
        }
        Ok(confirmer.near_similarity(&theirs, self.threshold))
    }

    fn insert(&mut self, id: u32) {
        let slot = self.exact_slots[id as usize];
        if slot != NO_ITEM {
            self.exact.insert(slot);
        }
        for (band, slot) in self.bands.iter_mut().zip(self.sketches[id as usize].bands) {
            if slot != NO_ITEM {
                band.insert(slot);
            }
        }
    }

    /// Whether a survivor from `first` on shares a key group (exact or band) with this prompt:
    /// only then can its collision differ from the one found among the survivors before `first`.
    fn has_survivor_since(&self, id: u32, first: u32) -> bool {
        let since = |groups: &KeyGroups, slot: u32| {
            slot != NO_ITEM && groups.newest(slot).is_some_and(|newest| newest >= first)
        };
        since(&self.exact, self.exact_slots[id as usize])
            || self
                .bands
                .iter()
                .zip(self.sketches[id as usize].bands)
                .any(|(band, slot)| since(band, slot))
    }
}

/// What one lookup of a candidate found: the survivor it collides with, and each band partner
/// it confirmed with the outcome, so a second lookup need not confirm them again.
struct Lookup {
    collision: Option<Collision>,
    confirmations: Vec<Confirmation>,
    /// Partners whose outcome came from an earlier lookup.
    reused: usize,
}

impl Lookup {
    fn settled(collision: Collision) -> Self {
        Self {
            collision: Some(collision),
            confirmations: Vec::new(),
            reused: 0,
        }
    }
}

/// A band partner's exact comparison: its similarity when it is a near duplicate, else `None`.
struct Confirmation {
    partner: u32,
    similarity: Option<f64>,
}

/// The candidates a sweep dropped, how many candidates it looked up a second time, and how many
/// confirmations those second lookups took from the first.
struct BlockSweep {
    duplicates: Vec<Duplicate>,
    rechecked: usize,
    reused: usize,
}

impl<T: Texts + Sync + ?Sized> MinHashIndex<'_, T>
where
    T::Error: Send,
{
    /// The sweep in priority order (references all survive; a candidate survives unless it
    /// collides with a survivor), done in blocks of `block` candidates so that `threads` share
    /// the work and the answer stays that of the one-by-one sweep.
    ///
    /// Each candidate of a block is first looked up, in parallel, among the survivors before the
    /// block. Then, in order, that answer stands unless a survivor of the block itself shares a
    /// key group with the candidate: the lookup visits only the candidate's groups, so it would
    /// have seen the same survivors. Otherwise the candidate is looked up again, alone, taking
    /// the outcome of every partner the first lookup confirmed from it (the second lookups run
    /// on one thread, so confirming a pair twice would keep the other core waiting).
    fn sweep_in_blocks(
        mut self,
        reference_count: usize,
        total: usize,
        threads: usize,
        block: usize,
    ) -> Result<BlockSweep, T::Error> {
        for id in (0u32..).take(reference_count) {
            self.insert(id);
        }
        let mut confirmers: Vec<Confirmer> = (0..threads.max(1))
            .map(|_| Confirmer::one_of(threads))
            .collect();
        let candidates: Vec<u32> = (0u32..).take(total).skip(reference_count).collect();
        let mut sweep = BlockSweep {
            duplicates: Vec::new(),
            rechecked: 0,
            reused: 0,
        };
        for ids in candidates.chunks(block.max(1)) {
            let Some(&first) = ids.first() else { continue };
            let index = &self;
            let looked_up = parallel::map_with(ids, &mut confirmers, |confirmer, &id| {
                index.collision(confirmer, id, &[])
            });
            for (&id, looked_up) in ids.iter().zip(looked_up) {
                let collision = if self.has_survivor_since(id, first) {
                    sweep.rechecked += 1;
                    let earlier = looked_up.as_ref().map_or(&[][..], |l| &l.confirmations);
                    let again = self.collision(&mut confirmers[0], id, earlier)?;
                    sweep.reused += again.reused;
                    again.collision
                } else {
                    looked_up?.collision
                };
                match collision {
                    Some(collision) => sweep
                        .duplicates
                        .push(collision.duplicate(id as usize - reference_count, reference_count)),
                    None => self.insert(id),
                }
            }
        }
        Ok(sweep)
    }
}

#[cfg(test)]
#[allow(clippy::print_stdout)] // test reports, not user output
mod tests {
    use super::*;
    use std::time::Instant;

    const PORT_QUESTION: &str = "Our payments team is migrating the billing database to a new \
        cluster next quarter. Which configuration parameter controls how long an idle client \
        connection stays open before the server closes it, and where should we set it?";

    fn config(method: Method) -> DedupConfig {
        DedupConfig {
            threshold: DEFAULT_THRESHOLD,
            method,
        }
    }

    fn both_methods(candidates: &[&str], reference: &[&str]) -> Vec<Duplicate> {
        let exact = find_duplicates(candidates, reference, &config(Method::AllPairs));
        let sketched = find_duplicates(candidates, reference, &config(Method::MinHashLsh));
        assert_eq!(exact, sketched, "the two methods disagree");
        exact.unwrap_or_default()
    }

    fn similarity(a: &str, b: &str) -> f64 {
        let (a, b) = (shingle_set(&normalise(a)), shingle_set(&normalise(b)));
        jaccard(
            shared_at_least(&a, &b, 0).unwrap_or_default(),
            a.len(),
            b.len(),
        )
    }

    #[test]
    fn normalisation_is_the_cards_with_spaces_collapsed() {
        let collapsed = |text: &str| norm(text).split_whitespace().collect::<Vec<_>>().join(" ");
        let mut samples: Vec<String> = (0u8..128)
            .map(char::from)
            .map(|c| format!("{c}Ab{c}{c}9 z{c}"))
            .collect();
        samples.extend(
            [
                "  Kubernetes 1.25!  ",
                "$1,234.50\tUSD\n",
                "İstanbul ẞtraße – café",
                "",
                "?!",
            ]
            .map(str::to_string),
        );
        for sample in &samples {
            assert_eq!(normalise(sample), collapsed(sample), "{sample:?}");
        }
    }

    #[test]
    fn exact_duplicate_after_punctuation_and_case_changes_is_dropped() {
        let shouted = "OUR payments team is migrating the billing-database to a new cluster \
            next quarter!! Which configuration parameter controls how long an idle client \
            connection stays open before the server closes it -- and where should we set it";
        let duplicates = both_methods(&[PORT_QUESTION, shouted], &[]);
        assert_eq!(
            duplicates,
            [Duplicate {
                index: 1,
                against: Against::Candidate(0),
                kind: DupKind::Exact
            }]
        );
    }

    #[test]
    fn near_duplicate_with_a_reworded_and_a_dropped_word_is_dropped() {
        let reworded = "Our payments team is moving the billing database to a new cluster next \
            quarter. Which configuration parameter controls how long an idle client connection \
            stays open before the server closes it, and where should we set it?";
        let reworded_and_shorter = reworded.replace("idle client", "idle");
        let duplicates = both_methods(&[PORT_QUESTION, &reworded_and_shorter], &[]);
        let [Duplicate {
            index: 1,
            against: Against::Candidate(0),
            kind: DupKind::Near { similarity },
        }] = duplicates[..]
        else {
            panic!("expected candidate 1 near candidate 0, got {duplicates:?}");
        };
        assert!(
            (DEFAULT_THRESHOLD..1.0).contains(&similarity),
            "{similarity}"
        );
    }

    #[test]
    fn prompts_differing_only_in_numbers_are_kept_apart() {
        let three = "A service runs on 3 replicas with 99.9% availability each and fails over \
            in 40 seconds. Assuming independent failures, what is the expected monthly downtime \
            in minutes for the whole service across a 30-day month?";
        let four = three.replace("3 replicas", "4 replicas");
        let decimal = three.replace("99.9%", "99.95%");
        assert!(similarity(three, &four) >= DEFAULT_THRESHOLD);
        assert!(similarity(three, &decimal) >= DEFAULT_THRESHOLD);
        assert_eq!(both_methods(&[three, &four, &decimal], &[]), []);
    }

    #[test]
    fn a_reference_set_names_the_reference_find_duplicates_names() {
        let reworded = PORT_QUESTION.replace("next quarter", "this quarter");
        let renumbered = PORT_QUESTION.replace("next quarter", "in 2 weeks");
        let near_both = PORT_QUESTION.replace("billing", "invoicing");
        let references = [
            "Which port does SMTP submission use?".to_string(),
            reworded.clone(),
            PORT_QUESTION.to_uppercase(),
            "Hmmmmm".to_string(),
        ];
        let set = ReferenceSet::new(&references, DEFAULT_THRESHOLD).unwrap();
        let reference: Vec<&str> = references.iter().map(String::as_str).collect();
        let tried = [
            PORT_QUESTION,
            &reworded,
            &renumbered,
            &near_both,
            "Hmmmmmm",
            "hmmmmm?",
            "What is the capital of France?",
        ];
        let mut duplicated = 0;
        for candidate in tried {
            let expected = find_duplicates(&[candidate], &reference, &config(Method::AllPairs))
                .unwrap()
                .first()
                .map(|found| match found.against {
                    Against::Reference(r) => (r, found.kind),
                    Against::Candidate(c) => panic!("one candidate collided with {c}"),
                });
            duplicated += usize::from(expected.is_some());
            assert_eq!(set.duplicated(candidate), expected, "{candidate}");
        }
        assert_eq!(
            duplicated, 4,
            "two exact, one near and the short exact match"
        );
    }

    proptest::proptest! {
        #[test]
        fn a_number_sequence_is_the_digit_runs_joined_by_single_spaces(
            text in "([ -~\t\n]|[0-9]{1,12}|é|５){0,40}"
        ) {
            let runs: Vec<&str> = text
                .split(|c: char| !c.is_ascii_digit())
                .filter(|run| !run.is_empty())
                .collect();
            proptest::prop_assert_eq!(number_sequence(&text), runs.join(" "));
        }

        #[test]
        fn an_ascii_prompts_number_sequence_is_its_normalised_texts(
            prompt in "[ -~\t\n]{0,60}"
        ) {
            proptest::prop_assert_eq!(
                ascii_number_sequence(&prompt),
                Some(Normalised::new(&prompt).numbers)
            );
        }
    }

    #[test]
    fn only_ascii_prompts_take_the_number_shortcut() {
        assert_eq!(
            ascii_number_sequence("Port 5061, v1.2"),
            Some("5061 1 2".into())
        );
        assert_eq!(ascii_number_sequence("Port ５０６１"), None);
    }

    #[test]
    fn prompts_with_fewer_than_three_shingles_are_compared_exactly_only() {
        // Both have the shingles {"hmmmm", "mmmmm"}: similarity 1, yet different texts.
        assert_eq!(similarity("Hmmmmm", "Hmmmmmm"), 1.0);
        assert_eq!(both_methods(&["Hmmmmm", "Hmmmmmm"], &[]), []);
        assert_eq!(both_methods(&["Hmmmmm", "hmmmmm?"], &[]).len(), 1);
    }

    #[test]
    fn the_earlier_candidate_survives() {
        let later_first = PORT_QUESTION.replace("next quarter", "this quarter");
        for (first, second) in [
            (PORT_QUESTION, later_first.as_str()),
            (&later_first, PORT_QUESTION),
        ] {
            let duplicates = both_methods(&[first, second], &[]);
            assert_eq!(duplicates.len(), 1);
            assert_eq!(duplicates[0].index, 1);
            assert_eq!(duplicates[0].against, Against::Candidate(0));
        }
    }

    #[test]
    fn a_candidate_colliding_with_a_reference_prompt_is_dropped_against_it() {
        let older = "What is the default port of the PostgreSQL server?";
        let near = PORT_QUESTION.replace("payments team", "payment team");
        let duplicates = both_methods(
            &[&near, "what is the default PORT of the postgresql server"],
            &[older, PORT_QUESTION],
        );
        assert_eq!(duplicates.len(), 2);
        assert_eq!(duplicates[0].index, 0);
        assert_eq!(duplicates[0].against, Against::Reference(1));
        assert!(matches!(duplicates[0].kind, DupKind::Near { .. }));
        assert_eq!(
            duplicates[1],
            Duplicate {
                index: 1,
                against: Against::Reference(0),
                kind: DupKind::Exact
            }
        );
    }

    #[test]
    fn in_a_chain_the_third_is_compared_with_survivors_only_and_survives() {
        let a = PORT_QUESTION;
        let b = a.replace("payments team is migrating", "finance team is moving");
        let c = b.replace("where should we set it", "in which file is it");
        assert!(
            similarity(a, &b) >= DEFAULT_THRESHOLD,
            "{}",
            similarity(a, &b)
        );
        assert!(
            similarity(&b, &c) >= DEFAULT_THRESHOLD,
            "{}",
            similarity(&b, &c)
        );
        assert!(
            similarity(a, &c) < DEFAULT_THRESHOLD,
            "{}",
            similarity(a, &c)
        );
        let duplicates = both_methods(&[a, &b, &c], &[]);
        assert_eq!(duplicates.len(), 1, "{duplicates:?}");
        assert_eq!(duplicates[0].index, 1);
    }

    #[test]
    fn the_most_similar_survivor_is_reported() {
        let close = PORT_QUESTION.replace("next quarter", "soon");
        let closer = PORT_QUESTION.replace("next quarter", "next month");
        let candidate = PORT_QUESTION;
        assert!(similarity(candidate, &close) >= DEFAULT_THRESHOLD);
        assert!(similarity(candidate, &closer) > similarity(candidate, &close));
        let duplicates = both_methods(&[candidate], &[&close, &closer]);
        assert_eq!(duplicates[0].against, Against::Reference(1));
    }

    #[test]
    fn no_prompts_have_no_duplicates() {
        assert_eq!(both_methods(&[], &[]), []);
        assert_eq!(both_methods(&[], &[PORT_QUESTION]), []);
    }

    #[test]
    fn an_invalid_threshold_is_an_error() {
        for threshold in [0.0, -0.5, 1.5, f64::NAN] {
            let config = DedupConfig {
                threshold,
                method: Method::Auto,
            };
            assert!(matches!(
                find_duplicates(&["a prompt"], &[], &config),
                Err(DedupError::InvalidThreshold(_))
            ));
        }
    }

    /// Deterministic generator of realistic-looking prompts (SplitMix64).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(GOLDEN_GAMMA);
            mix64(self.0)
        }

        fn below(&mut self, bound: usize) -> usize {
            (self.next() % bound as u64) as usize
        }

        fn chance(&mut self, percent: usize) -> bool {
            self.below(100) < percent
        }
    }

    const COMMON: &[&str] = &[
        "the", "a", "of", "to", "and", "in", "for", "is", "on", "that", "with", "our", "we",
        "please", "can", "you", "what", "which", "how", "after", "before", "per", "each", "this",
        "it", "be", "by", "from", "at", "as", "are", "was", "will", "should", "would", "if",
        "when", "not", "all", "team", "new", "last", "next",
    ];
    const DOMAIN: &[&str] = &[
        "invoice",
        "cluster",
        "latency",
        "deployment",
        "customer",
        "ticket",
        "region",
        "replica",
        "outage",
        "budget",
        "contract",
        "renewal",
        "vendor",
        "license",
        "database",
        "query",
        "cache",
        "timeout",
        "endpoint",
        "token",
        "quota",
        "capacity",
        "forecast",
        "revenue",
        "churn",
        "escalation",
        "incident",
        "postmortem",
        "rollback",
        "migration",
        "backup",
        "retention",
        "policy",
        "compliance",
        "audit",
        "firewall",
        "certificate",
        "gateway",
        "throughput",
        "storage",
        "bucket",
        "pipeline",
        "release",
        "sprint",
        "roadmap",
        "headcount",
        "payroll",
        "shipment",
        "warehouse",
        "supplier",
        "Kubernetes",
        "PostgreSQL",
        "Redis",
        "Kafka",
        "Terraform",
        "nginx",
        "OAuth",
        "SLA",
        "SOW",
        "RFC",
        "API",
    ];
    const ONSETS: &[&str] = &[
        "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
        "br", "cr", "dr", "pl", "st", "tr", "sh", "ch", "th",
    ];
    const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ai", "ea", "ou"];
    const CODAS: &[&str] = &["", "", "", "n", "r", "s", "t", "l", "m", "nd", "st"];

    /// 20,000 pronounceable made-up words, drawn later with Zipf-like frequencies.
    fn vocabulary(rng: &mut Rng) -> Vec<String> {
        (0..20_000)
            .map(|_| {
                let syllables = 1 + rng.below(4);
                let mut word = String::new();
                for _ in 0..syllables {
                    word.push_str(ONSETS[rng.below(ONSETS.len())]);
                    word.push_str(VOWELS[rng.below(VOWELS.len())]);
                    word.push_str(CODAS[rng.below(CODAS.len())]);
                }
                word
            })
            .collect()
    }

    fn number(rng: &mut Rng) -> String {
        match rng.below(5) {
            0 => format!("{}.{}", rng.below(100), rng.below(100)),
            1 => format!("${},{:03}", 1 + rng.below(99), rng.below(1000)),
            2 => format!("{}%", rng.below(100)),
            _ => rng.below(100_000).to_string(),
        }
    }

    fn word(rng: &mut Rng, vocabulary: &[String]) -> String {
        match rng.below(100) {
            0..=39 => COMMON[rng.below(COMMON.len())].to_string(),
            40..=49 => DOMAIN[rng.below(DOMAIN.len())].to_string(),
            _ => {
                // Log-uniform ranks: word frequency falls as 1/rank (Zipf).
                let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
                let rank = (vocabulary.len() as f64).powf(u) as usize - 1;
                vocabulary[rank.min(vocabulary.len() - 1)].clone()
            }
        }
    }

    fn fresh_prompt(rng: &mut Rng, vocabulary: &[String], max_words: usize) -> String {
        let words = 10 + rng.below(max_words - 9);
        let numbers_percent = if rng.chance(30) { 0 } else { 4 };
        let mut text = String::new();
        let mut sentence_start = true;
        for position in 0..words {
            if position > 0 {
                text.push(' ');
            }
            let mut token = if rng.chance(numbers_percent) {
                number(rng)
            } else {
                word(rng, vocabulary)
            };
            if sentence_start {
                token = token[..1].to_uppercase() + &token[1..];
            }
            text.push_str(&token);
            sentence_start = rng.chance(8);
            if sentence_start {
                text.push('.');
            }
        }
        text.push('?');
        text
    }

    fn is_number(token: &str) -> bool {
        token.chars().any(|c| c.is_ascii_digit())
    }

    /// One to three word-level edits (replace or drop a word that holds no number).
    fn near_variant(rng: &mut Rng, vocabulary: &[String], base: &str) -> String {
        let mut words: Vec<String> = base.split(' ').map(str::to_string).collect();
        for _ in 0..1 + rng.below(3) {
            let position = rng.below(words.len());
            if is_number(&words[position]) || words.len() < 4 {
                continue;
            }
            if rng.chance(50) {
                words[position] = word(rng, vocabulary);
            } else {
                words.remove(position);
            }
        }
        words.join(" ")
    }

    fn exact_variant(rng: &mut Rng, base: &str) -> String {
        let shouted = if rng.chance(50) {
            base.to_uppercase()
        } else {
            base.to_lowercase()
        };
        shouted.replace(' ', "  ").replace('?', " !!") + "..."
    }

    fn number_variant(rng: &mut Rng, base: &str) -> Option<String> {
        let mut words: Vec<String> = base.split(' ').map(str::to_string).collect();
        let numbered: Vec<usize> = (0..words.len()).filter(|&i| is_number(&words[i])).collect();
        let position = *numbered.get(rng.below(numbered.len().max(1)))?;
        words[position] = format!("{}7", words[position].trim_end_matches(['.', '?']));
        Some(words.join(" "))
    }

    /// Prompts of 10 to `max_words` words, with planted exact copies (3%), near copies (8%) and
    /// copies with one number changed (3%) of earlier prompts. Returns the prompts and the
    /// positions of the exact copies.
    fn generated_prompts(count: usize, max_words: usize, seed: u64) -> (Vec<String>, Vec<usize>) {
        let mut rng = Rng(seed);
        let vocabulary = vocabulary(&mut rng);
        let mut prompts: Vec<String> = Vec::with_capacity(count);
        let mut exact_copies = Vec::new();
        while prompts.len() < count {
            let roll = rng.below(100);
            let base = (!prompts.is_empty()).then(|| prompts[rng.below(prompts.len())].clone());
            let mut prompt = match (roll, base) {
                (0..=2, Some(base)) => {
                    exact_copies.push(prompts.len());
                    exact_variant(&mut rng, &base)
                }
                (3..=10, Some(base)) => near_variant(&mut rng, &vocabulary, &base),
                (11..=13, Some(base)) => match number_variant(&mut rng, &base) {
                    Some(variant) => variant,
                    None => continue,
                },
                _ => fresh_prompt(&mut rng, &vocabulary, max_words),
            };
            prompt.shrink_to_fit();
            prompts.push(prompt);
        }
        (prompts, exact_copies)
    }

    /// Prompts owned by the caller and read one by one, as a streaming caller reads them back.
    struct Owned(Vec<String>);

    impl Texts for Owned {
        type Error = DedupError;

        fn text(&self, id: usize) -> Result<Cow<'_, str>, DedupError> {
            Ok(Cow::Owned(self.0[id].clone()))
        }
    }

    #[test]
    fn prompts_sketched_one_by_one_give_the_duplicates_of_the_prompts_in_memory() {
        let (prompts, _) = generated_prompts(3_000, 450, 11);
        let (reference, candidates) = prompts.split_at(200);
        let reference: Vec<&str> = reference.iter().map(String::as_str).collect();
        let candidates: Vec<&str> = candidates.iter().map(String::as_str).collect();
        for method in [Method::AllPairs, Method::MinHashLsh] {
            let in_memory = find_duplicates(&candidates, &reference, &config(method));
            let streamed = find_duplicates_sketched(
                prompts.iter().map(|p| sketch(p)).collect(),
                &Owned(prompts.clone()),
                reference.len(),
                &config(method),
            );
            assert!(in_memory.as_ref().is_ok_and(|d| !d.is_empty()));
            assert_eq!(streamed, in_memory, "{method:?}");
        }
    }

    /// Prompts that count how often each is read.
    struct Counted(Vec<&'static str>, std::cell::RefCell<Vec<usize>>);

    impl Texts for Counted {
        type Error = DedupError;

        fn text(&self, id: usize) -> Result<Cow<'_, str>, DedupError> {
            self.1.borrow_mut()[id] += 1;
            Ok(Cow::Borrowed(self.0[id]))
        }
    }

    #[test]
    fn recent_texts_are_read_once_while_they_fit_the_budget() {
        let texts = Counted(
            vec!["Alpha ONE", "Beta, two", "Gamma three"],
            std::cell::RefCell::new(vec![0; 3]),
        );
        let mut recent = RecentTexts::with_budget(18);
        for id in [0, 1, 2, 0, 1, 2] {
            assert_eq!(
                &*recent.normalised(&texts, id).unwrap(),
                normalise(texts.0[id as usize])
            );
        }
        assert_eq!(
            *texts.1.borrow(),
            [1, 1, 2],
            "the third text would pass 18 bytes"
        );
        assert_eq!(recent.bytes, "alpha one".len() + "beta two".len());
    }

    #[test]
    fn the_confirmations_shingle_tables_give_the_similarity_of_sorted_sets() {
        let (prompts, _) = generated_prompts(400, 60, 5);
        let texts: Vec<String> = prompts.iter().map(|p| normalise(p)).collect();
        let mut confirmer = Confirmer::one_of(1);
        let mut near = 0;
        for (i, own) in texts.iter().enumerate() {
            confirmer.own_shingles.fill(own);
            for theirs in texts[i..].iter().take(8) {
                let (a, b) = (shingle_set(own), shingle_set(theirs));
                let expected = (a.len() >= MIN_SHINGLES && b.len() >= MIN_SHINGLES)
                    .then(|| jaccard(shared_at_least(&a, &b, 0).unwrap_or(0), a.len(), b.len()))
                    .filter(|&similarity| similarity >= DEFAULT_THRESHOLD);
                near += usize::from(expected.is_some_and(|similarity| similarity < 1.0));
                assert_eq!(
                    confirmer.near_similarity(theirs, DEFAULT_THRESHOLD),
                    expected,
                    "{own:?} / {theirs:?}"
                );
            }
        }
        assert!(near > 0, "the generated prompts hold near duplicates");
    }

    /// The MinHash sweep over `texts` (the first `references` of them references) in blocks of
    /// `block` on `threads` threads.
    fn block_sweep(texts: &[&str], references: usize, threads: usize, block: usize) -> BlockSweep {
        let sketches = texts.iter().map(|prompt| sketch(prompt)).collect();
        let index = MinHashIndex::new(sketches, texts, DEFAULT_THRESHOLD);
        index
            .sweep_in_blocks(references, texts.len(), threads, block)
            .unwrap()
    }

    #[test]
    fn the_block_sweep_settles_candidates_as_the_one_by_one_sweep_does() {
        let (prompts, _) = generated_prompts(3_000, 450, 7);
        let texts: Vec<&str> = prompts.iter().map(String::as_str).collect();
        let references = 40;
        let sweep = |threads, block| block_sweep(&texts, references, threads, block);
        let one_by_one = sweep(1, 1);
        assert_eq!(
            one_by_one.rechecked, 0,
            "a block of one has no survivor of its own"
        );
        assert!(one_by_one.duplicates.len() > 100);
        for (threads, block) in [(2, 7), (2, 64), (3, 500), (2, 4096)] {
            let blocked = sweep(threads, block);
            assert_eq!(
                blocked.duplicates, one_by_one.duplicates,
                "{threads} threads, {block}"
            );
            assert!(
                blocked.rechecked > 0 && blocked.rechecked < texts.len(),
                "{threads} threads, blocks of {block}: {} rechecked",
                blocked.rechecked
            );
        }
    }

    #[test]
    fn a_second_lookup_takes_the_first_lookups_confirmations_and_settles_as_one_by_one() {
        let mut rng = Rng(13);
        let mut prompts = templated_prompts(2_000, 13);
        for at in (1..prompts.len()).step_by(9) {
            let base = &prompts[rng.below(at)];
            let shortened = base
                .rsplit_once(' ')
                .map_or(base.as_str(), |(kept, _)| kept);
            prompts[at] = shortened.to_string();
        }
        let texts: Vec<&str> = prompts.iter().map(String::as_str).collect();
        let sweep = |threads, block| block_sweep(&texts, 0, threads, block);
        let one_by_one = sweep(1, 1);
        assert_eq!(
            one_by_one.reused, 0,
            "a block of one looks nothing up twice"
        );
        let near = one_by_one
            .duplicates
            .iter()
            .filter(|duplicate| matches!(duplicate.kind, DupKind::Near { .. }))
            .count();
        assert!(
            near > 10,
            "{near} near duplicates among the templated prompts"
        );
        for (threads, block) in [(2, 64), (2, 256)] {
            let blocked = sweep(threads, block);
            assert_eq!(
                blocked.duplicates, one_by_one.duplicates,
                "blocks of {block}"
            );
            assert!(
                blocked.reused > 0,
                "blocks of {block}: {} looked up again, no confirmation reused",
                blocked.rechecked
            );
        }
    }

    #[test]
    fn min_hash_finds_the_same_duplicates_as_all_pairs_on_generated_prompts() {
        let (prompts, exact_copies) = generated_prompts(3_000, 450, 7);
        let candidates: Vec<&str> = prompts.iter().map(String::as_str).collect();
        let exact = find_duplicates(&candidates, &[], &config(Method::AllPairs));
        let sketched = find_duplicates(&candidates, &[], &config(Method::MinHashLsh));
        let exact = exact.unwrap_or_default();
        let sketched = sketched.unwrap_or_default();
        let near = exact
            .iter()
            .filter(|d| matches!(d.kind, DupKind::Near { .. }))
            .count();
        println!(
            "all-pairs drops {} ({near} near), MinHash LSH drops {}, exact copies planted {}",
            exact.len(),
            sketched.len(),
            exact_copies.len()
        );
        let dropped: Vec<usize> = exact.iter().map(|d| d.index).collect();
        assert!(exact_copies.iter().all(|copy| dropped.contains(copy)));
        assert!(near > 0);
        assert_eq!(exact, sketched);
        assert_eq!(
            agreement(&candidates, &[], DEFAULT_THRESHOLD),
            Ok(Agreement {
                survive_both: candidates.len() - exact.len(),
                survive_all_pairs_only: 0,
                survive_min_hash_only: 0,
            })
        );
    }

    #[test]
    fn agreement_counts_the_survivors_each_method_keeps() {
        let exact = [true, true, false, false, true];
        let sketched = [true, false, true, false, true];
        assert_eq!(
            Agreement::between(&exact, &sketched),
            Agreement {
                survive_both: 2,
                survive_all_pairs_only: 1,
                survive_min_hash_only: 1,
            }
        );
    }

    #[test]
    fn the_same_input_gives_the_same_output() {
        let (prompts, _) = generated_prompts(1_000, 200, 11);
        let candidates: Vec<&str> = prompts.iter().map(String::as_str).collect();
        let (reference, candidates) = candidates.split_at(100);
        for method in [Method::AllPairs, Method::MinHashLsh] {
            let first = find_duplicates(candidates, reference, &config(method));
            let second = find_duplicates(candidates, reference, &config(method));
            assert!(first.as_ref().is_ok_and(|d| !d.is_empty()));
            assert_eq!(first, second);
        }
    }

    /// The process's resident set now and at its peak, from /proc (Linux), in MiB.
    fn memory() -> String {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.trim().trim_end_matches(" kB").parse::<u64>().ok())
                .map_or_else(|| "?".to_string(), |kib| (kib / 1024).to_string())
        };
        format!("RSS {} MiB, peak {} MiB", field("VmRSS:"), field("VmHWM:"))
    }

    /// `count` instances of one 60-word template whose 10 slots each take one of 20 words: all
    /// alike (similarity ~0.6), few near duplicates. The worst case for band buckets.
    fn templated_prompts(count: usize, seed: u64) -> Vec<String> {
        let mut rng = Rng(seed);
        let vocabulary = vocabulary(&mut rng);
        let template: Vec<String> = (0..60).map(|_| word(&mut rng, &vocabulary)).collect();
        let fillers: Vec<Vec<String>> = (0..10)
            .map(|_| {
                (0..20)
                    .map(|_| vocabulary[rng.below(vocabulary.len())].clone())
                    .collect()
            })
            .collect();
        (0..count)
            .map(|_| {
                let mut words = template.clone();
                for (slot, options) in fillers.iter().enumerate() {
                    words[slot * 6] = options[rng.below(options.len())].clone();
                }
                words.join(" ")
            })
            .collect()
    }

    /// Measurement, not a check: `cargo test --release -- --ignored --nocapture times_min_hash`.
    /// DEDUP_TIMING_PROMPTS sets the count (default 100000); DEDUP_TIMING_METHOD `all-pairs` or
    /// `agreement` replaces MinHash LSH; DEDUP_TIMING_DATA=templated uses one dense template
    /// family instead of the generated prompts.
    #[test]
    #[ignore]
    fn times_min_hash_on_synthetic_prompts() {
        let count = std::env::var("DEDUP_TIMING_PROMPTS")
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(100_000);
        let method = std::env::var("DEDUP_TIMING_METHOD").unwrap_or_default();
        let started = Instant::now();
        let (prompts, exact_copies) = match std::env::var("DEDUP_TIMING_DATA").as_deref() {
            Ok("templated") => (templated_prompts(count, 5), Vec::new()),
            _ => generated_prompts(count, 450, 3),
        };
        let words: usize = prompts.iter().map(|p| p.split(' ').count()).sum();
        let bytes: usize = prompts.iter().map(String::len).sum();
        // Restart the peak count (Linux: writing 5 to clear_refs resets VmHWM).
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        println!(
            "generated {count} prompts ({} words, {} bytes on average) in {:.1?}; {}",
            words / count,
            bytes / count,
            started.elapsed(),
            memory()
        );
        let candidates: Vec<&str> = prompts.iter().map(String::as_str).collect();
        let started = Instant::now();
        if method == "agreement" {
            let agreement = agreement(&candidates, &[], DEFAULT_THRESHOLD);
            println!("{agreement:?} in {:.2?}; {}", started.elapsed(), memory());
            assert!(agreement.is_ok());
            return;
        }
        let method = match method.as_str() {
            "all-pairs" => Method::AllPairs,
            _ => Method::MinHashLsh,
        };
        let duplicates = find_duplicates(&candidates, &[], &config(method)).unwrap_or_default();
        let near = duplicates
            .iter()
            .filter(|d| matches!(d.kind, DupKind::Near { .. }))
            .count();
        println!(
            "{method:?}: {} duplicates, {near} of them near ({} exact copies planted) in {:.2?}; {}",
            duplicates.len(),
            exact_copies.len(),
            started.elapsed(),
            memory()
        );
        let dropped: Vec<usize> = duplicates.iter().map(|d| d.index).collect();
        assert!(exact_copies
            .iter()
            .all(|copy| dropped.binary_search(copy).is_ok()));
    }
}
