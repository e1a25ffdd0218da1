//! Recognises the labelled snippets of a multi_document_qa item by their shape. The labelling
//! scheme is read off the text: the first label shape that recurs (`[Doc 1]`, `Source A (wiki):`,
//! `Snippet 3:`, `Document 2 —`, `## Heading`, `1.`, `**Title**`, `Source: …`) labels every
//! snippet, each snippet has a body, and labels that carry ordinals run in order.

use std::collections::BTreeSet;

use super::junk::DANGLING_WORDS;
use super::question::QUESTION_WORDS;
use super::text::{line_label, lines, word_count};
use super::{golds, in_range, reject, Reason, Rejection, Rules};
use crate::quality::grade::norm;

/// One snippet: its label as written, the text after the label, and how many words that is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet<'p> {
    pub label: &'p str,
    pub body: &'p str,
    pub body_words: usize,
}

impl Snippet<'_> {
    /// Whether the body states `key` as whole words, whatever punctuation stands between them
    /// (`the 'Finance' application` states `Finance application`).
    fn states(&self, key: &str) -> bool {
        golds::mentions(self.body, key)
    }
}

/// The shape shared by a scheme's labels.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Scheme {
    /// `[Doc 1]`, `[Source A]`, `[1]`: the word(s) in the brackets.
    Bracketed(String),
    /// `Source A (wiki):`, `Snippet 3:`, `Document 2 —`, `**Doc 1**`: the word(s) before the ordinal.
    Named(String),
    /// `## EU retention`: the heading level.
    Heading(usize),
    /// `1. Wiki page`, `2) Ticket`.
    Numbered,
    /// `**Retention standard (approved)**`.
    Bold,
    /// `Source: Confluence`: the key before the colon.
    Keyed(String),
}

impl Scheme {
    fn describe(&self) -> String {
        match self {
            Scheme::Bracketed(word) if word.is_empty() => "`[N]` labels".into(),
            Scheme::Bracketed(word) => format!("`[{word} N]` labels"),
            Scheme::Named(word) => format!("`{word} N` labels"),
            Scheme::Heading(level) => format!("`{}` headings", "#".repeat(*level)),
            Scheme::Numbered => "numbered blocks".into(),
            Scheme::Bold => "bold titles".into(),
            Scheme::Keyed(key) => format!("`{key}:` lines"),
        }
    }
}

/// An ordinal in a label: a number, a capital letter or a roman numeral.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ordinal {
    Number(u32),
    Letter(u32),
    Roman(u32),
}

impl Ordinal {
    fn read(token: &str) -> Option<Ordinal> {
        let token = token.trim_start_matches('#');
        if !token.is_empty() && token.len() <= 3 && token.chars().all(|c| c.is_ascii_digit()) {
            return token.parse().ok().map(Ordinal::Number);
        }
        if let Some(value) = roman(token) {
            return Some(Ordinal::Roman(value));
        }
        match token.as_bytes() {
            [letter] if letter.is_ascii_uppercase() => {
                Some(Ordinal::Letter(u32::from(letter - b'A') + 1))
            }
            _ => None,
        }
    }

    fn kind_and_value(self) -> (u8, u32) {
        match self {
            Ordinal::Number(n) => (0, n),
            Ordinal::Letter(n) => (1, n),
            Ordinal::Roman(n) => (2, n),
        }
    }
}

fn roman(token: &str) -> Option<u32> {
    const NUMERALS: [&str; 10] = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X"];
    let position = NUMERALS.iter().position(|n| *n == token)?;
    u32::try_from(position + 1).ok()
}

/// A line that opens with a label of some scheme.
struct LabelLine {
    scheme: Scheme,
    ordinal: Option<Ordinal>,
    start: usize,
    /// Byte offset (in the text) where the snippet's content after the label begins.
    content_start: usize,
}

