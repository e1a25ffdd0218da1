//! Realistic fake model output for the integration tests' fake Batch API. The responder calls
//! these functions with the category, domain, item count and request sequence number of each
//! authoring request, and with the prompt of each verifier request. Everything is deterministic
//! in its arguments: the same request always gets the same bytes.
//!
//! - `author_reply`: `count` enterprise items that all pass validation under `Rules::default()`,
//!   varied by domain, seq and position (different entities, wording and numbers), sometimes
//!   wrapped in a code fence, a `<think>` block or prose.
//! - `verifier_reply`: re-derives a reasoning item's answer from its prompt text (each number is
//!   found by the unit or words around it) and writes a worked solution ending `EXPR:`/`ANSWER:`.
//! - `planted_author_reply`, `broken_reply`, `truncated_author_reply`: replies with known defects.
//! - `wrong_key_items` / `wrong_key_reasoning_reply`: reasoning items whose keys need repair.
//! - `panel_answer`: a careful panel model's answer to a prompt these functions wrote: the true
//!   result of a reasoning problem, else the key the item was authored with.

mod code;
mod conversational;
mod documents;
mod domains;
mod factual;
mod memory_recall;
mod memory_update;
mod planted;
mod reasoning;
mod snippets;
mod surface;

use code::*;
use conversational::*;
use documents::*;
use domains::*;
use factual::*;
use memory_recall::*;
use memory_update::*;
use planted::*;
use reasoning::*;
use saseval_gen::quality::grade::graded;
use serde_json::{json, Value};
use snippets::*;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, OnceLock};
use surface::*;

// =============================================================================================
// Public API
// =============================================================================================

/// A JSON authoring reply with `count` valid items of `category` for `domain`. Depending on `seq`
/// the JSON is bare, fenced, preceded by a `<think>` block, or surrounded by prose.
pub fn author_reply(category: &str, domain: &str, count: usize, seq: usize) -> String {
    let items: Vec<Value> = (0..count)
        .map(|index| {
            let item = authored_item(category, domain, seq, index, count);
            restyled(category, item, &Surface::drawn(category, seq, index)).to_value()
        })
        .collect();
    wrap(&remembered(category, json!({ "items": items })), seq)
}

/// Like `author_reply`, but every dialog uses the speaker labels `asker` and `answerer` (as a
/// model does when its template names them), e.g. `("User:", "Assistant:")`.
pub fn author_reply_with_labels(
    category: &str,
    domain: &str,
    count: usize,
    seq: usize,
    labels: (&str, &str),
) -> String {
    let items: Vec<Value> = (0..count)
        .map(|index| {
            let item = authored_item(category, domain, seq, index, count);
            let surface = Surface {
                dialog: labels,
                ..Surface::drawn(category, seq, index)
            };
            restyled(category, item, &surface).to_value()
        })
        .collect();
    wrap(&remembered(category, json!({ "items": items })), seq)
}

/// How `verifier_reply` answers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum VerifierStyle {
    /// The true answer.
    Correct,
    /// The true answer times the factor (the EXPR line agrees with it).
    WrongBy(f64),
    /// An `ANSWER:` line without a number.
    Unparseable,
    /// A worked solution with neither an `EXPR:` nor an `ANSWER:` line.
    NoAnswerLine,
    /// `EXPR:` evaluates to the true answer but `ANSWER:` says twice that.
    ExprMismatch,
}

