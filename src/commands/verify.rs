//! `verify <file-or-dir>`: checks a release, or one release file, the way its users will, and
//! prints what it found.

use crate::cli::Cli;
use crate::config::Config;
use crate::error::Result;
use crate::stages::item::Category;
use crate::ui::Printer;
use std::path::Path;
use std::process::ExitCode;

/// `verify <file-or-dir>`: a folder is checked against its manifest, a file against the
/// config's `release.per_category`; `--check-actions` also compares our five target rows.
pub fn run(cli: &Cli, path: &Path, check_actions: bool, printer: &Printer) -> Result<ExitCode> {
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
