//! `report.html`: the release as a page people would rather look at than read — the category ×
//! domain heat map, prompt lengths next to the card's stated ranges, authoring yield and reject
//! codes, repair outcomes, the audit panel's pass rates (only once an audit ran), the dedup
//! numbers and the flagged items. One self-contained file: inline CSS and SVG, no script, no
//! network. It prints only what `ReleaseInfo` and the records hold, in map order, so the same
//! inputs give the same bytes. Every text from the data was written by a model and is escaped.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::card::{character, group};
use super::info::{AuditNumbers, FlagOutcome, FlaggedItem, ReleaseInfo};
use crate::quality::validate::{self, word_count, Rules};
use crate::release::schema::ReleaseRecord;
use crate::stages::item::Category;
use crate::stages::yields::{RoundSurvival, RoundYield};

/// The page's section headings, in page order (the audit section only once an audit ran).
pub const COMPOSITION: &str = "Composition by category and domain";
pub const LENGTHS: &str = "Prompt length by category";
pub const YIELD: &str = "Authoring yield by round";
pub const SURVIVAL: &str = "Survival through the loop";
pub const REJECTS: &str = "Reject codes by category";
pub const REPAIR: &str = "Numeric repair outcomes";
pub const AUDIT: &str = "Audit panel pass rates";
pub const DEDUP: &str = "Deduplication";
pub const FLAGGED: &str = "Flagged items";

/// The page's title.
pub fn title(info: &ReleaseInfo) -> String {
    format!("SASEval {} — release report", info.version)
}

/// Renders `report.html` for the release `records` of `info`, whose JSONL is `jsonl_name`.
pub fn render_report(
    info: &ReleaseInfo,
    jsonl_name: &str,
    sha256: &str,
    records: &[ReleaseRecord],
) -> String {
    let mut page = String::new();
    let title = escape(&title(info));
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n"
    );
    header(&mut page, info, &title, jsonl_name, sha256, records);
    composition(&mut page, info);
    lengths(&mut page, records);
    author_yield(&mut page, &info.author_yield);
    survival(&mut page, &info.survival);
    rejects(&mut page, &info.rejects_by_category);
    repair(&mut page, info);
    if let Some(audit) = &info.audit {
        audit_panel(&mut page, audit);
    }
    dedup(&mut page, info);
    flagged(&mut page, &info.flagged);
    let _ = write!(
        page,
        "<footer>Written by saseval-gen {} with the release, from the numbers in \
         <a href=\"manifest.json\">manifest.json</a> and the records of <code>{}</code>; the same \
         inputs give the same bytes. No script, no network.</footer>\n</main>\n</body>\n</html>\n",
        escape(&info.tool_version),
        escape(jsonl_name)
    );
    page
}

const STYLE: &str = "
:root{--ink:#1c2230;--muted:#5d6677;--line:#e1e5ec;--bg:#f3f5f9;--card:#fff;--accent:#2456a4;
--agree:#3f9b6e;--repair:#2f6fd0;--flag:#d2553f;--reject:#e08a3c}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);
font:14px/1.45 'DejaVu Sans','Segoe UI',system-ui,sans-serif}
main{max-width:1200px;margin:0 auto;padding:18px 24px 32px}
a{color:var(--accent)}
h1{font-size:23px;margin:0 0 2px}
h2{font-size:16px;margin:0 0 4px}
.meta,.note{color:var(--muted);font-size:12.5px;margin:0 0 10px}
.meta code{word-break:break-all}
nav{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:13px;margin:8px 0 4px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;
padding:14px 18px 16px;margin:14px 0}
.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(140px,1fr));gap:10px;margin:14px 0}
.tile{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 12px}
.tile b{display:block;font-size:22px;line-height:1.2}
.tile span{color:var(--muted);font-size:12px}
.split{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:18px;align-items:start}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:12.5px;width:100%}
th,td{padding:4px 7px;border-bottom:1px solid var(--line);text-align:right;vertical-align:top}
th{font-weight:600;color:var(--muted);font-size:12px}
th:first-child,td:first-child,td.text,th.text{text-align:left}
td.text{max-width:360px;overflow-wrap:anywhere}
td.key{white-space:nowrap}
.heat td{text-align:center;min-width:38px;border:2px solid var(--card)}
.heat td:first-child{text-align:left}
.heat th{vertical-align:bottom}
tr.total td{font-weight:600;border-top:2px solid var(--line)}
code{font-family:'DejaVu Sans Mono',monospace;font-size:12px}
svg{display:block;width:100%;height:auto}
svg text{font-family:'DejaVu Sans',sans-serif;font-size:12px;fill:var(--ink)}
svg .muted{fill:var(--muted);font-size:11px}
.legend{display:flex;gap:14px;font-size:12px;color:var(--muted);margin:2px 0 6px}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px}
footer{color:var(--muted);font-size:12px;margin-top:18px}
@media (max-width:900px){.split{grid-template-columns:1fr}}
";

