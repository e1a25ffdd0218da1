//! The compact method, [`super::Method::MinHashLsh`]: a one-permutation MinHash of each prompt
//! cut into bands, band partners confirmed with the exact Jaccard, swept a block at a time in
//! parallel and settled in order.

use super::*;

pub(super) fn min_hash<T: Texts + Sync + ?Sized>(
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
    pub(super) fn new(mut sketches: Vec<Sketch>, texts: &'a T, threshold: f64) -> Self {
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
pub(super) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub(super) fn hash_bytes(bytes: &[u8], seed: u64) -> u64 {
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
pub(super) struct ProbeOrder(pub(super) [[u8; BINS]; BINS]);

impl ProbeOrder {
    pub(super) fn new() -> Self {
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
pub(super) type Signature = [u64; SIGNATURE_WORDS];
pub(super) const SIGNATURE_WORDS: usize = BINS.div_ceil(32);
/// Every even bit: the low bit of each two-bit lane.
pub(super) const LANE_LOW_BITS: u64 = 0x5555_5555_5555_5555;

/// What MinHash LSH keeps per prompt: about a hundred bytes.
#[derive(Debug, Clone)]
pub struct Sketch {
    pub(super) exact_key: u64,
    /// Bins a shingle fell in before densification; 0 when the prompt has fewer than
    /// [`MIN_SHINGLES`] distinct shingles and is compared exactly only.
    pub(super) filled_bins: u8,
    pub(super) signature: Signature,
    /// Per band, the band's key; once the band's groups are built, the prompt's slot in them
    /// ([`NO_ITEM`] when no other prompt shares the key).
    pub(super) bands: [u32; BANDS],
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
    pub(super) fn new(prompt: &str, probes: &ProbeOrder) -> Self {
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

    pub(super) fn is_near(&self) -> bool {
        self.filled_bins > 0
    }

    /// How many bins hold equal two-bit values in both signatures.
    pub(super) fn equal_bins(&self, other: &Self) -> usize {
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
    pub(super) fn may_reach(&self, other: &Self, equal_bins: usize, threshold: f64) -> bool {
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
pub(super) struct FilledBins(pub(super) u128);
const _: () = assert!(BINS <= 128, "a u128 holds one bit per bin");

impl FilledBins {
    pub(super) fn add(&mut self, bin: usize) {
        self.0 |= 1 << bin;
    }

    pub(super) fn contains(self, bin: usize) -> bool {
        self.0 >> bin & 1 == 1
    }
}

/// Fills each empty bin from the first originally filled bin in its probe order.
pub(super) fn densify(minima: [u32; BINS], filled: FilledBins, probes: &ProbeOrder) -> [u32; BINS] {
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
pub(super) struct KeyGroups {
    pub(super) id_of_slot: Vec<u32>,
    pub(super) group_of_slot: Vec<u32>,
    pub(super) next_of_slot: Vec<u32>,
    pub(super) newest_of_group: Vec<u32>,
}

impl KeyGroups {
    /// Groups prompts by key (`None`: takes no part) and returns each prompt's slot.
    pub(super) fn new<K: Ord + Copy>(
        keys: impl ExactSizeIterator<Item = Option<K>>,
    ) -> (Self, Vec<u32>) {
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

    pub(super) fn insert(&mut self, slot: u32) {
        let group = self.group_of_slot[slot as usize] as usize;
        self.next_of_slot[slot as usize] = self.newest_of_group[group];
        self.newest_of_group[group] = slot;
    }

    /// The newest inserted prompt in `slot`'s group.
    pub(super) fn newest(&self, slot: u32) -> Option<u32> {
        let newest = self.newest_of_group[self.group_of_slot[slot as usize] as usize];
        (newest != NO_ITEM).then(|| self.id_of_slot[newest as usize])
    }

    /// The inserted prompts in `slot`'s group, newest first.
    pub(super) fn members(&self, slot: u32) -> impl Iterator<Item = u32> + '_ {
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

pub(super) struct MinHashIndex<'a, T: ?Sized> {
    pub(super) texts: &'a T,
    pub(super) sketches: Vec<Sketch>,
    pub(super) exact: KeyGroups,
    pub(super) exact_slots: Vec<u32>,
    pub(super) bands: Vec<KeyGroups>,
    pub(super) threshold: f64,
}

/// What one thread needs to confirm band partners: the shingles and number sequences of the
/// candidate being confirmed and of the partner it is compared with, and recently read texts.
pub(super) struct Confirmer {
    pub(super) own_shingles: ShingleTable,
    pub(super) their_shingles: ShingleTable,
    pub(super) own_numbers: Vec<u8>,
    pub(super) their_numbers: Vec<u8>,
    pub(super) recent: RecentTexts,
}

impl Confirmer {
    /// One of `threads` confirmers, which share the budget of [`RecentTexts`].
    pub(super) fn one_of(threads: usize) -> Self {
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
pub(super) struct ShingleTable {
    pub(super) slots: Vec<u64>,
    pub(super) stamp: u64,
    pub(super) len: usize,
}

impl ShingleTable {
    const KEY_BITS: u32 = 8 * SHINGLE_CHARS as u32;
    const STAMPS: u64 = 1 << (64 - Self::KEY_BITS);

    /// Empties the table and adds every shingle of `text`.
    pub(super) fn fill(&mut self, text: &str) {
        self.clear(text.len());
        for shingle in shingles(text) {
            self.insert(shingle);
        }
    }

    /// Empties the table, with room for `most` shingles at half load or less.
    pub(super) fn clear(&mut self, most: usize) {
        let slots = (2 * most).next_power_of_two().max(16);
        self.stamp += 1;
        if self.slots.len() < slots || self.stamp == Self::STAMPS {
            self.slots = vec![0; slots.max(self.slots.len())];
            self.stamp = 1;
        }
        self.len = 0;
    }

    /// The slot holding `shingle`, or the free slot where it belongs, and whether it holds it.
    pub(super) fn slot(&self, shingle: u64) -> (usize, bool) {
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
    pub(super) fn insert(&mut self, shingle: u64) -> bool {
        let (slot, held) = self.slot(shingle);
        if !held {
            self.slots[slot] = self.stamp << Self::KEY_BITS | shingle;
            self.len += 1;
        }
        !held
    }

    pub(super) fn contains(&self, shingle: u64) -> bool {
        self.slot(shingle).1
    }
}

/// The normalised texts of recently compared prompts, by id, in a fixed number of slots (one
/// place per id) holding at most a budget of bytes of text (96 MiB, shared out among the
/// sweep's threads). In a template family one survivor is the confirmation partner of many later
/// candidates, and a streaming caller would read it back from disk every time.
pub(super) struct RecentTexts {
    pub(super) slots: Vec<Option<(u32, std::sync::Arc<str>)>>,
    pub(super) bytes: usize,
    pub(super) budget: usize,
}

impl RecentTexts {
    const SLOTS: usize = 65_536;
    const BUDGET: usize = 96 << 20;

    pub(super) fn with_budget(budget: usize) -> Self {
        Self {
            slots: vec![None; Self::SLOTS],
            bytes: 0,
            budget,
        }
    }

    pub(super) fn normalised<T: Texts + ?Sized>(
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
    pub(super) fn near_similarity(&mut self, theirs: &str, threshold: f64) -> Option<f64> {
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
    pub(super) fn exact_match(
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
    pub(super) fn near_partners(&self, id: u32) -> Vec<u32> {
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
    pub(super) fn collision(
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
    pub(super) fn confirm(
        &self,
        confirmer: &mut Confirmer,
        other: u32,
    ) -> Result<Option<f64>, T::Error> {
        let theirs = confirmer.recent.normalised(self.texts, other)?;
        write_number_sequence(&theirs, &mut confirmer.their_numbers);
        if confirmer.their_numbers != confirmer.own_numbers {
            return Ok(None);
        }
        Ok(confirmer.near_similarity(&theirs, self.threshold))
    }

    pub(super) fn insert(&mut self, id: u32) {
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
    pub(super) fn has_survivor_since(&self, id: u32, first: u32) -> bool {
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
pub(super) struct Lookup {
    pub(super) collision: Option<Collision>,
    pub(super) confirmations: Vec<Confirmation>,
    /// Partners whose outcome came from an earlier lookup.
    pub(super) reused: usize,
}

impl Lookup {
    pub(super) fn settled(collision: Collision) -> Self {
        Self {
            collision: Some(collision),
            confirmations: Vec::new(),
            reused: 0,
        }
    }
}

/// A band partner's exact comparison: its similarity when it is a near duplicate, else `None`.
pub(super) struct Confirmation {
    pub(super) partner: u32,
    pub(super) similarity: Option<f64>,
}

/// The candidates a sweep dropped, how many candidates it looked up a second time, and how many
/// confirmations those second lookups took from the first.
pub(super) struct BlockSweep {
    pub(super) duplicates: Vec<Duplicate>,
    pub(super) rechecked: usize,
    pub(super) reused: usize,
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
    pub(super) fn sweep_in_blocks(
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
