//! The `online` backend: runs a job against any OpenAI-compatible `/chat/completions` server
//! (vLLM serve, SGLang, llama.cpp's server, Ollama, a provider without a Batch API), several
//! requests in flight as [`limiter`] allows.
//!
//! What a crash leaves behind: every answer is appended to the response cache (fsynced) before
//! its place in flight takes the next request, so a `kill -9` loses at most the requests in
//! flight, which a re-run sends again (at most `online.concurrency` of them may be paid twice).
//! A re-run sends only the requests without a cached outcome. Transient failures (429, 5xx,
//! resets, cut replies) are retried a bounded number of times and never cached: a request still
//! unanswered at the end stops the job (exit 1) with the server's message, and a re-run sends
//! it again. Failures of one request alone (a 400, an error inside a 200, a wrong model) are
//! cached as its outcome, like a Batch API error line — but only once the server has answered
//! something in this job, so that a server refusing everything (and tripping the [`breaker`])
//! leaves nothing cached that a fixed server would answer.

mod breaker;
mod exchange;
mod limiter;

pub use exchange::{CUSTOM_ID_HEADER, MAX_REPLY_BYTES};

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use backon::BackoffBuilder;
use tokio::task::{Id, JoinSet};

use self::breaker::Breaker;
use self::exchange::{Answer, Attempt, Call, Endpoint, Verdict};
use self::limiter::{Admit, Limiter, Signal, Ticket, MAX_PAUSE};
use super::cache::CacheLine;
use super::{check_guard, estimate_cost, BatchError, CostGuard, Request, Runner};

/// One request of the job and how its attempts went.
struct Work<'p> {
    request: &'p Request,
    /// Prompt estimate + `max_tokens`, for `online.tpm` and the server's token headers.
    tokens: f64,
    attempts: usize,
    /// The backoff between its transient failures, made at the first.
    backoff: Option<backon::ExponentialBackoff>,
    last_failure: Option<String>,
}

/// What a finished task hands back.
struct InFlight {
    work: usize,
    ticket: Ticket,
}

/// How the job ended, when it did not end well.
enum Stop {
    Tripped,
    Refused(BatchError),
    LongWait(Duration),
}

/// Runs `pending` (requests without a cached outcome) against the configured server.
pub async fn run(
    runner: &mut Runner<'_>,
    job: &str,
    pending: &[&Request],
    guard: &CostGuard,
) -> Result<(), BatchError> {
    check_guard(runner.config, pending, guard)?;
    let endpoint = Arc::new(Endpoint::new(&runner.config.api)?);
    let mut job = OnlineJob::new(runner, job, pending, endpoint);
    job.run().await
}

struct OnlineJob<'r, 'a, 'p> {
    runner: &'r mut Runner<'a>,
    job: String,
    endpoint: Arc<Endpoint>,
    work: Vec<Work<'p>>,
    queue: VecDeque<usize>,
    /// Work waiting for its backoff to end, by the time it may go again.
    retries: BTreeSet<(Instant, usize)>,
    tasks: JoinSet<Attempt>,
    in_flight: HashMap<Id, InFlight>,
    limiter: Limiter,
    breaker: Breaker,
    /// Failed outcomes held until the server has answered something in this job.
    held: Vec<CacheLine>,
    /// Outcomes written to the cache in this run.
    stored: usize,
    answered: usize,
    failed: usize,
    retried: usize,
    refusals: usize,
    unanswered: Vec<usize>,
    stop: Option<Stop>,
}

