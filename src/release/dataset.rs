//! What the card and Croissant both state about the dataset: its tags, license, citation and
//! name, defined once.

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
