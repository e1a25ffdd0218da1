//! The commands that run no stage: each reads the out dir or a release and prints what it
//! finds. `app.rs` dispatches to them; the stages live in `crate::stages`.

pub mod cancel;
pub mod diff;
pub mod status;
pub mod verify;
