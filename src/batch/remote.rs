//! Drives a job through the HTTP Batch API: plans request files, uploads them, creates batches,
//! waits, downloads output and error files, and moves every outcome into the cache — journaling
//! each step first, and after a crash finding uploads and batches again by their fingerprint
//! instead of creating second ones.

use super::client::{BatchObject, Client};
use super::ingest;
use super::journal::{Counts, Journal, SubState, Submission};
use super::{check_guard, hex, request_file, BatchError, CostGuard, Request, Runner};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::time::Duration;

/// How long past its `expires_at` a batch may stay unfinished before the run calls it stuck
/// (providers finalise expiry with some delay).
const STUCK_GRACE_SECS: i64 = 3600;

/// The metadata key that carries a submission's fingerprint on the server.
pub const FINGERPRINT_KEY: &str = "saseval_fingerprint";

pub struct RemoteJob<'r, 'a> {
    runner: &'r mut Runner<'a>,
    job: String,
    guard: &'r CostGuard,
    /// The account's uploaded files and our batches (by fingerprint), listed once per run
    /// before the first upload or create: a journal that lacks a step may be behind the server.
    server: Option<ServerView>,
}

/// What already exists on the server, so that nothing is uploaded or created twice.
struct ServerView {
    files: BTreeMap<String, String>,
    batches: BTreeMap<String, BatchObject>,
}

/// How the submissions of one round ended.
#[derive(Default)]
struct RoundEnd {
    failed: Vec<String>,
    cancelled: Vec<String>,
}

impl<'r, 'a> RemoteJob<'r, 'a> {
    pub fn new(runner: &'r mut Runner<'a>, job: &str, guard: &'r CostGuard) -> Self {
        RemoteJob {
            runner,
            job: job.to_string(),
            guard,
            server: None,
        }
    }

    pub async fn run(mut self, pending: &[&Request]) -> Result<(), BatchError> {
        let client = Client::new(&self.runner.config.api)?;
        let mut journal = Journal::load(&self.runner.state.journal_dir(), &self.job)?;
        let mut rounds = 0;
        loop {
            let want: BTreeMap<&str, (&Request, &str)> = pending
                .iter()
                .map(|r| (r.custom_id.as_str(), (*r, r.body_hash())))
                .filter(|(id, (_, hash))| !self.runner.cache.contains(id, hash))
                .collect();
            if want.is_empty() {
                return Ok(());
            }
            let covered = self.adopt_or_abandon(&client, &mut journal, &want).await?;
            let uncovered: Vec<&Request> = want
                .iter()
                .filter(|(id, (_, hash))| covered.get(**id).map(String::as_str) != Some(*hash))
                .map(|(_, (r, _))| *r)
                .collect();
            if !uncovered.is_empty() {
                if rounds > self.runner.config.api.max_expiries {
                    return Err(BatchError::Runtime(format!(
                        "job {}: {} requests still have no result after {rounds} resubmissions of expired or unserved lines; re-run later (everything completed so far is kept), or raise api.max_expiries",
                        self.job,
                        uncovered.len()
                    )));
                }
                self.refuse_failed_again(&journal, &uncovered)?;
                check_guard(self.runner.config, &uncovered, self.guard)?;
                self.plan(&mut journal, &uncovered)?;
            }
            self.submit(&client, &mut journal).await?;
            if self.runner.options.no_wait {
                self.report_submitted(&journal);
                return Ok(());
            }
            let end = self.wait_and_collect(&client, &mut journal).await?;
            if !end.failed.is_empty() {
                return Err(BatchError::Runtime(format!(
                    "job {}: the server rejected a batch (status failed):\n  {}\nIts requests are not resubmitted blindly: fix the cause (the request template or config), then re-run; pass --retry-failed to resubmit them unchanged.",
                    self.job,
                    end.failed.join("\n  ")
                )));
            }
            if !end.cancelled.is_empty() {
                return Err(BatchError::Runtime(format!(
                    "job {}: {} — its completed lines are kept; re-run to submit only the requests that did not complete",
                    self.job,
                    end.cancelled.join("; ")
                )));
            }
            rounds += 1;
        }
    }

    fn input_path(&self, sub: &Submission) -> std::path::PathBuf {
        self.runner.state.root.join(&sub.input)
    }

    fn keys(&self, sub: &Submission) -> Result<BTreeMap<String, String>, BatchError> {
        request_file::read_keys(&self.input_path(sub)).map_err(|e| {
            BatchError::Runtime(format!(
                "cannot read the request file of submission {} of job {}: {e}. It is needed to match results; do not delete files under state/",
                sub.seq, self.job
            ))
        })
    }

