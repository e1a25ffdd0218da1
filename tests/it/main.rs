//! The one integration-test binary: drives the real `saseval-gen` binary through the Contract
//! (README.md) (CLI, config keys, files in the out dir, exit codes) against a fake Batch API on
//! loopback (`saseval_testkit::fake_api`, answering with `saseval_testkit::replies`).
//!
//! One binary, so it is built and linked once; a module per topic. The first three are what the
//! topics share: `world` (a test's out dir and command line, `World` and `Run`), `responders`
//! (how the fake model answers) and `bar` (what every bad input is held to).

// Tests say on stderr why they skip, and write their fixtures directly: the product's rules that
// only ui::Printer prints and only util::fsio writes files (Cargo.toml's [lints]) are not theirs.
#![allow(clippy::print_stderr, clippy::disallowed_methods)]

mod bar;
mod responders;
mod world;

mod audit;
mod author;
mod cli_text;
mod config;
mod diff;
mod fill;
mod interop;
mod local;
mod online;
mod readers;
mod recovery;
mod release;
mod repair;
mod runner;
mod security;
