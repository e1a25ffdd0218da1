//! The OpenAI-compatible Batch API over HTTP (Groq, OpenAI, any compatible endpoint): files and
//! batches, with retries for 429 (honouring `retry-after`), 5xx and dropped connections, and
//! downloads that are checked to be complete before anything reads them.

use crate::config::Api;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("environment variable {0} is not set: set it to your API key (export {0}=...), or change api.api_key_env")]
    MissingKey(String),
    #[error("api.base_url {0} is not allowed: API keys are only sent over https:// (plain http:// only to a loopback address such as 127.0.0.1)")]
    InsecureUrl(String),
    #[error("api.base_url {0} is not a valid URL")]
    BadUrl(String),
    #[error("api.base_url {0} carries a user name or password (user:pass@…): remove them from the URL. The key is sent only from the environment variable named by api.api_key_env, and credentials in the URL would be sent too")]
    CredentialsInUrl(String),

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
                | ClientError::InsecureUrl(_)
                | ClientError::BadUrl(_)
                | ClientError::CredentialsInUrl(_)
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
        match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => Ok(ApiKey(v.trim().to_string())),
            _ => Err(ClientError::MissingKey(var.to_string())),
        }
    }
}

/// Refuses to send a key over plain HTTP unless the host is loopback, and refuses credentials
/// in the URL (they would be sent beside the key, and printed in errors).
pub fn check_base_url(url: &str) -> Result<reqwest::Url, ClientError> {
    let shown = without_userinfo(url);
    let parsed = reqwest::Url::parse(url).map_err(|_| ClientError::BadUrl(shown.clone()))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(ClientError::CredentialsInUrl(shown));
    }
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" => {
            let host = parsed
                .host_str()
                .unwrap_or("")
                .trim_start_matches('[')
                .trim_end_matches(']');
            let loopback = host.eq_ignore_ascii_case("localhost")
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            if loopback {
                Ok(parsed)
            } else {
                Err(ClientError::InsecureUrl(shown))
            }
        }
        _ => Err(ClientError::BadUrl(shown)),
    }
}

/// `url` with anything between `scheme://` and an `@` of its authority shown as `…`, so that an
/// error never prints a password, whether or not the URL parses.
fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://…@{}", &rest[at + 1..]),
        None => url.to_string(),
    }
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
    pub status: String,
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
    pub fn is_terminal(&self) -> bool {
        matches!(
            self.status.as_str(),
            "completed" | "failed" | "expired" | "cancelled"
        )
    }

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
                format!("{}: {}{line}", field("code"), field("message"))
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
    retry: RetryPolicy,
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
    },
    Fail(ClientError),
}