    /// Decides for each live submission of an earlier process whether it still serves the
    /// wanted requests; returns custom_id → body hash of every request a live submission holds.
    async fn adopt_or_abandon(
        &mut self,
        client: &Client,
        journal: &mut Journal,
        want: &BTreeMap<&str, (&Request, &str)>,
    ) -> Result<BTreeMap<String, String>, BatchError> {
        let mut covered = BTreeMap::new();
        for i in 0..journal.submissions.len() {
            let sub = journal.submissions[i].clone();
            if !sub.is_live() || sub.state == SubState::Exported {
                continue;
            }
            let keys = self.keys(&sub)?;
            let all_wanted = keys
                .iter()
                .all(|(id, h)| want.get(id.as_str()).is_some_and(|(_, wh)| wh == h));
            let mut keep =
                all_wanted || matches!(sub.state, SubState::Created | SubState::Finished);
            if !keep && sub.state == SubState::Uploaded {
                // A crash may have fallen between creating the batch and journaling it.
                if let Some(batch) = self
                    .server_view(client)
                    .await?
                    .batches
                    .get(&sub.fingerprint)
                    .cloned()
                {
                    self.runner.printer.note(format!(
                        "found batch {} of an interrupted run by its fingerprint",
                        batch.id
                    ));
                    let s = &mut journal.submissions[i];
                    s.batch_id = Some(batch.id);
                    s.state = SubState::Created;
                    journal.save("created")?;
                    keep = true;
                }
            }
            if keep {
                covered.extend(keys);
            } else {
                tracing::info!(job = %self.job, seq = sub.seq, "abandoning a submission whose requests changed before any batch was created");
                journal.submissions[i].state = SubState::Abandoned;
                journal.save("abandoned")?;
            }
        }
        Ok(covered)
    }

    fn refuse_failed_again(
        &self,
        journal: &Journal,
        uncovered: &[&Request],
    ) -> Result<(), BatchError> {
        if self.runner.options.retry_failed {
            return Ok(());
        }
        for sub in journal
            .submissions
            .iter()
            .filter(|s| s.state == SubState::Collected && s.status.as_deref() == Some("failed"))
        {
            let keys = self.keys(sub)?;
            if uncovered
                .iter()
                .any(|r| keys.get(&r.custom_id).map(String::as_str) == Some(r.body_hash()))
            {
                return Err(BatchError::Runtime(format!(
                    "job {}: batch {} with these requests failed earlier:\n  {}\nIts requests are not resubmitted blindly: fix the cause (the request template or config), then re-run; pass --retry-failed to resubmit them unchanged.",
                    self.job,
                    sub.batch_id.as_deref().unwrap_or("?"),
                    sub.errors.join("\n  ")
                )));
            }
        }
        Ok(())
    }

    /// Writes request files for `requests` (one model per file, size limits respected) and
    /// journals them as planned before anything is sent.
    fn plan(&mut self, journal: &mut Journal, requests: &[&Request]) -> Result<(), BatchError> {
        let api = &self.runner.config.api;
        let mut by_model: BTreeMap<&str, Vec<&Request>> = BTreeMap::new();
        for r in requests {
            by_model.entry(r.model()).or_default().push(r);
        }
        for (model, reqs) in by_model {
            let chunks =
                request_file::chunk(&reqs, api.max_requests_per_batch, api.max_bytes_per_batch)
                    .map_err(BatchError::Usage)?;
            for (chunk, text) in chunks {
                let state_root = &self.runner.state.root;
                journal
                    .add_submission(state_root, model, chunk.len(), &text, SubState::Planned)
                    .map_err(|e| {
                        BatchError::Runtime(format!(
                            "cannot write a request file under {}: {e}",
                            state_root.display()
                        ))
                    })?;
            }
        }
        journal.save("planned")?;
        Ok(())
    }

    /// Uploads and creates every planned submission, journaling each step.
    async fn submit(&mut self, client: &Client, journal: &mut Journal) -> Result<(), BatchError> {
        for i in 0..journal.submissions.len() {
            let sub = journal.submissions[i].clone();
            let upload_name = format!(
                "saseval-{}-{:03}-{}.jsonl",
                self.job, sub.seq, sub.fingerprint
            );
            if sub.state == SubState::Planned {
                let file_id = self
                    .server_view(client)
                    .await?
                    .files
                    .get(&upload_name)
                    .cloned();
                let file_id = match file_id {
                    Some(id) => id,
                    None => {
                        let bytes = std::fs::read(self.input_path(&sub)).map_err(|e| {
                            BatchError::Runtime(format!(
                                "cannot read {}: {e}",
                                self.input_path(&sub).display()
                            ))
                        })?;
                        let id = client.upload(&upload_name, bytes).await?.id;
                        crate::hooks::crash_point("uploaded-unjournaled");
                        id
                    }
                };
                let s = &mut journal.submissions[i];
                s.file_id = Some(file_id);
                s.state = SubState::Uploaded;
                journal.save("uploaded")?;
            }
            let sub = journal.submissions[i].clone();
            if sub.state == SubState::Uploaded {
                let existing = self
                    .server_view(client)
                    .await?
                    .batches
                    .get(&sub.fingerprint)
                    .cloned();
                let batch = match existing {
                    Some(b) => b,
                    None => {
                        let metadata =
                            json!({ "saseval_job": self.job, FINGERPRINT_KEY: sub.fingerprint });
                        let file_id = sub.file_id.clone().unwrap_or_default();
                        client
                            .create_batch(
                                &file_id,
                                &self.runner.config.api.completion_window,
                                metadata,
                            )
                            .await?
                    }
                };
                crate::hooks::crash_point("created-unjournaled");
                self.runner.printer.note(format!(
                    "job {}: batch {} holds {} requests for {}",
                    self.job, batch.id, sub.requests, sub.model
                ));
                let s = &mut journal.submissions[i];
                s.batch_id = Some(batch.id);
                s.state = SubState::Created;
                journal.save("created")?;
            }
        }
        Ok(())
    }

