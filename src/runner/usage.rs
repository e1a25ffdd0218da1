//! The requests and tokens a stage's outcomes represent, counted from the response bodies, and
//! what they cost at `[prices]`: what `usage.json`, the manifest and the card report a release
//! cost, beside the worst case the dry run estimated for the same requests.

use crate::stages::reply::ResponseBody;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Token use and request counts a job spent (read back from cached responses).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub requests: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl Usage {
    pub fn add_response(&mut self, body: &ResponseBody) {
        self.requests += 1;
        let tokens = body.tokens();
        self.prompt_tokens += tokens.prompt_tokens;
        self.completion_tokens += tokens.completion_tokens;
    }

    pub fn add(&mut self, other: Usage) {
        self.requests += other.requests;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
    }
}

/// What one stage spent over every round: its tokens and their cost, in all and by model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageUsage {
    #[serde(flatten)]
    pub total: Usage,
    /// The reported tokens at `[prices]` (with the batch discount where the provider gives one;
    /// local and file runs cost nothing, and an unpriced model counts as 0).
    #[serde(default)]
    pub cost_usd: f64,
    /// The dry run's estimate for the same requests: every reply at `max_tokens`.
    #[serde(default)]
    pub worst_case_usd: f64,
    #[serde(default)]
    pub by_model: BTreeMap<String, ModelUsage>,
}

/// One model's share of a stage's usage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelUsage {
    #[serde(flatten)]
    pub usage: Usage,
    #[serde(default)]
    pub cost_usd: f64,
}
