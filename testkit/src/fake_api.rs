//! A fake OpenAI/Groq-compatible Batch API on 127.0.0.1, so the integration tests can drive the
//! real binary through a whole batch lifecycle — and through the faults a paid API throws at it
//! (429s, 5xx bursts, resets, truncated downloads, expiry, cancellation, failed validation) —
//! and then count what it cost.
//!
//! Behaviour the tests can rely on:
//! - Every request counts in `http_requests`. With an expected key set, a request without
//!   `Authorization: Bearer <key>` gets 401 before any fault is considered. Request faults are then
//!   consumed in push order by the requests they match; a faulted request never reaches its handler
//!   (see `Counters` for what each counter counts).
//! - Batch faults (`ExpireNextBatch` … `OutputFile404`) are attached at creation, one per created
//!   batch, in push order.
//! - A batch advances one step per `GET /batches/{id}` only; listing never advances it. The step
//!   count is read from `set_steps_to_complete` when the batch is created (0 counts as 1). With
//!   `n` steps, poll `n` completes it, poll `n - 1` shows `finalizing` when `n >= 3`, and earlier
//!   polls show `in_progress`.
//! - A file that fails validation, or `FailNextBatch`, makes the batch `failed` on its first poll.
//! - Lines not executed because a batch expired or was cancelled (by the client or by
//!   `CancelNextBatch`) go to the error file as `batch_expired` / `batch_cancelled`. A batch
//!   cancelled by the client keeps the lines its `request_counts.completed` showed when the cancel
//!   arrived. An output or error file is written only when it has at least one line.
//! - `NullOutputFileId`: the batch completes with every line in the error file as a 500
//!   `server_error` response (the responder is not called), `output_file_id: null`.
//! - `OutputFile404`: the output file is listed nowhere and its content is 404 forever.
//! - Ids and timestamps come from counters and a logical clock, so one scenario gives the same
//!   bytes on every run. Output and error lines are ordered by a SHA-256 of batch id and
//!   `custom_id`: deterministic, but not input order.
//!
//! Hostile behaviour (round 2 of the fault matrix), each a `Fault` as well:
//! - `LoseReply`: the n-th request (counting every request the fake has seen) reaches its handler,
//!   so its side effect happens (a file stored, a batch created), and then its reply is lost: a
//!   reset, a 502, or a 200 whose body is not JSON.
//! - `EchoKeyInError`, `FailNextBatchEchoingKey`, `EchoKeyInOutput`: the request's
//!   `Authorization` header comes back in an error body, a failed batch's `errors`, or the bodies
//!   and contents of output lines.
//! - `FileIds`: the next batch's output and error files get ids chosen by the test (`../..`,
//!   absolute paths). Their content is served at the route an encoded id reaches and also at
//!   whatever path the unencoded id normalises to, as a naive server would.
//! - `ShortDownload` serves a file without its last lines, with a Content-Length that matches;
//!   `BadLastLine` ends the next batch's output file with a line of junk on every download;
//!   `DeepOutput` nests the first output line's body 100,000 levels deep; `UnknownStatus` shows a
//!   status no provider documents until the batch is cancelled; `Redirect` answers 307.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::Duration;

use axum::body::{to_bytes, Body, Bytes, HttpBody};
use axum::extract::connect_info::{ConnectInfo, Connected};
use axum::extract::multipart::MultipartRejection;
use axum::extract::{DefaultBodyLimit, Multipart, Path, Query, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::{IncomingStream, Listener};
use axum::{Json, Router};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;

const PREFIX: &str = "/openai/v1";
const CHAT_ENDPOINT: &str = "/v1/chat/completions";
/// Groq's per-file limits.
const MAX_FILE_BYTES: usize = 200 * 1024 * 1024;
const MAX_FILE_LINES: usize = 50_000;
/// Small on purpose, so that clients must follow the paging.
const LIST_PAGE_SIZE: usize = 2;
/// How much of an upload is read before a `ResetConnection` fault drops the connection.
const BYTES_READ_BEFORE_RESET: usize = 16;
/// The logical clock starts here (2100-01-01, so no completion window has ended by the wall
/// clock unless a test moves it) and ticks once per state change.
const CLOCK_START: u64 = 4_102_444_800;
const FOREIGN_CUSTOM_ID: &str = "foreign/never-sent/0";

/// What the fake model answers to one request line.
#[derive(Clone, Debug)]
pub enum FakeReply {
    /// A 200 chat completion whose `choices[0].message.content` is this text.
    Content(String),
    /// A failed request: goes to the error file with this status code and body.
    Error { status: u16, body: Value },
}

/// Called once per executed line with its `custom_id` and request `body`.
pub type Responder = Arc<dyn Fn(&str, &Value) -> FakeReply + Send + Sync>;

/// The endpoints a request fault can target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    Upload,
    CreateBatch,
    GetBatch,
    ListBatches,
    ListFiles,
    Download,
    Cancel,
    Any,
}

/// How a failed batch spells its `errors`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorsShape {
    /// `{"object":"list","data":[…]}`, as in the SDK types.
    Sdk,
    /// A bare array, as in Groq's documentation.
    Bare,
}

/// How `GET /batches` pages (page size 2 either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ListStyle {
    /// `?cursor=…` in, `paging.next_cursor` out (the key is absent on the last page).
    #[default]
    Groq,
    /// `?after=<batch id>&limit=…` in, `first_id`/`last_id`/`has_more` out.
    OpenAi,
}

/// Something going wrong, on purpose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// 429 with a `rate_limit_exceeded` body and, if `Some`, a `retry-after` header.
    RateLimit {
        route: Route,
        times: usize,
        retry_after: Option<u64>,
    },
    /// `status` (e.g. 500, 502, 503) with a `server_error` body.
    ServerError {
        route: Route,
        status: u16,
        times: usize,
    },
    /// The connection is dropped with a reset and no response (an upload after 16 bytes of it).
    ResetConnection { route: Route, times: usize },
    /// The next downloads announce their full `Content-Length`, send half, and close.
    TruncatedDownload { times: usize },
    /// The next batch ends `expired` with only its first `completed` lines (input order) run.
    ExpireNextBatch { completed: usize },
    /// The next batch ends `cancelled` (someone else cancelled it) with its first `completed`
    /// lines run.
    CancelNextBatch { completed: usize },
    /// The next batch ends `failed` with one error, spelled as `shape` says; no files.
    FailNextBatch { shape: ErrorsShape },
    /// The next batch stays `validating` until cancelled.
    StuckValidating,
    /// The next batch's output file holds one line twice and one line nobody sent.
    ShuffleDuplicateForeign,
    /// The next batch's output file is 404 and unlisted.
    OutputFile404,
    /// The next batch completes with `output_file_id: null`, every line a 500 in its error file.
    NullOutputFileId,
    /// The `nth` request the fake sees (1-based, every request counted) runs its handler, side
    /// effect included, and then its reply is lost as `how` says.
    LoseReply { nth: usize, how: LostReply },
    /// `status` with an error body whose message holds the request's `Authorization` header.
    EchoKeyInError {
        route: Route,
        status: u16,
        times: usize,
    },
    /// The next batch ends `failed`; its error message holds the `Authorization` header its
    /// create carried.
    FailNextBatchEchoingKey,
    /// The next batch's output lines hold the `Authorization` header its create carried, in the
    /// response body and in the message content.
    EchoKeyInOutput,
    /// The next batch's output and error files get these ids.
    FileIds { output: String, error: String },
    /// The next `times` downloads serve the file without its last `dropped` lines, cut at a line
    /// boundary, with a Content-Length that matches what is sent.
    ShortDownload { dropped: usize, times: usize },
    /// The last line of the next batch's output file is replaced by junk, on every download.
    BadLastLine(BadLine),
    /// The next batch's first output line carries a response body nested `depth` arrays deep.
    DeepOutput { depth: usize },
    /// The next batch shows this status on every poll until it is cancelled.
    UnknownStatus(String),
    /// `route` answers `307 Temporary Redirect` to `location`, `times` times.
    Redirect {
        route: Route,
        location: String,
        times: usize,
    },
}

