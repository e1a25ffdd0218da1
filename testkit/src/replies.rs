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

use saseval_gen::quality::grade::graded;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

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

/// Every prompt an authoring reply of this process held, with its first gold and whether it is
/// a reasoning problem: what the fake panel answers. The generators are deterministic, so a test that resumes on a new fake (whose
/// authoring replies come from the cache) still finds the prompts its first fake wrote.
fn authored_keys() -> &'static Mutex<HashMap<String, (String, bool)>> {
    static KEYS: OnceLock<Mutex<HashMap<String, (String, bool)>>> = OnceLock::new();
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
            keys.insert(prompt.to_string(), (gold.to_string(), reasoning));
        }
    }
    drop(keys);
    reply
}

/// How a careful panel model answers `prompt`: the true result of a reasoning problem it can
/// solve, else the key of the authored item with that prompt; `None` for a prompt no authoring
/// reply of this process wrote (such as a question asked without its context).
pub fn panel_answer(prompt: &str) -> Option<String> {
    let keys = authored_keys().lock().unwrap_or_else(|e| e.into_inner());
    let (key, reasoning) = keys.get(prompt)?;
    if *reasoning {
        if let Some(solution) = solve(prompt) {
            return Some(solution.answer(solution.value));
        }
    }
    Some(key.clone())
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

// =============================================================================================
// Surface forms: real models write the same structure with other labels, headers, bullets and
// question prefixes. Items are generated in one canonical layout and then rewritten into a form
// drawn per request and item.
// =============================================================================================

/// Speaker labels, asker first, at the start of a dialog line.
const DIALOG_LABELS: &[(&str, &str)] = &[
    ("Customer:", "Agent:"),
    ("User:", "Assistant:"),
    ("Client:", "Support:"),
    ("**Customer:**", "**Agent:**"),
    ("Dana (customer):", "Raj (support):"),
    ("[User]:", "[Agent]:"),
    ("Caller:", "Rep:"),
];

/// What opens the final question paragraph.
const QUESTION_PREFIXES: &[&str] = &["Question: ", "Q: ", "", "**Question:** ", "Query: "];

/// The header over stored facts (none at all is one form).
const MEMORY_HEADERS: &[&str] = &[
    "Memory:\n",
    "Stored facts:\n",
    "## Account profile\n",
    "[MEMORY]\n",
    "Known about this account:\n",
    "",
];

/// How a fact line opens; `None` numbers the lines `1.`, `2.`, ….
const FACT_BULLETS: &[Option<&str>] = &[Some("- "), Some("* "), Some("• "), None, Some("")];

/// How a snippet's label line is written, from its number and its title.
const SNIPPET_STYLES: usize = 8;

fn snippet_label(style: usize, number: usize, title: &str) -> String {
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
struct Surface<'a> {
    dialog: (&'a str, &'a str),
    question_prefix: &'a str,
    memory_header: &'a str,
    bullet: Option<&'a str>,
    snippets: usize,
    /// A blank line between snippets.
    spaced: bool,
}

impl Surface<'static> {
    fn drawn(category: &str, seq: usize, index: usize) -> Surface<'static> {
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
fn restyled(category: &str, mut item: Item, surface: &Surface<'_>) -> Item {
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

fn with_question_prefix(prompt: &str, surface: &Surface<'_>) -> String {
    prompt.replacen(
        "\n\nQuestion: ",
        &format!("\n\n{}", surface.question_prefix),
        1,
    )
}

// =============================================================================================
// Domains: enterprise vocabulary keyed by words of the requested domain
// =============================================================================================

struct Flavor {
    keywords: &'static [&'static str],
    orgs: &'static [&'static str],
    systems: &'static [&'static str],
    /// kebab-case service names for code and configuration snippets.
    services: &'static [&'static str],
    /// Single-word business objects, usable in identifiers.
    entities: &'static [&'static str],
    products: &'static [&'static str],
    teams: &'static [&'static str],
}

const FLAVORS: &[Flavor] = &[
    Flavor {
        keywords: &["cloud", "devops", "kubernetes", "infra", "platform eng"],
        orgs: &[
            "Stratus Cloudworks",
            "Nimbus Platform Group",
            "Ridgeline DevOps",
            "Cirrus Compute",
        ],
        systems: &[
            "deployment pipeline",
            "Kubernetes platform",
            "artifact registry",
            "observability stack",
            "edge proxy fleet",
        ],
        services: &[
            "deploy-api",
            "build-runner",
            "artifact-store",
            "metrics-gateway",
        ],
        entities: &["deployment", "build", "release", "artifact"],
        products: &["Managed CI", "Cluster Insights", "Edge Delivery"],
        teams: &["platform team", "SRE team", "infrastructure group"],
    },
    Flavor {
        keywords: &["fintech", "payment", "bank", "financ", "lending"],
        orgs: &[
            "Keystone Payments",
            "Ledgerly",
            "Brightwater Pay",
            "Copperline Financial",
        ],
        systems: &[
            "payments gateway",
            "ledger service",
            "card authorisation service",
            "settlement pipeline",
            "fraud scoring engine",
        ],
        services: &[
            "payments-gateway",
            "ledger-api",
            "settlement-worker",
            "fraud-scorer",
        ],
        entities: &["payment", "refund", "invoice", "payout"],
        products: &["Merchant Analytics", "Instant Payouts", "Treasury Console"],
        teams: &[
            "payments platform team",
            "risk engineering team",
            "treasury operations group",
        ],
    },
    Flavor {
        keywords: &["hipaa", "health", "clinic", "medical", "patient", "care"],
        orgs: &[
            "Caremont Health",
            "Mediva Systems",
            "Northstar Clinics",
            "Halcyon Health Cloud",
        ],
        systems: &[
            "patient portal",
            "claims intake service",
            "EHR integration layer",
            "appointment scheduler",
            "lab results pipeline",
        ],
        services: &[
            "patient-portal",
            "claims-intake",
            "ehr-sync",
            "scheduler-api",
        ],
        entities: &["appointment", "referral", "encounter", "prescription"],
        products: &[
            "Care Coordination",
            "Telehealth Suite",
            "Patient Engagement",
        ],
        teams: &[
            "clinical systems team",
            "health data engineering team",
            "compliance engineering group",
        ],
    },
    Flavor {
        keywords: &[
            "logistic",
            "shipping",
            "freight",
            "supply",
            "warehouse",
            "fleet",
        ],
        orgs: &[
            "Tidewater Freight",
            "Crossdock Logistics",
            "Meridian Haulage",
            "Bluefin Shipping",
        ],
        systems: &[
            "shipment tracking service",
            "warehouse management system",
            "route optimiser",
            "carrier integration hub",
            "dock scheduling tool",
        ],
        services: &["tracking-api", "wms-sync", "route-optimizer", "carrier-hub"],
        entities: &["shipment", "pallet", "consignment", "manifest"],
        products: &["Fleet Visibility", "Yard Management", "Freight Audit"],
        teams: &[
            "logistics platform team",
            "warehouse systems team",
            "carrier integrations group",
        ],
    },
    Flavor {
        keywords: &["iam", "security", "identity", "access", "auth"],
        orgs: &[
            "Gatekeep Security",
            "Ironbridge Identity",
            "Sentinel Trust",
            "Bastion Labs",
        ],
        systems: &[
            "identity provider",
            "access review tool",
            "secrets vault",
            "privileged access gateway",
            "SSO broker",
        ],
        services: &["auth-service", "token-issuer", "vault-proxy", "scim-sync"],
        entities: &["session", "token", "role", "credential"],
        products: &["Identity Governance", "Access Analytics", "Secrets Manager"],
        teams: &[
            "identity team",
            "security engineering team",
            "access management group",
        ],
    },
    Flavor {
        keywords: &["commerce", "retail", "shop", "marketplace", "store"],
        orgs: &[
            "Cartwheel Commerce",
            "Marketlane",
            "Shopwright",
            "Basketry Retail",
        ],
        systems: &[
            "checkout service",
            "product catalogue",
            "order management system",
            "promotions engine",
            "search service",
        ],
        services: &[
            "checkout-api",
            "catalog-sync",
            "order-service",
            "promo-engine",
        ],
        entities: &["order", "cart", "coupon", "product"],
        products: &["Storefront Pro", "Loyalty Cloud", "Marketplace Connect"],
        teams: &[
            "checkout team",
            "commerce platform team",
            "merchandising systems group",
        ],
    },
    Flavor {
        keywords: &["telecom", "telco", "mobile", "network", "carrier"],
        orgs: &[
            "Arcadia Telecom",
            "Signalpath Networks",
            "Skyreach Mobile",
            "Fibrelink",
        ],
        systems: &[
            "subscriber billing platform",
            "number porting service",
            "network inventory system",
            "SIM provisioning service",
            "packet core",
        ],
        services: &[
            "billing-engine",
            "porting-api",
            "sim-provisioner",
            "inventory-sync",
        ],
        entities: &["subscriber", "tariff", "device", "circuit"],
        products: &["Business Connect", "IoT Fleet", "Roaming Plus"],
        teams: &[
            "network operations team",
            "BSS engineering team",
            "telecom platform group",
        ],
    },
    Flavor {
        keywords: &["manufactur", "erp", "factory", "industrial", "plant"],
        orgs: &[
            "Forgeline Industries",
            "Cobalt Works",
            "Tempest Manufacturing",
            "Millbrook Components",
        ],
        systems: &[
            "ERP system",
            "MES integration",
            "bill-of-materials service",
            "production scheduler",
            "quality inspection system",
        ],
        services: &["erp-connector", "mes-bridge", "bom-service", "mrp-runner"],
        entities: &["part", "batch", "supplier", "assembly"],
        products: &["Shop Floor Analytics", "Supplier Portal", "Quality Cloud"],
        teams: &["manufacturing systems team", "ERP team", "plant IT group"],
    },
    Flavor {
        keywords: &["insur", "underwrit", "actuar"],
        orgs: &[
            "Harborline Insurance",
            "Assurely",
            "Granite Mutual",
            "Clearview Underwriters",
        ],
        systems: &[
            "claims management system",
            "policy administration system",
            "underwriting rules engine",
            "quote service",
            "broker portal",
        ],
        services: &[
            "claims-api",
            "policy-admin",
            "quote-engine",
            "broker-portal",
        ],
        entities: &["claim", "policy", "quote", "premium"],
        products: &["Broker Insights", "Claims Express", "Policy Hub"],
        teams: &[
            "claims platform team",
            "underwriting systems team",
            "core insurance group",
        ],
    },
    Flavor {
        keywords: &["crm", "sales", "customer relationship", "marketing"],
        orgs: &[
            "Pipeline Pro",
            "Relata",
            "Northwind CRM",
            "Beacon Sales Cloud",
        ],
        systems: &[
            "CRM sync service",
            "lead routing engine",
            "sales forecasting module",
            "contact enrichment service",
            "marketing automation bridge",
        ],
        services: &[
            "crm-sync",
            "lead-router",
            "forecast-api",
            "enrichment-worker",
        ],
        entities: &["lead", "contact", "opportunity", "account"],
        products: &["Sales Engagement", "Revenue Insights", "Partner Portal"],
        teams: &[
            "revenue operations team",
            "CRM platform team",
            "sales systems group",
        ],
    },
    Flavor {
        keywords: &["legal", "law", "contract", "compliance"],
        orgs: &[
            "Lexbridge Legal",
            "Clausewise",
            "Verity Law Systems",
            "Docketry",
        ],
        systems: &[
            "contract lifecycle platform",
            "e-discovery pipeline",
            "matter management system",
            "clause library",
            "e-signature service",
        ],
        services: &[
            "contract-api",
            "ediscovery-worker",
            "matter-service",
            "esign-gateway",
        ],
        entities: &["contract", "matter", "clause", "signature"],
        products: &["Contract Analytics", "Matter Desk", "Signing Suite"],
        teams: &[
            "legal operations team",
            "legal engineering team",
            "knowledge management group",
        ],
    },
    Flavor {
        keywords: &["data", "analytic", "etl", "warehouse", "bi "],
        orgs: &[
            "Lakeshore Analytics",
            "Quartzite Data",
            "Parquet Works",
            "Delta Ridge Data",
        ],
        systems: &[
            "data lake",
            "streaming ingestion pipeline",
            "feature store",
            "BI semantic layer",
            "ETL orchestrator",
        ],
        services: &[
            "ingest-worker",
            "feature-store",
            "query-gateway",
            "etl-scheduler",
        ],
        entities: &["dataset", "pipeline", "table", "job"],
        products: &["Self-Serve Analytics", "Data Catalog", "Streaming Insights"],
        teams: &[
            "data platform team",
            "analytics engineering team",
            "data governance group",
        ],
    },
];

const FIRST_NAMES: &[&str] = &[
    "Priya", "Marcus", "Dana", "Aisha", "Jonas", "Mei", "Rafael", "Ingrid", "Kwame", "Sofia",
    "Dmitri", "Leila", "Owen", "Hana", "Mateo", "Grace", "Arjun", "Nadia", "Elliot", "Yuki",
    "Samuel", "Fatima", "Lucas", "Brigid",
];

const LAST_NAMES: &[&str] = &[
    "Raman",
    "Okafor",
    "Whitfield",
    "Lindqvist",
    "Tanaka",
    "Moreau",
    "Castillo",
    "Brennan",
    "Haddad",
    "Novak",
    "Fischer",
    "Adeyemi",
    "Kowalski",
    "Delgado",
    "Nakamura",
    "Osei",
    "Petrov",
    "Sandoval",
    "Iyer",
    "Gallagher",
    "Abernathy",
    "Quist",
    "Valdez",
    "Thorne",
];

const WEEKDAYS: &[&str] = &["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"];

#[derive(Debug, Clone, PartialEq)]
struct Person {
    first: &'static str,
    last: &'static str,
}

impl Person {
    fn full(&self) -> String {
        format!("{} {}", self.first, self.last)
    }

    fn golds(&self) -> Vec<String> {
        vec![self.full(), self.last.to_string()]
    }
}

/// The entities one item talks about.
struct Ctx {
    org: &'static str,
    system: &'static str,
    service: &'static str,
    entity: &'static str,
    product: &'static str,
    team: &'static str,
    people: Vec<Person>,
    /// Steps through the fact banks, problem kinds and templates in order, so that the items of
    /// one request, and of consecutive requests for one domain, differ in kind and wording.
    rotation: usize,
}

impl Ctx {
    fn new(pick: &mut Pick, domain: &str, slot: usize) -> Ctx {
        let lower = domain.to_lowercase();
        let flavor = FLAVORS
            .iter()
            .find(|flavor| flavor.keywords.iter().any(|word| lower.contains(word)))
            .unwrap_or_else(|| &FLAVORS[Pick::new(&[domain]).below(FLAVORS.len())]);
        let firsts = pick.distinct(4, FIRST_NAMES.len());
        let lasts = pick.distinct(4, LAST_NAMES.len());
        Ctx {
            org: pick.one(flavor.orgs),
            system: pick.one(flavor.systems),
            service: pick.one(flavor.services),
            entity: pick.one(flavor.entities),
            product: pick.one(flavor.products),
            team: pick.one(flavor.teams),
            rotation: slot + Pick::new(&[domain, "rotation"]).below(1000),
            people: firsts
                .iter()
                .zip(&lasts)
                .map(|(first, last)| Person {
                    first: FIRST_NAMES[*first],
                    last: LAST_NAMES[*last],
                })
                .collect(),
        }
    }

    /// The rotation's choice among `n`.
    fn turn(&self, n: usize) -> usize {
        self.rotation % n
    }

    /// A second choice among `n`, changing once per `kinds` slots.
    fn turn_within(&self, kinds: usize, n: usize) -> usize {
        (self.rotation / kinds) % n
    }

    fn person(&self, index: usize) -> &Person {
        &self.people[index % self.people.len()]
    }

    /// Replaces `<org>`, `<system>`, `<svc>`, `<entity>`, `<Entity>`, `<product>`, `<team>`,
    /// `<first>`, `<name>`, `<first2>`, `<name2>`, `<name3>`.
    fn fill(&self, template: &str) -> String {
        let mut entity_title = self.entity.to_string();
        if let Some(first) = entity_title.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        template
            .replace("<org>", self.org)
            .replace("<system>", self.system)
            .replace("<svc>", self.service)
            .replace("<entity>", self.entity)
            .replace("<Entity>", &entity_title)
            .replace("<product>", self.product)
            .replace("<team>", self.team)
            .replace("<first>", self.person(0).first)
            .replace("<name>", &self.person(0).full())
            .replace("<first2>", self.person(1).first)
            .replace("<name2>", &self.person(1).full())
            .replace("<name3>", &self.person(2).full())
    }
}

