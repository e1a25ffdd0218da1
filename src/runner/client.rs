//! The OpenAI-compatible Batch API over HTTP (Groq, OpenAI, any compatible endpoint): files and
//! batches, with retries for 429 (honouring `retry-after`), 5xx and dropped connections, and
//! downloads that are checked to be complete before anything reads them. Every byte a server
//! sends has the key redacted before anything parses, prints or stores it; ids go into URLs
//! percent-encoded; redirects are refused; and a request that creates something (an upload, a
//! batch) is not retried blindly when its reply is lost: the caller looks for it first.

use super::status::BatchStatus;
use super::untrusted::{self, Redactor};
use crate::config::Api;
use crate::runner::endpoint::EndpointError;
use crate::ui::Printer;
use crate::util::printable::printable;
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

/// Keys shorter than this are refused: redacting so short a string from server text would
/// corrupt paid responses, and no provider issues keys that short.
const MIN_KEY_CHARS: usize = 8;

/// A download whose last line is not complete JSON must arrive this many times with the very
/// same bytes before it counts as the server's bad line rather than a transfer cut short.
const IDENTICAL_BAD_DOWNLOADS: usize = 3;

/// The largest JSON reply read (a page of a listing is a few hundred KB), and how much of an
/// error reply is read for its message: a server cannot make the client hold more.
const MAX_REPLY_BYTES: usize = 64 << 20;
pub const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("environment variable {0} is not set: set it to your API key (export {0}=...), or change api.api_key_env")]
    MissingKey(String),
    #[error("environment variable {var} holds {chars} characters, too short for an API key: set it to your API key (export {var}=...), or change api.api_key_env")]
    ShortKey { var: String, chars: usize },
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    #[error("{what}: the endpoint redirected (HTTP {status}) to {location}. saseval-gen does not follow redirects, so that the key never goes to another address: set api.base_url to the address that answers")]
    Redirected {
        what: String,
        status: u16,
        location: String,
    },
    #[error("{what}: the server said {status}: {message}")]
    Status {
        what: String,
        status: u16,
        message: String,
    },
    #[error("{what}: {message} (gave up after {attempts} attempts; re-run to continue — nothing completed is lost)")]
    Transport {
        what: String,
        message: String,
        attempts: usize,
    },
    /// A request that creates something was sent and its reply was lost: it may or may not
    /// have happened on the server.
    #[error("{what}: the reply was lost ({message})")]
    Unconfirmed { what: String, message: String },
    #[error("{what}: unexpected reply from the server: {message}")]
    Protocol { what: String, message: String },
    #[error("{what}: the server's certificate is not trusted ({message}). Nothing was sent; check api.base_url, or the system's CA certificates")]
    Certificate { what: String, message: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

impl ClientError {
    /// Problems the user fixes in the config or environment (exit 2).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            ClientError::MissingKey(_)
                | ClientError::ShortKey { .. }
                | ClientError::Endpoint(_)
                | ClientError::Redirected { .. }
        ) || matches!(
            self,
            ClientError::Status {
                status: 401 | 403,
                ..
            }
        )
    }

    /// The endpoint answered but does not offer what was asked (e.g. no file listing): the
    /// caller may go on without it. Network, certificate and key problems are not this.
    pub fn is_unsupported_reply(&self) -> bool {
        match self {
            ClientError::Status { .. } => !self.is_usage(),
            ClientError::Protocol { .. } => true,
            _ => false,
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// The API key. Its Debug and Display never show it.
#[derive(Clone)]
pub struct ApiKey(String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl ApiKey {
    pub fn from_env(var: &str) -> Result<ApiKey, ClientError> {
        ApiKey::from_env_if_set(var)?.ok_or_else(|| ClientError::MissingKey(var.to_string()))
    }

    /// The key in `var`, or None when it is unset or blank (a local server needs none).
    pub fn from_env_if_set(var: &str) -> Result<Option<ApiKey>, ClientError> {
        match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => {
                let key = v.trim().to_string();
                let chars = key.chars().count();
                if chars < MIN_KEY_CHARS {
                    return Err(ClientError::ShortKey {
                        var: var.to_string(),
                        chars,
                    });
                }
                Ok(Some(ApiKey(key)))
            }
            _ => Ok(None),
        }
    }

    /// `request` with the key as its `Authorization: Bearer …` header.
    pub fn authorize(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request.bearer_auth(&self.0)
    }

    /// What removes this key from server text.
    pub fn redactor(&self) -> Redactor {
        Redactor::new(&self.0)
    }
}

/// The HTTP client every backend sends with: `api`'s timeouts, no redirects (the key must not
/// follow one to another address), and saseval-gen's user agent.
pub fn http_client(api: &Api) -> Result<reqwest::Client, ClientError> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs_f64(api.request_timeout_secs))
        .connect_timeout(Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("saseval-gen/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ClientError::Protocol {
            what: "building the HTTP client".into(),
            message: e.to_string(),
        })
}