/// Characters that may follow a `Word N` label.
const NAMED_DELIMITERS: &[char] = &[':', '—', '–', '-', '.', ')', '(', '|', ','];
/// Most words before the ordinal in a `Word N` label (`Meeting notes 3`).
const NAMED_MAX_WORDS: usize = 2;
/// Most words inside a bracketed label.
const BRACKET_MAX_WORDS: usize = 5;
/// Most words in a `Key:` label.
const KEYED_MAX_WORDS: usize = 3;

/// The label `line` opens with, if any; `start` is the line's offset in the text.
fn label_of(line: &str, start: usize) -> Option<LabelLine> {
    let indent = line.len() - line.trim_start().len();
    let text = line.trim();
    let at = |offset: usize| start + indent + offset;
    let found = |scheme, ordinal, content: usize| {
        Some(LabelLine {
            scheme,
            ordinal,
            start,
            content_start: at(content),
        })
    };
    if let Some(inner) = text.strip_prefix('[') {
        let close = inner.find(']')?;
        let label = inner.get(..close)?.trim();
        let linked = inner.get(close + 1..).is_some_and(|r| r.starts_with('('));
        if linked || label.is_empty() || word_count(label) > BRACKET_MAX_WORDS {
            return None;
        }
        let (word, ordinal) = split_ordinal(label);
        return found(Scheme::Bracketed(word.to_lowercase()), ordinal, close + 2);
    }
    if let Some(level) = heading_level(text) {
        let title = text.get(level..).unwrap_or_default().trim();
        let ordinal = named(title)
            .map(|(_, ordinal, _)| ordinal)
            .or_else(|| numbered(title).map(|(ordinal, _)| ordinal));
        return found(Scheme::Heading(level), ordinal, text.len());
    }
    let (unbolded, bold) = match text.strip_prefix("**") {
        Some(inner) => (inner, 2),
        None => (text, 0),
    };
    if let Some((word, ordinal, end)) = named(unbolded) {
        return found(Scheme::Named(word), Some(ordinal), bold + end);
    }
    if let Some((ordinal, end)) = numbered(unbolded) {
        return found(Scheme::Numbered, Some(ordinal), bold + end);
    }
    if bold > 0 {
        let close = unbolded.find("**")?;
        let ordinal = named(unbolded.get(..close)?).map(|(_, ordinal, _)| ordinal);
        return found(Scheme::Bold, ordinal, bold + close + 2);
    }
    let label = line_label(text)?;
    let has_content = text
        .get(label.rest..)
        .is_some_and(|rest| !rest.trim().is_empty());
    let keyed = label.capitalised
        && has_content
        && word_count(&label.key) <= KEYED_MAX_WORDS
        && !label.key.chars().any(|c| c.is_ascii_digit());
    keyed.then(|| LabelLine {
        scheme: Scheme::Keyed(label.key),
        ordinal: None,
        start,
        content_start: at(label.rest),
    })
}

fn heading_level(text: &str) -> Option<usize> {
    let level = text.len() - text.trim_start_matches('#').len();
    let spaced = text.get(level..).is_some_and(|r| r.starts_with(' '));
    ((1..=6).contains(&level) && spaced).then_some(level)
}

/// `Source A (wiki): …`, `Snippet 3:`, `Document 2 — …`: the lower-case word(s), the ordinal,
/// and where the text after the ordinal starts.
fn named(text: &str) -> Option<(String, Ordinal, usize)> {
    let mut words = Vec::new();
    let mut offset = 0;
    for token in text.split(' ') {
        let end = offset + token.len();
        let bare = token
            .trim_end_matches(NAMED_DELIMITERS)
            .trim_end_matches("**");
        if let (false, Some(ordinal)) = (words.is_empty(), Ordinal::read(bare)) {
            let after = text.get(offset + bare.len()..).unwrap_or_default();
            let delimited = after.is_empty()
                || after.starts_with(NAMED_DELIMITERS)
                || after.starts_with("**")
                || after.starts_with(" (")
                || after.starts_with(" —")
                || after.starts_with(" –")
                || after.starts_with(" -")
                || after.starts_with(" |");
            if !delimited {
                return None;
            }
            let key = words.join(" ").to_lowercase();
            return Some((key, ordinal, offset + bare.len()));
        }
        let capital = token.chars().next().is_some_and(char::is_uppercase);
        let word = token.chars().all(char::is_alphabetic);
        if words.len() >= NAMED_MAX_WORDS || !word || (words.is_empty() && !capital) {
            return None;
        }
        words.push(token);
        offset = end + 1;
    }
    None
}