impl<'r, 'a, 'p> OnlineJob<'r, 'a, 'p> {
    fn new(
        runner: &'r mut Runner<'a>,
        job: &str,
        pending: &[&'p Request],
        endpoint: Arc<Endpoint>,
    ) -> Self {
        let config = runner.config;
        let work: Vec<Work<'p>> = pending
            .iter()
            .map(|request| {
                let estimate = estimate_cost(config, [*request]);
                Work {
                    request,
                    tokens: (estimate.input_tokens + estimate.output_tokens) as f64,
                    attempts: 0,
                    backoff: None,
                    last_failure: None,
                }
            })
            .collect();
        OnlineJob {
            queue: (0..work.len()).collect(),
            work,
            runner,
            job: job.to_string(),
            endpoint,
            retries: BTreeSet::new(),
            tasks: JoinSet::new(),
            in_flight: HashMap::new(),
            limiter: Limiter::new(&config.online, Instant::now()),
            breaker: Breaker::new(config.online.concurrency),
            held: Vec::new(),
            stored: 0,
            answered: 0,
            failed: 0,
            retried: 0,
            refusals: 0,
            unanswered: Vec::new(),
            stop: None,
        }
    }

    async fn run(&mut self) -> Result<(), BatchError> {
        let bar = self.runner.printer.bar(
            self.work.len() as u64,
            "{spinner} {prefix} [{elapsed_precise}] {bar:30} {pos}/{len} requests ({msg})",
        );
        bar.set_prefix(format!("job {} (online)", self.job));
        let interrupted = tokio::signal::ctrl_c();
        tokio::pin!(interrupted);
        loop {
            let wake = self.dispatch();
            if self.tasks.is_empty() && (self.stop.is_some() || wake.is_none()) {
                break;
            }
            let deadline = wake.map(tokio::time::Instant::from_std);
            tokio::select! {
                done = self.tasks.join_next_with_id(), if !self.tasks.is_empty() => {
                    let mut finished = vec![done];
                    while let Some(more) = self.tasks.try_join_next_with_id() {
                        finished.push(Some(more));
                    }
                    let settled = self.settle(finished.into_iter().flatten().collect())?;
                    bar.inc(settled as u64);
                    bar.set_message(format!(
                        "{} in flight, window {}, {} refused",
                        self.limiter.in_flight(),
                        self.limiter.window(),
                        self.refusals
                    ));
                }
                () = sleep_until(deadline), if deadline.is_some() => {}
                _ = &mut interrupted => {
                    bar.abandon();
                    self.tasks.abort_all();
                    return Err(BatchError::OnlineInterrupted {
                        job: self.job.clone(),
                        in_flight: self.in_flight.len(),
                    });
                }
            }
        }
        bar.finish_and_clear();
        self.finish()
    }

    /// Starts every attempt the limiter admits now; returns when to look again if nothing in
    /// flight will wake the job first (a pace, a pause, a backoff).
    fn dispatch(&mut self) -> Option<Instant> {
        if self.stop.is_some() {
            return None;
        }
        loop {
            let now = Instant::now();
            let due_retry = self.retries.first().copied().filter(|(at, _)| *at <= now);
            let next = match due_retry {
                Some((_, index)) => index,
                None => match self.queue.front() {
                    Some(index) => *index,
                    None => return self.retries.first().map(|(at, _)| *at),
                },
            };
            match self.limiter.admit(self.work[next].tokens, now) {
                Admit::Now => {
                    match due_retry {
                        Some(retry) => {
                            self.retries.remove(&retry);
                        }
                        None => {
                            self.queue.pop_front();
                        }
                    }
                    self.start(next, now);
                }
                Admit::At(at) => return Some(at),
                Admit::Full => return None,
            }
        }
    }

    fn start(&mut self, index: usize, now: Instant) {
        let work = &mut self.work[index];
        work.attempts += 1;
        let request = work.request;
        let call = Call {
            custom_id: request.custom_id.clone(),
            body_sha256: request.body_hash().to_string(),
            model: request.model().to_string(),
            body: serde_json::to_vec(request.body()).unwrap_or_default(),
        };
        let ticket = self.limiter.sent(work.tokens, now);
        let endpoint = Arc::clone(&self.endpoint);
        let handle = self
            .tasks
            .spawn(async move { endpoint.attempt(&call).await });
        self.in_flight.insert(
            handle.id(),
            InFlight {
                work: index,
                ticket,
            },
        );
    }

    /// Takes finished attempts in: answers go to the cache in one append (one fsync), before
    /// any of their places takes another request; the rest are retried or given up on.
    /// Returns how many requests reached an end.
    fn settle(
        &mut self,
        finished: Vec<Result<(Id, Attempt), tokio::task::JoinError>>,
    ) -> Result<usize, BatchError> {
        let mut lines = Vec::new();
        let mut settled = 0;
        let now = Instant::now();
        for result in finished {
            let (id, attempt) = match result {
                Ok((id, attempt)) => (id, Some(attempt)),
                Err(e) => (e.id(), None),
            };
            let Some(InFlight { work, ticket }) = self.in_flight.remove(&id) else {
                continue;
            };
            let Some(attempt) = attempt else {
                self.limiter.abandoned();
                settled +=
                    self.retry_or_give_up(work, "the request's task ended early".into(), None, now);
                continue;
            };
            let Attempt {
                verdict,
                limits,
                latency,
            } = attempt;
            if limits.retry_after.is_some_and(|wait| wait > MAX_PAUSE) {
                self.stop
                    .get_or_insert(Stop::LongWait(limits.retry_after.unwrap_or(MAX_PAUSE)));
            }
            match verdict {
                Verdict::Answered(Answer {
                    line,
                    failure,
                    completion_tokens,
                    total_tokens,
                }) => {
                    let signal = Signal::Answered {
                        latency,
                        completion_tokens,
                        total_tokens,
                    };
                    self.limiter.replied(ticket, signal, &limits, now);
                    settled += 1;
                    match failure {
                        None => {
                            if self.answered == 0 {
                                lines.append(&mut self.held);
                            }
                            self.answered += 1;
                            self.breaker.succeeded(now);
                            lines.push(line);
                        }
                        Some(why) => {
                            self.failed += 1;
                            tracing::debug!(job = %self.job, custom_id = %self.work[work].request.custom_id, %why, "the server refused a request");
                            if self.answered > 0 {
                                lines.push(line);
                            } else {
                                self.held.push(line);
                            }
                            if self.breaker.failed(&why, now) {
                                self.stop.get_or_insert(Stop::Tripped);
                            }
                        }
                    }
                }
                Verdict::Transient {
                    message,
                    overloaded,
                } => {
                    let signal = if overloaded {
                        self.refusals += 1;
                        Signal::Overloaded
                    } else {
                        Signal::Failed
                    };
                    self.limiter.replied(ticket, signal, &limits, now);
                    if self.breaker.failed(&message, now) {
                        self.stop.get_or_insert(Stop::Tripped);
                    }
                    settled += self.retry_or_give_up(work, message, limits.retry_after, now);
                }
                Verdict::Refused(error) => {
                    self.limiter.replied(ticket, Signal::Failed, &limits, now);
                    self.queue.push_front(work);
                    self.stop.get_or_insert(Stop::Refused(error));
                }
            }
        }
        if !lines.is_empty() {
            self.stored += self.runner.cache.append(lines)?;
            crate::util::hooks::crash_point("online-result");
        }
        Ok(settled)
    }

    /// Schedules another attempt after a transient failure, or gives the request up for this
    /// run once its retries are spent; returns 1 when it was given up.
    fn retry_or_give_up(
        &mut self,
        index: usize,
        message: String,
        retry_after: Option<Duration>,
        now: Instant,
    ) -> usize {
        let api = &self.runner.config.api;
        let work = &mut self.work[index];
        let backoff = work.backoff.get_or_insert_with(|| {
            backon::ExponentialBuilder::default()
                .with_min_delay(Duration::from_secs_f64(api.retry_initial_secs))
                .with_max_delay(
                    Duration::from_secs_f64(api.retry_initial_secs).max(Duration::from_secs(60)),
                )
                .with_max_times(api.max_retries)
                .with_jitter()
                .build()
        });
        work.last_failure = Some(message);
        match backoff.next() {
            Some(delay) => {
                let wait = retry_after.map_or(delay, |after| after.min(MAX_PAUSE).max(delay));
                self.retries.insert((now + wait, index));
                self.retried += 1;
                0
            }
            None => {
                self.unanswered.push(index);
                1
            }
        }
    }

    /// Writes what is held, reports the job, and says how it ended.
    fn finish(&mut self) -> Result<(), BatchError> {
        let job = self.job.clone();
        match self.stop.take() {
            Some(Stop::Refused(error)) => return Err(error),
            Some(Stop::Tripped) => {
                return Err(BatchError::ServerFailing {
                    job,
                    url: self.endpoint.url().to_string(),
                    attempts: self.breaker.failures_in_a_row(),
                    last: self.breaker.last_message().to_string(),
                    cached: self.stored,
                    waiting: self.work.len() - self.stored,
                });
            }
            Some(Stop::LongWait(wait)) => {
                return Err(BatchError::ServerAsksToWait {
                    job,
                    url: self.endpoint.url().to_string(),
                    seconds: wait.as_secs(),
                    cached: self.stored,
                });
            }
            None => {}
        }
        if !self.held.is_empty() {
            let held = std::mem::take(&mut self.held);
            self.stored += self.runner.cache.append(held)?;
        }
        let pace = self
            .limiter
            .pace()
            .map(|p| {
                format!(
                    ", paced at {p:.1} requests/s after {} refusal(s)",
                    self.limiter.cuts()
                )
            })
            .unwrap_or_default();
        self.runner.printer.note(format!(
            "job {job}: {} request(s) answered by {} ({} of them refused by the server), {} retried; window {} of online.concurrency {}{pace}",
            self.answered + self.failed,
            self.endpoint.url(),
            self.failed,
            self.retried,
            self.limiter.window(),
            self.runner.config.online.concurrency,
        ));
        if let Some(first) = self.unanswered.first() {
            let work = &self.work[*first];
            return Err(BatchError::Unanswered {
                job,
                waiting: self.unanswered.len(),
                attempts: work.attempts,
                last: work.last_failure.clone().unwrap_or_default(),
            });
        }
        Ok(())
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    if let Some(deadline) = deadline {
        tokio::time::sleep_until(deadline).await;
    }
}
