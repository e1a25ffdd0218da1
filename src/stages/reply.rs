//! Turns an authoring model's chat-completion response into raw item objects. Models wrap their
//! JSON in `<think>` blocks, code fences and prose, and get cut off at the token limit; this module
//! recovers every complete item it can, in time linear in the reply, and names each failure with
//! a stable code so that a reply that does not parse becomes a recorded reject, never a crash.
//! Its reasoning filter, [`without_thinking`], is also the one the repair stage reads verifier
//! replies through, so both stages agree on which part of a reply the model meant as its answer.

use crate::util::bytescan::ByteSet;
use crate::util::json_walk::{Key, KeyName, Kind, Walked};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use thiserror::Error;

/// How many `{`/`[` positions are tried as the start of a lone JSON value when the reply has
/// neither an `"items": [` key nor a bare array of objects. A constant keeps the work linear.
const LONE_VALUE_STARTS: usize = 8;

/// How much of a malformed element is kept for the rejects file.
const MALFORMED_SNIPPET_CHARS: usize = 200;

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// The text of the first choice of a chat completion and why its generation stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub content: String,
    /// `"stop"`, `"length"` (cut off at the token limit), … as the server reported it.
    pub finish_reason: Option<String>,
}

/// The item values found in a reply, before any validation.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedItems {
    /// Every complete element of the items array, in reply order (not necessarily objects).
    pub items: Vec<Value>,
    /// The reply ended inside the items array: elements after the last complete one are lost.
    pub truncated: bool,
    /// The start of each array element that was not valid JSON and was skipped.
    pub malformed: Vec<String>,
}

/// Why a reply yielded no items. `code()` is stable and is written to `rejects.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReplyError {
    #[error("response has no message content: {0}")]
    NoContent(String),
    #[error("reply is empty")]
    Empty,
    #[error("reply is only thinking: nothing follows the <think> block")]
    OnlyThinking,
    #[error("reply contains no parseable JSON")]
    NoJson,
    #[error("reply JSON has no items: {0}")]
    NoItems(String),
    #[error("reply was cut off before its first complete item")]
    Truncated,
}

impl ReplyError {
    pub fn code(&self) -> &'static str {
        match self {
            ReplyError::NoContent(_) => "no_content",
            ReplyError::Empty => "empty_reply",
            ReplyError::OnlyThinking => "only_thinking",
            ReplyError::NoJson => "no_json",
            ReplyError::NoItems(_) => "no_items",
            ReplyError::Truncated => "truncated",
        }
    }
}

/// The parts of a chat-completion body that the stages read — the first choice's message and
/// finish reason, and the token counts — taken from its JSON without building the rest. Any JSON
/// value reads (a body that is not an object just has none of the parts), and a text is refused
/// only where a `serde_json::Value` would refuse it. Where a key repeats, its last value counts,
/// as in a `Value`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResponseBody {
    /// `choices[0]`, where `choices` is an array with an element.
    first_choice: Option<Choice>,
    usage: TokenCounts,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Choice {
    /// Only a string counts.
    finish_reason: Option<String>,
    /// Present, of whatever type.
    message: Option<Message>,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Message {
    content: Option<Content>,
    /// Only a string counts.
    refusal: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
enum Content {
    Text(String),
    Other(Kind),
}

/// The `usage` counts of a body; a count that is missing or not a whole number reads as 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCounts {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl ResponseBody {
    /// `choices[0].message.content` and `choices[0].finish_reason`, or why there is no content.
    pub fn reply(&self) -> Result<Reply, ReplyError> {
        let choice = self
            .first_choice
            .as_ref()
            .ok_or_else(|| ReplyError::NoContent("the response body has no choices[0]".into()))?;
        let finish_reason = choice.finish_reason.clone();
        let message = choice
            .message
            .as_ref()
            .ok_or_else(|| ReplyError::NoContent("choices[0] has no message".into()))?;
        match (&message.content, &message.refusal) {
            (Some(Content::Text(content)), _) => Ok(Reply {
                content: content.clone(),
                finish_reason,
            }),
            (_, Some(refusal)) => Err(ReplyError::NoContent(format!(
                "the model refused: {refusal}"
            ))),
            (None | Some(Content::Other(Kind::Null)), None) => Err(ReplyError::NoContent(format!(
                "choices[0].message.content is missing (finish_reason: {})",
                finish_reason.as_deref().unwrap_or("none")
            ))),
            (Some(Content::Other(kind)), None) => Err(ReplyError::NoContent(format!(
                "choices[0].message.content is {}, not a string",
                kind.described()
            ))),
        }
    }

    pub fn tokens(&self) -> TokenCounts {
        self.usage
    }
}

impl<'de> Deserialize<'de> for ResponseBody {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Picked::deserialize(deserializer).map(|Picked(body)| body)
    }
}

/// A part of a body read by its JSON type: what a string, a whole number, an object or an array
/// give is the part's own; anything else is walked (see [`Walked`]) and named by its kind.
trait Pick: Sized {
    fn other(kind: Kind) -> Self;

    fn text(_: &str) -> Self {
        Self::other(Kind::String)
    }

    fn whole_number(_: u64) -> Self {
        Self::other(Kind::Number)
    }

