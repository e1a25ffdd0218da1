//! saseval-gen: rebuilds the SASEval prompt set through LLM batch APIs or a local model, and
//! publishes hashed, verified releases. The binary in `main.rs` is a thin shell over this crate.
//! All user output goes through `ui::Printer`; the print lints below keep it that way.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod app;
pub mod batch;
pub mod bytescan;
pub mod cli;
pub mod clock;
pub mod config;
pub mod dedup;
pub mod diff;
pub mod digest;
pub mod endpoint;
pub mod error;
pub mod exit;
pub mod expr;
pub mod fsio;
pub mod grade;
pub mod hooks;
pub mod json_walk;
pub mod jsonl;
pub mod lock;
pub mod numeric;
pub mod panel;

pub mod parallel;
#[cfg(test)]
mod proptests;
pub mod record;
pub mod release;
pub mod reply;
pub mod schema;
pub mod seeded;
#[cfg(test)]
mod soup;
pub mod stages;
pub mod templates;
pub mod ui;
pub mod usage;
pub mod validate;
pub mod verify;
pub mod yields;