/// How a reply is lost after the request's side effect happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LostReply {
    /// The connection is reset instead of the reply.
    Reset,
    /// A proxy's 502 instead of the reply.
    BadGateway,
    /// A 200 whose body is an HTML error page.
    NotJson,
}

/// Junk that replaces the last line of an output file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadLine {
    /// 64 NUL bytes.
    Nul,
    /// The start of a gzip stream.
    Gzip,
    /// The first half of the real line, then binary junk: the line still names its custom_id.
    CutThenJunk,
}

impl BadLine {
    pub const ALL: [BadLine; 3] = [BadLine::Nul, BadLine::Gzip, BadLine::CutThenJunk];

    fn replace(self, line: &[u8]) -> Vec<u8> {
        match self {
            BadLine::Nul => vec![0; 64],
            BadLine::Gzip => {
                b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xcb\x48\xcd\xc9\xc9\x07\x00".to_vec()
            }
            BadLine::CutThenJunk => {
                let mut cut = line[..line.len() / 2].to_vec();
                cut.extend_from_slice(b"\x00\xff junk");
                cut
            }
        }
    }
}

impl LostReply {
    pub const ALL: [LostReply; 3] = [LostReply::Reset, LostReply::BadGateway, LostReply::NotJson];
}

/// A snapshot of what the fake has seen.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    /// Every request that arrived, rejected, faulted or reset ones included.
    pub http_requests: usize,
    /// Files stored (a rejected or reset upload does not count).
    pub uploads: usize,
    /// `GET /files` requests answered.
    pub file_lists: usize,
    /// Batches created (a rejected or faulted create does not count).
    pub batches_created: usize,
    /// `GET /batches` pages answered.
    pub batch_lists: usize,
    /// `GET /batches/{id}` requests answered, 404s included.
    pub polls: usize,
    /// `GET /files/{id}/content` requests answered, 404s and truncated ones included.
    pub downloads: usize,
    /// `POST /batches/{id}/cancel` requests answered, refusals included.
    pub cancels: usize,
    /// `custom_id` -> times it appeared in an uploaded file.
    pub lines_uploaded: BTreeMap<String, usize>,
    /// `custom_id` -> times it was part of a created batch (this is what costs money).
    pub lines_in_batches: BTreeMap<String, usize>,
    /// Requests rejected for a wrong or missing key.
    pub unauthorized: usize,
    /// Distinct `Authorization` header values seen.
    pub authorization_values: BTreeSet<String>,
    /// Faults that took effect (request faults per request, batch faults per batch).
    pub faults_fired: usize,
    /// The route of every request in arrival order (`None`: a URL the API does not have).
    pub calls: Vec<Option<Route>>,
}

/// The running fake server; it stops when dropped.
pub struct FakeApi {
    shared: Arc<Shared>,
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeApi {
    /// Binds 127.0.0.1 on a free port and serves from its own thread and runtime.
    pub fn start(responder: Responder) -> FakeApi {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("the fake Batch API could not bind 127.0.0.1");
        listener
            .set_nonblocking(true)
            .expect("the fake Batch API could not make its socket non-blocking");
        let addr = listener
            .local_addr()
            .expect("the fake Batch API has no local address");
        let shared = Arc::new(Shared {
            state: Mutex::new(ServerState::new()),
            responder,
        });
        let app = router(Arc::clone(&shared));
        let (shutdown, shutdown_signal) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(format!("fake-batch-api-{}", addr.port()))
            .spawn(move || serve(listener, app, shutdown_signal))
            .expect("the fake Batch API thread could not start");
        FakeApi {
            shared,
            addr,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT/openai/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}{PREFIX}", self.addr)
    }

    /// From now on, requests without `Authorization: Bearer <key>` get 401.
    pub fn set_expected_key(&self, key: &str) {
        self.shared.lock().expected_authorization = Some(format!("Bearer {key}"));
    }

    /// Queues a fault; queued faults fire in push order, each on the requests (or the batch) it
    /// matches.
    pub fn push_fault(&self, fault: Fault) {
        self.shared.lock().faults.push(fault);
    }

    /// Polls a batch created from now on needs before it completes (default 2).
    pub fn set_steps_to_complete(&self, polls: u32) {
        self.shared.lock().steps_to_complete = polls.max(1);
    }

    /// How `GET /batches` pages from now on (default `ListStyle::Groq`).
    pub fn set_list_style(&self, style: ListStyle) {
        self.shared.lock().list_style = style;
    }

    /// Moves the logical clock (Unix seconds), e.g. far into the past so that a new batch's
    /// completion window has already ended by the wall clock.
    pub fn set_clock(&self, unix: u64) {
        self.shared.lock().clock = unix;
    }

    /// What the fake has seen so far.
    pub fn counters(&self) -> Counters {
        self.shared.lock().counters.clone()
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            // The server thread may already be gone; then there is nothing to stop.
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            // A panic on the server thread has already failed the test's requests.
            let _ = thread.join();
        }
    }
}

fn serve(listener: std::net::TcpListener, app: Router, shutdown: oneshot::Receiver<()>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the fake Batch API could not build its runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)
            .expect("the fake Batch API could not adopt its socket");
        let server = axum::serve(
            ControlledListener(listener),
            app.into_make_service_with_connect_info::<Connection>(),
        );
        tokio::select! {
            served = server => {
                if let Err(error) = served {
                    eprintln!("fake Batch API stopped: {error}");
                }
            }
            _ = shutdown => {}
        }
    });
    // Dropping the runtime here drops every open connection with it.
}

// ---------------------------------------------------------------------------------------------
// Connections a request can sabotage (for `ResetConnection` and `TruncatedDownload`; the fake
// online server's resets and cut bodies use them too).

pub(crate) struct ControlledListener(pub(crate) tokio::net::TcpListener);