/// A verifier's reply to a request containing `prompt` (the item's prompt, or a whole verifier
/// request message around it). The problem kind is recognised by a phrase every template of that
/// kind uses (`requests per second`, `availability`, `acquisition cost`, `per hour`, `percentage
/// increase`), and each quantity by the unit or words around it, so other digits in the message
/// are ignored; a prompt of no known kind gets a reply with no `ANSWER:` line. Money answers are
/// plain numbers (`1234.5`), durations carry their unit (`30.7 minutes`, `14 months`), counts and
/// percentages are bare (`12`, `4500`).
pub fn verifier_reply(prompt: &str, style: VerifierStyle) -> String {
    let Some(solution) = solve(prompt) else {
        return "I could not identify the quantities this problem depends on, so I cannot \
                compute a reliable answer."
            .to_string();
    };
    let mut text = String::from("Let me work through this step by step.\n\n");
    for (number, step) in solution.steps.iter().enumerate() {
        text.push_str(&format!("{}. {step}\n", number + 1));
    }
    text.push('\n');
    let expr = &solution.expr;
    match style {
        VerifierStyle::Correct => {
            text.push_str(&format!(
                "EXPR: {expr}\nANSWER: {}\n",
                solution.answer(solution.value)
            ));
        }
        VerifierStyle::WrongBy(factor) => {
            text.push_str(&format!(
                "EXPR: ({expr}) * {}\nANSWER: {}\n",
                plain_number(factor),
                solution.answer(solution.value * factor)
            ));
        }
        VerifierStyle::Unparseable => {
            text.push_str(&format!(
                "EXPR: {expr}\nANSWER: it depends on assumptions the problem leaves open\n"
            ));
        }
        VerifierStyle::NoAnswerLine => {
            text.push_str(&format!(
                "So the result comes to {}.\n",
                solution.answer(solution.value)
            ));
        }
        VerifierStyle::ExprMismatch => {
            text.push_str(&format!(
                "EXPR: {expr}\nANSWER: {}\n",
                solution.answer(solution.value * 2.0)
            ));
        }
    }
    text
}

/// A reply mixing good items with planted defects, and `(item index, reason code)` for each
/// planted one: the code `validate` must reject it with (`not_bloated` comes from
/// `check_bloated`: that item has fewer than `min_bloated_words` words, so it fails whatever the
/// plain twin's median; every other code from `fields_from_value` or `check_item`). Items not
/// listed are valid.
pub fn planted_author_reply(
    category: &str,
    domain: &str,
    seq: usize,
) -> (String, Vec<(usize, &'static str)>) {
    let good = |index: usize| authored_item(category, domain, seq, index, PLANTED_SLOTS);
    let mut items: Vec<(Value, Option<&'static str>)> = vec![(good(0).to_value(), None)];
    for (value, code) in planted_items(category, domain, seq) {
        items.push((value, Some(code)));
    }
    items.push((good(1).to_value(), None));
    let planted = items
        .iter()
        .enumerate()
        .filter_map(|(index, (_, code))| code.map(|code| (index, code)))
        .collect();
    let values: Vec<Value> = items.into_iter().map(|(value, _)| value).collect();
    let reply = remembered(category, json!({ "items": values }));
    (wrap(&reply, seq), planted)
}

/// Whole replies that yield no item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokenReply {
    /// Prose only.
    NoJson,
    /// A `<think>` block that never closes (the token limit hit while thinking).
    OnlyThinking,
    /// Cut off inside the first item.
    TruncatedMidItem,
}

impl BrokenReply {
    pub const ALL: [BrokenReply; 3] = [
        BrokenReply::NoJson,
        BrokenReply::OnlyThinking,
        BrokenReply::TruncatedMidItem,
    ];

    /// The `ReplyError` code parsing this reply must give.
    pub fn code(self) -> &'static str {
        match self {
            BrokenReply::NoJson => "no_json",
            BrokenReply::OnlyThinking => "only_thinking",
            BrokenReply::TruncatedMidItem => "truncated",
        }
    }
}

pub fn broken_reply(kind: BrokenReply) -> String {
    match kind {
        BrokenReply::NoJson => "I'm sorry, but I can't produce those items right now. Could you \
            tell me more about the audience for this benchmark before I write the questions?"
            .to_string(),
        BrokenReply::OnlyThinking => "<think>\nThe user wants enterprise questions with short \
            golds. Let me start with a capacity problem: peak traffic, per-pod throughput, \
            headroom. Then a retention question. I need to make sure the gold does not appear in \
            the prompt, so I should"
            .to_string(),
        BrokenReply::TruncatedMidItem => "```json\n{\"items\": [{\"prompt\": \"Which port does \
            a default PostgreSQL server listen on for client conn"
            .to_string(),
    }
}

