//! `cancel`: asks the Batch API to cancel this out dir's running batches, so a maintainer can
//! stop paying for a job and later collect what it completed.

use crate::config::{Config, Provider};
use crate::error::Result;
use crate::runner::journal::{Journal, Stage};
use crate::runner::StateDir;
use crate::ui::Printer;
use std::path::Path;
use std::process::ExitCode;

/// `cancel`: asks the server to cancel every running batch of this out dir. A re-run then
/// collects what they completed and submits only the rest.
pub async fn run(config: &Config, out_dir: &Path, printer: &Printer) -> Result<ExitCode> {
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
