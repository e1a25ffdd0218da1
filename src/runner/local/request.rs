//! What the local engine reads from an OpenAI chat-completion request body: the messages, the
//! sampling fields with OpenAI's defaults, the completion budget and the grammar a
//! `response_format` asks for. Parsing is kept apart from the engine so every rule about a body is
//! tested without a model, and a bad body is a typed error, never a panic.

use llama_cpp_2::json_schema_to_grammar;
use serde_json::Value;

use super::{LocalError, DEFAULT_MAX_TOKENS, LLAMA_RANDOM_SEED};

/// Any JSON object, for `response_format: {"type": "json_object"}`. Strings exclude raw control
/// characters so the reply parses with strict JSON parsers; whitespace is bounded so the model
/// cannot spend its budget on blank lines.
pub(super) const JSON_OBJECT_GRAMMAR: &str = r#"root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") space
object ::= "{" space ( string ":" space value ( "," space string ":" space value )* )? "}" space
array  ::= "[" space ( value ( "," space value )* )? "]" space
string ::= "\"" char* "\"" space
char   ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]+)? ([eE] [-+]? [0-9]{1,15})? space
space  ::= | " " | "\n"{1,2} [ \t]{0,20}
"#;

#[derive(Debug, Clone, PartialEq)]
pub(super) struct ChatMessage {
    pub(super) role: String,
    pub(super) content: String,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Sampling {
    Greedy,
    Random {
        temperature: f32,
        top_p: f32,
        seed: u32,
    },
}

/// llama.cpp's DRY ("don't repeat yourself") sampler, asked for with the body fields llama.cpp's
/// own server reads: a token that would make a run of tokens repeat earlier text (prompt or
/// reply) for longer than `allowed_length` is pushed down by `multiplier × base^(run −
/// allowed_length)`. A run ends at any token holding one of the breakers.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Dry {
    pub(super) multiplier: f32,
    pub(super) base: f32,
    pub(super) allowed_length: i32,
    /// How many of the latest tokens it looks at (at most the context); `None`: the whole
    /// context.
    pub(super) penalty_last_n: Option<i32>,
    pub(super) breakers: Vec<String>,
}

/// llama.cpp's defaults for the fields a body leaves out.
const DRY_BASE: f32 = 1.75;
const DRY_ALLOWED_LENGTH: i32 = 2;
const DRY_BREAKERS: [&str; 4] = ["\n", ":", "\"", "*"];
/// Bounds on the breakers: building the sampler reads the whole vocabulary once per breaker, and
/// llama.cpp cuts each breaker to 40 characters.
const MOST_DRY_BREAKERS: usize = 64;
const LONGEST_DRY_BREAKER: usize = 40;

/// The parts of an OpenAI chat-completion body the local engine honours, plus llama.cpp's DRY
/// fields; other fields are ignored, as a batch endpoint ignores options a model does not
/// support.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ChatRequest {
    pub(super) messages: Vec<ChatMessage>,
    pub(super) sampling: Sampling,
    /// `None` when the body asks for no DRY (no `dry_multiplier`, or 0).
    pub(super) dry: Option<Dry>,
    pub(super) max_tokens: u32,
    pub(super) grammar: Option<String>,
    pub(super) model: Option<String>,
}

impl ChatRequest {
    pub(super) fn parse(body: &Value) -> Result<ChatRequest, LocalError> {
        let fields = body
            .as_object()
            .ok_or_else(|| invalid("the body must be a JSON object"))?;
        let temperature = optional_number(body, "temperature")?.unwrap_or(1.0);
        if temperature < 0.0 {
            return Err(invalid("temperature must not be negative"));
        }
        let top_p = optional_number(body, "top_p")?.unwrap_or(1.0);
        if !(top_p > 0.0 && top_p <= 1.0) {
            return Err(invalid("top_p must be in (0, 1]"));
        }
        let sampling = if temperature == 0.0 {
            Sampling::Greedy
        } else {
            Sampling::Random {
                temperature,
                top_p,
                seed: parse_seed(body.get("seed"))?,
            }
        };
        let model = match fields.get("model") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(name.clone()),
            Some(_) => return Err(invalid("model must be a string")),
        };
        Ok(ChatRequest {
            messages: parse_messages(body.get("messages"))?,
            sampling,
            dry: parse_dry(body)?,
            max_tokens: parse_max_tokens(body)?,
            grammar: parse_response_format(body.get("response_format"))?,
            model,
        })
    }
}

