//! How the fake model answers: responders that read a request's `custom_id` and body and reply
//! with the testkit's realistic items and a careful panel's answers (`good_responder`), planted wrong keys and misbehaving
//! verifiers (`repair_responder`), or one failed request (`responder_with_one_failure`).

use std::sync::Arc;

use serde_json::Value;

use saseval_testkit::fake_api::{FakeReply, Responder};
use saseval_testkit::replies::{self, VerifierStyle};

/// The parts of a test-template user message: `category=… count=… domain=…`.
pub(crate) fn template_field<'a>(body: &'a Value, key: &str) -> Option<&'a str> {
    let user = body.pointer("/messages/1/content")?.as_str()?;
    user.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

/// `author/<category>/r<round>/<index>` → (category, round, index).
pub(crate) fn author_slot(custom_id: &str) -> Option<(&str, usize, usize)> {
    let mut parts = custom_id.strip_prefix("author/")?.split('/');
    let category = parts.next()?;
    let round = parts.next()?.strip_prefix('r')?.parse().ok()?;
    let index = parts.next()?.parse().ok()?;
    Some((category, round, index))
}

/// The prompt a verifier request asks (the fixture template is `verify:` and the prompt).
pub(crate) fn verified_prompt(body: &Value) -> &str {
    body.pointer("/messages/0/content")
        .and_then(Value::as_str)
        .and_then(|m| m.strip_prefix("verify:\n"))
        .unwrap_or("")
        .trim_end()
}

/// An authoring reply's `{"items": …}` object (replies may come fenced, after a `<think>`
/// block or in prose).
pub(crate) fn items_of(content: &str) -> Value {
    let start = content.find('{').expect("a JSON object in the reply");
    serde_json::Deserializer::from_str(&content[start..])
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .expect("the reply's JSON")
}

/// The prompt an audit request asks (the fixture template is `audit:` and the prompt).
fn audited_prompt(body: &Value) -> &str {
    let user = body
        .pointer("/messages/0/content")
        .and_then(Value::as_str)
        .unwrap_or("");
    user.strip_prefix("audit:\n").unwrap_or(user).trim_end()
}

/// What a careful panel model answers an audit request.
fn panel_reply(body: &Value) -> FakeReply {
    FakeReply::Content(
        replies::panel_answer(audited_prompt(body))
            .unwrap_or_else(|| "I can't tell from the question alone.".to_string()),
    )
}

/// A responder that answers authoring requests with valid fixture items, verifier requests
/// with the correct re-solve and audit requests as a careful panel model.
pub(crate) fn good_responder() -> Responder {
    Arc::new(|custom_id: &str, body: &Value| {
        if custom_id.starts_with("audit/") {
            return panel_reply(body);
        }
        if let Some((category, round, index)) = author_slot(custom_id) {
            let count = template_field(body, "count")
                .and_then(|c| c.parse().ok())
                .unwrap_or(1);
            let domain = template_field(body, "domain").unwrap_or("cloud/DevOps");
            return FakeReply::Content(replies::author_reply(
                category,
                domain,
                count,
                round * 1000 + index,
            ));
        }
        FakeReply::Content(replies::verifier_reply(
            verified_prompt(body),
            VerifierStyle::Correct,
        ))
    })
}

/// `good_responder`, except that every conversational dialog has one speaker only, so the gate
/// rejects every conversational item.
pub(crate) fn one_speaker_dialogs() -> Responder {
    let inner = good_responder();
    Arc::new(move |custom_id: &str, body: &Value| {
        if let Some(("conversational", round, index)) = author_slot(custom_id) {
            let count = template_field(body, "count")
                .and_then(|c| c.parse().ok())
                .unwrap_or(1);
            return FakeReply::Content(replies::author_reply_with_labels(
                "conversational",
                "telecom",
                count,
                round * 1000 + index,
                ("Customer:", "Customer:"),
            ));
        }
        inner(custom_id, body)
    })
}

