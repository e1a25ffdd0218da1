//! The one error type every command returns, defined below the stages. Each variant carries the
//! data its message needs, and [`Error::code`] is the exit code of the Contract (README.md) in one
//! exhaustive match, so a new failure has to be given its code: it cannot fall through to a
//! default.

use std::path::PathBuf;

use crate::config::ConfigError;
use crate::quality::dedup::DedupError;
use crate::release::diff::DiffError;
use crate::release::verify::VerifyError;
use crate::release::ReleaseError;
use crate::runner::cache::CacheError;
use crate::runner::client::ClientError;
use crate::runner::journal::JournalError;
use crate::runner::BatchError;
use crate::stages::templates::TemplateError;
use crate::util::jsonl::JsonlError;
use crate::util::lock::LockError;

use crate::exit::{RUNTIME, USAGE};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// Boxed: the runner's errors carry the most data, and every `Result` would pay its size.
    #[error(transparent)]
    Batch(Box<BatchError>),
    #[error(transparent)]
    Release(#[from] ReleaseError),
    #[error(transparent)]
    Verify(#[from] VerifyError),
    #[error(transparent)]
    Jsonl(#[from] JsonlError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Dedup(#[from] DedupError),
    #[error(transparent)]
    Diff(#[from] DiffError),
    #[error(
        "the out dir {} exists and is not a folder: pass another --out or move the file",
        .0.display()
    )]
    OutDirIsFile(PathBuf),
    #[error("cannot create the out dir {}: {source}; pass a writable --out", path.display())]
    OutDirCreate {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the out dir {} is not writable ({source}): pass a writable --out or fix its permissions",
        path.display()
    )]
    OutDirNotWritable {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A stage's input does not exist yet; `next` is what to run first.
    #[error("{} does not exist: {next}", path.display())]
    MissingInput { path: PathBuf, next: &'static str },
    /// A stage's input changed after the stage that reads it ran; `next` is what to re-run.
    #[error("{} is stale: {input} changed after it was written; {next}", path.display())]
    StaleInput {
        path: PathBuf,
        input: &'static str,
        next: &'static str,
    },
    /// An `--exclude` release that cannot be read as a release JSONL.
    #[error("--exclude {}{}: {reason}", path.display(), line.map(|n| format!(" line {n}")).unwrap_or_default())]
    Exclude {
        path: PathBuf,
        line: Option<usize>,
        reason: String,
    },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not valid: {source}", path.display())]
    InvalidSideFile {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("cannot serialise {what}: {source}")]
    Serialise {
        what: &'static str,
        source: serde_json::Error,
    },
    /// The closed loop's state file cannot be read as the loop wrote it.
    #[error("{} is damaged ({why}). It records which authoring requests each round of the loop asked for; the plans are derived from the cached replies again when it is gone. Move it aside (`mv {} {}.damaged`) and re-run: nothing already paid for is asked again", path.display(), crate::util::fsio::shell_word(path), crate::util::fsio::shell_word(path))]
    DamagedLoopState { path: PathBuf, why: String },
    /// Categories the release cannot fill, one line each, and `allow_short` is off.
    #[error(
        "cannot fill the release: {} categor{} short of {per_category} items:\n  {}\n{}No release was written. Raise author.max_rounds and re-run `saseval-gen run`: the loop goes on where it stopped, authoring only for the short categories and paying for nothing twice. Or set assemble.allow_short = true to publish the counts you have (stated in the manifest and card).",
        short.len(),
        if short.len() == 1 { "y is" } else { "ies are" },
        short.join("\n  "),
        line(stopped)
    )]
    ShortRelease {
        per_category: usize,
        short: Vec<String>,
        /// Why the loop stopped authoring.
        stopped: String,
    },
}

impl From<BatchError> for Error {
    fn from(error: BatchError) -> Error {
        Error::Batch(Box::new(error))
    }
}

/// The runner's parts report through `BatchError`, which knows their exit codes.
macro_rules! through_batch_error {
    ($($part:ty),*) => {$(
        impl From<$part> for Error {
            fn from(error: $part) -> Error {
                Error::from(BatchError::from(error))
            }
        }
    )*};
}

through_batch_error!(ClientError, CacheError, JournalError);

impl Error {
    /// The exit code of the Contract (README.md): 2 for usage and configuration problems, else 1.
    pub fn code(&self) -> u8 {
        match self {
            Error::Config(_)
            | Error::Template(_)
            | Error::OutDirIsFile(_)
            | Error::OutDirCreate { .. }
            | Error::OutDirNotWritable { .. }
            | Error::MissingInput { .. }
            | Error::StaleInput { .. }
            | Error::Exclude { .. } => USAGE,
            Error::Batch(error) => error.code(),
            Error::Diff(error) => error.code(),
            Error::Release(_)
            | Error::Verify(_)
            | Error::Jsonl(_)
            | Error::Lock(_)
            | Error::Dedup(_)
            | Error::Read { .. }
            | Error::Write { .. }
            | Error::InvalidSideFile { .. }
            | Error::DamagedLoopState { .. }
            | Error::Serialise { .. }
            | Error::ShortRelease { .. } => RUNTIME,
        }
    }
}

/// `text` as a line of its own, or nothing when it is empty.
fn line(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!("{text}\n")
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
