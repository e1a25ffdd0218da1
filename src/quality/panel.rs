//! The audit panel's verdict on an item. The SAS protocol grades a frozen panel's answers against
//! `golds` with the card's substring grader, so a key that no careful model reaches (a
//! distractor of its own context, the wrong one of two values, a format natural answers do not
//! match) makes the benchmark wrong in a way no text rule can see. Here an answer reaches a key
//! that is not a number when it states a gold as whole words, as the grader reads them (the
//! grader also credits `error` inside `errors`, which names another argument); a numeric key the
//! panel reaches only under the repair stage's numeric compare gets the surface variants that
//! make those answers grade; an item answered correctly without its context does not test
//! context handling; and a gold set that grades answers to other questions correct is too
//! lenient.

use crate::quality::grade::{graded, lenient_bare_number, norm, states};
use crate::quality::numeric::{self, Quantity};
use crate::stages::item::{Candidate, Category};
use crate::stages::reply;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// Ends the custom_id of a context-probe request: `audit/<item-id>/<model>/no-context`.
pub const NO_CONTEXT_SUFFIX: &str = "/no-context";

/// The custom_id of `model`'s answer to item `item_id`, or to its question alone (`probe`).
pub fn custom_id(item_id: &str, model: &str, probe: bool) -> String {
    let suffix = if probe { NO_CONTEXT_SUFFIX } else { "" };
    format!("audit/{item_id}/{model}{suffix}")
}

/// Why the audit flags an item (`_needs_review`), as `audit_report.jsonl` and the card name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flag {
    /// Fewer than `audit.min_correct` panel models reach the key.
    PanelDisagrees,
    /// The panel reaches the numeric key under numeric compare, but no surface variant makes
    /// those answers grade (or the variant would appear in the prompt).
    GoldFormat,
    /// A panel model (a majority when `audit.min_correct = 0`) answers correctly from the
    /// question alone.
    ContextNotNeeded,
    /// The golds grade a noticeable share of the answers to other items correct (items that
    /// share a gold, which ask for the same value, excepted).
    GoldTooLenient,
}

impl Flag {
    pub const ALL: [Flag; 4] = [
        Flag::PanelDisagrees,
        Flag::GoldFormat,
        Flag::ContextNotNeeded,
        Flag::GoldTooLenient,
    ];

    pub fn code(self) -> &'static str {
        match self {
            Flag::PanelDisagrees => "panel_disagrees",
            Flag::GoldFormat => "gold_format",
            Flag::ContextNotNeeded => "context_not_needed",
            Flag::GoldTooLenient => "gold_too_lenient",
        }
    }

    pub fn meaning(self) -> &'static str {
        match self {
            Flag::PanelDisagrees => "fewer than `audit.min_correct` panel models reach the key",
            Flag::GoldFormat => {
                "the panel reaches the numeric key only under numeric compare, and no surface \
                 variant of it grades those answers"
            }
            Flag::ContextNotNeeded => {
                "a panel model (a majority when `audit.min_correct = 0`) answers correctly with \
                 the context removed"
            }
            Flag::GoldTooLenient => {
                "the golds grade answers to other items' questions correct (items that share a \
                 gold excepted)"
            }
        }
    }
}

/// One panel model's answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelAnswer {
    pub model: String,
    /// The answer as the model wrote it, reasoning removed; `None` when it gave none.
    pub answer: Option<String>,
    /// Why there is no answer (a failed request, a reply without content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The answer reaches the key ([`reaches`]), which the card's grader then counts correct.
    pub correct: bool,
    /// Numeric items: the number the answer means agrees with the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numeric: Option<bool>,
}

/// The number a numeric item's key means: its first gold that parses.
pub fn key_quantity(item: &Candidate) -> Option<Quantity> {
    item.golds.iter().find_map(|g| numeric::parse_quantity(g))
}

/// Grades one reply (`Err` holds why there is none) against `item`'s golds, as the SAS protocol
/// will, and for a numeric item also by the number the answer means.
pub fn grade(item: &Candidate, model: &str, reply: Result<&str, String>) -> PanelAnswer {
    let text = match reply {
        Ok(text) => reply::without_thinking(text).text.trim().to_string(),
        Err(error) => {
            return PanelAnswer {
                model: model.to_string(),
                answer: None,
                error: Some(error),
                correct: false,
                numeric: None,
            }
        }
    };
    if text.is_empty() {
        return PanelAnswer {
            model: model.to_string(),
            answer: None,
            error: Some("the reply is empty once reasoning is removed".into()),
            correct: false,
            numeric: None,
        };
    }
    let numeric = item.category.is_numeric().then(|| {
        let rate = numeric::is_rate_question(&item.prompt);
        match (key_quantity(item), numeric::parse_quantity(&text)) {
            (Some(key), Some(answer)) => numeric::agree(&answer, &key, rate),
            _ => false,
        }
    });
    PanelAnswer {
        model: model.to_string(),
        correct: reaches(item, &text),
        answer: Some(text),
        error: None,
        numeric,
    }
}

