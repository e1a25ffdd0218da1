//! The command line (the interface of the Contract, README.md): subcommands, global flags and their
//! help.

use crate::stages::assemble::AssembleOptions;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// The config file read when `--config` is not given.
pub const DEFAULT_CONFIG: &str = "pipeline.toml";

#[derive(Debug, Parser)]
#[command(
    name = "saseval-gen",
    version,
    about = "Rebuild the SASEval prompt set and publish hashed, verified releases"
)]
pub struct Cli {
    /// The pipeline config.
    #[arg(long, global = true, default_value = DEFAULT_CONFIG)]
    pub config: PathBuf,
    /// The out dir (overrides release.out_dir).
    #[arg(long, global = true)]
    pub out: Option<PathBuf>,
    /// Override a config value: --set dotted.key=value (the value is read as TOML, else as a string).
    #[arg(long = "set", global = true, value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Print only warnings, errors and results.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Author candidate items for all ten categories (writes authored.jsonl and rejects.jsonl).
    Author {
        #[command(flatten)]
        batch: BatchArgs,
        /// Print round 0's requests and the planned repair and audit requests, with token and
        /// cost estimates; submit nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Re-solve numeric items with verifier models; repair wrong keys, flag ill-posed items.
    Repair {
        #[command(flatten)]
        batch: BatchArgs,
    },
    /// Have the panel (audit.models) answer every item; flag keys it does not reach.
    Audit {
        #[command(flatten)]
        batch: BatchArgs,
        /// Print the panel's request count and worst-case cost; submit nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Deduplicate, trim, attach target actions and write the hashed release.
    Assemble {
        #[command(flatten)]
        assemble: AssembleArgs,
    },
    /// author, repair, audit and assemble in one go.
    Run {
        #[command(flatten)]
        batch: BatchArgs,
        #[command(flatten)]
        assemble: AssembleArgs,
    },
    /// Show every job of the out dir: batches, states, counts, and what a re-run would do.
    Status,
    /// Check a release folder (against its manifest) or a JSONL file (against release.per_category).
    Verify {
        /// A release folder or a prompts JSONL file.
        path: PathBuf,
        /// Also compare the five target-action rows that v1 did not publish with pipeline.toml.
        #[arg(long)]
        check_actions: bool,
    },
    /// Cancel this out dir's running batches (for a mistaken submission).
    Cancel,
    /// Compare two releases (folders or prompts JSONL files, ours or v1's): records added, removed
    /// and kept (matched by prompt, exactly then as near duplicates), what changed in kept ones,
    /// near duplicates across the two, and per-category counts, lengths and target rows.
    Diff {
        /// The earlier release.
        a: PathBuf,
        /// The later release.
        b: PathBuf,
        /// Print the whole comparison as JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Args, Default)]
pub struct BatchArgs {
    /// Submit and exit; re-run later to collect (a 24 h batch needs no open terminal).
    #[arg(long)]
    pub no_wait: bool,
    /// Batch output JSONL from another engine to ingest (`api.provider = "file"`).
    #[arg(long = "import", value_name = "FILE")]
    pub imports: Vec<PathBuf>,
    /// Resubmit requests of a batch that the server rejected as failed, unchanged.
    #[arg(long)]
    pub retry_failed: bool,
}

#[derive(Debug, Clone, Args, Default)]
pub struct AssembleArgs {
    /// An earlier release JSONL; candidates that duplicate or near-duplicate it are dropped.
    #[arg(long = "exclude", value_name = "RELEASE_JSONL")]
    pub excludes: Vec<PathBuf>,
    /// Keep items flagged _needs_review (flagged, as v1 did) instead of replacing them.
    #[arg(long)]
    pub keep_flagged: bool,
}

impl AssembleArgs {
    /// The assemble step's options as the command line gives them.
    pub fn options(&self) -> AssembleOptions {
        AssembleOptions {
            excludes: self.excludes.clone(),
            keep_flagged: self.keep_flagged,
        }
    }
}