/// Draws items until one passes `ok` (the gold leak checks need a redraw now and then).
fn drawn(
    category: &str,
    domain: &str,
    seq: usize,
    index: usize,
    count: usize,
    make: impl Fn(&mut Pick, &Ctx) -> Item,
    ok: impl Fn(&Item) -> bool,
) -> Item {
    (0..MAX_ATTEMPTS)
        .map(|attempt| {
            let mut pick = Pick::new(&[
                category,
                domain,
                &seq.to_string(),
                &index.to_string(),
                &attempt.to_string(),
            ]);
            let ctx = Ctx::new(&mut pick, domain, seq * count + index + attempt * 7);
            make(&mut pick, &ctx)
        })
        .find(|item| ok(item))
        .unwrap_or_else(|| panic!("no valid {category} item for {domain}/{seq}/{index}"))
}

fn gold_not_in_prompt(item: &Item) -> bool {
    !graded(&item.prompt, &item.golds)
}

/// Item `index` of the reply to request `seq` for `count` items.
fn authored_item(category: &str, domain: &str, seq: usize, index: usize, count: usize) -> Item {
    let any = |_: &Item| true;
    match category {
        "simple_factual" => drawn(
            category,
            domain,
            seq,
            index,
            count,
            simple_factual,
            gold_not_in_prompt,
        ),
        "bloated_factual" => drawn(
            category,
            domain,
            seq,
            index,
            count,
            bloated_factual,
            gold_not_in_prompt,
        ),
        "reasoning" => drawn(
            category,
            domain,
            seq,
            index,
            count,
            reasoning,
            gold_not_in_prompt,
        ),
        "bloated_reasoning" => drawn(
            category,
            domain,
            seq,
            index,
            count,
            bloated_reasoning,
            gold_not_in_prompt,
        ),
        "technical_code" => drawn(category, domain, seq, index, count, technical_code, any),
        "long_document_qa" => drawn(category, domain, seq, index, count, long_document, any),
        "multi_document_qa" => drawn(category, domain, seq, index, count, multi_document, any),
        "conversational" => drawn(category, domain, seq, index, count, conversation, any),
        "memory_recall" => drawn(category, domain, seq, index, count, memory_recall, any),
        "memory_update" => drawn(category, domain, seq, index, count, memory_update, any),
        other => panic!("unknown category {other:?}"),
    }
}

// =============================================================================================
// simple_factual and bloated_factual
// =============================================================================================

struct Fact {
    questions: [&'static str; 2],
    golds: &'static [&'static str],
}

const FACTS: &[Fact] = &[
    Fact { questions: ["On which TCP port does a default PostgreSQL server accept client connections?", "What port number does PostgreSQL listen on when left at its default configuration?"], golds: &["5432", "port 5432"] },
    Fact { questions: ["Which TCP port does a stock Redis server listen on?", "What is the default port number for a Redis instance?"], golds: &["6379", "port 6379"] },
    Fact { questions: ["Which HTTP status code tells a client it has exceeded its rate limit?", "What HTTP response code should an API return when a caller is being throttled for sending too many calls?"], golds: &["429", "HTTP 429"] },
    Fact { questions: ["Which port does an Apache Kafka broker listen on by default?", "What is the default client listener port of a Kafka broker?"], golds: &["9092", "port 9092"] },
    Fact { questions: ["What is the AWS region code for US East (N. Virginia)?", "Which AWS region identifier corresponds to the Northern Virginia region?"], golds: &["us-east-1", "us east 1"] },
    Fact { questions: ["Which port does MySQL use by default for client connections?", "What is the default TCP port of a MySQL server?"], golds: &["3306", "port 3306"] },
    Fact { questions: ["Which TCP port does HTTPS use by default?", "On what port do web servers accept TLS-encrypted web traffic unless configured otherwise?"], golds: &["443", "port 443"] },
    Fact { questions: ["Which ISO standard specifies the requirements for an information security management system?", "Which international standard do auditors certify an ISMS against?"], golds: &["ISO 27001", "ISO/IEC 27001", "27001"] },
    Fact { questions: ["In disaster recovery terms, what does the abbreviation RPO stand for?", "What is the expanded form of RPO in business continuity work?"], golds: &["recovery point objective"] },
    Fact { questions: ["Which HTTP status code indicates that a POST request successfully created a resource?", "What status code should a REST API return after it creates a new resource?"], golds: &["201", "HTTP 201"] },
    Fact { questions: ["Which OAuth grant type is meant for machine-to-machine calls with no user present?", "What OAuth flow should a backend job use to obtain a token for itself, without any user involved?"], golds: &["client credentials", "client_credentials"] },
    Fact { questions: ["Which git command creates a new commit that undoes the changes of an earlier commit?", "What git subcommand safely backs out an already-pushed commit by adding an inverse commit?"], golds: &["git revert", "revert"] },
    Fact { questions: ["Which port does a MongoDB server listen on by default?", "What is the default port for the mongod process?"], golds: &["27017", "port 27017"] },
    Fact { questions: ["Roughly how many minutes of downtime per year does a five-nines availability target allow?", "About how many minutes of annual downtime fit within five nines of availability?"], golds: &["5.26 minutes", "5.26"] },
    Fact { questions: ["Which port does Elasticsearch expose its REST API on by default?", "On what default port does an Elasticsearch node serve HTTP calls?"], golds: &["9200", "port 9200"] },
    Fact { questions: ["Which DNS record type maps a hostname to an IPv6 address?", "What DNS resource record holds the IPv6 address of a host?"], golds: &["AAAA", "AAAA record"] },
    Fact { questions: ["In which year does the Unix epoch begin?", "Unix timestamps count seconds from the start of which year?"], golds: &["1970"] },
    Fact { questions: ["How many bits long is an IPv6 address?", "What is the bit length of an IPv6 address?"], golds: &["128", "128 bits"] },
    Fact { questions: ["Which ANSI X12 transaction set is the advance ship notice?", "What X12 EDI document number do suppliers send as an advance ship notice?"], golds: &["856", "EDI 856"] },
    Fact { questions: ["Which ANSI X12 transaction set carries a healthcare claim?", "What X12 EDI transaction do providers submit for professional and institutional claims?"], golds: &["837", "EDI 837"] },
    Fact { questions: ["Which ISO 20022 message type does a corporate send to initiate customer credit transfers?", "What ISO 20022 message initiates a customer credit transfer from a company to its bank?"], golds: &["pain.001", "pain 001"] },
    Fact { questions: ["Which ISO standard defines the messages exchanged between card acquirers and issuers?", "What ISO standard governs card-originated financial transaction messages?"], golds: &["ISO 8583", "8583"] },
    Fact { questions: ["Which Kubernetes probe makes the kubelet restart a container when it fails?", "What kind of Kubernetes health check restarts a container that has stopped responding?"], golds: &["liveness probe", "liveness"] },
    Fact { questions: ["Which port does RabbitMQ use for AMQP connections by default?", "What is RabbitMQ's default AMQP listener port?"], golds: &["5672", "port 5672"] },
    Fact { questions: ["What is the maximum number of characters in an IBAN?", "At most how many characters long can an International Bank Account Number be?"], golds: &["34 characters", "34"] },
    Fact { questions: ["Which HTTP status code means the service is temporarily unavailable?", "What status code should a load balancer return when no healthy backend can take the call?"], golds: &["503", "HTTP 503"] },
    Fact { questions: ["Which TCP port does LDAP over SSL use by default?", "What is the default port for LDAPS?"], golds: &["636", "port 636"] },
    Fact { questions: ["Which SQL transaction isolation level prevents phantom reads?", "What is the strictest isolation level defined by the SQL standard?"], golds: &["serializable"] },
    Fact { questions: ["Which consensus algorithm does etcd use to replicate its data?", "What consensus protocol keeps the members of an etcd cluster in agreement?"], golds: &["Raft", "Raft consensus"] },
    Fact { questions: ["Which port is reserved for mail submission by email clients?", "On which port should mail clients submit outgoing messages to an SMTP relay?"], golds: &["587", "port 587"] },
    Fact { questions: ["Which port does a Prometheus server listen on by default?", "What is the default web port of Prometheus?"], golds: &["9090", "port 9090"] },
    Fact { questions: ["For how many years must HIPAA-covered entities keep required compliance documentation?", "How long does HIPAA require policy and procedure documentation to be retained?"], golds: &["6 years"] },
    Fact { questions: ["Which Incoterms rule makes the buyer responsible for everything from the seller's premises onward?", "Under which Incoterms rule does the seller only make the goods available at its own premises?"], golds: &["EXW", "Ex Works"] },
    Fact { questions: ["Which Terraform subcommand previews infrastructure changes without applying them?", "What Terraform command shows the execution diff before anything is changed?"], golds: &["terraform plan"] },
    Fact { questions: ["Within how many hours must a GDPR controller notify the supervisory authority of a personal data breach?", "What is the GDPR deadline for reporting a personal data breach to the regulator?"], golds: &["72 hours", "72-hour"] },
    Fact { questions: ["Which security standard governs how merchants store and transmit cardholder data?", "Which compliance standard applies to any system that processes payment card numbers?"], golds: &["PCI DSS", "PCI-DSS"] },
    Fact { questions: ["Which US federal law sets the privacy and security rules for protected health information?", "Which American statute governs the handling of patient health records by covered entities?"], golds: &["HIPAA"] },
    Fact { questions: ["Which Kubernetes workload object runs exactly one pod on every node?", "What Kubernetes controller should deploy a log collector to each node in a cluster?"], golds: &["DaemonSet", "daemon set"] },
    Fact { questions: ["Which HTTP request header carries a bearer token to an API?", "In which request header does a client send its OAuth access token?"], golds: &["Authorization", "Authorization header"] },
    Fact { questions: ["Which XML-based standard do enterprise identity providers use for browser single sign-on assertions?", "What federation protocol exchanges signed XML assertions between an identity provider and a service provider?"], golds: &["SAML", "SAML 2.0"] },
];

const FACT_LEADS: &[&str] = &[
    "<first> is writing the <system> runbook for the <team> and asks:",
    "Question from a new joiner on the <team> at <org>, who is learning the <system>:",
    "Quick one from <first> on the <team> while we update the <system> runbook:",
    "<first> asked this during the <system> review at <org>:",
    "For the <org> onboarding checklist that <first> maintains for the <team>:",
    "<first2> is documenting the dependencies of the <system> at <org>.",
    "Sanity check from <first> for the <system> migration at <org>:",
    "From the <org> engineering FAQ, in the section on the <system>:",
    "Settling a debate on the <team> at <org>, started by <first2>:",
];

fn fact_question(pick: &mut Pick, ctx: &Ctx) -> (String, Vec<String>) {
    let fact = &FACTS[ctx.turn(FACTS.len())];
    let lead = ctx.fill(pick.one(FACT_LEADS));
    let question = pick.one(&fact.questions);
    let prompt = if lead.is_empty() {
        question.to_string()
    } else {
        format!("{lead} {question}")
    };
    (prompt, strings(fact.golds))
}

fn simple_factual(pick: &mut Pick, ctx: &Ctx) -> Item {
    let (prompt, golds) = fact_question(pick, ctx);
    Item::plain(prompt, golds)
}

fn bloated_factual(pick: &mut Pick, ctx: &Ctx) -> Item {
    let fact = &FACTS[ctx.turn(FACTS.len())];
    let question = pick.one(&fact.questions).to_string();
    Item::plain(
        corporate_email(pick, ctx, &question, 160),
        strings(fact.golds),
    )
}

// ---------------------------------------------------------------------------------------------
// Corporate filler. Free of digits and of every reasoning kind's marker phrase, so the verifier
// finds only the problem's own numbers.
// ---------------------------------------------------------------------------------------------

const GREETINGS: &[&str] = &["Hi", "Hello", "Good morning", "Dear", "Hey"];

const OPENERS: &[&str] = &[
    "I hope this message finds you well and that the week has been treating you kindly so far.",
    "I hope you had a restful weekend and that things are not too hectic on your side at the moment.",
    "Thank you again for all the help you gave our group last month; it made a real difference to how smoothly things went.",
    "I wanted to reach out personally rather than open a ticket, since I know how busy the queue has been lately.",
    "Apologies for the unsolicited note, and thank you in advance for taking a moment to read it.",
    "I trust all is well with you and the rest of the team after what I hear was a very busy quarter.",
    "First of all, congratulations to you and the team on the recent launch; the feedback from customers has been wonderful.",
    "I am writing on behalf of a few colleagues who have been discussing this topic in our last couple of stand-ups.",
];

const BACKGROUND: &[&str] = &[
    "As you may know, the <team> has been working through a broad review of the <system> so that our documentation reflects how things actually work today.",
    "We are putting together an internal knowledge base for new joiners at <org>, and several of the entries touch on basic facts that nobody has written down in one place.",
    "Leadership has asked each group to double-check the assumptions in its operating procedures before the next round of audits.",
    "Our onboarding sessions keep surfacing the same handful of questions, and I would like to give people a clear and consistent answer.",
    "Some of this came up during a vendor call yesterday, and I realised I was not completely certain of the details myself.",
    "I have looked through the wiki and a few older slide decks, but the information there is inconsistent and in places clearly outdated.",
    "I would rather confirm this with someone who knows the area well than guess and spread the wrong information across the organisation.",
    "Nothing is on fire, so please do not feel any pressure to drop what you are working on.",
    "The question itself is probably simple for you, but it has caused a surprising amount of back-and-forth on our side.",
    "We are also trying to align the wording across the <system> runbooks so that on-call engineers see the same terms everywhere.",
    "Our security and compliance colleagues have asked to be copied on the final answer, so I will share whatever you send with them as well.",
    "I promised the group a definitive answer by the end of the week, which is why I am reaching out to you directly.",
    "For context, <first2> from the <team> suggested that you would be the best person to ask, given your experience with the <system>.",
    "We held a short retrospective on this last week, and everyone agreed that a written answer from an expert would settle things for good.",
];

const ASKS: &[&str] = &[
    "My question is simply this:",
    "Could you please confirm the following for me?",
    "Here is what we would like to know.",
    "So, to put it as simply as I can:",
    "The specific point I need help with is this one.",
];

const THANKS: &[&str] = &[
    "I really appreciate you taking the time to look at this, and I am happy to jump on a short call if that would be easier for you.",
    "Thank you so much for your patience with what is probably a very basic question.",
    "Any pointers to official documentation would also be very welcome, though a short answer is perfectly fine.",
    "Please let me know if anything about the question is unclear or if I should be asking someone else instead.",
];

const CLOSINGS: &[&str] = &[
    "Thanks again, and I hope the rest of your week goes smoothly.",
    "Looking forward to hearing from you whenever you have a spare moment.",
    "Many thanks in advance for your help with this.",
];

const SIGNOFFS: &[&str] = &[
    "Best regards",
    "Kind regards",
    "Warm regards",
    "Many thanks",
    "Cheers",
    "All the best",
];

const TITLES: &[&str] = &[
    "Senior Program Manager",
    "Engineering Manager",
    "Operations Lead",
    "Compliance Analyst",
    "Solutions Architect",
    "Director of Platform Operations",
    "Technical Account Manager",
    "Business Analyst",
];

/// `core` wrapped in a polite email of at least `min_words` words.
fn corporate_email(pick: &mut Pick, ctx: &Ctx, core: &str, min_words: usize) -> String {
    let recipient = ctx.person(2).first;
    let sender = ctx.person(3).full();
    let opener = pick.one(OPENERS);
    let background_order = pick.distinct(BACKGROUND.len(), BACKGROUND.len());
    let ask = pick.one(ASKS);
    let thanks = pick.one(THANKS);
    let closing = pick.one(CLOSINGS);
    let signature = format!(
        "{},\n{sender}\n{}, {}",
        pick.one(SIGNOFFS),
        pick.one(TITLES),
        ctx.org
    );
    let fixed_words = [opener, ask, thanks, closing, core]
        .iter()
        .map(|text| text.split_whitespace().count())
        .sum::<usize>()
        + signature.split_whitespace().count()
        + 2;
    let mut background = Vec::new();
    let mut words = fixed_words;
    for index in background_order {
        if words >= min_words && background.len() >= 2 {
            break;
        }
        let sentence = ctx.fill(BACKGROUND[index]);
        words += sentence.split_whitespace().count();
        background.push(sentence);
    }
    let split = background.len() / 2;
    format!(
        "{} {recipient},\n\n{opener} {}\n\n{}\n\n{ask} {core}\n\n{thanks} {closing}\n\n{signature}",
        pick.one(GREETINGS),
        background[..split].join(" "),
        background[split..].join(" "),
    )
}

