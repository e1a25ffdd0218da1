//! `saseval-gen diff A B`: what changed from release A to release B (folders or prompts files,
//! ours or v1's). Records are matched by prompt, one to one: first exactly, after the card's
//! normalisation ([`dedup::normalise`]), then as near duplicates with the assemble threshold
//! ([`dedup::find_duplicates`], A's leftovers as the reference). A matched pair is kept; what
//! stays unmatched in A is removed and in B added. For kept pairs it names golds, flags, target
//! rows and categories that changed; it lists every near duplicate across the two (also one whose
//! A record was already matched), and per category the counts, the words per prompt and the target
//! rows side by side. The same [`Diff`] is printed as a table, as JSON, and (through
//! [`Diff::changes`]) as the card's Changelog when `assemble --exclude` names an earlier release.

mod read;
mod table;

pub use read::{read_release, Record, Release};
pub use table::render_table;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;

use serde::Serialize;

use crate::quality::dedup::{self, Against, DedupConfig, DedupError, DupKind, Method};
use crate::release::{five_number_summary, ChangesSince};
use crate::stages::item::{excerpt, Category};

#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error("diff: {}: {source}; give a release folder or its prompts JSONL file", path.display())]
    Missing {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("diff: {} holds {}: give the release's prompts file itself (or a folder whose manifest.json names it)", dir.display(), if found.is_empty() { "no *_prompts.jsonl".to_string() } else { format!("several prompts files ({})", found.join(", ")) })]
    NoPromptsFile { dir: PathBuf, found: Vec<String> },
    #[error("diff: {} line {line}: {why}", path.display())]
    Line {
        path: PathBuf,
        line: usize,
        why: String,
    },
    #[error("diff: cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("diff: {0}")]
    Dedup(#[from] DedupError),
}

impl DiffError {
    /// What the user gave is not a release (exit 2); the machine failed (exit 1).
    pub fn code(&self) -> u8 {
        use crate::exit::{RUNTIME, USAGE};
        match self {
            DiffError::Missing { .. }
            | DiffError::NoPromptsFile { .. }
            | DiffError::Line { .. } => USAGE,
            DiffError::Read { .. } | DiffError::Dedup(_) => RUNTIME,
        }
    }
}

/// One release's side of the comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    /// The path given.
    pub path: String,
    /// The prompts file read.
    pub file: String,
    pub records: usize,
    pub sha256: String,
}

/// How a kept pair was matched.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Match {
    /// The same prompt after the card's normalisation.
    Exact,
    /// A near duplicate: the Jaccard similarity of their shingles.
    Near { similarity: f64 },
}

/// Golds one side has and the other has not (as strings; order does not count).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GoldChange {
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

/// A flag that differs between the two records of a kept pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlagChange {
    pub flag: &'static str,
    pub a: bool,
    pub b: bool,
}

/// A record matched in both releases, and what changed in it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Kept {
    pub a_id: String,
    pub b_id: String,
    pub category: Option<String>,
    #[serde(rename = "match")]
    pub matched: Match,
    /// `[A's, B's]` category when they differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category_changed: Option<[Option<String>; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub golds_changed: Option<GoldChange>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flags_changed: Vec<FlagChange>,
    /// `[A's, B's]` target action when they differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_changed: Option<[Option<Vec<f64>>; 2]>,
}

/// A record only one release holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Only {
    pub id: String,
    pub category: Option<String>,
    pub excerpt: String,
}

/// A near duplicate across the two releases.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NearDuplicate {
    pub a_id: String,
    pub b_id: String,
    pub similarity: f64,
    /// Whether the two are a kept pair (otherwise A's record was matched to another B record first).
    pub paired: bool,
}

/// One release's numbers for one category.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct CategorySide {
    pub records: usize,
    /// Words per prompt: min, lower quartile, median, upper quartile, max.
    pub words: Option<[usize; 5]>,
    /// The distinct target actions its records carry (one in a consistent release).
    pub target_rows: Vec<Vec<f64>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryRow {
    /// The category name; `null` for records without one.
    pub category: Option<String>,
    pub a: CategorySide,
    pub b: CategorySide,
    /// Both releases have the category and its target rows differ.
    pub row_changed: bool,
}

