//! The memory categories: counts the stored facts of a memory_recall item in any form (a block
//! under any header or none, any bullet style or none, `key: value` lines or sentences), and
//! checks the `durable`/`stale` annotations with the card's grader.

use super::text::{is_header_line, line_label, lines, units, word_count};
use super::{in_range, reject, ItemFields, Reason, Rejection, Rules};
use crate::quality::grade::{graded, graded_words, norm};
use crate::stages::item::Category;

/// Bullet markers a fact line may open with.
const BULLETS: &[&str] = &["- ", "* ", "• ", "· ", "– ", "+ ", "▪ "];

/// The number of stored facts in `context`: its fact lines (bulleted, numbered or `key: value`),
/// or, when it has none, its sentences.
pub fn fact_count(context: &str) -> usize {
    let fact_lines = fact_lines(context).count();
    if fact_lines > 0 {
        return fact_lines;
    }
    units(context)
        .iter()
        .filter(|unit| !is_header_line(unit.text) && word_count(unit.text) >= 3)
        .count()
}

/// The fact lines of `context` (bulleted, numbered or `key: value`).
pub fn fact_lines(context: &str) -> impl Iterator<Item = &str> {
    lines(context)
        .filter(|(line, fenced)| !fenced && is_fact_line(line.text))
        .map(|(line, _)| line.text)
}

/// The key of a `key: value` fact line (`- tenant: Brightwater Health` → `tenant`), bulleted,
/// numbered or bare; `None` for a fact line without one.
pub fn fact_key(line: &str) -> Option<&str> {
    let (key, value) = key_and_value(line)?;
    let key = key.trim();
    (!key.is_empty() && !value.trim().is_empty() && !key.contains(char::is_whitespace))
        .then_some(key)
}

fn is_fact_line(line: &str) -> bool {
    let text = line.trim();
    if text.is_empty() || is_header_line(text) {
        return false;
    }
    match unbulleted(text) {
        Some(fact) => !fact.trim().is_empty(),
        None => line_label(text).is_some_and(|label| {
            text.get(label.rest..)
                .is_some_and(|value| !value.trim().is_empty())
        }),
    }
}

/// The text of a bulleted or numbered line after its bullet or number; `None` for a bare line.
fn unbulleted(text: &str) -> Option<&str> {
    BULLETS
        .iter()
        .find_map(|bullet| text.strip_prefix(bullet))
        .or_else(|| numbered_item(text))
}

fn numbered_item(text: &str) -> Option<&str> {
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let rest = text.get(digits..)?;
    let item = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") "));
    (1..=2).contains(&digits).then_some(item).flatten()
}

/// memory_recall: the context holds the allowed number of stored facts.
pub fn check_facts(context: &str, rules: &Rules) -> Result<(), Rejection> {
    let facts = fact_count(context);
    if in_range(rules.memory_facts).contains(&facts) {
        return Ok(());
    }
    reject(
        Reason::MemoryBlock,
        format!(
            "{facts} stored fact(s) before the question (lines of a facts block, or sentences); {}–{} allowed",
            rules.memory_facts.0, rules.memory_facts.1
        ),
    )
}

/// The `durable`/`stale` rules: the golds grade a durable value, every stale value is in the
/// item's context, no stale value would be graded correct, and a memory_update's key is new.
pub fn check_annotations(
    category: Category,
    item: &ItemFields,
    context: &str,
) -> Result<(), Rejection> {
    let durable = item.durable.as_deref().unwrap_or_default();
    if durable.is_empty() {
        return reject(Reason::MissingDurable, "`durable` is missing or empty");
    }
    if let Some(blank) = durable.iter().find(|value| norm(value).trim().is_empty()) {
        return reject(
            Reason::MissingDurable,
            format!("durable value {blank:?} is blank"),
        );
    }
    if !durable.iter().any(|value| graded(value, &item.golds)) {
        return reject(
            Reason::DurableNotGold,
            format!(
                "no durable value of {durable:?} is graded correct by the golds {:?}",
                item.golds
            ),
        );
    }
    let stale = item.stale.as_deref().unwrap_or_default();
    if category == Category::MemoryUpdate && stale.is_empty() {
        return reject(Reason::MissingStale, "`stale` is missing or empty");
    }
    if let Some(blank) = stale.iter().find(|value| norm(value).trim().is_empty()) {
        return reject(
            Reason::MissingStale,
            format!("stale value {blank:?} is blank"),
        );
    }
    if let Some(absent) = stale
        .iter()
        .find(|value| !graded(context, std::slice::from_ref(*value)))
    {
        return reject(
            Reason::StaleNotInPrompt,
            format!("stale value {absent:?} does not appear before the question"),
        );
    }
    if let Some(passing) = stale.iter().find(|value| graded(value, &item.golds)) {
        return reject(
            Reason::StaleGradedCorrect,
            format!(
                "stale value {passing:?} is graded correct by the golds {:?}",
                item.golds
            ),
        );
    }
    if category == Category::MemoryUpdate {
        check_key_is_updated(context, &item.golds)?;
    }
    Ok(())
}