// =============================================================================================
// technical_code
// =============================================================================================

struct CodeQuestion {
    setups: [&'static str; 2],
    question: &'static str,
    golds: &'static [&'static str],
}

const CODE_QUESTIONS: &[CodeQuestion] = &[
    CodeQuestion {
        setups: [
            "Our <svc> worker calls an upstream API like this:\n\n```python\nresp = requests.get(f\"{BASE_URL}/<entity>s/{<entity>_id}\")\nresp.raise_for_status()\n```\n\nDuring an upstream incident every worker hung indefinitely.",
            "In a code review for <svc>, <first> flagged this call:\n\n```python\ndef fetch_<entity>(<entity>_id):\n    return requests.get(f\"{API}/<entity>s/{<entity>_id}\", headers=HEADERS).json()\n```\n\nIf the remote end stops responding, the call never returns.",
        ],
        question: "Which keyword argument to `requests.get` bounds how long the call may wait?",
        golds: &["timeout", "timeout="],
    },
    CodeQuestion {
        setups: [
            "This Go handler in <svc> leaks file descriptors under load:\n\n```go\nresp, err := http.Get(url)\nif err != nil {\n    return err\n}\ndata, err := io.ReadAll(resp.Body)\n```",
            "The <team> sees `too many open files` from <svc> after a few hours. The client code is:\n\n```go\nresp, err := client.Do(req)\nif err != nil {\n    return nil, err\n}\nreturn decode<Entity>(resp.Body)\n```",
        ],
        question: "Which call should be deferred right after the error check to fix the leak?",
        golds: &["resp.Body.Close()", "Body.Close"],
    },
    CodeQuestion {
        setups: [
            "A pod of the <svc> deployment keeps restarting. `kubectl describe pod` shows the last state as terminated with exit code 137 right after memory use climbed past the container limit.",
            "The <svc> containers at <org> die during the nightly <entity> export; the node's kernel log shows the cgroup memory limit being hit, and the container exit code is 137.",
        ],
        question: "What termination reason does Kubernetes report for these restarts?",
        golds: &["OOMKilled", "OOM killed"],
    },
    CodeQuestion {
        setups: [
            "Uploads of large <entity> attachments through our nginx ingress in front of <svc> fail with HTTP 413.",
            "The <team> moved <svc> behind nginx, and now any request body above about one megabyte is rejected with 413 Request Entity Too Large.",
        ],
        question: "Which nginx directive raises the allowed request body size?",
        golds: &["client_max_body_size"],
    },
    CodeQuestion {
        setups: [
            "The <svc> connection pool logs `FATAL: sorry, too many clients already` from PostgreSQL during traffic spikes.",
            "After <org> scaled <svc> out, new database sessions started failing with `remaining connection slots are reserved for non-replication superuser connections`.",
        ],
        question: "Which postgresql.conf setting caps the number of concurrent connections?",
        golds: &["max_connections"],
    },
    CodeQuestion {
        setups: [
            "```java\nfor (<Entity> item : <entity>s) {\n    if (item.isExpired()) {\n        <entity>s.remove(item);\n    }\n}\n```\n\nThis loop in <svc> removes expired records from an `ArrayList`.",
            "<first> wrote this cleanup job for <svc>:\n\n```java\n<entity>Cache.keySet().forEach(key -> {\n    if (isStale(key)) <entity>Cache.remove(key);\n});\n```\n\nThe map is a plain `HashMap`.",
        ],
        question: "Which exception does this code typically throw at runtime?",
        golds: &["ConcurrentModificationException"],
    },
    CodeQuestion {
        setups: [
            "Two engineers rebased the same <svc> feature branch, and one of them is about to push the rewritten history.",
            "The <team> allows force pushes on feature branches of <svc>, but wants to avoid clobbering commits a teammate pushed in the meantime.",
        ],
        question: "Which git push flag overwrites the remote branch only if it still matches what you last fetched?",
        golds: &["--force-with-lease", "force-with-lease"],
    },
    CodeQuestion {
        setups: [
            "In <svc> we call `let cfg = load_config()?;` inside a function returning `Result<(), AppError>`, but `load_config` returns `Result<Config, std::io::Error>`, and the build fails.",
            "A Rust handler in <svc> returns `Result<<Entity>, ApiError>` and uses `?` on a `serde_json::Error`; the compiler says the `?` couldn't convert the error.",
        ],
        question: "Which standard trait must the application's error type implement for `?` to convert the error?",
        golds: &["From", "From trait"],
    },
    CodeQuestion {
        setups: [
            "The <svc> database is managed with Terraform, and a refactor nearly replaced it last week.",
            "<first> wants Terraform to refuse any plan that would delete the production bucket behind <svc>.",
        ],
        question: "Which lifecycle meta-argument makes Terraform refuse to destroy the resource?",
        golds: &["prevent_destroy"],
    },
    CodeQuestion {
        setups: [
            "Browser calls from the <org> customer portal to <svc> fail with a CORS error, although the same requests succeed from curl.",
            "The new single-page app for the <system> gets `blocked by CORS policy` when it calls <svc> on another subdomain.",
        ],
        question: "Which response header must the API return to allow the portal's origin?",
        golds: &["Access-Control-Allow-Origin"],
    },
    CodeQuestion {
        setups: [
            "Inserting a duplicate <entity> reference into <svc>'s PostgreSQL table fails with a unique constraint violation.",
            "The <svc> importer retries when PostgreSQL reports that a duplicate key value violates a unique constraint, and the retry logic matches on the error's SQLSTATE.",
        ],
        question: "Which SQLSTATE code does PostgreSQL report for a unique violation?",
        golds: &["23505", "SQLSTATE 23505"],
    },
    CodeQuestion {
        setups: [
            "```ini\n[Service]\nExecStart=/usr/local/bin/<svc>\nUser=<entity>svc\n```\n\nWhen the <svc> daemon crashes, it stays down until someone restarts it by hand.",
            "The systemd unit for <svc> on the <org> hosts has only `ExecStart` and `User` in its `[Service]` section, and the daemon stays down after a crash.",
        ],
        question: "Which systemd directive brings the service back automatically after a crash?",
        golds: &["Restart=on-failure", "Restart"],
    },
    CodeQuestion {
        setups: [
            "Tests of the <svc> package pass locally but fail randomly in CI, and the <team> suspects two goroutines write the same <entity> map.",
            "<first> wants CI to catch unsynchronised access to shared state in the Go code of <svc>.",
        ],
        question: "Which flag makes `go test` instrument the code to detect data races?",
        golds: &["-race", "go test -race"],
    },
    CodeQuestion {
        setups: [
            "A new Kafka consumer group for <svc> starts with no committed offsets and must read the <entity> topic from the beginning.",
            "The <team> deployed a fresh consumer group for <svc>, and it skipped every <entity> event produced before it started.",
        ],
        question: "Which consumer property must be set to `earliest`?",
        golds: &["auto.offset.reset"],
    },
    CodeQuestion {
        setups: [
            "<svc> stores session data in Redis under keys such as `<entity>:session:abc`, and the keys must disappear after thirty minutes.",
            "The <team> caches <entity> lookups in Redis with `SET`, and needs to give an existing key a time-to-live afterwards.",
        ],
        question: "Which Redis command sets a time-to-live on an existing key?",
        golds: &["EXPIRE", "EXPIRE command"],
    },
    CodeQuestion {
        setups: [
            "<svc> validates JWTs issued by the <org> identity provider and must reject tokens past their lifetime.",
            "A security review of <svc> found that it accepts JWTs long after they should have lapsed.",
        ],
        question: "Which registered JWT claim holds the token's expiration time?",
        golds: &["exp", "exp claim"],
    },
    CodeQuestion {
        setups: [
            "A gRPC call from <svc> to the <entity> service gives up once the client-side deadline passes.",
            "Latency spikes in the <system> make <svc>'s gRPC calls exceed the two-second budget set by the caller.",
        ],
        question: "Which gRPC status code does the client observe?",
        golds: &["DEADLINE_EXCEEDED", "deadline exceeded"],
    },
    CodeQuestion {
        setups: [
            "```java\n@Service\npublic class <Entity>Service {\n    public void save<Entity>(<Entity> e) {\n        repo.save(e);\n        audit.record(e);\n    }\n}\n```\n\nIf `audit.record` throws, the saved row stays behind in <svc>.",
            "In the Spring Boot code of <svc>, two repository writes must commit or roll back together.",
        ],
        question: "Which Spring annotation makes the method run inside one database transaction?",
        golds: &["@Transactional", "Transactional"],
    },
    CodeQuestion {
        setups: [
            "```python\nlimits = {\"standard\": 100, \"premium\": 500}\nprint(limits[tier])\n```\n\nThis snippet from <svc> crashes when `tier` is `\"enterprise\"`.",
            "<first>'s script for <svc> looks up `<entity>_by_id[request_id]` in a plain dict, and it crashes for ids that were never loaded.",
        ],
        question: "Which Python exception is raised?",
        golds: &["KeyError"],
    },
    CodeQuestion {
        setups: [
            "<svc> receives a request whose bearer token has expired.",
            "A client calls <svc> without any credentials at all, on an endpoint that requires a signed-in user.",
        ],
        question: "Which HTTP status code should the API return?",
        golds: &["401", "HTTP 401"],
    },
    CodeQuestion {
        setups: [
            "The <svc> image should run `serve --port 8080` by default, but operators must be able to replace those arguments on the `docker run` command line.",
            "<first> is writing the Dockerfile for <svc> and wants default arguments that `docker run <svc> migrate` replaces.",
        ],
        question: "Which Dockerfile instruction supplies those replaceable defaults?",
        golds: &["CMD", "CMD instruction"],
    },
    CodeQuestion {
        setups: [
            "New <svc> pods receive traffic before their caches are warm, and the first requests time out.",
            "The <team> wants Kubernetes to keep a <svc> pod out of the Service endpoints until it has loaded its <entity> index.",
        ],
        question: "Which Kubernetes probe controls whether the pod receives traffic?",
        golds: &["readiness probe", "readiness"],
    },
    CodeQuestion {
        setups: [
            "```javascript\n<entity>s.forEach(async (x) => {\n  await save(x);\n});\nconsole.log('done');\n```\n\nIn <svc>, 'done' prints before any save finishes.",
            "<first> noticed that the Node.js export job in <svc> reports success while `await`s inside `Array.prototype.forEach` are still pending.",
        ],
        question: "Which loop construct should replace `forEach` so that each await is respected?",
        golds: &["for...of", "for of"],
    },
    CodeQuestion {
        setups: [
            "The <team> needs a report from the <system> that keeps only accounts whose summed <entity> totals exceed a threshold.",
            "```sql\nSELECT account_id, SUM(amount) AS total\nFROM <entity>s\nGROUP BY account_id\n-- keep only totals above 10000\n```\n\n<first> tried `WHERE SUM(amount) > 10000` and got an error.",
        ],
        question: "Which SQL clause filters groups after aggregation?",
        golds: &["HAVING", "HAVING clause"],
    },
    CodeQuestion {
        setups: [
            "The <svc> deployment runs a fixed number of replicas, and the <team> wants Kubernetes to add pods when average CPU utilisation rises.",
            "<org> wants <svc> to scale out automatically during the <entity> rush instead of paging someone to edit the replica count.",
        ],
        question: "Which Kubernetes resource scales the number of pods based on CPU utilisation?",
        golds: &["HorizontalPodAutoscaler", "Horizontal Pod Autoscaler"],
    },
];

const CODE_ASKS: &[&str] = &[
    "<first> needs the exact identifier for the <system> runbook.",
    "The <team> wants the precise name so it can search the code base for it.",
    "Please give the exact term; <first2> will add it to the <org> wiki.",
    "This is blocking the next <svc> release at <org>.",
    "A short answer is enough for the <team>.",
    "<first2> on the <team> wants to confirm before changing <svc>.",
];

const CODE_LEADS: &[&str] = &[
    "Code review question from the <team>. ",
    "Debugging <org>'s <system>. ",
    "<first> from the <team> is stuck on this one. ",
    "Asked in the <svc> engineering channel by <first2>: ",
    "While on call for the <system>, <first> ran into the following. ",
    "From a pairing session on <svc> at <org>. ",
    "A question from the <team>'s onboarding exercises for the <system>. ",
    "Postmortem follow-up for <svc>: ",
];

fn technical_code(pick: &mut Pick, ctx: &Ctx) -> Item {
    let question = &CODE_QUESTIONS[ctx.turn(CODE_QUESTIONS.len())];
    let lead = ctx.fill(pick.one(CODE_LEADS));
    let setup = ctx.fill(pick.one(&question.setups));
    let ask = ctx.fill(pick.one(CODE_ASKS));
    Item::plain(
        format!("{lead}{setup}\n\n{} {ask}", question.question),
        strings(question.golds),
    )
}

// =============================================================================================
// reasoning and bloated_reasoning: small formulas the verifier can recompute from the prompt
// =============================================================================================

const EVENTS: &[&str] = &[
    "the end-of-month billing run",
    "the holiday sales weekend",
    "the quarter-end close",
    "the Monday morning login surge",
    "the annual open-enrolment window",
    "a product launch",
    "the Black Friday promotion",
    "the year-end audit export",
];

const UNITS: &[(&str, &str)] = &[
    ("pod", "pods"),
    ("instance", "instances"),
    ("worker node", "worker nodes"),
    ("container", "containers"),
    ("VM", "VMs"),
    ("replica", "replicas"),
];

const CAPACITY_TEMPLATES: &[&str] = &[
    "The <system> at <org> peaks at {R} requests per second during {event}. Each {unit} sustains {C} requests per second, but the <team> only runs them at {U}% utilisation to keep headroom, and it always keeps {S} extra {units} on standby for failover. How many {units} should be provisioned in total?",
    "Load testing shows that a single {unit} of <org>'s <system> can serve {C} requests per second. Capacity policy caps every {unit} at {U}% of that figure. Forecasts put the peak during {event} at {R} requests per second, and the runbook adds {S} {units} of redundancy on top of whatever the peak needs. What is the total number of {units} required?",
    "We need to size the <system> at <org> for {event}. The forecast peak is {R} requests per second, and one {unit} handles {C} requests per second at full load. The <team> targets {U}% utilisation and adds {S} {units} beyond the peak requirement for resilience. How many {units} does the deployment need?",
    "<first> from the <team> asks how many {units} to run for {event}. The <system> must absorb {R} requests per second at peak; each {unit} tops out at {C} requests per second, and nobody runs a single {unit} above {U}% load. Add {S} {units} for a zone failure. What total should <first> request?",
];

/// capacity, SLA downtime, payback, monthly cost.
const REASONING_KINDS: usize = 4;