impl Listener for ControlledListener {
    type Io = ControlledStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (ControlledStream, SocketAddr) {
        loop {
            match self.0.accept().await {
                Ok((stream, addr)) => {
                    let controlled = ControlledStream {
                        stream,
                        control: Arc::new(ConnectionControl::default()),
                        cut: None,
                    };
                    return (controlled, addr);
                }
                // Accept errors (e.g. too many open files) pass; retry shortly, as axum does.
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

/// What the handling of a request asked of its connection.
pub(crate) struct ConnectionControl {
    /// Fail every read and write from now on, and close with a reset.
    pub(crate) killed: AtomicBool,
    /// Let the next response's head and only this many body bytes out, then fail (`NO_CUT`: no).
    pub(crate) cut_body_at: AtomicUsize,
}

pub(crate) const NO_CUT: usize = usize::MAX;

impl Default for ConnectionControl {
    fn default() -> Self {
        ConnectionControl {
            killed: AtomicBool::new(false),
            cut_body_at: AtomicUsize::new(NO_CUT),
        }
    }
}

/// The connection a request arrived on, as its handlers see it.
#[derive(Clone)]
pub(crate) struct Connection(pub(crate) Arc<ConnectionControl>);

impl Connected<IncomingStream<'_, ControlledListener>> for Connection {
    fn connect_info(stream: IncomingStream<'_, ControlledListener>) -> Self {
        Connection(Arc::clone(&stream.io().control))
    }
}

/// Counts a response's bytes on the wire: the head up to its blank line, then the body.
#[derive(Clone, Copy)]
struct BodyCut {
    /// How much of `\r\n\r\n` the bytes so far end with (4: the head is over).
    head_end_matched: usize,
    body_left: usize,
}

impl BodyCut {
    const HEAD_END: &'static [u8; 4] = b"\r\n\r\n";

    fn after(self, byte: u8) -> BodyCut {
        let mut next = self;
        if self.head_end_matched == Self::HEAD_END.len() {
            next.body_left = self.body_left.saturating_sub(1);
        } else if Self::HEAD_END.get(self.head_end_matched) == Some(&byte) {
            next.head_end_matched += 1;
        } else {
            next.head_end_matched = usize::from(byte == b'\r');
        }
        next
    }

    /// How many leading bytes of `buf` may still go out.
    fn allowance(self, buf: &[u8]) -> usize {
        let mut state = self;
        for (sent, byte) in buf.iter().enumerate() {
            if state.head_end_matched == Self::HEAD_END.len() {
                return sent + state.body_left.min(buf.len() - sent);
            }
            state = state.after(*byte);
        }
        buf.len()
    }

    fn consume(&mut self, sent: &[u8]) {
        *self = sent.iter().fold(*self, |state, byte| state.after(*byte));
    }
}

/// A TCP stream that obeys its `ConnectionControl`.
pub(crate) struct ControlledStream {
    stream: tokio::net::TcpStream,
    control: Arc<ConnectionControl>,
    cut: Option<BodyCut>,
}

impl ControlledStream {
    fn reset_if_killed(&self) -> Option<io::Error> {
        if !self.control.killed.load(Ordering::SeqCst) {
            return None;
        }
        // Zero linger makes the close send RST instead of FIN; failing to set it still closes.
        let _ = self.stream.set_zero_linger();
        Some(io::Error::from(io::ErrorKind::ConnectionReset))
    }
}

impl AsyncRead for ControlledStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.reset_if_killed() {
            Some(reset) => Poll::Ready(Err(reset)),
            None => Pin::new(&mut self.stream).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ControlledStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Some(reset) = self.reset_if_killed() {
            return Poll::Ready(Err(reset));
        }
        let this = &mut *self;
        if this.cut.is_none() {
            let body_left = this.control.cut_body_at.swap(NO_CUT, Ordering::SeqCst);
            if body_left != NO_CUT {
                this.cut = Some(BodyCut {
                    head_end_matched: 0,
                    body_left,
                });
            }
        }
        let Some(cut) = &mut this.cut else {
            return Pin::new(&mut this.stream).poll_write(cx, buf);
        };
        let (sendable, _) = buf.split_at(cut.allowance(buf).min(buf.len()));
        if sendable.is_empty() {
            // Failing the write makes hyper drop the connection: a plain close (FIN), so the
            // bytes already sent still arrive.
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "download cut short on purpose",
            )));
        }
        let written = Pin::new(&mut this.stream).poll_write(cx, sendable);
        if let Poll::Ready(Ok(count)) = written {
            cut.consume(sendable.get(..count).unwrap_or(sendable));
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.reset_if_killed() {
            Some(reset) => Poll::Ready(Err(reset)),
            None => Pin::new(&mut self.stream).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.reset_if_killed() {
            Some(reset) => Poll::Ready(Err(reset)),
            None => Pin::new(&mut self.stream).poll_shutdown(cx),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// State.

struct Shared {
    state: Mutex<ServerState>,
    responder: Responder,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ServerState> {
        // A panicking responder must not wedge every later request.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct ServerState {
    counters: Counters,
    expected_authorization: Option<String>,
    faults: Vec<Fault>,
    steps_to_complete: u32,
    list_style: ListStyle,
    clock: u64,
    last_serial: u64,
    /// Keyed by id; ids are zero-padded serials, so key order is creation order.
    files: BTreeMap<String, StoredFile>,
    batches: BTreeMap<String, BatchRecord>,
}

struct StoredFile {
    id: String,
    filename: String,
    purpose: &'static str,
    content: Vec<u8>,
    created_at: u64,
    /// Content 404s and the file is not listed (`OutputFile404`).
    gone: bool,
    /// Present for uploaded (input) files.
    input: Option<InputFile>,
}

impl StoredFile {
    fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "object": "file",
            "bytes": self.content.len(),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
        })
    }
}

/// An uploaded file as the batch validator sees it.
#[derive(Clone)]
struct InputFile {
    lines: Vec<InputLine>,
    /// `errors.data` entries; non-empty means a batch created from this file fails.
    problems: Vec<Value>,
    /// Every `custom_id` found, duplicates included, for the counters.
    custom_ids: Vec<String>,
}

#[derive(Clone)]
struct InputLine {
    custom_id: String,
    body: Value,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Validating,
    Failed,
    InProgress,
    Finalizing,
    Completed,
    Expired,
    Cancelling,
    Cancelled,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Validating => "validating",
            Status::Failed => "failed",
            Status::InProgress => "in_progress",
            Status::Finalizing => "finalizing",
            Status::Completed => "completed",
            Status::Expired => "expired",
            Status::Cancelling => "cancelling",
            Status::Cancelled => "cancelled",
        }
    }

    fn is_running(self) -> bool {
        matches!(
            self,
            Status::Validating | Status::InProgress | Status::Finalizing
        )
    }
}

/// What a batch fault decided for one batch.
#[derive(Clone, PartialEq, Eq)]
enum Fate {
    Normal,
    Expire { completed: usize },
    CancelledByOther { completed: usize },
    Fail { shape: ErrorsShape },
    FailEchoing { authorization: String },
    StuckValidating,
    ShuffleDuplicateForeign,
    OutputFile404,
    NullOutputFileId,
    EchoInOutput { authorization: String },
    FileIds { output: String, error: String },
    BadLastLine(BadLine),
    DeepOutput { depth: usize },
    UnknownStatus(String),
}

