//! Finds what an item asks. A question is a sentence ending in `?` (or opening with a question
//! word), wherever the category allows it; where the category allows it, an instruction or an
//! indirect request ("Could you confirm…", "Name the…") asks too. A `Question:`, `Q:` or
//! `User:` label before it is optional, and everything before the question is the item's context.

use super::text::{
    is_header_line, line_at, line_before, line_label, units, unwrapped, word_count, Unit,
};
use super::{reject, Reason, Rejection};
use crate::quality::grade::norm;
use crate::stages::item::quote;
use std::cell::OnceCell;

/// What a sentence-like unit does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    Question,
    Instruction,
}

/// Where a category puts its question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Last, after the document, snippets, dialog or facts (a short instruction such as "Answer
    /// in days." may follow it).
    End,
    /// Anywhere: filler and a signature may follow it, or code may come after it.
    Anywhere,
}

/// The question an item asks and where its block starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asked<'p> {
    /// Byte offset of the question's block (its label or header line included): everything
    /// before it is the item's context.
    pub start: usize,
    /// The question itself, without a `Question:`-style label.
    pub text: &'p str,
}

/// Words that open a question even when its `?` is missing.
pub(super) const QUESTION_WORDS: &[&str] = &[
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how",
];

/// Verbs that open an instruction.
const INSTRUCTION_VERBS: &[&str] = &[
    "add",
    "advise",
    "answer",
    "assess",
    "calculate",
    "change",
    "check",
    "choose",
    "clarify",
    "compare",
    "complete",
    "compute",
    "confirm",
    "convert",
    "correct",
    "count",
    "debug",
    "derive",
    "describe",
    "determine",
    "diagnose",
    "estimate",
    "evaluate",
    "explain",
    "express",
    "extract",
    "figure",
    "find",
    "fix",
    "give",
    "help",
    "identify",
    "implement",
    "indicate",
    "list",
    "locate",
    "look",
    "modify",
    "name",
    "outline",
    "pick",
    "point",
    "predict",
    "propose",
    "provide",
    "quote",
    "recommend",
    "refactor",
    "replace",
    "report",
    "resolve",
    "return",
    "review",
    "rewrite",
    "select",
    "set",
    "share",
    "show",
    "specify",
    "spot",
    "state",
    "suggest",
    "summarise",
    "summarize",
    "tell",
    "update",
    "verify",
    "work",
    "write",
];

/// Words that may open an instruction before its verb ("Please name…", "Finally, state…").
const INSTRUCTION_OPENERS: &[&str] = &["please", "kindly", "now", "also", "finally", "then", "so"];

/// Phrases of an indirect request ("I'd be grateful if you could confirm…").
const REQUEST_PHRASES: &[&str] = &[
    "could you",
    "can you",
    "would you",
    "will you",
    "could someone",
    "can someone",
    "can anyone",
    "could anyone",
    "if you could",
    "if you can",
    "let me know",
    "let us know",
    "tell me",
    "tell us",
    "i need to know",
    "we need to know",
    "i'd like to know",
    "i would like to know",
    "we would like to know",
    "we'd like to know",
    "i want to know",
    "please confirm",
    "please advise",
    "wondering whether",
    "wondering if",
    "wondering what",
    "wondering which",
    "wondering how",
    "grateful if",
    "appreciate it if",
    "appreciate if",
    "help me",
    "help us",
];

/// Fewest words in an instruction: a lone verb (`Review.`) is a heading, not a request.
const MIN_INSTRUCTION_WORDS: usize = 3;
/// Most trailing instructions ("Answer in days.") a final question may be followed by.
const MAX_TRAILING_INSTRUCTIONS: usize = 2;
/// Most words in one trailing instruction.
const MAX_TRAILING_INSTRUCTION_WORDS: usize = 20;

