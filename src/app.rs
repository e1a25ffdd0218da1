//! Command dispatch: loads the config, takes the out-dir lock and runs the requested stage(s); the
//! commands that run no stage live in `crate::commands`. Every failure comes back as
//! `crate::Error`, whose `code()` is the exit code of the Contract (README.md).

use crate::cli::{BatchArgs, Cli, Command};
use crate::commands;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::runner::{RunOptions, Runner};
use crate::stages::assemble::AssembleOptions;
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
        return commands::verify::run(&cli, path, *check_actions, printer);
    }
    if let Command::Diff { a, b, json } = &cli.command {
        return commands::diff::run(&cli, a, b, *json, printer);
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
        Command::Status => return commands::status::run(&config, &out_dir, printer),
        Command::Cancel => return commands::cancel::run(&config, &out_dir, printer).await,
        Command::Verify { .. } | Command::Diff { .. } => return Ok(ExitCode::SUCCESS),
        Command::Author { batch, .. } => (batch.clone(), AssembleOptions::default(), Step::Author),
        Command::Repair { batch } => (batch.clone(), AssembleOptions::default(), Step::Repair),
        Command::Audit { batch, .. } => (batch.clone(), AssembleOptions::default(), Step::Audit),
        Command::Assemble { assemble } => {
            (BatchArgs::default(), assemble.options(), Step::Assemble)
        }
        Command::Run { batch, assemble } => (batch.clone(), assemble.options(), Step::Loop),
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
    assemble: &AssembleOptions,
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
    let _ = crate::util::fsio::remove_if_present(&probe);
    Ok(())
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
