//! One line of a release file: the record as the v1 card defines it, built from a candidate and
//! its category's target row. It is written column by column in the card's order by
//! [`ReleaseRecord::to_line`], which lives beside the column table in `columns`.

use super::target::TargetRow;
use crate::stages::item::{Candidate, Category};
use serde_json::{Number, Value};

/// One line of the release file, exactly the v1 schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseRecord {
    pub id: String,
    pub category: Category,
    pub prompt: String,
    pub golds: Vec<String>,
    pub target_action: [f64; 5],
    pub t: f64,
    pub top_p: f64,
    pub mode: &'static str,
    pub max_new: u32,
    pub durable: Option<Vec<String>>,
    pub stale: Option<Vec<String>>,
    pub gold_repaired: bool,
    pub needs_review: bool,
}

impl ReleaseRecord {
    /// Builds the record from a candidate and its category's row. `T`, `top_p`, `mode` and
    /// `max_new` are read off the same row as `target_action`. Memory categories always get both
    /// `durable` and `stale` (empty when the candidate has none); other categories get neither.
    pub fn new(id: String, candidate: &Candidate, row: &TargetRow) -> ReleaseRecord {
        let memory = candidate.category.is_memory();
        let annotation =
            |values: &Option<Vec<String>>| memory.then(|| values.clone().unwrap_or_default());
        ReleaseRecord {
            id,
            category: candidate.category,
            prompt: candidate.prompt.clone(),
            golds: candidate.golds.clone(),
            target_action: row.target_action(),
            t: row.t,
            top_p: row.p,
            mode: row.mode(),
            max_new: row.l,
            durable: annotation(&candidate.durable),
            stale: annotation(&candidate.stale),
            gold_repaired: candidate.gold_repaired,
            needs_review: candidate.needs_review,
        }
    }
}

/// A number as v1 prints it: integral values as integers (`1`, not `1.0`), others in their
/// shortest round-trip form (`0.45`). Non-finite values have no JSON spelling and become `null`,
/// which the release's own verification then rejects.
pub fn json_number(x: f64) -> Value {
    const EXACT_INTEGER_LIMIT: f64 = 9_007_199_254_740_992.0; // 2^53
    if x.is_finite() && x.fract() == 0.0 && x.abs() < EXACT_INTEGER_LIMIT {
        // Exact: |x| < 2^53 and integral, so the conversion loses nothing.
        Value::Number(Number::from(x as i64))
    } else {
        Number::from_f64(x).map_or(Value::Null, Value::Number)
    }
}
