//! The thirteen columns of a release record, in the v1 card's order, each defined once: its
//! name, its type, when a record carries it, how the card and Croissant describe it, and how its
//! value is read off a record. The writer, `verify`, the card's schema table and Hub features,
//! and Croissant's fields are all derived from [`COLUMNS`].

use super::record::{json_number, ReleaseRecord};
use serde_json::{Map, Value};

/// A column's value type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    TextList,
    /// A fixed number of floats (`target_action`).
    Floats(usize),
    Float,
    Integer,
    /// A boolean flag, written only when true.
    Flag,
}

/// A column's type as a Hugging Face `datasets` feature, as a card's `dataset_info.features`
/// spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HubFeature {
    /// `dtype: <dtype>`.
    Value(&'static str),
    /// `list: <dtype>`, with `length: <n>` when every value has `n` items.
    List {
        dtype: &'static str,
        length: Option<usize>,
    },
}

impl Kind {
    /// The type as the card's schema table spells it.
    pub fn card_type(self) -> String {
        match self {
            Kind::Text => "string".into(),
            Kind::TextList => "string[]".into(),
            Kind::Floats(n) => format!("float[{n}]"),
            Kind::Float => "float".into(),
            Kind::Integer => "int".into(),
            Kind::Flag => "bool".into(),
        }
    }

    /// Croissant's `dataType`, and the `arrayShape` of an array column.
    pub fn croissant(self) -> (&'static str, Option<String>) {
        match self {
            Kind::Text => ("sc:Text", None),
            Kind::TextList => ("sc:Text", Some("-1".into())),
            Kind::Floats(n) => ("sc:Float", Some(n.to_string())),
            Kind::Float => ("sc:Float", None),
            Kind::Integer => ("sc:Integer", None),
            Kind::Flag => ("sc:Boolean", None),
        }
    }

    /// The Hub feature: declared in the card, it gives every release the same schema, so a column
    /// that no line carries (a flag nobody got) loads as null instead of being missing.
    pub fn hub_feature(self) -> HubFeature {
        match self {
            Kind::Text => HubFeature::Value("string"),
            Kind::TextList => HubFeature::List {
                dtype: "string",
                length: None,
            },
            Kind::Floats(n) => HubFeature::List {
                dtype: "float64",
                length: Some(n),
            },
            Kind::Float => HubFeature::Value("float64"),
            Kind::Integer => HubFeature::Value("int64"),
            Kind::Flag => HubFeature::Value("bool"),
        }
    }
}

/// When a record carries a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    Always,
    /// On both memory categories, always (`stale` may be empty); on no other category.
    MemoryCategories,
    /// Only when true.
    WhenTrue,
}

/// One column of a release record.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    pub kind: Kind,
    pub presence: Presence,
    /// Its description in the card's schema table.
    pub card: &'static str,
    /// Its description in Croissant.
    pub croissant: &'static str,
    /// Its value in a record, `None` when the record does not carry it.
    pub value: fn(&ReleaseRecord) -> Option<Value>,
}

fn text(value: &str) -> Option<Value> {
    Some(Value::String(value.to_string()))
}

fn texts(values: &[String]) -> Option<Value> {
    Some(Value::Array(
        values.iter().cloned().map(Value::String).collect(),
    ))
}

fn flag(set: bool) -> Option<Value> {
    set.then_some(Value::Bool(true))
}

pub const ID: Column = Column {
    name: "id",
    kind: Kind::Text,
    presence: Presence::Always,
    card: "Stable id, unique in the file",
    croissant: "Stable id, unique in the file.",
    value: |r| text(&r.id),
};

pub const CATEGORY: Column = Column {
    name: "category",
    kind: Kind::Text,
    presence: Presence::Always,
    card: "One of the 10 categories above",
    croissant: "One of the 10 SASEval categories.",
    value: |r| text(r.category.name()),
};

pub const PROMPT: Column = Column {
    name: "prompt",
    kind: Kind::Text,
    presence: Presence::Always,
    card: "The user prompt fed to the governor (may embed a document/dialog/memory block)",
    croissant: "The user prompt fed to the governor.",
    value: |r| text(&r.prompt),
};

