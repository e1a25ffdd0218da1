//! The four pipeline stages and what they share: the loaded config, the out dir and its
//! side-file names, and the batch runner.

pub mod assemble;
pub mod audit;
pub mod author;
pub mod fill;
pub mod item;
pub mod plan;
pub mod repair;
pub mod reply;
pub mod rounds;
pub mod templates;
pub mod yields;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::runner::{CostGuard, ReplyOutcome, Request, Runner};
use crate::ui::Printer;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How a stage ended: all its work done, or waiting on batches still running / an import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageEnd {
    Done,
    Waiting,
}

/// Names of the side files in the out dir.
pub const AUDITED: &str = "audited.jsonl";
pub const AUDIT_REPORT: &str = "audit_report.jsonl";
pub const AUDIT_SUMMARY: &str = "audit_summary.json";
pub const AUTHORED: &str = "authored.jsonl";
pub const AUTHOR_SUMMARY: &str = "author_summary.json";
pub const REJECTS: &str = "rejects.jsonl";
pub const REPAIRED: &str = "repaired.jsonl";
pub const REPAIR_REPORT: &str = "repair_report.jsonl";
pub const REPAIR_SUMMARY: &str = "repair_summary.json";
pub const USAGE: &str = "usage.json";

pub struct Ctx<'a> {
    pub config: &'a Config,
    pub out_dir: PathBuf,
    pub printer: &'a Printer,
    pub runner: Runner<'a>,
}

impl Ctx<'_> {
    /// Runs `requests` as `job`: `None` when some still wait (the printed note says to re-run),
    /// else the outcome of every request that has one, by custom_id. The stage's limit counts
    /// what its requests answered earlier (in earlier rounds of the loop) already cost.
    pub async fn run_job(
        &mut self,
        job: &str,
        requests: &[Request],
        max_cost_usd: f64,
        cost_key: &'static str,
    ) -> Result<Option<BTreeMap<String, ReplyOutcome>>> {
        let spent = self.runner.usage(requests)?;
        let guard = CostGuard::new(max_cost_usd, cost_key, spent.cost_usd);
        let result = self.runner.run(job, requests, &guard).await?;
        if result.waiting > 0 {
            self.printer.note(format!(
                "{job}: waits for {} request(s); re-run the same command to continue",
                result.waiting
            ));
            return Ok(None);
        }
        let mut outcomes = BTreeMap::new();
        for r in requests {
            if let Some(outcome) = self.runner.outcome(r)? {
                outcomes.insert(r.custom_id.clone(), outcome);
            }
        }
        Ok(Some(outcomes))
    }

    pub fn out(&self, name: &str) -> PathBuf {
        self.out_dir.join(name)
    }

    pub fn out_dir(&self) -> &Path {
        &self.out_dir
    }
}

/// Records in `usage.json` what `requests` (every request of `stage`, all rounds) spent.
pub fn write_usage<'r>(
    ctx: &Ctx<'_>,
    stage: &str,
    requests: impl IntoIterator<Item = &'r Request> + Clone,
) -> Result<()> {
    let usage = ctx.runner.usage(requests)?;
    let path = ctx.out(USAGE);
    let mut all: std::collections::BTreeMap<String, crate::runner::usage::StageUsage> =
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
            Err(_) => Default::default(),
        };
    all.insert(stage.to_string(), usage);
    write_json(&path, "usage.json", &all)
}

/// Writes `value` as pretty JSON to `path`, atomically.
pub fn write_json(path: &Path, what: &'static str, value: &impl serde::Serialize) -> Result<()> {
    let bytes =
        serde_json::to_vec_pretty(value).map_err(|source| Error::Serialise { what, source })?;
    crate::util::fsio::write_atomic(path, &bytes).map_err(|source| Error::Write {
        path: path.to_path_buf(),
        source,
    })
}
