//! The item shapes that flow between stages: the ten categories, a candidate as the author stage
//! writes it (with provenance), and a reject with its reason. The release record the card's
//! schema defines lives in `crate::release::schema::record`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The ten SASEval categories, in the card's order (which is also the release order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    SimpleFactual,
    BloatedFactual,
    Reasoning,
    BloatedReasoning,
    TechnicalCode,
    LongDocumentQa,
    MultiDocumentQa,
    Conversational,
    MemoryRecall,
    MemoryUpdate,
}

impl Category {
    pub const ALL: [Category; 10] = [
        Category::SimpleFactual,
        Category::BloatedFactual,
        Category::Reasoning,
        Category::BloatedReasoning,
        Category::TechnicalCode,
        Category::LongDocumentQa,
        Category::MultiDocumentQa,
        Category::Conversational,
        Category::MemoryRecall,
        Category::MemoryUpdate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Category::SimpleFactual => "simple_factual",
            Category::BloatedFactual => "bloated_factual",
            Category::Reasoning => "reasoning",
            Category::BloatedReasoning => "bloated_reasoning",
            Category::TechnicalCode => "technical_code",
            Category::LongDocumentQa => "long_document_qa",
            Category::MultiDocumentQa => "multi_document_qa",
            Category::Conversational => "conversational",
            Category::MemoryRecall => "memory_recall",
            Category::MemoryUpdate => "memory_update",
        }
    }

    /// The category's place in [`Category::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn from_name(name: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Memory categories carry `durable` and `stale` annotations.
    pub fn is_memory(self) -> bool {
        matches!(self, Category::MemoryRecall | Category::MemoryUpdate)
    }

    /// Closed-book categories that ask for one fact of the world: two of their questions with the
    /// same key ask for the same fact.
    pub fn asks_a_fact(self) -> bool {
        matches!(self, Category::SimpleFactual | Category::BloatedFactual)
    }

    /// Categories whose golds are numbers that the repair stage re-solves.
    pub fn is_numeric(self) -> bool {
        matches!(self, Category::Reasoning | Category::BloatedReasoning)
    }
}

impl fmt::Display for Category {
    /// The name, padded to the width the caller asks for (`{category:<20}` lines up columns).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One authored item with its provenance, as stored in `authored.jsonl` and `repaired.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Unique per item, derived from the author custom_id and the item's position in the reply.
    pub id: String,
    pub category: Category,
    pub domain: String,
    pub prompt: String,
    pub golds: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durable: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale: Option<Vec<String>>,
    pub custom_id: String,
    pub model: String,
    pub round: u32,
    #[serde(default, rename = "_gold_repaired", skip_serializing_if = "is_false")]
    pub gold_repaired: bool,
    #[serde(default, rename = "_needs_review", skip_serializing_if = "is_false")]
    pub needs_review: bool,
}

/// Why an item or a reply was dropped, written to `rejects.jsonl` so nothing paid for vanishes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reject {
    /// `author` or `assemble`.
    pub stage: String,
    pub reason: String,
    pub detail: String,
    pub category: Category,
    pub custom_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
    pub domain: String,
    pub round: u32,
    /// For duplicates: the id of the item or earlier-release record it collided with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collided_with: Option<String>,
    /// The raw text (item JSON or reply), cut to a readable length; the full reply stays in the cache.
    pub excerpt: String,
}

/// How many characters of a text a message quotes: a rejected item's question, a panel answer.
pub const QUOTE_CHARS: usize = 80;

/// The first [`QUOTE_CHARS`] characters of `text`, marked when cut, as a message quotes it.
pub fn quote(text: &str) -> String {
    excerpt(text, QUOTE_CHARS)
}

/// The first `max` characters of `text`, marked when cut.
pub fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