fn header(
    page: &mut String,
    info: &ReleaseInfo,
    title: &str,
    jsonl_name: &str,
    sha256: &str,
    records: &[ReleaseRecord],
) {
    let _ = write!(
        page,
        "<header>\n<h1>{title}</h1>\n<p class=\"meta\">Built {} by saseval-gen {} · seed {} · config \
         <code>{}</code><br><code>{}</code> SHA-256 <code>{}</code></p>\n",
        escape(&info.date),
        escape(&info.tool_version),
        info.seed,
        escape(&info.config_fingerprint),
        escape(jsonl_name),
        escape(sha256)
    );
    page.push_str(
        "<nav><a href=\"README.md\">Dataset card</a><a href=\"manifest.json\">manifest.json</a>",
    );
    let mut sections = vec![
        ("composition", COMPOSITION),
        ("lengths", LENGTHS),
        ("yield", YIELD),
        ("survival", SURVIVAL),
        ("rejects", REJECTS),
        ("repair", REPAIR),
    ];
    if info.audit.is_some() {
        sections.push(("audit", AUDIT));
    }
    sections.extend([("dedup", DEDUP), ("flagged", FLAGGED)]);
    for (id, heading) in sections {
        let _ = write!(page, "<a href=\"#{id}\">{heading}</a>");
    }
    page.push_str("</nav>\n</header>\n");

    let authored: usize = info.authored.values().sum();
    let rejected: usize = info.rejects.values().sum();
    let dropped = info.dedup.exact + info.dedup.near + info.dedup.against_reference;
    let target = info.per_category * Category::ALL.len();
    let tiles = [
        (
            group(records.len()),
            format!("records (target {})", group(target)),
        ),
        (group(authored), "valid candidates authored".to_string()),
        (group(rejected), "authoring rejects".to_string()),
        (
            group(info.repair.repaired),
            format!("numeric keys repaired of {}", group(info.repair.checked)),
        ),
        (group(info.flagged.len()), "items flagged".to_string()),
        (group(dropped), "duplicates dropped".to_string()),
    ];
    page.push_str("<div class=\"tiles\">");
    for (value, label) in tiles {
        let _ = write!(
            page,
            "<div class=\"tile\"><b>{value}</b><span>{}</span></div>",
            escape(&label)
        );
    }
    page.push_str("</div>\n");
}

fn section_start(page: &mut String, id: &str, heading: &str, note: &str) {
    let _ = write!(
        page,
        "<section id=\"{id}\">\n<h2>{heading}</h2>\n<p class=\"note\">{note}</p>\n"
    );
}

fn composition(page: &mut String, info: &ReleaseInfo) {
    section_start(
        page,
        "composition",
        COMPOSITION,
        "Records in the release per category and enterprise domain; darker cells hold more.",
    );
    let domains: BTreeSet<&String> = info
        .domain_counts
        .values()
        .flat_map(|domains| domains.keys())
        .collect();
    let max = info
        .domain_counts
        .values()
        .flat_map(|domains| domains.values())
        .copied()
        .max()
        .unwrap_or(0);
    page.push_str("<div class=\"scroll\"><table class=\"heat\">\n<tr><th>Category</th>");
    for domain in &domains {
        let _ = write!(page, "<th>{}</th>", escape(domain));
    }
    page.push_str("<th>Total</th></tr>\n");
    let mut column_totals: BTreeMap<&String, usize> = BTreeMap::new();
    for category in Category::ALL {
        let counts = info.domain_counts.get(&category);
        let _ = write!(page, "<tr><td><code>{category}</code></td>");
        for domain in &domains {
            let n = counts
                .and_then(|counts| counts.get(*domain))
                .copied()
                .unwrap_or(0);
            *column_totals.entry(domain).or_default() += n;
            let _ = write!(page, "<td style=\"{}\">{n}</td>", heat(n, max));
        }
        let total = info.counts.get(&category).copied().unwrap_or(0);
        let _ = writeln!(page, "<td><b>{total}</b></td></tr>");
    }
    page.push_str("<tr class=\"total\"><td>Total</td>");
    for domain in &domains {
        let _ = write!(
            page,
            "<td>{}</td>",
            column_totals.get(domain).copied().unwrap_or(0)
        );
    }
    let _ = writeln!(page, "<td>{}</td></tr>", group(info.total()));
    page.push_str("</table></div>\n</section>\n");
}

/// A background for a cell holding `n` of at most `max`: from near-white to the accent blue.
fn heat(n: usize, max: usize) -> String {
    const LOW: [u8; 3] = [240, 244, 250];
    const HIGH: [u8; 3] = [36, 86, 164];
    if n == 0 || max == 0 {
        return "background:#f7f8fa;color:#a3aab6".to_string();
    }
    let (share, max) = (n.min(max) as u128, max as u128);
    let channel = |i: usize| {
        let (low, high) = (LOW[i] as u128, HIGH[i] as u128);
        (low * (max - share) + high * share) / max
    };
    let ink = if share * 100 > max * 55 {
        "#fff"
    } else {
        "#1c2230"
    };
    format!(
        "background:#{:02x}{:02x}{:02x};color:{ink}",
        channel(0),
        channel(1),
        channel(2)
    )
}

/// Five-number summary of sorted counts: min, lower quartile, median, upper quartile, max.
pub(crate) fn summary(sorted: &[usize]) -> Option<[usize; 5]> {
    let last = sorted.len().checked_sub(1)?;
    let at = |percent: usize| {
        sorted
            .get((last * percent + 50) / 100)
            .copied()
            .unwrap_or(0)
    };
    Some([at(0), at(25), at(50), at(75), at(100)])
}

/// The word range the v1 card states for a category: only long_document_qa's document
/// (250–450 words), the range validation enforces on the text before the question.
fn stated_words(category: Category) -> Option<(usize, usize)> {
    (category == Category::LongDocumentQa).then(|| Rules::default().doc_words)
}

/// Words of the document before the question, as validation measures it.
fn document_words(category: Category, prompt: &str) -> Option<usize> {
    let structure = validate::structure(category, prompt, &Rules::default()).ok()?;
    structure.context.map(word_count)
}