/// What `unit` does: asks a question, gives an instruction, or neither.
pub fn ask_kind(unit: &str) -> Option<Ask> {
    let text = unwrapped(unit);
    if text.ends_with('?') {
        return Some(Ask::Question);
    }
    let text = match line_label(text) {
        Some(label) => text.get(label.rest..).unwrap_or_default().trim(),
        None => text,
    };
    // The lists hold lower-case words; only the first words are looked at, so only they are
    // lower-cased (the whole unit only when a request phrase may decide).
    let mut words = lower_words(text);
    let first = words.next().unwrap_or_default();
    if QUESTION_WORDS.contains(&first.as_str()) && !text.ends_with(['.', '!']) {
        return Some(Ask::Question);
    }
    let verb = std::iter::once(first)
        .chain(words)
        .find(|w| !INSTRUCTION_OPENERS.contains(&w.as_str()))
        .unwrap_or_default();
    let words = text.split_whitespace().take(MIN_INSTRUCTION_WORDS).count();
    if words < MIN_INSTRUCTION_WORDS {
        return None;
    }
    (INSTRUCTION_VERBS.contains(&verb.as_str()) || {
        let lower = text.to_lowercase();
        REQUEST_PHRASES.iter().any(|p| lower.contains(p))
    })
    .then_some(Ask::Instruction)
}

/// The words of `text` lower-cased, as splitting `text.to_lowercase()` at every character that
/// is neither alphanumeric nor `'` gives them (a word is split again where lower-casing makes
/// such a character, as `İ` does).
fn lower_words(text: &str) -> impl Iterator<Item = String> + '_ {
    let split = |c: char| !c.is_alphanumeric() && c != '\'';
    text.split(split)
        .filter(|w| !w.is_empty())
        .flat_map(move |w| {
            w.to_lowercase()
                .split(split)
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
}

/// `text` has no more than `most` words (counting only as far as it takes to tell).
fn words_at_most(text: &str, most: usize) -> bool {
    text.split_whitespace().take(most + 1).count() <= most
}

fn asks(kind: Option<Ask>, allow_instruction: bool) -> bool {
    match kind {
        Some(Ask::Question) => true,
        Some(Ask::Instruction) => allow_instruction,
        None => false,
    }
}

/// Finds the question of `prompt` where `placement` puts it.
pub fn find(
    prompt: &str,
    placement: Placement,
    allow_instruction: bool,
) -> Result<Asked<'_>, Rejection> {
    read(prompt).find(placement, allow_instruction)
}

/// A prompt's sentence-like units and what each does, read once for every rule that looks for
/// its question. What a unit does is worked out the first time a rule asks: the search runs
/// from the end of the prompt and mostly stops at its last unit.
pub struct Reading<'p> {
    prompt: &'p str,
    units: Vec<Unit<'p>>,
    kinds: Vec<OnceCell<Option<Ask>>>,
}

pub fn read(prompt: &str) -> Reading<'_> {
    let units = units(prompt);
    let kinds = units.iter().map(|_| OnceCell::new()).collect();
    Reading {
        prompt,
        units,
        kinds,
    }
}

impl<'p> Reading<'p> {
    /// What the unit at `index` does.
    fn kind(&self, index: usize) -> Option<Ask> {
        *self.kinds[index].get_or_init(|| ask_kind(self.units[index].text))
    }

