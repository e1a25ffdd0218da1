//! All user-facing output goes through the `Printer`: progress and notes to stderr, results to
//! stdout, and progress bars only on a terminal. Nothing else in the crate prints: Cargo.toml's
//! `[lints.clippy]` denies `print_stdout`/`print_stderr` everywhere but here.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::fmt::Display;
use std::io::IsTerminal;

#[derive(Debug, Clone, Default)]
pub struct Printer {
    pub quiet: bool,
}

impl Printer {
    /// A progress note (stderr).
    pub fn note(&self, msg: impl Display) {
        if !self.quiet {
            eprintln!("{msg}");
        }
    }

    /// A warning (stderr), shown even when quiet.
    pub fn warn(&self, msg: impl Display) {
        eprintln!("warning: {msg}");
    }

    /// The error a command ended with (stderr), with each cause of its chain after a colon.
    pub fn error(&self, error: &dyn std::error::Error) {
        let mut line = format!("error: {error}");
        let mut cause = error.source();
        while let Some(inner) = cause {
            line.push_str(&format!(": {inner}"));
            cause = inner.source();
        }
        eprintln!("{line}");
    }

    /// A result line (stdout).
    pub fn out(&self, msg: impl Display) {
        println!("{msg}");
    }

    /// A progress bar on stderr, hidden when stderr is not a terminal or output is quiet.
    pub fn bar(&self, len: u64, template: &str) -> ProgressBar {
        let bar = ProgressBar::new(len);
        if self.quiet || !std::io::stderr().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar
    }
}
