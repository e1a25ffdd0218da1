//! The quality rules an item must pass to reach a release: the validation rules, the numeric
//! answer checks, the verifier's arithmetic, the card's grader, the audit panel's verdict and
//! the duplicate finder.

pub mod dedup;
pub mod expr;
pub mod grade;
pub mod numeric;
pub mod panel;
#[cfg(test)]
mod proptests;
pub mod validate;