    /// Lists the server's files and our batches once per run (listing costs nothing; a second
    /// batch would).
    async fn server_view(&mut self, client: &Client) -> Result<&ServerView, BatchError> {
        let view = match self.server.take() {
            Some(view) => view,
            None => {
                let files = match client.list_files().await {
                    Ok(files) => files
                        .into_iter()
                        .filter_map(|f| f.filename.map(|name| (name, f.id)))
                        .collect(),
                    Err(e) if e.is_unsupported_reply() => {
                        tracing::warn!(error = %e, "listing files failed; uploading anew (an upload alone costs nothing)");
                        BTreeMap::new()
                    }
                    Err(e) => return Err(e.into()),
                };
                let batches = client.batches_by_metadata(FINGERPRINT_KEY).await?;
                ServerView { files, batches }
            }
        };
        Ok(self.server.insert(view))
    }

    fn report_submitted(&self, journal: &Journal) {
        let live: Vec<_> = journal
            .submissions
            .iter()
            .filter(|s| s.state == SubState::Created)
            .collect();
        self.runner.printer.note(format!(
            "job {}: {} batch(es) submitted and running ({} requests); not waiting (--no-wait). Re-run the same command later to collect the results; `saseval-gen status` shows progress.",
            self.job,
            live.len(),
            live.iter().map(|s| s.requests).sum::<usize>()
        ));
    }

