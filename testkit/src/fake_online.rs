//! A fake OpenAI-compatible `/chat/completions` server on 127.0.0.1, for the `online` backend's
//! fault tests and benches: it answers each request through the same [`Responder`] as the fake
//! Batch API, and misbehaves on purpose — 429s with and without `retry-after`, 503 bursts,
//! resets, slow, cut, endless and oversized bodies, a 200 with an error inside, a wrong `model`,
//! the key echoed back — and, for the rate benchmark, answers 429 above a rate it does not tell.
//!
//! Behaviour the tests can rely on:
//! - Every request counts in `requests`. With an expected key set, a request without
//!   `Authorization: Bearer <key>` gets 401 before anything else. Faults are then consumed in
//!   push order by the requests that arrive; a faulted request never reaches the responder.
//! - With a hidden rate set, a request arriving when the last second already holds that many
//!   accepted requests gets 429 (no `retry-after`, no rate headers): the client must learn.
//! - A request's `custom_id` is read from the `x-saseval-custom-id` header (empty without it);
//!   the reply's `model` is the request's, its `usage` counts characters / 4.
//! - `answers` counts, per custom_id, the completions served: what a paid server bills.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use axum::body::{to_bytes, Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use http_body::Frame;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use saseval_gen::runner::online::CUSTOM_ID_HEADER;

use crate::fake_api::{api_error, Connection, ControlledListener, FakeReply, Responder};

const PREFIX: &str = "/v1";
/// The bytes an endless body sends before it gives up (a bound, so no test can hang on it).
const ENDLESS_BYTES: usize = 256 << 20;
const ENDLESS_CHUNK: usize = 64 << 10;

/// Something going wrong, on purpose, for the next `times` requests.
#[derive(Clone, Debug, PartialEq)]
pub enum OnlineFault {
    /// 429 with a `rate_limit_exceeded` body and, if given, `retry-after` (seconds).
    RateLimit {
        times: usize,
        retry_after: Option<f64>,
    },
    /// `status` with a `server_error` body (503: the server is overloaded).
    ServerError { status: u16, times: usize },
    /// The connection is reset with no reply.
    Reset { times: usize },
    /// The reply's head, half its body, then a pause of `pause` before the rest.
    SlowBody { pause: Duration, times: usize },
    /// The reply announces its full length, sends half its body and closes.
    CutBody { times: usize },
    /// A 200 whose body never ends (it stops after 256 MB, so that nothing hangs).
    EndlessBody { times: usize },
    /// A 200 whose completion is `bytes` long.
    Oversized { bytes: usize, times: usize },
    /// A 200 whose body is an HTML page.
    NotJson { times: usize },
    /// A 200 holding `{"error": {…}}` instead of a completion.
    ErrorInside { times: usize },
    /// A completion that says it came from another model.
    WrongModel { times: usize },
    /// A completion whose content and `id` hold the request's `Authorization` header.
    EchoKey { times: usize },
}

impl OnlineFault {
    fn times_mut(&mut self) -> &mut usize {
        match self {
            OnlineFault::RateLimit { times, .. }
            | OnlineFault::ServerError { times, .. }
            | OnlineFault::Reset { times }
            | OnlineFault::SlowBody { times, .. }
            | OnlineFault::CutBody { times }
            | OnlineFault::EndlessBody { times }
            | OnlineFault::Oversized { times, .. }
            | OnlineFault::NotJson { times }
            | OnlineFault::ErrorInside { times }
            | OnlineFault::WrongModel { times }
            | OnlineFault::EchoKey { times } => times,
        }
    }
}

/// What the fake has seen.
#[derive(Clone, Debug, Default)]
pub struct OnlineCounters {
    /// Every request that arrived, refused, faulted or reset ones included.
    pub requests: usize,
    /// Requests refused for a wrong or missing key.
    pub unauthorized: usize,
    /// 429s sent (by a fault or the hidden rate).
    pub rate_limited: usize,
    /// Faults that took effect.
    pub faults_fired: usize,
    /// custom_id → completions served for it (what a paid server bills).
    pub answers: BTreeMap<String, usize>,
    /// Distinct `Authorization` header values seen (`None`: a request without one).
    pub authorization_values: BTreeSet<Option<String>>,
    /// The most requests the fake was handling at once.
    pub most_in_flight: usize,
    /// Seconds since the fake started at which each request arrived, with its status (when
    /// the timeline is recorded).
    pub timeline: Vec<(f64, u16)>,
}