impl Fate {
    /// The fate a batch fault gives the batch created by a request with `authorization`.
    fn of(fault: &Fault, authorization: &str) -> Option<Fate> {
        let authorization = authorization.to_string();
        match fault {
            Fault::ExpireNextBatch { completed } => Some(Fate::Expire {
                completed: *completed,
            }),
            Fault::CancelNextBatch { completed } => Some(Fate::CancelledByOther {
                completed: *completed,
            }),
            Fault::FailNextBatch { shape } => Some(Fate::Fail { shape: *shape }),
            Fault::FailNextBatchEchoingKey => Some(Fate::FailEchoing { authorization }),
            Fault::StuckValidating => Some(Fate::StuckValidating),
            Fault::ShuffleDuplicateForeign => Some(Fate::ShuffleDuplicateForeign),
            Fault::OutputFile404 => Some(Fate::OutputFile404),
            Fault::NullOutputFileId => Some(Fate::NullOutputFileId),
            Fault::EchoKeyInOutput => Some(Fate::EchoInOutput { authorization }),
            Fault::FileIds { output, error } => Some(Fate::FileIds {
                output: output.clone(),
                error: error.clone(),
            }),
            Fault::BadLastLine(line) => Some(Fate::BadLastLine(*line)),
            Fault::DeepOutput { depth } => Some(Fate::DeepOutput { depth: *depth }),
            Fault::UnknownStatus(status) => Some(Fate::UnknownStatus(status.clone())),
            Fault::RateLimit { .. }
            | Fault::ServerError { .. }
            | Fault::ResetConnection { .. }
            | Fault::TruncatedDownload { .. }
            | Fault::LoseReply { .. }
            | Fault::EchoKeyInError { .. }
            | Fault::ShortDownload { .. }
            | Fault::Redirect { .. } => None,
        }
    }
}

/// How a batch that ran stops.
#[derive(Clone, Copy)]
enum Ending {
    Completed,
    Expired { executed: usize },
    Cancelled { executed: usize },
}

struct BatchRecord {
    id: String,
    endpoint: String,
    input_file_id: String,
    completion_window: String,
    metadata: Value,
    status: Status,
    created_at: u64,
    expires_at: u64,
    in_progress_at: Option<u64>,
    finalizing_at: Option<u64>,
    completed_at: Option<u64>,
    failed_at: Option<u64>,
    expired_at: Option<u64>,
    cancelling_at: Option<u64>,
    cancelled_at: Option<u64>,
    output_file_id: Option<String>,
    error_file_id: Option<String>,
    errors: Option<Value>,
    total: usize,
    completed: usize,
    failed: usize,
    input: InputFile,
    fate: Fate,
    steps: u32,
    polls: u32,
}

impl BatchRecord {
    fn to_json(&self) -> Value {
        let status = match &self.fate {
            Fate::UnknownStatus(shown) if self.status.is_running() => shown.as_str(),
            _ => self.status.as_str(),
        };
        json!({
            "id": self.id,
            "object": "batch",
            "endpoint": self.endpoint,
            "errors": self.errors,
            "input_file_id": self.input_file_id,
            "completion_window": self.completion_window,
            "status": status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created_at,
            "in_progress_at": self.in_progress_at,
            "expires_at": self.expires_at,
            "finalizing_at": self.finalizing_at,
            "completed_at": self.completed_at,
            "failed_at": self.failed_at,
            "expired_at": self.expired_at,
            "cancelling_at": self.cancelling_at,
            "cancelled_at": self.cancelled_at,
            "request_counts": {
                "total": self.total,
                "completed": self.completed,
                "failed": self.failed,
            },
            "metadata": self.metadata,
        })
    }
}

/// What the gate decided about a request before its handler.
enum Verdict {
    Pass,
    Unauthorized,
    RateLimit { retry_after: Option<u64> },
    ServerError { status: u16 },
    Reset,
    Truncate,
    LoseReply(LostReply),
    Echo { status: u16, authorization: String },
    Short { dropped: usize },
    Redirect { location: String },
}

