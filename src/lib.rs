//! saseval-gen: rebuilds the SASEval prompt set through LLM batch APIs or a local model, and
//! publishes hashed, verified releases. The binary in `main.rs` is a thin shell over this crate.
//! All user output goes through `ui::Printer` and every file write through `util::fsio`; the
//! lints in Cargo.toml (`[lints.clippy]`, with clippy.toml) keep it that way.
//!
//! The map:
//!
//! ```text
//! src/
//! ├── main.rs     the binary: parse, log, run, exit code
//! ├── cli.rs      the command line: subcommands, global flags, their help
//! ├── app.rs      dispatch: load the config, lock the out dir, run the stages
//! ├── commands/   status, cancel, verify, diff: the commands that run no stage
//! ├── error.rs    the one error type, each failure mapped to its exit code
//! ├── exit.rs     the exit codes themselves (import them from here only)
//! ├── ui.rs       the only place that prints
//! ├── config.rs   pipeline.toml: every setting, checked before any side effect
//! ├── stages/     author, repair, audit, assemble: the items, templates and replies they share
//! ├── runner/     the batch runner and its backends (batch, online, local, file), cache, journal
//! ├── quality/    the rules an item must pass: validate, numeric, expr, grade, panel, dedup
//! ├── release/    the release files, their schema, verify and diff
//! └── util/       bytes, digests, durable writes, JSON(L), lock, parallel, seeded, clock
//! ```
// Unit tests write their fixtures directly; the normal build of the library holds the rule.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod app;
pub mod cli;
pub mod commands;
pub mod config;
pub mod error;
pub mod exit;
pub mod quality;
pub mod release;
pub mod runner;
pub mod stages;
pub mod ui;
pub mod util;
