//! The batch runner: runs a set of chat-completion requests through one backend (the HTTP Batch
//! API, an OpenAI-compatible server answering online, the in-process local model, or
//! export/import files for another engine) and returns one outcome per request. Every outcome is written to the response cache before anything else
//! happens, and every remote side effect is journaled, so a re-run never pays twice.

pub mod cache;
pub mod client;
pub mod endpoint;
pub mod file;
pub mod ingest;
pub mod journal;
#[cfg(feature = "local")]
pub mod local;
mod local_job;
pub mod online;
pub mod remote;
pub mod request_file;
pub mod status;
pub mod untrusted;
pub mod usage;

use crate::config::{Config, Provider};
pub use crate::runner::usage::{StageUsage, Usage};
use crate::ui::Printer;
use cache::Cache;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One chat-completion request: a stable custom_id and the OpenAI request body, with the
/// body's hash computed once (it keys the cache and is compared many times per job).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub custom_id: String,
    body: Value,
    body_sha256: String,
}

impl Request {
    pub fn new(custom_id: String, body: Value) -> Request {
        let body_sha256 = crate::util::digest::sha256_hex(body.to_string().as_bytes());
        Request {
            custom_id,
            body,
            body_sha256,
        }
    }

    pub fn body(&self) -> &Value {
        &self.body
    }

    /// SHA-256 of the body's JSON bytes: the cache key together with the custom_id.
    pub fn body_hash(&self) -> &str {
        &self.body_sha256
    }

    pub fn model(&self) -> &str {
        self.body.get("model").and_then(Value::as_str).unwrap_or("")
    }
}

/// The final result of one request, its response body read as `B`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeOf<B> {
    /// The response body (an OpenAI `chat.completion` object).
    Ok(B),
    /// The server or model could not serve it, for good (e.g. a 400 from JSON mode).
    Failed(Failure),
}

/// An outcome with its whole response body.
pub type Outcome = OutcomeOf<Value>;

/// An outcome with the parts of its response body that the stages read.
pub type ReplyOutcome = OutcomeOf<crate::stages::reply::ResponseBody>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub code: String,
    pub status: Option<u16>,
    pub message: String,
}