impl ServerState {
    fn new() -> ServerState {
        ServerState {
            counters: Counters::default(),
            expected_authorization: None,
            faults: Vec::new(),
            steps_to_complete: 2,
            list_style: ListStyle::default(),
            clock: CLOCK_START,
            last_serial: 0,
            files: BTreeMap::new(),
            batches: BTreeMap::new(),
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn serial(&mut self) -> u64 {
        self.last_serial += 1;
        self.last_serial
    }

    fn judge(&mut self, route: Option<Route>, authorization: Option<String>) -> Verdict {
        self.counters.http_requests += 1;
        self.counters.calls.push(route);
        if let Some(value) = &authorization {
            self.counters.authorization_values.insert(value.clone());
        }
        if let Some(expected) = &self.expected_authorization {
            if authorization.as_ref() != Some(expected) {
                self.counters.unauthorized += 1;
                return Verdict::Unauthorized;
            }
        }
        let nth = self.counters.http_requests;
        let seen = authorization.clone().unwrap_or_default();
        let fired = self
            .faults
            .iter_mut()
            .enumerate()
            .find_map(|(position, fault)| {
                fire(fault, route, nth, &seen).map(|fired| (position, fired))
            });
        let Some((position, (verdict, exhausted))) = fired else {
            return Verdict::Pass;
        };
        self.counters.faults_fired += 1;
        if exhausted {
            self.faults.remove(position);
        }
        verdict
    }

    fn take_batch_fate(&mut self, authorization: &str) -> Fate {
        let Some((position, fate)) =
            self.faults
                .iter()
                .enumerate()
                .find_map(|(position, fault)| {
                    Fate::of(fault, authorization).map(|fate| (position, fate))
                })
        else {
            return Fate::Normal;
        };
        self.faults.remove(position);
        self.counters.faults_fired += 1;
        fate
    }

    fn store_file(
        &mut self,
        filename: String,
        purpose: &'static str,
        content: Vec<u8>,
        input: Option<InputFile>,
    ) -> &mut StoredFile {
        self.store_file_as(None, filename, purpose, content, input)
    }

    /// Stores a file under `id` (a fresh serial id when `None`).
    fn store_file_as(
        &mut self,
        id: Option<String>,
        filename: String,
        purpose: &'static str,
        content: Vec<u8>,
        input: Option<InputFile>,
    ) -> &mut StoredFile {
        let serial = self.serial();
        let id = id.unwrap_or_else(|| format!("file_{serial:06}"));
        let created_at = self.tick();
        self.files.entry(id.clone()).or_insert(StoredFile {
            id,
            filename,
            purpose,
            content,
            created_at,
            gone: false,
            input,
        })
    }

    /// One `GET /batches/{id}`: advance the batch a step and return it.
    fn poll(&mut self, id: &str, responder: &Responder) -> Option<Value> {
        let mut batch = self.batches.remove(id)?;
        self.advance(&mut batch, responder);
        let shown = batch.to_json();
        self.batches.insert(batch.id.clone(), batch);
        Some(shown)
    }

    fn advance(&mut self, batch: &mut BatchRecord, responder: &Responder) {
        if batch.status == Status::Cancelling {
            let executed = batch.completed;
            self.finish(batch, Ending::Cancelled { executed }, responder);
            return;
        }
        if !batch.status.is_running() {
            return;
        }
        batch.polls += 1;
        if !batch.input.problems.is_empty() {
            let errors = batch.input.problems.clone();
            self.fail(batch, errors, ErrorsShape::Sdk);
            return;
        }
        match batch.fate.clone() {
            Fate::FailEchoing { authorization } => {
                let errors = vec![json!({
                    "code": "invalid_request",
                    "message": format!("The input file was rejected for the request signed {authorization}."),
                    "param": null,
                    "line": 1,
                })];
                self.fail(batch, errors, ErrorsShape::Sdk);
            }
            Fate::UnknownStatus(_) => {}
            Fate::Fail { shape } => {
                let errors = vec![json!({
                    "code": "invalid_request",
                    "message": "The input file was rejected (injected failure).",
                    "param": null,
                    "line": 1,
                })];
                self.fail(batch, errors, shape);
            }
            Fate::StuckValidating => {}
            Fate::Expire { completed } if batch.polls >= batch.steps => {
                self.finish(
                    batch,
                    Ending::Expired {
                        executed: completed,
                    },
                    responder,
                );
            }
            Fate::CancelledByOther { completed } if batch.polls >= batch.steps => {
                self.finish(
                    batch,
                    Ending::Cancelled {
                        executed: completed,
                    },
                    responder,
                );
            }
            _ if batch.polls >= batch.steps => self.finish(batch, Ending::Completed, responder),
            _ => {
                let now = self.tick();
                batch.in_progress_at.get_or_insert(now);
                if batch.steps >= 3 && batch.polls + 1 == batch.steps {
                    batch.status = Status::Finalizing;
                    batch.finalizing_at = Some(now);
                } else {
                    batch.status = Status::InProgress;
                }
                batch.completed = batch.total * batch.polls as usize / batch.steps as usize;
            }
        }
    }

    fn fail(&mut self, batch: &mut BatchRecord, errors: Vec<Value>, shape: ErrorsShape) {
        batch.status = Status::Failed;
        batch.failed_at = Some(self.tick());
        batch.errors = Some(match shape {
            ErrorsShape::Sdk => json!({"object": "list", "data": errors}),
            ErrorsShape::Bare => Value::Array(errors),
        });
    }

    fn finish(&mut self, batch: &mut BatchRecord, ending: Ending, responder: &Responder) {
        let now = self.tick();
        let executed = match ending {
            Ending::Completed => batch.total,
            Ending::Expired { executed } | Ending::Cancelled { executed } => {
                executed.min(batch.total)
            }
        };
        let mut output = Vec::new();
        let mut errors = Vec::new();
        let (mut succeeded, mut failed) = (0, 0);
        for (index, line) in batch.input.lines.iter().enumerate() {
            let serial = self.serial();
            if index >= executed {
                errors.push(unexecuted_line(serial, &line.custom_id, ending));
            } else if batch.fate == Fate::NullOutputFileId {
                failed += 1;
                let body = error_body("Internal server error", "server_error", "internal_error");
                errors.push(response_line(serial, &line.custom_id, 500, body));
            } else {
                match responder(&line.custom_id, &line.body) {
                    FakeReply::Content(text) => {
                        succeeded += 1;
                        let mut body = match &batch.fate {
                            Fate::EchoInOutput { authorization } => {
                                let text = format!("{text}\n(request signed {authorization})");
                                let mut body = completion_body(serial, now, &line.body, &text);
                                body["system_fingerprint"] = json!(authorization);
                                body
                            }
                            _ => completion_body(serial, now, &line.body, &text),
                        };
                        if let (Fate::DeepOutput { .. }, true) = (&batch.fate, output.is_empty()) {
                            body["nested"] = json!(DEEP_PLACEHOLDER);
                        }
                        output.push(response_line(serial, &line.custom_id, 200, body));
                    }
                    FakeReply::Error { status, body } => {
                        failed += 1;
                        errors.push(response_line(serial, &line.custom_id, status, body));
                    }
                }
            }
        }
        shuffle(&batch.id, &mut output);
        shuffle(&batch.id, &mut errors);
        if batch.fate == Fate::ShuffleDuplicateForeign {
            if let Some(first) = output.first().cloned() {
                let serial = self.serial();
                let request = batch
                    .input
                    .lines
                    .first()
                    .map_or(&Value::Null, |line| &line.body);
                let body = completion_body(serial, now, request, "nobody asked for this");
                let foreign = response_line(serial, FOREIGN_CUSTOM_ID, 200, body);
                output.insert(output.len() / 2, foreign);
                output.push(first);
            }
        }
        let (output_id, error_id) = match &batch.fate {
            Fate::FileIds { output, error } => (Some(output.clone()), Some(error.clone())),
            _ => (None, None),
        };
        if !output.is_empty() {
            let mut content = jsonl(&output);
            match &batch.fate {
                Fate::BadLastLine(bad) => content = with_bad_last_line(&content, *bad),
                Fate::DeepOutput { depth } => content = deepen(&content, *depth),
                _ => {}
            }
            let file = self.store_file_as(
                output_id,
                format!("{}_output.jsonl", batch.id),
                "batch_output",
                content,
                None,
            );
            file.gone = batch.fate == Fate::OutputFile404;
            batch.output_file_id = Some(file.id.clone());
        }
        if !errors.is_empty() {
            let file = self.store_file_as(
                error_id,
                format!("{}_error.jsonl", batch.id),
                "batch_output",
                jsonl(&errors),
                None,
            );
            batch.error_file_id = Some(file.id.clone());
        }
        batch.completed = succeeded;
        batch.failed = failed;
        batch.in_progress_at.get_or_insert(now);
        match ending {
            Ending::Completed => {
                batch.status = Status::Completed;
                batch.finalizing_at.get_or_insert(now);
                batch.completed_at = Some(now);
            }
            Ending::Expired { .. } => {
                batch.status = Status::Expired;
                batch.expired_at = Some(now);
            }
            Ending::Cancelled { .. } => {
                batch.status = Status::Cancelled;
                batch.cancelling_at.get_or_insert(now);
                batch.cancelled_at = Some(now);
            }
        }
    }
}

/// Spends one use of a request fault if it targets `route` (or, for `LoseReply`, this is the
/// `nth` request); says what to do and whether the fault is used up.
fn fire(
    fault: &mut Fault,
    route: Option<Route>,
    nth: usize,
    authorization: &str,
) -> Option<(Verdict, bool)> {
    let targets = |target: &Route| *target == Route::Any || Some(*target) == route;
    let (times, verdict) = match fault {
        Fault::LoseReply { nth: at, how } if *at == nth => {
            return Some((Verdict::LoseReply(*how), true));
        }
        Fault::EchoKeyInError {
            route: target,
            status,
            times,
        } if targets(target) => (
            times,
            Verdict::Echo {
                status: *status,
                authorization: authorization.to_string(),
            },
        ),
        Fault::ShortDownload { dropped, times } if route == Some(Route::Download) => {
            (times, Verdict::Short { dropped: *dropped })
        }
        Fault::Redirect {
            route: target,
            location,
            times,
        } if targets(target) => (
            times,
            Verdict::Redirect {
                location: location.clone(),
            },
        ),
        Fault::RateLimit {
            route: target,
            times,
            retry_after,
        } if targets(target) => (
            times,
            Verdict::RateLimit {
                retry_after: *retry_after,
            },
        ),
        Fault::ServerError {
            route: target,
            status,
            times,
        } if targets(target) => (times, Verdict::ServerError { status: *status }),
        Fault::ResetConnection {
            route: target,
            times,
        } if targets(target) => (times, Verdict::Reset),
        Fault::TruncatedDownload { times } if route == Some(Route::Download) => {
            (times, Verdict::Truncate)
        }
        _ => return None,
    };
    *times = times.checked_sub(1)?;
    Some((verdict, *times == 0))
}

fn route_of(method: &Method, path: &str) -> Option<Route> {
    let rest = path.strip_prefix(PREFIX)?;
    let segments: Vec<&str> = rest.trim_start_matches('/').split('/').collect();
    match (method.as_str(), segments.as_slice()) {
        ("POST", ["files"]) => Some(Route::Upload),
        ("GET", ["files"]) => Some(Route::ListFiles),
        ("GET", ["files", _, "content"]) => Some(Route::Download),
        ("POST", ["batches"]) => Some(Route::CreateBatch),
        ("GET", ["batches"]) => Some(Route::ListBatches),
        ("GET", ["batches", _]) => Some(Route::GetBatch),
        ("POST", ["batches", _, "cancel"]) => Some(Route::Cancel),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Wire shapes.

fn error_body(message: &str, kind: &str, code: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "code": code}})
}

pub(crate) fn api_error(status: StatusCode, message: &str, kind: &str, code: &str) -> Response {
    (status, Json(error_body(message, kind, code))).into_response()
}

fn invalid_request(message: &str) -> Response {
    api_error(
        StatusCode::BAD_REQUEST,
        message,
        "invalid_request_error",
        "invalid_request",
    )
}

fn not_found(message: &str) -> Response {
    api_error(
        StatusCode::NOT_FOUND,
        message,
        "invalid_request_error",
        "not_found",
    )
}

fn response_line(serial: u64, custom_id: &str, status: u16, body: Value) -> Value {
    json!({
        "id": format!("batch_req_{serial:06}"),
        "custom_id": custom_id,
        "response": {"status_code": status, "request_id": format!("req_{serial:06}"), "body": body},
        "error": null,
    })
}

fn unexecuted_line(serial: u64, custom_id: &str, ending: Ending) -> Value {
    let (code, message) = match ending {
        Ending::Expired { .. } => (
            "batch_expired",
            "This request could not be executed before the completion window expired.",
        ),
        Ending::Completed | Ending::Cancelled { .. } => (
            "batch_cancelled",
            "This request was not executed because the batch was cancelled.",
        ),
    };
    json!({
        "id": format!("batch_req_{serial:06}"),
        "custom_id": custom_id,
        "response": null,
        "error": {"code": code, "message": message},
    })
}

fn completion_body(serial: u64, created: u64, request: &Value, content: &str) -> Value {
    let prompt_chars: usize = request
        .get("messages")
        .and_then(Value::as_array)
        .map(|messages| {
            messages
                .iter()
                .map(|message| match message.get("content") {
                    Some(Value::String(text)) => text.chars().count(),
                    Some(other) => other.to_string().len(),
                    None => 0,
                })
                .sum()
        })
        .unwrap_or(0);
    let prompt_tokens = prompt_chars.div_ceil(4);
    let completion_tokens = content.chars().count().div_ceil(4);
    json!({
        "id": format!("chatcmpl-{serial:06}"),
        "object": "chat.completion",
        "created": created,
        "model": request.get("model").cloned().unwrap_or(Value::Null),
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "logprobs": null,
            "finish_reason": "stop",
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    })
}

/// A deterministic order that is not input order.
fn shuffle(batch_id: &str, lines: &mut [Value]) {
    lines.sort_by_cached_key(|line| {
        let custom_id = line.get("custom_id").and_then(Value::as_str).unwrap_or("");
        Sha256::digest(format!("{batch_id}/{custom_id}"))
    });
}

/// Stands in an output line for the deeply nested value `deepen` puts there (a `Value` that deep
/// could not be serialised without overflowing the stack).
const DEEP_PLACEHOLDER: &str = "__deep_nesting__";

/// `content` with its placeholder replaced by `depth` nested arrays.
fn deepen(content: &[u8], depth: usize) -> Vec<u8> {
    let placeholder = format!("\"{DEEP_PLACEHOLDER}\"");
    let text = String::from_utf8_lossy(content);
    let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    text.replacen(&placeholder, &deep, 1).into_bytes()
}

/// `content` (JSONL ending in a newline) with its last line replaced by `bad`'s junk.
fn with_bad_last_line(content: &[u8], bad: BadLine) -> Vec<u8> {
    let mut kept = without_last_lines(content, 1);
    let last = &content[kept.len()..content.len().saturating_sub(1)];
    kept.extend_from_slice(&bad.replace(last));
    kept.push(b'\n');
    kept
}

/// `bytes` without its last `dropped` lines, cut after a newline.
fn without_last_lines(bytes: &[u8], dropped: usize) -> Vec<u8> {
    let mut end = bytes.len();
    for _ in 0..dropped {
        let body = bytes[..end].strip_suffix(b"\n").unwrap_or(&bytes[..end]);
        end = body
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |nl| nl + 1);
    }
    bytes[..end].to_vec()
}

