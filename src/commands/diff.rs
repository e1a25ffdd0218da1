//! `diff A B`: compares two releases and prints the table or the JSON.

use crate::cli::{Cli, DEFAULT_CONFIG};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::ui::Printer;
use std::path::Path;
use std::process::ExitCode;

/// `diff A B`: compares two releases and prints a table or `--json`. The near-duplicate threshold
/// is the config's `assemble.near_dup_threshold`; without a config file (the default
/// `pipeline.toml` absent, no `--config` or `--set` given) it is the default assemble uses.
pub fn run(cli: &Cli, a: &Path, b: &Path, json: bool, printer: &Printer) -> Result<ExitCode> {
    let config_given = cli.config != Path::new(DEFAULT_CONFIG) || !cli.overrides.is_empty();
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
