//! Finds exact and near-duplicate prompts, so a release never carries the same item twice (within
//! a category, across categories, or again after an earlier release) and the copy that survives
//! is always the same one: candidates come in priority order and the earlier one survives.
//!
//! * Exact duplicates have equal texts after the card's normalisation ([`crate::grade::norm`])
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
//! Two methods give the same answers up to the misses LSH may make near the threshold:
//! [`Method::AllPairs`] is exact (an inverted index over the rarest shingles of each prompt, the
//! prefix filter of set-similarity joins, keeps it fast) but holds every shingle set in memory;
//! [`Method::MinHashLsh`] keeps only a 112-byte signature per prompt (one-permutation MinHash
//! with optimal densification, 14 bands × 8 rows as in datatrove, band keys salted with the
//! number sequence), pre-filters band collisions on the signature estimate and confirms them
//! with the exact Jaccard, recomputed from the caller's texts: no false positives.

use crate::grade::norm;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::iter;
use std::num::NonZeroUsize;
use std::thread;

/// The Jaccard similarity from which two prompts are near duplicates unless configured otherwise.
pub const DEFAULT_THRESHOLD: f64 = 0.8;
/// [`Method::Auto`] runs all-pairs up to this many prompts (references plus candidates) and
/// MinHash LSH above it.
pub const AUTO_ALL_PAIRS_LIMIT: usize = 20_000;
/// Prompts with fewer distinct shingles than this are compared exactly only.
pub const MIN_SHINGLES: usize = 3;

const SHINGLE_CHARS: usize = 5;
const BANDS: usize = 14;
const ROWS_PER_BAND: usize = 8;
const BINS: usize = BANDS * ROWS_PER_BAND;
const _: () = assert!(BINS <= 256, "probe orders store bins as u8");
/// A band collision is confirmed only when the signatures estimate a similarity within this
/// margin of the threshold: about four standard deviations of the estimate for the shortest
/// prompts, far more for the rest, so the filter adds next to no misses to the banding's own.
const ESTIMATE_MARGIN: f64 = 0.25;
/// Chance that two 8-bit signature values agree although their minima differ.
const BYTE_MATCH_BY_CHANCE: f64 = 1.0 / 256.0;
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
    let use_all_pairs = match config.method {
        Method::AllPairs => true,
        Method::MinHashLsh => false,
        Method::Auto => prompts.len() <= AUTO_ALL_PAIRS_LIMIT,
    };
    Ok(if use_all_pairs {
        all_pairs(&prompts, reference.len(), threshold)
    } else {
        min_hash(&prompts, reference.len(), threshold)
    })
}