/// The running fake; it stops when dropped.
pub struct FakeOnline {
    shared: Arc<Shared>,
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<OnlineState>,
    responder: Responder,
    started: Instant,
}

struct OnlineState {
    counters: OnlineCounters,
    expected_authorization: Option<String>,
    faults: VecDeque<OnlineFault>,
    latency: Duration,
    hidden_rate: Option<usize>,
    accepted: VecDeque<Instant>,
    in_flight: usize,
    record_timeline: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, OnlineState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl FakeOnline {
    /// Binds 127.0.0.1 on a free port and serves from its own thread and runtime (its thread is
    /// named `fake-online-<port>`, so a bench can tell its CPU time apart).
    pub fn start(responder: Responder) -> FakeOnline {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("the fake online server could not bind 127.0.0.1");
        listener
            .set_nonblocking(true)
            .expect("the fake online server could not make its socket non-blocking");
        let addr = listener
            .local_addr()
            .expect("the fake online server has no local address");
        let shared = Arc::new(Shared {
            state: Mutex::new(OnlineState {
                counters: OnlineCounters::default(),
                expected_authorization: None,
                faults: VecDeque::new(),
                latency: Duration::ZERO,
                hidden_rate: None,
                accepted: VecDeque::new(),
                in_flight: 0,
                record_timeline: false,
            }),
            responder,
            started: Instant::now(),
        });
        let app = Router::new()
            .route(&format!("{PREFIX}/chat/completions"), post(chat))
            .with_state(Arc::clone(&shared));
        let (shutdown, shutdown_signal) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(format!("fake-online-{}", addr.port()))
            .spawn(move || serve(listener, app, shutdown_signal))
            .expect("the fake online server thread could not start");
        FakeOnline {
            shared,
            addr,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}{PREFIX}", self.addr)
    }

    /// From now on, requests without `Authorization: Bearer <key>` get 401.
    pub fn set_expected_key(&self, key: &str) {
        self.shared.lock().expected_authorization = Some(format!("Bearer {key}"));
    }

    /// Queues a fault; faults fire in push order, each on the next requests that arrive.
    pub fn push_fault(&self, fault: OnlineFault) {
        self.shared.lock().faults.push_back(fault);
    }

    /// Each answer waits this long before it is sent.
    pub fn set_latency(&self, latency: Duration) {
        self.shared.lock().latency = latency;
    }

    /// Answers 429 to a request that arrives when the last second holds `per_second` accepted
    /// requests already.
    pub fn set_hidden_rate(&self, per_second: usize) {
        self.shared.lock().hidden_rate = Some(per_second);
    }

    /// Records every request's arrival time and status in `timeline`.
    pub fn record_timeline(&self) {
        self.shared.lock().record_timeline = true;
    }

    pub fn counters(&self) -> OnlineCounters {
        self.shared.lock().counters.clone()
    }
}

impl Drop for FakeOnline {
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
        .expect("the fake online server could not build its runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)
            .expect("the fake online server could not adopt its socket");
        let server = axum::serve(
            ControlledListener(listener),
            app.into_make_service_with_connect_info::<Connection>(),
        );
        tokio::select! {
            served = server => {
                if let Err(error) = served {
                    eprintln!("fake online server stopped: {error}");
                }
            }
            _ = shutdown => {}
        }
    });
}

/// What the gate decided for one request.
enum Verdict {
    Unauthorized,
    HiddenRate,
    Fault(OnlineFault),
    Serve { latency: Duration },
}

