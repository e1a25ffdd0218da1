//! `status`: what the out dir's journals, response cache and loop rounds say, read without the
//! network, and what a re-run does next.

use crate::config::Config;
use crate::error::Result;
use crate::runner::journal::{Journal, Stage};
use crate::runner::StateDir;
use crate::stages;
use crate::ui::Printer;
use std::path::Path;
use std::process::ExitCode;

/// `status`: every job of the out dir from its journal (no network), and what a re-run does next.
pub fn run(config: &Config, out_dir: &Path, printer: &Printer) -> Result<ExitCode> {
    let state = StateDir::new(out_dir);
    let journals = Journal::load_all(&state.journal_dir())?;
    let cache = crate::runner::cache::Cache::open(&state.cache())?;
    let loop_lines = loop_status(config, out_dir)?;
    if journals.is_empty() && cache.is_empty() && loop_lines.is_empty() {
        printer.out(format!(
            "{}: no jobs yet (run `saseval-gen author` or `saseval-gen run`)",
            out_dir.display()
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let mut lines = vec![format!(
        "out dir {} (provider {}):",
        out_dir.display(),
        config.api.provider
    )];
    if journals.is_empty() {
        // The local and online backends compute or send each request directly: they journal no
        // batch or file, and their results are the cache's.
        lines.push(
            "jobs: none journaled (no batch or export file); the results are in the response cache"
                .into(),
        );
    }
    for journal in &journals {
        lines.push(format!("job {}:", journal.job));
        for sub in &journal.submissions {
            let counts = sub
                .counts()
                .map(|c| format!("{}/{} done, {} failed", c.completed, c.total, c.failed))
                .unwrap_or_else(|| format!("{} requests", sub.requests));
            let next = match sub.stage {
                Stage::Planned => "next: upload (after checking the server for this file)",
                Stage::Uploaded { .. } => {
                    "next: create the batch (after looking for one with this fingerprint)"
                }
                Stage::Created(_) => "next: poll until it finishes, then collect",
                Stage::Finished(_) => "next: download and collect its results",
                Stage::Collected(_) | Stage::Imported => "done",
                Stage::Abandoned { .. } => "dropped before submission",
                Stage::Exported => "next: waiting for --import of its results",
            };
            lines.push(format!(
                "  #{:<3} {:<10} batch {:<28} {:<11} {:<28} model {} — {next}",
                sub.seq,
                sub.stage.name(),
                sub.batch_id().unwrap_or("-"),
                sub.status().map_or("-", |s| s.as_str()),
                counts,
                sub.model
            ));
        }
    }
    if let Some(line) = cache.torn_line() {
        printer.warn(format!(
            "{}: cut off its torn last line {line}, left by a crash; a re-run collects that outcome again",
            state.cache().display()
        ));
    }
    lines.push(format!("response cache: {} result(s)", cache.len()));
    lines.extend(loop_lines);
    printer.out(lines.join("\n"));
    Ok(ExitCode::SUCCESS)
}

/// The loop's round and each category's survivors against what the release needs.
fn loop_status(config: &Config, out_dir: &Path) -> Result<Vec<String>> {
    let rounds = stages::rounds::Rounds::load(out_dir)?;
    let Some(current) = rounds.rounds.last() else {
        return Ok(Vec::new());
    };
    let mut lines = vec![format!(
        "loop: round {} of at most {} (author.max_rounds)",
        current.round, config.author.max_rounds
    )];
    let Some((evaluated, evaluation)) = rounds.latest() else {
        lines.push(
            "  no round evaluated yet: its items are still being authored, repaired or audited"
                .into(),
        );
        return Ok(lines);
    };
    lines.push(format!(
        "  after round {evaluated}: survivors / needed per category"
    ));
    for (category, standing) in &evaluation.categories {
        let state = if standing.survivors >= standing.needed {
            "full".to_string()
        } else if standing.stopped {
            "short; stopped (survival near zero)".to_string()
        } else if !config.category(*category).is_asked() {
            "short; not asked (prior_survival 0)".to_string()
        } else {
            match current.plan.get(category) {
                Some(slice) if current.round > evaluated => {
                    format!(
                        "short; round {} asks {} request(s)",
                        current.round, slice.requests
                    )
                }
                _ => "short".to_string(),
            }
        };
        lines.push(format!(
            "  {:<20} {:>6}/{:<6} {state}",
            category.name(),
            standing.survivors,
            standing.needed
        ));
    }
    if out_dir.join(crate::release::files::MANIFEST).exists() {
        lines.push(format!(
            "  the loop has ended and the release is written ({}); to continue a short one, raise author.max_rounds and re-run",
            crate::release::files::MANIFEST
        ));
    }
    Ok(lines)
}
