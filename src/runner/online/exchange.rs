//! One attempt at one request against `{api.base_url}/chat/completions`, and what its reply
//! means. A reply is untrusted, as in the Batch API path: it is read only up to a bound (an
//! endless or oversized body is cut off, a cut-short one retried), the key is redacted from it
//! before anything parses, prints or stores it, and only a JSON object that answers as the model
//! asked for and carries no `error` is stored as a completion. What the server refuses for this
//! request alone (a 400, a 200 with an error inside, a wrong model) is a final failure with the
//! server's message; what may pass (429, 5xx, a reset, a cut body) is worth another attempt; and
//! what no request can get past (a bad key, a wrong URL, a redirect) stops the job.

use crate::util::printable::printable;
use std::borrow::Cow;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::limiter::ServerLimits;
use crate::config::Api;
use crate::runner::cache::CacheLine;
use crate::runner::client::{self, ApiKey, ClientError};
use crate::runner::ingest::{self, LineOutcome, Storable};
use crate::runner::untrusted::Redactor;
use crate::runner::{BatchError, Failure};

/// The largest completion read: a million generated tokens are a few MB of JSON, and with
/// `online.concurrency` replies in memory at once, a hostile server cannot make the run hold
/// much more than this times the concurrency.
pub const MAX_REPLY_BYTES: usize = 8 << 20;

/// Where the cache says an outcome came from.
const SOURCE: &str = "online";

/// The header that carries a request's custom_id, so that a server's logs (and the tests'
/// fake) can tell requests apart; it holds nothing secret.
pub const CUSTOM_ID_HEADER: &str = "x-saseval-custom-id";

/// The server the job sends to: its URL, the key if one is set, and the HTTP client.
pub struct Endpoint {
    http: reqwest::Client,
    url: String,
    key: Option<ApiKey>,
    redactor: Option<Redactor>,
}

/// What one attempt sends: owned, so that it runs on a task of its own.
#[derive(Debug, Clone)]
pub struct Call {
    pub custom_id: String,
    pub body_sha256: String,
    pub model: String,
    pub body: Vec<u8>,
}

/// How one attempt went.
pub struct Attempt {
    pub verdict: Verdict,
    pub limits: ServerLimits,
    pub latency: Duration,
}

pub enum Verdict {
    /// The server's final answer to this request, rendered as its cache line.
    Answered(Answer),
    /// No answer this time; another attempt may get one. `overloaded`: a 429 or 503.
    Transient { message: String, overloaded: bool },
    /// No request of the job can get past this (a bad key, a wrong URL, a redirect).
    Refused(BatchError),
}

pub struct Answer {
    pub line: CacheLine,
    /// For a failed outcome, `code: message` (the server's message, redacted).
    pub failure: Option<String>,
    pub completion_tokens: u64,
    pub total_tokens: Option<u64>,
}

/// The parts of a reply that are checked before it is stored, each read without trusting its
/// type.
#[derive(Deserialize, Default)]
struct Checked<'a> {
    #[serde(borrow, default)]
    model: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    choices: Option<&'a RawValue>,
    #[serde(borrow, default)]
    usage: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct UsageCounts {
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
}

impl Endpoint {
    pub fn new(api: &Api) -> Result<Endpoint, ClientError> {
        let key = ApiKey::from_env_if_set(&api.api_key_env)?;
        crate::runner::endpoint::check_online_url(&api.base_url, key.is_some())?;
        Ok(Endpoint {
            http: client::http_client(api)?,
            url: format!("{}/chat/completions", api.base_url.trim_end_matches('/')),
            redactor: key.as_ref().map(ApiKey::redactor),
            key,
        })
    }

    /// `{api.base_url}/chat/completions`
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn has_key(&self) -> bool {
        self.key.is_some()
    }

