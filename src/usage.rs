//! The requests and tokens a stage's outcomes represent, counted from the response bodies: what
//! `usage.json`, the manifest and the card report a release cost.

use crate::reply::ResponseBody;
use serde::{Deserialize, Serialize};

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