    fn object<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<Walked, Walked>()?.is_some() {}
        Ok(Self::other(Kind::Object))
    }

    fn array<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<Walked>()?.is_some() {}
        Ok(Self::other(Kind::Array))
    }
}

/// Reads any JSON value into the part `T` (through `deserialize_any`, as a `Value` is read).
struct Picked<T>(T);

impl<'de, T: Pick> Deserialize<'de> for Picked<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(PickVisitor(std::marker::PhantomData))
            .map(Picked)
    }
}

struct PickVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Pick> Visitor<'de> for PickVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<T, E> {
        Ok(T::other(Kind::Bool))
    }

    fn visit_i64<E>(self, _: i64) -> Result<T, E> {
        Ok(T::other(Kind::Number))
    }

    fn visit_u64<E>(self, n: u64) -> Result<T, E> {
        Ok(T::whole_number(n))
    }

    fn visit_f64<E>(self, _: f64) -> Result<T, E> {
        Ok(T::other(Kind::Number))
    }

    fn visit_str<E>(self, text: &str) -> Result<T, E> {
        Ok(T::text(text))
    }

    fn visit_none<E>(self) -> Result<T, E> {
        Ok(T::other(Kind::Null))
    }

    fn visit_unit<E>(self) -> Result<T, E> {
        Ok(T::other(Kind::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        Picked::deserialize(deserializer).map(|Picked(part)| part)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::array(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::object(map)
    }
}

/// The keys a body's parts are found under; any other key is `Other`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Choices,
    Usage,
    FinishReason,
    Message,
    Content,
    Refusal,
    PromptTokens,
    CompletionTokens,
    Other,
}

impl KeyName for Part {
    fn named(key: &str) -> Self {
        match key {
            "choices" => Part::Choices,
            "usage" => Part::Usage,
            "finish_reason" => Part::FinishReason,
            "message" => Part::Message,
            "content" => Part::Content,
            "refusal" => Part::Refusal,
            "prompt_tokens" => Part::PromptTokens,
            "completion_tokens" => Part::CompletionTokens,
            _ => Part::Other,
        }
    }
}

/// Reads an object's entries: `read` takes the value of each key it wants (and says so), and
/// the rest are walked.
fn read_fields<'de, A: MapAccess<'de>>(
    mut map: A,
    mut read: impl FnMut(Part, &mut A) -> Result<bool, A::Error>,
) -> Result<(), A::Error> {
    while let Some(Key(key)) = map.next_key::<Key<Part>>()? {
        if !read(key, &mut map)? {
            map.next_value::<Walked>()?;
        }
    }
    Ok(())
}

fn value<'de, T: Pick, A: MapAccess<'de>>(map: &mut A) -> Result<T, A::Error> {
    map.next_value::<Picked<T>>().map(|Picked(part)| part)
}

impl Pick for ResponseBody {
    fn other(_: Kind) -> Self {
        ResponseBody::default()
    }

    fn object<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut body = ResponseBody::default();
        read_fields(map, |key, map| {
            match key {
                Part::Choices => body.first_choice = value::<FirstOf<Choice>, _>(map)?.0,
                Part::Usage => body.usage = value(map)?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(body)
    }
}

/// The first element of an array; nothing for an empty array or any other value.
struct FirstOf<T>(Option<T>);

impl<T: Pick> Pick for FirstOf<T> {
    fn other(_: Kind) -> Self {
        FirstOf(None)
    }

    fn array<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let first = seq.next_element::<Picked<T>>()?.map(|Picked(part)| part);
        while seq.next_element::<Walked>()?.is_some() {}
        Ok(FirstOf(first))
    }
}

impl Pick for Choice {
    fn other(_: Kind) -> Self {
        Choice::default()
    }

    fn object<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut choice = Choice::default();
        read_fields(map, |key, map| {
            match key {
                Part::FinishReason => choice.finish_reason = value(map)?,
                Part::Message => choice.message = Some(value(map)?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(choice)
    }
}

impl Pick for Message {
    fn other(_: Kind) -> Self {
        Message::default()
    }

    fn object<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut message = Message::default();
        read_fields(map, |key, map| {
            match key {
                Part::Content => message.content = Some(value(map)?),
                Part::Refusal => message.refusal = value(map)?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(message)
    }
}

impl Pick for Content {
    fn other(kind: Kind) -> Self {
        Content::Other(kind)
    }

    fn text(text: &str) -> Self {
        Content::Text(text.to_owned())
    }
}

impl Pick for TokenCounts {
    fn other(_: Kind) -> Self {
        TokenCounts::default()
    }

    fn object<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut counts = TokenCounts::default();
        read_fields(map, |key, map| {
            match key {
                Part::PromptTokens => {
                    counts.prompt_tokens = value::<Option<u64>, _>(map)?.unwrap_or(0)
                }
                Part::CompletionTokens => {
                    counts.completion_tokens = value::<Option<u64>, _>(map)?.unwrap_or(0)
                }
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(counts)
    }
}

impl Pick for Option<String> {
    fn other(_: Kind) -> Self {
        None
    }

    fn text(text: &str) -> Self {
        Some(text.to_owned())
    }
}

impl Pick for Option<u64> {
    fn other(_: Kind) -> Self {
        None
    }

    fn whole_number(n: u64) -> Self {
        Some(n)
    }
}

/// Finds the authored items in a reply: the array under the first `"items"` key, else the first
/// bare array of objects, else a lone JSON value (an object with `items`, or a single item).
/// Thinking blocks are dropped first; fences and prose around the JSON are simply not looked at.
pub fn parse_items(content: &str) -> Result<ParsedItems, ReplyError> {
    if content.trim().is_empty() {
        return Err(ReplyError::Empty);
    }
    let text = visible_json_text(content)?;
    if let Some(start) = items_array_start(&text).or_else(|| bare_array_start(&text)) {
        return array_elements(text.get(start..).unwrap_or_default());
    }
    lone_value(&text)
}

/// A reply with its reasoning removed, and what was removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visible {
    pub text: String,
    /// Some reasoning was removed.
    pub had_thinking: bool,
    /// A `<think>` block was never closed: everything after its opening tag was removed.
    pub unclosed_thinking: bool,
}

/// The reply without reasoning: every `<think>…</think>` block, everything after an unclosed
/// `<think>`, and the text before a leading `</think>` (a reply may begin inside a block whose
/// opening tag was part of the chat template) are removed. Every reader of model replies uses
/// this one definition, so the authoring and the repair stage agree on what a model said.
pub fn without_thinking(content: &str) -> Visible {
    let mut rest = match (
        find_tag(content, THINK_CLOSE),
        find_tag(content, THINK_OPEN),
    ) {
        (Some(close), open) if open.is_none_or(|open| close < open) => {
            content.get(close + THINK_CLOSE.len()..).unwrap_or_default()
        }
        _ => content,
    };
    let mut had_thinking = rest.len() != content.len();
    let mut unclosed_thinking = false;
    let mut text = String::with_capacity(rest.len());
    while let Some(open) = find_tag(rest, THINK_OPEN) {
        had_thinking = true;
        text.push_str(rest.get(..open).unwrap_or_default());
        let inner = rest.get(open + THINK_OPEN.len()..).unwrap_or_default();
        match find_tag(inner, THINK_CLOSE) {
            Some(close) => rest = inner.get(close + THINK_CLOSE.len()..).unwrap_or_default(),
            None => {
                unclosed_thinking = true;
                rest = "";
            }
        }
    }
    text.push_str(rest);
    Visible {
        text,
        had_thinking,
        unclosed_thinking,
    }
}

/// Where `tag` first occurs in `text`. Most replies hold no tag, or no further one, and
/// `contains` proves that with a vectorised scan that `find` does not have.
fn find_tag(text: &str, tag: &str) -> Option<usize> {
    if text.contains(tag) {
        text.find(tag)
    } else {
        None
    }
}

/// The reply's text outside its reasoning, unless the reasoning is all there is: nothing visible
/// is left, or an unclosed block cut off the reply before any JSON began.
fn visible_json_text(content: &str) -> Result<String, ReplyError> {
    let visible = without_thinking(content);
    let nothing_left = visible.text.trim().is_empty();
    if (visible.had_thinking && nothing_left)
        || (visible.unclosed_thinking && !visible.text.contains(['{', '[']))
    {
        return Err(ReplyError::OnlyThinking);
    }
    Ok(visible.text)
}

/// Byte offset just past the `[` of the first `"items": [` in `text`.
fn items_array_start(text: &str) -> Option<usize> {
    const KEY: &str = "\"items\"";
    let mut from = 0;
    while let Some(found) = text.get(from..).and_then(|rest| rest.find(KEY)) {
        let after_key = from + found + KEY.len();
        let rest = text.get(after_key..).unwrap_or_default().trim_start();
        if let Some(value) = rest.strip_prefix(':').map(str::trim_start) {
            if value.starts_with('[') {
                return Some(text.len() - value.len() + 1);
            }
        }
        from = after_key;
    }
    None
}

/// Byte offset just past the first `[` whose next non-blank character is `{`.
fn bare_array_start(text: &str) -> Option<usize> {
    text.match_indices('[').find_map(|(at, _)| {
        let after = at + 1;
        text.get(after..)
            .is_some_and(|rest| rest.trim_start().starts_with('{'))
            .then_some(after)
    })
}

/// Parses the elements of an array whose `[` has just been consumed, one at a time, so that a
/// cut-off reply keeps its complete elements and a malformed element costs only itself.
fn array_elements(after_bracket: &str) -> Result<ParsedItems, ReplyError> {
    let text = strict_json(after_bracket);
    let bytes = text.as_bytes();
    let mut parsed = ParsedItems {
        items: Vec::new(),
        truncated: false,
        malformed: Vec::new(),
    };
    let mut pos = 0;
    loop {
        pos = skip_separators(bytes, pos);
        match bytes.get(pos) {
            None => {
                parsed.truncated = true;
                break;
            }
            Some(b']') => break,
            Some(_) => {}
        }
        let rest = text.get(pos..).unwrap_or_default();
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value)) => {
                parsed.items.push(value);
                pos += stream.byte_offset();
            }
            Some(Err(error)) if !error.is_eof() => match element_end(bytes, pos) {
                Some(end) => {
                    let raw = text.get(pos..end).unwrap_or_default();
                    parsed
                        .malformed
                        .push(raw.chars().take(MALFORMED_SNIPPET_CHARS).collect());
                    pos = end;
                }
                None => {
                    parsed.truncated = true;
                    break;
                }
            },
            None | Some(Err(_)) => {
                parsed.truncated = true;
                break;
            }
        }
    }
    if parsed.items.is_empty() && parsed.malformed.is_empty() {
        return Err(if parsed.truncated {
            ReplyError::Truncated
        } else {
            ReplyError::NoItems("the items array is empty".into())
        });
    }
    Ok(parsed)
}

fn skip_separators(bytes: &[u8], mut pos: usize) -> usize {
    while bytes
        .get(pos)
        .is_some_and(|b| b.is_ascii_whitespace() || *b == b',')
    {
        pos += 1;
    }
    pos
}

/// End (exclusive) of the array element starting at `start`, by bracket depth outside strings:
/// after its closing bracket, or at the `,`/`]` that ends it. Always past `start`, so a caller
/// that skips elements makes progress. `None` when the text ends first.
fn element_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (at, &byte) in bytes.iter().enumerate().skip(start) {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' | b',' if depth == 0 => return Some(at.max(start + 1)),
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// The quote that opens a JSON string.
const QUOTE: ByteSet<1> = ByteSet {
    bytes: [b'"'],
    below: 0,
};
/// The bytes that matter inside a JSON string: its closing quote, a backslash escape, and the
/// ASCII control characters (below 0x20, and DEL).
const IN_STRING: ByteSet<3> = ByteSet {
    bytes: [b'"', b'\\', 0x7f],
    below: 0x20,
};

/// A model's JSON made strict: raw control characters escaped ([`escape_raw_controls`]) and lone
/// surrogate escapes replaced ([`replace_lone_surrogates`]).
fn strict_json(text: &str) -> Cow<'_, str> {
    match escape_raw_controls(text) {
        Cow::Borrowed(text) => replace_lone_surrogates(text),
        Cow::Owned(text) => Cow::Owned(replace_lone_surrogates(&text).into_owned()),
    }
}

/// The 16-bit unit of a `\uXXXX` escape that starts at `at`.
fn escaped_unit(bytes: &[u8], at: usize) -> Option<u32> {
    match bytes.get(at..at + 6)? {
        [b'\\', b'u', digits @ ..] if digits.iter().all(u8::is_ascii_hexdigit) => {
            u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
        }
        _ => None,
    }
}

/// Replaces every lone UTF-16 surrogate escape (`\uD8b6` with no low half after it, or a low half
/// alone) with `\ufffd`. llama.cpp's JSON grammar lets a model write one, and serde_json refuses
/// the whole value for it, which would lose the item around it.
fn replace_lone_surrogates(text: &str) -> Cow<'_, str> {
    if !text.contains("\\u") {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let (mut copied, mut at) = (0, 0);
    while let Some(offset) = bytes
        .get(at..)
        .and_then(|rest| rest.iter().position(|b| *b == b'\\'))
    {
        at += offset;
        let Some(unit) = escaped_unit(bytes, at) else {
            at += 2; // any other escape, such as `\\`
            continue;
        };
        let low_follows =
            escaped_unit(bytes, at + 6).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low));
        match unit {
            0xD800..=0xDBFF if low_follows => at += 12,
            0xD800..=0xDFFF => {
                let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
                // `at` is a backslash, an ASCII byte, so it is a char boundary.
                out.push_str(&text[copied..at]);
                out.push_str("\\ufffd");
                at += 6;
                copied = at;
            }
            _ => at += 6,
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
    }
}

/// Escapes raw control characters (newlines, tabs) inside JSON strings, which models often emit
/// and strict JSON forbids. Text outside strings is copied unchanged.
fn escape_raw_controls(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut from = 0;
    while let Some(open) = QUOTE.find(bytes, from) {
        from = open + 1;
        while let Some(at) = IN_STRING.find(bytes, from) {
            from = at + 1;
            let replacement = match bytes[at] {
                b'"' => break,
                b'\\' => {
                    from += 1;
                    continue;
                }
                b'\n' => Cow::Borrowed("\\n"),
                b'\r' => Cow::Borrowed("\\r"),
                b'\t' => Cow::Borrowed("\\t"),
                control => Cow::Owned(format!("\\u{:04x}", control)),
            };
            let out = out.get_or_insert_with(|| String::with_capacity(text.len() + 16));
            // Every byte matched above is ASCII, so `at` is a char boundary.
            out.push_str(&text[copied..at]);
            out.push_str(&replacement);
            copied = at + 1;
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
    }
}

/// The last resort: the first JSON value that parses from one of the first few `{`/`[`.
fn lone_value(text: &str) -> Result<ParsedItems, ReplyError> {
    let mut cut_off = false;
    for (start, _) in text.match_indices(['{', '[']).take(LONE_VALUE_STARTS) {
        let candidate = strict_json(text.get(start..).unwrap_or_default());
        match serde_json::Deserializer::from_str(&candidate)
            .into_iter::<Value>()
            .next()
        {
            Some(Ok(value)) => return items_of_value(value),
            Some(Err(error)) if error.is_eof() => cut_off = true,
            _ => {}
        }
    }
    Err(if cut_off {
        ReplyError::Truncated
    } else {
        ReplyError::NoJson
    })
}

fn items_of_value(value: Value) -> Result<ParsedItems, ReplyError> {
    let items = match value {
        Value::Object(mut object) => match object.remove("items") {
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(ReplyError::NoItems(format!(
                    "`items` is {}, not an array",
                    json_kind(&other)
                )))
            }
            None if object.contains_key("prompt") => vec![Value::Object(object)],
            None => {
                return Err(ReplyError::NoItems(
                    "the JSON object has neither an `items` array nor a `prompt`".into(),
                ))
            }
        },
        Value::Array(items) => items,
        other => {
            return Err(ReplyError::NoItems(format!(
                "the JSON value is {}",
                json_kind(&other)
            )))
        }
    };
    if items.is_empty() {
        return Err(ReplyError::NoItems("the items array is empty".into()));
    }
    Ok(ParsedItems {
        items,
        truncated: false,
        malformed: Vec::new(),
    })
}

/// "a string", "an array", … for error messages.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    Kind::of(value).described()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `escape_raw_controls` as it was before it skipped to the bytes that matter: a byte at a time.
    fn escape_raw_controls_bytewise(text: &str) -> Cow<'_, str> {
        let mut out: Option<String> = None;
        let mut copied = 0;
        let mut in_string = false;
        let mut escaped = false;
        for (at, byte) in text.bytes().enumerate() {
            if !in_string {
                in_string = byte == b'"';
                continue;
            }
            if escaped {
                escaped = false;
                continue;
            }
            let replacement = match byte {
                b'\\' => {
                    escaped = true;
                    continue;
                }
                b'"' => {
                    in_string = false;
                    continue;
                }
                b'\n' => Cow::Borrowed("\\n"),
                b'\r' => Cow::Borrowed("\\r"),
                b'\t' => Cow::Borrowed("\\t"),
                b if b.is_ascii_control() => Cow::Owned(format!("\\u{:04x}", b)),
                _ => continue,
            };
            let out = out.get_or_insert_with(|| String::with_capacity(text.len() + 16));
            // Every byte matched above is ASCII, so `at` is a char boundary.
            out.push_str(&text[copied..at]);
            out.push_str(&replacement);
            copied = at + 1;
        }
        match out {
            None => Cow::Borrowed(text),
            Some(mut out) => {
                out.push_str(&text[copied..]);
                Cow::Owned(out)
            }
        }
    }

    #[test]
    fn a_lone_surrogate_escape_becomes_a_replacement_character_and_its_item_parses() {
        // SmolLM2 under the JSON-schema grammar, built for an AVX-512 CPU.
        let reply = r#"{"items": [{"prompt": "ok", "golds": ["a"]}, {"prompt": "2015-May 30Tue \uD8b64cdbdfa achereth", "golds": ["Its All Cody,"]}]}"#;
        let parsed = parse_items(reply).expect("items");
        assert!(parsed.malformed.is_empty(), "{:?}", parsed.malformed);
        assert_eq!(parsed.items.len(), 2);
        assert_eq!(
            parsed.items[1]["prompt"],
            "2015-May 30Tue \u{fffd}4cdbdfa achereth"
        );
        let paired = r#"{"items": [{"prompt": "\ud83d\ude00 \udc00 \\uD800", "golds": ["a"]}]}"#;
        assert_eq!(
            parse_items(paired).expect("items").items[0]["prompt"],
            "\u{1f600} \u{fffd} \\uD800"
        );
    }

    #[test]
    fn raw_controls_are_escaped_inside_strings_only() {
        let text = "{\n \"a\": \"é line\none\tx\\\"\u{1}\"\n}";
        assert_eq!(
            escape_raw_controls(text),
            "{\n \"a\": \"é line\\none\\tx\\\"\\u0001\"\n}"
        );
        assert!(matches!(
            escape_raw_controls("{\n\"clean\": 1\n}"),
            Cow::Borrowed(_)
        ));
    }
    use proptest::prelude::*;

    proptest::proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..Default::default() })]

        #[test]
        fn escape_raw_controls_escapes_as_reading_every_byte_did(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(vec![
                        "\"", "\\", "\\\"", "\\\n", "\n", "\r", "\t", "\u{0}", "\u{1f}",
                        "\u{7f}", "é", "😀", "{", "}", ":", ",", "items",
                    ])
                    .prop_map(str::to_string),
                    "[a-z ]{1,20}",
                    any::<char>().prop_map(String::from),
                ],
                0..24,
            ),
        ) {
            let text: String = pieces.concat();
            proptest::prop_assert_eq!(escape_raw_controls(&text), escape_raw_controls_bytewise(&text));
        }
    }

    use serde_json::json;

    #[test]
    fn without_thinking_removes_blocks_unclosed_tails_and_a_leading_close() {
        let cases = [
            ("no reasoning", "no reasoning", false, false),
            (
                "<think>ANSWER: 3</think>\nANSWER: 5",
                "\nANSWER: 5",
                true,
                false,
            ),
            ("a<think>x</think>b<think>y</think>c", "abc", true, false),
            ("So 10.\n<think>let me check 11", "So 10.\n", true, true),
            (
                "template opened it 9 </think>\nANSWER: 8",
                "\nANSWER: 8",
                true,
                false,
            ),
            ("reasoning</think>kept<think>hidden", "kept", true, true),
            (
                "kept<think>a</think>b</think>c",
                "keptb</think>c",
                true,
                false,
            ),
            ("</think><think>", "", true, true),
            ("<think></think>", "", true, false),
        ];
        for (content, text, had_thinking, unclosed_thinking) in cases {
            assert_eq!(
                without_thinking(content),
                Visible {
                    text: text.to_string(),
                    had_thinking,
                    unclosed_thinking
                },
                "{content:?}"
            );
        }
    }

    const TWO_ITEMS: &str =
        r#"{"items":[{"prompt":"p1","golds":["a"]},{"prompt":"p2","golds":["b"]}]}"#;

    fn prompts(parsed: &ParsedItems) -> Vec<&str> {
        parsed
            .items
            .iter()
            .filter_map(|item| item.get("prompt").and_then(Value::as_str))
            .collect()
    }

    fn code(content: &str) -> &'static str {
        parse_items(content).map_or_else(|e| e.code(), |_| "ok")
    }

    /// The body's reply, read from its JSON text as the cache reads it.
    fn message_content(body: &Value) -> Result<Reply, ReplyError> {
        serde_json::from_str::<ResponseBody>(&body.to_string())
            .expect("every JSON value reads as a body")
            .reply()
    }

    /// What the stages read from a body before `ResponseBody`: `message_content` and the usage
    /// counts over a whole `Value`. The typed reader must give the same answers.
    fn read_from_value_tree(body: &Value) -> (Result<Reply, ReplyError>, TokenCounts) {
        let count = |k: &str| {
            body.get("usage")
                .and_then(|u| u.get(k))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let tokens = TokenCounts {
            prompt_tokens: count("prompt_tokens"),
            completion_tokens: count("completion_tokens"),
        };
        let Some(choice) = body.get("choices").and_then(|choices| choices.get(0)) else {
            let missing = "the response body has no choices[0]";
            return (Err(ReplyError::NoContent(missing.into())), tokens);
        };
        let finish_reason = choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let Some(message) = choice.get("message") else {
            let missing = "choices[0] has no message";
            return (Err(ReplyError::NoContent(missing.into())), tokens);
        };
        let reply = match (
            message.get("content"),
            message.get("refusal").and_then(Value::as_str),
        ) {
            (Some(Value::String(content)), _) => Ok(Reply {
                content: content.clone(),
                finish_reason,
            }),
            (_, Some(refusal)) => Err(ReplyError::NoContent(format!(
                "the model refused: {refusal}"
            ))),
            (None | Some(Value::Null), None) => Err(ReplyError::NoContent(format!(
                "choices[0].message.content is missing (finish_reason: {})",
                finish_reason.as_deref().unwrap_or("none")
            ))),
            (Some(other), None) => Err(ReplyError::NoContent(format!(
                "choices[0].message.content is {}, not a string",
                json_kind(other)
            ))),
        };
        (reply, tokens)
    }

    fn any_scalar() -> BoxedStrategy<Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            "[a-z\\\"\n ]{0,8}".prop_map(Value::from),
        ]
        .boxed()
    }

    fn any_value() -> BoxedStrategy<Value> {
        any_scalar()
            .prop_recursive(3, 12, 3, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                    prop::collection::btree_map("[a-z_]{1,6}", inner, 0..3)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
            .boxed()
    }

    /// An object with each of `keys` absent or holding one of `values`, and maybe an unrelated key.
    fn object_of(
        keys: &'static [&'static str],
        values: impl Strategy<Value = Value> + Clone,
    ) -> impl Strategy<Value = Value> {
        let fields = keys
            .iter()
            .map(|key| prop::option::of(values.clone()).prop_map(move |v| (*key, v)))
            .collect::<Vec<_>>();
        (fields, prop::option::of(any_value())).prop_map(|(fields, extra)| {
            let mut object = serde_json::Map::new();
            if let Some(extra) = extra {
                object.insert("id".into(), extra);
            }
            for (key, value) in fields {
                if let Some(value) = value {
                    object.insert(key.into(), value);
                }
            }
            Value::Object(object)
        })
    }

    fn any_body() -> impl Strategy<Value = Value> {
        let message = prop_oneof![
            object_of(&["content", "refusal", "role"], any_value()),
            any_value()
        ];
        let choice = prop_oneof![
            (message, prop::option::of(any_scalar())).prop_map(|(message, reason)| {
                let mut choice = json!({"index": 0, "message": message});
                if let Some(reason) = reason {
                    choice["finish_reason"] = reason;
                }
                choice
            }),
            object_of(&["finish_reason", "message"], any_value()),
            any_value(),
        ];
        let choices = prop_oneof![
            prop::collection::vec(choice, 0..3).prop_map(Value::from),
            any_value()
        ];
        let usage = prop_oneof![
            object_of(&["prompt_tokens", "completion_tokens"], any_scalar()),
            any_value()
        ];
        prop_oneof![
            4 => (prop::option::of(choices), prop::option::of(usage)).prop_map(|(c, u)| {
                let mut body = json!({"object": "chat.completion"});
                if let Some(c) = c {
                    body["choices"] = c;
                }
                if let Some(u) = u {
                    body["usage"] = u;
                }
                body
            }),
            1 => any_value(),
        ]
    }

    proptest! {
        #[test]
        fn the_typed_body_reads_what_the_value_tree_read(body in any_body()) {
            let expected = read_from_value_tree(&body);
            let from_text: ResponseBody = serde_json::from_str(&body.to_string()).unwrap();
            prop_assert_eq!((from_text.reply(), from_text.tokens()), expected.clone());
            let from_tree: ResponseBody = serde_json::from_value(body).unwrap();
            prop_assert_eq!((from_tree.reply(), from_tree.tokens()), expected);
        }
    }

    #[test]
    fn a_repeated_key_counts_by_its_last_value_as_in_a_value() {
        let texts = [
            r#"{"choices":[{"message":{"content":"first"}}],"choices":[{"message":{"content":"last"}}]}"#,
            r#"{"choices":[{"message":{"content":"first","content":"last"}}],"usage":{"prompt_tokens":5},"usage":{"prompt_tokens":7,"prompt_tokens":"x"}}"#,
            r#"{"choices":[{"finish_reason":"stop","finish_reason":null,"message":{"content":"last"}}]}"#,
        ];
        for text in texts {
            let tree: Value = serde_json::from_str(text).unwrap();
            let typed: ResponseBody = serde_json::from_str(text).unwrap();
            assert_eq!(
                (typed.reply(), typed.tokens()),
                read_from_value_tree(&tree),
                "{text}"
            );
            assert_eq!(typed.reply().unwrap().content, "last");
        }
    }

    #[test]
    fn a_body_is_refused_only_where_a_value_is() {
        let deep = format!(
            r#"{{"choices":[{{"message":{{"content":"x"}}}}],"id":{}1{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        assert!(serde_json::from_str::<ResponseBody>(&deep).is_err());
        let huge = r#"{"usage":{"prompt_tokens":1e400}}"#;
        assert!(serde_json::from_str::<Value>(huge).is_err());
        assert!(serde_json::from_str::<ResponseBody>(huge).is_err());
    }

    #[test]
    fn message_content_reads_first_choice_and_finish_reason() {
        let body = json!({"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"length"}]});
        let reply = message_content(&body).unwrap();
        assert_eq!(reply.content, "hi");
        assert_eq!(reply.finish_reason.as_deref(), Some("length"));
    }

    #[test]
    fn message_content_without_string_content_is_no_content() {
        let cases = [
            json!({}),
            json!({"choices": []}),
            json!({"choices": "x"}),
            json!({"choices": [{"finish_reason": "stop"}]}),
            json!({"choices": [{"message": {"content": null}}]}),
            json!({"choices": [{"message": {"content": 42}}]}),
            json!({"choices": [{"message": {"content": null, "refusal": "no"}}]}),
        ];
        for body in cases {
            let error = message_content(&body).unwrap_err();
            assert_eq!(error.code(), "no_content", "{body}");
        }
        let refused =
            json!({"choices": [{"message": {"content": null, "refusal": "not allowed"}}]});
        assert!(message_content(&refused)
            .unwrap_err()
            .to_string()
            .contains("refused: not allowed"));
        let number = json!({"choices": [{"message": {"content": 42}}]});
        assert!(message_content(&number)
            .unwrap_err()
            .to_string()
            .contains("a number, not a string"));
    }

    #[test]
    fn plain_json_object_yields_its_items() {
        let parsed = parse_items(TWO_ITEMS).unwrap();
        assert_eq!(prompts(&parsed), ["p1", "p2"]);
        assert!(!parsed.truncated);
        assert!(parsed.malformed.is_empty());
    }

    #[test]
    fn think_block_fence_and_prose_are_ignored() {
        let reply = format!(
            "<think>I could write {{\"items\": [{{\"prompt\": \"draft\"}}]}} but no.</think>\n\
             Here are your items:\n```json\n{TWO_ITEMS}\n```\nLet me know if you need more!"
        );
        let parsed = parse_items(&reply).unwrap();
        assert_eq!(prompts(&parsed), ["p1", "p2"]);
    }

    #[test]
    fn reply_starting_inside_a_think_block_drops_the_thinking() {
        let reply =
            format!("the template opened the block… [{{\"prompt\":\"x\"}}]\n</think>\n{TWO_ITEMS}");
        assert_eq!(prompts(&parse_items(&reply).unwrap()), ["p1", "p2"]);
    }

    #[test]
    fn unterminated_or_lone_think_block_is_only_thinking() {
        assert_eq!(code("<think>Let me plan the items. First"), "only_thinking");
        assert_eq!(code("Sure. <think>Let me plan the items."), "only_thinking");
        assert_eq!(code("<think>done thinking</think>\n  "), "only_thinking");
        assert_eq!(
            parse_items("<think>all</think>").unwrap_err().to_string(),
            "reply is only thinking: nothing follows the <think> block"
        );
    }

    #[test]
    fn json_before_an_unterminated_think_block_still_parses() {
        let reply = format!("{TWO_ITEMS}\n<think>trailing thoughts");
        assert_eq!(prompts(&parse_items(&reply).unwrap()), ["p1", "p2"]);
    }

    #[test]
    fn bare_array_of_items_is_accepted() {
        let parsed = parse_items("Items:\n[ {\"prompt\":\"p1\"}, {\"prompt\":\"p2\"} ]").unwrap();
        assert_eq!(prompts(&parsed), ["p1", "p2"]);
    }

    #[test]
    fn items_key_is_preferred_over_an_earlier_array() {
        let reply = format!("Notes: [{{\"note\": 1}}]\n{TWO_ITEMS}");
        assert_eq!(prompts(&parse_items(&reply).unwrap()), ["p1", "p2"]);
    }

    #[test]
    fn single_item_object_is_one_item() {
        let parsed = parse_items("{\"prompt\": \"solo\", \"golds\": [\"x\"]}").unwrap();
        assert_eq!(prompts(&parsed), ["solo"]);
    }

    #[test]
    fn raw_newlines_inside_strings_are_tolerated() {
        let reply = "{\"items\": [{\"prompt\": \"line one\n\tline two\", \"golds\": [\"a\"]}]}";
        let parsed = parse_items(reply).unwrap();
        assert_eq!(prompts(&parsed), ["line one\n\tline two"]);
    }

    #[test]
    fn truncated_reply_keeps_complete_items() {
        let reply = "```json\n{\"items\": [{\"prompt\": \"p1\", \"golds\": [\"a\"]}, {\"prompt\": \"p2\", \"golds\": [\"b\"]}, {\"prompt\": \"p3 is cut of";
        let parsed = parse_items(reply).unwrap();
        assert_eq!(prompts(&parsed), ["p1", "p2"]);
        assert!(parsed.truncated);
    }

    #[test]
    fn reply_cut_between_items_is_truncated() {
        let parsed = parse_items("{\"items\": [{\"prompt\": \"p1\"},").unwrap();
        assert_eq!(prompts(&parsed), ["p1"]);
        assert!(parsed.truncated);
    }

    #[test]
    fn reply_cut_inside_first_item_is_truncated_error() {
        assert_eq!(code("{\"items\": [{\"prompt\": \"half"), "truncated");
        assert_eq!(code("{\"ite"), "truncated");
    }

    #[test]
    fn malformed_element_is_skipped_and_reported() {
        let reply = r#"{"items": [{"prompt": "p1"}, {"prompt": "say "hi" {now}", "golds": []}, {"prompt": "p3",}, {"prompt": "p4"}]}"#;
        let parsed = parse_items(reply).unwrap();
        assert_eq!(prompts(&parsed), ["p1", "p4"]);
        assert_eq!(parsed.malformed.len(), 2);
        assert!(parsed.malformed[0].starts_with("{\"prompt\": \"say "));
        assert!(!parsed.truncated);
    }

    #[test]
    fn wrong_typed_elements_are_kept_for_validation() {
        let parsed = parse_items(r#"{"items": ["just text", 3, {"prompt": "p"}]}"#).unwrap();
        assert_eq!(
            parsed.items,
            [json!("just text"), json!(3), json!({"prompt": "p"})]
        );
    }

    #[test]
    fn replies_without_items_have_stable_codes() {
        assert_eq!(code(""), "empty_reply");
        assert_eq!(code(" \n\t"), "empty_reply");
        assert_eq!(code("I cannot help with that."), "no_json");
        assert_eq!(code("{this is not json}"), "no_json");
        assert_eq!(code("{\"items\": []}"), "no_items");
        assert_eq!(code("{\"items\": {\"prompt\": \"x\"}}"), "no_items");
        assert_eq!(code("{\"answer\": 42}"), "no_items");
        assert_eq!(code("[]"), "no_items");
    }

    #[test]
    fn megabyte_of_garbage_is_rejected_in_linear_time() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let garbage: String = (0..1_000_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from(b" {}[]\":,abc1\\\n"[(state % 14) as usize])
            })
            .collect();
        let adversarial = [
            garbage,
            "{".repeat(1_000_000),
            "[{".repeat(500_000),
            format!("{{\"items\": [{{\"prompt\": \"{}", "x".repeat(1_000_000)),
            "\"items\" ".repeat(100_000),
            format!("{{\"items\": [{}", "{\"a\":1,},".repeat(100_000)),
        ];
        for text in adversarial {
            let started = std::time::Instant::now();
            let _ = parse_items(&text);
            assert!(
                started.elapsed() < std::time::Duration::from_secs(5),
                "took {:?} on {}…",
                started.elapsed(),
                &text[..20]
            );
        }
    }

    #[test]
    fn random_inputs_never_panic_and_ok_means_something_found() {
        const PIECES: &[&str] = &[
            "{",
            "}",
            "[",
            "]",
            "\"",
            ":",
            ",",
            "\\",
            "\n",
            " ",
            "items",
            "\"items\"",
            "prompt",
            "<think>",
            "</think>",
            "```json",
            "1.5",
            "é",
            "😀",
            "null",
            "\u{0}",
        ];
        let mut state = 7_u64;
        for _ in 0..5_000 {
            let mut text = String::new();
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            for _ in 0..(state >> 58) {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(PIECES[(state >> 33) as usize % PIECES.len()]);
            }
            if let Ok(parsed) = parse_items(&text) {
                assert!(
                    !parsed.items.is_empty() || !parsed.malformed.is_empty(),
                    "{text:?}"
                );
            }
        }
    }
}
