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

mod all_pairs;
mod minhash;
mod reference;

use crate::quality::grade::norm;
use crate::util::bytescan::find_digit;
use crate::util::parallel;
use all_pairs::*;
use minhash::*;
pub use minhash::{sketch, Sketch};
pub use reference::ReferenceSet;
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