/// Runs both methods on the same input and counts the candidates whose fate they agree on.
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
    let sketched = survivors(
        &min_hash(&prompts, reference.len(), threshold),
        candidates.len(),
    );
    let count = |wanted: (bool, bool)| {
        exact
            .iter()
            .zip(&sketched)
            .filter(|&(&e, &s)| (e, s) == wanted)
            .count()
    };
    Ok(Agreement {
        survive_both: count((true, true)),
        survive_all_pairs_only: count((true, false)),
        survive_min_hash_only: count((false, true)),
    })
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
    let count = reference.len() + candidates.len();
    let max = NO_ITEM as usize;
    if count > max {
        return Err(DedupError::TooManyPrompts { count, max });
    }
    Ok(reference.iter().chain(candidates).copied().collect())
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
            (DupKind::Near { similarity: mine }, DupKind::Near { similarity: theirs }) => mine
                .total_cmp(&theirs)
                .then(other.id.cmp(&self.id))
                .is_gt(),
        }
    }

    fn keep_better(best: &mut Option<Self>, found: Self) {
        if best.as_ref().is_none_or(|current| found.is_better_than(current)) {
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

/// The prompts that survived so far, searchable for collisions with the next one.
trait SurvivorIndex {
    fn collision(&mut self, id: u32) -> Option<Collision>;
    fn insert(&mut self, id: u32);
}

/// Walks the prompts in priority order: references all survive, each candidate survives unless
/// it collides with a survivor.
fn sweep(index: &mut impl SurvivorIndex, reference_count: usize, total: usize) -> Vec<Duplicate> {
    let mut duplicates = Vec::new();
    for (position, id) in (0..total).zip(0u32..) {
        if position < reference_count {
            index.insert(id);
            continue;
        }
        match index.collision(id) {
            Some(collision) => {
                duplicates.push(collision.duplicate(position - reference_count, reference_count))
            }
            None => index.insert(id),
        }
    }
    duplicates
}

/// The card's normalisation with runs of spaces collapsed and the ends trimmed.
fn normalise(prompt: &str) -> String {
    let spaced = norm(prompt);
    let mut text = String::with_capacity(spaced.len());
    for word in spaced.split_ascii_whitespace() {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(word);
    }
    text
}

/// The maximal digit runs of a normalised text, space-separated: "1.25" counts as "1 25".
fn number_sequence(text: &str) -> String {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|run| !run.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every character 5-gram of a normalised (ASCII) text, packed into an integer.
fn shingles(text: &str) -> impl Iterator<Item = u64> + '_ {
    text.as_bytes()
        .windows(SHINGLE_CHARS)
        .map(|window| window.iter().fold(0, |packed, &byte| packed << 8 | u64::from(byte)))
}

fn shingle_set(text: &str) -> Vec<u64> {
    let mut set: Vec<u64> = shingles(text).collect();
    set.sort_unstable();
    set.dedup();
    set
}

/// Jaccard similarity of two sorted, duplicate-free sets.
fn jaccard<T: Ord>(a: &[T], b: &[T]) -> f64 {
    let (mut i, mut j, mut shared) = (0, 0, 0usize);
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
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
    let union = a.len() + b.len() - shared;
    if union == 0 {
        0.0
    } else {
        shared as f64 / union as f64
    }
}

/// The similarity of two shingle sets when both are long enough to compare and it reaches the
/// threshold.
fn near_similarity<T: Ord>(a: &[T], b: &[T], threshold: f64) -> Option<f64> {
    if a.len() < MIN_SHINGLES || b.len() < MIN_SHINGLES {
        return None;
    }
    let similarity = jaccard(a, b);
    (similarity >= threshold).then_some(similarity)
}

/// A prompt reduced to what an exact comparison needs.
#[derive(Debug, Default)]
struct Prepared {
    text: String,
    numbers: String,
    shingles: Vec<u64>,
}

impl Prepared {
    fn new(prompt: &str) -> Self {
        let text = normalise(prompt);
        Self {
            numbers: number_sequence(&text),
            shingles: shingle_set(&text),
            text,
        }
    }
}

/// Maps `work` over `inputs` on every available core, keeping the input order.
fn parallel_map<T: Sync, R: Send + Default>(inputs: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = thread::available_parallelism().map_or(1, NonZeroUsize::get);
    let chunk = inputs.len().div_ceil(threads).max(1);
    let mut outputs: Vec<R> = iter::repeat_with(R::default).take(inputs.len()).collect();
    let work = &work;
    thread::scope(|scope| {
        for (inputs, outputs) in inputs.chunks(chunk).zip(outputs.chunks_mut(chunk)) {
            scope.spawn(move || {
                for (input, output) in inputs.iter().zip(outputs) {
                    *output = work(input);
                }
            });
        }
    });
    outputs
}

// ---------------------------------------------------------------------------------------------
// All pairs

fn all_pairs(prompts: &[&str], reference_count: usize, threshold: f64) -> Vec<Duplicate> {
    let mut prepared = parallel_map(prompts, |prompt| Prepared::new(prompt));
    let ranks = rank_by_rarity(&mut prepared);
    let mut group_of_numbers: HashMap<&str, u32> = HashMap::new();
    let groups = prepared
        .iter()
        .zip(0u32..)
        .map(|(item, next_group)| *group_of_numbers.entry(&item.numbers).or_insert(next_group))
        .collect();
    let mut index = AllPairsIndex {
        texts: prepared.iter().map(|item| item.text.as_str()).collect(),
        seen_by: vec![NO_ITEM; ranks.len()],
        ranks,
        groups,
        exact: HashMap::new(),
        postings: HashMap::new(),
        threshold,
    };
    sweep(&mut index, reference_count, prompts.len())
}

/// Replaces each prompt's shingles by their ranks in a global order from rarest to most common,
/// sorted, so the prefix of a set holds its rarest shingles and short posting lists.
fn rank_by_rarity(prepared: &mut [Prepared]) -> Vec<Vec<u32>> {
    let mut rank_of: HashMap<u64, u32> = HashMap::new();
    for item in prepared.iter() {
        for &shingle in &item.shingles {
            *rank_of.entry(shingle).or_default() += 1;
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
    prepared
        .iter_mut()
        .map(|item| {
            let mut ranks: Vec<u32> = std::mem::take(&mut item.shingles)
                .iter()
                .filter_map(|shingle| rank_of.get(shingle).copied())
                .collect();
            ranks.sort_unstable();
            ranks
        })
        .collect()
}

/// How many of its rarest shingles a set must share with another for their Jaccard similarity to
/// reach the threshold: `size - ⌈threshold·size⌉ + 1` (rounded towards keeping more).
fn prefix_len(size: usize, threshold: f64) -> usize {
    let overlap = (threshold * size as f64 - ROUNDING_SLACK).ceil().max(1.0) as usize;
    (size + 1).saturating_sub(overlap).min(size)
}

/// Jaccard similarity never exceeds the ratio of the smaller set's size to the larger's.
fn sizes_allow(a: usize, b: usize, threshold: f64) -> bool {
    a.min(b) as f64 >= threshold * a.max(b) as f64 - ROUNDING_SLACK
}

struct AllPairsIndex<'p> {
    texts: Vec<&'p str>,
    ranks: Vec<Vec<u32>>,
    /// Prompts with equal number sequences share a group; only they can be near duplicates.
    groups: Vec<u32>,
    /// Normalised text → earliest survivor with it.
    exact: HashMap<&'p str, u32>,
    /// (number group, shingle rank) → survivors with the shingle in their prefix, in order.
    postings: HashMap<(u32, u32), Vec<u32>>,
    /// The candidate that last visited each prompt, to test each pair once.
    seen_by: Vec<u32>,
    threshold: f64,
}

impl SurvivorIndex for AllPairsIndex<'_> {
    fn collision(&mut self, id: u32) -> Option<Collision> {
        let position = id as usize;
        if let Some(&earlier) = self.exact.get(self.texts[position]) {
            return Some(Collision {
                id: earlier,
                kind: DupKind::Exact,
            });
        }
        let own = &self.ranks[position];
        if own.len() < MIN_SHINGLES {
            return None;
        }
        let group = self.groups[position];
        let mut best = None;
        for &token in &own[..prefix_len(own.len(), self.threshold)] {
            let Some(posting) = self.postings.get(&(group, token)) else {
                continue;
            };
            for &other in posting {
                let seen = &mut self.seen_by[other as usize];
                if *seen == id {
                    continue;
                }
                *seen = id;
                let theirs = &self.ranks[other as usize];
                if !sizes_allow(own.len(), theirs.len(), self.threshold) {
                    continue;
                }
                if let Some(similarity) = near_similarity(own, theirs, self.threshold) {
                    Collision::keep_better(
                        &mut best,
                        Collision {
                            id: other,
                            kind: DupKind::Near { similarity },
                        },
                    );
                }
            }
        }
        best
    }

    fn insert(&mut self, id: u32) {
        let position = id as usize;
        self.exact.entry(self.texts[position]).or_insert(id);
        let own = &self.ranks[position];
        if own.len() < MIN_SHINGLES {
            return;
        }
        let group = self.groups[position];
        for &token in &own[..prefix_len(own.len(), self.threshold)] {
            self.postings.entry((group, token)).or_default().push(id);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// MinHash LSH

fn min_hash(prompts: &[&str], reference_count: usize, threshold: f64) -> Vec<Duplicate> {
    let probes = ProbeOrder::new();
    let sketches = parallel_map(prompts, |prompt| Sketch::new(prompt, &probes));
    let exact = Buckets::new(sketches.iter().map(|sketch| sketch.exact_key));
    let band_numbers: Vec<usize> = (0..BANDS).collect();
    let bands = parallel_map(&band_numbers, |&band| {
        Buckets::new(sketches.iter().map(|sketch| sketch.band_keys[band]))
    });
    let mut index = MinHashIndex {
        prompts,
        sketches,
        exact,
        bands,
        threshold,
    };
    sweep(&mut index, reference_count, prompts.len())
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

/// What MinHash LSH keeps per prompt.
#[derive(Debug, Clone)]
struct Sketch {
    exact_key: u64,
    /// Has at least [`MIN_SHINGLES`] distinct shingles, so takes part in near-duplicate search.
    near: bool,
    /// The low byte of each bin's minimum (b-bit MinHash), for estimating similarity.
    signature: [u8; BINS],
    band_keys: [u32; BANDS],
}

impl Default for Sketch {
    fn default() -> Self {
        Self {
            exact_key: 0,
            near: false,
            signature: [0; BINS],
            band_keys: [0; BANDS],
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
        let mut minima = [None::<u32>; BINS];
        for shingle in shingles(&text) {
            let hash = mix64(shingle ^ SHINGLE_SEED);
            let bin = (((hash >> 32) * BINS as u64) >> 32) as usize;
            let value = hash as u32;
            let slot = &mut minima[bin];
            *slot = Some(slot.map_or(value, |minimum| minimum.min(value)));
        }
        let filled = minima.iter().flatten().count();
        sketch.near = filled >= MIN_SHINGLES || shingle_set(&text).len() >= MIN_SHINGLES;
        if !sketch.near {
            return sketch;
        }
        let values = densify(&minima, probes);
        sketch.signature = values.map(|value| value as u8);
        let numbers_key = hash_bytes(number_sequence(&text).as_bytes(), NUMBERS_SEED);
        for ((key, rows), band) in sketch
            .band_keys
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

    /// Jaccard similarity estimated from the share of equal signature bytes, corrected for bytes
    /// that agree by chance.
    fn estimated_similarity(&self, other: &Self) -> f64 {
        let equal = self
            .signature
            .iter()
            .zip(&other.signature)
            .filter(|(a, b)| a == b)
            .count();
        (equal as f64 / BINS as f64 - BYTE_MATCH_BY_CHANCE) / (1.0 - BYTE_MATCH_BY_CHANCE)
    }
}

/// Fills each empty bin from the first originally filled bin in its probe order.
fn densify(minima: &[Option<u32>; BINS], probes: &ProbeOrder) -> [u32; BINS] {
    let mut values = [0; BINS];
    for ((value, own), order) in values.iter_mut().zip(minima).zip(&probes.0) {
        *value = own
            .or_else(|| {
                order
                    .iter()
                    .find_map(|&bin| minima.get(usize::from(bin)).copied().flatten())
            })
            .unwrap_or_default();
    }
    values
}

/// Groups prompt ids by key and threads the survivors of each group on a chain, newest first, so
/// a lookup visits only the survivors that share the prompt's key.
#[derive(Debug, Default)]
struct Buckets {
    bucket_of: Vec<u32>,
    head: Vec<u32>,
    next: Vec<u32>,
}

impl Buckets {
    fn new<K: Ord + Copy>(keys: impl Iterator<Item = K>) -> Self {
        let mut by_key: Vec<(K, u32)> = keys.zip(0u32..).collect();
        by_key.sort_unstable();
        let mut bucket_of = vec![0; by_key.len()];
        let mut buckets = 0;
        let mut previous = None;
        for (key, id) in by_key {
            if previous != Some(key) {
                previous = Some(key);
                buckets += 1;
            }
            bucket_of[id as usize] = buckets - 1;
        }
        Self {
            next: vec![NO_ITEM; bucket_of.len()],
            head: vec![NO_ITEM; buckets as usize],
            bucket_of,
        }
    }

    fn insert(&mut self, id: u32) {
        let bucket = self.bucket_of[id as usize] as usize;
        self.next[id as usize] = self.head[bucket];
        self.head[bucket] = id;
    }

    /// The inserted ids sharing `id`'s key, newest first.
    fn members(&self, id: u32) -> impl Iterator<Item = u32> + '_ {
        let mut cursor = self.head[self.bucket_of[id as usize] as usize];
        iter::from_fn(move || {
            let member = cursor;
            (member != NO_ITEM).then(|| {
                cursor = self.next[member as usize];
                member
            })
        })
    }
}

struct MinHashIndex<'a> {
    prompts: &'a [&'a str],
    sketches: Vec<Sketch>,
    exact: Buckets,
    bands: Vec<Buckets>,
    threshold: f64,
}

impl MinHashIndex<'_> {
    /// The earliest survivor whose normalised text equals this prompt's.
    fn exact_match(&self, id: u32) -> Option<Collision> {
        let mut same_key = self.exact.members(id).peekable();
        same_key.peek()?;
        let text = normalise(self.prompts[id as usize]);
        same_key
            .filter(|&other| normalise(self.prompts[other as usize]) == text)
            .min()
            .map(|other| Collision {
                id: other,
                kind: DupKind::Exact,
            })
    }

    /// Survivors sharing a band with this prompt whose signatures do not rule out the threshold.
    fn near_partners(&self, id: u32) -> Vec<u32> {
        let own = &self.sketches[id as usize];
        let mut partners: Vec<u32> = self.bands.iter().flat_map(|band| band.members(id)).collect();
        partners.sort_unstable();
        partners.dedup();
        partners.retain(|&other| {
            own.estimated_similarity(&self.sketches[other as usize])
                >= self.threshold - ESTIMATE_MARGIN
        });
        partners
    }
}

impl SurvivorIndex for MinHashIndex<'_> {
    fn collision(&mut self, id: u32) -> Option<Collision> {
        if let Some(exact) = self.exact_match(id) {
            return Some(exact);
        }
        if !self.sketches[id as usize].near {
            return None;
        }
        let partners = self.near_partners(id);
        if partners.is_empty() {
            return None;
        }
        let own = Prepared::new(self.prompts[id as usize]);
        let mut best = None;
        for other in partners {
            let theirs = Prepared::new(self.prompts[other as usize]);
            if theirs.numbers != own.numbers {
                continue;
            }
            if let Some(similarity) =
                near_similarity(&own.shingles, &theirs.shingles, self.threshold)
            {
                Collision::keep_better(
                    &mut best,
                    Collision {
                        id: other,
                        kind: DupKind::Near { similarity },
                    },
                );
            }
        }
        best
    }

    fn insert(&mut self, id: u32) {
        self.exact.insert(id);
        if self.sketches[id as usize].near {
            for band in &mut self.bands {
                band.insert(id);
            }
        }
    }
}

#[cfg(test)]
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
        jaccard(&Prepared::new(a).shingles, &Prepared::new(b).shingles)
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
        assert!((DEFAULT_THRESHOLD..1.0).contains(&similarity), "{similarity}");
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
    fn prompts_with_fewer_than_three_shingles_are_compared_exactly_only() {
        // Both have the shingles {"hmmmm", "mmmmm"}: similarity 1, yet different texts.
        assert_eq!(similarity("Hmmmmm", "Hmmmmmm"), 1.0);
        assert_eq!(both_methods(&["Hmmmmm", "Hmmmmmm"], &[]), []);
        assert_eq!(both_methods(&["Hmmmmm", "hmmmmm?"], &[]).len(), 1);
    }

    #[test]
    fn the_earlier_candidate_survives() {
        let later_first = PORT_QUESTION.replace("next quarter", "this quarter");
        for (first, second) in [(PORT_QUESTION, later_first.as_str()), (&later_first, PORT_QUESTION)] {
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
        let duplicates = both_methods(&[&near, "what is the default PORT of the postgresql server"], &[older, PORT_QUESTION]);
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
        assert!(similarity(a, &b) >= DEFAULT_THRESHOLD, "{}", similarity(a, &b));
        assert!(similarity(&b, &c) >= DEFAULT_THRESHOLD, "{}", similarity(&b, &c));
        assert!(similarity(a, &c) < DEFAULT_THRESHOLD, "{}", similarity(a, &c));
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
        "invoice", "cluster", "latency", "deployment", "customer", "ticket", "region", "replica",
        "outage", "budget", "contract", "renewal", "vendor", "license", "database", "query",
        "cache", "timeout", "endpoint", "token", "quota", "capacity", "forecast", "revenue",
        "churn", "escalation", "incident", "postmortem", "rollback", "migration", "backup",
        "retention", "policy", "compliance", "audit", "firewall", "certificate", "gateway",
        "throughput", "storage", "bucket", "pipeline", "release", "sprint", "roadmap",
        "headcount", "payroll", "shipment", "warehouse", "supplier", "Kubernetes", "PostgreSQL",
        "Redis", "Kafka", "Terraform", "nginx", "OAuth", "SLA", "SOW", "RFC", "API",
    ];
    const SYLLABLES: &[&str] = &[
        "ka", "ren", "tor", "mi", "lo", "sa", "ver", "den", "pra", "qui", "zel", "mon", "tri",
        "ba", "nex", "or", "ul", "fen", "gra", "hol", "ist", "jun", "kel", "lum", "pet", "rix",
        "sol", "tam", "vo", "wen",
    ];

    fn vocabulary(rng: &mut Rng) -> Vec<String> {
        (0..3000)
            .map(|_| {
                let syllables = 2 + rng.below(3);
                (0..syllables)
                    .map(|_| SYLLABLES[rng.below(SYLLABLES.len())])
                    .collect()
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
            40..=64 => DOMAIN[rng.below(DOMAIN.len())].to_string(),
            _ => {
                // Zipf-like: low ranks far more frequent.
                let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
                vocabulary[(vocabulary.len() as f64 * u.powi(3)) as usize].clone()
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
    /// copies with one number changed (3%) of earlier prompts. Returns the prompts and the number
    /// of exact copies planted.
    fn generated_prompts(count: usize, max_words: usize, seed: u64) -> (Vec<String>, usize) {
        let mut rng = Rng(seed);
        let vocabulary = vocabulary(&mut rng);
        let mut prompts: Vec<String> = Vec::with_capacity(count);
        let mut exact_copies = 0;
        while prompts.len() < count {
            let roll = rng.below(100);
            let base = (!prompts.is_empty()).then(|| prompts[rng.below(prompts.len())].clone());
            let prompt = match (roll, base) {
                (0..=2, Some(base)) => {
                    exact_copies += 1;
                    exact_variant(&mut rng, &base)
                }
                (3..=10, Some(base)) => near_variant(&mut rng, &vocabulary, &base),
                (11..=13, Some(base)) => match number_variant(&mut rng, &base) {
                    Some(variant) => variant,
                    None => continue,
                },
                _ => fresh_prompt(&mut rng, &vocabulary, max_words),
            };
            prompts.push(prompt);
        }
        (prompts, exact_copies)
    }

    #[test]
    fn min_hash_finds_the_same_duplicates_as_all_pairs_on_generated_prompts() {
        let (prompts, exact_copies) = generated_prompts(3_000, 450, 7);
        let candidates: Vec<&str> = prompts.iter().map(String::as_str).collect();
        let exact = find_duplicates(&candidates, &[], &config(Method::AllPairs));
        let sketched = find_duplicates(&candidates, &[], &config(Method::MinHashLsh));
        let exact = exact.unwrap_or_default();
        let sketched = sketched.unwrap_or_default();
        let near = exact.iter().filter(|d| matches!(d.kind, DupKind::Near { .. })).count();
        println!(
            "all-pairs drops {} ({near} near), MinHash LSH drops {}, exact copies planted {exact_copies}",
            exact.len(),
            sketched.len()
        );
        assert!(exact.len() - near >= exact_copies);
        assert!(near > 0);
        assert_eq!(exact, sketched);
        let agreement = agreement(&candidates, &[], DEFAULT_THRESHOLD);
        assert_eq!(
            agreement,
            Ok(Agreement {
                survive_both: candidates.len() - exact.len(),
                survive_all_pairs_only: 0,
                survive_min_hash_only: 0,
            })
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

    fn peak_rss_mib() -> String {
        std::fs::read_to_string("/proc/self/status")
            .unwrap_or_default()
            .lines()
            .find(|line| line.starts_with("VmHWM"))
            .map_or_else(|| "unknown".to_string(), |line| line.to_string())
    }

    /// `cargo test --release -- --ignored --nocapture times_min_hash`; set DEDUP_TIMING_PROMPTS
    /// (default 100000) and DEDUP_TIMING_METHOD (all-pairs | min-hash, default min-hash).
    #[test]
    #[ignore]
    fn times_min_hash_on_synthetic_prompts() {
        let count = std::env::var("DEDUP_TIMING_PROMPTS")
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(100_000);
        let method = match std::env::var("DEDUP_TIMING_METHOD").as_deref() {
            Ok("all-pairs") => Method::AllPairs,
            _ => Method::MinHashLsh,
        };
        let started = Instant::now();
        let (prompts, exact_copies) = generated_prompts(count, 450, 3);
        let words: usize = prompts.iter().map(|p| p.split(' ').count()).sum();
        println!(
            "generated {count} prompts ({} words on average) in {:.1?}; {}",
            words / count,
            started.elapsed(),
            peak_rss_mib()
        );
        let candidates: Vec<&str> = prompts.iter().map(String::as_str).collect();
        let started = Instant::now();
        let duplicates = find_duplicates(&candidates, &[], &config(method)).unwrap_or_default();
        println!(
            "{method:?}: {} duplicates ({exact_copies} exact copies planted) in {:.2?}; {}",
            duplicates.len(),
            started.elapsed(),
            peak_rss_mib()
        );
        assert!(duplicates.len() >= exact_copies);
    }
}