    /// The prompt's question where `placement` puts it.
    pub fn find(
        &self,
        placement: Placement,
        allow_instruction: bool,
    ) -> Result<Asked<'p>, Rejection> {
        let (prompt, units) = (self.prompt, &self.units);
        let asking = |i: &usize| asks(self.kind(*i), allow_instruction);
        let last_asking = (0..units.len()).rev().find(asking);
        let Some(last_asking) = last_asking else {
            let what = if allow_instruction {
                "no sentence ends with `?` or gives an instruction"
            } else {
                "no sentence ends with `?`"
            };
            return reject(
                Reason::NoQuestion,
                format!("the prompt asks nothing: {what}"),
            );
        };
        let chosen = match placement {
            Placement::Anywhere => last_asking,
            Placement::End => {
                let last_question = (0..units.len())
                    .rev()
                    .find(|i| self.kind(*i) == Some(Ask::Question));
                let ends_on = |q: usize| {
                    let mut after = q + 1..units.len();
                    after.len() <= MAX_TRAILING_INSTRUCTIONS
                        && after.all(|i| {
                            self.kind(i) == Some(Ask::Instruction)
                                && words_at_most(units[i].text, MAX_TRAILING_INSTRUCTION_WORDS)
                        })
                };
                match last_question {
                    Some(q) if ends_on(q) => q,
                    _ if last_asking + 1 == units.len() => last_asking,
                    _ => {
                        let unit = units[last_asking];
                        let following: usize = units[last_asking + 1..]
                            .iter()
                            .map(|u| word_count(u.text))
                            .sum();
                        return reject(
                        Reason::QuestionNotLast,
                        format!(
                            "the question {:?} is followed by {following} more word(s); in this category it must come last",
                            quote(unit.text)
                        ),
                    );
                    }
                }
            }
        };
        Ok(block_of(prompt, units[chosen].start))
    }
}

/// The question block that holds the unit starting at `unit_start`: from its line's label (or
/// the lone label or heading line right above it) to the end of the prompt.
fn block_of(prompt: &str, unit_start: usize) -> Asked<'_> {
    let line = line_at(prompt, unit_start);
    let opens_line = prompt
        .get(line.start..unit_start)
        .is_some_and(|before| before.trim().is_empty());
    let (mut start, text_start) = match line_label(line.text) {
        Some(label) if opens_line => (line.start, line.start + label.rest),
        _ => (unit_start, unit_start),
    };
    if let Some(above) = line_before(prompt, line).filter(|_| opens_line) {
        if is_header_line(above.text) {
            start = above.start;
        }
    }
    let text = prompt.get(text_start..).unwrap_or_default().trim();
    Asked { start, text }
}

/// A question asks one thing: a second question word joined by `and` after a first (`Which
/// vendor… and how did they…?`) asks two, and one short answer cannot key both. A follow-up
/// that opens with `And how…?` asks one.
pub fn check_single_ask(question: &str) -> Result<(), Rejection> {
    let normalised = norm(question);
    let words: Vec<&str> = normalised.split_whitespace().collect();
    let Some(first) = words.iter().position(|word| QUESTION_WORDS.contains(word)) else {
        return Ok(());
    };
    let second = words[first..]
        .windows(2)
        .find(|pair| pair[0] == "and" && QUESTION_WORDS.contains(&pair[1]));
    match second {
        Some(pair) => reject(
            Reason::TwoQuestions,
            format!(
                "the question {} asks a second thing after \"and {}\"",
                quote(question),
                pair[1]
            ),
        ),
        None => Ok(()),
    }
}

/// A question without context must ask about a particular thing: "a typical database system"
/// is none, so its "maximum CSV file size" is whatever the author made up. Neither is an
/// unnamed one: "an IAM system", "a manufacturing ERP system" or "e-commerce platforms" name a
/// kind of product, whose defaults and limits differ from one product to the next.
pub fn check_particular(question: &str) -> Result<(), Rejection> {
    let normalised = norm(question);
    let words: Vec<&str> = normalised.split_whitespace().collect();
    let typical = words
        .windows(2)
        .any(|pair| pair == ["a", "typical"])
        .then(|| "a typical".to_string());
    let asked = norm(asked_sentence(question));
    let asked: Vec<&str> = asked.split_whitespace().collect();
    match typical.or_else(|| unnamed_product(&asked)) {
        Some(thing) => reject(
            Reason::QuestionGeneric,
            format!(
                "the question {} asks about \"{thing}\", no particular thing, so it has no single answer",
                quote(question)
            ),
        ),
        None => Ok(()),
    }
}