/// A reply cut off (as with `finish_reason: "length"`) in the middle of its last item, and the
/// number of complete, valid items before the cut (`count - 1`). `count` must be at least 1.
pub fn truncated_author_reply(
    category: &str,
    domain: &str,
    count: usize,
    seq: usize,
) -> (String, usize) {
    let complete: Vec<String> = (0..count.saturating_sub(1))
        .map(|index| {
            authored_item(category, domain, seq, index, count)
                .to_value()
                .to_string()
        })
        .collect();
    let last = authored_item(category, domain, seq, count.saturating_sub(1), count);
    let half: String = last
        .prompt
        .chars()
        .take(last.prompt.chars().count() / 2)
        .collect();
    let cut = format!(
        "{{\"prompt\": {}",
        json!(half).to_string().trim_end_matches('"')
    );
    let mut elements = complete.clone();
    elements.push(cut);
    (
        format!("{{\"items\": [{}", elements.join(", ")),
        complete.len(),
    )
}

/// What a reasoning item's authored key is, compared with the true answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// The key is numerically wrong; repair must replace it with `true_answer`.
    Wrong,
    /// The key is right but formatted differently (`$1,234.50` vs the verifier's `1234.5`);
    /// repair must keep it.
    FormattingOnly,
    /// A percentage question whose answer is a large integer (e.g. 4500); the key is the true
    /// answer, and the item should be flagged for review.
    IllPosed,
    /// The key is right and written like the verifier writes it.
    Correct,
}

/// One reasoning item of `wrong_key_items`, with what the test needs to know about it.
#[derive(Debug, Clone, PartialEq)]
pub struct WrongKeyItem {
    pub prompt: String,
    pub golds: Vec<String>,
    /// What `verifier_reply(prompt, Correct)` answers.
    pub true_answer: f64,
    pub kind: KeyKind,
}

/// Reasoning items, in this order: two with wrong keys (capacity without its spares; a monthly
/// bill computed with 720 hours instead of 730), one formatting-only key, one ill-posed
/// percentage item, one correct item. All pass validation.
pub fn wrong_key_items(domain: &str, seq: usize) -> Vec<WrongKeyItem> {
    let seed = |index: usize, attempt: usize| {
        Pick::new(&[
            "wrong-key",
            domain,
            &seq.to_string(),
            &index.to_string(),
            &attempt.to_string(),
        ])
    };
    let build = |index: usize, make: &dyn Fn(&mut Pick, &Ctx) -> Option<WrongKeyItem>| {
        (0..MAX_ATTEMPTS)
            .find_map(|attempt| {
                let mut pick = seed(index, attempt);
                let ctx = Ctx::new(&mut pick, domain, seq * 5 + index + attempt * 7);
                make(&mut pick, &ctx).filter(|item| !graded(&item.prompt, &item.golds))
            })
            .unwrap_or_else(|| panic!("no wrong-key item {index} for {domain}/{seq}"))
    };
    vec![
        build(0, &|pick, ctx| {
            let problem = capacity(pick, ctx);
            let spares = problem.spares;
            let forgot = problem.value - spares as f64;
            Some(WrongKeyItem {
                golds: vec![
                    plain_number(forgot),
                    format!("{} {}", plain_number(forgot), problem.unit_plural),
                ],
                prompt: problem.prompt,
                true_answer: problem.value,
                kind: KeyKind::Wrong,
            })
        }),
        build(1, &|pick, ctx| {
            let problem = monthly_cost(pick, ctx);
            let wrong_cents = problem.cents_with_hours(720);
            Some(WrongKeyItem {
                golds: money_golds(wrong_cents),
                prompt: problem.prompt,
                true_answer: problem.cents as f64 / 100.0,
                kind: KeyKind::Wrong,
            })
        }),
        build(2, &|pick, ctx| {
            let problem = monthly_cost(pick, ctx);
            let ends_in_ten_cents = problem.cents % 10 == 0 && problem.cents % 100 != 0;
            ends_in_ten_cents.then(|| {
                let padded = format!(
                    "{}.{:02}",
                    grouped(problem.cents / 100),
                    problem.cents % 100
                );
                WrongKeyItem {
                    golds: vec![format!("${padded}"), padded],
                    true_answer: problem.cents as f64 / 100.0,
                    prompt: problem.prompt,
                    kind: KeyKind::FormattingOnly,
                }
            })
        }),
        build(3, &|pick, ctx| {
            let problem = growth(pick, ctx);
            Some(WrongKeyItem {
                golds: vec![
                    format!("{}%", problem.percent),
                    format!("{} percent", problem.percent),
                ],
                true_answer: problem.percent as f64,
                prompt: problem.prompt,
                kind: KeyKind::IllPosed,
            })
        }),
        build(4, &|pick, ctx| {
            let problem = capacity(pick, ctx);
            Some(WrongKeyItem {
                golds: vec![plain_number(problem.value)],
                true_answer: problem.value,
                prompt: problem.prompt,
                kind: KeyKind::Correct,
            })
        }),
    ]
}

