//! The exact method, [`super::Method::AllPairs`]: an inverted index over each prompt's rarest
//! shingles (the prefix filter of set-similarity joins, with PPJoin's positional filter) visits
//! only the pairs that can reach the threshold.

use super::*;

pub(super) fn all_pairs(
    prompts: &[&str],
    reference_count: usize,
    threshold: f64,
) -> Vec<Duplicate> {
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
pub(super) fn number_groups(normalised: &[Normalised]) -> Vec<Option<u32>> {
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
pub(super) fn rank_by_rarity(sets: Vec<Vec<u64>>) -> (Vec<Vec<u32>>, usize) {
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
pub(super) fn prefix_len(size: usize, threshold: f64) -> usize {
    let overlap = (threshold * size as f64 - ROUNDING_SLACK).ceil().max(1.0) as usize;
    (size + 1).saturating_sub(overlap).min(size)
}

/// The rarest shingles of a set long enough for near-duplicate search; empty otherwise.
pub(super) fn prefix(set: &[u32], threshold: f64) -> &[u32] {
    if set.len() < MIN_SHINGLES {
        &[]
    } else {
        &set[..prefix_len(set.len(), threshold)]
    }
}

/// The fewest shared elements with which sets of sizes `a` and `b` reach the threshold:
/// `shared / (a + b - shared) ≥ t` ⇔ `shared ≥ t·(a + b) / (1 + t)` (rounded towards fewer).
pub(super) fn required_overlap(a: usize, b: usize, threshold: f64) -> usize {
    (threshold * (a + b) as f64 / (1.0 + threshold) - ROUNDING_SLACK)
        .ceil()
        .max(0.0) as usize
}

/// The set sizes that can reach the threshold with a set of `size` elements: Jaccard similarity
/// never exceeds the ratio of the smaller size to the larger.
pub(super) fn compatible_sizes(size: usize, threshold: f64) -> std::ops::RangeInclusive<usize> {
    let smallest = (threshold * size as f64 - ROUNDING_SLACK).ceil().max(0.0) as usize;
    let largest = (size as f64 / threshold + ROUNDING_SLACK).floor() as usize;
    smallest..=largest
}

/// What probing one candidate's prefix has learnt about one survivor (PPJoin's positional
/// filter): the shingles shared so far, and the positions just past the last one, in the
/// candidate's set and the survivor's. Sets are sorted in one global order, so any further
/// shared shingle lies beyond both positions.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Overlap {
    pub(super) shared: usize,
    pub(super) own_end: usize,
    pub(super) their_end: usize,
    pub(super) ruled_out: bool,
}

impl Overlap {
    pub(super) fn most_possible(&self, own_len: usize, their_len: usize) -> usize {
        self.shared + (own_len - self.own_end).min(their_len - self.their_end)
    }
}

/// A survivor whose prefix holds a shingle: which survivor, its number group, where the shingle
/// sits in its set, and the set's size.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Posting {
    pub(super) id: u32,
    pub(super) group: u32,
    pub(super) position: u32,
    pub(super) set_len: u32,
}

/// Inverted index from shingle rank to the survivors holding it in their prefix, in insertion
/// order. Every prompt's prefix is known up front, so each list gets its slot in one flat array.
pub(super) struct Postings {
    pub(super) starts: Vec<usize>,
    pub(super) ends: Vec<usize>,
    pub(super) entries: Vec<Posting>,
}

impl Postings {
    pub(super) fn new(ranks: &[Vec<u32>], distinct: usize, threshold: f64) -> Self {
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

    pub(super) fn list(&self, token: u32) -> &[Posting] {
        let token = token as usize;
        &self.entries[self.starts[token]..self.ends[token]]
    }

    pub(super) fn push(&mut self, token: u32, posting: Posting) {
        let end = &mut self.ends[token as usize];
        self.entries[*end] = posting;
        *end += 1;
    }
}

pub(super) struct AllPairsIndex<'p> {
    pub(super) texts: Vec<&'p str>,
    pub(super) ranks: Vec<Vec<u32>>,
    /// Prompts with equal number sequences share a group; only they can be near duplicates.
    /// A prompt alone with its sequence ([`NO_ITEM`]) has an empty set: it is never indexed.
    pub(super) groups: Vec<u32>,
    /// Normalised text → earliest survivor with it.
    pub(super) exact: FastMap<&'p str, u32>,
    pub(super) postings: Postings,
    /// Per prompt, what the current probe learnt about it; reset after each probe.
    pub(super) overlaps: Vec<Overlap>,
    pub(super) touched: Vec<u32>,
    pub(super) threshold: f64,
}

impl AllPairsIndex<'_> {
    /// Counts, for every survivor of the same number group sharing a prefix shingle with `own`,
    /// the shingles shared within the two prefixes, ruling a survivor out as soon as the
    /// positions of a match leave too few shingles to reach the threshold.
    pub(super) fn probe(&mut self, own: &[u32], group: u32) {
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
    pub(super) fn sweep(&mut self, reference_count: usize, total: usize) -> Vec<Duplicate> {
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
    pub(super) fn collision(&mut self, id: u32) -> Option<Collision> {
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

    pub(super) fn insert(&mut self, id: u32) {
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
