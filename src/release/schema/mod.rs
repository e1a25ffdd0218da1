//! What a release record is, defined once: its columns and every category's target row. The
//! writer, `verify`, the card's schema table and Croissant's fields derive from these tables, so
//! they cannot disagree.

pub mod columns;
mod record;
mod target;

pub use columns::{column, Column, HubFeature, Kind, Presence, COLUMNS};
pub use record::{json_number, ReleaseRecord};
pub use target::{card_row, RowSource, TargetRow, CARD_ROWS, MAX_NEW_SCALE};
