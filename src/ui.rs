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

    /// The error a command ended with (stderr).
    pub fn error(&self, error: &dyn std::error::Error) {
        eprintln!("error: {}", with_causes(error));
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

/// `error` with each cause of its chain after a colon, except a cause its message already quotes.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let text = inner.to_string();
        if !line.contains(&text) {
            line.push_str(&format!(": {text}"));
        }
        cause = inner.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::with_causes;

    #[derive(Debug, thiserror::Error)]
    #[error("{message}")]
    struct Wrapped {
        message: String,
        #[source]
        source: std::io::Error,
    }

    fn wrapped(message: &str) -> Wrapped {
        Wrapped {
            message: message.to_string(),
            source: std::io::Error::other("disk full"),
        }
    }

    #[test]
    fn a_cause_is_appended_once_and_not_when_the_message_quotes_it() {
        assert_eq!(
            with_causes(&wrapped("cannot write out/x")),
            "cannot write out/x: disk full"
        );
        assert_eq!(
            with_causes(&wrapped("cannot write out/x (disk full): free some space")),
            "cannot write out/x (disk full): free some space"
        );
    }
}
