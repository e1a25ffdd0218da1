//! Recognises a conversational item's dialog by its shape: turns are lines that open with a short
//! speaker label and a colon, whatever the labels say (`Customer:`/`Agent:`, `User:`/`Assistant:`,
//! `**Dana (client):**`). Exactly two speakers alternate (a speaker's consecutive lines are one
//! turn, and unlabelled lines continue the turn above them), and the dialog ends on a question
//! from the asking side, the speaker of the last turn.

use super::question::{self, Placement};
use super::text::{line_label, lines, units, Label, Line};
use super::{in_range, reject, Reason, Rejection, Rules};
use crate::quality::grade::norm;
use crate::stages::item::quote;

/// A parsed dialog: everything before the asker's last turn is its context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialog<'p> {
    pub context: &'p str,
    /// The last turn's question, without its speaker label.
    pub question: &'p str,
    /// The asking side's label as written, and its number of turns.
    pub asker: String,
    pub asker_turns: usize,
}

struct Turn {
    speaker: String,
    shown: String,
    start: usize,
    text_start: usize,
}

/// Reads the dialog of `prompt`. A lone label line before the first turn that never recurs
/// (`Support chat transcript:`) is a header, not a speaker.
pub fn parse<'p>(prompt: &'p str, rules: &Rules) -> Result<Dialog<'p>, Rejection> {
    let labelled: Vec<(Line<'_>, Label)> = lines(prompt)
        .filter(|(_, fenced)| !fenced)
        .filter_map(|(line, _)| line_label(line.text).map(|label| (line, label)))
        .filter(|(_, label)| label.capitalised)
        .collect();
    let mut turns: Vec<Turn> = Vec::new();
    for (line, label) in &labelled {
        let Label {
            key, shown, rest, ..
        } = label.clone();
        let label_only = line
            .text
            .get(rest..)
            .is_none_or(|text| text.trim().is_empty());
        let recurs = labelled
            .iter()
            .filter(|(_, other)| other.key == key)
            .count()
            > 1;
        if turns.is_empty() && label_only && !recurs {
            continue;
        }
        if turns.last().is_some_and(|t| t.speaker == key) {
            continue;
        }
        turns.push(Turn {
            speaker: key,
            shown,
            start: line.start,
            text_start: line.start + rest,
        });
    }
    let mut speakers: Vec<&str> = Vec::new();
    let mut keys: Vec<&str> = Vec::new();
    for turn in &turns {
        if !keys.contains(&turn.speaker.as_str()) {
            keys.push(&turn.speaker);
            speakers.push(&turn.shown);
        }
    }
    match speakers.len() {
        0 => {
            return reject(
                Reason::TurnStructure,
                "no speaker turns: a dialog's lines open with a short speaker label and a colon",
            )
        }
        1 => {
            return reject(
                Reason::TurnStructure,
                format!("only one speaker ({}); a dialog needs two", speakers[0]),
            )
        }
        2 => {}
        _ => {
            return reject(
                Reason::TurnStructure,
                format!(
                    "{} speakers ({}); a dialog is between exactly two",
                    speakers.len(),
                    speakers.join(", ")
                ),
            )
        }
    }
    let Some(last) = turns.last() else {
        return reject(Reason::TurnStructure, "no speaker turns");
    };
    let asker_turns = turns_of(&turns, &last.speaker);
    if !in_range(rules.asker_turns).contains(&asker_turns) {
        return reject(
            Reason::TurnStructure,
            format!(
                "{asker_turns} turn(s) from the asking side ({}); {}–{} allowed",
                last.shown, rules.asker_turns.0, rules.asker_turns.1
            ),
        );
    }
    let last_turn = prompt.get(last.text_start..).unwrap_or_default();
    let asked =
        question::find(last_turn, Placement::End, false).map_err(|rejection| Rejection {
            reason: Reason::TurnStructure,
            detail: format!(
                "the dialog must end on a question from {}: {}",
                last.shown, rejection.detail
            ),
        })?;
    let earlier_questions = turns
        .windows(2)
        .filter(|pair| pair[0].speaker == last.speaker)
        .filter_map(|pair| prompt.get(pair[0].text_start..pair[1].start))
        .flat_map(units)
        .filter(|unit| unit.text.trim_end().ends_with('?'));
    if let Some(earlier) = earlier_questions
        .into_iter()
        .find(|unit| repeats(asked.text, unit.text))
    {
        return reject(
            Reason::TurnStructure,
            format!(
                "the last question {} repeats {}'s earlier question {}; a dialog ends on a \
                 question that needs its context",
                quote(asked.text),
                last.shown,
                quote(earlier.text.trim())
            ),
        );
    }
    Ok(Dialog {
        context: prompt.get(..last.start).unwrap_or_default(),
        question: asked.text,
        asker: last.shown.clone(),
        asker_turns,
    })
}