/// memory_update: the key (the first gold) is not already the value of a stored fact above the
/// update, as when an update "adds" a user the memory already lists, or moves a date to the date
/// it had: then the update changes nothing the question asks. The stored facts above the update
/// are the context's first run of fact lines, when text follows it; a context of fact lines
/// alone (a changelog) has no such split and passes.
fn check_key_is_updated(context: &str, golds: &[String]) -> Result<(), Rejection> {
    let Some(key) = golds.first() else {
        return Ok(());
    };
    let key = graded_words(key);
    if let Some(fact) = facts_above_update(context)
        .into_iter()
        .find(|fact| key_and_value(fact).is_some_and(|(_, value)| graded_words(value) == key))
    {
        return reject(
            Reason::KeyNotUpdated,
            format!(
                "the key {:?} is already the value of the stored fact {:?}, above the update",
                golds[0],
                fact.trim()
            ),
        );
    }
    Ok(())
}

/// memory_update: the question does not pick what it asks about by a stored value that the
/// update replaced. "What is the current infrastructure version for the production
/// environment?", over a memory whose `deployment_environment: production` the update moved to
/// staging, asks about a state that no longer holds: production may still run the old version.
/// A value is replaced when the update names its fact's key (`deployment environment`) and
/// does not repeat the value.
pub fn check_question_not_on_replaced_value(
    context: &str,
    question: &str,
) -> Result<(), Rejection> {
    let Some((facts, update)) = split_at_update(context) else {
        return Ok(());
    };
    let (asked, update) = (graded_words(question), graded_words(update));
    for fact in facts {
        let Some((key, value)) = key_and_value(fact) else {
            continue;
        };
        let (key, value) = (graded_words(key), graded_words(value));
        if value.is_empty() || key.is_empty() {
            continue;
        }
        if has_run(&asked, &value) && has_run(&update, &key) && !has_run(&update, &value) {
            return reject(
                Reason::QuestionOnReplacedValue,
                format!(
                    "the question asks about {:?}, the stored value of {:?} that the update replaced",
                    value.join(" "),
                    key.join(" ")
                ),
            );
        }
    }
    Ok(())
}

/// Whether `words` holds `run` as consecutive words.
fn has_run(words: &[String], run: &[String]) -> bool {
    !run.is_empty() && words.windows(run.len()).any(|window| window == run)
}

/// The first run of fact lines of `context`, when a line of other text follows it.
fn facts_above_update(context: &str) -> Vec<&str> {
    split_at_update(context)
        .map(|(facts, _)| facts)
        .unwrap_or_default()
}

/// The first run of fact lines of `context` and the text from the first line of other text
/// after it (the update); `None` when no such line follows.
fn split_at_update(context: &str) -> Option<(Vec<&str>, &str)> {
    let mut facts = Vec::new();
    for (line, fenced) in lines(context) {
        let fact = !fenced && is_fact_line(line.text);
        if fact {
            facts.push(line.text);
        } else if !facts.is_empty() && !line.text.trim().is_empty() {
            return Some((facts, context.get(line.start..).unwrap_or_default()));
        }
    }
    None
}

/// A fact line split at its first colon, after its bullet or number (`- user: John Doe` →
/// `user`, ` John Doe`).
fn key_and_value(line: &str) -> Option<(&str, &str)> {
    let text = line.trim();
    unbulleted(text).unwrap_or(text).split_once(':')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_counted_in_any_form() {
        let forms = [
            "Memory:\n- owner: Priya\n- plan: Enterprise\n- region: eu-central-1\n- sso: Okta\n",
            "Stored profile\n* Owner — Priya\n* Plan — Enterprise\n* Region — eu-central-1\n* SSO — Okta\n",
            "## Account memory\n1. owner: Priya\n2. plan: Enterprise\n3. region: eu-central-1\n4. sso: Okta\n",
            "owner: Priya\nplan: Enterprise\nregion: eu-central-1\nsso_provider: Okta\n",
            "• Owner is Priya\n• Plan is Enterprise\n• Region is eu-central-1\n• SSO is Okta\n",
            "The account owner is Priya. The account is on the Enterprise plan. Data lives in eu-central-1. Single sign-on goes through Okta.",
        ];
        for form in forms {
            assert_eq!(fact_count(form), 4, "{form}");
        }
    }

    #[test]
    fn too_few_or_too_many_facts_are_a_memory_block_reject() {
        let rules = Rules::default();
        assert!(check_facts("- plan: Enterprise\n- sso: Okta\n", &rules).is_err());
        let many: String = (0..11).map(|n| format!("- key{n}: value {n}\n")).collect();
        assert!(check_facts(&many, &rules).is_err());
        assert!(check_facts("- a: 1\n- b: 2\n- c: 3\n", &rules).is_ok());
    }
}
