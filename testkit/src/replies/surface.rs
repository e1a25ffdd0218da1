//! Surface forms: real models write the same structure with other labels, headers, bullets and
//! question prefixes. Items are generated in one canonical layout and then rewritten into a form
//! drawn per request and item.

use super::*;

/// Speaker labels, asker first, at the start of a dialog line.
pub(super) const DIALOG_LABELS: &[(&str, &str)] = &[
    ("Customer:", "Agent:"),
    ("User:", "Assistant:"),
    ("Client:", "Support:"),
    ("**Customer:**", "**Agent:**"),
    ("Dana (customer):", "Raj (support):"),
    ("[User]:", "[Agent]:"),
    ("Caller:", "Rep:"),
];

/// What opens the final question paragraph.
pub(super) const QUESTION_PREFIXES: &[&str] =
    &["Question: ", "Q: ", "", "**Question:** ", "Query: "];

/// The header over stored facts (none at all is one form).
pub(super) const MEMORY_HEADERS: &[&str] = &[
    "Memory:\n",
    "Stored facts:\n",
    "## Account profile\n",
    "[MEMORY]\n",
    "Known about this account:\n",
    "",
];

/// How a fact line opens; `None` numbers the lines `1.`, `2.`, ….
pub(super) const FACT_BULLETS: &[Option<&str>] =
    &[Some("- "), Some("* "), Some("• "), None, Some("")];

/// How a snippet's label line is written, from its number and its title.
pub(super) const SNIPPET_STYLES: usize = 8;

pub(super) fn snippet_label(style: usize, number: usize, title: &str) -> String {
    let letter = char::from(b'A' + (number as u8).saturating_sub(1) % 26);
    match style % SNIPPET_STYLES {
        0 => format!("[Doc {number}] {title}"),
        1 => format!("[{number}] {title}"),
        2 => format!("Source {letter} — {title}"),
        3 => format!("Snippet {number}: {title}"),
        4 => format!("Document {number} — {title}"),
        5 => format!("## {title}"),
        6 => format!("{number}. {title}"),
        _ => format!("**{title}**"),
    }
}

/// One drawn surface form.
pub(super) struct Surface<'a> {
    pub(super) dialog: (&'a str, &'a str),
    pub(super) question_prefix: &'a str,
    pub(super) memory_header: &'a str,
    pub(super) bullet: Option<&'a str>,
    pub(super) snippets: usize,
    /// A blank line between snippets.
    pub(super) spaced: bool,
}

impl Surface<'static> {
    pub(super) fn drawn(category: &str, seq: usize, index: usize) -> Surface<'static> {
        let mut pick = Pick::new(&["surface", category, &seq.to_string(), &index.to_string()]);
        Surface {
            dialog: pick.one(DIALOG_LABELS),
            question_prefix: pick.one(QUESTION_PREFIXES),
            memory_header: pick.one(MEMORY_HEADERS),
            bullet: pick.one(FACT_BULLETS),
            snippets: pick.below(SNIPPET_STYLES),
            spaced: pick.below(2) == 0,
        }
    }
}

/// `item` rewritten into `surface`: same content, other labels, headers, bullets and prefixes.
pub(super) fn restyled(category: &str, mut item: Item, surface: &Surface<'_>) -> Item {
    let prompt = &item.prompt;
    item.prompt = match category {
        "conversational" => prompt
            .lines()
            .map(|line| {
                if let Some(text) = line.strip_prefix("Customer: ") {
                    format!("{} {text}", surface.dialog.0)
                } else if let Some(text) = line.strip_prefix("Agent: ") {
                    format!("{} {text}", surface.dialog.1)
                } else {
                    line.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
        "multi_document_qa" => {
            let mut lines = Vec::new();
            for line in prompt.lines() {
                let labelled = line
                    .strip_prefix("[Doc ")
                    .and_then(|rest| rest.split_once("] "));
                match labelled.and_then(|(n, title)| n.parse::<usize>().ok().map(|n| (n, title))) {
                    Some((number, title)) => {
                        if surface.spaced && number > 1 {
                            lines.push(String::new());
                        }
                        lines.push(snippet_label(surface.snippets, number, title));
                    }
                    None => lines.push(line.to_string()),
                }
            }
            with_question_prefix(&lines.join("\n"), surface)
        }
        "memory_recall" => {
            let mut number = 0;
            let lines: Vec<String> = prompt
                .lines()
                .map(|line| match line.strip_prefix("- ") {
                    Some(fact) => {
                        number += 1;
                        match surface.bullet {
                            Some(bullet) => format!("{bullet}{fact}"),
                            None => format!("{number}. {fact}"),
                        }
                    }
                    None => line.to_string(),
                })
                .collect();
            let text = lines
                .join("\n")
                .replacen("Memory:\n", surface.memory_header, 1);
            with_question_prefix(&text, surface)
        }
        "long_document_qa" => with_question_prefix(prompt, surface),
        _ => return item,
    };
    item
}

pub(super) fn with_question_prefix(prompt: &str, surface: &Surface<'_>) -> String {
    prompt.replacen(
        "\n\nQuestion: ",
        &format!("\n\n{}", surface.question_prefix),
        1,
    )
}