#[derive(Debug, Clone, Deserialize)]
pub struct FileObject {
    pub id: String,
    #[serde(default)]
    pub filename: Option<String>,
    #[serde(default)]
    pub purpose: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct RequestCounts {
    #[serde(default)]
    pub total: u64,
    #[serde(default)]
    pub completed: u64,
    #[serde(default)]
    pub failed: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct BatchObject {
    pub id: String,
    pub status: BatchStatus,
    #[serde(default)]
    pub input_file_id: Option<String>,
    #[serde(default)]
    pub output_file_id: Option<String>,
    #[serde(default)]
    pub error_file_id: Option<String>,
    #[serde(default)]
    pub request_counts: Option<RequestCounts>,
    #[serde(default)]
    pub metadata: Option<Value>,
    #[serde(default)]
    pub errors: Option<Value>,
    #[serde(default)]
    pub expires_at: Option<i64>,
}

impl BatchObject {
    /// The server's `errors`, accepted both as `{object, data:[…]}` (SDK types) and as a bare array (Groq's doc).
    pub fn error_messages(&self) -> Vec<String> {
        let list = match &self.errors {
            Some(Value::Array(items)) => items.clone(),
            Some(Value::Object(obj)) => obj
                .get("data")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        list.iter()
            .map(|e| {
                let field = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
                let line = e
                    .get("line")
                    .and_then(Value::as_u64)
                    .map(|l| format!(" (line {l})"))
                    .unwrap_or_default();
                printable(&format!("{}: {}{line}", field("code"), field("message")))
            })
            .collect()
    }

    pub fn metadata_value(&self, key: &str) -> Option<&str> {
        self.metadata.as_ref()?.get(key)?.as_str()
    }
}

#[derive(Debug, Clone)]
pub struct RetryPolicy {
    pub initial: Duration,
    pub max_retries: usize,
}

/// An authenticated client for one base URL.
pub struct Client {
    http: reqwest::Client,
    base: String,
    key: ApiKey,
    redactor: Redactor,
    retry: RetryPolicy,
    /// Says when a call is retried.
    printer: Printer,
}

/// Whether a request may be sent again when its reply is lost.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Effect {
    /// Reading, or asking for something twice is harmless (poll, list, download, cancel).
    Repeatable,
    /// It creates something (an upload, a batch): after a lost reply the caller must look for
    /// it before sending again, so only failures that prove nothing was done are retried here.
    Creates,
}

/// A download that was saved whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Downloaded {
    pub bytes: u64,
    /// The file's last line is not complete JSON, yet the same bytes arrived
    /// [`IDENTICAL_BAD_DOWNLOADS`] times: the server's bad line, not a transfer cut short.
    pub bad_last_line: bool,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base)
            .field("key", &self.key)
            .finish()
    }
}

enum Attempt<T> {
    Done(T),
    Retry {
        message: String,
        after: Option<Duration>,
        /// The request may have reached the server and been acted on.
        maybe_done: bool,
    },
    Fail(ClientError),
}