/// The sentence of `question` that ends in its first question mark (a bloated question's
/// chatter around it, or a lead before a colon, is not what it asks); none without one (a
/// bloated question's block may be its sign-off, with the company's name).
fn asked_sentence(question: &str) -> &str {
    let Some(end) = question.find('?') else {
        return "";
    };
    let before = &question[..end];
    let start = [". ", "! ", ": ", "\n"]
        .iter()
        .filter_map(|stop| before.rfind(stop).map(|at| at + stop.len()))
        .max()
        .unwrap_or(0);
    &question[start..=end]
}

/// Words of an unnamed product: "a … system", "… platforms", "a life insurance policy" (whose
/// terms, like a product's limits, differ from one policy to the next).
const PRODUCT_NOUNS: [&str; 3] = ["system", "platform", "policy"];
/// How many words may stand between "a" and the product noun ("a manufacturing ERP system";
/// "an information security management system" names a standard's subject, not a product).
const PRODUCT_WORDS_BEFORE: usize = 2;

/// The phrase of `words` that names a kind of product and no particular one: "a" or "an" up
/// to [`PRODUCT_WORDS_BEFORE`] words before a product noun, or its plural ("systems",
/// "policies") after another word.
fn unnamed_product(words: &[&str]) -> Option<String> {
    words.iter().enumerate().find_map(|(at, word)| {
        if let Some(noun) = singular(word) {
            return (at > 0 && PRODUCT_NOUNS.contains(&noun.as_str()))
                .then(|| words[at - 1..=at].join(" "));
        }
        if !PRODUCT_NOUNS.contains(word) {
            return None;
        }
        let from = at.saturating_sub(PRODUCT_WORDS_BEFORE + 1);
        words[from..at]
            .iter()
            .rposition(|w| matches!(*w, "a" | "an"))
            .map(|article| words[from + article..=at].join(" "))
    })
}

/// The singular of a plural `word` ("policies" → "policy", "systems" → "system"); `None` for a
/// word that does not end in `s`.
fn singular(word: &str) -> Option<String> {
    match word.strip_suffix("ies") {
        Some(stem) => Some(format!("{stem}y")),
        None => word.strip_suffix('s').map(str::to_string),
    }
}

/// Words that ask for a better way, not for a fact.
const ADVICE_WORDS: [&str; 4] = ["suggest", "improve", "optimize", "optimise"];
/// "to VERB … THING": a question that asks for a way to fix a trouble ("to resolve this issue")
/// or to speed something up ("to increase the read speed"), where several ways would do.
const WAYS: [(&[&str], &[&str]); 2] = [
    (
        &["resolve", "fix", "solve"],
        &["issue", "issues", "error", "errors", "problem", "problems"],
    ),
    (
        &["increase", "boost"],
        &["speed", "performance", "throughput"],
    ),
];
/// How many words after the verb may name the thing it acts on.
const WAY_WORDS: usize = 3;

/// A question answered without a context must ask for a fact. One that asks what to do or use
/// ("Which encryption algorithm should the provider use?", "…should be used to meet HIPAA
/// compliance requirements?", "Can you suggest a way to optimize…?", "How can we fix this
/// issue?", "What should we add to the connection string to resolve this issue?", "What keyword
/// argument must be added … to increase the read speed?") has many right
/// answers, and its key is the one the author liked.
pub fn check_not_advice(question: &str) -> Result<(), Rejection> {
    let normalised = norm(question);
    let words: Vec<&str> = normalised.split_whitespace().collect();
    let how = words
        .windows(2)
        .find(|pair| pair[0] == "how" && matches!(pair[1], "can" | "could" | "should"))
        .map(|pair| pair.join(" "));
    let should = words
        .iter()
        .position(|word| *word == "should")
        .and_then(|at| {
            words[at + 1..]
                .iter()
                .take(3)
                .find(|next| matches!(**next, "use" | "used" | "do"))
        })
        .map(|verb| format!("should … {verb}"));
    let advice = words
        .iter()
        .find(|word| ADVICE_WORDS.contains(word))
        .map(|word| word.to_string());
    let way = words.windows(2).enumerate().find_map(|(at, pair)| {
        let (_, things) = WAYS
            .iter()
            .find(|(verbs, _)| pair[0] == "to" && verbs.contains(&pair[1]))?;
        words[at + 2..]
            .iter()
            .take(WAY_WORDS)
            .find(|word| things.contains(word))
            .map(|thing| format!("to {} … {thing}", pair[1]))
    });
    match how.or(should).or(advice).or(way) {
        Some(asks) => reject(
            Reason::QuestionAdvice,
            format!(
                "the question {} asks for advice (\"{asks}\"): many answers are right, and the key is the one the author liked",
                quote(question)
            ),
        ),
        None => Ok(()),
    }
}