/// Whether `answer` gives `item`'s key. A numeric key is reached as the grader finds it, since
/// its answers are also compared by the number they mean and `1,234.5` stands inside a correct
/// `$1,234.50`; any other key must be stated as whole words ([`states`]).
fn reaches(item: &Candidate, answer: &str) -> bool {
    if item.category.is_numeric() {
        graded(answer, &item.golds)
    } else {
        states(answer, &item.golds)
    }
}

/// What the audit decided about one item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Panel answers that reach the key (after any added variants).
    pub correct: usize,
    /// Context-probe answers that reach the key, when the item was probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_correct: Option<usize>,
    /// Surface variants of the numeric key added so that correct answers grade (not a repair:
    /// the value is unchanged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added_golds: Vec<String>,
    pub flags: Vec<Flag>,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.flags.is_empty()
    }
}

/// Judges `item` from its panel `answers` (and, for a probed item, the answers to its question
/// alone). A numeric key the panel reaches only under numeric compare gets the canonical surface
/// variants of its value; `answers` are then graded again against the new golds.
pub fn judge(
    item: &mut Candidate,
    answers: &mut [PanelAnswer],
    probe: Option<&[PanelAnswer]>,
    min_correct: usize,
) -> Verdict {
    let mut verdict = Verdict {
        correct: count_correct(answers),
        probe_correct: probe.map(count_correct),
        added_golds: Vec::new(),
        flags: Vec::new(),
    };
    if verdict.correct < min_correct {
        let reached = answers.iter().filter(|a| a.numeric == Some(true)).count();
        if item.category.is_numeric() && reached >= min_correct.max(1) {
            match variants_that_grade(item, answers, min_correct) {
                Some(added) => {
                    item.golds.extend(added.iter().cloned());
                    for answer in answers.iter_mut() {
                        answer.correct = answer
                            .answer
                            .as_deref()
                            .is_some_and(|text| graded(text, &item.golds));
                    }
                    verdict.correct = count_correct(answers);
                    verdict.added_golds = added;
                }
                None => verdict.flags.push(Flag::GoldFormat),
            }
        } else {
            verdict.flags.push(Flag::PanelDisagrees);
        }
    }
    let threshold = probe_threshold(answers.len(), min_correct);
    if verdict.probe_correct.is_some_and(|n| n >= threshold) {
        verdict.flags.push(Flag::ContextNotNeeded);
    }
    verdict
}

/// Context-probe answers that reach the key and so flag the item. One is enough when keys are
/// judged: a key some panel model reaches without the context does not test the context,
/// however many answers the item needs to pass (measured on the local profile, BENCHMARKS.md).
/// With `min_correct = 0` (rates reported, keys not judged) a majority.
fn probe_threshold(panel: usize, min_correct: usize) -> usize {
    match min_correct {
        0 => panel / 2 + 1,
        _ => 1,
    }
}

fn count_correct(answers: &[PanelAnswer]) -> usize {
    answers.iter().filter(|a| a.correct).count()
}

/// The canonical forms of the key's value that are not yet golds, when with them at least
/// `min_correct` answers reach the key and none of them gives the answer away in the prompt.
fn variants_that_grade(
    item: &Candidate,
    answers: &[PanelAnswer],
    min_correct: usize,
) -> Option<Vec<String>> {
    let key = key_quantity(item)?;
    let known: Vec<String> = item.golds.iter().map(|g| norm(g)).collect();
    let added: Vec<String> = numeric::canonical_golds(&key)
        .into_iter()
        .filter(|g| !known.contains(&norm(g)) && !lenient_bare_number(g))
        .collect();
    if added.is_empty() || graded(&item.prompt, &added) {
        return None;
    }
    let golds: Vec<&str> = item
        .golds
        .iter()
        .chain(&added)
        .map(String::as_str)
        .collect();
    let grading = answers
        .iter()
        .filter(|a| a.answer.as_deref().is_some_and(|text| graded(text, &golds)))
        .count();
    (grading >= min_correct).then_some(added)
}

