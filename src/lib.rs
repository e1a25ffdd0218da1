//! saseval-gen: rebuilds the SASEval prompt set through LLM batch APIs or a local model, and
//! publishes hashed, verified releases. The binary in `main.rs` is a thin shell over this crate.

pub mod fsio;
pub mod grade;
pub mod record;
