//! The names of a release's files, defined once for the writer, `verify` and `diff`.

/// The manifest: what the release holds, its counts and its prompts file's name.
pub const MANIFEST: &str = "manifest.json";
/// The dataset card.
pub const CARD: &str = "README.md";
/// The Croissant metadata.
pub const CROISSANT: &str = "croissant.json";
/// The report of the release's numbers as charts.
pub const REPORT: &str = "report.html";
/// The SHA-256 of every other release file, written last.
pub const SUMS: &str = "SHA256SUMS";