fn invalid(reason: &str) -> LocalError {
    LocalError::InvalidBody(reason.to_string())
}

fn parse_messages(messages: Option<&Value>) -> Result<Vec<ChatMessage>, LocalError> {
    let messages = match messages {
        Some(Value::Array(messages)) if !messages.is_empty() => messages,
        _ => return Err(invalid("messages must be a non-empty array")),
    };
    messages
        .iter()
        .enumerate()
        .map(|(index, message)| {
            let role = match message.get("role").and_then(Value::as_str) {
                Some(role @ ("system" | "user" | "assistant")) => role.to_string(),
                _ => {
                    return Err(LocalError::InvalidBody(format!(
                        "messages[{index}].role must be \"system\", \"user\" or \"assistant\""
                    )))
                }
            };
            let content = message
                .get("content")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    LocalError::InvalidBody(format!("messages[{index}].content must be a string"))
                })?;
            Ok(ChatMessage {
                role,
                content: content.to_string(),
            })
        })
        .collect()
}

fn optional_number(body: &Value, key: &str) -> Result<Option<f32>, LocalError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_f64() {
            Some(number) if number.is_finite() => Ok(Some(number as f32)),
            _ => Err(LocalError::InvalidBody(format!("{key} must be a number"))),
        },
    }
}

fn optional_integer(body: &Value, key: &str) -> Result<Option<i32>, LocalError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_i64().map(i32::try_from) {
            Some(Ok(number)) => Ok(Some(number)),
            _ => Err(LocalError::InvalidBody(format!("{key} must be an integer"))),
        },
    }
}

/// The DRY fields of llama.cpp's server: `dry_multiplier` (0 or unset: off), `dry_base`,
/// `dry_allowed_length`, `dry_penalty_last_n` (-1: the whole context) and
/// `dry_sequence_breakers`, with its defaults.
fn parse_dry(body: &Value) -> Result<Option<Dry>, LocalError> {
    let multiplier = optional_number(body, "dry_multiplier")?.unwrap_or(0.0);
    if multiplier < 0.0 {
        return Err(invalid("dry_multiplier must not be negative"));
    }
    let base = optional_number(body, "dry_base")?.unwrap_or(DRY_BASE);
    if base < 1.0 {
        return Err(invalid("dry_base must be 1 or more"));
    }
    let allowed_length =
        optional_integer(body, "dry_allowed_length")?.unwrap_or(DRY_ALLOWED_LENGTH);
    if allowed_length < 0 {
        return Err(invalid("dry_allowed_length must not be negative"));
    }
    let penalty_last_n = match optional_integer(body, "dry_penalty_last_n")? {
        None | Some(-1) => None,
        Some(n) if n > 0 => Some(n),
        Some(_) => return Err(invalid(
            "dry_penalty_last_n must be a positive number of tokens, or -1 for the whole context",
        )),
    };
    let breakers = match body.get("dry_sequence_breakers") {
        None | Some(Value::Null) => DRY_BREAKERS.iter().map(ToString::to_string).collect(),
        Some(Value::Array(breakers)) if breakers.len() <= MOST_DRY_BREAKERS => breakers
            .iter()
            .map(|breaker| match breaker.as_str() {
                Some(text)
                    if !text.is_empty()
                        && !text.contains('\0')
                        && text.chars().count() <= LONGEST_DRY_BREAKER =>
                {
                    Ok(text.to_string())
                }
                _ => Err(LocalError::InvalidBody(format!(
                    "dry_sequence_breakers must hold non-empty strings of at most {LONGEST_DRY_BREAKER} characters"
                ))),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(LocalError::InvalidBody(format!(
                "dry_sequence_breakers must be an array of at most {MOST_DRY_BREAKERS} strings"
            )))
        }
    };
    Ok((multiplier > 0.0).then_some(Dry {
        multiplier,
        base,
        allowed_length,
        penalty_last_n,
        breakers,
    }))
}

/// `max_completion_tokens` is OpenAI's newer name for `max_tokens`; it wins when both are set.
fn parse_max_tokens(body: &Value) -> Result<u32, LocalError> {
    let field = ["max_completion_tokens", "max_tokens"]
        .into_iter()
        .find_map(|key| match body.get(key) {
            None | Some(Value::Null) => None,
            Some(value) => Some((key, value)),
        });
    let Some((key, value)) = field else {
        return Ok(DEFAULT_MAX_TOKENS);
    };
    match value.as_u64().map(u32::try_from) {
        Some(Ok(limit)) if limit > 0 => Ok(limit),
        _ => Err(LocalError::InvalidBody(format!(
            "{key} must be a positive integer"
        ))),
    }
}

/// Folds a JSON integer seed (u64, or a negative i64 as OpenAI allows) into llama.cpp's u32;
/// seeds below 2^32 map to themselves, except the one value llama.cpp reads as "random".
fn parse_seed(seed: Option<&Value>) -> Result<u32, LocalError> {
    let bits = match seed {
        None | Some(Value::Null) => 0,
        Some(value) => value
            .as_u64()
            .or_else(|| value.as_i64().map(|signed| signed as u64))
            .ok_or_else(|| invalid("seed must be an integer"))?,
    };
    let folded = ((bits >> 32) ^ bits) as u32;
    Ok(if folded == LLAMA_RANDOM_SEED {
        LLAMA_RANDOM_SEED - 1
    } else {
        folded
    })
}

fn parse_response_format(format: Option<&Value>) -> Result<Option<String>, LocalError> {
    let Some(format) = format.filter(|format| !format.is_null()) else {
        return Ok(None);
    };
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(JSON_OBJECT_GRAMMAR.to_string())),
        Some("json_schema") => {
            let schema = format
                .get("json_schema")
                .and_then(|spec| spec.get("schema"))
                .filter(|schema| schema.is_object())
                .ok_or_else(|| {
                    invalid("response_format.json_schema.schema must be a JSON object")
                })?;
            json_schema_to_grammar(&schema.to_string())
                .map(Some)
                .map_err(|error| {
                    LocalError::InvalidBody(format!(
                        "response_format.json_schema.schema is not supported by llama.cpp: {error}"
                    ))
                })
        }
        _ => Err(invalid(
            "response_format.type must be \"text\", \"json_object\" or \"json_schema\"",
        )),
    }
}