/// How a job ended: every request has its outcome in the cache, except `waiting` ones that are
/// still running (`--no-wait`) or wait for an import (`file` backend).
#[derive(Debug, Default)]
pub struct JobResult {
    pub waiting: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    // What the user fixes in the config, the command line or the out dir (exit 2).
    #[error("the local model file {} does not exist: run scripts/fetch-model.sh to fetch the bundled model, or set local.model_path to a GGUF file", path.display())]
    ModelFileMissing { path: PathBuf },
    #[error("cannot load the local model: {message}")]
    LocalModel {
        message: String,
        /// The model or its settings are wrong (not the machine).
        usage: bool,
    },
    #[error("this saseval-gen was built without the local backend (cargo feature `local`): rebuild with default features (`cargo build --release`), or set api.provider to groq, openai or file")]
    NoLocalBackend,
    #[error("--import {}: {source}", path.display())]
    ImportMissing {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--import {} line {line}: {why}; expected the OpenAI batch output format", path.display())]
    ImportLine {
        path: PathBuf,
        line: usize,
        why: String,
    },
    #[error(transparent)]
    StateLink(Box<StateLink>),
    // An import that answers nothing this out dir exported (exit 1).
    #[error("--import {}: none of its {lines} line(s) answers a request exported from this out dir (the first unknown custom_id is `{first}`). Import the output of the files under {} (`saseval-gen status` lists what waits), or pass the --out the file was exported from", path.display(), export_dir.display())]
    ImportMatchesNothing {
        path: PathBuf,
        lines: usize,
        first: String,
        export_dir: PathBuf,
    },
    #[error("--import {} holds no output lines: let the engine finish (vLLM writes one line per request), then import its output", path.display())]
    ImportEmpty { path: PathBuf },
    #[error("refusing to submit {requests} requests: more than api.max_requests_per_job = {limit}; raise api.max_requests_per_job if this is intended")]
    TooManyRequests { requests: usize, limit: usize },
    #[error("refusing to submit {requests} requests: the estimated worst-case cost ${:.2} (≈{} input tokens, ≤{} output tokens){} is ${:.2} over {limit_key} = ${limit:.2}; raise {limit_key} if this is intended", cost.usd, cost.input_tokens, cost.output_tokens, spent_note(*spent), cost.usd + spent - limit)]
    OverBudget {
        requests: usize,
        cost: CostEstimate,
        /// What the stage already spent in this run (earlier rounds), counted against the limit.
        spent: f64,
        limit: f64,
        limit_key: &'static str,
    },
    #[error("{0}")]
    RequestTooLarge(String),
    #[error("{url} answered 404 Not Found for model `{model}`: {message}. Check api.base_url (most servers answer at …/v1/chat/completions, so it ends in /v1) and that the server serves the model under that name (vLLM --served-model-name, llama.cpp --alias, `ollama list`)")]
    OnlineNotFound {
        url: String,
        model: String,
        message: String,
    },
    // What a re-run, the provider or the machine resolves (exit 1).
    #[error("interrupted: batches already submitted keep running on the server; re-run the same command to continue waiting (nothing is submitted twice)")]
    Interrupted,
    #[error("job {job}: interrupted with {in_flight} request(s) in flight; every answer received is cached. Re-run the same command to send only the rest (the requests that were in flight may be paid again)")]
    OnlineInterrupted { job: String, in_flight: usize },
    #[error("job {job}: the server at {url} failed the last {attempts} attempts in a row (the last: {last}); stopping instead of retrying. {cached} answer(s) of this run are cached and {waiting} request(s) wait. Check that the server is up, serves the requested model and accepts the requests, then re-run: only the requests without an answer are sent")]
    ServerFailing {
        job: String,
        url: String,
        attempts: usize,
        last: String,
        cached: usize,
        waiting: usize,
    },
    #[error("job {job}: the server at {url} asks to wait {seconds} s before the next request (retry-after); stopping instead of waiting that long. {cached} answer(s) of this run are cached: re-run after the wait, and only the requests without an answer are sent")]
    ServerAsksToWait {
        job: String,
        url: String,
        seconds: u64,
        cached: usize,
    },
    #[error("job {job}: {waiting} request(s) got no answer in {attempts} attempts each (the last error: {last}); every answer so far is cached. Re-run to send only those; if the server is overloaded, lower online.concurrency or set online.rpm")]
    Unanswered {
        job: String,
        waiting: usize,
        attempts: usize,
        last: String,
    },
    #[error("cannot create {}: {source}", path.display())]
    StateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {}: {source}", path.display())]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot prepare a cache line: {0}")]
    CacheLine(std::io::Error),
    #[error("cannot read the exported request file of job {job}: {source}")]
    ExportRead { job: String, source: std::io::Error },
    #[error("cannot write an export file under {}: {source}", dir.display())]
    ExportWrite {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write a request file under {}: {source}", dir.display())]
    RequestFileWrite {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    RequestFileLost(Box<LostRequestFile>),
    #[error("job {job}: {waiting} requests still have no result after {rounds} resubmissions of expired or unserved lines; re-run later (everything completed so far is kept), or raise api.max_expiries")]
    StillUnserved {
        job: String,
        waiting: usize,
        rounds: usize,
    },
    #[error("job {job}: the server rejected a batch (status failed):\n  {}\nIts requests are not resubmitted blindly: fix the cause (the request template or config), then re-run; pass --retry-failed to resubmit them unchanged.", errors.join("\n  "))]
    BatchFailed { job: String, errors: Vec<String> },
    #[error("job {job}: batch {batch} with these requests failed earlier:\n  {}\nIts requests are not resubmitted blindly: fix the cause (the request template or config), then re-run; pass --retry-failed to resubmit them unchanged.", errors.join("\n  "))]
    FailedEarlier {
        job: String,
        batch: String,
        errors: Vec<String>,
    },
    #[error("job {job}: {} — its completed lines are kept; re-run to submit only the requests that did not complete", batches.join("; "))]
    Cancelled { job: String, batches: Vec<String> },
    #[error("job {job}: {error}, {times} times in a row; stopping. Re-run later: the run looks for what may have been created before creating anything")]
    RepliesLost {
        job: String,
        error: String,
        times: usize,
    },
    #[error(transparent)]
    UnknownBatch(Box<UnknownBatch>),
    #[error("batch {batch} still has the unknown status `{status}` after {polls} polls. Check it in the provider's console; run `saseval-gen cancel` to cancel it, then re-run: what it completed is kept and only the rest is resubmitted")]
    UnknownStatus {
        batch: String,
        status: String,
        polls: u32,
    },
    #[error("batch {batch} is still `{status}` {minutes} minutes after its completion window ended (expires_at {expires_at}) and the provider has not expired it. Run `saseval-gen cancel` to cancel it, then re-run: what it completed is kept and only the rest is resubmitted")]
    Stuck {
        batch: String,
        status: String,
        minutes: i64,
        expires_at: i64,
    },
    #[error("batch {batch} is completed with {completed} completed requests but the server gave no output file. Nothing is resubmitted (they may be billed); re-run later to check again, or ask the provider")]
    NoOutputFile { batch: String, completed: u64 },
    #[error(transparent)]
    Cache(#[from] cache::CacheError),
    #[error(transparent)]
    Journal(#[from] journal::JournalError),
    #[error(transparent)]
    Client(#[from] client::ClientError),
}

impl BatchError {
    /// Usage and configuration problems exit 2; everything else 1.
    pub fn code(&self) -> u8 {
        use crate::exit::{RUNTIME, USAGE};
        match self {
            BatchError::ModelFileMissing { .. }
            | BatchError::NoLocalBackend
            | BatchError::ImportMissing { .. }
            | BatchError::ImportLine { .. }
            | BatchError::StateLink(_)
            | BatchError::TooManyRequests { .. }
            | BatchError::OverBudget { .. }
            | BatchError::RequestTooLarge(_)
            | BatchError::OnlineNotFound { .. } => USAGE,
            BatchError::LocalModel { usage, .. } => {
                if *usage {
                    USAGE
                } else {
                    RUNTIME
                }
            }
            BatchError::Client(e) => {
                if e.is_usage() {
                    USAGE
                } else {
                    RUNTIME
                }
            }
            BatchError::ImportMatchesNothing { .. }
            | BatchError::ImportEmpty { .. }
            | BatchError::Interrupted
            | BatchError::OnlineInterrupted { .. }
            | BatchError::ServerFailing { .. }
            | BatchError::ServerAsksToWait { .. }
            | BatchError::Unanswered { .. }
            | BatchError::StateDir { .. }
            | BatchError::ReadFile { .. }
            | BatchError::CacheLine(_)
            | BatchError::ExportRead { .. }
            | BatchError::ExportWrite { .. }
            | BatchError::RequestFileWrite { .. }
            | BatchError::RequestFileLost(_)
            | BatchError::StillUnserved { .. }
            | BatchError::BatchFailed { .. }
            | BatchError::FailedEarlier { .. }
            | BatchError::Cancelled { .. }
            | BatchError::RepliesLost { .. }
            | BatchError::UnknownBatch(_)
            | BatchError::UnknownStatus { .. }
            | BatchError::Stuck { .. }
            | BatchError::NoOutputFile { .. }
            | BatchError::Cache(_)
            | BatchError::Journal(_) => RUNTIME,
        }
    }
}

/// A `state/` entry that is a symbolic link out of the out dir.
#[derive(Debug, thiserror::Error)]
#[error("{} in the out dir {} is a symbolic link (to {target}): saseval-gen keeps its state inside the out dir and does not write through links. Replace the link with a copy of what it points to (`rm {link} && cp -r {target_word} {link}`), or use another --out", entry.display(), out.display())]
pub struct StateLink {
    pub entry: PathBuf,
    pub out: PathBuf,
    pub target: String,
    pub target_word: String,
    pub link: String,
}

/// A submission whose request file is gone: its results cannot be matched to requests.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the request file state/{input} of submission {seq} of job {job}{}: {source}. It is needed to match the batch's results to their requests. Restore it from a backup, or move the job's journal aside — {recovery} — and re-run: the run plans the same requests again and finds their upload and batch on the server by the fingerprint before submitting anything", batch.as_deref().map(|b| format!(" (batch {b})")).unwrap_or_default())]
pub struct LostRequestFile {
    pub input: String,
    pub seq: usize,
    pub job: String,
    pub batch: Option<String>,
    pub source: std::io::Error,
    pub recovery: String,
}

/// A journal names a batch the server does not know.
#[derive(Debug, thiserror::Error)]
#[error("job {job}: the server at api.base_url ({base_url}) does not know batch {batch} (404), which {} records. The batch may belong to another endpoint or account (check api.base_url and the key), or the provider deleted it. If it is gone for good, move the journal aside — {recovery} — and re-run: the run looks for the job's batches on the server by their fingerprint and submits only what has no result yet", journal.display())]
pub struct UnknownBatch {
    pub job: String,
    pub base_url: String,
    pub batch: String,
    pub journal: PathBuf,
    pub recovery: String,
}

/// Limits checked before anything is submitted. A stage's limit holds for the whole run: what
/// the stage's earlier requests already cost counts against it, so a loop of rounds cannot
/// spend its limit once per round.
#[derive(Debug, Clone)]
pub struct CostGuard {
    pub max_cost_usd: f64,
    /// The config key a user changes to raise the limit, named in the refusal.
    pub cost_key: &'static str,
    /// What the stage's requests answered so far cost, from the usage the backend reported.
    pub spent_usd: f64,
}

impl CostGuard {
    /// The guard of `cost_key`, with `spent_usd` already spent against it.
    pub fn new(max_cost_usd: f64, cost_key: &'static str, spent_usd: f64) -> CostGuard {
        CostGuard {
            max_cost_usd,
            cost_key,
            spent_usd,
        }
    }
}

/// Options that come from the command line rather than the config.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub no_wait: bool,
    pub imports: Vec<PathBuf>,
    pub retry_failed: bool,
}

/// Paths of everything the runner keeps under `<out>/state`.
#[derive(Debug, Clone)]
pub struct StateDir {
    pub root: PathBuf,
    out: PathBuf,
}

impl StateDir {
    pub fn new(out_dir: &Path) -> StateDir {
        StateDir {
            root: out_dir.join("state"),
            out: out_dir.to_path_buf(),
        }
    }
    pub fn cache(&self) -> PathBuf {
        self.root.join("cache.jsonl")
    }
    pub fn journal_dir(&self) -> PathBuf {
        self.root.join("journal")
    }
    pub fn requests_dir(&self) -> PathBuf {
        self.root.join("requests")
    }
    pub fn downloads_dir(&self) -> PathBuf {
        self.root.join("downloads")
    }
    /// Request files for another engine (`file` backend), where users look for them.
    pub fn export_dir(&self) -> PathBuf {
        self.out.join("export")
    }
    /// Refuses a state folder in which an entry is a symbolic link: the run writes only inside
    /// the out dir, never through a link to somewhere else (appending to a linked cache, writing
    /// a journal or a download into a linked folder).
    pub fn refuse_links(&self) -> Result<(), BatchError> {
        let dirs = [
            self.journal_dir(),
            self.requests_dir(),
            self.downloads_dir(),
            self.export_dir(),
        ];
        let mut paths = vec![self.root.clone(), self.cache()];
        paths.extend(dirs.iter().cloned());
        for dir in &dirs {
            let real_dir = std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir());
            if let (true, Ok(entries)) = (real_dir, std::fs::read_dir(dir)) {
                paths.extend(entries.filter_map(Result::ok).map(|e| e.path()));
            }
        }
        for path in paths {
            let linked = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
            if linked {
                let shown = path.strip_prefix(&self.out).unwrap_or(&path);
                let target = std::fs::read_link(&path)
                    .map(|t| t.display().to_string())
                    .unwrap_or_else(|_| "?".into());
                return Err(BatchError::StateLink(Box::new(StateLink {
                    entry: shown.to_path_buf(),
                    out: self.out.clone(),
                    target_word: crate::util::fsio::shell_word(Path::new(&target)),
                    target,
                    link: crate::util::fsio::shell_word(&path),
                })));
            }
        }
        Ok(())
    }

    pub fn create_all(&self) -> std::io::Result<()> {
        for dir in [
            self.journal_dir(),
            self.requests_dir(),
            self.downloads_dir(),
        ] {
            std::fs::create_dir_all(dir)?;
        }
        Ok(())
    }
}

/// Runs jobs for one out dir. Holds the response cache open for the whole command.
pub struct Runner<'a> {
    pub config: &'a Config,
    pub state: StateDir,
    pub cache: Cache,
    pub options: RunOptions,
    pub printer: &'a Printer,
}

impl<'a> Runner<'a> {
    pub fn open(
        config: &'a Config,
        out_dir: &Path,
        options: RunOptions,
        printer: &'a Printer,
    ) -> Result<Runner<'a>, BatchError> {
        let state = StateDir::new(out_dir);
        state.refuse_links()?;
        state.create_all().map_err(|e| BatchError::StateDir {
            path: state.root.clone(),
            source: e,
        })?;
        let cache = Cache::open(&state.cache())?;
        if let Some(line) = cache.torn_line() {
            printer.warn(format!(
                "{}: cut off its torn last line {line}, left by a crash; that outcome is collected again",
                state.cache().display()
            ));
        }
        Ok(Runner {
            config,
            state,
            cache,
            options,
            printer,
        })
    }

    /// Runs `requests` as job `job` (a file-name-safe name such as `author-r0`). Requests whose
    /// outcome is cached are not sent again; only the rest go to the configured backend. The
    /// `file` backend's imports are read at the first job, before anything counts as cached.
    pub async fn run(
        &mut self,
        job: &str,
        requests: &[Request],
        guard: &CostGuard,
    ) -> Result<JobResult, BatchError> {
        if self.config.api.provider == Provider::File {
            file::import_all(self)?;
        }
        let pending: Vec<&Request> = requests
            .iter()
            .filter(|r| !self.cache.contains(&r.custom_id, r.body_hash()))
            .collect();
        if !pending.is_empty() {
            tracing::debug!(
                job,
                pending = pending.len(),
                "requests without a cached outcome"
            );
            match self.config.api.provider {
                Provider::Groq | Provider::Openai => {
                    remote::RemoteJob::new(self, job, guard)
                        .run(&pending)
                        .await?;
                }
                Provider::Online => online::run(self, job, &pending, guard).await?,
                Provider::File => file::FileJob::new(self, job).run(&pending)?,
                Provider::Local => local_job::run(self, job, &pending).await?,
            }
        }
        let waiting = requests
            .iter()
            .filter(|r| !self.cache.contains(&r.custom_id, r.body_hash()))
            .count();
        Ok(JobResult { waiting })
    }

    /// The cached outcome of `request`, if it has one.
    pub fn outcome(&self, request: &Request) -> Result<Option<ReplyOutcome>, BatchError> {
        Ok(self.cache.get_as(&request.custom_id, request.body_hash())?)
    }

    /// What the answered `requests` spent: the tokens their responses report, by the model each
    /// request named, at `[prices]`; beside the worst case of all of them.
    pub fn usage<'r>(
        &self,
        requests: impl IntoIterator<Item = &'r Request> + Clone,
    ) -> Result<StageUsage, BatchError> {
        let mut stage = StageUsage {
            worst_case_usd: estimate_cost(self.config, requests.clone()).usd,
            ..StageUsage::default()
        };
        for request in requests {
            let Some(OutcomeOf::Ok(body)) = self.outcome(request)? else {
                continue;
            };
            let tokens = body.tokens();
            let mut cost = CostEstimate::zero();
            cost.add(
                self.config,
                request.model(),
                tokens.prompt_tokens,
                tokens.completion_tokens,
            );
            let model = stage
                .by_model
                .entry(request.model().to_string())
                .or_default();
            model.usage.add_response(&body);
            model.cost_usd += cost.usd;
            stage.total.add_response(&body);
            stage.cost_usd += cost.usd;
        }
        Ok(stage)
    }
}