/// Everything `diff` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    pub a: Side,
    pub b: Side,
    /// The near-duplicate threshold used (the assemble stage's).
    pub threshold: f64,
    pub summary: Summary,
    pub kept: Vec<Kept>,
    pub added: Vec<Only>,
    pub removed: Vec<Only>,
    pub near_duplicates: Vec<NearDuplicate>,
    pub categories: Vec<CategoryRow>,
}

/// The counts the table's head and the card's Changelog state.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Summary {
    pub added: usize,
    pub removed: usize,
    pub kept: usize,
    pub kept_exact: usize,
    pub kept_near: usize,
    pub golds_changed: usize,
    pub flags_changed: usize,
    pub targets_changed: usize,
    pub categories_changed: usize,
    pub near_duplicates: usize,
}

/// Characters of a prompt shown for an added or removed record.
const EXCERPT_CHARS: usize = 100;
/// Numbers that should be equal are compared with this slack.
const TOLERANCE: f64 = 1e-9;

/// Compares release `a` with release `b`; `threshold` is the near-duplicate Jaccard similarity.
pub fn diff(a: &Release, b: &Release, threshold: f64) -> Result<Diff, DiffError> {
    let pairs = match_records(&a.records, &b.records, threshold)?;
    let mut kept = Vec::new();
    let mut near_duplicates = Vec::new();
    let mut a_paired = vec![false; a.records.len()];
    let mut b_paired = vec![false; b.records.len()];
    for pair in &pairs.kept {
        a_paired[pair.a] = true;
        b_paired[pair.b] = true;
        kept.push(compare(
            &a.records[pair.a],
            &b.records[pair.b],
            pair.matched,
        ));
    }
    for near in &pairs.near {
        near_duplicates.push(NearDuplicate {
            a_id: a.records[near.a].id.clone(),
            b_id: b.records[near.b].id.clone(),
            similarity: near.similarity,
            paired: near.paired,
        });
    }
    let only = |records: &[Record], paired: &[bool]| -> Vec<Only> {
        records
            .iter()
            .zip(paired)
            .filter(|(_, paired)| !**paired)
            .map(|(r, _)| Only {
                id: r.id.clone(),
                category: r.category.clone(),
                excerpt: excerpt(&r.prompt, EXCERPT_CHARS),
            })
            .collect()
    };
    let added = only(&b.records, &b_paired);
    let removed = only(&a.records, &a_paired);
    let categories = category_rows(&a.records, &b.records);
    let summary = Summary {
        added: added.len(),
        removed: removed.len(),
        kept: kept.len(),
        kept_exact: kept.iter().filter(|k| k.matched == Match::Exact).count(),
        kept_near: kept.iter().filter(|k| k.matched != Match::Exact).count(),
        golds_changed: kept.iter().filter(|k| k.golds_changed.is_some()).count(),
        flags_changed: kept.iter().filter(|k| !k.flags_changed.is_empty()).count(),
        targets_changed: kept.iter().filter(|k| k.target_changed.is_some()).count(),
        categories_changed: kept.iter().filter(|k| k.category_changed.is_some()).count(),
        near_duplicates: near_duplicates.len(),
    };
    Ok(Diff {
        a: side(a),
        b: side(b),
        threshold,
        summary,
        kept,
        added,
        removed,
        near_duplicates,
        categories,
    })
}

impl Diff {
    /// What the card's Changelog states about the earlier release `a`, named `earlier`, when B
    /// is the release being written: `rows` are B's target rows by category name, so that a
    /// category B holds no record of is still compared by its row.
    pub fn changes(&self, earlier: &str, rows: &BTreeMap<String, Vec<f64>>) -> ChangesSince {
        let row_changed = |row: &CategoryRow| {
            let declared = row.category.as_ref().and_then(|name| rows.get(name));
            match declared {
                Some(declared) if row.b.records == 0 && row.a.records > 0 => !same_rows(
                    &row.a,
                    &CategorySide {
                        target_rows: vec![declared.clone()],
                        ..CategorySide::default()
                    },
                ),
                _ => row.row_changed,
            }
        };
        ChangesSince {
            earlier: earlier.to_string(),
            earlier_records: self.a.records,
            earlier_sha256: self.a.sha256.clone(),
            added: self.summary.added,
            removed: self.summary.removed,
            kept_exact: self.summary.kept_exact,
            kept_near: self.summary.kept_near,
            golds_changed: self.summary.golds_changed,
            flags_changed: self.summary.flags_changed,
            targets_changed: self.summary.targets_changed,
            near_duplicates: self.summary.near_duplicates,
            counts: self
                .categories
                .iter()
                .map(|row| (category_label(&row.category), row.a.records, row.b.records))
                .collect(),
            rows_changed: self
                .categories
                .iter()
                .filter(|row| row_changed(row))
                .map(|row| category_label(&row.category))
                .collect(),
        }
    }
}