fn template(ctx: &Ctx, templates: &[&'static str]) -> &'static str {
    templates[ctx.turn_within(REASONING_KINDS, templates.len())]
}

struct CapacityProblem {
    prompt: String,
    value: f64,
    spares: u64,
    unit_plural: &'static str,
}

fn capacity(pick: &mut Pick, ctx: &Ctx) -> CapacityProblem {
    let needed = pick.between(6, 48);
    let per_unit = 20 * pick.between(4, 40);
    let utilisation = 5 * pick.between(10, 17);
    let peak = needed * per_unit * utilisation / 100;
    let spares = pick.between(2, 4);
    let (unit, units) = pick.one(UNITS);
    let prompt = ctx
        .fill(template(ctx, CAPACITY_TEMPLATES))
        .replace("{R}", &grouped(peak))
        .replace("{C}", &grouped(per_unit))
        .replace("{U}", &utilisation.to_string())
        .replace("{S}", &spares.to_string())
        .replace("{event}", pick.one(EVENTS))
        .replace("{units}", units)
        .replace("{unit}", unit);
    CapacityProblem {
        prompt,
        value: (needed + spares) as f64,
        spares,
        unit_plural: units,
    }
}

const SLA_TEMPLATES: &[&str] = &[
    "<org> promises customers {A}% monthly availability for the <system>. This billing period has {D} days, and incidents have already consumed {X} minutes of downtime. How many minutes of downtime remain in the error budget for the rest of the period?",
    "The <system> carries an availability SLA of {A}%, measured over a {D}-day month. The status page shows {X} minutes of outage so far this month. How many more minutes of downtime can occur before the SLA is breached?",
    "Error budget check for the <system>, owned by the <team>. Availability target in the contract: {A}%. Length of the current measurement window: {D} days. Downtime already recorded in this window: {X} minutes. How many minutes of downtime budget are left?",
    "After last week's incident, <first> wants to know how much slack is left. The <system>'s contract guarantees {A}% availability per calendar month, this month has {D} days, and the outages so far added up to {X} minutes. What is the remaining allowable downtime in minutes?",
];

/// Availability targets as (text, unavailability in hundredths of a percent).
const AVAILABILITY: &[(&str, u64)] = &[
    ("99.5", 50),
    ("99.9", 10),
    ("99.95", 5),
    ("99.99", 1),
    ("99.8", 20),
];

struct SlaProblem {
    prompt: String,
    remaining_thousandths: u64,
}

fn sla(pick: &mut Pick, ctx: &Ctx) -> SlaProblem {
    let (availability, unavailable) = pick.one(AVAILABILITY);
    let days = pick.one(&[28_u64, 30, 31]);
    // Allowed downtime in thousandths of a minute: days × 1440 × unavailable / 10,000.
    let allowed = days * 144 * unavailable;
    let used_tenths = pick.between(allowed / 1000, allowed * 8 / 1000).max(1);
    let prompt = ctx
        .fill(template(ctx, SLA_TEMPLATES))
        .replace("{A}", availability)
        .replace("{D}", &days.to_string())
        .replace("{X}", &plain_number(used_tenths as f64 / 10.0));
    SlaProblem {
        prompt,
        remaining_thousandths: allowed - used_tenths * 100,
    }
}

const PAYBACK_TEMPLATES: &[&str] = &[
    "<org> sells its <product> plan for ${P} per month. Gross margin on the plan is {M}%, and the blended customer acquisition cost is ${CAC}. How many months does it take to recover the acquisition cost from gross profit?",
    "Finance wants the CAC payback period for <org>'s <product> tier. Customer acquisition cost: ${CAC}. Subscription price: ${P} a month. Gross margin: {M}%. How many months until a new customer pays back its acquisition cost?",
    "A new <product> customer at <org> costs ${CAC} to win, counting sales and marketing, which is the full customer acquisition cost. Each customer pays ${P} monthly, and {M}% of that is gross profit after hosting and support. After how many months is the acquisition cost recovered?",
];

struct PaybackProblem {
    prompt: String,
    months: u64,
}

fn payback(pick: &mut Pick, ctx: &Ctx) -> PaybackProblem {
    let months = pick.between(5, 30);
    let price = 20 * pick.between(3, 25);
    let margin = 5 * pick.between(12, 17);
    let cac = months * price * margin / 100;
    let prompt = ctx
        .fill(template(ctx, PAYBACK_TEMPLATES))
        .replace("{P}", &grouped(price))
        .replace("{M}", &margin.to_string())
        .replace("{CAC}", &grouped(cac));
    PaybackProblem { prompt, months }
}

const COST_TEMPLATES: &[&str] = &[
    "The <system> runs on {N} virtual machines that cost ${H} per hour each, billed for 730 hours a month. It also stores {S} GB of data at ${G} per GB-month. What is the total monthly bill for compute and storage, in dollars?",
    "<first> is budgeting the <system>. Compute: {N} nodes at ${H} per hour each, running all month (use 730 hours). Storage: {S} GB of block volumes at ${G} per GB per month. What is the monthly cost in dollars?",
    "For <org>'s <system>, estimate one month of spend. There are {N} instances priced at ${H} per hour, each running 730 hours, plus {S} GB of snapshots priced at ${G} per GB-month. What does the month cost in total?",
];

/// Hourly prices and per-GB prices in thousandths of a dollar.
const HOURLY_MILLIS: &[u64] = &[96, 192, 384, 85, 170, 340, 680, 126, 252, 504, 500, 416];
const GB_MILLIS: &[u64] = &[23, 45, 80, 100, 125, 90];

struct CostProblem {
    prompt: String,
    cents: u64,
    instances: u64,
    hourly_millis: u64,
    gigabytes: u64,
    gb_millis: u64,
}

impl CostProblem {
    fn cents_with_hours(&self, hours: u64) -> u64 {
        (self.instances * self.hourly_millis * hours + self.gigabytes * self.gb_millis) / 10
    }
}

fn monthly_cost(pick: &mut Pick, ctx: &Ctx) -> CostProblem {
    let instances = pick.between(2, 40);
    let hourly_millis = pick.one(HOURLY_MILLIS);
    let gigabytes = 50 * pick.between(2, 160);
    let gb_millis = pick.one(GB_MILLIS);
    let prompt = ctx
        .fill(template(ctx, COST_TEMPLATES))
        .replace("{N}", &instances.to_string())
        .replace("{H}", &plain_number(hourly_millis as f64 / 1000.0))
        .replace("{S}", &grouped(gigabytes))
        .replace("{G}", &plain_number(gb_millis as f64 / 1000.0));
    let mut problem = CostProblem {
        prompt,
        cents: 0,
        instances,
        hourly_millis,
        gigabytes,
        gb_millis,
    };
    problem.cents = problem.cents_with_hours(730);
    problem
}

struct GrowthProblem {
    prompt: String,
    percent: u64,
}

/// Ill-posed on purpose: a percentage question whose answer is a large integer.
fn growth(pick: &mut Pick, ctx: &Ctx) -> GrowthProblem {
    let before = pick.between(2, 9);
    let multiple = pick.between(20, 80);
    let after = before * (multiple + 1);
    let prompt = ctx.fill(
        "Weekly <entity> exports from the <system> at <org> grew from {A} to {B} after the <team> shipped bulk export. What was the percentage increase?",
    )
    .replace("{A}", &before.to_string())
    .replace("{B}", &after.to_string());
    GrowthProblem {
        prompt,
        percent: multiple * 100,
    }
}

/// A reasoning problem as an item: the core prompt and its golds.
fn reasoning_core(pick: &mut Pick, ctx: &Ctx) -> Item {
    match ctx.turn(REASONING_KINDS) {
        0 => {
            let problem = capacity(pick, ctx);
            let answer = plain_number(problem.value);
            Item::plain(
                problem.prompt,
                vec![answer.clone(), format!("{answer} {}", problem.unit_plural)],
            )
        }
        1 => {
            let problem = sla(pick, ctx);
            let answer = plain_number(problem.remaining_thousandths as f64 / 1000.0);
            Item::plain(
                problem.prompt,
                vec![answer.clone(), format!("{answer} minutes")],
            )
        }
        2 => {
            let problem = payback(pick, ctx);
            Item::plain(
                problem.prompt,
                vec![
                    problem.months.to_string(),
                    format!("{} months", problem.months),
                ],
            )
        }
        _ => {
            let problem = monthly_cost(pick, ctx);
            Item::plain(problem.prompt, money_golds(problem.cents))
        }
    }
}

/// Openers that make two problems of one template read differently. Digit-free.
const REASONING_LEADS: &[&str] = &[
    "",
    "<first> needs this figure for the next budget review.",
    "Finance asked the <team> to double-check the following numbers.",
    "Context: <org>, <system>.",
    "A quick sanity check before the business review with leadership.",
    "We are preparing the operations section of the <system> design review.",
    "Please work this out for the <org> operations report.",
    "From the <team>'s weekly metrics review:",
    "The numbers below come from the latest dashboard export.",
    "Our auditors asked for this calculation to be documented.",
    "Before the steering committee meets, <first2> wants to confirm one figure.",
    "This question came from the account team at <org>.",
];

/// Closing requests, digit-free and free of the verifier's marker phrases.
const REASONING_ASKS: &[&str] = &[
    "",
    "Please show the working so that <first> can check it.",
    "<first2> will use the result in the <org> budget deck.",
    "Give the final figure on its own line for the <team>.",
    "The <team> needs the number before the review with leadership.",
    "An exact figure is needed, not an estimate.",
    "Explain each step briefly; <name3> will review the logic.",
];

fn reasoning(pick: &mut Pick, ctx: &Ctx) -> Item {
    let lead = ctx.fill(pick.one(REASONING_LEADS));
    let core = reasoning_core(pick, ctx);
    let ask = ctx.fill(pick.one(REASONING_ASKS));
    let prompt = [lead.as_str(), core.prompt.as_str(), ask.as_str()]
        .iter()
        .filter(|part| !part.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    Item::plain(prompt, core.golds)
}

fn bloated_reasoning(pick: &mut Pick, ctx: &Ctx) -> Item {
    let core = reasoning_core(pick, ctx);
    Item::plain(corporate_email(pick, ctx, &core.prompt, 280), core.golds)
}

// ---------------------------------------------------------------------------------------------
// The verifier's solver: recognise the kind by its marker phrase, find each quantity by the
// unit written after it, recompute.
// ---------------------------------------------------------------------------------------------

/// A number in a prompt, whether `$` precedes it or `%` follows it, and the lower-cased text
/// right after it.
struct Quantity {
    value: f64,
    dollars: bool,
    percent: bool,
    /// The lower-cased text right before and right after the number.
    before: String,
    after: String,
}

fn quantities(prompt: &str) -> Vec<Quantity> {
    let chars: Vec<char> = prompt.chars().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let starts_number = chars[at].is_ascii_digit()
            && (at == 0 || !(chars[at - 1].is_ascii_alphanumeric() || chars[at - 1] == '.'));
        if !starts_number {
            at += 1;
            continue;
        }
        let start = at;
        while at < chars.len()
            && (chars[at].is_ascii_digit()
                || ((chars[at] == ',' || chars[at] == '.')
                    && chars.get(at + 1).is_some_and(char::is_ascii_digit)))
        {
            at += 1;
        }
        let raw: String = chars[start..at].iter().filter(|c| **c != ',').collect();
        let after: String = chars[at..]
            .iter()
            .take(24)
            .collect::<String>()
            .to_lowercase();
        let before: String = chars[start.saturating_sub(12)..start]
            .iter()
            .collect::<String>()
            .to_lowercase();
        found.push(Quantity {
            value: raw.parse().unwrap_or(f64::NAN),
            dollars: before.ends_with('$'),
            percent: after.starts_with('%'),
            before,
            after,
        });
    }
    found
}

enum AnswerUnit {
    Count,
    Minutes,
    Months,
    Dollars,
}

struct Solution {
    steps: Vec<String>,
    expr: String,
    value: f64,
    unit: AnswerUnit,
}

impl Solution {
    fn answer(&self, value: f64) -> String {
        match self.unit {
            AnswerUnit::Count | AnswerUnit::Dollars => plain_number(value),
            AnswerUnit::Minutes => format!("{} minutes", plain_number(value)),
            AnswerUnit::Months => format!("{} months", plain_number(value)),
        }
    }
}

fn solve(prompt: &str) -> Option<Solution> {
    let lower = prompt.to_lowercase();
    let found = quantities(prompt);
    let take = |test: &dyn Fn(&Quantity) -> bool| found.iter().find(|q| test(q)).map(|q| q.value);
    if lower.contains("percentage increase") {
        let before = take(&|q| q.before.ends_with("from "))?;
        let after = take(&|q| q.before.ends_with(" to "))?;
        let value = (after - before) / before * 100.0;
        return Some(Solution {
            steps: vec![
                format!(
                    "The increase is {} - {} = {}.",
                    plain_number(after),
                    plain_number(before),
                    plain_number(after - before)
                ),
                format!(
                    "Relative to the starting value: {} / {} × 100 = {}%.",
                    plain_number(after - before),
                    plain_number(before),
                    plain_number(value)
                ),
            ],
            expr: format!(
                "({} - {}) / {} * 100",
                plain_number(after),
                plain_number(before),
                plain_number(before)
            ),
            value,
            unit: AnswerUnit::Count,
        });
    }
    if lower.contains("requests per second") {
        let rates: Vec<f64> = found
            .iter()
            .filter(|q| q.after.starts_with(" requests per second"))
            .map(|q| q.value)
            .collect();
        let peak = rates.iter().copied().fold(f64::MIN, f64::max);
        let per_unit = rates.iter().copied().fold(f64::MAX, f64::min);
        let utilisation = take(&|q| q.percent)?;
        let spares = take(&|q| {
            ["extra", "spare", "additional"]
                .iter()
                .chain(UNITS.iter().map(|(_, units)| units))
                .any(|noun| q.after.starts_with(&format!(" {}", noun.to_lowercase())))
        })?;
        let usable = per_unit * utilisation / 100.0;
        let for_peak = peak / usable;
        return Some(Solution {
            steps: vec![
                format!(
                    "Usable capacity per unit: {} × {}% = {} requests per second.",
                    plain_number(per_unit),
                    plain_number(utilisation),
                    plain_number(usable)
                ),
                format!(
                    "Units for the peak: {} / {} = {}.",
                    plain_number(peak),
                    plain_number(usable),
                    plain_number(for_peak)
                ),
                format!(
                    "Adding {} for redundancy gives {}.",
                    plain_number(spares),
                    plain_number(for_peak + spares)
                ),
            ],
            expr: format!(
                "{} / ({} * {}) + {}",
                plain_number(peak),
                plain_number(per_unit),
                plain_number(utilisation / 100.0),
                plain_number(spares)
            ),
            value: for_peak + spares,
            unit: AnswerUnit::Count,
        });
    }
    if lower.contains("availability") {
        let availability = take(&|q| q.percent)?;
        let days = take(&|q| q.after.starts_with(" day") || q.after.starts_with("-day"))?;
        let used = take(&|q| q.after.starts_with(" minute"))?;
        let allowed = days * 24.0 * 60.0 * (100.0 - availability) / 100.0;
        return Some(Solution {
            steps: vec![
                format!(
                    "Minutes in the period: {} × 24 × 60 = {}.",
                    plain_number(days),
                    plain_number(days * 1440.0)
                ),
                format!(
                    "Allowed downtime at {}%: {} × {} = {} minutes.",
                    plain_number(availability),
                    plain_number(days * 1440.0),
                    plain_number((100.0 - availability) / 100.0),
                    plain_number(allowed)
                ),
                format!(
                    "Remaining: {} - {} = {} minutes.",
                    plain_number(allowed),
                    plain_number(used),
                    plain_number(allowed - used)
                ),
            ],
            expr: format!(
                "{} * 24 * 60 * (1 - {} / 100) - {}",
                plain_number(days),
                plain_number(availability),
                plain_number(used)
            ),
            value: allowed - used,
            unit: AnswerUnit::Minutes,
        });
    }
    if lower.contains("acquisition cost") {
        let margin = take(&|q| q.percent)?;
        let money: Vec<f64> = found
            .iter()
            .filter(|q| q.dollars)
            .map(|q| q.value)
            .collect();
        let price = money.iter().copied().fold(f64::MAX, f64::min);
        let cac = money.iter().copied().fold(f64::MIN, f64::max);
        let monthly_profit = price * margin / 100.0;
        return Some(Solution {
            steps: vec![
                format!(
                    "Gross profit per month: ${} × {}% = ${}.",
                    plain_number(price),
                    plain_number(margin),
                    plain_number(monthly_profit)
                ),
                format!(
                    "Payback: ${} / ${} = {} months.",
                    plain_number(cac),
                    plain_number(monthly_profit),
                    plain_number(cac / monthly_profit)
                ),
            ],
            expr: format!(
                "{} / ({} * {} / 100)",
                plain_number(cac),
                plain_number(price),
                plain_number(margin)
            ),
            value: cac / monthly_profit,
            unit: AnswerUnit::Months,
        });
    }
    if lower.contains("per hour") {
        let hourly = take(&|q| q.dollars && q.after.starts_with(" per hour"))?;
        let hours = take(&|q| q.after.starts_with(" hours"))?;
        let per_gb = take(&|q| q.dollars && q.after.starts_with(" per gb"))?;
        let gigabytes = take(&|q| q.after.starts_with(" gb"))?;
        let machines = take(&|q| {
            [" virtual machines", " nodes", " instances"]
                .iter()
                .any(|noun| q.after.starts_with(noun))
        })?;
        let compute = machines * hourly * hours;
        let storage = gigabytes * per_gb;
        return Some(Solution {
            steps: vec![
                format!(
                    "Compute: {} × ${} × {} hours = ${}.",
                    plain_number(machines),
                    plain_number(hourly),
                    plain_number(hours),
                    plain_number(compute)
                ),
                format!(
                    "Storage: {} GB × ${} = ${}.",
                    plain_number(gigabytes),
                    plain_number(per_gb),
                    plain_number(storage)
                ),
                format!(
                    "Total: ${} + ${} = ${}.",
                    plain_number(compute),
                    plain_number(storage),
                    plain_number(compute + storage)
                ),
            ],
            expr: format!(
                "{} * {} * {} + {} * {}",
                plain_number(machines),
                plain_number(hourly),
                plain_number(hours),
                plain_number(gigabytes),
                plain_number(per_gb)
            ),
            value: compute + storage,
            unit: AnswerUnit::Dollars,
        });
    }
    None
}

// =============================================================================================
// long_document_qa: policies, postmortems, SOWs, RFCs and SLAs of 250–450 words
// =============================================================================================

/// A document before assembly: mandatory paragraphs (which hold every asked fact), optional
/// paragraphs added until the document is long enough, and the questions it can answer.
struct Document {
    title: String,
    paragraphs: Vec<String>,
    optional: Vec<String>,
    questions: Vec<(String, Vec<String>)>,
}

const DOCUMENT_MIN_WORDS: usize = 300;

/// Remarks appended to some paragraphs so that two documents of one kind read differently. They
/// name no person a question asks about.
const REMARKS: &[&str] = &[
    "Questions about this section go to the <team>.",
    "This reflects the state of the <system> at the time of writing.",
    "Related material is linked from the <org> intranet page for <svc>.",
    "The <team> will revisit this section at the next review.",
    "Terms not defined here follow the <org> glossary.",
    "The figures in this section were checked by <name3> against the source systems.",
    "Feedback from the <org> customer advisory board shaped this section.",
    "This section applies equally to the disaster recovery copy of the <system>.",
    "Wording here was aligned with the <org> style guide in the last revision.",
    "Links to the relevant dashboards for <svc> are kept in the team wiki.",
    "<name3> is the contact for questions about this part.",
    "Nothing in this section changes the obligations in existing customer contracts.",
];

/// Word pairs swapped per document (each pair in one direction or not at all), so that two
/// documents built from the same paragraph variants still read differently. None of them occurs
/// in a gold.
const SYNONYMS: &[(&str, &str)] = &[
    ("vendor", "supplier"),
    ("client", "customer"),
    ("customers", "clients"),
    ("must", "shall"),
    ("review", "assessment"),
    ("approved", "signed off"),
    ("requests", "calls"),
    ("automatically", "without manual intervention"),
    ("team", "group"),
    ("changes", "modifications"),
    ("staff", "personnel"),
    ("timeline", "schedule"),
    ("progress", "status"),
    ("errors", "failures"),
    ("regulations", "rules"),
    ("deleted", "removed"),
    ("kept", "retained"),
    ("outage", "disruption"),
];

/// `text` with every whole-word, lower-case `from` replaced by `to`.
fn replace_word(text: &str, from: &str, to: &str) -> String {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + from.len()..].chars().next();
        out.push_str(&rest[..at]);
        if before.is_some_and(is_word) || after.is_some_and(is_word) {
            out.push_str(from);
        } else {
            out.push_str(to);
        }
        rest = &rest[at + from.len()..];
    }
    out.push_str(rest);
    out
}