/// A round end for an axis that reaches `max`, and its tick step: 1, 2 or 5 × 10^k, the
/// smallest that needs at most five steps.
fn axis(max: usize) -> (usize, usize) {
    let mut magnitude: usize = 1;
    loop {
        for factor in [1, 2, 5] {
            let step = magnitude.saturating_mul(factor);
            if step.saturating_mul(5) >= max {
                return (max.div_ceil(step).max(1).saturating_mul(step), step);
            }
        }
        magnitude = magnitude.saturating_mul(10);
    }
}

fn lengths(page: &mut String, records: &[ReleaseRecord]) {
    section_start(
        page,
        "lengths",
        LENGTHS,
        "Words per prompt (whitespace-separated). The box spans the middle half, the bar is the \
         median, the whiskers reach the shortest and longest prompt; each dot is one prompt. The \
         green band is the card's stated range.",
    );
    let mut words: BTreeMap<Category, Vec<usize>> = BTreeMap::new();
    let mut documents: BTreeMap<Category, Vec<usize>> = BTreeMap::new();
    for record in records {
        words
            .entry(record.category)
            .or_default()
            .push(word_count(&record.prompt));
        if stated_words(record.category).is_some() {
            if let Some(n) = document_words(record.category, &record.prompt) {
                documents.entry(record.category).or_default().push(n);
            }
        }
    }
    for list in words.values_mut().chain(documents.values_mut()) {
        list.sort_unstable();
    }
    let longest = words
        .values()
        .filter_map(|list| list.last())
        .copied()
        .chain(
            Category::ALL
                .into_iter()
                .filter_map(stated_words)
                .map(|(_, high)| high),
        )
        .max()
        .unwrap_or(0);
    let (axis_max, step) = axis(longest);

    const LABEL: f64 = 150.0;
    const WIDTH: f64 = 560.0;
    const ROW: f64 = 26.0;
    let plot = WIDTH - LABEL - 16.0;
    let x = |n: usize| LABEL + plot * n as f64 / axis_max as f64;
    let height = ROW * Category::ALL.len() as f64 + 34.0;
    page.push_str("<div class=\"split\"><div>");
    let _ = write!(
        page,
        "<svg viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-label=\"{LENGTHS}\">"
    );
    let axis_y = ROW * Category::ALL.len() as f64 + 6.0;
    let mut tick = 0;
    while tick <= axis_max {
        let _ = write!(
            page,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"4\" y2=\"{axis_y:.1}\" stroke=\"#e6e9ef\"/>\
             <text class=\"muted\" x=\"{0:.1}\" y=\"{1:.1}\" text-anchor=\"middle\">{tick}</text>",
            x(tick),
            axis_y + 14.0
        );
        tick += step;
    }
    let _ = write!(
        page,
        "<text class=\"muted\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">words</text>",
        WIDTH - 16.0,
        axis_y + 27.0
    );
    for (row, category) in Category::ALL.into_iter().enumerate() {
        let mid = ROW * row as f64 + ROW / 2.0 + 4.0;
        let _ = write!(
            page,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{category}</text>",
            LABEL - 8.0,
            mid + 4.0
        );
        if let Some((low, high)) = stated_words(category) {
            let _ = write!(
                page,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#3f9b6e\" \
                 fill-opacity=\"0.16\" stroke=\"#3f9b6e\" stroke-dasharray=\"3 2\"/>",
                x(low),
                mid - ROW / 2.0 + 2.0,
                x(high) - x(low),
                ROW - 4.0
            );
        }
        let Some(list) = words.get(&category) else {
            continue;
        };
        let Some([min, q1, median, q3, max]) = summary(list) else {
            continue;
        };
        let _ = write!(
            page,
            "<line x1=\"{low:.1}\" x2=\"{high:.1}\" y1=\"{mid:.1}\" y2=\"{mid:.1}\" \
             stroke=\"#8a93a3\"/><rect x=\"{box_x:.1}\" y=\"{top:.1}\" width=\"{box_w:.1}\" \
             height=\"12\" fill=\"#cfdcf3\" stroke=\"#2456a4\"/><line x1=\"{median:.1}\" \
             x2=\"{median:.1}\" y1=\"{top:.1}\" y2=\"{bottom:.1}\" stroke=\"#2456a4\" \
             stroke-width=\"2\"/>",
            low = x(min),
            high = x(max),
            box_x = x(q1),
            box_w = (x(q3) - x(q1)).max(1.0),
            median = x(median),
            top = mid - 6.0,
            bottom = mid + 6.0,
        );
        for n in list {
            let _ = write!(
                page,
                "<circle cx=\"{:.1}\" cy=\"{mid:.1}\" r=\"2\" fill=\"#1c2230\" fill-opacity=\"0.35\"/>",
                x(*n)
            );
        }
    }
    page.push_str(
        "</svg></div>\n<div><table>\n<tr><th>Category</th><th>n</th><th>min</th>\
                   <th>median</th><th>max</th><th class=\"text\">The card states</th></tr>\n",
    );
    for category in Category::ALL {
        let stats = words.get(&category).and_then(|list| summary(list));
        let n = words.get(&category).map_or(0, Vec::len);
        let cells = match stats {
            Some([min, _, median, _, max]) => {
                format!("<td>{min}</td><td>{median}</td><td>{max}</td>")
            }
            None => "<td>—</td><td>—</td><td>—</td>".to_string(),
        };
        let mut stated = escape(character(category));
        if let Some((low, high)) = stated_words(category) {
            let measured = documents
                .get(&category)
                .and_then(|list| Some((list.first()?, list.last()?)))
                .map_or_else(
                    || "none measured".to_string(),
                    |(shortest, longest)| format!("{shortest}–{longest}"),
                );
            let _ = write!(
                stated,
                "<br><b>Documents here: {measured} words</b> (card: {low}–{high}; the prompt adds \
                 its question)"
            );
        }
        let _ = writeln!(
            page,
            "<tr><td><code>{category}</code></td><td>{n}</td>{cells}<td class=\"text\">{stated}</td></tr>"
        );
    }
    page.push_str("</table></div></div>\n</section>\n");
}