impl OnlineState {
    fn judge(&mut self, authorization: Option<String>, now: Instant) -> Verdict {
        self.counters.requests += 1;
        self.counters
            .authorization_values
            .insert(authorization.clone());
        if let Some(expected) = &self.expected_authorization {
            if authorization.as_ref() != Some(expected) {
                self.counters.unauthorized += 1;
                return Verdict::Unauthorized;
            }
        }
        if let Some(fault) = self.faults.front_mut() {
            let times = fault.times_mut();
            if *times > 0 {
                *times -= 1;
                let fired = fault.clone();
                if *fault.times_mut() == 0 {
                    self.faults.pop_front();
                }
                self.counters.faults_fired += 1;
                if matches!(fired, OnlineFault::RateLimit { .. }) {
                    self.counters.rate_limited += 1;
                }
                return Verdict::Fault(fired);
            }
            self.faults.pop_front();
        }
        if let Some(rate) = self.hidden_rate {
            while self
                .accepted
                .front()
                .is_some_and(|at| now.saturating_duration_since(*at) >= Duration::from_secs(1))
            {
                self.accepted.pop_front();
            }
            if self.accepted.len() >= rate {
                self.counters.rate_limited += 1;
                return Verdict::HiddenRate;
            }
            self.accepted.push_back(now);
        }
        Verdict::Serve {
            latency: self.latency,
        }
    }
}

async fn chat(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(connection): ConnectInfo<Connection>,
    request: Request,
) -> Response {
    let now = Instant::now();
    let headers = request.headers();
    let header_text = |name: &str| {
        headers
            .get(name)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
    };
    let (authorization, custom_id) = (
        header_text(header::AUTHORIZATION.as_str()),
        header_text(CUSTOM_ID_HEADER).unwrap_or_default(),
    );
    let verdict = {
        let mut state = shared.lock();
        state.in_flight += 1;
        state.counters.most_in_flight = state.counters.most_in_flight.max(state.in_flight);
        state.judge(authorization.clone(), now)
    };
    let body = to_bytes(request.into_body(), 64 << 20)
        .await
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (response, billed) = respond(
        &shared,
        verdict,
        &custom_id,
        &body,
        authorization,
        &connection,
    )
    .await;
    let mut state = shared.lock();
    state.in_flight -= 1;
    if state.record_timeline {
        let at = now.saturating_duration_since(shared.started).as_secs_f64();
        state
            .counters
            .timeline
            .push((at, response.status().as_u16()));
    }
    if billed {
        *state.counters.answers.entry(custom_id).or_default() += 1;
    }
    response
}

/// The response to one request, and whether the model wrote a completion for it (what a paid
/// server bills, whether or not the client receives it whole).
async fn respond(
    shared: &Shared,
    verdict: Verdict,
    custom_id: &str,
    body: &Value,
    authorization: Option<String>,
    connection: &Connection,
) -> (Response, bool) {
    let model = body.get("model").and_then(Value::as_str).unwrap_or("");
    let fault = match verdict {
        Verdict::Unauthorized => {
            let refused = api_error(
                StatusCode::UNAUTHORIZED,
                "Invalid API Key",
                "invalid_request_error",
                "invalid_api_key",
            );
            return (refused, false);
        }
        Verdict::HiddenRate => return (rate_limited(None), false),
        Verdict::Serve { latency } => {
            if !latency.is_zero() {
                tokio::time::sleep(latency).await;
            }
            return answer(shared, custom_id, body, model);
        }
        Verdict::Fault(fault) => fault,
    };
    let completion_of =
        |model: &str, echo: Option<&str>| answer_bytes(shared, custom_id, body, model, echo);
    match fault {
        OnlineFault::RateLimit { retry_after, .. } => (rate_limited(retry_after), false),
        OnlineFault::ServerError { status, .. } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            let message = "The server is overloaded, please try again later.";
            (
                api_error(status, message, "server_error", "overloaded"),
                false,
            )
        }
        OnlineFault::Reset { .. } => {
            connection.0.killed.store(true, Ordering::SeqCst);
            // Never delivered: the first write on a killed connection fails and resets it.
            (StatusCode::INTERNAL_SERVER_ERROR.into_response(), false)
        }
        OnlineFault::SlowBody { pause, .. } => {
            let whole = completion_of(model, None);
            let half = whole.len() / 2;
            let chunks = vec![whole.slice(..half), whole.slice(half..)];
            let mut response = Response::new(Body::new(Chunks::new(chunks, pause)));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            (response, true)
        }
        OnlineFault::CutBody { .. } => {
            let whole = completion_of(model, None);
            connection
                .0
                .cut_body_at
                .store(whole.len() / 2, Ordering::SeqCst);
            (json_response(whole), true)
        }
        OnlineFault::EndlessBody { .. } => {
            let mut chunks = vec![Bytes::from_static(b"{\"id\":\"endless\",\"filler\":\"")];
            let filler = Bytes::from(vec![b'x'; ENDLESS_CHUNK]);
            chunks.extend(std::iter::repeat_n(filler, ENDLESS_BYTES / ENDLESS_CHUNK));
            let endless = Response::new(Body::new(Chunks::new(chunks, Duration::ZERO)));
            (endless, false)
        }
        OnlineFault::Oversized { bytes, .. } => {
            let content = "y".repeat(bytes);
            let reply = completion(model, &content, body, custom_id);
            (json_response(completion_bytes(&reply)), true)
        }
        OnlineFault::NotJson { .. } => {
            let page = "<html><body>upstream hiccup</body></html>";
            let html = (StatusCode::OK, [(header::CONTENT_TYPE, "text/html")], page);
            (html.into_response(), false)
        }
        OnlineFault::ErrorInside { .. } => {
            let error = json!({"error": {"message": "The model produced invalid output.", "type": "server_error", "code": "invalid_output"}});
            ((StatusCode::OK, Json(error)).into_response(), false)
        }
        OnlineFault::WrongModel { .. } => {
            (json_response(completion_of("some-other-model", None)), true)
        }
        OnlineFault::EchoKey { .. } => {
            let echo = authorization.unwrap_or_default();
            (json_response(completion_of(model, Some(&echo))), true)
        }
    }
}