/// A category as printed: its name, or `(none)` for records without one.
pub fn category_label(category: &Option<String>) -> String {
    category.clone().unwrap_or_else(|| "(none)".to_string())
}

fn side(release: &Release) -> Side {
    Side {
        path: release.path.display().to_string(),
        file: release.file.display().to_string(),
        records: release.records.len(),
        sha256: release.sha256.clone(),
    }
}

/// A matched pair, by index into A's and B's records.
struct Pair {
    a: usize,
    b: usize,
    matched: Match,
}

/// A near duplicate found, by index.
struct Near {
    a: usize,
    b: usize,
    similarity: f64,
    paired: bool,
}

struct Matched {
    kept: Vec<Pair>,
    near: Vec<Near>,
}

/// Pairs records one to one: equal normalised prompts in file order, then near duplicates among
/// the rest, each B record (in order) taking its most similar A record if that is still free.
fn match_records(a: &[Record], b: &[Record], threshold: f64) -> Result<Matched, DiffError> {
    let mut by_prompt: HashMap<String, VecDeque<usize>> = HashMap::new();
    for (i, record) in a.iter().enumerate() {
        by_prompt
            .entry(dedup::normalise(&record.prompt))
            .or_default()
            .push_back(i);
    }
    let mut kept = Vec::new();
    let mut a_free = vec![true; a.len()];
    let mut b_left = Vec::new();
    for (j, record) in b.iter().enumerate() {
        let same = by_prompt
            .get_mut(&dedup::normalise(&record.prompt))
            .and_then(VecDeque::pop_front);
        match same {
            Some(i) => {
                a_free[i] = false;
                kept.push(Pair {
                    a: i,
                    b: j,
                    matched: Match::Exact,
                });
            }
            None => b_left.push(j),
        }
    }
    let a_left: Vec<usize> = (0..a.len()).filter(|i| a_free[*i]).collect();
    let reference: Vec<&str> = a_left.iter().map(|i| a[*i].prompt.as_str()).collect();
    let candidates: Vec<&str> = b_left.iter().map(|j| b[*j].prompt.as_str()).collect();
    let config = DedupConfig {
        threshold,
        method: Method::Auto,
    };
    let mut nearest: BTreeMap<usize, (usize, f64)> = BTreeMap::new();
    for found in dedup::find_duplicates(&candidates, &reference, &config)? {
        let against = match found.against {
            Against::Reference(r) => Some((r, found.kind)),
            // Compared with an earlier B record first: look at A's alone for this one.
            Against::Candidate(_) => {
                let alone =
                    dedup::find_duplicates(&[candidates[found.index]], &reference, &config)?;
                alone.first().and_then(|d| match d.against {
                    Against::Reference(r) => Some((r, d.kind)),
                    Against::Candidate(_) => None,
                })
            }
        };
        if let Some((r, kind)) = against {
            let similarity = match kind {
                DupKind::Exact => 1.0,
                DupKind::Near { similarity } => similarity,
            };
            nearest.insert(found.index, (r, similarity));
        }
    }
    let mut near = Vec::new();
    for (c, (r, similarity)) in nearest {
        let (i, j) = (a_left[r], b_left[c]);
        let paired = a_free[i];
        if paired {
            a_free[i] = false;
            kept.push(Pair {
                a: i,
                b: j,
                matched: Match::Near { similarity },
            });
        }
        near.push(Near {
            a: i,
            b: j,
            similarity,
            paired,
        });
    }
    kept.sort_by_key(|pair| pair.b);
    Ok(Matched { kept, near })
}

