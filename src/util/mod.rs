//! The utilities every layer uses and none owns: byte scanning, digests, durable file writes,
//! JSON and JSONL reading, the out-dir lock, parallel maps, printable text, seeded randomness,
//! the clock and the test hooks. Nothing here knows about items, stages or releases.

pub mod bytescan;
pub mod clock;
pub mod digest;
pub mod fsio;
pub mod hooks;
pub mod json_walk;
pub mod jsonl;
pub mod lock;
pub mod parallel;
pub mod printable;
pub mod seeded;
#[cfg(test)]
pub(crate) mod soup;