fn jsonl(lines: &[Value]) -> Vec<u8> {
    let mut out = String::new();
    for line in lines {
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out.into_bytes()
}

/// Checks an upload the way the batch validator would.
fn inspect_input(content: &[u8]) -> InputFile {
    let mut file = InputFile {
        lines: Vec::new(),
        problems: Vec::new(),
        custom_ids: Vec::new(),
    };
    let problem = |line: usize, message: String| json!({"code": "invalid_request", "message": message, "param": null, "line": line});
    let Ok(text) = std::str::from_utf8(content) else {
        file.problems
            .push(problem(1, "The file is not valid UTF-8.".to_string()));
        return file;
    };
    let mut seen = BTreeSet::new();
    let mut model: Option<Value> = None;
    let text = text.strip_suffix('\n').unwrap_or(text);
    if text.is_empty() {
        file.problems
            .push(problem(1, "The file has no request lines.".to_string()));
        return file;
    }
    for (index, raw) in text.split('\n').enumerate() {
        let number = index + 1;
        let Ok(Value::Object(line)) = serde_json::from_str::<Value>(raw) else {
            file.problems
                .push(problem(number, "Line is not a JSON object.".to_string()));
            continue;
        };
        let custom_id = line.get("custom_id").and_then(Value::as_str);
        if let Some(custom_id) = custom_id {
            file.custom_ids.push(custom_id.to_string());
        }
        let body = line.get("body").filter(|body| body.is_object());
        let (Some(custom_id), Some(body)) = (custom_id, body) else {
            file.problems.push(problem(
                number,
                "Line needs a string custom_id and an object body.".to_string(),
            ));
            continue;
        };
        if line.get("method").and_then(Value::as_str) != Some("POST") {
            file.problems
                .push(problem(number, "method must be POST.".to_string()));
        }
        if line.get("url").and_then(Value::as_str) != Some(CHAT_ENDPOINT) {
            file.problems
                .push(problem(number, format!("url must be {CHAT_ENDPOINT}.")));
        }
        if !seen.insert(custom_id.to_string()) {
            file.problems.push(problem(
                number,
                format!("Duplicate custom_id {custom_id:?}: custom_id must be unique."),
            ));
        }
        let line_model = body.get("model").cloned().unwrap_or(Value::Null);
        match &model {
            None => model = Some(line_model),
            Some(first) if *first != line_model => file.problems.push(problem(
                number,
                "All lines of a batch file must use the same model.".to_string(),
            )),
            Some(_) => {}
        }
        file.lines.push(InputLine {
            custom_id: custom_id.to_string(),
            body: body.clone(),
        });
    }
    file
}

fn window_seconds(window: &str) -> Option<u64> {
    let seconds = if let Some(hours) = window.strip_suffix('h') {
        hours.parse::<u64>().ok()?.checked_mul(3600)?
    } else {
        window
            .strip_suffix('d')?
            .parse::<u64>()
            .ok()?
            .checked_mul(86_400)?
    };
    (86_400..=7 * 86_400).contains(&seconds).then_some(seconds)
}

fn metadata_problem(metadata: &Value) -> Option<&'static str> {
    let Value::Object(entries) = metadata else {
        return (!metadata.is_null()).then_some("metadata must be an object.");
    };
    if entries.len() > 16 {
        return Some("metadata holds at most 16 keys.");
    }
    let fits = entries.iter().all(|(key, value)| {
        key.chars().count() <= 64
            && value
                .as_str()
                .is_some_and(|text| text.chars().count() <= 512)
    });
    (!fits).then_some("metadata keys are at most 64 characters, values strings of at most 512.")
}