    /// Polls every created batch until each is terminal and collected.
    async fn wait_and_collect(
        &mut self,
        client: &Client,
        journal: &mut Journal,
    ) -> Result<RoundEnd, BatchError> {
        let base = Duration::from_secs_f64(self.runner.config.api.poll_interval_secs);
        let mut interval = base;
        let total: u64 = journal
            .submissions
            .iter()
            .filter(|s| matches!(s.state, SubState::Created | SubState::Finished))
            .map(|s| s.requests as u64)
            .sum();
        let bar = self.runner.printer.bar(
            total,
            "{spinner} {prefix} [{elapsed_precise}] {bar:30} {pos}/{len} requests done ({msg})",
        );
        bar.set_prefix(format!("job {}", self.job));
        let mut end = RoundEnd::default();
        let mut last_progress = None;
        loop {
            let mut waiting = false;
            let mut progress = (0u64, 0u64);
            let mut statuses = BTreeMap::<String, usize>::new();
            for i in 0..journal.submissions.len() {
                if journal.submissions[i].state == SubState::Created {
                    let id = journal.submissions[i].batch_id.clone().unwrap_or_default();
                    let batch = client.get_batch(&id).await?;
                    self.record_poll(journal, i, &batch)?;
                }
                let sub = &journal.submissions[i];
                match sub.state {
                    SubState::Created => {
                        waiting = true;
                        *statuses
                            .entry(sub.status.clone().unwrap_or_default())
                            .or_default() += 1;
                    }
                    SubState::Finished => self.collect(client, journal, i, &mut end).await?,
                    _ => {}
                }
                let sub = &journal.submissions[i];
                if let (Some(c), true) = (
                    &sub.counts,
                    matches!(
                        sub.state,
                        SubState::Created | SubState::Finished | SubState::Collected
                    ),
                ) {
                    progress.0 += c.completed;
                    progress.1 += c.failed;
                }
            }
            bar.set_position((progress.0 + progress.1).min(total));
            bar.set_message(
                statuses
                    .iter()
                    .map(|(s, n)| format!("{n} {s}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            if !waiting {
                bar.finish_and_clear();
                return Ok(end);
            }
            if last_progress == Some(progress) {
                interval = (interval.mul_f64(1.5)).min(base.mul_f64(10.0));
            } else {
                interval = base;
            }
            last_progress = Some(progress);
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = tokio::signal::ctrl_c() => {
                    bar.abandon();
                    return Err(BatchError::Interrupted);
                }
            }
        }
    }

    fn record_poll(
        &self,
        journal: &mut Journal,
        i: usize,
        batch: &BatchObject,
    ) -> Result<(), BatchError> {
        let sub = &mut journal.submissions[i];
        let counts = batch.request_counts.as_ref().map(|c| Counts {
            total: c.total,
            completed: c.completed,
            failed: c.failed,
        });
        let changed = sub.status.as_deref() != Some(batch.status.as_str()) || sub.counts != counts;
        sub.status = Some(batch.status.clone());
        sub.counts = counts;
        if batch.is_terminal() {
            sub.output_file_id = batch.output_file_id.clone();
            sub.error_file_id = batch.error_file_id.clone();
            sub.errors = batch.error_messages();
            sub.state = SubState::Finished;
            journal.save("finished")?;
        } else if changed {
            journal.save("polled")?;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        if let Some(expires_at) = batch
            .expires_at
            .filter(|t| !batch.is_terminal() && now > t + STUCK_GRACE_SECS)
        {
            return Err(BatchError::Runtime(format!(
                "batch {} is still `{}` {} minutes after its completion window ended (expires_at {expires_at}) and the provider has not expired it. Run `saseval-gen cancel` to cancel it, then re-run: what it completed is kept and only the rest is resubmitted",
                batch.id,
                batch.status,
                (now - expires_at) / 60
            )));
        }
        Ok(())
    }

    /// Downloads a finished batch's output and error files and moves their outcomes into the cache.
    async fn collect(
        &mut self,
        client: &Client,
        journal: &mut Journal,
        i: usize,
        end: &mut RoundEnd,
    ) -> Result<(), BatchError> {
        let sub = journal.submissions[i].clone();
        let batch_id = sub.batch_id.clone().unwrap_or_default();
        let status = sub.status.clone().unwrap_or_default();
        let completed = sub.counts.as_ref().map_or(0, |c| c.completed);
        if status == "completed"
            && sub.output_file_id.is_none()
            && sub.error_file_id.is_none()
            && completed > 0
        {
            return Err(BatchError::Runtime(format!(
                "batch {batch_id} is completed with {completed} completed requests but the server gave no output file. Nothing is resubmitted (they may be billed); re-run later to check again, or ask the provider"
            )));
        }
        let keys = self.keys(&sub)?;
        for file_id in [&sub.output_file_id, &sub.error_file_id]
            .into_iter()
            .flatten()
        {
            let dest = self
                .runner
                .state
                .downloads_dir()
                .join(format!("{file_id}.jsonl"));
            if !sub.downloaded.contains(file_id) || !dest.exists() {
                let bytes = client.download(file_id, &dest).await?;
                tracing::debug!(file_id, bytes, "downloaded");
                let s = &mut journal.submissions[i];
                s.downloaded.push(file_id.clone());
                journal.save("downloaded")?;
            }
            self.ingest(&dest, &keys, &batch_id)?;
        }
        match status.as_str() {
            "failed" => end
                .failed
                .push(format!("batch {batch_id}: {}", sub.errors.join("; "))),
            "cancelled" => end.cancelled.push(format!(
                "batch {batch_id} was cancelled ({} of {} requests completed)",
                completed, sub.requests
            )),
            _ => {}
        }
        journal.submissions[i].state = SubState::Collected;
        journal.save("collected")?;
        Ok(())
    }

    /// Moves the final outcomes of one downloaded file into the cache. Lines for requests this
    /// batch never held are ignored with a warning; unserved lines (expired, cancelled, 429,
    /// 5xx) stay without an outcome so that only they are resubmitted.
    fn ingest(
        &mut self,
        path: &std::path::Path,
        keys: &BTreeMap<String, String>,
        batch_id: &str,
    ) -> Result<(), BatchError> {
        let printer = self.runner.printer;
        let ingested =
            ingest::ingest_file(&mut self.runner.cache, path, keys, batch_id, |n, why| {
                printer.warn(format!(
                    "{} line {n}: {why}; skipped (the file is kept for inspection)",
                    path.display()
                ));
                Ok(())
            })?;
        if ingested.foreign > 0 {
            printer.warn(format!(
                "batch {batch_id}: ignored {} output line(s) whose custom_id was never sent in it",
                ingested.foreign
            ));
        }
        Ok(())
    }
}

pub(super) fn fingerprint(job: &str, seq: usize, model: &str, text: &str) -> String {
    let mut h = Sha256::new();
    h.update(job.as_bytes());
    h.update(b"\n");
    h.update(seq.to_string().as_bytes());
    h.update(b"\n");
    h.update(model.as_bytes());
    h.update(b"\n");
    h.update(text.as_bytes());
    hex(&h.finalize())[..24].to_string()
}