impl Client {
    pub fn new(api: &Api, printer: &Printer) -> Result<Client, ClientError> {
        crate::runner::endpoint::check_base_url(&api.base_url)?;
        let key = ApiKey::from_env(&api.api_key_env)?;
        Ok(Client {
            http: http_client(api)?,
            base: api.base_url.trim_end_matches('/').to_string(),
            redactor: key.redactor(),
            key,
            retry: RetryPolicy {
                initial: Duration::from_secs_f64(api.retry_initial_secs),
                max_retries: api.max_retries,
            },
            printer: printer.clone(),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{}", self.base, path.trim_start_matches('/'))
    }

    /// The URL `{base}/{collection}/{id}{rest}` for a server-given id, encoded as one segment.
    fn id_url(
        &self,
        what: &str,
        collection: &str,
        id: &str,
        rest: &str,
    ) -> Result<String, ClientError> {
        let segment = untrusted::url_segment(id).ok_or_else(|| ClientError::Protocol {
            what: what.to_string(),
            message: format!("the server gave the unusable id {:?}", printable(id)),
        })?;
        Ok(self.url(&format!("{collection}/{segment}{rest}")))
    }

    /// Sends the request built by `build` until it succeeds or a non-transient error occurs.
    /// A request that [`Effect::Creates`] something is retried only after failures that prove
    /// it was not acted on (a refused connection, a 429); after others it is `Unconfirmed`.
    async fn send<T, F, B>(
        &self,
        what: &str,
        effect: Effect,
        build: B,
        finish: F,
    ) -> Result<T, ClientError>
    where
        B: Fn() -> reqwest::RequestBuilder,
        F: Finish<T>,
    {
        use backon::BackoffBuilder;
        let mut delays = backon::ExponentialBuilder::default()
            .with_min_delay(self.retry.initial)
            .with_max_delay(self.retry.initial.max(Duration::from_secs(60)))
            .with_max_times(self.retry.max_retries)
            .with_jitter()
            .build();
        let mut attempts = 0;
        loop {
            attempts += 1;
            tracing::debug!(what, attempt = attempts, "HTTP request");
            let outcome = match build().bearer_auth(&self.key.0).send().await {
                Err(e) if is_certificate_error(&e) => Attempt::Fail(ClientError::Certificate {
                    what: what.to_string(),
                    message: self.redactor.text(&transport_message(&e)),
                }),
                Err(e) => Attempt::Retry {
                    message: self.redactor.text(&transport_message(&e)),
                    after: None,
                    maybe_done: !e.is_connect(),
                },
                Ok(response) => {
                    crate::util::hooks::crash_point("http-reply");
                    self.classify(what, response, &finish).await
                }
            };
            match outcome {
                Attempt::Done(v) => return Ok(v),
                Attempt::Fail(e) => return Err(e),
                Attempt::Retry {
                    message,
                    maybe_done: true,
                    ..
                } if effect == Effect::Creates => {
                    return Err(ClientError::Unconfirmed {
                        what: what.to_string(),
                        message,
                    })
                }
                Attempt::Retry { message, after, .. } => {
                    let Some(backoff) = delays.next() else {
                        return Err(ClientError::Transport {
                            what: what.to_string(),
                            message,
                            attempts,
                        });
                    };
                    let wait = after.unwrap_or(backoff);
                    self.printer.warn(format!(
                        "{what}: {message}; retrying in {:.1} s",
                        wait.as_secs_f64()
                    ));
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    async fn json(
        &self,
        what: &str,
        effect: Effect,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<Value, ClientError> {
        let body = JsonBody {
            redactor: &self.redactor,
        };
        self.send(what, effect, build, body).await
    }

    /// Decides what a response means: success (then `finish` reads it), a redirect (refused),
    /// a retryable error (429, 5xx, 408) or a final one; its text with the key redacted.
    async fn classify<T>(
        &self,
        what: &str,
        response: reqwest::Response,
        finish: &impl Finish<T>,
    ) -> Attempt<T> {
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(|s| Duration::from_secs_f64(s.min(3600.0)));
        if status.is_success() {
            return finish.finish(response).await;
        }
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .unwrap_or_else(|| "an address it did not give".into());
            return Attempt::Fail(ClientError::Redirected {
                what: what.to_string(),
                status: status.as_u16(),
                location: printable(&crate::runner::endpoint::without_userinfo(
                    &self.redactor.text(&location),
                )),
            });
        }
        let body = match read_at_most(response, MAX_ERROR_BODY_BYTES).await {
            Ok((body, _)) => body,
            Err(e) => return reading_failed(&self.redactor, &e),
        };
        let message = printable(&error_message(&self.redactor.bytes(&body)));
        let code = status.as_u16();
        if code == 429 {
            Attempt::Retry {
                message: format!("rate limited (429): {message}"),
                after: retry_after,
                maybe_done: false,
            }
        } else if status.is_server_error() || code == 408 {
            Attempt::Retry {
                message: format!("server error {code}: {message}"),
                after: retry_after,
                maybe_done: true,
            }
        } else {
            Attempt::Fail(ClientError::Status {
                what: what.to_string(),
                status: code,
                message: if code == 401 {
                    format!("{message} — check the key in the environment variable named by api.api_key_env")
                } else {
                    message
                },
            })
        }
    }

    pub async fn upload(&self, filename: &str, bytes: Vec<u8>) -> Result<FileObject, ClientError> {
        let what = format!("uploading {filename}");
        let v = self
            .json(&what, Effect::Creates, || {
                let part = reqwest::multipart::Part::bytes(bytes.clone())
                    .file_name(filename.to_string())
                    .mime_str("application/jsonl")
                    .unwrap_or_else(|_| {
                        reqwest::multipart::Part::bytes(bytes.clone())
                            .file_name(filename.to_string())
                    });
                let form = reqwest::multipart::Form::new()
                    .text("purpose", "batch")
                    .part("file", part);
                self.http.post(self.url("files")).multipart(form)
            })
            .await?;
        parse(&what, v)
    }

    pub async fn list_files(&self) -> Result<Vec<FileObject>, ClientError> {
        let v = self
            .json("listing files", Effect::Repeatable, || {
                self.http.get(self.url("files"))
            })
            .await?;
        let data = v.get("data").cloned().unwrap_or(Value::Array(Vec::new()));
        parse("listing files", data)
    }

    pub async fn create_batch(
        &self,
        input_file_id: &str,
        window: &str,
        metadata: Value,
    ) -> Result<BatchObject, ClientError> {
        let body = json!({
            "input_file_id": input_file_id,
            "endpoint": super::request_file::ENDPOINT,
            "completion_window": window,
            "metadata": metadata,
        });
        let v = self
            .json("creating a batch", Effect::Creates, || {
                self.http.post(self.url("batches")).json(&body)
            })
            .await?;
        parse("creating a batch", v)
    }

    pub async fn get_batch(&self, id: &str) -> Result<BatchObject, ClientError> {
        let what = format!("polling batch {}", printable(id));
        let url = self.id_url(&what, "batches", id, "")?;
        let v = self
            .json(&what, Effect::Repeatable, || self.http.get(&url))
            .await?;
        parse(&what, v)
    }

    pub async fn cancel_batch(&self, id: &str) -> Result<BatchObject, ClientError> {
        let what = format!("cancelling batch {}", printable(id));
        let url = self.id_url(&what, "batches", id, "/cancel")?;
        let v = self
            .json(&what, Effect::Repeatable, || self.http.post(&url))
            .await?;
        parse(&what, v)
    }

    /// Every batch on the account whose metadata carries `key`, by that key's value, paging
    /// through the list (Groq's `paging.next_cursor` or OpenAI's `has_more`/`after`).
    pub async fn batches_by_metadata(
        &self,
        key: &str,
    ) -> Result<BTreeMap<String, BatchObject>, ClientError> {
        let mut found = BTreeMap::new();
        let mut cursor: Option<(&str, String)> = None;
        for _page in 0..10_000 {
            let v = self
                .json("listing batches", Effect::Repeatable, || {
                    let mut req = self
                        .http
                        .get(self.url("batches"))
                        .query(&[("limit", "100")]);
                    if let Some((param, c)) = &cursor {
                        req = req.query(&[(*param, c.as_str())]);
                    }
                    req
                })
                .await?;
            let batches: Vec<BatchObject> = parse(
                "listing batches",
                v.get("data").cloned().unwrap_or(Value::Array(Vec::new())),
            )?;
            for batch in &batches {
                if let Some(value) = batch.metadata_value(key) {
                    found
                        .entry(value.to_string())
                        .or_insert_with(|| batch.clone());
                }
            }
            let next_groq = v
                .pointer("/paging/next_cursor")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty());
            let has_more = v.get("has_more").and_then(Value::as_bool).unwrap_or(false);
            cursor = match (next_groq, has_more, batches.last()) {
                (Some(c), _, _) => Some(("cursor", c.to_string())),
                (None, true, Some(last)) => Some(("after", last.id.clone())),
                _ => break,
            };
        }
        Ok(found)
    }

    /// Downloads a file's content to `dest` (atomically), streaming it to disk with the key
    /// redacted so that memory does not grow with the file, and retrying truncated transfers.
    /// The content must be complete JSONL: a Content-Length mismatch, or a last line that is
    /// not valid JSON, counts as a cut-short transfer and is retried, never passed on — unless
    /// the very same bytes arrive [`IDENTICAL_BAD_DOWNLOADS`] times, which no retry changes.
    pub async fn download(&self, file_id: &str, dest: &Path) -> Result<Downloaded, ClientError> {
        let what = format!("downloading file {}", printable(file_id));
        let url = self.id_url(&what, "files", file_id, "/content")?;
        let to_file = ToFile {
            dest,
            redactor: &self.redactor,
            bad_tails: Mutex::new(BadTails::default()),
            identical: IDENTICAL_BAD_DOWNLOADS.min(self.retry.max_retries + 1),
        };
        self.send(&what, Effect::Repeatable, || self.http.get(&url), to_file)
            .await
    }
}

/// Rustls refused the server's certificate: retrying cannot help.
pub fn is_certificate_error(e: &reqwest::Error) -> bool {
    e.is_connect() && transport_message(e).to_lowercase().contains("certificate")
}

/// A transport error with its whole chain of causes (reqwest's own message is only the first).
pub fn transport_message(e: &reqwest::Error) -> String {
    let mut msg = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        source = s.source();
    }
    msg
}

fn parse<T: serde::de::DeserializeOwned>(what: &str, v: Value) -> Result<T, ClientError> {
    serde_json::from_value(v).map_err(|e| ClientError::Protocol {
        what: what.to_string(),
        message: printable(&e.to_string()),
    })
}

/// Turns a successful response into a value; a body that arrives incomplete is retried.
trait Finish<T> {
    async fn finish(&self, response: reqwest::Response) -> Attempt<T>;
}

fn reading_failed<T>(redactor: &Redactor, e: &reqwest::Error) -> Attempt<T> {
    Attempt::Retry {
        message: redactor.text(&format!(
            "reading the reply failed: {}",
            transport_message(e)
        )),
        after: None,
        maybe_done: true,
    }
}

/// A JSON reply, parsed after the key is redacted from it.
struct JsonBody<'r> {
    redactor: &'r Redactor,
}

/// The first `limit` bytes of a response body, and whether there was more.
pub async fn read_at_most(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = limit - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

impl Finish<Value> for JsonBody<'_> {
    async fn finish(&self, response: reqwest::Response) -> Attempt<Value> {
        match read_at_most(response, MAX_REPLY_BYTES).await {
            Err(e) => reading_failed(self.redactor, &e),
            Ok((_, true)) => Attempt::Fail(ClientError::Protocol {
                what: "reading a reply".into(),
                message: format!(
                    "the reply is larger than the {} MB a reply may be",
                    MAX_REPLY_BYTES >> 20
                ),
            }),
            Ok((bytes, false)) => match serde_json::from_slice(&self.redactor.bytes(&bytes)) {
                Ok(v) => Attempt::Done(v),
                Err(e) => Attempt::Retry {
                    message: format!("reply is not JSON ({e})"),
                    after: None,
                    maybe_done: true,
                },
            },
        }
    }
}

/// Streams a download into a temp file beside `dest`, redacting the key, checks it is whole,
/// then renames it.
struct ToFile<'p> {
    dest: &'p Path,
    redactor: &'p Redactor,
    /// The downloads so far whose last line was not complete JSON.
    bad_tails: Mutex<BadTails>,
    /// How many identical such downloads make the bad line the server's own.
    identical: usize,
}

/// The digest of the last download whose last line was bad, and how many times in a row it came.
#[derive(Default)]
struct BadTails {
    digest: Option<Vec<u8>>,
    times: usize,
}

impl BadTails {
    /// Counts one more download with a bad last line; returns how many in a row had these bytes.
    fn count(&mut self, digest: Vec<u8>) -> usize {
        if self.digest.as_ref() == Some(&digest) {
            self.times += 1;
        } else {
            self.digest = Some(digest);
            self.times = 1;
        }
        self.times
    }
}

impl Finish<Downloaded> for ToFile<'_> {
    async fn finish(&self, response: reqwest::Response) -> Attempt<Downloaded> {
        let tmp = crate::util::fsio::temp_path(self.dest);
        let result = self.stream(response, &tmp).await;
        if !matches!(result, Attempt::Done(_)) {
            let _ = crate::util::fsio::remove_if_present(&tmp);
        }
        result
    }
}

impl ToFile<'_> {
    async fn stream(&self, mut response: reqwest::Response, tmp: &Path) -> Attempt<Downloaded> {
        use std::io::Write;
        let io_fail = |source| {
            Attempt::Fail(ClientError::Io {
                what: format!("saving {}", self.dest.display()),
                source,
            })
        };
        let declared = response.content_length();
        let mut file = match crate::util::fsio::create_temp(tmp) {
            Ok(f) => std::io::BufWriter::with_capacity(1 << 20, f),
            Err(e) => return io_fail(e),
        };
        let mut redactor = self.redactor.stream();
        let mut tail = LastLine::default();
        let mut digest = Sha256::new();
        let mut received: u64 = 0;
        loop {
            match response.chunk().await {
                Err(e) => return reading_failed(self.redactor, &e),
                Ok(None) => break,
                Ok(Some(chunk)) => {
                    received += chunk.len() as u64;
                    digest.update(&chunk);
                    let redacted = redactor.feed(&chunk);
                    tail.feed(&redacted);
                    if let Err(e) = file.write_all(&redacted) {
                        return io_fail(e);
                    }
                }
            }
        }
        let rest = redactor.finish();
        tail.feed(&rest);
        if let Err(e) = file.write_all(&rest) {
            return io_fail(e);
        }
        if let Some(len) = declared.filter(|len| *len != received) {
            return Attempt::Retry {
                message: format!("download cut short: {received} of {len} bytes"),
                after: None,
                maybe_done: true,
            };
        }
        let bad_last_line = !tail.is_complete_json();
        if bad_last_line {
            let times = self
                .bad_tails
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .count(digest.finalize().to_vec());
            if times < self.identical {
                return Attempt::Retry {
                    message: "download cut short: its last line is not complete JSON".into(),
                    after: None,
                    maybe_done: true,
                };
            }
        }
        let synced = file
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all());
        match synced.and_then(|()| crate::util::fsio::commit_temp(tmp, self.dest)) {
            Ok(()) => Attempt::Done(Downloaded {
                bytes: received,
                bad_last_line,
            }),
            Err(e) => io_fail(e),
        }
    }
}

