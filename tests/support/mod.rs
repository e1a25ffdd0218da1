//! Test support: a fake OpenAI/Groq Batch API server and realistic fake model replies.
// Each fixture is used by some tests and not others; unused variants are not dead product code.
#![allow(dead_code)]

pub mod fake_api;
pub mod replies;