// ---------------------------------------------------------------------------------------------
// HTTP.

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route(
            &format!("{PREFIX}/files"),
            post(upload_file).get(list_files),
        )
        .route(&format!("{PREFIX}/files/{{id}}/content"), get(file_content))
        .route(
            &format!("{PREFIX}/batches"),
            post(create_batch).get(list_batches),
        )
        .route(&format!("{PREFIX}/batches/{{id}}"), get(get_batch))
        .route(
            &format!("{PREFIX}/batches/{{id}}/cancel"),
            post(cancel_batch),
        )
        .fallback(file_content_by_normalised_path)
        .layer(DefaultBodyLimit::max(MAX_FILE_BYTES + 1024 * 1024))
        .layer(middleware::from_fn_with_state(Arc::clone(&shared), gate))
        .with_state(shared)
}

/// Counts, authenticates and injects request faults before any handler runs.
async fn gate(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(connection): ConnectInfo<Connection>,
    request: Request,
    next: Next,
) -> Response {
    let route = route_of(request.method(), request.uri().path());
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
    let verdict = shared.lock().judge(route, authorization);
    match verdict {
        Verdict::Pass => next.run(request).await,
        Verdict::Truncate => {
            let response = next.run(request).await;
            if let Some(length) = response.body().size_hint().exact() {
                if response.status() == StatusCode::OK {
                    let half = usize::try_from(length / 2).unwrap_or(NO_CUT - 1);
                    connection.0.cut_body_at.store(half, Ordering::SeqCst);
                }
            }
            response
        }
        Verdict::Unauthorized => api_error(
            StatusCode::UNAUTHORIZED,
            "Invalid API Key",
            "invalid_request_error",
            "invalid_api_key",
        ),
        Verdict::RateLimit { retry_after } => {
            let mut response = api_error(
                StatusCode::TOO_MANY_REQUESTS,
                "Rate limit reached. Please try again later.",
                "tokens",
                "rate_limit_exceeded",
            );
            if let Some(seconds) = retry_after {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            }
            response
        }
        Verdict::ServerError { status } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            api_error(
                status,
                "The server had an error while processing your request.",
                "server_error",
                "internal_error",
            )
        }
        Verdict::LoseReply(how) => {
            let performed = next.run(request).await;
            // The handler ran: whatever it changed stays changed. Only its reply is lost.
            drop(performed);
            match how {
                LostReply::Reset => {
                    connection.0.killed.store(true, Ordering::SeqCst);
                    StatusCode::INTERNAL_SERVER_ERROR.into_response()
                }
                LostReply::BadGateway => api_error(
                    StatusCode::BAD_GATEWAY,
                    "Bad gateway.",
                    "server_error",
                    "bad_gateway",
                ),
                LostReply::NotJson => (
                    StatusCode::OK,
                    [(header::CONTENT_TYPE, "text/html")],
                    "<html><body>upstream hiccup</body></html>",
                )
                    .into_response(),
            }
        }
        Verdict::Echo {
            status,
            authorization,
        } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
            api_error(
                status,
                &format!("Request with header Authorization: {authorization} was not accepted."),
                "invalid_request_error",
                "echo",
            )
        }
        Verdict::Short { dropped } => {
            let response = next.run(request).await;
            if response.status() != StatusCode::OK {
                return response;
            }
            let (parts, body) = response.into_parts();
            let Ok(bytes) = to_bytes(body, usize::MAX).await else {
                return StatusCode::INTERNAL_SERVER_ERROR.into_response();
            };
            let kept = without_last_lines(&bytes, dropped);
            let mut parts = parts;
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(kept))
        }
        Verdict::Redirect { location } => {
            let mut response = StatusCode::TEMPORARY_REDIRECT.into_response();
            if let Ok(value) = HeaderValue::from_str(&location) {
                response.headers_mut().insert(header::LOCATION, value);
            }
            response
        }
        Verdict::Reset => {
            if route == Some(Route::Upload) {
                // Read a little of the upload first, as a proxy dying mid-request would. The
                // read is cut short on purpose, so its error says nothing.
                let _ = to_bytes(request.into_body(), BYTES_READ_BEFORE_RESET).await;
            }
            connection.0.killed.store(true, Ordering::SeqCst);
            // Never delivered: the first write on a killed connection fails and resets it.
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

async fn upload_file(
    State(shared): State<Arc<Shared>>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Response {
    let Ok(mut multipart) = multipart else {
        return invalid_request("Expected a multipart/form-data body.");
    };
    let mut purpose = None;
    let mut file = None;
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(error) => return invalid_request(&format!("Malformed multipart body: {error}")),
        };
        match field.name() {
            Some("purpose") => purpose = field.text().await.ok(),
            Some("file") => {
                let filename = field.file_name().map(str::to_string);
                match field.bytes().await {
                    Ok(bytes) => file = Some((filename, bytes)),
                    Err(error) => {
                        return invalid_request(&format!("Could not read the file part: {error}"))
                    }
                }
            }
            _ => {}
        }
    }
    if purpose.as_deref() != Some("batch") {
        return invalid_request("purpose must be \"batch\".");
    }
    let Some((Some(filename), content)) = file else {
        return invalid_request("A file part with a filename is required.");
    };
    if content.len() > MAX_FILE_BYTES {
        return invalid_request("The file exceeds 200 MB.");
    }
    if content
        .split(|byte| *byte == b'\n')
        .filter(|l| !l.is_empty())
        .count()
        > MAX_FILE_LINES
    {
        return invalid_request("The file exceeds 50,000 lines.");
    }
    let input = inspect_input(&content);
    let mut state = shared.lock();
    state.counters.uploads += 1;
    for custom_id in &input.custom_ids {
        *state
            .counters
            .lines_uploaded
            .entry(custom_id.clone())
            .or_default() += 1;
    }
    let file = state.store_file(filename, "batch", content.to_vec(), Some(input));
    Json(file.to_json()).into_response()
}

