//! Each category's target action: the row `(c, T, p, d, L)` a record's `target_action`, `T`,
//! `top_p`, `mode` and `max_new` derive from, and the five rows the v1 card publishes.

use crate::stages::item::Category;
use serde::{Deserialize, Serialize};

/// One category's target action `(c, T, p, d, L)` as Appendix B of the SASEval paper states it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TargetRow {
    pub c: f64,
    #[serde(rename = "T")]
    pub t: f64,
    pub p: f64,
    pub d: u8,
    #[serde(rename = "L")]
    pub l: u32,
}

impl TargetRow {
    /// The row's keys, as a category table spells them.
    pub const KEYS: [&'static str; 5] = ["c", "T", "p", "d", "L"];

    /// `[c, T, p, d, L/2048]`, the record's `target_action`.
    pub fn target_action(&self) -> [f64; 5] {
        [
            self.c,
            self.t,
            self.p,
            f64::from(self.d),
            f64::from(self.l) / MAX_NEW_SCALE,
        ]
    }

    /// `DEEP` iff `d == 1`, else `STRICT`.
    pub fn mode(&self) -> &'static str {
        if self.d == 1 {
            "DEEP"
        } else {
            "STRICT"
        }
    }
}

/// `target_action[4]` is `L / 2048`.
pub const MAX_NEW_SCALE: f64 = 2048.0;

/// The five rows the v1 card publishes (its Appendix-B table and its example record).
pub const CARD_ROWS: [(Category, TargetRow); 5] = [
    (
        Category::SimpleFactual,
        TargetRow {
            c: 0.10,
            t: 0.30,
            p: 0.90,
            d: 0,
            l: 128,
        },
    ),
    (
        Category::Reasoning,
        TargetRow {
            c: 0.20,
            t: 0.20,
            p: 0.90,
            d: 1,
            l: 768,
        },
    ),
    (
        Category::LongDocumentQa,
        TargetRow {
            c: 0.45,
            t: 0.20,
            p: 0.90,
            d: 1,
            l: 512,
        },
    ),
    (
        Category::MultiDocumentQa,
        TargetRow {
            c: 0.55,
            t: 0.20,
            p: 0.90,
            d: 1,
            l: 512,
        },
    ),
    (
        Category::MemoryUpdate,
        TargetRow {
            c: 0.45,
            t: 0.2,
            p: 0.9,
            d: 1,
            l: 512,
        },
    ),
];

/// The v1 card's row for `category`, when the card publishes one.
pub fn card_row(category: Category) -> Option<TargetRow> {
    CARD_ROWS
        .iter()
        .find(|(known, _)| *known == category)
        .map(|(_, row)| *row)
}

/// Where a category's target row comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowSource {
    /// Published by the v1 card; `verify` holds every release to it.
    V1Card,
    /// Not published by v1; set in this project's `pipeline.toml`.
    Project,
}

impl RowSource {
    pub fn of(category: Category) -> RowSource {
        if card_row(category).is_some() {
            RowSource::V1Card
        } else {
            RowSource::Project
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            RowSource::V1Card => "v1_card",
            RowSource::Project => "saseval_gen",
        }
    }
}