/// Checks the job-size and cost limits for the requests about to be submitted.
pub fn check_guard(
    config: &Config,
    pending: &[&Request],
    guard: &CostGuard,
) -> Result<(), BatchError> {
    check_request_count(config, pending.len())?;
    refuse_over_cost(
        pending.len(),
        estimate_cost(config, pending.iter().copied()),
        guard,
    )
}

/// The same limits, checked from counts before a job's requests are built: each entry of
/// `planned` is one request standing for `count` requests that differ from it only in their
/// seed, so an absurd job is refused without rendering its bodies into memory first.
pub fn check_planned(
    config: &Config,
    planned: &[(Request, usize)],
    guard: &CostGuard,
) -> Result<(), BatchError> {
    let requests = planned
        .iter()
        .fold(0usize, |n, (_, count)| n.saturating_add(*count));
    check_request_count(config, requests)?;
    let weighted = planned.iter().map(|(r, count)| (r, *count as u64));
    refuse_over_cost(requests, estimate_weighted(config, weighted), guard)
}

/// Refuses a job of more than `api.max_requests_per_job` requests.
pub fn check_request_count(config: &Config, requests: usize) -> Result<(), BatchError> {
    let limit = config.api.max_requests_per_job;
    if requests > limit {
        return Err(BatchError::TooManyRequests { requests, limit });
    }
    Ok(())
}