/// Share of the other items' answers an item's golds must grade correct to be too lenient…
pub const LENIENT_SHARE: f64 = 0.02;
/// …and the fewest such answers (a small audit does not flag on one coincidence).
pub const LENIENT_MIN_HITS: usize = 3;

/// How lenient one item's golds are: the other items' answers they grade correct.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Leniency {
    pub hits: usize,
    pub others: usize,
}

impl Leniency {
    pub fn share(&self) -> f64 {
        if self.others == 0 {
            0.0
        } else {
            self.hits as f64 / self.others as f64
        }
    }

    pub fn too_lenient(&self) -> bool {
        self.hits >= LENIENT_MIN_HITS && self.share() >= LENIENT_SHARE
    }
}

/// For each item (its golds), how many of the answers to the other items it grades correct.
/// `answers` pairs each answer with the index of the item it answers. An item that shares a gold
/// with this one (normalised as the grader reads it) asks for the same value, so its answers are
/// not counted: that they hold the gold says nothing about how lenient it is. Every text is
/// normalised once; the work is items × answers substring tests, spread over the cores.
pub fn leniency(golds: &[Vec<String>], answers: &[(usize, &str)]) -> Vec<Leniency> {
    let answers: Vec<(usize, String)> = answers
        .iter()
        .map(|(item, text)| (*item, norm(text)))
        .collect();
    let indexed: Vec<(usize, Vec<String>)> = golds
        .iter()
        .enumerate()
        .map(|(item, golds)| (item, golds.iter().map(|g| norm(g)).collect()))
        .collect();
    let values: Vec<HashSet<&str>> = indexed
        .iter()
        .map(|(_, golds)| golds.iter().map(|g| g.trim()).collect())
        .collect();
    crate::util::parallel::map(
        &indexed,
        crate::util::parallel::threads(),
        |(item, golds)| {
            let others = answers
                .iter()
                .filter(|(owner, _)| owner != item && values[*owner].is_disjoint(&values[*item]));
            let mut leniency = Leniency { hits: 0, others: 0 };
            for (_, answer) in others {
                leniency.others += 1;
                if golds.iter().any(|gold| answer.contains(gold.as_str())) {
                    leniency.hits += 1;
                }
            }
            leniency
        },
    )
}

