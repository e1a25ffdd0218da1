//! Command dispatch: loads the config, takes the out-dir lock and runs the requested stage(s).
//! Every failure comes back as `crate::Error`, whose `code()` is the Contract's exit code.

use crate::cli::{AssembleArgs, BatchArgs, Cli, Command};
use crate::config::{Config, Provider};
use crate::error::{Error, Result};
use crate::runner::journal::{Journal, Stage};
use crate::runner::{RunOptions, Runner, StateDir};
use crate::stages::item::Category;
use crate::stages::templates::Templates;
use crate::stages::{self, Ctx};
use crate::ui::Printer;
use crate::util::lock::OutLock;
use std::path::Path;
use std::process::ExitCode;

pub async fn run(cli: Cli, printer: &Printer) -> Result<ExitCode> {
    if let Command::Verify {
        path,
        check_actions,
    } = &cli.command
    {
        return verify(&cli, path, *check_actions, printer);
    }
    if let Command::Diff { a, b, json } = &cli.command {
        return diff(&cli, a, b, *json, printer);
    }
    let config = Config::load(&cli.config, &cli.overrides)?;
    let out_dir = cli
        .out
        .clone()
        .unwrap_or_else(|| config.release.out_dir.clone());
    let (batch, assemble, step) = match &cli.command {
        Command::Author { dry_run: true, .. } => {
            let templates = Templates::load(&config.author.prompts_dir)?;
            printer.out(stages::author::dry_run(&config, &templates)?);
            let repair = stages::plan::repair(&config, templates.verify.text());
            printer.out(stages::plan::render(&config, &repair));
            let audit = if config.audit.models.is_empty() {
                printer.out("audit: skipped (audit.models is empty)");
                None
            } else {
                let audit = stages::audit::AuditTemplate::load(&config.author.prompts_dir)?;
                let plan = stages::plan::audit(&config, audit.template.text());
                printer.out(stages::plan::render(&config, &plan));
                Some(plan)
            };
            printer.out(stages::fill::predict(
                &config,
                &templates,
                &repair,
                audit.as_ref(),
            ));
            return Ok(ExitCode::SUCCESS);
        }
        Command::Audit { dry_run: true, .. } => {
            printer.out(stages::audit::dry_run(&config, &out_dir)?);
            return Ok(ExitCode::SUCCESS);
        }
        Command::Status => return status(&config, &out_dir, printer),
        Command::Cancel => return cancel(&config, &out_dir, printer).await,
        Command::Verify { .. } | Command::Diff { .. } => return Ok(ExitCode::SUCCESS),
        Command::Author { batch, .. } => (batch.clone(), AssembleArgs::default(), Step::Author),
        Command::Repair { batch } => (batch.clone(), AssembleArgs::default(), Step::Repair),
        Command::Audit { batch, .. } => (batch.clone(), AssembleArgs::default(), Step::Audit),
        Command::Assemble { assemble } => (BatchArgs::default(), assemble.clone(), Step::Assemble),
        Command::Run { batch, assemble } => (batch.clone(), assemble.clone(), Step::Loop),
    };
    prepare_out_dir(&out_dir)?;
    let _lock = OutLock::acquire(&out_dir, printer)?;
    run_steps(&config, &out_dir, printer, &batch, &assemble, step).await
}

/// What a command runs: one stage, or the whole loop.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    Author,
    Repair,
    Audit,
    Assemble,
    Loop,
}