fn refuse_over_cost(
    requests: usize,
    cost: CostEstimate,
    guard: &CostGuard,
) -> Result<(), BatchError> {
    if cost.usd + guard.spent_usd > guard.max_cost_usd {
        return Err(BatchError::OverBudget {
            requests,
            cost,
            spent: guard.spent_usd,
            limit: guard.max_cost_usd,
            limit_key: guard.cost_key,
        });
    }
    Ok(())
}

/// The refusal's words for what earlier rounds spent: nothing when they spent nothing.
fn spent_note(spent: f64) -> String {
    if spent > 0.0 {
        format!(" plus ${spent:.2} this stage already spent in earlier rounds")
    } else {
        String::new()
    }
}

/// A cost estimate: input tokens ≈ characters / 4, output tokens at most `max_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CostEstimate {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub usd: f64,
    /// False when some model has no price in `[prices]` (its cost counts as 0).
    pub priced: bool,
}

pub fn estimate_cost<'r>(
    config: &Config,
    requests: impl IntoIterator<Item = &'r Request>,
) -> CostEstimate {
    estimate_weighted(config, requests.into_iter().map(|r| (r, 1)))
}

/// The estimate of requests each standing for `count` alike ones.
pub fn estimate_weighted<'r>(
    config: &Config,
    requests: impl IntoIterator<Item = (&'r Request, u64)>,
) -> CostEstimate {
    let mut estimate = CostEstimate::zero();
    for (r, count) in requests {
        let input = r
            .body
            .get("messages")
            .and_then(Value::as_array)
            .map(|m| {
                m.iter()
                    .filter_map(|msg| msg.get("content").and_then(Value::as_str))
                    .map(message_tokens)
                    .sum::<u64>()
            })
            .unwrap_or(0);
        let output = r
            .body
            .get("max_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let (input, output) = (input.saturating_mul(count), output.saturating_mul(count));
        estimate.add(config, r.model(), input, output);
    }
    estimate
}

impl CostEstimate {
    /// An estimate that counts nothing yet (every model seen so far is priced).
    pub fn zero() -> CostEstimate {
        CostEstimate {
            priced: true,
            ..CostEstimate::default()
        }
    }

    /// Adds `input` and `output` tokens of `model` at its `[prices]` entry, with the batch
    /// discount for the Batch API (online requests pay the full price); local and file runs
    /// cost nothing, and an unpriced model counts as 0.
    pub fn add(&mut self, config: &Config, model: &str, input: u64, output: u64) {
        self.input_tokens = self.input_tokens.saturating_add(input);
        self.output_tokens = self.output_tokens.saturating_add(output);
        let discount = match config.api.provider {
            Provider::Groq | Provider::Openai => config.api.batch_discount,
            Provider::Online => 0.0,
            Provider::Local | Provider::File => return,
        };
        match config.prices.get(model) {
            Some(price) => {
                self.usd += (input as f64 * price.input_per_mtok
                    + output as f64 * price.output_per_mtok)
                    / 1e6
                    * (1.0 - discount);
            }
            None => self.priced = false,
        }
    }
}

/// Tokens a message of `text` counts as in every estimate: characters / 4, plus 4.
pub fn message_tokens(text: &str) -> u64 {
    text.chars().count() as u64 / 4 + 4
}