pub const GOLDS: Column = Column {
    name: "golds",
    kind: Kind::TextList,
    presence: Presence::Always,
    card: "Acceptable short answers; grading is **case-insensitive substring match** against any entry",
    croissant: "Acceptable short answers; graded by case-insensitive substring match against any entry.",
    value: |r| texts(&r.golds),
};

pub const TARGET_ACTION: Column = Column {
    name: "target_action",
    kind: Kind::Floats(5),
    presence: Presence::Always,
    card: "Category-conditioned SAS solvency target `[c, T, p, d, L/2048]`",
    croissant: "Category target [c, T, p, d, L/2048].",
    value: |r| {
        Some(Value::Array(
            r.target_action.iter().map(|&x| json_number(x)).collect(),
        ))
    },
};

pub const T: Column = Column {
    name: "T",
    kind: Kind::Float,
    presence: Presence::Always,
    card: "Canonical grader temperature for the category (= `target_action[1]`)",
    croissant: "Grader temperature, target_action[1].",
    value: |r| Some(json_number(r.t)),
};

pub const TOP_P: Column = Column {
    name: "top_p",
    kind: Kind::Float,
    presence: Presence::Always,
    card: "Canonical nucleus-sampling top-p (= `target_action[2]`)",
    croissant: "Nucleus-sampling top-p, target_action[2].",
    value: |r| Some(json_number(r.top_p)),
};

pub const MODE: Column = Column {
    name: "mode",
    kind: Kind::Text,
    presence: Presence::Always,
    card: "`DEEP` (reasoning, `d = 1`) or `STRICT` (direct, `d = 0`)",
    croissant: "DEEP when d = 1, else STRICT.",
    value: |r| text(r.mode),
};

pub const MAX_NEW: Column = Column {
    name: "max_new",
    kind: Kind::Integer,
    presence: Presence::Always,
    card: "Canonical max answer tokens for the category (= `L`)",
    croissant: "Max answer tokens, L.",
    value: |r| Some(Value::Number(r.max_new.into())),
};

pub const DURABLE: Column = Column {
    name: "durable",
    kind: Kind::TextList,
    presence: Presence::MemoryCategories,
    card: "*(memory categories, always present)* facts a correct governor must retain",
    croissant: "Memory categories only: facts a correct governor must retain.",
    value: |r| r.durable.as_deref().and_then(texts),
};

pub const STALE: Column = Column {
    name: "stale",
    kind: Kind::TextList,
    presence: Presence::MemoryCategories,
    card: "*(memory categories, always present, may be `[]`)* outdated facts a correct governor should drop",
    croissant: "Memory categories only: outdated facts a correct governor should drop (may be empty).",
    value: |r| r.stale.as_deref().and_then(texts),
};

pub const GOLD_REPAIRED: Column = Column {
    name: "_gold_repaired",
    kind: Kind::Flag,
    presence: Presence::WhenTrue,
    card: "*(present when true)* numeric key was replaced by the verification pass",
    croissant: "Present (true) when the numeric key was replaced by the verification pass.",
    value: |r| flag(r.gold_repaired),
};

pub const NEEDS_REVIEW: Column = Column {
    name: "_needs_review",
    kind: Kind::Flag,
    presence: Presence::WhenTrue,
    card: "*(present when true)* item flagged as likely ill-posed — filter before use",
    croissant: "Present (true) when the item was flagged as likely ill-posed.",
    value: |r| flag(r.needs_review),
};

/// Every column, in the card's order (the order of a record's fields).
pub const COLUMNS: [Column; 13] = [
    ID,
    CATEGORY,
    PROMPT,
    GOLDS,
    TARGET_ACTION,
    T,
    TOP_P,
    MODE,
    MAX_NEW,
    DURABLE,
    STALE,
    GOLD_REPAIRED,
    NEEDS_REVIEW,
];

/// The column named `name`.
pub fn column(name: &str) -> Option<&'static Column> {
    COLUMNS.iter().find(|column| column.name == name)
}

impl ReleaseRecord {
    /// One compact JSON object in the card's field order, numbers spelled as v1 spells them:
    /// every column of [`COLUMNS`] the record carries.
    pub fn to_line(&self) -> String {
        let object: Map<String, Value> = COLUMNS
            .iter()
            .filter_map(|column| (column.value)(self).map(|value| (column.name.to_string(), value)))
            .collect();
        Value::Object(object).to_string()
    }
}