/// `1. …`, `2) …`: the number and where the text after the marker starts.
fn numbered(text: &str) -> Option<(Ordinal, usize)> {
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let marker = text.get(digits..)?;
    let spaced = marker.starts_with(". ") || marker.starts_with(") ");
    if !(1..=2).contains(&digits) || !spaced {
        return None;
    }
    let number = text.get(..digits)?.parse().ok()?;
    Some((Ordinal::Number(number), digits + 2))
}

/// `Doc 1` → (`Doc`, 1); `1` → (``, 1); `Email from Finance` → (`Email from Finance`, none).
fn split_ordinal(label: &str) -> (String, Option<Ordinal>) {
    match label.rsplit_once(' ') {
        Some((word, last)) => match Ordinal::read(last) {
            Some(ordinal) => (word.trim().to_string(), Some(ordinal)),
            None => (label.to_string(), None),
        },
        None => match Ordinal::read(label) {
            Some(ordinal) => (String::new(), Some(ordinal)),
            None => (label.to_string(), None),
        },
    }
}

/// Reads the snippets of `context` (the prompt before its question).
pub fn parse<'p>(context: &'p str, rules: &Rules) -> Result<Vec<Snippet<'p>>, Rejection> {
    let labelled: Vec<LabelLine> = lines(context)
        .filter(|(_, fenced)| !fenced)
        .filter_map(|(line, _)| label_of(line.text, line.start))
        .collect();
    let recurring = labelled.iter().find(|candidate| {
        labelled
            .iter()
            .filter(|other| other.scheme == candidate.scheme)
            .count()
            >= 2
    });
    let Some(scheme) = recurring.map(|line| line.scheme.clone()) else {
        return reject(
            Reason::SnippetCount,
            format!(
                "found no labelled snippets (no label shape recurs); {}–{} snippets, each opening with a label such as `[Doc 1]` or `Source A:`, are needed",
                rules.snippets.0, rules.snippets.1
            ),
        );
    };
    let own: Vec<&LabelLine> = labelled.iter().filter(|l| l.scheme == scheme).collect();
    if !in_range(rules.snippets).contains(&own.len()) {
        return reject(
            Reason::SnippetCount,
            format!(
                "{} snippets under {}; {}–{} allowed",
                own.len(),
                scheme.describe(),
                rules.snippets.0,
                rules.snippets.1
            ),
        );
    }
    check_ordinals(&own, &scheme)?;
    let mut snippets = Vec::new();
    let mut texts: Vec<String> = Vec::new();
    for (index, label) in own.iter().enumerate() {
        let end = own.get(index + 1).map_or(context.len(), |next| next.start);
        let body = context.get(label.content_start..end).unwrap_or_default();
        let shown = context
            .get(label.start..label.content_start)
            .unwrap_or_default()
            .trim();
        let body_words = word_count(body);
        if body_words < rules.snippet_min_words {
            return reject(
                Reason::SnippetLabels,
                format!(
                    "snippet {} ({shown:?}) has {body_words} word(s) of body; at least {} needed",
                    index + 1,
                    rules.snippet_min_words
                ),
            );
        }
        let text = text_of(body);
        if let Some(earlier) = texts.iter().position(|t| *t == text) {
            return reject(
                Reason::SnippetLabels,
                format!(
                    "snippets {} and {} ({shown:?}) say the same thing word for word: one source shown twice",
                    earlier + 1,
                    index + 1
                ),
            );
        }
        texts.push(text);
        snippets.push(Snippet {
            label: shown,
            body,
            body_words,
        });
    }
    check_titles_have_bodies(&snippets)?;
    Ok(snippets)
}

/// Most words of a snippet's title line.
const TITLE_WORDS: usize = 8;
/// Snippets with a title line and a body under it that make it the set's layout.
const TITLED_SNIPPETS: usize = 2;