async fn run_steps(
    config: &Config,
    out_dir: &Path,
    printer: &Printer,
    batch: &BatchArgs,
    assemble: &AssembleArgs,
    step: Step,
) -> Result<ExitCode> {
    let templates = match step {
        Step::Author | Step::Repair | Step::Loop => {
            Some(Templates::load(&config.author.prompts_dir)?)
        }
        Step::Audit | Step::Assemble => None,
    };
    let options = RunOptions {
        no_wait: batch.no_wait,
        imports: batch.imports.clone(),
        retry_failed: batch.retry_failed,
    };
    let runner = Runner::open(config, out_dir, options, printer)?;
    let mut ctx = Ctx {
        config,
        out_dir: out_dir.to_path_buf(),
        printer,
        runner,
    };
    match (step, &templates) {
        (Step::Loop, Some(t)) => {
            stages::fill::run(&mut ctx, t, assemble).await?;
        }
        (Step::Author, Some(t)) => {
            stages::author::run(&mut ctx, t).await?;
        }
        (Step::Repair, Some(t)) => {
            stages::repair::run(&mut ctx, t, "repair").await?;
        }
        (Step::Audit, _) => {
            stages::audit::run(&mut ctx, "audit").await?;
        }
        (Step::Assemble, _) => stages::assemble::run(&mut ctx, assemble)?,
        (Step::Loop | Step::Author | Step::Repair, None) => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// Creates the out dir, with a clear error when it is a file or cannot be written.
fn prepare_out_dir(out_dir: &Path) -> Result<()> {
    if out_dir.exists() && !out_dir.is_dir() {
        return Err(Error::OutDirIsFile(out_dir.to_path_buf()));
    }
    std::fs::create_dir_all(out_dir).map_err(|source| Error::OutDirCreate {
        path: out_dir.to_path_buf(),
        source,
    })?;
    let probe = out_dir.join(".saseval.write-test");
    crate::util::fsio::create_temp(&probe).map_err(|source| Error::OutDirNotWritable {
        path: out_dir.to_path_buf(),
        source,
    })?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// `status`: every job of the out dir from its journal (no network), and what a re-run does next.
fn status(config: &Config, out_dir: &Path, printer: &Printer) -> Result<ExitCode> {
    let state = StateDir::new(out_dir);
    let journals = Journal::load_all(&state.journal_dir())?;
    if journals.is_empty() {
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
    let cache = crate::runner::cache::Cache::open(&state.cache())?;
    if let Some(line) = cache.torn_line() {
        printer.warn(format!(
            "{}: cut off its torn last line {line}, left by a crash; a re-run collects that outcome again",
            state.cache().display()
        ));
    }
    lines.push(format!("response cache: {} result(s)", cache.len()));
    lines.extend(loop_status(config, out_dir)?);
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
    Ok(lines)
}

/// `cancel`: asks the server to cancel every running batch of this out dir. A re-run then
/// collects what they completed and submits only the rest.
async fn cancel(config: &Config, out_dir: &Path, printer: &Printer) -> Result<ExitCode> {
    if !matches!(config.api.provider, Provider::Groq | Provider::Openai) {
        printer.out(format!(
            "provider {}: there are no remote batches to cancel",
            config.api.provider
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let state = StateDir::new(out_dir);
    let running: Vec<(String, String)> = Journal::load_all(&state.journal_dir())?
        .iter()
        .flat_map(|j| {
            j.submissions
                .iter()
                .filter_map(|s| match &s.stage {
                    Stage::Created(running) => Some((j.job.clone(), running.batch_id.clone())),
                    _ => None,
                })
                .collect::<Vec<_>>()
        })
        .collect();
    if running.is_empty() {
        printer.out("no running batches in this out dir");
        return Ok(ExitCode::SUCCESS);
    }
    let client = crate::runner::client::Client::new(&config.api, printer)?;
    for (job, id) in running {
        let batch = client.cancel_batch(&id).await?;
        printer.out(format!("job {job}: batch {id} is {}", batch.status));
    }
    printer.out("re-run the stage to collect what completed; only the rest is resubmitted");
    Ok(ExitCode::SUCCESS)
}

/// `verify <file-or-dir>`: a folder is checked against its manifest, a file against the
/// config's `release.per_category`; `--check-actions` also compares our five target rows.
fn verify(cli: &Cli, path: &Path, check_actions: bool, printer: &Printer) -> Result<ExitCode> {
    let config = if path.is_file() || check_actions {
        Some(Config::load(&cli.config, &cli.overrides)?)
    } else {
        None
    };
    let options = crate::release::verify::VerifyOptions {
        our_rows: match (&config, check_actions) {
            (Some(c), true) => Some(
                Category::ALL
                    .into_iter()
                    .map(|cat| (cat, c.category(cat).target))
                    .collect(),
            ),
            _ => None,
        },
    };
    let per_category = config.as_ref().map_or(0, |c| c.release.per_category);
    let report = crate::release::verify::verify_path(path, per_category, &options)?;
    let target = path;
    if report.problems.is_empty() {
        let counts: Vec<String> = report
            .counts
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        let by_category = if counts.is_empty() {
            String::new()
        } else {
            format!(" ({})", counts.join(", "))
        };
        let mut msg = format!(
            "verify: {} OK — {} records{by_category}, sha256 {}",
            target.display(),
            report.records,
            report.sha256
        );
        if report.lacking_stale > 0 {
            msg.push_str(&format!(
                "\n  note: {} memory record(s) carry durable without stale (v1's looser format; accepted)",
                report.lacking_stale
            ));
        }
        printer.out(msg);
        return Ok(ExitCode::SUCCESS);
    }
    let mut lines = vec![format!(
        "verify: {} has {} problem(s):",
        target.display(),
        report.problems.len()
    )];
    lines.extend(report.problems.iter().map(|p| format!("  {p}")));
    printer.out(lines.join("\n"));
    Ok(ExitCode::from(crate::exit::RUNTIME))
}

/// `diff A B`: compares two releases and prints a table or `--json`. The near-duplicate threshold
/// is the config's `assemble.near_dup_threshold`; without a config file (the default
/// `pipeline.toml` absent, no `--config` or `--set` given) it is the default assemble uses.
fn diff(cli: &Cli, a: &Path, b: &Path, json: bool, printer: &Printer) -> Result<ExitCode> {
    let config_given = cli.config != Path::new("pipeline.toml") || !cli.overrides.is_empty();
    let threshold = if config_given || cli.config.exists() {
        Config::load(&cli.config, &cli.overrides)?
            .assemble
            .near_dup_threshold
    } else {
        crate::quality::dedup::DEFAULT_THRESHOLD
    };
    let (a, b) = (
        crate::release::diff::read_release(a)?,
        crate::release::diff::read_release(b)?,
    );
    let found = crate::release::diff::diff(&a, &b, threshold)?;
    if json {
        let text = serde_json::to_string_pretty(&found).map_err(|source| Error::Serialise {
            what: "the diff",
            source,
        })?;
        printer.out(text);
    } else {
        printer.out(crate::release::diff::render_table(&found).trim_end());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn the_write_probe_does_not_follow_a_link_planted_at_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "keep me").unwrap();
        let out_dir = dir.path().join("out");
        std::fs::create_dir(&out_dir).unwrap();
        std::os::unix::fs::symlink(&victim, out_dir.join(".saseval.write-test")).unwrap();
        prepare_out_dir(&out_dir).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        assert!(!out_dir.join(".saseval.write-test").exists());
    }
}