/// The JSON schema of an authoring reply, as this backend's tests send it.
#[cfg(test)]
pub(super) const ITEMS_SCHEMA: &str = r#"{
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "prompt": {"type": "string"},
                    "golds": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["prompt", "golds"],
                "additionalProperties": false
            }
        }
    },
    "required": ["items"],
    "additionalProperties": false
}"#;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn body_without_messages_is_invalid() {
        for body in [
            json!({}),
            json!({"messages": []}),
            json!({"messages": "hi"}),
        ] {
            assert!(
                matches!(ChatRequest::parse(&body), Err(LocalError::InvalidBody(_))),
                "{body}"
            );
        }
    }

    #[test]
    fn unknown_role_and_non_string_content_are_invalid() {
        let bodies = [
            json!({"messages": [{"role": "tool", "content": "x"}]}),
            json!({"messages": [{"role": "user", "content": null}]}),
        ];
        for body in bodies {
            assert!(
                matches!(ChatRequest::parse(&body), Err(LocalError::InvalidBody(_))),
                "{body}"
            );
        }
    }

    #[test]
    fn sampling_fields_are_read_with_openai_defaults() {
        let messages = json!([{"role": "user", "content": "hi"}]);
        let defaults = ChatRequest::parse(&json!({"messages": messages})).expect("parses");
        assert_eq!(defaults.max_tokens, DEFAULT_MAX_TOKENS);
        assert_eq!(
            defaults.sampling,
            Sampling::Random {
                temperature: 1.0,
                top_p: 1.0,
                seed: 0
            }
        );
        assert_eq!(defaults.grammar, None);
        let greedy =
            ChatRequest::parse(&json!({"messages": messages, "temperature": 0, "max_tokens": 9}))
                .expect("parses");
        assert_eq!(greedy.sampling, Sampling::Greedy);
        assert_eq!(greedy.max_tokens, 9);
        let newer = ChatRequest::parse(
            &json!({"messages": messages, "max_tokens": 9, "max_completion_tokens": 3}),
        )
        .expect("parses");
        assert_eq!(newer.max_tokens, 3);
        for bad in [
            json!({"temperature": -1}),
            json!({"top_p": 0}),
            json!({"max_tokens": 0}),
            json!({"seed": 1.5}),
        ] {
            let mut body = bad.clone();
            body["messages"] = messages.clone();
            assert!(
                matches!(ChatRequest::parse(&body), Err(LocalError::InvalidBody(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn dry_fields_are_read_with_llama_cpp_defaults() {
        let messages = json!([{"role": "user", "content": "hi"}]);
        let parse = |fields: Value| {
            let mut body = fields;
            body["messages"] = messages.clone();
            ChatRequest::parse(&body).map(|request| request.dry)
        };
        assert_eq!(parse(json!({})).unwrap(), None, "off unless asked for");
        assert_eq!(parse(json!({"dry_multiplier": 0})).unwrap(), None);
        assert_eq!(
            parse(json!({"dry_multiplier": 0.8})).unwrap(),
            Some(Dry {
                multiplier: 0.8,
                base: 1.75,
                allowed_length: 2,
                penalty_last_n: None,
                breakers: ["\n", ":", "\"", "*"].map(String::from).to_vec(),
            })
        );
        let chosen = parse(json!({
            "dry_multiplier": 2, "dry_base": 2, "dry_allowed_length": 4,
            "dry_penalty_last_n": 512, "dry_sequence_breakers": ["\n", "7"]
        }))
        .unwrap()
        .expect("on");
        assert_eq!(
            (chosen.base, chosen.allowed_length, chosen.penalty_last_n),
            (2.0, 4, Some(512))
        );
        assert_eq!(chosen.breakers, ["\n", "7"]);
        for bad in [
            json!({"dry_multiplier": -1}),
            json!({"dry_multiplier": "high"}),
            json!({"dry_multiplier": 1, "dry_base": 0.5}),
            json!({"dry_multiplier": 1, "dry_allowed_length": -2}),
            json!({"dry_multiplier": 1, "dry_allowed_length": 2.5}),
            json!({"dry_multiplier": 1, "dry_penalty_last_n": 0}),
            json!({"dry_multiplier": 1, "dry_sequence_breakers": "\n"}),
            json!({"dry_multiplier": 1, "dry_sequence_breakers": [""]}),
            json!({"dry_multiplier": 1, "dry_sequence_breakers": ["a\u{0}b"]}),
            json!({"dry_multiplier": 1, "dry_sequence_breakers": [7]}),
            json!({"dry_multiplier": 1, "dry_sequence_breakers": vec!["x"; 65]}),
        ] {
            assert!(
                matches!(parse(bad.clone()), Err(LocalError::InvalidBody(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn seeds_fold_to_u32_and_avoid_the_random_seed() {
        assert_eq!(parse_seed(None).unwrap(), 0);
        assert_eq!(parse_seed(Some(&json!(42))).unwrap(), 42);
        assert_eq!(
            parse_seed(Some(&json!(u64::from(u32::MAX)))).unwrap(),
            u32::MAX - 1
        );
        assert_eq!(parse_seed(Some(&json!(1_u64 << 32))).unwrap(), 1);
        assert_eq!(parse_seed(Some(&json!(-1))).unwrap(), 0);
    }

    #[test]
    fn response_format_selects_a_grammar() {
        assert_eq!(parse_response_format(None).unwrap(), None);
        assert_eq!(
            parse_response_format(Some(&json!({"type": "text"}))).unwrap(),
            None
        );
        assert_eq!(
            parse_response_format(Some(&json!({"type": "json_object"})))
                .unwrap()
                .as_deref(),
            Some(JSON_OBJECT_GRAMMAR)
        );
        let schema: Value = serde_json::from_str(ITEMS_SCHEMA).unwrap();
        let grammar = parse_response_format(Some(
            &json!({"type": "json_schema", "json_schema": {"schema": schema}}),
        ))
        .unwrap()
        .expect("a grammar");
        assert!(grammar.contains("root ::="), "{grammar}");
        for bad in [json!({"type": "json_schema"}), json!({"type": "xml"})] {
            assert!(
                matches!(
                    parse_response_format(Some(&bad)),
                    Err(LocalError::InvalidBody(_))
                ),
                "{bad}"
            );
        }
    }
}