/// `wrong_key_items` as a reasoning authoring reply (items in the same order).
pub fn wrong_key_reasoning_reply(domain: &str, seq: usize) -> String {
    let items: Vec<Value> = wrong_key_items(domain, seq)
        .into_iter()
        .map(|item| json!({ "prompt": item.prompt, "golds": item.golds }))
        .collect();
    wrap(&remembered("reasoning", json!({ "items": items })), seq)
}

// =============================================================================================
// Determinism and shared helpers
// =============================================================================================

/// The `count` assumed for the slots of planted replies.
const PLANTED_SLOTS: usize = 8;

/// Attempts at drawing an item whose gold does not leak into its prompt before giving up.
const MAX_ATTEMPTS: usize = 256;

/// A small deterministic generator (FNV-1a seed, splitmix64 steps).
struct Pick(u64);

impl Pick {
    fn new(parts: &[&str]) -> Pick {
        let mut hash = 0xcbf2_9ce4_8422_2325_u64;
        for part in parts {
            for byte in part.bytes().chain([0xff]) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
        }
        Pick(hash)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn one<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    fn item<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }

    /// `n` distinct indices below `len`, in drawn order.
    fn distinct(&mut self, n: usize, len: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..len).collect();
        for i in (1..len).rev() {
            order.swap(i, self.below(i + 1));
        }
        order.truncate(n);
        order
    }
}

/// One authored item as the reply carries it.
#[derive(Debug, Clone)]
struct Item {
    prompt: String,
    golds: Vec<String>,
    durable: Option<Vec<String>>,
    stale: Option<Vec<String>>,
}

impl Item {
    fn plain(prompt: String, golds: Vec<String>) -> Item {
        Item {
            prompt,
            golds,
            durable: None,
            stale: None,
        }
    }

    fn to_value(&self) -> Value {
        let mut value = json!({ "prompt": self.prompt, "golds": self.golds });
        if let (Some(object), Some(durable)) = (value.as_object_mut(), &self.durable) {
            object.insert("durable".into(), json!(durable));
            object.insert(
                "stale".into(),
                json!(self.stale.clone().unwrap_or_default()),
            );
        }
        value
    }
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|value| value.to_string()).collect()
}

/// The keys an authored prompt was written with, and whether it is a reasoning problem.
type Authored = (BTreeSet<String>, bool);