async fn list_files(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let mut state = shared.lock();
    state.counters.file_lists += 1;
    let purpose = query.get("purpose");
    let data: Vec<Value> = state
        .files
        .values()
        .rev()
        .filter(|file| !file.gone && purpose.is_none_or(|wanted| wanted == file.purpose))
        .map(StoredFile::to_json)
        .collect();
    Json(json!({"object": "list", "data": data})).into_response()
}

async fn file_content(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let content = {
        let mut state = shared.lock();
        state.counters.downloads += 1;
        match state.files.get(&id) {
            Some(file) if !file.gone => Bytes::from(file.content.clone()),
            _ => return not_found(&format!("No such File object: {id}")),
        }
    };
    let mut response = Response::new(Body::from(content));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    response
}

/// What a naive server does with a file id that was put into the URL unencoded: the client's URL
/// normalisation resolved its `..` and `/`, and the server serves whatever file's id normalises to
/// the path asked for. Anything else is an unknown URL.
async fn file_content_by_normalised_path(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: axum::http::Uri,
) -> Response {
    let path = uri.path();
    if method == Method::GET && path.ends_with("/content") {
        let state = shared.lock();
        let found = state.files.values().find(|file| {
            reqwest::Url::parse(&format!("http://fake{PREFIX}/files/{}/content", file.id))
                .is_ok_and(|url| url.path() == path)
        });
        if let Some(file) = found.filter(|file| !file.gone) {
            return Response::new(Body::from(file.content.clone()));
        }
    }
    not_found("Unknown URL.")
}

async fn create_batch(
    State(shared): State<Arc<Shared>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        .unwrap_or_default();
    let Ok(Value::Object(request)) = serde_json::from_slice::<Value>(&body) else {
        return invalid_request("The body must be a JSON object.");
    };
    let text = |key: &str| request.get(key).and_then(Value::as_str).map(str::to_string);
    let Some(input_file_id) = text("input_file_id") else {
        return invalid_request("input_file_id is required.");
    };
    let endpoint = text("endpoint").unwrap_or_default();
    if endpoint != CHAT_ENDPOINT {
        return invalid_request(&format!("endpoint must be {CHAT_ENDPOINT}."));
    }
    let completion_window = text("completion_window").unwrap_or_default();
    let Some(window) = window_seconds(&completion_window) else {
        return invalid_request("completion_window must be between 24h and 7d.");
    };
    let metadata = request.get("metadata").cloned().unwrap_or(Value::Null);
    if let Some(problem) = metadata_problem(&metadata) {
        return invalid_request(problem);
    }
    let mut state = shared.lock();
    let input = match state.files.get(&input_file_id) {
        Some(StoredFile {
            input: Some(input), ..
        }) => input.clone(),
        Some(_) => return invalid_request("The input file must have purpose \"batch\"."),
        None => return not_found(&format!("No such File object: {input_file_id}")),
    };
    state.counters.batches_created += 1;
    for custom_id in &input.custom_ids {
        *state
            .counters
            .lines_in_batches
            .entry(custom_id.clone())
            .or_default() += 1;
    }
    let fate = state.take_batch_fate(&authorization);
    let id = format!("batch_{:06}", state.serial());
    let created_at = state.tick();
    let batch = BatchRecord {
        id: id.clone(),
        endpoint,
        input_file_id,
        completion_window,
        metadata,
        status: Status::Validating,
        created_at,
        expires_at: created_at + window,
        in_progress_at: None,
        finalizing_at: None,
        completed_at: None,
        failed_at: None,
        expired_at: None,
        cancelling_at: None,
        cancelled_at: None,
        output_file_id: None,
        error_file_id: None,
        errors: None,
        total: input.lines.len(),
        completed: 0,
        failed: 0,
        input,
        fate,
        steps: state.steps_to_complete,
        polls: 0,
    };
    let shown = batch.to_json();
    state.batches.insert(id, batch);
    Json(shown).into_response()
}

async fn get_batch(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let mut state = shared.lock();
    state.counters.polls += 1;
    match state.poll(&id, &shared.responder) {
        Some(batch) => Json(batch).into_response(),
        None => not_found(&format!("No batch found with id '{id}'.")),
    }
}

async fn cancel_batch(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let mut state = shared.lock();
    state.counters.cancels += 1;
    let now = state.tick();
    let Some(batch) = state.batches.get_mut(&id) else {
        return not_found(&format!("No batch found with id '{id}'."));
    };
    if batch.status.is_running() {
        batch.status = Status::Cancelling;
        batch.cancelling_at = Some(now);
    } else if batch.status != Status::Cancelling {
        return api_error(
            StatusCode::CONFLICT,
            &format!(
                "Cannot cancel a batch with status '{}'.",
                batch.status.as_str()
            ),
            "invalid_request_error",
            "batch_not_cancellable",
        );
    }
    Json(batch.to_json()).into_response()
}

async fn list_batches(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let mut state = shared.lock();
    state.counters.batch_lists += 1;
    let newest_first: Vec<&BatchRecord> = state.batches.values().rev().collect();
    let start_after = |id: &str| {
        newest_first
            .iter()
            .position(|batch| batch.id == id)
            .map(|position| position + 1)
    };
    match state.list_style {
        ListStyle::Groq => {
            let start = match query.get("cursor") {
                None => Some(0),
                Some(cursor) => cursor.strip_prefix("cursor_").and_then(start_after),
            };
            let Some(start) = start else {
                return invalid_request("Invalid cursor.");
            };
            let page: Vec<&BatchRecord> = newest_first
                .iter()
                .skip(start)
                .take(LIST_PAGE_SIZE)
                .copied()
                .collect();
            let mut paging = serde_json::Map::new();
            if start + page.len() < newest_first.len() {
                if let Some(last) = page.last() {
                    paging.insert("next_cursor".into(), json!(format!("cursor_{}", last.id)));
                }
            }
            let data: Vec<Value> = page.iter().map(|batch| batch.to_json()).collect();
            Json(json!({"object": "list", "data": data, "paging": paging})).into_response()
        }
        ListStyle::OpenAi => {
            let start = match query.get("after") {
                None => Some(0),
                Some(after) => start_after(after),
            };
            let Some(start) = start else {
                return invalid_request("No batch found for `after`.");
            };
            let limit = match query.get("limit").map(|limit| limit.parse::<usize>()) {
                None => LIST_PAGE_SIZE,
                Some(Ok(limit)) if (1..=100).contains(&limit) => limit.min(LIST_PAGE_SIZE),
                Some(_) => return invalid_request("limit must be between 1 and 100."),
            };
            let page: Vec<&BatchRecord> = newest_first
                .iter()
                .skip(start)
                .take(limit)
                .copied()
                .collect();
            let data: Vec<Value> = page.iter().map(|batch| batch.to_json()).collect();
            Json(json!({
                "object": "list",
                "data": data,
                "first_id": page.first().map(|batch| batch.id.clone()),
                "last_id": page.last().map(|batch| batch.id.clone()),
                "has_more": start + page.len() < newest_first.len(),
            }))
            .into_response()
        }
    }
}
