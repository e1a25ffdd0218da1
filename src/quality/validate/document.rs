//! long_document_qa's counterpart of the snippets' distractor rule: a document whose every slot
//! of the kind the key fills (`owner: Logistics` for each of three corrective actions) holds the
//! key gives the reader nothing to choose between, so its question tests no reading.

use super::{reject, Reason, Rejection};

/// Slots of one label a document needs before all of them holding the key means anything.
const MIN_SLOTS: usize = 2;

/// Rejects `document` when some label the key stands after (`owner:` before `Logistics`)
/// labels [`MIN_SLOTS`] or more slots and every one of them holds the key.
pub fn check_distractors(document: &str, key: &str) -> Result<(), Rejection> {
    let text = document.to_ascii_lowercase();
    let written = key.trim();
    let key = written.to_ascii_lowercase();
    if key.is_empty() {
        return Ok(());
    }
    for label in labels_before(&text, &key) {
        let slots = slots(&text, &label);
        if slots.len() >= MIN_SLOTS && slots.iter().all(|value| *value == key) {
            return reject(
                Reason::NoDistractors,
                format!(
                    "every `{label}:` of the document ({}) holds the key {written:?}: the question has no other value to tell it from",
                    slots.len()
                ),
            );
        }
    }
    Ok(())
}

/// The labels that stand right before an occurrence of `key` (`owner` in `owner: logistics`),
/// `text` and `key` lower-cased.
fn labels_before(text: &str, key: &str) -> Vec<String> {
    let mut labels: Vec<String> = text
        .match_indices(key)
        .filter_map(|(start, _)| {
            let before = text.get(..start)?.trim_end().strip_suffix(':')?;
            let word = &before[before.trim_end_matches(is_label_char).len()..];
            (!word.is_empty()).then(|| word.to_string())
        })
        .collect();
    labels.sort();
    labels.dedup();
    labels
}

/// The value of each `label:` of `text` that starts a word: what follows it up to the end of its
/// clause (`;`, `,`, a bracket, a line end or a closing full stop).
fn slots<'t>(text: &'t str, label: &str) -> Vec<&'t str> {
    let marker = format!("{label}:");
    text.match_indices(&marker)
        .filter(|(start, _)| {
            !text
                .get(..*start)
                .and_then(|before| before.chars().next_back())
                .is_some_and(is_label_char)
        })
        .filter_map(|(start, _)| text.get(start + marker.len()..))
        .map(|rest| {
            let clause = rest
                .split([';', ',', '(', ')', '\n'])
                .next()
                .unwrap_or_default();
            clause.trim().trim_end_matches('.').trim_end()
        })
        .collect()
}

fn is_label_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}