/// Words besides the question words that carry no subject of a question: polite openers,
/// pronouns, fillers.
const ASKING_WORDS: &[&str] = &[
    "can", "could", "would", "you", "your", "please", "confirm", "tell", "the", "for", "our",
    "and", "does", "did", "was", "were", "again", "thanks", "thank",
];

/// Whether `question` repeats the asker's `earlier` question: every one of its subject words (at
/// least three) stands in it, so it needs nothing the other side said.
fn repeats(question: &str, earlier: &str) -> bool {
    let normalised = norm(question);
    let subject: Vec<&str> = normalised
        .split_whitespace()
        .filter(|word| {
            word.len() >= 3
                && !question::QUESTION_WORDS.contains(word)
                && !ASKING_WORDS.contains(word)
        })
        .collect();
    let earlier = norm(earlier);
    let said: Vec<&str> = earlier.split_whitespace().collect();
    subject.len() >= 3 && subject.iter().all(|word| said.contains(word))
}

fn turns_of(turns: &[Turn], speaker: &str) -> usize {
    turns.iter().filter(|t| t.speaker == speaker).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(prompt: &str) -> Result<Dialog<'_>, String> {
        parse(prompt, &Rules::default()).map_err(|r| r.to_string())
    }

    #[test]
    fn any_two_labels_make_a_dialog_and_the_asker_is_the_last_speaker() {
        let dialog = "User: We have two workspaces. Which plan is Atlas on?\n\
                      Assistant: Atlas is on Enterprise; Borealis is on Team.\n\
                      User: And the other one?";
        let found = parsed(dialog).unwrap();
        assert_eq!(found.asker, "User");
        assert_eq!(found.asker_turns, 2);
        assert_eq!(found.question, "And the other one?");
        assert!(found.context.ends_with("Borealis is on Team.\n"));
    }

    #[test]
    fn bold_labels_names_and_continuation_lines_are_read() {
        let dialog = "Support chat transcript:\n\
                      **Dana (client):** Hi. Our two sandboxes refresh on different days.\n\
                      **Raj (support):** Right: qa-east on Sundays,\n\
                      and uat-west on the first Monday of the month.\n\
                      **Dana (client):** Thanks.\n\
                      **Dana (client):** When does the monthly one run?";
        let found = parsed(dialog).unwrap();
        assert_eq!(found.asker, "Dana (client)");
        assert_eq!(found.asker_turns, 2);
        assert_eq!(found.question, "When does the monthly one run?");
    }

    #[test]
    fn structure_errors_name_what_is_wrong() {
        let three = "A: one?\nB: two\nC: three\nA: four?";
        assert!(parsed(three).unwrap_err().contains("3 speakers"));
        let one = "Customer: hi\nCustomer: there?";
        assert!(parsed(one).unwrap_err().contains("only one speaker"));
        let too_many = "C: a\nA: b\nC: c\nA: d\nC: e\nA: f\nC: g\nA: h\nC: i?";
        assert!(parsed(too_many).unwrap_err().contains("5 turn(s)"));
        let no_question =
            "Customer: Which plan is Atlas on?\nAgent: Enterprise.\nCustomer: Thanks, that is all.";
        assert!(parsed(no_question)
            .unwrap_err()
            .contains("must end on a question"));
        assert!(parsed("Just prose, no turns?")
            .unwrap_err()
            .contains("no speaker turns"));
    }

    #[test]
    fn settings_inside_a_turn_are_not_speakers() {
        let dialog = "Customer: What does our config say?\n\
                      Agent: It says:\nregion: eu-west-1\nreplicas: 3\n\
                      Customer: And how many replicas does the other cluster have?";
        assert!(parsed(dialog).is_ok());
    }
}