/// What changed between the two records of a kept pair.
fn compare(a: &Record, b: &Record, matched: Match) -> Kept {
    let missing_from = |from: &[String], of: &[String]| -> Vec<String> {
        of.iter().filter(|g| !from.contains(g)).cloned().collect()
    };
    let golds = GoldChange {
        added: missing_from(&a.golds, &b.golds),
        removed: missing_from(&b.golds, &a.golds),
    };
    let flags = [
        ("_gold_repaired", a.gold_repaired, b.gold_repaired),
        ("_needs_review", a.needs_review, b.needs_review),
    ];
    Kept {
        a_id: a.id.clone(),
        b_id: b.id.clone(),
        category: b.category.clone().or_else(|| a.category.clone()),
        matched,
        category_changed: (a.category != b.category)
            .then(|| [a.category.clone(), b.category.clone()]),
        golds_changed: (!golds.added.is_empty() || !golds.removed.is_empty()).then_some(golds),
        flags_changed: flags
            .into_iter()
            .filter(|(_, a, b)| a != b)
            .map(|(flag, a, b)| FlagChange { flag, a, b })
            .collect(),
        target_changed: (!same_row(a.target_action.as_deref(), b.target_action.as_deref()))
            .then(|| [a.target_action.clone(), b.target_action.clone()]),
    }
}

fn same_row(a: Option<&[f64]>, b: Option<&[f64]>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= TOLERANCE)
        }
        (None, None) => true,
        _ => false,
    }
}