/// The last non-blank line seen so far in a stream of chunks, held only up to the longest
/// output line ingest reads (a longer last line is not complete JSON for this check).
#[derive(Default)]
struct LastLine {
    complete: Held,
    open: Held,
}

/// A line, or its first [`ingest::MAX_LINE_BYTES`] bytes when it is longer.
#[derive(Default)]
struct Held {
    bytes: Vec<u8>,
    too_long: bool,
}

impl Held {
    fn push(&mut self, part: &[u8]) {
        let room = super::ingest::MAX_LINE_BYTES.saturating_sub(self.bytes.len());
        self.too_long |= part.len() > room;
        self.bytes.extend_from_slice(&part[..part.len().min(room)]);
    }

    fn is_blank(&self) -> bool {
        !self.too_long && self.bytes.trim_ascii().is_empty()
    }
}

impl LastLine {
    fn feed(&mut self, chunk: &[u8]) {
        let mut rest = chunk;
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            self.open.push(&rest[..nl]);
            if !self.open.is_blank() {
                std::mem::swap(&mut self.complete, &mut self.open);
            }
            self.open = Held::default();
            rest = &rest[nl + 1..];
        }
        self.open.push(rest);
    }

    fn is_complete_json(&self) -> bool {
        let last = if self.open.is_blank() {
            &self.complete
        } else {
            &self.open
        };
        last.is_blank()
            || (!last.too_long
                && serde_json::from_slice::<serde::de::IgnoredAny>(&last.bytes).is_ok())
    }
}