/// The responder for repair tests: reasoning r0/0000 carries the wrong-key fixture; verifier
/// `v-b` misbehaves on chosen bloated_reasoning items.
pub(crate) fn repair_responder() -> Responder {
    let inner = good_responder();
    Arc::new(move |custom_id: &str, body: &Value| {
        if custom_id == "author/reasoning/r0/0000" {
            return FakeReply::Content(replies::wrong_key_reasoning_reply("fintech & payments", 0));
        }
        if let Some(rest) = custom_id.strip_prefix("repair/") {
            let prompt = verified_prompt(body);
            let style = match rest {
                "bloated_reasoning.r0.0000.0/v-b" => VerifierStyle::WrongBy(3.0),
                "bloated_reasoning.r0.0000.1/v-b" => VerifierStyle::Unparseable,
                "bloated_reasoning.r0.0000.2/v-b" => VerifierStyle::ExprMismatch,
                _ => VerifierStyle::Correct,
            };
            return FakeReply::Content(replies::verifier_reply(prompt, style));
        }
        inner(custom_id, body)
    })
}

/// `good_responder`, except that one technical_code request fails, so batches have error files.
pub(crate) fn responder_with_one_failure() -> Responder {
    let inner = good_responder();
    Arc::new(move |custom_id: &str, body: &Value| {
        if custom_id == "author/technical_code/r0/0001" {
            return FakeReply::Error {
                status: 400,
                body: serde_json::json!({"error": {"message": "Failed to generate JSON", "type": "invalid_request_error", "code": "json_validate_failed"}}),
            };
        }
        inner(custom_id, body)
    })
}

/// A stable number in 0..100 for `text` (FNV-1a), so that a responder's losses are the same
/// on every run and after every resume.
pub(crate) fn percentile(text: &str) -> u64 {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    hash % 100
}

/// Categories whose items the lossy panel misses now and then, and where near-copies appear.
const PANEL_MISSES: [&str; 4] = [
    "technical_code",
    "long_document_qa",
    "conversational",
    "memory_update",
];
const NEAR_COPIES: [&str; 2] = ["long_document_qa", "memory_update"];

/// A model and a panel that lose realistic shares of items after the author gate, as a real
/// run does: in two categories every third reply ends with a near-copy of its first item (dedup
/// drops it); the panel misses the key of about one item in five in four categories (the audit
/// flags it); and verifier `v-b` is off on about one numeric item in eight (repair flags it).
/// Everything else is `good_responder`'s.
pub(crate) fn lossy_responder() -> Responder {
    losing(good_responder())
}

/// `inner`, losing items after the gate as `lossy_responder` does.
pub(crate) fn losing(inner: Responder) -> Responder {
    Arc::new(move |custom_id: &str, body: &Value| {
        if let Some(rest) = custom_id.strip_prefix("audit/") {
            let item = rest.split('/').next().unwrap_or("");
            let category = item.split('.').next().unwrap_or("");
            if PANEL_MISSES.contains(&category) && percentile(item) < 20 {
                return FakeReply::Content("I am not sure; it depends on the setup.".into());
            }
            // A near-copy asks what its original asks: the panel answers it the same way.
            let prompt = audited_prompt(body);
            if replies::panel_answer(prompt).is_none() {
                let original = prompt.replacen(" this ", " the ", 1);
                if let Some(answer) = replies::panel_answer(&original) {
                    return FakeReply::Content(answer);
                }
            }
        }
        if let Some(rest) = custom_id.strip_prefix("repair/") {
            if rest.ends_with("/v-b") && percentile(rest) < 12 {
                let style = VerifierStyle::WrongBy(3.0);
                return FakeReply::Content(replies::verifier_reply(verified_prompt(body), style));
            }
        }
        let reply = inner(custom_id, body);
        match (author_slot(custom_id), reply) {
            (Some((category, _, index)), FakeReply::Content(content))
                if NEAR_COPIES.contains(&category) && index % 3 == 1 =>
            {
                FakeReply::Content(with_near_copy(&content))
            }
            (_, reply) => reply,
        }
    })
}

/// An authoring reply whose last item is replaced by a near-copy of its first (one word changed).
fn with_near_copy(content: &str) -> String {
    let mut reply = items_of(content);
    let Some(items) = reply["items"].as_array_mut() else {
        return content.to_string();
    };
    if items.len() < 2 {
        return content.to_string();
    }
    let mut copy = items[0].clone();
    if let Some(prompt) = copy["prompt"].as_str() {
        copy["prompt"] = Value::String(prompt.replacen(" the ", " this ", 1));
    }
    if let Some(last) = items.last_mut() {
        *last = copy;
    }
    reply.to_string()
}