fn paraphrased(pick: &mut Pick, text: &str) -> String {
    let mut text = text.to_string();
    for (first, second) in SYNONYMS {
        match pick.below(3) {
            0 => text = replace_word(&text, first, second),
            1 => text = replace_word(&text, second, first),
            _ => {}
        }
    }
    text
}

fn long_document(pick: &mut Pick, ctx: &Ctx) -> Item {
    let mut document = any_document(pick, ctx);
    let remarks = pick.distinct(4, REMARKS.len());
    let paragraphs = pick.distinct(4, document.paragraphs.len());
    for (paragraph, remark) in paragraphs.into_iter().zip(remarks) {
        let text = ctx.fill(REMARKS[remark]);
        if let Some(target) = document.paragraphs.get_mut(paragraph) {
            target.push(' ');
            target.push_str(&text);
        }
    }
    let (question, golds) = pick.item(&document.questions).clone();
    let body = paraphrased(pick, &document_body(&document, document.paragraphs.len()));
    Item::plain(format!("{body}\n\nQuestion: {question}"), golds)
}

fn any_document(pick: &mut Pick, ctx: &Ctx) -> Document {
    match ctx.turn(5) {
        0 => postmortem(pick, ctx),
        1 => retention_policy(pick, ctx),
        2 => statement_of_work(pick, ctx),
        3 => rfc(pick, ctx),
        _ => sla_document(pick, ctx),
    }
}

/// The title, the first `mandatory` paragraphs, and optional paragraphs until the minimum length.
fn document_body(document: &Document, mandatory: usize) -> String {
    let mut parts = vec![document.title.clone()];
    parts.extend(document.paragraphs.iter().take(mandatory).cloned());
    for extra in &document.optional {
        if mandatory < document.paragraphs.len() || words(&parts.join(" ")) >= DOCUMENT_MIN_WORDS {
            break;
        }
        parts.push(extra.clone());
    }
    parts.join("\n\n")
}

fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

/// One of two variants of a paragraph.
fn either(pick: &mut Pick, first: String, second: String) -> String {
    if pick.below(2) == 0 {
        first
    } else {
        second
    }
}

fn shuffled<T>(pick: &mut Pick, mut items: Vec<T>) -> Vec<T> {
    for i in (1..items.len()).rev() {
        items.swap(i, pick.below(i + 1));
    }
    items
}

const SETTINGS: &[&str] = &[
    "max_pool_size",
    "request_timeout_ms",
    "worker_concurrency",
    "retry_budget",
    "queue_capacity",
    "connection_limit",
];

fn postmortem(pick: &mut Pick, ctx: &Ctx) -> Document {
    let minutes = pick.between(20, 180);
    let failed = pick.between(5, 60);
    let affected = pick.between(40, 900);
    let detect = pick.between(3, 15);
    let setting = pick.one(SETTINGS);
    let weekday = pick.one(WEEKDAYS);
    let commander = ctx.person(0).full();
    let owner = ctx.person(1).full();
    let paragraphs = vec![
        either(pick,
            format!("Summary. On {weekday}, the {} returned elevated errors for {minutes} minutes. At the worst point, {failed}% of requests failed, and {affected} enterprise customers opened support cases. The incident was declared at severity two because no data was lost, but several downstream integrations retried aggressively and prolonged the recovery.", ctx.system),
            format!("Summary. For {minutes} minutes on {weekday}, customers of {} saw failed or slow responses from the {}. Error rates peaked at {failed}% of all requests. In total {affected} customer accounts were affected, most of them during the morning batch window when integration traffic is highest.", ctx.org, ctx.system)),
        either(pick,
            format!("Detection and timeline. Synthetic checks alerted the on-call engineer {detect} minutes after the first failed request. {commander} took the role of incident commander, opened the bridge, and paged the {}. Rolling back the most recent configuration change restored service; the remaining time was spent draining retry queues and confirming that error rates had returned to baseline.", ctx.team),
            format!("Timeline. The first alert fired {detect} minutes after errors began, when the error-rate monitor crossed its threshold. {commander} acted as incident commander and coordinated the response from the incident channel. Engineers first suspected the database, which cost time, before the configuration history pointed to the real trigger. A rollback ended the customer impact.")),
        either(pick,
            format!("Root cause. A configuration change lowered the {setting} value for the {} service from its tested default. Under normal load the new value was harmless, but during the morning peak the service exhausted its capacity and began rejecting work. The change had passed review because the pull request did not show the load profile it would face in production.", ctx.service),
            format!("Root cause. The trigger was an edit to {setting} in the shared configuration of {}, shipped as part of an unrelated cleanup. Canary analysis compared only latency, not error rates, so the canary passed and the change reached every region within an hour. Once the peak arrived, requests queued behind the new limit and timed out.", ctx.service)),
        either(pick,
            "Customer impact. Affected customers saw timeouts in the web console and failed API calls from their integrations. Customer success teams contacted the largest accounts directly, and the status page was updated every thirty minutes until recovery. No data was lost or corrupted, and queued work was processed once the service recovered.".to_string(),
            "Communication. The status page acknowledged the incident shortly after the bridge opened and posted regular updates. Account managers for strategic customers sent direct notes, and support prepared a macro for incoming tickets. Billing confirmed that the outage falls within the service credit terms for the affected subscriptions.".to_string()),
        either(pick,
            format!("Action items. First, add error-rate comparison to canary analysis for {}. Second, require a load-test link on any pull request that changes {setting} or similar capacity limits. Third, teach the retry library in customer-facing SDKs to back off exponentially. {owner} owns the follow-up review in two weeks.", ctx.service),
            format!("Follow-up. The {} will move capacity settings such as {setting} behind a validated schema, add alerts on queue depth, and run a game day that replays the morning peak against staging. {owner} is tracking these items and will report progress at the next operations review.", ctx.team)),
    ];
    Document {
        title: format!("Postmortem: {} degradation at {}", ctx.system, ctx.org),
        paragraphs,
        optional: shuffled(pick, vec![
            "Lessons learned. The team noted that the configuration history was the fastest route to the cause, yet it was checked last. Runbooks will now list recent changes as the first diagnostic step, ahead of infrastructure dashboards.".to_string(),
            "What went well. Paging worked as designed, the incident channel stayed focused, and the rollback procedure completed without manual steps. Customer-facing teams had accurate information throughout, which reduced duplicate tickets.".to_string(),
            format!("Document status. This postmortem follows the blameless format used across {}. It was reviewed by the {} and by customer support leadership before publication.", ctx.org, ctx.team),
        ]),
        questions: vec![
            ("How many minutes did the customer-facing impact last?".to_string(), vec![format!("{minutes} minutes"), format!("{minutes} min")]),
            ("Who served as incident commander?".to_string(), ctx.person(0).golds()),
            ("Which configuration setting triggered the incident?".to_string(), vec![setting.to_string()]),
            ("What percentage of requests failed at the worst point?".to_string(), vec![format!("{failed}%"), format!("{failed} percent")]),
        ],
    }
}

fn retention_policy(pick: &mut Pick, ctx: &Ctx) -> Document {
    let audit = pick.one(&[90_u64, 180, 365, 400, 730]);
    let backup = pick.between(14, 45);
    let deletion = pick.between(5, 30);
    let owner = ctx.person(0).full();
    let approver = ctx.person(1).full();
    let paragraphs = vec![
        either(pick,
            format!("Purpose and scope. This policy defines how long records produced by the {} are kept, where they are stored, and how they are deleted. It applies to every environment operated by {}, including staging copies that contain production data, and to all vendors that process these records on our behalf.", ctx.system, ctx.org),
            format!("Scope. The rules below cover application records, audit trails, and backups created by the {} and by the {} service that feeds it. They apply to employees, contractors, and processors acting for {}. Where a customer contract sets a shorter period, the contract takes precedence.", ctx.system, ctx.service, ctx.org)),
        either(pick,
            format!("Retention schedule. Audit logs are retained for {audit} days in write-once storage so that investigators can reconstruct access history. Operational logs are kept for a shorter period and may be sampled. Database backups are kept for {backup} days and are encrypted with keys managed by the security team; older backups are destroyed automatically."),
            format!("Retention periods. Backups of the {} database are kept for {backup} days. Audit logs, which record every administrative action and every access to customer records, are retained for {audit} days. Debug logs are never retained beyond what is needed to resolve the incident that produced them.", ctx.system)),
        either(pick,
            format!("Deletion requests. When a customer or data subject asks for deletion, the request is logged in the privacy queue and must be completed within {deletion} business days. Records under legal hold are excluded until the hold is lifted. Completion is confirmed in writing, and the ticket records which systems were purged."),
            format!("Handling deletion requests. Verified requests to erase personal data are completed within {deletion} business days of verification. The {} runs the purge job, checks the replicas, and records the outcome in the ticket. Backups age out on their normal schedule rather than being edited.", ctx.team)),
        either(pick,
            "Exceptions. Any deviation from these periods needs written approval from the policy owner and a documented business reason. Exceptions are reviewed every quarter and expire automatically after one year unless they are renewed by the same process.".to_string(),
            format!("Legal hold. When litigation or a regulatory inquiry is expected, legal counsel may suspend deletion for specific records. The hold notice names the affected systems, and the {} confirms in writing that automated deletion has been paused.", ctx.team)),
        either(pick,
            format!("Ownership and review. {owner} owns this policy and reviews it every twelve months, or sooner when regulations change. Questions should go to the privacy office. {approver} approved the current revision on behalf of the risk committee."),
            format!("Roles. The policy owner is {owner}, who is accountable for keeping the schedule current. {approver} signs off on every revision for the risk committee, and system owners confirm compliance for their services during the annual review.")),
    ];
    Document {
        title: format!("{} Data Retention Policy for the {}", ctx.org, ctx.system),
        paragraphs,
        optional: shuffled(pick, vec![
            "Storage locations. Records are stored only in the regions named in the customer's order form. Copies made for analytics must be pseudonymised, and any export to a personal device is prohibited.".to_string(),
            "Enforcement. Violations of this policy are handled under the information security standard and may lead to disciplinary action. Automated checks compare configured retention settings with this schedule and raise a ticket for any drift.".to_string(),
            "Definitions. An audit log is an append-only record of who did what and when. A backup is a point-in-time copy kept for recovery. A data subject is any person whose personal data the system processes.".to_string(),
        ]),
        questions: vec![
            ("How many days are audit logs retained?".to_string(), vec![format!("{audit} days"), format!("{audit}-day")]),
            ("For how long are database backups kept?".to_string(), vec![format!("{backup} days")]),
            ("Within how many business days must a verified deletion request be completed?".to_string(), vec![format!("{deletion} business days"), format!("{deletion} days")]),
            ("Who owns this policy?".to_string(), ctx.person(0).golds()),
        ],
    }
}

const VENDORS: &[&str] = &[
    "Brightpath Consulting",
    "Northgate Advisory",
    "Summit Systems Integration",
    "Lattice Digital",
    "Keel Partners",
    "Foundry Lane Engineering",
];

fn statement_of_work(pick: &mut Pick, ctx: &Ctx) -> Document {
    let fee = 1000 * pick.between(60, 400);
    let weeks = pick.between(8, 26);
    let acceptance = pick.between(5, 15);
    let vendor = pick.one(VENDORS);
    let lead = ctx.person(0).full();
    let sponsor = ctx.person(1).full();
    let paragraphs = vec![
        either(pick,
            format!("Background. {} engages {vendor} to modernise the {}, which has grown around a monolithic code base that is hard to change safely. This statement of work describes the scope, schedule, fees, and acceptance process for the engagement and is governed by the master services agreement between the parties.", ctx.org, ctx.system),
            format!("Parties and purpose. This statement of work is entered into by {} and {vendor} under their existing master services agreement. Its purpose is to move the {} onto a supported platform, retire manual deployment steps, and hand over a maintainable service to the {}.", ctx.org, ctx.system, ctx.team)),
        either(pick,
            format!("Scope. The vendor will assess the current architecture, extract the {} component into an independently deployable service, automate its build and release pipeline, and migrate production traffic with no scheduled downtime. Data migration tooling, runbooks, and a knowledge transfer programme for the {} are included. Changes to third-party systems are out of scope.", ctx.service, ctx.team),
            format!("In scope. Discovery workshops, a target architecture, the re-platforming of {}, automated tests for the critical paths, and a production cutover runbook are all in scope. Out of scope are licence costs, changes to upstream partner systems, and any work on the mobile applications.", ctx.service)),
        either(pick,
            format!("Schedule. The engagement runs for {weeks} weeks from the kickoff date. Discovery occupies the opening phase, followed by build sprints and a controlled cutover. The vendor's project lead, {lead}, reports progress weekly to the client sponsor, {sponsor}, and escalates risks that threaten the timeline."),
            format!("Timeline and governance. The work is expected to take {weeks} weeks. {lead} leads the vendor team and is the single point of contact for delivery questions, while {sponsor} acts as sponsor for {} and chairs the fortnightly steering meeting.", ctx.org)),
        either(pick,
            format!("Fees. The work is delivered for a fixed fee of ${}, invoiced in equal instalments at the completion of each milestone. Travel expenses are billed at cost, and only when they were approved in writing beforehand. Payment terms follow the master services agreement.", grouped(fee)),
            format!("Commercials. {} will pay {vendor} a fixed fee of ${} for the scope described here. Invoices are raised when the client accepts each milestone, and any change request that alters scope must be priced and signed before work starts.", ctx.org, grouped(fee))),
        either(pick,
            format!("Acceptance. Each deliverable is submitted with evidence that it meets its acceptance criteria. The client has {acceptance} business days to accept it or to list specific defects; silence after that window counts as acceptance. Defects are fixed at the vendor's cost."),
            format!("Acceptance process. After a milestone is delivered, {} reviews it against the agreed criteria and must respond within {acceptance} business days. Rejected items return to the vendor with written reasons, and the review window restarts when the fix is delivered.", ctx.org)),
    ];
    Document {
        title: format!("Statement of Work: {} modernisation for {}", ctx.system, ctx.org),
        paragraphs,
        optional: shuffled(pick, vec![
            "Assumptions. The client provides timely access to environments, subject-matter experts, and existing documentation. Delays caused by missing access extend the schedule by the same amount without penalty to either party.".to_string(),
            "Staffing. The vendor assigns a project lead, two senior engineers, and a quality engineer for the full engagement, plus an architect during discovery. Replacing named staff requires the client's consent, which will not be unreasonably withheld.".to_string(),
            format!("Confidentiality. All client data accessed during the engagement remains the property of {} and is handled under the confidentiality terms of the master services agreement.", ctx.org),
        ]),
        questions: vec![
            ("What is the total fixed fee for the engagement?".to_string(), money_golds(fee * 100)),
            ("How many weeks is the engagement expected to last?".to_string(), vec![format!("{weeks} weeks")]),
            ("Who is the vendor's project lead?".to_string(), ctx.person(0).golds()),
            ("How many business days does the client have to accept a deliverable?".to_string(), vec![format!("{acceptance} business days"), format!("{acceptance} days")]),
        ],
    }
}

