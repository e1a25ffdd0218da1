//! What saseval-gen's integration tests and benches share, as one dev-only crate instead of
//! source files each target includes by path: the fake Batch API and the fake online
//! (`/chat/completions`) server they drive the binary against,
//! the realistic model replies it answers with, and the synthetic inputs the benches run on.
//! Everything here is deterministic in its arguments, so a test or bench gets the same bytes on
//! every run.
//!
//! It depends on saseval-gen for the few library items it needs (the card's grader, the record
//! and request types). In saseval-gen's own test and bench builds that is the same library the
//! tests link, with the features those builds enable (`test-hooks` among them).
// The fixtures and bench inputs written here are not the product's files: the rule that only
// saseval-gen's util/fsio writes files (clippy.toml) does not apply to them.
#![allow(clippy::disallowed_methods)]

pub mod fake_api;
pub mod fake_online;
pub mod replies;
pub mod synth;