impl Client {
    pub fn new(api: &Api) -> Result<Client, ClientError> {
        check_base_url(&api.base_url)?;
        let key = ApiKey::from_env(&api.api_key_env)?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs_f64(api.request_timeout_secs))
            .connect_timeout(Duration::from_secs(30))
            .user_agent(concat!("saseval-gen/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientError::Protocol {
                what: "building the HTTP client".into(),
                message: e.to_string(),
            })?;
        Ok(Client {
            http,
            base: api.base_url.trim_end_matches('/').to_string(),
            key,
            retry: RetryPolicy {
                initial: Duration::from_secs_f64(api.retry_initial_secs),
                max_retries: api.max_retries,
            },
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{}", self.base, path.trim_start_matches('/'))
    }

    /// Sends the request built by `build` until it succeeds or a non-transient error occurs.
    async fn send<T, F, B>(&self, what: &str, build: B, finish: F) -> Result<T, ClientError>
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
                    message: transport_message(&e),
                }),
                Err(e) => Attempt::Retry {
                    message: transport_message(&e),
                    after: None,
                },
                Ok(response) => classify(what, response, &finish).await,
            };
            match outcome {
                Attempt::Done(v) => return Ok(v),
                Attempt::Fail(e) => return Err(e),
                Attempt::Retry { message, after } => {
                    let Some(backoff) = delays.next() else {
                        return Err(ClientError::Transport {
                            what: what.to_string(),
                            message,
                            attempts,
                        });
                    };
                    let wait = after.unwrap_or(backoff);
                    tracing::warn!(what, %message, wait_secs = wait.as_secs_f64(), "retrying");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    async fn json(
        &self,
        what: &str,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<Value, ClientError> {
        self.send(what, build, JsonBody).await
    }

    pub async fn upload(&self, filename: &str, bytes: Vec<u8>) -> Result<FileObject, ClientError> {
        let what = format!("uploading {filename}");
        let v = self
            .json(&what, || {
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
            .json("listing files", || self.http.get(self.url("files")))
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
            .json("creating a batch", || {
                self.http.post(self.url("batches")).json(&body)
            })
            .await?;
        parse("creating a batch", v)
    }

    pub async fn get_batch(&self, id: &str) -> Result<BatchObject, ClientError> {
        let what = format!("polling batch {id}");
        let v = self
            .json(&what, || self.http.get(self.url(&format!("batches/{id}"))))
            .await?;
        parse(&what, v)
    }

    pub async fn cancel_batch(&self, id: &str) -> Result<BatchObject, ClientError> {
        let what = format!("cancelling batch {id}");
        let v = self
            .json(&what, || {
                self.http.post(self.url(&format!("batches/{id}/cancel")))
            })
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
                .json("listing batches", || {
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

    /// Downloads a file's content to `dest` (atomically), streaming it to disk so that memory
    /// does not grow with the file, and retrying truncated transfers. The content must be
    /// complete JSONL: a Content-Length mismatch or a last line that is not valid JSON counts as
    /// a cut-short transfer and is retried, never passed on.
    pub async fn download(&self, file_id: &str, dest: &Path) -> Result<u64, ClientError> {
        let what = format!("downloading file {file_id}");
        self.send(
            &what,
            || self.http.get(self.url(&format!("files/{file_id}/content"))),
            ToFile { dest },
        )
        .await
    }
}

/// Rustls refused the server's certificate: retrying cannot help.
fn is_certificate_error(e: &reqwest::Error) -> bool {
    e.is_connect() && transport_message(e).to_lowercase().contains("certificate")
}

fn transport_message(e: &reqwest::Error) -> String {
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
        message: e.to_string(),
    })
}

/// Turns a successful response into a value; a body that arrives incomplete is retried.
trait Finish<T> {
    async fn finish(&self, response: reqwest::Response) -> Attempt<T>;
}

fn reading_failed<T>(e: &reqwest::Error) -> Attempt<T> {
    Attempt::Retry {
        message: format!("reading the reply failed: {}", transport_message(e)),
        after: None,
    }
}

struct JsonBody;
impl Finish<Value> for JsonBody {
    async fn finish(&self, response: reqwest::Response) -> Attempt<Value> {
        match response.bytes().await {
            Err(e) => reading_failed(&e),
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(v) => Attempt::Done(v),
                Err(e) => Attempt::Retry {
                    message: format!("reply is not JSON ({e})"),
                    after: None,
                },
            },
        }
    }
}

/// Streams a download into a temp file beside `dest`, checks it is whole, then renames it.
struct ToFile<'p> {
    dest: &'p Path,
}

impl Finish<u64> for ToFile<'_> {
    async fn finish(&self, response: reqwest::Response) -> Attempt<u64> {
        let tmp = crate::fsio::temp_path(self.dest);
        let result = self.stream(response, &tmp).await;
        if !matches!(result, Attempt::Done(_)) {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }
}

impl ToFile<'_> {
    async fn stream(&self, mut response: reqwest::Response, tmp: &Path) -> Attempt<u64> {
        use std::io::Write;
        let io_fail = |source| {
            Attempt::Fail(ClientError::Io {
                what: format!("saving {}", self.dest.display()),
                source,
            })
        };
        let declared = response.content_length();
        let mut file = match std::fs::File::create(tmp) {
            Ok(f) => std::io::BufWriter::with_capacity(1 << 20, f),
            Err(e) => return io_fail(e),
        };
        let mut tail = LastLine::default();
        let mut received: u64 = 0;
        loop {
            match response.chunk().await {
                Err(e) => return reading_failed(&e),
                Ok(None) => break,
                Ok(Some(chunk)) => {
                    received += chunk.len() as u64;
                    tail.feed(&chunk);
                    if let Err(e) = file.write_all(&chunk) {
                        return io_fail(e);
                    }
                }
            }
        }
        if let Some(len) = declared.filter(|len| *len != received) {
            return Attempt::Retry {
                message: format!("download cut short: {received} of {len} bytes"),
                after: None,
            };
        }
        if !tail.is_complete_json() {
            return Attempt::Retry {
                message: "download cut short: its last line is not complete JSON".into(),
                after: None,
            };
        }
        let synced = file
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all());
        match synced.and_then(|()| crate::fsio::commit_temp(tmp, self.dest)) {
            Ok(()) => Attempt::Done(received),
            Err(e) => io_fail(e),
        }
    }
}

/// The last non-blank line seen so far in a stream of chunks.
#[derive(Default)]
struct LastLine {
    complete: Vec<u8>,
    open: Vec<u8>,
}

impl LastLine {
    fn feed(&mut self, chunk: &[u8]) {
        let mut rest = chunk;
        while let Some(nl) = rest.iter().position(|b| *b == b'\n') {
            self.open.extend_from_slice(&rest[..nl]);
            if !self.open.trim_ascii().is_empty() {
                std::mem::swap(&mut self.complete, &mut self.open);
            }
            self.open.clear();
            rest = &rest[nl + 1..];
        }
        self.open.extend_from_slice(rest);
    }

    fn is_complete_json(&self) -> bool {
        let last = if self.open.trim_ascii().is_empty() {
            &self.complete
        } else {
            &self.open
        };
        last.trim_ascii().is_empty()
            || serde_json::from_slice::<serde::de::IgnoredAny>(last).is_ok()
    }
}

async fn classify<T>(
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
    let body = match response.bytes().await {
        Ok(b) => b.to_vec(),
        Err(e) => return reading_failed(&e),
    };
    let message = error_message(&body);
    let code = status.as_u16();
    if code == 429 {
        Attempt::Retry {
            message: format!("rate limited (429): {message}"),
            after: retry_after,
        }
    } else if status.is_server_error() || code == 408 {
        Attempt::Retry {
            message: format!("server error {code}: {message}"),
            after: retry_after,
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