const LIMITERS: &[&str] = &[
    "token bucket",
    "leaky bucket",
    "fixed window counter",
    "sliding window log",
];

fn rfc(pick: &mut Pick, ctx: &Ctx) -> Document {
    let order = pick.distinct(3, LIMITERS.len());
    let (chosen, first_alt, second_alt) =
        (LIMITERS[order[0]], LIMITERS[order[1]], LIMITERS[order[2]]);
    let overhead = 5 * pick.between(2, 30);
    let author = ctx.person(0).full();
    let reviewer = ctx.person(1).full();
    let paragraphs = vec![
        either(pick,
            format!("Context. The {} has no consistent protection against traffic bursts. During recent incidents, a single integration partner sent enough requests to starve every other tenant. This RFC, written by {author}, proposes a shared rate limiter in front of {} and asks the {} for review.", ctx.system, ctx.service, ctx.team),
            format!("Problem statement. Today each endpoint of {} implements its own ad hoc throttling, and none of it is tenant-aware. Bursty clients degrade latency for everyone, and support cannot explain to customers why their calls fail. {author} wrote this proposal after the last quarterly review of the {}.", ctx.service, ctx.system)),
        either(pick,
            format!("Options considered. We compared a {first_alt}, a {second_alt}, and a {chosen}. The {first_alt} is simple to operate but handles our bursty traffic poorly. The {second_alt} needs more state per tenant than the gateway can afford. The {chosen} allows bounded bursts while enforcing a long-run average, and it maps cleanly onto per-tenant quotas."),
            format!("Alternatives. A {first_alt} was rejected because it behaves badly when many tenants burst at once. A {second_alt} was rejected because of its memory cost at the gateway. We therefore choose a {chosen}, implemented in the shared gateway so that every endpoint benefits without code changes.")),
        either(pick,
            format!("Design. Limits are defined per tenant and per endpoint class, stored in the configuration service, and cached at the gateway for sixty seconds. Rejected requests receive a clear error with a retry hint. The limiter may add at most {overhead} ms to p99 latency, which is the budget this RFC sets for the gateway path."),
            format!("Proposed design. The gateway keeps counters in a regional cache and falls back to a conservative local limit if the cache is unreachable. Tenants can see their remaining quota in response headers. The target is that rate limiting adds no more than {overhead} ms at p99, measured at the gateway.")),
        either(pick,
            format!("Rollout. The limiter ships in observe-only mode first, logging what it would have rejected. After a week of data, it is enforced for internal tenants, then for a tenth of external traffic, and finally for everyone. Each step needs sign-off from {reviewer}, who owns the gateway."),
            format!("Rollout and ownership. {reviewer} owns the gateway and will approve each stage of the rollout. Enforcement starts in shadow mode, continues with internal tenants, and then expands region by region. A kill switch disables enforcement within minutes if error rates rise.")),
        either(pick,
            "Open questions. Should enterprise contracts be able to buy higher limits, and if so, who approves them? How should limits apply to batch exports that legitimately run for hours? Reviewers are asked to comment within two weeks.".to_string(),
            "Risks. Misconfigured limits could reject legitimate traffic, so limits start generous and are tightened with data. The cache adds a dependency, mitigated by the local fallback. Reviewers should focus on the quota model and the error contract.".to_string()),
    ];
    Document {
        title: format!("RFC: Rate limiting for the {}", ctx.system),
        paragraphs,
        optional: shuffled(pick, vec![
            "Non-goals. This RFC does not address authentication, abuse detection, or billing for overage. Those topics are covered by separate proposals from the identity and billing teams.".to_string(),
            "Metrics. Success means fewer cross-tenant incidents, a stable tail latency at the gateway, and a measurable drop in support tickets about unexplained throttling.".to_string(),
            format!("Status. This document is under review by the {}. Comments should be left inline, and decisions will be recorded at the end of the review period.", ctx.team),
        ]),
        questions: vec![
            ("Which rate-limiting algorithm does the RFC choose?".to_string(), vec![chosen.to_string()]),
            ("How much latency may the limiter add at p99?".to_string(), vec![format!("{overhead} ms"), format!("{overhead} milliseconds")]),
            ("Who owns the gateway and approves each rollout stage?".to_string(), ctx.person(1).golds()),
            ("Who wrote this RFC?".to_string(), ctx.person(0).golds()),
        ],
    }
}

fn sla_document(pick: &mut Pick, ctx: &Ctx) -> Document {
    let uptime = pick.one(&["99.5", "99.9", "99.95", "99.99"]);
    let credit = 5 * pick.between(1, 6);
    let response = 15 * pick.between(1, 4);
    let claim = pick.one(&[30_u64, 45, 60]);
    let manager = ctx.person(0).full();
    let paragraphs = vec![
        either(pick,
            format!("Scope. This agreement sets the service levels that {} commits to for the {} and the remedies available when those levels are missed. It forms part of the customer's subscription agreement and applies to production environments only; sandbox and trial environments receive no service commitment.", ctx.org, ctx.system),
            format!("Introduction. {} provides the {} as a hosted service. This document defines how availability is measured, how quickly support responds, and what service credits customers receive if commitments are not met. It does not cover features labelled as preview.", ctx.org, ctx.system)),
        either(pick,
            format!("Availability commitment. The {} will be available {uptime}% of the time in each calendar month, measured by external probes every minute from three regions. Scheduled maintenance announced at least five days ahead is excluded, as are outages caused by the customer's own systems.", ctx.system),
            format!("Uptime. {} commits to monthly availability of {uptime}%. A minute counts as unavailable when more than half of the probe requests fail. Planned maintenance is excluded when it is announced in advance and performed inside the published window.", ctx.org)),
        either(pick,
            format!("Service credits. If availability falls below the commitment in a month, the customer receives a credit of {credit}% of that month's fees for the affected service. Larger credits apply to deeper shortfalls as set out in the order form. Credits are the customer's sole remedy for missed availability."),
            format!("Remedies. A missed availability commitment entitles the customer to a service credit equal to {credit}% of the monthly fee for the {}. Credits are applied to the next invoice and cannot be exchanged for cash.", ctx.system)),
        either(pick,
            format!("Support response. Severity one incidents, meaning a production outage with no workaround, receive a first response within {response} minutes at any hour. Lower severities are answered during business hours. Response means a qualified engineer is working on the case, not an automated acknowledgement."),
            format!("Support. For a full production outage the support team responds within {response} minutes, around the clock, and provides updates until the issue is resolved. Degraded service and general questions follow the business-hours targets listed in the support guide.")),
        either(pick,
            format!("Claiming credits. The customer must submit a credit claim within {claim} days after the end of the affected month, with the dates and times of the outage. {manager}, the service delivery manager, confirms eligible claims against monitoring data."),
            format!("Claims process. Requests for service credits must reach {} within {claim} days of the month in which the shortfall occurred. {manager} reviews each claim and responds with the measured availability for the period.", ctx.org)),
    ];
    Document {
        title: format!("Service Level Agreement: {} ({})", ctx.system, ctx.org),
        paragraphs,
        optional: shuffled(pick, vec![
            "Exclusions. The commitments do not apply to failures caused by force majeure, by the customer's misuse of the service, or by third-party networks outside the provider's control.".to_string(),
            "Reporting. Monthly availability reports are published in the customer portal, together with incident summaries for any outage that lasted longer than a few minutes.".to_string(),
            "Changes. The provider may update this agreement with notice, but no change will reduce the commitments during the customer's current subscription term.".to_string(),
        ]),
        questions: vec![
            ("What monthly availability does the provider commit to?".to_string(), vec![format!("{uptime}%"), uptime.to_string()]),
            ("What service credit applies when availability falls below the commitment?".to_string(), vec![format!("{credit}%"), format!("{credit} percent")]),
            ("How quickly must support respond to a severity one incident?".to_string(), vec![format!("{response} minutes")]),
            ("Within how many days after the affected month must a credit claim be submitted?".to_string(), vec![format!("{claim} days")]),
            ("Who confirms eligible credit claims?".to_string(), ctx.person(0).golds()),
        ],
    }
}

// =============================================================================================
// multi_document_qa: one attribute over several keys; the other keys' snippets are distractors
// =============================================================================================