/// Languages and tools whose name before "code", "query" or "snippet" asks for code to write.
const CODE_LANGUAGES: [&str; 16] = [
    "terraform",
    "hcl",
    "python",
    "java",
    "javascript",
    "typescript",
    "sql",
    "go",
    "bash",
    "shell",
    "yaml",
    "json",
    "ruby",
    "php",
    "kotlin",
    "powershell",
];
/// Nouns of code to write, after a language's name.
const CODE_NOUNS: [&str; 3] = ["code", "query", "snippet"];
/// Words after such a noun that make the phrase a token's name ("Which SQL query parameter…").
const TOKEN_AFTER_NOUN: [&str; 5] = ["parameter", "parameters", "option", "hint", "string"];

/// A code question's answer is one token. One that asks for code to write in a named language
/// ("What Terraform code should they add…?", "What SQL query can be added…?") asks for a block
/// with many right forms, and its key is whatever word the author picked: a kind of advice.
pub fn check_asks_token(question: &str) -> Result<(), Rejection> {
    let normalised = norm(question);
    let words: Vec<&str> = normalised.split_whitespace().collect();
    let asked = words.windows(3).enumerate().find_map(|(at, w)| {
        let after = words.get(at + 3).copied().unwrap_or_default();
        let code = matches!(w[0], "what" | "which")
            && CODE_LANGUAGES.contains(&w[1])
            && CODE_NOUNS.contains(&w[2])
            && !TOKEN_AFTER_NOUN.contains(&after);
        code.then(|| w.join(" "))
    });
    match asked {
        Some(asks) => reject(
            Reason::QuestionAdvice,
            format!(
                "the question {} asks for code to write (\"{asks}\"), not for one token: many answers are right, and the key is the one the author liked",
                quote(question)
            ),
        ),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_instructions_and_statements() {
        let cases = [
            ("How long are logs kept?", Some(Ask::Question)),
            (
                "**Question:** How long are logs kept?**",
                Some(Ask::Question),
            ),
            ("Which port does Redis use by default", Some(Ask::Question)),
            ("What the team decided is in the minutes.", None),
            ("Name the approved vendor.", Some(Ask::Instruction)),
            ("Please identify the failing line.", Some(Ask::Instruction)),
            (
                "I'd be grateful if you could confirm the default port.",
                Some(Ask::Instruction),
            ),
            (
                "This domain has a custom firewall that only allows one network to reach it.",
                None,
            ),
            ("Best regards, Priya", None),
        ];
        for (unit, expected) in cases {
            assert_eq!(ask_kind(unit), expected, "{unit}");
        }
    }

    #[test]
    fn the_question_block_starts_at_its_label_and_the_context_is_what_precedes_it() {
        let prompt = "Doc text here.\n\nQuestion: How long are logs kept?";
        let asked = find(prompt, Placement::End, false).unwrap();
        assert_eq!(&prompt[..asked.start], "Doc text here.\n\n");
        assert_eq!(asked.text, "How long are logs kept?");

        let prose = "The policy required 1.22. An update mandates 1.25. What is the minimum now?";
        let asked = find(prose, Placement::End, false).unwrap();
        assert_eq!(asked.text, "What is the minimum now?");
        assert!(prose[..asked.start].ends_with("mandates 1.25. "));

        let headed = "Facts.\n\n### Question\nWhat is the plan?";
        let asked = find(headed, Placement::End, false).unwrap();
        assert_eq!(&headed[..asked.start], "Facts.\n\n");
        assert_eq!(asked.text, "What is the plan?");
    }

    #[test]
    fn a_short_instruction_may_follow_the_final_question() {
        let prompt = "Doc.\n\nHow many days are logs kept? Answer with the number of days.";
        let asked = find(prompt, Placement::End, false).unwrap();
        assert_eq!(
            asked.text,
            "How many days are logs kept? Answer with the number of days."
        );
    }

    #[test]
    fn a_question_that_is_not_last_or_missing_is_rejected() {
        let not_last = "How long are logs kept? The retention policy was approved in May and covers every region.";
        assert_eq!(
            find(not_last, Placement::End, false).unwrap_err().reason,
            Reason::QuestionNotLast
        );
        assert!(find(not_last, Placement::Anywhere, false).is_ok());
        let statement =
            "This domain has a custom firewall that only allows one network to reach it.";
        for placement in [Placement::End, Placement::Anywhere] {
            assert_eq!(
                find(statement, placement, true).unwrap_err().reason,
                Reason::NoQuestion
            );
        }
        let instruction = "Here is the function.\nFix the off-by-one error.";
        assert_eq!(
            find(instruction, Placement::End, false).unwrap_err().reason,
            Reason::NoQuestion
        );
        assert!(find(instruction, Placement::End, true).is_ok());
    }

    /// `ask_kind` as it was before it lower-cased only the words it reads.
    fn ask_kind_lowercasing_everything(unit: &str) -> Option<Ask> {
        let text = unwrapped(unit);
        if text.ends_with('?') {
            return Some(Ask::Question);
        }
        let text = match line_label(text) {
            Some(label) => text.get(label.rest..).unwrap_or_default().trim(),
            None => text,
        };
        let lower = text.to_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !c.is_alphanumeric() && c != '\'')
            .filter(|w| !w.is_empty())
            .collect();
        let first = words.first().copied().unwrap_or_default();
        if QUESTION_WORDS.contains(&first) && !text.ends_with(['.', '!']) {
            return Some(Ask::Question);
        }
        let verb = words
            .iter()
            .find(|w| !INSTRUCTION_OPENERS.contains(w))
            .copied()
            .unwrap_or_default();
        let sentence = word_count(text) >= MIN_INSTRUCTION_WORDS;
        (sentence
            && (INSTRUCTION_VERBS.contains(&verb)
                || REQUEST_PHRASES.iter().any(|p| lower.contains(p))))
        .then_some(Ask::Instruction)
    }

    use proptest::prelude::*;

    proptest::proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..Default::default() })]

        #[test]
        fn ask_kind_reads_units_as_lower_casing_the_whole_unit_did(
            words in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(
                        QUESTION_WORDS
                            .iter()
                            .chain(INSTRUCTION_VERBS)
                            .chain(INSTRUCTION_OPENERS)
                            .copied()
                            .chain(["Please", "WHAT", "İs", "ΑΣ.Β", "tell me", "Note:", "**Q:**"])
                            .collect::<Vec<_>>()
                    ).prop_map(str::to_string),
                    "[A-Za-zİΣé'’.,:!?*()\\-]{1,12}",
                ],
                0..12,
            ),
            separators in proptest::collection::vec("[ \t.,;'\"!?-]{1,2}", 12),
        ) {
            let unit: String = words
                .iter()
                .zip(&separators)
                .map(|(w, s)| format!("{w}{s}"))
                .collect();
            proptest::prop_assert_eq!(ask_kind(&unit), ask_kind_lowercasing_everything(&unit), "{:?}", unit);
        }
    }
}