/// Per category (the card's ten in its order, then any other name, then records without one):
/// both releases' counts, words per prompt and target rows.
fn category_rows(a: &[Record], b: &[Record]) -> Vec<CategoryRow> {
    let mut names: Vec<Option<String>> = a
        .iter()
        .chain(b)
        .map(|r| r.category.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let order = |name: &Option<String>| {
        let known = name.as_deref().and_then(Category::from_name);
        (name.is_none(), known.is_none(), known, name.clone())
    };
    names.sort_by_key(order);
    names
        .into_iter()
        .map(|name| {
            let a = category_side(a, &name);
            let b = category_side(b, &name);
            let row_changed = a.records > 0 && b.records > 0 && !same_rows(&a, &b);
            CategoryRow {
                category: name,
                a,
                b,
                row_changed,
            }
        })
        .collect()
}

fn same_rows(a: &CategorySide, b: &CategorySide) -> bool {
    a.target_rows.len() == b.target_rows.len()
        && a.target_rows
            .iter()
            .zip(&b.target_rows)
            .all(|(x, y)| same_row(Some(x), Some(y)))
}

fn category_side(records: &[Record], name: &Option<String>) -> CategorySide {
    let mine: Vec<&Record> = records.iter().filter(|r| &r.category == name).collect();
    let mut words: Vec<usize> = mine.iter().map(|r| r.words()).collect();
    words.sort_unstable();
    let mut target_rows: Vec<Vec<f64>> = Vec::new();
    for row in mine.iter().filter_map(|r| r.target_action.as_ref()) {
        if !target_rows
            .iter()
            .any(|seen| same_row(Some(seen), Some(row)))
        {
            target_rows.push(row.clone());
        }
    }
    target_rows.sort_by(|x, y| x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal));
    CategorySide {
        records: mine.len(),
        words: five_number_summary(&words),
        target_rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, category: &str, prompt: &str, golds: &[&str]) -> Record {
        Record {
            id: id.to_string(),
            category: Some(category.to_string()),
            prompt: prompt.to_string(),
            golds: golds.iter().map(|g| g.to_string()).collect(),
            gold_repaired: false,
            needs_review: false,
            target_action: Some(vec![0.1, 0.3, 0.9, 0.0, 0.0625]),
        }
    }

    fn release(records: Vec<Record>) -> Release {
        Release {
            path: PathBuf::from("r"),
            file: PathBuf::from("r/saseval_r_prompts.jsonl"),
            sha256: "00".into(),
            records,
        }
    }

    const LONG: &str = "Which HTTP status code does RFC 9110 assign to the response Too Many Requests when a client exceeds the rate limit of an API gateway?";

    #[test]
    fn records_pair_exactly_then_near_one_to_one_and_the_rest_are_added_or_removed() {
        let a = release(vec![
            record("a1", "simple_factual", LONG, &["429"]),
            record(
                "a2",
                "simple_factual",
                "What is the default TCP port of PostgreSQL 16?",
                &["5432"],
            ),
            record(
                "a3",
                "technical_code",
                "Which SAP transaction code displays a material master record?",
                &["MM03"],
            ),
            record("a4", "simple_factual", LONG, &["429"]),
        ]);
        let mut repaired = record(
            "b2",
            "simple_factual",
            "what is the default tcp port of postgresql 16",
            &["5432", "port 5432"],
        );
        repaired.gold_repaired = true;
        repaired.target_action = Some(vec![0.2, 0.3, 0.9, 0.0, 0.0625]);
        let reworded = format!("{LONG} Thanks!");
        let b = release(vec![
            record("b1", "simple_factual", LONG, &["429"]),
            repaired,
            record("b3", "simple_factual", &reworded, &["429"]),
            record("b4", "simple_factual", &format!("{LONG} Cheers!"), &["429"]),
            record(
                "b5",
                "reasoning",
                "A fresh question of 12 words about 7 servers and 3 racks?",
                &["21"],
            ),
        ]);
        let d = diff(&a, &b, 0.8).unwrap();
        let pairs: Vec<(&str, &str, bool)> = d
            .kept
            .iter()
            .map(|k| (k.a_id.as_str(), k.b_id.as_str(), k.matched == Match::Exact))
            .collect();
        assert_eq!(
            pairs,
            [("a1", "b1", true), ("a2", "b2", true), ("a4", "b3", false)],
            "a1 and a4 share a prompt: b1 takes the first, b3's near match the second"
        );
        assert_eq!(d.summary.kept_near, 1);
        let removed: Vec<&str> = d.removed.iter().map(|o| o.id.as_str()).collect();
        let added: Vec<&str> = d.added.iter().map(|o| o.id.as_str()).collect();
        assert_eq!((removed, added), (vec!["a3"], vec!["b4", "b5"]));
        let b2 = &d.kept[1];
        assert_eq!(
            b2.golds_changed,
            Some(GoldChange {
                added: vec!["port 5432".into()],
                removed: vec![]
            })
        );
        assert_eq!(
            b2.flags_changed,
            [FlagChange {
                flag: "_gold_repaired",
                a: false,
                b: true
            }]
        );
        assert!(b2.target_changed.is_some());
        let near: Vec<(&str, &str, bool)> = d
            .near_duplicates
            .iter()
            .map(|n| (n.a_id.as_str(), n.b_id.as_str(), n.paired))
            .collect();
        assert_eq!(
            near,
            [("a4", "b3", true), ("a4", "b4", false)],
            "b4 resembles a4 too, which b3 took first"
        );
        assert!(d
            .near_duplicates
            .iter()
            .all(|n| n.similarity >= 0.8 && n.similarity < 1.0));
        let names: Vec<String> = d
            .categories
            .iter()
            .map(|c| category_label(&c.category))
            .collect();
        assert_eq!(names, ["simple_factual", "reasoning", "technical_code"]);
        let simple = &d.categories[0];
        assert_eq!((simple.a.records, simple.b.records), (3, 4));
        assert!(simple.row_changed, "b2 carries another row");
        assert_eq!(simple.b.target_rows.len(), 2);
        assert!(!d.categories[1].row_changed && !d.categories[2].row_changed);
    }

    #[test]
    fn a_release_compared_with_itself_keeps_everything_unchanged() {
        let a = release(vec![
            record("a1", "simple_factual", LONG, &["429"]),
            record("a2", "simple_factual", LONG, &["429"]),
        ]);
        let d = diff(&a, &a, 0.8).unwrap();
        assert_eq!(d.summary.kept_exact, 2);
        assert_eq!(
            (
                d.summary.added,
                d.summary.removed,
                d.summary.golds_changed,
                d.summary.near_duplicates
            ),
            (0, 0, 0, 0)
        );
        let empty = release(Vec::new());
        let d = diff(&empty, &a, 0.8).unwrap();
        assert_eq!((d.summary.added, d.summary.removed), (2, 0));
        assert_eq!(d.categories[0].a.words, None);
        assert!(matches!(
            diff(&a, &a, 1.5),
            Err(DiffError::Dedup(DedupError::InvalidThreshold(_)))
        ));
    }
}