/// Lines of `body` that hold any text.
fn text_lines(body: &str) -> Vec<&str> {
    body.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

/// Whether `line` reads as a title: a few words, not ended as a sentence.
fn is_title(line: &str) -> bool {
    word_count(line) <= TITLE_WORDS && !line.ends_with(['.', '!', '?', ':', ';'])
}

/// Where the snippets give a title line with a body under it, one that gives only its title
/// has no body ("[Doc 1] CRM system version 2.0.1 (approved)" above three titled documents):
/// the question may name that source, but nothing in it can be read.
fn check_titles_have_bodies(snippets: &[Snippet]) -> Result<(), Rejection> {
    let titled = snippets
        .iter()
        .filter(|s| text_lines(s.body).len() > 1)
        .count();
    if titled < TITLED_SNIPPETS {
        return Ok(());
    }
    let bare = snippets.iter().position(|s| match text_lines(s.body)[..] {
        [line] => is_title(line),
        _ => false,
    });
    match bare {
        Some(index) => reject(
            Reason::SnippetLabels,
            format!(
                "snippet {} ({:?}) is a title with no body, where {titled} other snippets give a title and text under it",
                index + 1,
                snippets[index].label
            ),
        ),
        None => Ok(()),
    }
}

/// Snippets that must leave the key out (the template asks for at least two distractors).
const MIN_DISTRACTORS: usize = 2;

/// At least two snippets are distractors: snippets that state neither the key nor a gold that
/// writes it another way (`2-week` beside the key `2 weeks`). When every snippet, or every one
/// but one, states it, a reader finds the answer wherever it looks. A gold the key contains
/// (`100` of `100 TB`) is looser than the key and does not count.
pub fn check_distractors(snippets: &[Snippet], golds: &[String]) -> Result<(), Rejection> {
    let Some(key) = golds.first() else {
        return Ok(());
    };
    let written_key = key.to_lowercase();
    let forms: Vec<&String> = golds
        .iter()
        .filter(|gold| *gold == key || !written_key.contains(&gold.to_lowercase()))
        .collect();
    let without = snippets
        .iter()
        .filter(|snippet| !forms.iter().any(|form| snippet.states(form)))
        .count();
    if without >= MIN_DISTRACTORS {
        return Ok(());
    }
    reject(
        Reason::NoDistractors,
        format!(
            "{} of {} snippets state the key {key:?} or a form of it: at least {MIN_DISTRACTORS} must be distractors that do not",
            snippets.len() - without,
            snippets.len()
        ),
    )
}

/// Words by which a question picks one snippet as the one that makes a claim (`the latest
/// version`, `the highest limit`).
const CLAIM_WORDS: [&str; 11] = [
    "latest", "newest", "recent", "current", "final", "earliest", "oldest", "highest", "lowest",
    "largest", "smallest",
];

/// Words of a question that, besides its question words and the words a sentence does not end
/// on, say nothing of what it asks about.
const QUESTION_FILLER: [&str; 13] = [
    "many", "much", "does", "did", "do", "has", "have", "had", "will", "can", "it", "we", "you",
];

/// Whether `word` tells nothing of what a question asks about.
fn says_nothing(word: &str) -> bool {
    QUESTION_WORDS.contains(&word)
        || DANGLING_WORDS.contains(&word)
        || QUESTION_FILLER.contains(&word)
}

/// One snippet answers the question. A question that picks its snippet by a claim needs one
/// snippet that makes it: when a snippet that does not state the key makes it too
/// ("PPS-PRO-300 is the latest version" beside "PPS-PRO-400 is the latest version"), two
/// snippets answer. So do they when, for every snippet that states the key, a snippet without
/// it, with a number of its own, holds every word of the question that it holds: nothing in the
/// question tells them apart ("release a new version … in the next 2 weeks" beside "upgraded to version 3.0 on March
/// 15th", for "the planned release date for the new version").
pub fn check_one_answer(snippets: &[Snippet], question: &str, key: &str) -> Result<(), Rejection> {
    let asked = norm(question);
    let (keyed, others): (Vec<&Snippet>, Vec<&Snippet>) =
        snippets.iter().partition(|snippet| snippet.states(key));
    let has = |text: &str, word: &str| text.split_whitespace().any(|w| w == word);
    for claim in CLAIM_WORDS.iter().filter(|claim| has(&asked, claim)) {
        let claims = |snippet: &Snippet| has(&norm(snippet.body), claim);
        let rival = others.iter().find(|snippet| claims(snippet));
        if let (true, Some(rival)) = (keyed.iter().any(|snippet| claims(snippet)), rival) {
            return reject(
                Reason::TwoSnippetsAnswer,
                format!(
                    "the question asks for the {claim} one, and snippet {} claims it as well as \
                     the snippet that states the key {key:?}",
                    rival.label
                ),
            );
        }
    }
    let terms: BTreeSet<&str> = asked
        .split_whitespace()
        .filter(|word| {
            (word.len() >= 2 || word.bytes().any(|b| b.is_ascii_digit())) && !says_nothing(word)
        })
        .collect();
    let held = |snippet: &Snippet| -> BTreeSet<&str> {
        let body = norm(snippet.body);
        let words: BTreeSet<&str> = body.split_whitespace().collect();
        terms
            .iter()
            .copied()
            .filter(|term| words.contains(term))
            .collect()
    };
    let rival_of = |keyed: &Snippet| {
        let pointed = held(keyed);
        others.iter().copied().find(|snippet| {
            text_of(snippet.body).bytes().any(|b| b.is_ascii_digit())
                && held(snippet).is_superset(&pointed)
        })
    };
    let rivals: Option<Vec<(&Snippet, &Snippet)>> = keyed
        .iter()
        .map(|&keyed| rival_of(keyed).map(|rival| (keyed, rival)))
        .collect();
    match rivals.as_deref() {
        Some([(keyed, rival), ..]) => reject(
            Reason::TwoSnippetsAnswer,
            format!(
                "snippet {} holds every word of the question that snippet {} (which states the \
                 key {key:?}) holds, and a number of its own",
                rival.label, keyed.label
            ),
        ),
        _ => Ok(()),
    }
}

/// What a snippet's body says, as the grader reads text: below its title line when it has one
/// (`[Doc 3] Claims system, 2024` over the text), else the whole body.
fn text_of(body: &str) -> String {
    let body = body.trim();
    let text = match body.split_once('\n') {
        Some((_, below)) if !below.trim().is_empty() => below,
        _ => body,
    };
    norm(text)
}

/// Labels that carry ordinals run 1, 2, 3… (or A, B, C…, or I, II, III…); a scheme's labels
/// either all carry one or none does.
fn check_ordinals(own: &[&LabelLine], scheme: &Scheme) -> Result<(), Rejection> {
    let with = own.iter().filter(|l| l.ordinal.is_some()).count();
    if with == 0 {
        return Ok(());
    }
    if with != own.len() {
        return reject(
            Reason::SnippetLabels,
            format!(
                "{with} of {} {} carry a number or letter and the others do not",
                own.len(),
                scheme.describe()
            ),
        );
    }
    let mut expected: Option<(u8, u32)> = None;
    for (index, label) in own.iter().enumerate() {
        let Some(ordinal) = label.ordinal else {
            continue;
        };
        let (kind, value) = ordinal.kind_and_value();
        let ok = match expected {
            None => value <= 1,
            Some((expected_kind, expected_value)) => {
                kind == expected_kind && value == expected_value
            }
        };
        if !ok {
            return reject(
                Reason::SnippetLabels,
                format!(
                    "the {} do not run in order: snippet {} is numbered {value}",
                    scheme.describe(),
                    index + 1
                ),
            );
        }
        expected = Some((kind, value + 1));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(context: &str) -> Result<Vec<String>, String> {
        parse(context, &Rules::default())
            .map(|s| s.iter().map(|s| s.label.to_string()).collect())
            .map_err(|r| r.to_string())
    }

    const BODY: &str = "Audit logs are kept for 400 days in the EU cluster.";

    /// `labels`, each over a body of its own (snippets that say the same thing are rejected).
    fn with(labels: &[&str], separator: &str) -> String {
        labels
            .iter()
            .enumerate()
            .map(|(n, l)| format!("{l}{separator}{BODY} Revision {n}."))
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    #[test]
    fn every_recurring_label_shape_is_a_scheme() {
        let schemes: &[(&[&str], &str)] = &[
            (&["[Doc 1]", "[Doc 2]", "[Doc 3]", "[Doc 4]"], " "),
            (&["[1]", "[2]", "[3]", "[4]", "[5]"], " "),
            (
                &[
                    "Source A (wiki):",
                    "Source B (ticket):",
                    "Source C (email):",
                    "Source D (minutes):",
                ],
                " ",
            ),
            (
                &["Snippet 1:", "Snippet 2:", "Snippet 3:", "Snippet 4:"],
                "\n",
            ),
            (
                &[
                    "Document 1 — Policy",
                    "Document 2 — Minutes",
                    "Document 3 — Ticket",
                    "Document 4 — Email",
                ],
                "\n",
            ),
            (
                &["## EU policy", "## US policy", "## Minutes", "## Ticket"],
                "\n",
            ),
            (
                &["1. Wiki page", "2. Ticket", "3. Email", "4. Minutes"],
                "\n",
            ),
            (
                &[
                    "**Retention standard**",
                    "**Board minutes**",
                    "**Rejected proposal**",
                    "**Sizing note**",
                ],
                "\n",
            ),
            (
                &[
                    "Source: Confluence",
                    "Source: Jira",
                    "Source: Email",
                    "Source: Minutes",
                ],
                "\n",
            ),
            (
                &["**Doc I**", "**Doc II**", "**Doc III**", "**Doc IV**"],
                "\n",
            ),
        ];
        for (names, separator) in schemes {
            let context = format!("Here are the excerpts:\n\n{}", with(names, separator));
            assert_eq!(
                labels(&context).map(|l| l.len()),
                Ok(names.len()),
                "{context}"
            );
        }
    }

    #[test]
    fn the_first_recurring_scheme_wins_over_lists_inside_bodies() {
        let context = format!(
            "[Doc 1] Steps\n1. Open settings\n2. Save\n\n[Doc 2] {BODY}\n\n[Doc 3] Backups run nightly at two.\n\n[Doc 4] Archives move to cold storage."
        );
        assert_eq!(
            labels(&context).unwrap(),
            ["[Doc 1]", "[Doc 2]", "[Doc 3]", "[Doc 4]"]
        );
    }

    #[test]
    fn counts_order_and_bodies_are_checked() {
        let three = with(&["[Doc 1]", "[Doc 2]", "[Doc 3]"], " ");
        assert!(labels(&three)
            .unwrap_err()
            .starts_with("snippet_count: 3 snippets"));
        let seven: Vec<String> = (1..=7).map(|n| format!("Snippet {n}:")).collect();
        let seven: Vec<&str> = seven.iter().map(String::as_str).collect();
        assert!(labels(&with(&seven, " "))
            .unwrap_err()
            .contains("7 snippets"));
        let skipped = with(&["Source A:", "Source B:", "Source D:", "Source E:"], " ");
        assert!(labels(&skipped)
            .unwrap_err()
            .contains("do not run in order"));
        let bodiless = format!(
            "{}\n\n[Doc 4]",
            with(&["[Doc 1]", "[Doc 2]", "[Doc 3]"], " ")
        );
        assert!(labels(&bodiless).unwrap_err().contains("snippet 4"));
        assert!(labels(BODY)
            .unwrap_err()
            .contains("found no labelled snippets"));
    }

    #[test]
    fn markdown_links_and_prose_are_not_labels() {
        assert!(label_of("[the runbook](https://wiki) says so", 0).is_none());
        assert!(label_of("Section A of the contract applies.", 0).is_none());
        assert!(label_of("region: eu-west-1", 0).is_none());
    }
}
