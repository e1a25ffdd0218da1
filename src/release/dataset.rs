//! What the card, Croissant and the license file state about the dataset: its tags, license,
//! citation and name, defined once.

use super::info::ReleaseInfo;

pub const TAGS: [&str; 6] = [
    "context-governance",
    "prompt-compression",
    "benchmark",
    "enterprise",
    "saseval",
    "llm-evaluation",
];
pub const LICENSE_NAME: &str = "cosavu-eval";
/// The license file the release carries; the card's `license_link` and Croissant point to it
/// (the Hub links a `license_link` naming a file of the repository to that file).
pub const LICENSE_FILE: &str = "LICENSE.md";
/// What is known of the license: v1's placeholder, not yet a confirmed distribution license.
pub const LICENSE_TERMS: &str = "Released for benchmark evaluation. The distribution license is not \
yet confirmed: `cosavu-eval` is the placeholder name that v1's card also uses. Confirm the intended \
distribution license before public release.";
pub const PAPER: &str = "SASEval: A Strategic-Alignment-Score Benchmark for Context Infrastructure";
pub const CITATION: &str = "@techreport{saseval2026,
  title  = {SASEval: A Strategic-Alignment-Score Benchmark for Context Infrastructure},
  author = {Abimalla, Thishyaketh and Teja, Arun and Komal, Satya},
  institution = {Cosavu Inc., ContextAPI Research Division},
  year   = {2026}
}";

pub fn pretty_name(info: &ReleaseInfo) -> String {
    format!("SASEval {} — Public Prompt Set", info.version)
}

/// `LICENSE.md`: the license section the card's `license_link` points to.
pub fn license_file(info: &ReleaseInfo) -> String {
    format!(
        "# License of {} (`{LICENSE_NAME}`)\n\n{LICENSE_TERMS}\n\n\
         This file is the `license_link` of the dataset card (`README.md`); `SHA256SUMS` covers it.\n",
        pretty_name(info)
    )
}
