//! The readable form of a [`Diff`]: a head with the counts, the per-category table side by side,
//! then each list (changed golds, flags, target rows, near duplicates, added, removed) up to
//! [`LISTED`] lines, with how many more `--json` holds. Text from the files (ids, categories,
//! prompts) is printed with its control characters escaped.

use crate::util::printable::printable;
use std::fmt::Write as _;

use super::{category_label, CategorySide, Diff};

/// Lines shown per list; `--json` has them all.
const LISTED: usize = 20;

pub fn render_table(diff: &Diff) -> String {
    let mut out = String::new();
    let s = &diff.summary;
    let _ = writeln!(
        out,
        "A: {} ({} records, sha256 {})\nB: {} ({} records, sha256 {})",
        diff.a.file, diff.a.records, diff.a.sha256, diff.b.file, diff.b.records, diff.b.sha256
    );
    let _ = writeln!(
        out,
        "matched by prompt (exact after the card's normalisation, then near: Jaccard >= {}): {} kept ({} exact, {} near), {} added, {} removed",
        diff.threshold, s.kept, s.kept_exact, s.kept_near, s.added, s.removed
    );
    let _ = writeln!(
        out,
        "kept records with changed golds: {}, flags: {}, target rows: {}, categories: {}; near duplicates across the two: {}",
        s.golds_changed, s.flags_changed, s.targets_changed, s.categories_changed, s.near_duplicates
    );
    categories(&mut out, diff);
    let kept_lines = |select: &dyn Fn(&super::Kept) -> Option<String>| -> Vec<String> {
        diff.kept
            .iter()
            .filter_map(|k| {
                select(k)
                    .map(|what| format!("{} -> {}: {what}", printable(&k.a_id), printable(&k.b_id)))
            })
            .collect()
    };
    list(
        &mut out,
        "golds changed",
        kept_lines(&|k| {
            k.golds_changed
                .as_ref()
                .map(|g| format!("added {}, removed {}", quoted(&g.added), quoted(&g.removed)))
        }),
    );
    list(
        &mut out,
        "flags changed",
        kept_lines(&|k| {
            (!k.flags_changed.is_empty()).then(|| {
                k.flags_changed
                    .iter()
                    .map(|f| format!("{} {} -> {}", f.flag, f.a, f.b))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
        }),
    );
    list(&mut out, "target rows changed", target_changes(diff));
    list(
        &mut out,
        "categories changed",
        kept_lines(&|k| {
            k.category_changed
                .as_ref()
                .map(|[a, b]| format!("{} -> {}", label(a), label(b)))
        }),
    );
    list(
        &mut out,
        "near duplicates across the two",
        diff.near_duplicates
            .iter()
            .map(|n| {
                let how = if n.paired {
                    "kept as a pair"
                } else {
                    "not paired: the A record was matched to another B record"
                };
                format!(
                    "{} ~ {}: Jaccard {:.3}, {how}",
                    printable(&n.a_id),
                    printable(&n.b_id),
                    n.similarity
                )
            })
            .collect(),
    );
    let only = |records: &[super::Only]| -> Vec<String> {
        records
            .iter()
            .map(|o| {
                format!(
                    "{} [{}] {}",
                    printable(&o.id),
                    label(&o.category),
                    printable(&o.excerpt)
                )
            })
            .collect()
    };
    list(&mut out, "added (in B only)", only(&diff.added));
    list(&mut out, "removed (in A only)", only(&diff.removed));
    out
}

/// Kept records whose target row changed, one line per category and change: a row is the
/// category's, so its records change together.
fn target_changes(diff: &Diff) -> Vec<String> {
    let mut groups: Vec<(String, String, Vec<&super::Kept>)> = Vec::new();
    for kept in &diff.kept {
        let Some([a, b]) = &kept.target_changed else {
            continue;
        };
        let change = format!("{} -> {}", row_text(a.as_deref()), row_text(b.as_deref()));
        let category = label(&kept.category);
        match groups
            .iter_mut()
            .find(|(c, ch, _)| *c == category && *ch == change)
        {
            Some((_, _, members)) => members.push(kept),
            None => groups.push((category, change, vec![kept])),
        }
    }
    groups
        .into_iter()
        .map(|(category, change, members)| {
            let first = members
                .first()
                .map(|k| format!(", e.g. {} -> {}", printable(&k.a_id), printable(&k.b_id)))
                .unwrap_or_default();
            format!("{category}: {} record(s) {change}{first}", members.len())
        })
        .collect()
}

/// The per-category table: records, words per prompt (min, lower quartile, median, upper
/// quartile, max) and target row of each release, and whether the row changed.
fn categories(out: &mut String, diff: &Diff) {
    let rows: Vec<[String; 6]> = diff
        .categories
        .iter()
        .map(|row| {
            let target = if row.row_changed {
                format!("{} -> {}", rows_text(&row.a), rows_text(&row.b))
            } else if row.b.records > 0 {
                format!("{} (same)", rows_text(&row.b))
            } else {
                rows_text(&row.a)
            };
            [
                label(&row.category),
                row.a.records.to_string(),
                row.b.records.to_string(),
                words_text(&row.a),
                words_text(&row.b),
                target,
            ]
        })
        .collect();
    let head = [
        "category",
        "A",
        "B",
        "words A",
        "words B",
        "target row (A -> B)",
    ]
    .map(String::from);
    let width = |column: usize| {
        rows.iter()
            .chain([&head])
            .map(|r| r[column].chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..5).map(width).collect();
    let _ = writeln!(
        out,
        "\nper category (words per prompt: min, lower quartile, median, upper quartile, max):"
    );
    for row in std::iter::once(&head).chain(&rows) {
        let _ = writeln!(
            out,
            "  {:<w0$}  {:>w1$} {:>w2$}  {:<w3$}  {:<w4$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            row[4],
            row[5],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
            w4 = widths[4],
        );
    }
}

/// A category name made safe to print.
fn label(category: &Option<String>) -> String {
    printable(&category_label(category))
}

fn words_text(side: &CategorySide) -> String {
    side.words.map_or("-".to_string(), |w| {
        w.iter().map(usize::to_string).collect::<Vec<_>>().join(" ")
    })
}

fn rows_text(side: &CategorySide) -> String {
    if side.target_rows.is_empty() {
        return "-".to_string();
    }
    side.target_rows
        .iter()
        .map(|row| row_text(Some(row)))
        .collect::<Vec<_>>()
        .join(" + ")
}

fn row_text(row: Option<&[f64]>) -> String {
    row.map_or("none".to_string(), |row| {
        let values: Vec<String> = row.iter().map(|x| format!("{x}")).collect();
        format!("[{}]", values.join(", "))
    })
}

fn quoted(values: &[String]) -> String {
    if values.is_empty() {
        return "none".to_string();
    }
    values
        .iter()
        .map(|v| serde_json::Value::from(v.as_str()).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A titled list: nothing when empty, else up to [`LISTED`] lines and how many more there are.
fn list(out: &mut String, title: &str, lines: Vec<String>) {
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title} ({}):", lines.len());
    for line in lines.iter().take(LISTED) {
        let _ = writeln!(out, "  {line}");
    }
    if lines.len() > LISTED {
        let _ = writeln!(
            out,
            "  … and {} more (--json lists all)",
            lines.len() - LISTED
        );
    }
}