fn rate_limited(retry_after: Option<f64>) -> Response {
    let mut response = api_error(
        StatusCode::TOO_MANY_REQUESTS,
        "Rate limit reached for requests. Please try again later.",
        "requests",
        "rate_limit_exceeded",
    );
    if let Some(seconds) = retry_after {
        if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    response
}

fn json_response(bytes: Bytes) -> Response {
    let mut response = Response::new(Body::from(bytes));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn answer(shared: &Shared, custom_id: &str, body: &Value, model: &str) -> (Response, bool) {
    match (shared.responder)(custom_id, body) {
        FakeReply::Content(text) => {
            let reply = completion(model, &text, body, custom_id);
            (json_response(completion_bytes(&reply)), true)
        }
        FakeReply::Error { status, body } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
            ((status, Json(body)).into_response(), false)
        }
    }
}

/// The completion the responder gives, with `echo` appended to its content and id if given.
fn answer_bytes(
    shared: &Shared,
    custom_id: &str,
    body: &Value,
    model: &str,
    echo: Option<&str>,
) -> Bytes {
    let text = match (shared.responder)(custom_id, body) {
        FakeReply::Content(text) => text,
        FakeReply::Error { .. } => String::new(),
    };
    let mut reply = completion(model, &text, body, custom_id);
    if let Some(echo) = echo {
        reply["id"] = json!(format!("chatcmpl-{echo}"));
        reply["choices"][0]["message"]["content"] = json!(format!("{text}\n{echo}"));
    }
    completion_bytes(&reply)
}

fn completion_bytes(reply: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(reply).unwrap_or_default())
}

/// A `chat.completion` object answering `body` with `text`.
fn completion(model: &str, text: &str, body: &Value, custom_id: &str) -> Value {
    let prompt_chars: usize = body
        .get("messages")
        .and_then(Value::as_array)
        .map(|messages| {
            messages
                .iter()
                .filter_map(|m| m.get("content").and_then(Value::as_str))
                .map(str::len)
                .sum()
        })
        .unwrap_or(0);
    let prompt_tokens = prompt_chars / 4 + 1;
    let completion_tokens = text.len() / 4 + 1;
    json!({
        "id": format!("chatcmpl-{}", custom_id.replace('/', "-")),
        "object": "chat.completion",
        "created": 4_102_444_800u64,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    })
}

/// A body sent as the given chunks, with a pause before each chunk after the first.
struct Chunks {
    chunks: VecDeque<Bytes>,
    pause: Duration,
    first: bool,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Chunks {
    fn new(chunks: Vec<Bytes>, pause: Duration) -> Chunks {
        Chunks {
            chunks: chunks.into(),
            pause,
            first: true,
            sleep: None,
        }
    }
}

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if !this.first && !this.pause.is_zero() {
            let sleep = this
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(this.pause)));
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.sleep = None;
        }
        this.first = false;
        Poll::Ready(this.chunks.pop_front().map(|chunk| Ok(Frame::data(chunk))))
    }
}