/// The categories whose items carry a context the question needs (and so get a context probe).
pub fn has_context(category: Category) -> bool {
    matches!(
        category,
        Category::LongDocumentQa
            | Category::MultiDocumentQa
            | Category::Conversational
            | Category::MemoryRecall
            | Category::MemoryUpdate
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(category: Category, prompt: &str, golds: &[&str]) -> Candidate {
        Candidate {
            id: "x".into(),
            category,
            domain: "d".into(),
            prompt: prompt.into(),
            golds: golds.iter().map(|g| g.to_string()).collect(),
            durable: None,
            stale: None,
            custom_id: "author/x".into(),
            model: "m".into(),
            round: 0,
            gold_repaired: false,
            needs_review: false,
        }
    }

    fn answers(item: &Candidate, texts: &[&str]) -> Vec<PanelAnswer> {
        texts
            .iter()
            .enumerate()
            .map(|(i, text)| grade(item, &format!("m{i}"), Ok(text)))
            .collect()
    }

    const DOC: &str = "EU logs are kept 400 days; US logs 90 days. How long are EU logs kept?";

    #[test]
    fn a_majority_reaching_the_key_passes_and_one_dissent_does_not_flag() {
        let mut doc = item(Category::LongDocumentQa, DOC, &["400 days"]);
        let mut got = answers(&doc, &["400 days.", "They are kept 400 days", "90 days"]);
        let verdict = judge(&mut doc, &mut got, None, 2);
        assert_eq!((verdict.correct, verdict.passed()), (2, true));
    }

    /// Two items of the main job (the 1.5B author; seeds 20261205 and 20261129) with their
    /// panel's real answers: a code key reached only inside a longer argument name, released
    /// as it was; and a memory key a blind answer reached only inside a longer number, flagged
    /// as answerable without its context.
    #[test]
    fn a_gold_found_only_inside_a_longer_word_does_not_reach_the_key() {
        let prompt = "Our data platform (Python 3.11, pandas 1.4.2) sometimes hangs for hours \
            when the data ingestion process fails:\n\n    def process_data(file_path):\n        \
            df = pd.read_csv(file_path)\n        df = df.dropna()\n        return df\n\nWhich \
            keyword argument must be added to the pd.read_csv call so that it gives up instead \
            of waiting indefinitely?";
        let mut code = item(
            Category::TechnicalCode,
            prompt,
            &["error", "error=", "error argument"],
        );
        let mut got = answers(&code, &["`errors='ignore'`", "timeout 10"]);
        assert!(
            graded("`errors='ignore'`", &code.golds),
            "the grader credits it"
        );
        let verdict = judge(&mut code, &mut got, None, 1);
        assert_eq!(verdict.flags, [Flag::PanelDisagrees]);

        let prompt = "Memory:\n- company: Blue Star Insurance\n- policy_type: Standard \
            Policy\n- coverage_limit: $100,000\n- premium_rate: 0.05\n- claim_handling_time: 3 \
            days\n\nUpdate from Claims Management (15 June): the claim handling time has been \
            reduced to 2 days; the premium rate has been increased to 0.06.\n\nQuestion: What is \
            the average claim handling time for Blue Star Insurance's Standard Policy?";
        let mut memory = item(Category::MemoryUpdate, prompt, &["2 days"]);
        let mut got = answers(&memory, &["2 days", "2 days"]);
        let blind = answers(
            &memory,
            &[
                "The average claim handling time for Blue Star Insurance's Standard Policy is \
                 approximately 10 minutes.",
                "12 days",
            ],
        );
        let verdict = judge(&mut memory, &mut got, Some(&blind), 1);
        assert_eq!((verdict.probe_correct, verdict.passed()), (Some(0), true));
    }

    #[test]
    fn a_key_no_majority_reaches_is_flagged() {
        let mut distractor = item(Category::LongDocumentQa, DOC, &["90 days"]);
        let mut got = answers(&distractor, &["400 days", "400 days.", "90 days"]);
        let verdict = judge(&mut distractor, &mut got, None, 2);
        assert_eq!(verdict.flags, [Flag::PanelDisagrees]);
    }

    #[test]
    fn thinking_is_removed_before_grading() {
        let doc = item(Category::LongDocumentQa, DOC, &["90 days"]);
        let answer = grade(&doc, "m", Ok("<think>not 90 days</think>400 days"));
        assert_eq!(answer.answer.as_deref(), Some("400 days"));
        assert!(!answer.correct);
        let failed = grade(&doc, "m", Err("request_failed".into()));
        assert_eq!(
            (failed.correct, failed.error.as_deref()),
            (false, Some("request_failed"))
        );
    }

    #[test]
    fn a_numeric_key_reached_in_another_format_gets_the_variants_that_grade() {
        let prompt =
            "Each of 12 seats costs $102.875 a month. What is the monthly total in dollars?";
        let mut reasoning = item(Category::Reasoning, prompt, &["1234.5"]);
        let mut got = answers(
            &reasoning,
            &["$1,234.50", "The total is $1,234.50.", "1,300"],
        );
        assert_eq!(
            count_correct(&got),
            0,
            "the plain key grades no natural answer"
        );
        let verdict = judge(&mut reasoning, &mut got, None, 2);
        assert!(verdict.passed(), "{verdict:?}");
        assert_eq!(verdict.correct, 2);
        assert!(!verdict.added_golds.is_empty());
        assert!(reasoning.golds.starts_with(&["1234.5".to_string()]));
        assert!(graded("$1,234.50", &reasoning.golds));
    }

    #[test]
    fn a_numeric_key_the_panel_contradicts_is_flagged_not_reformatted() {
        let prompt =
            "Each of 12 seats costs $102.875 a month. What is the monthly total in dollars?";
        let mut reasoning = item(Category::Reasoning, prompt, &["1300"]);
        let mut got = answers(&reasoning, &["$1,234.50", "1234.5", "1,300"]);
        let verdict = judge(&mut reasoning, &mut got, None, 2);
        assert_eq!(verdict.flags, [Flag::PanelDisagrees]);
        assert_eq!(reasoning.golds, ["1300"]);
    }

    #[test]
    fn an_item_answered_without_its_context_is_flagged() {
        let mut doc = item(Category::LongDocumentQa, DOC, &["400 days"]);
        let mut got = answers(&doc, &["400 days", "400 days", "400 days"]);
        let probe = answers(&doc, &["400 days", "Probably 400 days", "I cannot tell"]);
        let verdict = judge(&mut doc, &mut got, Some(&probe), 2);
        assert_eq!(
            (verdict.probe_correct, verdict.flags.as_slice()),
            (Some(2), &[Flag::ContextNotNeeded][..])
        );
        let blind = answers(&doc, &["I cannot tell", "90 days?", "no idea"]);
        let verdict = judge(&mut doc, &mut got, Some(&blind), 2);
        assert!(verdict.passed());
    }

    #[test]
    fn one_blind_answer_reaching_the_key_flags_the_item_whatever_the_pass_rule() {
        // A real memory item of the local profile (seed 20261205): the 0.5B answered its
        // question with the memory removed and named the billing system anyway.
        let memory = "Memory:\n- customer: E-commerce Store (XYZ)\n- billing_system: Stripe\n- payment_gateway: PayPal\n- shipping_system: UPS\n\nQuestion: What is the billing system used by this e-commerce store?";
        let mut recall = item(Category::MemoryRecall, memory, &["Stripe"]);
        let mut got = answers(&recall, &["Stripe", "Stripe"]);
        let guessed = answers(
            &recall,
            &[
                "The billing system used by this e-commerce store is Stripe.",
                "Credit card processing, per transaction",
            ],
        );
        for min_correct in [1, 2] {
            let verdict = judge(&mut recall, &mut got, Some(&guessed), min_correct);
            assert_eq!(
                verdict.flags,
                [Flag::ContextNotNeeded],
                "min_correct {min_correct}"
            );
        }
        let verdict = judge(&mut recall, &mut got, Some(&guessed), 0);
        assert!(
            verdict.passed(),
            "min_correct 0 judges no key: a majority of blind answers flags it"
        );
    }

    #[test]
    fn golds_that_grade_other_items_answers_are_too_lenient() {
        let golds = vec![
            vec!["1".to_string()],
            vec!["400 days".to_string()],
            vec!["Okta".to_string()],
            vec!["eu-west-1".to_string()],
        ];
        let texts = [
            (0, "1"),
            (1, "400 days, per clause 1.2"),
            (2, "Okta, since 2021"),
            (3, "eu-west-1 (zone 1a)"),
            (3, "region eu-west-1"),
        ];
        let found = leniency(&golds, &texts);
        assert_eq!(found[0], Leniency { hits: 4, others: 4 });
        assert!(found[0].too_lenient());
        assert_eq!(found[1].hits, 0);
        assert!(!found[3].too_lenient());
    }

    /// Run P's SSH items: the 1.5B model asked for port 22 in domain after domain (assemble keeps
    /// one as `duplicate_fact`), and every answer to one of them holds `22`. Those answers answer
    /// the same fact; they say nothing about how lenient the golds are, and counted they flagged
    /// all of them.
    #[test]
    fn answers_to_items_keyed_alike_do_not_make_golds_lenient() {
        let ssh = |golds: &[&str]| golds.iter().map(|g| g.to_string()).collect::<Vec<_>>();
        let mut golds = vec![
            ssh(&["22", "port 22", "ssh 22"]),
            ssh(&["22", "ssh 22"]),
            ssh(&["22", "port 22", "ssh 22"]),
            ssh(&["22", "ssh 22", "port 22"]),
        ];
        let mut texts = vec![
            (0, "22"),
            (0, "22 bytes"),
            (1, "22"),
            (1, "22/tcp"),
            (
                2,
                "The default port for SSH (Secure Shell) under RFC 4254 is 22.",
            ),
            (2, "22 bits"),
            (3, "22"),
            (3, "22 bits"),
        ];
        let durations: Vec<String> = (0..40).map(|n| format!("{} days", 30 + n)).collect();
        golds.extend(durations.iter().map(|d| vec![d.clone()]));
        texts.extend(
            durations
                .iter()
                .enumerate()
                .map(|(n, d)| (4 + n, d.as_str())),
        );
        let found = leniency(&golds, &texts);
        assert_eq!(
            found[0],
            Leniency {
                hits: 0,
                others: 40
            }
        );
        assert!(!found[1].too_lenient());
        assert_eq!(
            found[4],
            Leniency {
                hits: 0,
                others: 47
            }
        );
        texts.extend([(5, "22 days"), (6, "port 22"), (7, "22")]);
        let found = leniency(&golds, &texts);
        assert_eq!(
            found[0],
            Leniency {
                hits: 3,
                others: 43
            }
        );
        assert!(found[0].too_lenient());
    }
}
