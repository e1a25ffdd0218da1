//! Catches a question that presumes what its own documents deny. Asked "how long is the
//! eu.clickstream topic encrypted at rest?" over an audit that found the topic "not encrypted at
//! rest", a reader finds no true answer, and the key comes from a sentence about something else
//! ("stored for at least 3 years"): the model stitched a question onto an unrelated fact.

use super::golds;
use super::question::QUESTION_WORDS;
use super::text::units;
use super::{reject, Reason, Rejection};
use crate::quality::grade::{graded_words, norm};

/// Words of a negation, as `norm` leaves them (`isn't` becomes `isn t`).
const NEGATIONS: [&str; 3] = ["not", "never", "t"];

/// Words between a negation and the state it denies (`not yet encrypted`, `never been audited`).
const BEFORE_STATE: [&str; 6] = ["yet", "be", "been", "being", "always", "ever"];

/// A denied state shorter than this is a function word (`not in`, `not all`), not a state.
const MIN_STATE_LETTERS: usize = 5;

/// Words of a denying sentence's subject that tie it to nothing in particular.
const PLAIN_WORDS: [&str; 12] = [
    "that", "this", "these", "those", "with", "from", "found", "finds", "says", "said", "states",
    "stated",
];

/// A denial in the context: its sentence, the state it denies and the words that name what it is
/// denied of.
struct Denial<'c> {
    sentence: &'c str,
    state: String,
    subject: Vec<String>,
}

/// Rejects a question that asks about a state (`encrypted`) of a subject (`eu.clickstream`) when
/// a sentence of `context` says the subject is not in that state, and no sentence that states
/// the key speaks of that state. A question that itself negates asks about the denial and is
/// kept; so is one whose key's sentence names the state (the state holds there, for another
/// subject or time).
pub fn check(context: &str, question: &str, key: &str) -> Result<(), Rejection> {
    let asked = graded_words(question);
    if asked.iter().any(|word| NEGATIONS.contains(&word.as_str())) {
        return Ok(());
    }
    let sentences: Vec<&str> = units(context).iter().map(|unit| unit.text).collect();
    let keyed: Vec<String> = sentences
        .iter()
        .filter(|sentence| golds::mentions(sentence, key))
        .map(|sentence| norm(sentence))
        .collect();
    if keyed.is_empty() {
        return Ok(());
    }
    let has = |words: &[String], word: &str| words.iter().any(|w| w == word);
    for denial in sentences.iter().filter_map(|sentence| denial(sentence)) {
        let key_speaks_of_it = keyed
            .iter()
            .any(|sentence| sentence.split_whitespace().any(|w| w == denial.state));
        let about_subject = denial.subject.iter().any(|word| has(&asked, word));
        if has(&asked, &denial.state) && about_subject && !key_speaks_of_it {
            return reject(
                Reason::QuestionDenied,
                format!(
                    "the question asks about what is {:?}, and the context says it is not ({:?}); the key {key:?} comes from a sentence that does not speak of it",
                    denial.state,
                    denial.sentence.trim()
                ),
            );
        }
    }
    Ok(())
}

/// The first denial of `sentence`: the word its negation denies and the distinctive words
/// before the negation.
fn denial(sentence: &str) -> Option<Denial<'_>> {
    let words = graded_words(sentence);
    let at = words
        .iter()
        .position(|word| NEGATIONS.contains(&word.as_str()))?;
    let state = words
        .get(at + 1..)?
        .iter()
        .find(|word| !BEFORE_STATE.contains(&word.as_str()))?;
    if state.len() < MIN_STATE_LETTERS || !state.bytes().all(|b| b.is_ascii_lowercase()) {
        return None;
    }
    let subject = words
        .get(..at)?
        .iter()
        .filter(|word| {
            word.len() >= 4
                && !PLAIN_WORDS.contains(&word.as_str())
                && !QUESTION_WORDS.contains(&word.as_str())
        })
        .cloned()
        .collect();
    Some(Denial {
        sentence,
        state: state.clone(),
        subject,
    })
}