/// Every prompt an authoring reply of this process held, with its first golds and whether it is
/// a reasoning problem: what the fake panel answers. The generators are deterministic, so a test that resumes on a new fake (whose
/// authoring replies come from the cache) still finds the prompts its first fake wrote. Tests
/// run side by side in one process, and one test's planted reply may hold another's prompt with
/// another key, so a prompt keeps every key it was written with.
fn authored_keys() -> &'static Mutex<HashMap<String, Authored>> {
    static KEYS: OnceLock<Mutex<HashMap<String, Authored>>> = OnceLock::new();
    KEYS.get_or_init(Mutex::default)
}

/// Records the items of `reply` (an authoring reply of `category`) and returns it.
fn remembered(category: &str, reply: Value) -> Value {
    let reasoning = category.ends_with("reasoning");
    let items = reply.get("items").and_then(Value::as_array);
    let mut keys = authored_keys().lock().unwrap_or_else(|e| e.into_inner());
    for item in items.into_iter().flatten() {
        let prompt = item.get("prompt").and_then(Value::as_str);
        let gold = item.pointer("/golds/0").and_then(Value::as_str);
        if let (Some(prompt), Some(gold)) = (prompt, gold) {
            let entry = keys.entry(prompt.to_string()).or_default();
            entry.0.insert(gold.to_string());
            entry.1 = reasoning;
        }
    }
    drop(keys);
    reply
}

/// How a careful panel model answers `prompt`: the true result of a reasoning problem it can
/// solve, else the key of the authored item with that prompt (each of its keys, when replies of
/// tests running beside each other wrote it with several); `None` for a prompt no authoring
/// reply of this process wrote (such as a question asked without its context).
pub fn panel_answer(prompt: &str) -> Option<String> {
    let authored = authored_keys().lock().unwrap_or_else(|e| e.into_inner());
    let (keys, reasoning) = authored.get(prompt)?;
    if *reasoning {
        if let Some(solution) = solve(prompt) {
            return Some(solution.answer(solution.value));
        }
    }
    Some(keys.iter().cloned().collect::<Vec<_>>().join(" / "))
}

fn wrap(reply: &Value, seq: usize) -> String {
    let pretty = serde_json::to_string_pretty(reply).unwrap_or_default();
    match seq % 4 {
        0 => reply.to_string(),
        1 => format!("```json\n{pretty}\n```"),
        2 => format!(
            "<think>\nThe user wants items in a JSON object. Each gold must be short and must \
             not appear in its own prompt. I will vary the companies and numbers.\n</think>\n\n{pretty}"
        ),
        _ => format!(
            "Here are the items you asked for.\n\n```json\n{pretty}\n```\n\nEach gold lists \
             short variants of a single answer."
        ),
    }
}

/// `12`, `43.2`, `2.82`: at most four decimals, trailing zeros dropped.
fn plain_number(value: f64) -> String {
    let text = format!("{value:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_string()
    } else {
        text.to_string()
    }
}

/// `1234567` → `1,234,567`.
fn grouped(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `1,234.50`, or `1,200` for whole dollars.
fn dollars_text(cents: u64) -> String {
    match cents % 100 {
        0 => grouped(cents / 100),
        rest => format!("{}.{rest:02}", grouped(cents / 100)),
    }
}

/// Variants of a dollar amount: `$1,721.92`, `1,721.92`, `1721.92`; `$812.40`, `812.4`;
/// `$1,200`, `1,200`, `1200`.
fn money_golds(cents: u64) -> Vec<String> {
    let (dollars, rest) = (cents / 100, cents % 100);
    let fraction = match rest {
        0 => String::new(),
        r if r % 10 == 0 => format!(".{}", r / 10),
        r => format!(".{r:02}"),
    };
    let with_cents = if rest == 0 {
        grouped(dollars)
    } else {
        format!("{}.{rest:02}", grouped(dollars))
    };
    let mut golds = vec![
        format!("${with_cents}"),
        format!("{}{fraction}", grouped(dollars)),
        format!("{dollars}{fraction}"),
    ];
    golds.dedup();
    golds
}