struct SnippetTopic {
    /// `{key}` and `{value}` are filled per snippet; `<…>` from the item's context.
    titles: [&'static str; 2],
    bodies: [&'static str; 2],
    question: &'static str,
    keys: &'static [&'static str],
    values: &'static [&'static str],
    golds: fn(&str) -> Vec<String>,
    unrelated: [&'static str; 2],
    /// Values rise with the keys' order (severities, tiers), as real tables do.
    ordered: bool,
}

fn days_golds(value: &str) -> Vec<String> {
    vec![format!("{value} days")]
}

fn per_minute_golds(value: &str) -> Vec<String> {
    vec![
        format!("{value} requests per minute"),
        format!("{value} per minute"),
    ]
}

fn person_golds(value: &str) -> Vec<String> {
    let last = value.split_whitespace().last().unwrap_or(value);
    vec![value.to_string(), last.to_string()]
}

fn minutes_golds(value: &str) -> Vec<String> {
    vec![format!("{value} minutes")]
}

fn every_days_golds(value: &str) -> Vec<String> {
    vec![format!("every {value} days"), format!("{value} days")]
}

fn time_golds(value: &str) -> Vec<String> {
    vec![value.to_string(), format!("{value} local time")]
}

const PEOPLE_FOR_SNIPPETS: &[&str] = &[
    "Priya Raman",
    "Marcus Okafor",
    "Dana Whitfield",
    "Aisha Lindqvist",
    "Jonas Tanaka",
    "Mei Moreau",
    "Rafael Castillo",
    "Ingrid Brennan",
    "Kwame Haddad",
    "Sofia Novak",
];

const SNIPPET_TOPICS: &[SnippetTopic] = &[
    SnippetTopic {
        titles: ["Log retention: {key}", "{key} logging standard"],
        bodies: [
            "Application logs for the <system> in the {key} region are retained for {value} days, after which the lifecycle job deletes them.",
            "In {key}, the <team> keeps <system> logs for {value} days to satisfy local audit requirements; older entries are purged nightly.",
        ],
        question: "How long are <system> logs retained in the {key} region?",
        keys: &["EU (Frankfurt)", "US East", "US West", "Asia Pacific (Singapore)", "UK (London)", "Canada (Central)"],
        values: &["14", "30", "45", "60", "90", "180", "365"],
        golds: days_golds,
        unrelated: [
            "Backup schedule\nFull backups of the <system> run nightly and are copied to a second region for disaster recovery.",
            "Access to logs\nOnly members of the <team> may query production logs, and every query is itself recorded in the audit trail.",
        ],
        ordered: false,
    },
    SnippetTopic {
        titles: ["{key} tier limits", "API quotas: {key}"],
        bodies: [
            "Customers on the {key} tier of <product> may make up to {value} requests per minute against the public API; calls above the limit are throttled.",
            "The {key} tier includes an API quota of {value} requests per minute per organisation, enforced at the <org> gateway.",
        ],
        question: "What is the API rate limit for the {key} tier of <product>?",
        keys: &["Starter", "Growth", "Business", "Enterprise", "Partner"],
        values: &["60", "120", "300", "600", "1,200", "3,000"],
        golds: per_minute_golds,
        unrelated: [
            "Billing cycles\nAll <product> tiers can be billed monthly or annually; annual billing includes a discount negotiated in the order form.",
            "Support channels\nEvery tier of <product> includes email support, and higher tiers add a shared chat channel with the <team>.",
        ],
        ordered: true,
    },
    SnippetTopic {
        titles: ["On-call: {key}", "{key} ownership"],
        bodies: [
            "The primary on-call owner for {key} this rotation is {value}, with escalation to the <team> lead.",
            "{value} is the named owner of {key} and carries the pager for it during the current rotation.",
        ],
        question: "Who is the primary on-call owner for {key}?",
        keys: &["billing-api", "search-indexer", "notification-service", "report-builder", "sso-gateway", "webhook-relay"],
        values: PEOPLE_FOR_SNIPPETS,
        golds: person_golds,
        unrelated: [
            "Rotation rules\nOn-call rotations at <org> last one week and hand over on Monday mornings after the operations review.",
            "Escalation policy\nIf the primary owner does not acknowledge a page quickly, it escalates to the secondary and then to the <team> lead.",
        ],
        ordered: false,
    },
    SnippetTopic {
        titles: ["{key} response target", "Support targets: {key}"],
        bodies: [
            "{key} tickets for the <system> must receive a first response within {value} minutes, at any hour.",
            "For {key} cases raised against the <system>, the support desk commits to a first response within {value} minutes.",
        ],
        question: "What is the first-response target for {key} tickets?",
        keys: &["Severity 1", "Severity 2", "Severity 3", "Severity 4"],
        values: &["15", "30", "60", "240", "480"],
        golds: minutes_golds,
        unrelated: [
            "Ticket channels\nCustomers can open tickets through the portal, by email, or by phone for the most urgent cases.",
            "Resolution updates\nThe assigned engineer posts updates on open tickets at a cadence that depends on the severity.",
        ],
        ordered: true,
    },
    SnippetTopic {
        titles: ["Key rotation: {key}", "{key} encryption"],
        bodies: [
            "Encryption keys protecting the {key} of the <system> are rotated every {value} days by the key management service.",
            "The <team> rotates the data keys for the {key} every {value} days; old keys stay available for decryption only.",
        ],
        question: "How often are the encryption keys for the {key} rotated?",
        keys: &["customer database", "object storage", "message queue", "analytics warehouse", "backup vault"],
        values: &["30", "60", "90", "180", "365"],
        golds: every_days_golds,
        unrelated: [
            "Key custody\nMaster keys for the <system> live in hardware security modules, and no engineer can export them.",
            "Access reviews\nPermissions to use encryption keys are reviewed by the <team> as part of the access certification cycle.",
        ],
        ordered: false,
    },
    SnippetTopic {
        titles: ["{key} cut-off", "Same-day shipping: {key}"],
        bodies: [
            "Orders for the {key} warehouse must be released to the <system> by {value} local time to ship the same day.",
            "The {key} site ships same day for every order released to the <system> before {value} local time.",
        ],
        question: "What is the same-day cut-off time for the {key} warehouse?",
        keys: &["Rotterdam", "Memphis", "Singapore", "Leipzig", "Dallas", "Toronto"],
        values: &["11:00", "13:00", "14:30", "15:00", "16:00", "17:30"],
        golds: time_golds,
        unrelated: [
            "Carrier pickups\nCarriers collect from each warehouse in the late afternoon, and the dock schedule is published in the <system>.",
            "Holiday calendar\nWarehouses follow the local public holiday calendar, and cut-offs do not apply on days without carrier service.",
        ],
        ordered: false,
    },
];

const SNIPPET_SOURCES: &[&str] = &[
    "<org> handbook",
    "<team> wiki",
    "runbook for <svc>",
    "audit memo",
    "onboarding guide",
    "architecture notes",
    "<system> FAQ",
    "change record",
    "policy register",
    "<first>'s summary",
];

const SNIPPET_PREFACES: &[&str] = &[
    "",
    "Use the excerpts below from the <org> knowledge base.\n",
    "Internal documentation extracts (<org>):\n",
];

fn multi_document(pick: &mut Pick, ctx: &Ctx) -> Item {
    let docs = 4 + pick.below(3);
    multi_document_with(pick, ctx, docs)
}

/// `docs` snippets: the answer, `docs - 2` distractors on other keys, one unrelated snippet.
fn multi_document_with(pick: &mut Pick, ctx: &Ctx, docs: usize) -> Item {
    let topic = &SNIPPET_TOPICS[ctx.turn(SNIPPET_TOPICS.len())];
    let related = (docs - 1).min(topic.keys.len()).min(topic.values.len());
    let mut keys = pick.distinct(related, topic.keys.len());
    let mut values = pick.distinct(related, topic.values.len());
    if topic.ordered {
        keys.sort_unstable();
        values.sort_unstable();
    }
    let asked = pick.below(related);
    let golds = (topic.golds)(topic.values[values[asked]]);
    let mut snippets: Vec<String> = keys
        .iter()
        .zip(&values)
        .map(|(key, value)| {
            let (key, value) = (topic.keys[*key], topic.values[*value]);
            let title = format!(
                "{} ({})",
                pick.one(&topic.titles).replace("{key}", key),
                pick.one(SNIPPET_SOURCES)
            );
            let body = pick
                .one(&topic.bodies)
                .replace("{key}", key)
                .replace("{value}", value);
            ctx.fill(&format!("{title}\n{body}"))
        })
        .collect();
    snippets.push(ctx.fill(pick.one(&topic.unrelated)));
    let snippets = shuffled(pick, snippets);
    let labelled: Vec<String> = snippets
        .iter()
        .enumerate()
        .map(|(index, snippet)| format!("[Doc {}] {snippet}", index + 1))
        .collect();
    let question = ctx.fill(&topic.question.replace("{key}", topic.keys[keys[asked]]));
    let preface = ctx.fill(pick.one(SNIPPET_PREFACES));
    Item::plain(
        format!("{preface}{}\n\nQuestion: {question}", labelled.join("\n")),
        golds,
    )
}

// =============================================================================================
// conversational: two things are named, the agent describes both, the last customer line asks
// about "the other one"
// =============================================================================================

const MONTHS: &[&str] = &[
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WORKSPACES: &[&str] = &[
    "Atlas",
    "Borealis",
    "Cobalt",
    "Driftwood",
    "Ember",
    "Fjord",
    "Granite",
    "Harbor",
];
const PLANS: &[&str] = &[
    "Enterprise",
    "Business",
    "Professional",
    "Growth",
    "Starter",
];
const CARRIERS: &[&str] = &[
    "DHL Express",
    "FedEx Freight",
    "Maersk",
    "Kuehne+Nagel",
    "DB Schenker",
    "UPS Supply Chain",
];
const REGIONS: &[&str] = &[
    "us-east-1",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-southeast-2",
    "ca-central-1",
    "eu-north-1",
];

const ASIDES: &[(&str, &str)] = &[
    (
        "Is there any charge for changing that later?",
        "No, changes like that are free and take effect right away.",
    ),
    (
        "Can I see this in the admin console too?",
        "Yes, it is under Settings, in the account overview section.",
    ),
    (
        "Will my colleagues get a notification about this?",
        "Only the account administrators receive an email when something changes.",
    ),
    (
        "Is that information also in the last monthly report?",
        "It is, in the summary table on the second page of the report.",
    ),
];

const GREETINGS_IN_CHAT: &[&str] = &[
    "",
    "Hi, this is <first>. ",
    "Hello, <first> here, from the <team>. ",
    "Good morning, I work with <first2> on the <system>. ",
];

const ACKNOWLEDGEMENTS: &[&str] = &[
    "",
    "Thanks for reaching out! ",
    "Happy to help. ",
    "Let me pull that up for you. ",
    "Good question, I have the account open now. ",
];

const TRANSCRIPT_HEADERS: &[&str] = &[
    "",
    "Support chat transcript, <org>:\n",
    "Ticket conversation with the <org> support desk:\n",
];

fn spaced_region(code: &str) -> String {
    code.replace('-', " ")
}

fn date_golds(month: &str, day: u64) -> Vec<String> {
    vec![format!("{month} {day}"), format!("{day} {month}")]
}

fn conversation(pick: &mut Pick, ctx: &Ctx) -> Item {
    let (opening, answer, last, golds) = match ctx.turn(5) {
        0 => {
            let names = pick.distinct(2, WORKSPACES.len());
            let (a, b) = (WORKSPACES[names[0]], WORKSPACES[names[1]]);
            let plans = pick.distinct(2, PLANS.len());
            let (plan_a, plan_b) = (PLANS[plans[0]], PLANS[plans[1]]);
            let (seats_a, seats_b) = (5 * pick.between(4, 60), 5 * pick.between(61, 120));
            let (last, golds) = if pick.below(2) == 0 {
                (
                    "And how many seats does the other one have?".to_string(),
                    vec![format!("{seats_b} seats"), seats_b.to_string()],
                )
            } else {
                (
                    "Which plan is the other workspace on, then?".to_string(),
                    vec![plan_b.to_string(), format!("{plan_b} plan")],
                )
            };
            (
                either(pick,
                    format!("We have two workspaces with {}, {a} and {b}. What plan is {a} on right now?", ctx.org),
                    format!("Our company uses two {} workspaces, called {a} and {b}. Which subscription does {a} have?", ctx.org)),
                either(pick,
                    format!("{a} is on the {plan_a} plan with {seats_a} seats, and {b} is on the {plan_b} plan with {seats_b} seats."),
                    format!("I can see both. {a} has the {plan_a} plan and {seats_a} seats; {b} has the {plan_b} plan and {seats_b} seats.")),
                last,
                golds,
            )
        }
        1 => {
            let (id_a, id_b) = (pick.between(1000, 4999), pick.between(5000, 9999));
            let (cents_a, cents_b) = (
                100 * pick.between(800, 40_000),
                100 * pick.between(800, 40_000) + 50,
            );
            let months = pick.distinct(2, MONTHS.len());
            let (due_a, due_b) = (
                (MONTHS[months[0]], pick.between(1, 28)),
                (MONTHS[months[1]], pick.between(1, 28)),
            );
            let (last, golds) = if pick.below(2) == 0 {
                (
                    "When is the other one due?".to_string(),
                    date_golds(due_b.0, due_b.1),
                )
            } else {
                (
                    "What is the amount on the other one?".to_string(),
                    money_golds(cents_b),
                )
            };
            (
                either(pick,
                    format!("I'm looking at invoices INV-{id_a} and INV-{id_b} from {}. What's the total on INV-{id_a}?", ctx.org),
                    format!("Our accounts payable team received INV-{id_a} and INV-{id_b} for the {}. How much is INV-{id_a}?", ctx.system)),
                format!("INV-{id_a} is for ${} and is due on {} {}. INV-{id_b} is for ${}, due on {} {}.", dollars_text(cents_a), due_a.0, due_a.1, dollars_text(cents_b), due_b.0, due_b.1),
                last,
                golds,
            )
        }
        2 => {
            let (id_a, id_b) = (pick.between(10_000, 49_999), pick.between(50_000, 99_999));
            let carriers = pick.distinct(2, CARRIERS.len());
            let (carrier_a, carrier_b) = (CARRIERS[carriers[0]], CARRIERS[carriers[1]]);
            let days = pick.distinct(2, WEEKDAYS.len());
            let (eta_a, eta_b) = (WEEKDAYS[days[0]], WEEKDAYS[days[1]]);
            let (last, golds) = if pick.below(2) == 0 {
                (
                    "And the other one, which carrier has it?".to_string(),
                    vec![carrier_b.to_string()],
                )
            } else {
                (
                    "When should the second one arrive?".to_string(),
                    vec![eta_b.to_string(), format!("on {eta_b}")],
                )
            };
            (
                either(pick,
                    format!("Can you check shipments SHP-{id_a} and SHP-{id_b} for us? Which carrier is handling SHP-{id_a}?"),
                    format!("Two of our {} shipments, SHP-{id_a} and SHP-{id_b}, are late. Who is carrying SHP-{id_a}?", ctx.org)),
                format!("SHP-{id_a} is with {carrier_a} and should arrive on {eta_a}; SHP-{id_b} went with {carrier_b} and is due on {eta_b}."),
                last,
                golds,
            )
        }
        3 => {
            let regions = pick.distinct(2, REGIONS.len());
            let (region_a, region_b) = (REGIONS[regions[0]], REGIONS[regions[1]]);
            let (a, b) = (
                format!("{}-primary", ctx.service),
                format!("{}-standby", ctx.service),
            );
            (
                either(pick,
                    format!("We run two clusters for {}: {a} and {b}. Which region hosts {a}?", ctx.service),
                    format!("The {} depends on two clusters, {a} and {b}. Where is {a} deployed?", ctx.system)),
                format!("{a} runs in {region_a} and {b} runs in {region_b}; both are on the same Kubernetes minor version."),
                "And where is the other one?".to_string(),
                vec![region_b.to_string(), spaced_region(region_b)],
            )
        }
        _ => {
            let months = pick.distinct(2, MONTHS.len());
            let (date_a, date_b) = (
                (MONTHS[months[0]], pick.between(1, 28)),
                (MONTHS[months[1]], pick.between(1, 28)),
            );
            (
                either(pick,
                    format!("Our {} has two API keys with you, the reporting key and the ingestion key. When does the reporting key expire?", ctx.team),
                    format!("The {} calls your API with two keys: one for reporting, one for ingestion. What's the expiry date of the reporting key?", ctx.system)),
                either(pick,
                    format!("The reporting key expires on {} {} and the ingestion key expires on {} {}. You can rotate either one from the console.", date_a.0, date_a.1, date_b.0, date_b.1),
                    format!("The reporting key is valid until {} {}, and the ingestion key until {} {}. Rotating a key early does not change your plan.", date_a.0, date_a.1, date_b.0, date_b.1)),
                "What about the other one, when does it expire?".to_string(),
                date_golds(date_b.0, date_b.1),
            )
        }
    };
    let greeting = ctx.fill(pick.one(GREETINGS_IN_CHAT));
    let acknowledgement = ctx.fill(pick.one(ACKNOWLEDGEMENTS));
    let mut lines = vec![
        format!("Customer: {greeting}{opening}"),
        format!("Agent: {acknowledgement}{answer}"),
    ];
    let asides = pick.below(3);
    for aside in pick.distinct(asides, ASIDES.len()) {
        let (question, reply) = ASIDES[aside];
        lines.push(format!("Customer: {question}"));
        lines.push(format!("Agent: {reply}"));
    }
    let lead_in = pick.one(&[
        "",
        "Thanks. ",
        "Got it. ",
        "Perfect. ",
        "OK, one last thing. ",
    ]);
    lines.push(format!("Customer: {lead_in}{last}"));
    let header = ctx.fill(pick.one(TRANSCRIPT_HEADERS));
    Item::plain(format!("{header}{}", lines.join("\n")), golds)
}

// =============================================================================================
// memory_recall: a `Memory:` block of stored facts and a question about one of them
// =============================================================================================

struct MemoryKey {
    key: &'static str,
    question: &'static str,
    value: fn(&mut Pick, &Ctx) -> String,
    golds: fn(&str) -> Vec<String>,
}

fn single_gold(value: &str) -> Vec<String> {
    vec![value.to_string()]
}

fn region_golds(value: &str) -> Vec<String> {
    vec![value.to_string(), spaced_region(value)]
}

const MEMORY_KEYS: &[MemoryKey] = &[
    MemoryKey {
        key: "account_owner",
        question: "Who is the owner of this account?",
        value: |_, ctx| ctx.person(0).full(),
        golds: person_golds,
    },
    MemoryKey {
        key: "plan",
        question: "Which plan is the account on?",
        value: |pick, _| pick.one(PLANS).to_string(),
        golds: |v| vec![v.to_string(), format!("{v} plan")],
    },
    MemoryKey {
        key: "primary_region",
        question: "Which cloud region is the account's primary region?",
        value: |pick, _| pick.one(REGIONS).to_string(),
        golds: region_golds,
    },
    MemoryKey {
        key: "billing_cycle",
        question: "What billing cycle does the account use?",
        value: |pick, _| pick.one(&["annual", "monthly", "quarterly"]).to_string(),
        golds: |v| vec![v.to_string(), format!("{v} billing")],
    },
    MemoryKey {
        key: "sso_provider",
        question: "Which identity provider does the account use for single sign-on?",
        value: |pick, _| {
            pick.one(&[
                "Okta",
                "Azure AD",
                "Ping Identity",
                "Google Workspace",
                "OneLogin",
            ])
            .to_string()
        },
        golds: single_gold,
    },
    MemoryKey {
        key: "seat_limit",
        question: "How many seats does the account's contract allow?",
        value: |pick, _| (5 * pick.between(5, 200)).to_string(),
        golds: |v| vec![v.to_string(), format!("{v} seats")],
    },
    MemoryKey {
        key: "renewal_month",
        question: "In which month does the contract renew?",
        value: |pick, _| pick.one(MONTHS).to_string(),
        golds: single_gold,
    },
    MemoryKey {
        key: "support_tier",
        question: "Which support tier is the account entitled to?",
        value: |pick, _| {
            pick.one(&["Premier", "Standard", "Enhanced", "Mission Critical"])
                .to_string()
        },
        golds: |v| vec![v.to_string(), format!("{v} support")],
    },
    MemoryKey {
        key: "invoice_currency",
        question: "In which currency is the account invoiced?",
        value: |pick, _| {
            pick.one(&["EUR", "USD", "GBP", "CAD", "SGD", "AUD"])
                .to_string()
        },
        golds: single_gold,
    },
    MemoryKey {
        key: "api_rate_limit",
        question: "What API rate limit applies to the account?",
        value: |pick, _| format!("{} requests per minute", 100 * pick.between(3, 40)),
        golds: |v| {
            let n = v.split_whitespace().next().unwrap_or(v);
            vec![v.to_string(), format!("{n} per minute")]
        },
    },
    MemoryKey {
        key: "escalation_contact",
        question: "Who is the escalation contact for the account?",
        value: |_, ctx| ctx.person(1).full(),
        golds: person_golds,
    },
    MemoryKey {
        key: "data_residency",
        question: "In which jurisdiction must the account's data stay?",
        value: |pick, _| {
            pick.one(&["EU only", "US only", "UK only", "Canada only"])
                .to_string()
        },
        golds: |v| {
            let place = v.split_whitespace().next().unwrap_or(v);
            vec![v.to_string(), place.to_string()]
        },
    },
];

const MEMORY_PREFACES: &[&str] = &[
    "",
    "Stored context for the <org> account (<product>):\n",
    "Profile facts saved by the assistant for the <team>:\n",
];

fn memory_recall(pick: &mut Pick, ctx: &Ctx) -> Item {
    let facts = 4 + pick.below(5);
    memory_recall_with(pick, ctx, facts)
}

fn memory_recall_with(pick: &mut Pick, ctx: &Ctx, facts: usize) -> Item {
    let chosen = pick.distinct(facts, MEMORY_KEYS.len());
    let asked = chosen[pick.below(chosen.len())];
    let mut asked_value = String::new();
    let lines: Vec<String> = chosen
        .iter()
        .map(|index| {
            let key = &MEMORY_KEYS[*index];
            let value = (key.value)(pick, ctx);
            if *index == asked {
                asked_value = value.clone();
            }
            format!("- {}: {value}", key.key)
        })
        .collect();
    let key = &MEMORY_KEYS[asked];
    let preface = ctx.fill(pick.one(MEMORY_PREFACES));
    Item {
        prompt: format!(
            "{preface}Memory:\n{}\n\nQuestion: {}",
            lines.join("\n"),
            key.question
        ),
        golds: (key.golds)(&asked_value),
        durable: Some(vec![asked_value]),
        stale: Some(Vec::new()),
    }
}

// =============================================================================================
// memory_update: an earlier value, a correction, a question about the latest value
// =============================================================================================

/// A fact that changed: what it is, its values from oldest to latest (each as written in the
/// prompt and in `stale`/`durable`), the golds of the latest value, and two ways to ask for it.
struct Change {
    subject: String,
    values: Vec<String>,
    golds: Vec<String>,
    questions: [&'static str; 2],
}

/// Two or three values drawn in order from sets whose members are never substrings of one another
/// once normalised, so no stale value grades a later value's gold as correct.
fn change(pick: &mut Pick, ctx: &Ctx) -> Change {
    let steps = 2 + pick.below(2);
    let take = |pick: &mut Pick, values: &[u64]| -> Vec<u64> {
        pick.distinct(steps, values.len())
            .into_iter()
            .map(|at| values[at])
            .collect()
    };
    match ctx.turn(8) {
        0 => {
            let mut minors = take(pick, &[21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]);
            minors.sort_unstable();
            let values: Vec<String> = minors.iter().map(|minor| format!("1.{minor}")).collect();
            let latest = values.last().cloned().unwrap_or_default();
            Change {
                subject: format!(
                    "the minimum Kubernetes version for new {} clusters",
                    ctx.org
                ),
                golds: vec![
                    latest.clone(),
                    format!("version {latest}"),
                    format!("Kubernetes {latest}"),
                ],
                values,
                questions: [
                    "What is the current minimum Kubernetes version for new clusters?",
                    "Which Kubernetes version must a new cluster run at least, as of now?",
                ],
            }
        }
        1 => {
            let values: Vec<String> = take(pick, &[30, 45, 60, 90, 120, 365, 400])
                .iter()
                .map(|days| format!("{days} days"))
                .collect();
            let latest = values.last().cloned().unwrap_or_default();
            Change {
                subject: format!("the retention period for {} audit logs", ctx.system),
                golds: vec![latest.clone(), latest.replace(" days", "-day")],
                values,
                questions: [
                    "How long are audit logs kept now?",
                    "What retention period applies to the audit logs today?",
                ],
            }
        }
        2 => {
            let values: Vec<String> = pick
                .distinct(steps, PEOPLE_FOR_SNIPPETS.len())
                .into_iter()
                .map(|at| PEOPLE_FOR_SNIPPETS[at].to_string())
                .collect();
            let latest = values.last().cloned().unwrap_or_default();
            Change {
                subject: format!("the escalation owner for the {}", ctx.system),
                golds: person_golds(&latest),
                values,
                questions: [
                    "Who is the escalation owner today?",
                    "Whom should the on-call engineer escalate to now?",
                ],
            }
        }
        3 => {
            let values: Vec<String> = take(pick, &[300, 450, 600, 900, 1200, 1500, 2400])
                .iter()
                .map(|n| format!("{n} requests per minute"))
                .collect();
            let latest = values.last().cloned().unwrap_or_default();
            Change {
                subject: format!("the per-client rate limit of {}", ctx.service),
                golds: per_minute_golds(latest.split_whitespace().next().unwrap_or_default()),
                values,
                questions: [
                    "What is the per-client rate limit today?",
                    "How many requests per minute may one client send now?",
                ],
            }
        }
        4 => {
            let amounts = take(pick, &[2_000, 3_500, 7_500, 10_000, 12_500, 40_000]);
            let latest = amounts.last().copied().unwrap_or_default();
            Change {
                subject: format!(
                    "the amount above which a purchase at {} needs director approval",
                    ctx.org
                ),
                golds: money_golds(latest * 100),
                values: amounts
                    .iter()
                    .map(|amount| format!("${}", grouped(*amount)))
                    .collect(),
                questions: [
                    "Above what amount does a purchase need director approval now?",
                    "What is the current director-approval threshold for purchases?",
                ],
            }
        }
        5 => {
            let values: Vec<String> = pick
                .distinct(steps, REGIONS.len())
                .into_iter()
                .map(|at| REGIONS[at].to_string())
                .collect();
            let latest = values.last().cloned().unwrap_or_default();
            Change {
                subject: format!("the region of the primary {} database", ctx.system),
                golds: region_golds(&latest),
                values,
                questions: [
                    "Which region hosts the primary database today?",
                    "Where does the primary database run now?",
                ],
            }
        }
        6 => {
            let versions: &[&str] = if steps == 2 {
                pick.one(&[
                    &["1.0", "1.2"][..],
                    &["1.1", "1.2"],
                    &["1.2", "1.3"],
                    &["1.1", "1.3"],
                ])
            } else {
                &["1.0", "1.2", "1.3"]
            };
            let values: Vec<String> = versions
                .iter()
                .map(|version| format!("TLS {version}"))
                .collect();
            let latest = versions.last().copied().unwrap_or_default();
            Change {
                subject: format!(
                    "the minimum TLS version accepted by the {} load balancer",
                    ctx.service
                ),
                golds: vec![format!("TLS {latest}"), latest.to_string()],
                values,
                questions: [
                    "What is the minimum TLS version accepted now?",
                    "Which TLS version do clients need at least, as of today?",
                ],
            }
        }
        _ => {
            let values: Vec<String> = take(pick, &[6, 8, 10, 12])
                .iter()
                .map(|hours| format!("{hours} hours"))
                .collect();
            let latest = values.last().cloned().unwrap_or_default();
            Change {
                subject: format!("the maximum session length in the {}", ctx.system),
                golds: vec![latest.clone(), latest.replace(" hours", "-hour")],
                values,
                questions: [
                    "How long may a session last now?",
                    "What is the current maximum session length?",
                ],
            }
        }
    }
}

const STALE_SOURCES: &[&str] = &[
    "According to the <system> runbook, {subject} is {value}.",
    "An older page on the <org> wiki says that {subject} is {value}.",
    "In last year's onboarding deck, the <team> wrote that {subject} was {value}.",
    "A note that <first> sent in the spring states that {subject} is {value}.",
    "Until recently, {subject} was {value}.",
    "The original design document for <svc> sets {subject} to {value}.",
];

const UPDATE_OPENERS: &[&str] = &[
    "",
    "For the <team>'s records:",
    "Background for <first>, who joined the <team> this week.",
    "From the <org> change log for the <system>.",
    "<first2> asked the assistant to keep track of this.",
];

const INTERMEDIATE: &[&str] = &[
    "During the pilot it was briefly changed to {value}.",
    "A temporary exception later set it to {value}.",
    "For a few weeks after the migration it was {value}.",
];

const UPDATES: &[&str] = &[
    "However, a change approved by <name3> on {weekday} set it to {value}.",
    "The <team> has since updated it to {value}.",
    "As of this month it is {value}, per the revised standard.",
    "<first2> confirmed in the latest review that it is now {value}.",
    "That is out of date: the current value, effective this quarter, is {value}.",
];

fn memory_update(pick: &mut Pick, ctx: &Ctx) -> Item {
    let change = change(pick, ctx);
    let fill = |template: &str, value: &str| {
        ctx.fill(template)
            .replace("{subject}", &change.subject)
            .replace("{value}", value)
    };
    let (stale, latest) = change.values.split_at(change.values.len() - 1);
    let mut sentences = Vec::new();
    let opener = ctx.fill(pick.one(UPDATE_OPENERS));
    if !opener.is_empty() {
        sentences.push(opener);
    }
    for (step, value) in stale.iter().enumerate() {
        let template = if step == 0 {
            pick.one(STALE_SOURCES)
        } else {
            pick.one(INTERMEDIATE)
        };
        sentences.push(fill(template, value));
    }
    let weekday = pick.one(WEEKDAYS);
    sentences.push(fill(pick.one(UPDATES), &latest[0]).replace("{weekday}", weekday));
    sentences.push(pick.one(&change.questions).to_string());
    Item {
        prompt: sentences.join(" "),
        golds: change.golds,
        durable: Some(latest.to_vec()),
        stale: Some(stale.to_vec()),
    }
}

// =============================================================================================
// Planted defects
// =============================================================================================

/// A name that appears in no fixture text.
const ABSENT_NAME: &str = "Quentin Marlowe";

fn planted_items(category: &str, domain: &str, seq: usize) -> Vec<(Value, &'static str)> {
    let base = authored_item(category, domain, seq, 2, PLANTED_SLOTS);
    let first_gold = base.golds.first().cloned().unwrap_or_default();
    let with = |edit: &dyn Fn(&mut Item)| {
        let mut item = base.clone();
        edit(&mut item);
        item.to_value()
    };
    let mut planted = vec![
        (json!({ "prompt": base.prompt }), "missing_field"),
        (
            with(&|item| item.prompt = " \n ".to_string()),
            "empty_prompt",
        ),
        (
            json!({ "prompt": base.prompt, "golds": first_gold }),
            "wrong_type",
        ),
        (with(&|item| item.golds.clear()), "empty_golds"),
        (
            with(&|item| item.golds = vec!["—".to_string()]),
            "gold_blank",
        ),
        (
            with(&|item| item.golds = vec![format!("the answer is exactly {first_gold}")]),
            "gold_too_long",
        ),
        (
            with(&|item| item.golds = vec![first_gold.clone(), "ISO 9001".to_string()]),
            "golds_distinct_facts",
        ),
        (
            with(&|item| item.prompt = "…".to_string()),
            "placeholder_prompt",
        ),
        (
            with(&|item| item.prompt = cut_mid_sentence(&item.prompt)),
            "prompt_cut",
        ),
        (
            with(&|item| item.golds = vec!["TBD".to_string()]),
            "gold_placeholder",
        ),
        (
            with(&|item| item.golds = vec!["N".to_string()]),
            "gold_too_short",
        ),
        (
            with(&|item| item.golds = vec![MACHINE_MADE_GOLD.to_string()]),
            "gold_machine_made",
        ),
    ];
    if matches!(
        category,
        "long_document_qa" | "multi_document_qa" | "memory_recall" | "memory_update"
    ) {
        planted.push((
            with(&|item| {
                item.prompt.push_str(
                    "\n\nThe figures above were last reviewed by the governance board in March.",
                )
            }),
            "question_not_last",
        ));
    }
    if matches!(
        category,
        "long_document_qa"
            | "multi_document_qa"
            | "conversational"
            | "memory_recall"
            | "memory_update"
    ) {
        planted.push((
            with(&|item| {
                let gold = item.golds.first().cloned().unwrap_or_default();
                item.prompt.push_str(&format!(" Is it {gold}?"));
            }),
            "gold_in_question",
        ));
    }
    let mut more: Vec<(Value, &'static str)> = match category {
        "simple_factual" | "bloated_factual" | "reasoning" | "bloated_reasoning" => {
            vec![(
                with(&|item| item.prompt.push_str(&format!(" My guess is {first_gold}."))),
                "gold_in_prompt",
            )]
        }
        "long_document_qa" => {
            let short = drawn(
                category,
                domain,
                seq,
                100,
                PLANTED_SLOTS,
                |pick, ctx| {
                    let document = any_document(pick, ctx);
                    let (question, golds) = document.questions[0].clone();
                    Item::plain(
                        format!("{}\n\nQuestion: {question}", document_body(&document, 2)),
                        golds,
                    )
                },
                |_| true,
            );
            vec![
                (short.to_value(), "doc_length"),
                (
                    with(&|item| item.golds = vec![ABSENT_NAME.to_string()]),
                    "gold_not_in_context",
                ),
                (
                    with(&|item| {
                        if let Some(at) = item.prompt.rfind("\n\nQuestion: ") {
                            item.prompt.truncate(at);
                            item.prompt
                                .push_str("\n\nThese terms apply from the start of next quarter.");
                        }
                    }),
                    "no_question",
                ),
            ]
        }
        "multi_document_qa" => {
            let three = drawn(
                category,
                domain,
                seq,
                100,
                PLANTED_SLOTS,
                |pick, ctx| multi_document_with(pick, ctx, 3),
                |_| true,
            );
            vec![
                (three.to_value(), "snippet_count"),
                (
                    with(&|item| item.prompt = item.prompt.replace("[Doc 2]", "[Doc 7]")),
                    "snippet_labels",
                ),
                (
                    with(&|item| item.golds = vec![ABSENT_NAME.to_string()]),
                    "gold_not_in_context",
                ),
            ]
        }
        "conversational" => vec![
            (
                with(&|item| item.prompt.push_str("\nAgent: Let me check that for you.")),
                "turn_structure",
            ),
            (
                with(&|item| item.golds = vec![ABSENT_NAME.to_string()]),
                "gold_not_in_context",
            ),
        ],
        "memory_recall" => {
            let three = drawn(
                category,
                domain,
                seq,
                100,
                PLANTED_SLOTS,
                |pick, ctx| memory_recall_with(pick, ctx, 2),
                |_| true,
            );
            vec![
                (three.to_value(), "memory_block"),
                (
                    with(&|item| {
                        item.golds = vec![ABSENT_NAME.to_string()];
                        item.durable = Some(vec![ABSENT_NAME.to_string()]);
                    }),
                    "gold_not_in_context",
                ),
                (
                    with(&|item| item.durable = Some(Vec::new())),
                    "missing_durable",
                ),
                (
                    with(&|item| item.durable = Some(vec![ABSENT_NAME.to_string()])),
                    "durable_not_gold",
                ),
                (
                    with(&|item| item.stale = Some(vec![ABSENT_NAME.to_string()])),
                    "stale_not_in_prompt",
                ),
            ]
        }
        "memory_update" => {
            let subsumed = drawn(
                category,
                domain,
                seq,
                100,
                PLANTED_SLOTS,
                stale_contains_gold,
                |_| true,
            );
            vec![
                (subsumed.to_value(), "stale_graded_correct"),
                (with(&|item| item.stale = Some(Vec::new())), "missing_stale"),
                (
                    with(&|item| item.stale = Some(vec![ABSENT_NAME.to_string()])),
                    "stale_not_in_prompt",
                ),
                (
                    with(&|item| item.durable = Some(Vec::new())),
                    "missing_durable",
                ),
                (
                    with(&|item| item.durable = item.stale.clone()),
                    "durable_not_gold",
                ),
            ]
        }
        _ => Vec::new(),
    };
    match category {
        "reasoning" | "bloated_reasoning" => {
            more.push((
                with(&|item| item.golds = vec!["roughly a dozen".to_string()]),
                "gold_not_numeric",
            ));
        }
        _ => {}
    }
    match category {
        "bloated_factual" => {
            let plain = drawn(
                category,
                domain,
                seq,
                100,
                PLANTED_SLOTS,
                simple_factual,
                gold_not_in_prompt,
            );
            more.push((plain.to_value(), "not_bloated"));
        }
        "bloated_reasoning" => {
            let terse = drawn(
                category,
                domain,
                seq,
                100,
                PLANTED_SLOTS,
                terse_capacity,
                gold_not_in_prompt,
            );
            more.push((terse.to_value(), "not_bloated"));
        }
        _ => {}
    }
    planted.extend(more);
    planted
}

/// A gold such as a careless model invents: a URL under a placeholder host with a random token.
const MACHINE_MADE_GOLD: &str = "https://example.com/port-5946wvmccsxpjyznyaamf3sb21rspd07c8hqwsti";

/// The first 60% of the prompt's words, ending on a dangling "the", as a reply cut mid-sentence.
fn cut_mid_sentence(prompt: &str) -> String {
    let words: Vec<&str> = prompt.split(' ').collect();
    let keep = (words.len() * 3 / 5).max(1);
    format!("{} and the", words[..keep].join(" "))
}

/// A memory_update item whose stale value contains its gold: stale `300 days`, gold `30`.
fn stale_contains_gold(pick: &mut Pick, ctx: &Ctx) -> Item {
    let latest = pick.one(&[14_u64, 21, 30, 45, 60]);
    let stale = latest * 10;
    Item {
        prompt: format!(
            "Until this spring, {} kept {} debug logs for {stale} days. To cut storage costs, the {} reduced the period to {latest} days. How many days are debug logs kept now?",
            ctx.org, ctx.system, ctx.team
        ),
        golds: vec![latest.to_string(), format!("{latest} days")],
        durable: Some(vec![format!("{latest} days")]),
        stale: Some(vec![format!("{stale} days")]),
    }
}

/// A capacity problem in about thirty words: valid except that it is not bloated.
fn terse_capacity(pick: &mut Pick, _ctx: &Ctx) -> Item {
    let needed = pick.between(6, 48);
    let per_unit = 20 * pick.between(4, 40);
    let utilisation = 5 * pick.between(10, 17);
    let spares = pick.between(2, 4);
    let peak = needed * per_unit * utilisation / 100;
    let answer = (needed + spares).to_string();
    Item::plain(
        format!(
            "Peak load is {} requests per second; each pod handles {} requests per second at {utilisation}% target utilisation, and {spares} spare pods are kept. How many pods are needed?",
            grouped(peak),
            grouped(per_unit)
        ),
        vec![answer.clone(), format!("{answer} pods")],
    )
}
