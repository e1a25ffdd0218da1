//! A few fixed reference prompts that any later prompt is checked against alone, with the
//! rules of [`super::find_duplicates`] for one candidate.

use super::*;

/// A few prompts that any later prompt is checked against alone, with the rules of
/// [`find_duplicates`] for a single candidate: the author stage uses it to reject a copy of a
/// template's example item while the run can still replace it.
#[derive(Debug)]
pub struct ReferenceSet {
    pub(super) references: Vec<(Normalised, Vec<u64>)>,
    pub(super) threshold: f64,
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