/// The server's error message (`{"error":{"message":…}}`), else a short excerpt of the body.
fn error_message(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::LastLine;

    fn fed(chunks: &[&str]) -> LastLine {
        let mut tail = LastLine::default();
        for chunk in chunks {
            tail.feed(chunk.as_bytes());
        }
        tail
    }

    #[test]
    fn a_last_line_split_across_chunks_is_judged_whole() {
        assert!(fed(&["{\"a\":1}\n{\"b\"", ":2}\n"]).is_complete_json());
        assert!(fed(&["{\"a\":1}\n{\"b\"", ":2}"]).is_complete_json());
        assert!(!fed(&["{\"a\":1}\n{\"b\"", ":"]).is_complete_json());
    }

    #[test]
    fn trailing_blank_lines_do_not_hide_a_cut_line() {
        assert!(fed(&["{\"a\":1}\n\n", "  \n"]).is_complete_json());
        assert!(!fed(&["{\"a\":1}\n{\"cut", "\n\n"]).is_complete_json());
    }

    #[test]
    fn a_last_line_longer_than_an_output_line_may_be_is_held_only_up_to_the_limit() {
        let mut tail = fed(&["{\"a\":1}\n"]);
        let megabyte = vec![b' '; 1 << 20];
        for _ in 0..(crate::runner::ingest::MAX_LINE_BYTES >> 20) + 1 {
            tail.feed(&megabyte);
        }
        assert!(tail.open.bytes.len() <= crate::runner::ingest::MAX_LINE_BYTES);
        assert!(
            !tail.is_complete_json(),
            "an over-long line is not judged complete, even when blank"
        );
        tail.feed(b"\n{\"b\":2}\n");
        assert!(
            tail.is_complete_json(),
            "the next line is judged on its own"
        );
    }

    #[test]
    fn an_empty_download_is_complete() {
        assert!(fed(&[]).is_complete_json());
    }

    proptest::proptest! {
        #[test]
        fn the_verdict_does_not_depend_on_how_the_download_is_chunked(
            lines in proptest::collection::vec("[ -~]{0,12}", 0..6),
            cuts in proptest::collection::vec(0usize..80, 0..6),
            trailing_newline in proptest::bool::ANY,
        ) {
            let mut text = lines.join("\n");
            if trailing_newline {
                text.push('\n');
            }
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(text.len())).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut start = 0;
            for cut in cuts.into_iter().chain([text.len()]) {
                chunks.push(&text[start..cut]);
                start = cut;
            }
            proptest::prop_assert_eq!(fed(&chunks).is_complete_json(), fed(&[&text]).is_complete_json());
        }
    }
}