    fn redacted<'b>(&self, bytes: &'b [u8]) -> Cow<'b, [u8]> {
        match &self.redactor {
            Some(redactor) => redactor.bytes(bytes),
            None => Cow::Borrowed(bytes),
        }
    }

    /// Server text made safe to print: the key redacted, control characters escaped, bounded.
    fn printable(&self, text: &str) -> String {
        printable(&String::from_utf8_lossy(&self.redacted(text.as_bytes())))
    }

    /// Sends `call` once and judges the reply.
    pub async fn attempt(&self, call: &Call) -> Attempt {
        let started = Instant::now();
        let mut request = self
            .http
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(call.body.clone());
        if let Ok(id) = reqwest::header::HeaderValue::from_str(&call.custom_id) {
            request = request.header(CUSTOM_ID_HEADER, id);
        }
        if let Some(key) = &self.key {
            request = key.authorize(request);
        }
        let (verdict, limits) = match request.send().await {
            Err(e) => (self.transport_failure(&e), ServerLimits::default()),
            Ok(response) => {
                let limits = ServerLimits::from_headers(response.headers());
                (self.judge(call, response).await, limits)
            }
        };
        Attempt {
            verdict,
            limits,
            latency: started.elapsed(),
        }
    }

    fn transport_failure(&self, e: &reqwest::Error) -> Verdict {
        let message = self.printable(&client::transport_message(e));
        if client::is_certificate_error(e) {
            return Verdict::Refused(BatchError::Client(ClientError::Certificate {
                what: format!("sending to {}", self.url),
                message,
            }));
        }
        let message = if e.is_timeout() {
            format!("no complete reply within api.request_timeout_secs ({message})")
        } else {
            format!("the connection failed ({message})")
        };
        Verdict::Transient {
            message,
            overloaded: false,
        }
    }

    async fn judge(&self, call: &Call, response: reqwest::Response) -> Verdict {
        let status = response.status();
        let code = status.as_u16();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .unwrap_or_else(|| "an address it did not give".into());
            return Verdict::Refused(BatchError::Client(ClientError::Redirected {
                what: format!("sending to {}", self.url),
                status: code,
                location: self.printable(&crate::runner::endpoint::without_userinfo(&location)),
            }));
        }
        let limit = if status.is_success() {
            MAX_REPLY_BYTES
        } else {
            client::MAX_ERROR_BODY_BYTES
        };
        let (bytes, cut_off) = match client::read_at_most(response, limit).await {
            Ok(read) => read,
            Err(e) => {
                return Verdict::Transient {
                    message: format!(
                        "the reply was cut short ({})",
                        self.printable(&client::transport_message(&e))
                    ),
                    overloaded: false,
                }
            }
        };
        let body = self.redacted(&bytes);
        if status.is_success() {
            return self.completion(call, &body, cut_off);
        }
        let raw: Option<&RawValue> = serde_json::from_slice(&body).ok();
        let mut failure = ingest::failure(code, raw, None);
        if failure.message == ingest::NO_MESSAGE && !body.trim_ascii().is_empty() {
            // Not OpenAI's error shape (FastAPI's `{"detail": …}`, a proxy's page): its start.
            failure.message = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
        }
        let message = printable(&failure.message);
        match code {
            429 | 503 | 529 => Verdict::Transient {
                message: format!("HTTP {code}: {message}"),
                overloaded: true,
            },
            408 | 500..=599 => Verdict::Transient {
                message: format!("HTTP {code}: {message}"),
                overloaded: false,
            },
            401 | 403 => Verdict::Refused(BatchError::Client(ClientError::Status {
                what: format!("sending to {}", self.url),
                status: code,
                message: format!("{message} — {}", self.key_hint()),
            })),
            404 => Verdict::Refused(BatchError::OnlineNotFound {
                url: self.url.clone(),
                model: printable(&call.model),
                message,
            }),
            _ => self.answered_failure(call, failure, None),
        }
    }

    fn key_hint(&self) -> &'static str {
        if self.has_key() {
            "check the key in the environment variable named by api.api_key_env"
        } else {
            "the server wants a key: set the environment variable named by api.api_key_env"
        }
    }

    /// A 2xx reply: a completion to store, or a failure the server put in it.
    fn completion(&self, call: &Call, body: &[u8], cut_off: bool) -> Verdict {
        if cut_off {
            let failure = Failure {
                code: "oversized_reply".into(),
                status: Some(200),
                message: format!(
                    "the reply is larger than the {} MB a completion may be; it was not read",
                    MAX_REPLY_BYTES >> 20
                ),
            };
            return self.answered_failure(call, failure, None);
        }
        let raw = match serde_json::from_slice::<&RawValue>(body) {
            Ok(raw) if raw.get().starts_with('{') => raw,
            _ => {
                return Verdict::Transient {
                    message: format!(
                        "HTTP 200 whose body is not a JSON object: {}",
                        printable(&String::from_utf8_lossy(&body[..body.len().min(200)]))
                    ),
                    overloaded: false,
                }
            }
        };
        let checked: Checked = serde_json::from_str(raw.get()).unwrap_or_default();
        let usage: UsageCounts = checked
            .usage
            .and_then(|u| serde_json::from_str(u.get()).ok())
            .unwrap_or_default();
        let present = |v: Option<&RawValue>| v.is_some_and(|v| v.get() != "null");
        if present(checked.error) && !present(checked.choices) {
            let failure = ingest::failure(200, Some(raw), None);
            return self.answered_failure(call, failure, usage.total_tokens);
        }
        let answered_as = checked
            .model
            .and_then(|m| serde_json::from_str::<String>(m.get()).ok());
        if let Some(answered_as) = answered_as.filter(|m| !answers_as(&call.model, m)) {
            let failure = Failure {
                code: "wrong_model".into(),
                status: Some(200),
                message: format!(
                    "asked for model `{}`, the server answered as `{}`: make the server serve the model under the name the config asks for (vLLM --served-model-name, llama.cpp --alias), or ask for the name it serves",
                    printable(&call.model),
                    printable(&answered_as)
                ),
            };
            return self.answered_failure(call, failure, usage.total_tokens);
        }
        let outcome = LineOutcome::Ok(raw.to_owned());
        match ingest::render_storable(
            call.custom_id.clone(),
            call.body_sha256.clone(),
            &outcome,
            SOURCE,
        ) {
            Storable::AsIs(Ok(line)) => Verdict::Answered(Answer {
                line,
                failure: None,
                completion_tokens: usage.completion_tokens.unwrap_or(0),
                total_tokens: usage.total_tokens,
            }),
            Storable::Unreadable {
                why,
                rendered: Ok(line),
            } => Verdict::Answered(Answer {
                line,
                failure: Some(format!("unreadable_response: {why}")),
                completion_tokens: usage.completion_tokens.unwrap_or(0),
                total_tokens: usage.total_tokens,
            }),
            Storable::AsIs(Err(e))
            | Storable::Unreadable {
                rendered: Err(e), ..
            } => Verdict::Refused(BatchError::CacheLine(e)),
        }
    }

    /// A final failure of this request alone, as its cache line.
    fn answered_failure(
        &self,
        call: &Call,
        failure: Failure,
        total_tokens: Option<u64>,
    ) -> Verdict {
        let summary = format!(
            "HTTP {} {}: {}",
            failure.status.unwrap_or(200),
            printable(&failure.code),
            printable(&failure.message)
        );
        let rendered = CacheLine::render(
            call.custom_id.clone(),
            call.body_sha256.clone(),
            &LineOutcome::Failed(failure),
            SOURCE,
        );
        match rendered {
            Ok(line) => Verdict::Answered(Answer {
                line,
                failure: Some(summary),
                completion_tokens: 0,
                total_tokens,
            }),
            Err(e) => Verdict::Refused(BatchError::CacheLine(e)),
        }
    }
}

/// Whether a reply's `model` is the model asked for: the same name, or that name with a
/// version or tag after it (OpenAI answers `gpt-4` as `gpt-4-0613`; Ollama `llama3.2` as
/// `llama3.2:latest`).
fn answers_as(asked: &str, answered: &str) -> bool {
    answered == asked
        || answered
            .strip_prefix(asked)
            .is_some_and(|rest| rest.starts_with(['-', ':']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_answers_as_the_model_asked_for_or_a_version_of_it() {
        assert!(answers_as("gpt-4", "gpt-4"));
        assert!(answers_as("gpt-4", "gpt-4-0613"));
        assert!(answers_as("llama3.2", "llama3.2:latest"));
        assert!(!answers_as("qwen/qwen3-32b", "llama-3.3-70b-versatile"));
        assert!(!answers_as("gpt-4", "gpt-4o"));
        assert!(!answers_as("m", ""));
    }
}