/// One horizontal stacked bar: `parts` are (value, colour); `scale` is the value of `width`.
fn stacked_bar(
    page: &mut String,
    (x, y, width, height): (f64, f64, f64, f64),
    scale: usize,
    parts: &[(usize, &str)],
) {
    let mut left = x;
    for (value, colour) in parts {
        if *value == 0 || scale == 0 {
            continue;
        }
        let w = width * *value as f64 / scale as f64;
        let _ = write!(
            page,
            "<rect x=\"{left:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{height:.1}\" fill=\"{colour}\"/>"
        );
        left += w;
    }
}

fn legend(page: &mut String, entries: &[(&str, &str)]) {
    page.push_str("<div class=\"legend\">");
    for (colour, label) in entries {
        let _ = write!(
            page,
            "<span><i style=\"background:{colour}\"></i>{label}</span>"
        );
    }
    page.push_str("</div>");
}

fn author_yield(page: &mut String, rounds: &[RoundYield]) {
    section_start(
        page,
        "yield",
        YIELD,
        "Each authoring round: valid items and rejected items or replies, against what the \
         categories still needed when the round started. Top-up rounds ask only for what is missing.",
    );
    if rounds.is_empty() {
        page.push_str("<p>No authoring round was recorded (<code>author_summary.json</code> is absent).</p>\n</section>\n");
        return;
    }
    struct Totals {
        round: u32,
        requests: usize,
        needed: usize,
        valid: usize,
        rejected: usize,
    }
    let totals: Vec<Totals> = rounds
        .iter()
        .map(|round| Totals {
            round: round.round,
            requests: round.categories.values().map(|y| y.requests).sum(),
            needed: round.categories.values().map(|y| y.needed).sum(),
            valid: round.categories.values().map(|y| y.valid).sum(),
            rejected: round
                .categories
                .values()
                .flat_map(|y| y.rejects.values())
                .sum(),
        })
        .collect();
    let scale = totals
        .iter()
        .map(|t| (t.valid + t.rejected).max(t.needed))
        .max()
        .unwrap_or(0);
    const LABEL: f64 = 70.0;
    const WIDTH: f64 = 1160.0;
    const ROW: f64 = 30.0;
    let bar = 760.0;
    legend(
        page,
        &[
            ("var(--agree)", "valid"),
            ("var(--reject)", "rejected"),
            ("#1c2230", "needed"),
        ],
    );
    let height = ROW * totals.len() as f64 + 6.0;
    let _ = write!(
        page,
        "<svg viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-label=\"{YIELD}\">"
    );
    for (row, t) in totals.iter().enumerate() {
        let y = ROW * row as f64 + 6.0;
        let _ = write!(
            page,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">round {}</text>",
            LABEL - 8.0,
            y + 13.0,
            t.round
        );
        stacked_bar(
            page,
            (LABEL, y, bar, 18.0),
            scale,
            &[(t.valid, "#3f9b6e"), (t.rejected, "#e08a3c")],
        );
        if scale > 0 {
            let needed = LABEL + bar * t.needed as f64 / scale as f64;
            let _ = write!(
                page,
                "<line x1=\"{needed:.1}\" x2=\"{needed:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" \
                 stroke=\"#1c2230\" stroke-width=\"2\"/>",
                y - 3.0,
                y + 21.0
            );
        }
        let _ = write!(
            page,
            "<text class=\"muted\" x=\"{:.1}\" y=\"{:.1}\">{} valid · {} rejected · {} needed · {} \
             requests</text>",
            LABEL + bar + 10.0,
            y + 13.0,
            t.valid,
            t.rejected,
            t.needed,
            t.requests
        );
    }
    page.push_str("</svg>\n<div class=\"scroll\"><table>\n<tr><th>Valid / needed</th>");
    for category in Category::ALL {
        let _ = write!(page, "<th>{}</th>", category.name().replace('_', "_<wbr>"));
    }
    page.push_str("</tr>\n");
    for round in rounds {
        let _ = write!(page, "<tr><td>round {}</td>", round.round);
        for category in Category::ALL {
            match round.categories.get(&category) {
                Some(y) => {
                    let _ = write!(
                        page,
                        "<td title=\"{} requests\">{} / {}</td>",
                        y.requests, y.valid, y.needed
                    );
                }
                None => page.push_str("<td>—</td>"),
            }
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table></div>\n</section>\n");
}

/// Per round and category, how many items each stage let through.
fn survival(page: &mut String, rounds: &[RoundSurvival]) {
    section_start(
        page,
        "survival",
        SURVIVAL,
        "Each round of the loop, per category: the items asked for, those that passed the author \
         gate, the keys repair replaced or flagged, the items neither repair nor the audit panel \
         flagged, those left after dedup, and those released. A category still short after a \
         round gets a top-up sized by its survival so far.",
    );
    if rounds.is_empty() {
        page.push_str("<p>No round of the loop was recorded.</p>\n</section>\n");
        return;
    }
    page.push_str(
        "<div class=\"scroll\"><table>\n<tr><th>Round</th><th>Category</th><th>asked</th>\
         <th>gate</th><th>repaired</th><th>repair flagged</th><th>audit passed</th>\
         <th>after dedup</th><th>released</th><th>survival</th></tr>\n",
    );
    for round in rounds {
        for (category, s) in &round.categories {
            let _ = writeln!(
                page,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td><td>{}</td></tr>",
                round.round,
                category.name(),
                s.asked,
                s.gate,
                s.repaired,
                s.repair_flagged,
                s.audit_passed,
                s.after_dedup,
                s.released,
                s.rate()
                    .map_or("—".to_string(), |r| format!("{:.0}%", r * 100.0))
            );
        }
    }
    page.push_str("</table></div>\n</section>\n");
}

fn rejects(page: &mut String, by_category: &BTreeMap<Category, BTreeMap<String, usize>>) {
    section_start(
        page,
        "rejects",
        REJECTS,
        "Every item or reply dropped on the way (<code>rejects.jsonl</code>: authoring \
         validation and assembly), by reason code; the README explains each code.",
    );
    let codes: BTreeSet<&String> = by_category
        .values()
        .flat_map(|codes| codes.keys())
        .collect();
    if codes.is_empty() {
        page.push_str("<p>Nothing was rejected.</p>\n</section>\n");
        return;
    }
    let max = by_category
        .values()
        .flat_map(|codes| codes.values())
        .copied()
        .max()
        .unwrap_or(0);
    page.push_str("<div class=\"scroll\"><table class=\"heat\">\n<tr><th>Reason code</th>");
    for category in Category::ALL {
        let _ = write!(page, "<th>{}</th>", category.name().replace('_', "_<wbr>"));
    }
    page.push_str("<th>Total</th></tr>\n");
    for code in &codes {
        let _ = write!(page, "<tr><td><code>{}</code></td>", escape(code));
        let mut total = 0;
        for category in Category::ALL {
            let n = by_category
                .get(&category)
                .and_then(|codes| codes.get(*code))
                .copied()
                .unwrap_or(0);
            total += n;
            let _ = write!(page, "<td style=\"{}\">{n}</td>", heat(n, max));
        }
        let _ = writeln!(page, "<td><b>{total}</b></td></tr>");
    }
    page.push_str("<tr class=\"total\"><td>Total</td>");
    let mut all = 0;
    for category in Category::ALL {
        let n: usize = by_category
            .get(&category)
            .map_or(0, |codes| codes.values().sum());
        all += n;
        let _ = write!(page, "<td>{n}</td>");
    }
    let _ = writeln!(page, "<td>{all}</td></tr>");
    page.push_str("</table></div>\n</section>\n");
}

fn repair(page: &mut String, info: &ReleaseInfo) {
    let verifiers = if info.verifier_models.is_empty() {
        "no verifier".to_string()
    } else {
        info.verifier_models
            .iter()
            .map(|m| format!("<code>{}</code>", escape(m)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    section_start(
        page,
        "repair",
        REPAIR,
        &format!(
            "Every numeric candidate was re-solved by {verifiers} at T = 0 and compared by value \
             with the authored key: agreed, key repaired, or flagged <code>_needs_review</code>."
        ),
    );
    let repair = &info.repair;
    if repair.checked == 0 {
        page.push_str("<p>No numeric candidate was checked.</p>\n</section>\n");
        return;
    }
    page.push_str("<div class=\"split\"><div>");
    legend(
        page,
        &[
            ("var(--agree)", "agreed"),
            ("var(--repair)", "repaired"),
            ("var(--flag)", "flagged"),
        ],
    );
    let scale = repair
        .by_category
        .values()
        .map(|c| c.checked)
        .max()
        .unwrap_or(0);
    const LABEL: f64 = 140.0;
    const WIDTH: f64 = 580.0;
    const ROW: f64 = 30.0;
    let bar = 150.0;
    let height = ROW * repair.by_category.len() as f64 + 6.0;
    let _ = write!(
        page,
        "<svg viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-label=\"{REPAIR}\">"
    );
    for (row, (name, counts)) in repair.by_category.iter().enumerate() {
        let y = ROW * row as f64 + 6.0;
        let _ = write!(
            page,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{name}</text>",
            LABEL - 8.0,
            y + 13.0
        );
        stacked_bar(
            page,
            (LABEL, y, bar, 18.0),
            scale,
            &[
                (counts.agreed, "#3f9b6e"),
                (counts.repaired, "#2f6fd0"),
                (counts.flagged, "#d2553f"),
            ],
        );
        let _ = write!(
            page,
            "<text class=\"muted\" x=\"{:.1}\" y=\"{:.1}\">{} checked · {} agreed · {} repaired · \
             {} flagged</text>",
            LABEL + bar + 10.0,
            y + 13.0,
            counts.checked,
            counts.agreed,
            counts.repaired,
            counts.flagged
        );
    }
    let _ = writeln!(
        page,
        "</svg><p class=\"note\">Total: {} checked, {} agreed, {} repaired ({}), {} flagged.</p></div>",
        repair.checked,
        repair.agreed,
        repair.repaired,
        percent(repair.repaired, repair.checked),
        repair.flagged
    );
    page.push_str(
        "<div class=\"scroll\"><table>\n<tr><th>Verifier</th><th>answered</th><th>agreed</th>\
         <th>disagreed</th><th>unparseable</th><th>fell back</th><th>EXPR ≠</th></tr>\n",
    );
    for (model, v) in &info.verifiers {
        let _ = writeln!(
            page,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td></tr>",
            escape(model),
            v.answered,
            v.agreed_with_key,
            v.disagreed_with_key,
            v.unparseable,
            v.fell_back,
            v.expr_mismatch
        );
    }
    page.push_str(
        "</table><p class=\"note\">Agreed and disagreed: with the authored key. Fell back: no \
         <code>ANSWER:</code> line, the last number was taken. EXPR ≠: the verifier's expression \
         does not give its own answer, so the answer is not relied on.</p></div></div>\n\
         </section>\n",
    );
}

fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        return "—".to_string();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}

fn audit_panel(page: &mut String, audit: &AuditNumbers) {
    section_start(
        page,
        "audit",
        AUDIT,
        "Share of items each panel model answered correctly under the card's grader, per \
         category: the accuracy of this release with no governor in front of the panel.",
    );
    page.push_str("<div class=\"scroll\"><table class=\"heat\">\n<tr><th>Category</th>");
    for model in &audit.models {
        let _ = write!(page, "<th><code>{}</code></th>", escape(model));
    }
    page.push_str("</tr>\n");
    for (category, by_model) in &audit.pass {
        let _ = write!(page, "<tr><td><code>{category}</code></td>");
        for model in &audit.models {
            match by_model.get(model) {
                Some(pass) if pass.answered > 0 => {
                    let _ = write!(
                        page,
                        "<td style=\"{}\">{} <small>({}/{})</small></td>",
                        heat(pass.correct, pass.answered),
                        percent(pass.correct, pass.answered),
                        pass.correct,
                        pass.answered
                    );
                }
                _ => page.push_str("<td>—</td>"),
            }
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table></div>\n");
    let _ = write!(
        page,
        "<p>{} of {} candidates passed: at least {} of {} panel models reached the key. Flagged \
         candidates, by reason (an item may have several):</p>\n<table>\n<tr><th>Flag</th><th>Candidates</th><th>Meaning</th></tr>\n",
        audit.passed,
        audit.audited,
        audit.min_correct,
        audit.models.len()
    );
    for (flag, n) in &audit.flags {
        let _ = writeln!(
            page,
            "<tr><td><code>{}</code></td><td>{n}</td><td>{}</td></tr>",
            flag.code(),
            escape(flag.meaning())
        );
    }
    page.push_str("</table>\n</section>\n");
}

fn dedup(page: &mut String, info: &ReleaseInfo) {
    section_start(
        page,
        "dedup",
        DEDUP,
        "Candidates dropped before each category was trimmed. Of two duplicates the clean, \
         earlier-authored one is kept; prompts that differ only in their numbers are not duplicates.",
    );
    let d = &info.dedup;
    let flagged = if info.keep_flagged {
        "flagged items were kept (carrying <code>_needs_review</code>)".to_string()
    } else {
        format!("{} flagged item(s) left out", group(d.flagged_left_out))
    };
    let tiles = [
        (
            d.exact,
            "exact duplicates (same prompt after the grading normalisation)",
        ),
        (
            d.near,
            "near duplicates (shingle Jaccard over the threshold)",
        ),
        (
            d.against_reference,
            "copies of a prompt in an earlier release (--exclude)",
        ),
    ];
    page.push_str("<div class=\"tiles\">");
    for (n, label) in tiles {
        let _ = write!(
            page,
            "<div class=\"tile\"><b>{}</b><span>{}</span></div>",
            group(n),
            escape(label)
        );
    }
    let _ = write!(
        page,
        "</div>\n<p class=\"note\">Then {flagged}.</p>\n</section>\n"
    );
}

fn flagged(page: &mut String, items: &[FlaggedItem]) {
    section_start(
        page,
        "flagged",
        FLAGGED,
        "Items a stage marked <code>_needs_review</code> (likely ill-posed or unverifiable), with \
         the reason and where each went.",
    );
    if items.is_empty() {
        page.push_str("<p>No item was flagged.</p>\n</section>\n");
        return;
    }
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for item in items {
        *reasons.entry(item.reason.as_str()).or_default() += 1;
    }
    let summary = reasons
        .iter()
        .map(|(reason, n)| format!("<code>{}</code> {n}", escape(reason)))
        .collect::<Vec<_>>()
        .join(" · ");
    let _ = write!(
        page,
        "<p>{} flagged: {summary}</p>\n<div class=\"scroll\"><table>\n<tr><th>Item</th>\
         <th class=\"text\">Category</th><th class=\"text\">Flagged by</th><th class=\"text\">Reason</th>\
         <th class=\"text\">Detail</th><th class=\"text\">Prompt (start)</th><th class=\"text\">In the \
         release</th></tr>\n",
        items.len()
    );
    for item in items {
        let outcome = match &item.outcome {
            FlagOutcome::Released(id) => format!("kept as <code>{}</code>", escape(id)),
            FlagOutcome::LeftOut => "left out".to_string(),
            FlagOutcome::Duplicate => "dropped as a duplicate".to_string(),
            FlagOutcome::NotChosen => "not chosen when trimming".to_string(),
        };
        let _ = writeln!(
            page,
            "<tr><td class=\"key\"><code>{}</code></td><td class=\"text key\"><code>{}</code></td>\
             <td class=\"text\">{}</td><td class=\"text key\"><code>{}</code></td><td class=\"text\">{}</td>\
             <td class=\"text\">{}</td><td class=\"text\">{outcome}</td></tr>",
            escape(&item.item_id),
            item.category,
            escape(&item.stage),
            escape(&item.reason),
            escape(&item.detail),
            escape(&item.excerpt)
        );
    }
    page.push_str("</table></div>\n</section>\n");
}

/// Text for HTML element content or a quoted attribute value.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quality::panel::Flag;
    use crate::release::info::PassCount;
    use crate::release::test_support::{info, records};
    use crate::stages::yields::CategoryYield;

    const SHA: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    fn flagged_item(id: &str, outcome: FlagOutcome) -> FlaggedItem {
        FlaggedItem {
            item_id: id.to_string(),
            category: Category::Reasoning,
            prompt_sha256: crate::util::digest::sha256_hex(id.as_bytes()),
            stage: "repair".to_string(),
            reason: "verifiers_disagree".to_string(),
            detail: "key 12; v-a: 12; v-b: 15".to_string(),
            excerpt: "A question about quotas".to_string(),
            outcome,
        }
    }

    fn report_for(info: &ReleaseInfo, records: &[ReleaseRecord]) -> String {
        render_report(info, "saseval_v2_prompts.jsonl", SHA, records)
    }

    #[test]
    fn every_text_from_the_data_is_escaped() {
        let records = records(1);
        let mut info = info(&records, 1);
        info.domain_counts.insert(
            Category::Reasoning,
            [("<b>fintech</b> & \"payments\"".to_string(), 1)]
                .into_iter()
                .collect(),
        );
        info.verifier_models = vec!["<img src=x onerror=alert(1)>".to_string()];
        info.verifiers = [(
            "<img src=x onerror=alert(2)>".to_string(),
            Default::default(),
        )]
        .into_iter()
        .collect();
        info.rejects_by_category = [(
            Category::Reasoning,
            [("<i>code</i>".to_string(), 1)].into_iter().collect(),
        )]
        .into_iter()
        .collect();
        info.flagged = vec![FlaggedItem {
            item_id: "id'<x>".to_string(),
            stage: "<u>repair</u>".to_string(),
            reason: "<s>reason</s>".to_string(),
            detail: "v-a: </td><script>alert(3)</script>".to_string(),
            excerpt: "<script>alert(4)</script> & more".to_string(),
            ..flagged_item("x", FlagOutcome::Released("t-<0001>".to_string()))
        }];
        let page = report_for(&info, &records);
        for raw in [
            "<b>fintech",
            "<img",
            "<i>code",
            "<u>repair",
            "<s>reason",
            "<x>",
            "<script",
            "<0001>",
        ] {
            assert!(!page.contains(raw), "{raw} reached the page unescaped");
        }
        for escaped in [
            "&lt;b&gt;fintech&lt;/b&gt; &amp; &quot;payments&quot;",
            "&lt;img src=x onerror=alert(1)&gt;",
            "&lt;img src=x onerror=alert(2)&gt;",
            "&lt;i&gt;code&lt;/i&gt;",
            "id&#39;&lt;x&gt;",
            "&lt;script&gt;alert(4)&lt;/script&gt; &amp; more",
            "kept as <code>t-&lt;0001&gt;</code>",
        ] {
            assert!(page.contains(escaped), "missing {escaped}");
        }
    }

    #[test]
    fn the_page_is_self_contained() {
        let records = records(2);
        let page = report_for(&info(&records, 2), &records);
        assert!(page.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
        assert!(page.ends_with("</html>\n"));
        for outside in [
            "<script", "<link", " src=", "url(", "@import", "http:", "https:",
        ] {
            assert!(!page.contains(outside), "{outside}");
        }
        assert!(page.contains("<svg viewBox="));
        assert!(page.contains("<a href=\"README.md\">Dataset card</a>"));
    }

    #[test]
    fn every_section_has_its_heading_and_the_audit_only_with_audit_numbers() {
        let records = records(2);
        let mut info = info(&records, 2);
        let page = report_for(&info, &records);
        assert!(page.contains("<title>SASEval v2 — release report</title>"));
        for heading in [
            COMPOSITION,
            LENGTHS,
            YIELD,
            SURVIVAL,
            REJECTS,
            REPAIR,
            DEDUP,
            FLAGGED,
        ] {
            assert!(page.contains(&format!("<h2>{heading}</h2>")), "{heading}");
        }
        assert!(
            !page.contains(AUDIT),
            "no audit numbers, no audit section or link"
        );

        info.audit = Some(AuditNumbers {
            models: vec!["m-1".to_string(), "m-2".to_string()],
            pass: [(
                Category::SimpleFactual,
                [
                    (
                        "m-1".to_string(),
                        PassCount {
                            answered: 4,
                            correct: 3,
                        },
                    ),
                    (
                        "m-2".to_string(),
                        PassCount {
                            answered: 4,
                            correct: 4,
                        },
                    ),
                ]
                .into_iter()
                .collect(),
            )]
            .into_iter()
            .collect(),
            min_correct: 2,
            audited: 9,
            passed: 7,
            flags: [(Flag::PanelDisagrees, 2)].into_iter().collect(),
            ..AuditNumbers::default()
        });
        let page = report_for(&info, &records);
        assert!(page.contains(&format!("<h2>{AUDIT}</h2>")));
        assert!(
            page.contains("<code>panel_disagrees</code></td><td>2</td>"),
            "{page}"
        );
        assert!(page.contains("7 of 9 candidates passed"), "{page}");
        assert!(page.contains(&format!("<a href=\"#audit\">{AUDIT}</a>")));
        assert!(page.contains("75.0% <small>(3/4)</small>"), "{page}");
        assert!(page.contains("100.0% <small>(4/4)</small>"));
        let audit = page.find(AUDIT).unwrap_or(0);
        assert!(
            page[audit..].contains(DEDUP),
            "the audit comes before the dedup numbers"
        );
    }

    #[test]
    fn composition_is_a_heat_map_with_totals() {
        let records = records(3);
        let info = info(&records, 3);
        let page = report_for(&info, &records);
        let heat_max = heat(2, 2);
        assert!(page.contains(&format!("<td style=\"{heat_max}\">2</td>")));
        assert!(
            page.contains("<td>Total</td><td>15</td><td>15</td><td>30</td></tr>"),
            "{page}"
        );
        assert_eq!(heat(0, 5), "background:#f7f8fa;color:#a3aab6");
        assert_eq!(heat(5, 5), "background:#2456a4;color:#fff");
        assert_eq!(heat(1, 2), "background:#8aa5cf;color:#1c2230");
        assert_eq!(heat(usize::MAX, usize::MAX), heat(5, 5));
    }

    #[test]
    fn length_summaries_and_axes_are_round_and_safe() {
        assert_eq!(summary(&[]), None);
        assert_eq!(summary(&[7]), Some([7, 7, 7, 7, 7]));
        assert_eq!(summary(&[1, 2, 3, 4, 5]), Some([1, 2, 3, 4, 5]));
        assert_eq!(summary(&[10, 20, 30, 40]), Some([10, 20, 30, 30, 40]));
        assert_eq!(axis(0), (1, 1));
        assert_eq!(axis(4), (4, 1));
        assert_eq!(axis(9), (10, 2));
        assert_eq!(axis(337), (400, 100));
        assert_eq!(axis(450), (500, 100));
        assert_eq!(axis(1_234), (1_500, 500));
        let (end, step) = axis(usize::MAX);
        assert!(end >= step && step > 0);
    }

    #[test]
    fn long_documents_are_measured_against_the_cards_range() {
        assert_eq!(stated_words(Category::LongDocumentQa), Some((250, 450)));
        assert_eq!(stated_words(Category::MultiDocumentQa), None);
        let document = "The quota for each workspace is 40 seats under this policy. ".repeat(30);
        let prompt = format!("{document}\n\nWhat is the seat quota for each workspace?");
        assert_eq!(
            document_words(Category::LongDocumentQa, &prompt),
            Some(word_count(&document))
        );
        let mut records = records(1);
        let long = records
            .iter_mut()
            .find(|r| r.category == Category::LongDocumentQa)
            .expect("a long_document_qa record");
        long.prompt = prompt;
        let page = report_for(&info(&records, 1), &records);
        assert!(
            page.contains("<b>Documents here: 330–330 words</b> (card: 250–450"),
            "{page}"
        );
        assert!(
            page.contains("fill=\"#3f9b6e\" fill-opacity=\"0.16\""),
            "the card's band"
        );
        assert!(page.contains(&escape(character(Category::MultiDocumentQa))));
    }

    #[test]
    fn yield_rounds_rejects_and_repair_show_their_numbers() {
        let records = records(2);
        let mut info = info(&records, 2);
        let category_yield = |requests, needed, valid, rejects: &[(&str, usize)]| CategoryYield {
            requests,
            items_asked: requests * 2,
            needed,
            valid,
            rejects: rejects.iter().map(|(c, n)| (c.to_string(), *n)).collect(),
            example: None,
        };
        info.author_yield = vec![
            RoundYield {
                round: 0,
                categories: [
                    (
                        Category::Reasoning,
                        category_yield(3, 6, 4, &[("no_json", 2)]),
                    ),
                    (Category::Conversational, category_yield(3, 6, 6, &[])),
                ]
                .into_iter()
                .collect(),
            },
            RoundYield {
                round: 1,
                categories: [(Category::Reasoning, category_yield(1, 2, 2, &[]))]
                    .into_iter()
                    .collect(),
            },
        ];
        let page = report_for(&info, &records);
        assert!(
            page.contains("10 valid · 2 rejected · 12 needed · 6 requests"),
            "{page}"
        );
        assert!(page.contains("2 valid · 0 rejected · 2 needed · 1 requests"));
        assert!(page.contains("<td title=\"3 requests\">4 / 6</td>"));
        assert!(page.contains(
            "<tr><td>round 1</td><td>—</td><td>—</td><td title=\"1 requests\">2 / 2</td>"
        ));
        assert!(page.contains("<tr><td><code>gold_not_in_document</code></td>"));
        assert!(page.contains("4 checked · 2 agreed · 2 repaired · 1 flagged"));
        assert!(page.contains("Total: 8 checked, 4 agreed, 4 repaired (50.0%), 2 flagged."));
        assert!(page.contains(
            "<tr><td><code>test-verifier</code></td><td>8</td><td>4</td><td>4</td><td>0</td>"
        ));
    }

    #[test]
    fn empty_inputs_say_so_instead_of_drawing_nothing() {
        let mut info = info(&[], 1);
        info.rejects_by_category.clear();
        info.repair = Default::default();
        info.domain_counts.clear();
        let page = report_for(&info, &[]);
        assert!(page.contains("No authoring round was recorded"));
        assert!(page.contains("Nothing was rejected."));
        assert!(page.contains("No numeric candidate was checked."));
        assert!(page.contains("No item was flagged."));
    }

    #[test]
    fn flagged_items_show_their_reason_and_where_they_went() {
        let records = records(1);
        let mut info = info(&records, 1);
        info.flagged = vec![
            flagged_item("r.0", FlagOutcome::Released("t-0003".to_string())),
            flagged_item("r.1", FlagOutcome::LeftOut),
            flagged_item("r.2", FlagOutcome::Duplicate),
            FlaggedItem {
                reason: "ill_posed".to_string(),
                ..flagged_item("r.3", FlagOutcome::NotChosen)
            },
        ];
        let page = report_for(&info, &records);
        assert!(page
            .contains("4 flagged: <code>ill_posed</code> 1 · <code>verifiers_disagree</code> 3"));
        for outcome in [
            "kept as <code>t-0003</code>",
            "left out",
            "dropped as a duplicate",
            "not chosen when trimming",
        ] {
            assert!(page.contains(&format!("{outcome}</td></tr>")), "{outcome}");
        }
        assert!(page.contains("key 12; v-a: 12; v-b: 15"));
    }
}
