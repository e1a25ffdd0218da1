//! Drives a job through the HTTP Batch API: plans request files, uploads them, creates batches,
//! waits, downloads output and error files, and moves every outcome into the cache — journaling
//! each step first, and finding uploads and batches again by their fingerprint instead of
//! creating second ones: after a crash, and after a lost reply to an upload or a create. What a
//! collected batch served is never bought again: a cache that lost it is rebuilt from the
//! downloaded files first.

use super::client::{BatchObject, Client, ClientError, Downloaded};
use super::ingest::{self, NamedBadLines};
use super::journal::{Counts, Journal, Running, Stage, Submission};
use super::status::BatchStatus;
use super::untrusted::local_file_name;
use super::{
    check_guard, request_file, BatchError, CostGuard, LostRequestFile, Request, Runner,
    UnknownBatch,
};
use crate::util::fsio::shell_word;
use crate::util::printable::printable;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long past its `expires_at` a batch may stay unfinished before the run calls it stuck
/// (providers finalise expiry with some delay).
const STUCK_GRACE_SECS: i64 = 3600;

/// The statuses of the Batch API; any other is reported at once and waited on only this many
/// polls (each up to 10× `api.poll_interval_secs` apart).
const UNKNOWN_STATUS_POLLS: u32 = 12;

/// The metadata key that carries a submission's fingerprint on the server.
pub const FINGERPRINT_KEY: &str = "saseval_fingerprint";

pub struct RemoteJob<'r, 'a> {
    runner: &'r mut Runner<'a>,
    job: String,
    guard: &'r CostGuard,
    /// The account's uploaded files and our batches (by fingerprint), listed once per run
    /// before the first upload or create: a journal that lacks a step may be behind the server.
    server: Option<ServerView>,
    /// Batches showing a status the API does not document: how many polls in a row.
    unknown_status: BTreeMap<String, u32>,
}

/// What already exists on the server, so that nothing is uploaded or created twice.
struct ServerView {
    files: BTreeMap<String, String>,
    batches: BTreeMap<String, BatchObject>,
}

/// What one poll of every created batch found.
#[derive(Default)]
struct Pass {
    /// Some batch is still running.
    waiting: bool,
    /// Completed and failed requests so far.
    progress: (u64, u64),
    /// Running batches by status.
    statuses: BTreeMap<String, usize>,
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
            unknown_status: BTreeMap::new(),
        }
    }

    pub async fn run(mut self, pending: &[&Request]) -> Result<(), BatchError> {
        let client = Client::new(&self.runner.config.api, self.runner.printer)?;
        let mut journal = Journal::load(&self.runner.state.journal_dir(), &self.job)?;
        self.recollect(&client, &journal, pending).await?;
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
                    return Err(BatchError::StillUnserved {
                        job: self.job.clone(),
                        waiting: uncovered.len(),
                        rounds,
                    });
                }
                self.refuse_failed_again(&journal, &uncovered)?;
                check_guard(self.runner.config, &uncovered, self.guard)?;
                self.plan(&mut journal, &uncovered)?;
            }
            self.submit(&client, &mut journal).await?;
            let end = if self.runner.options.no_wait {
                // One look, no waiting: what has finished is collected, so that a re-run with
                // --no-wait goes on to the next job once this one is done.
                let mut end = RoundEnd::default();
                if self
                    .poll_once(&client, &mut journal, &mut end)
                    .await?
                    .waiting
                {
                    self.report_submitted(&journal);
                    return Ok(());
                }
                end
            } else {
                self.wait_and_collect(&client, &mut journal).await?
            };
            if !end.failed.is_empty() {
                return Err(BatchError::BatchFailed {
                    job: self.job.clone(),
                    errors: end.failed,
                });
            }
            if !end.cancelled.is_empty() {
                return Err(BatchError::Cancelled {
                    job: self.job.clone(),
                    batches: end.cancelled,
                });
            }
            rounds += 1;
        }
    }

    fn input_path(&self, sub: &Submission) -> PathBuf {
        self.runner.state.root.join(&sub.input)
    }

    fn journal_path(&self) -> PathBuf {
        Journal::path_for(&self.runner.state.journal_dir(), &self.job)
    }

    /// Where the server file `file_id` is kept once downloaded (a safe name whatever the id).
    fn download_path(&self, file_id: &str) -> PathBuf {
        self.runner
            .state
            .downloads_dir()
            .join(local_file_name(file_id))
    }

    /// The recovery that works when the journal names something that cannot be used: move it
    /// aside, so that the next run finds its batches on the server by their fingerprint.
    fn move_journal_aside(&self, suffix: &str) -> String {
        let path = self.journal_path();
        format!("`mv {} {}.{suffix}`", shell_word(&path), shell_word(&path))
    }

    fn keys(&self, sub: &Submission) -> Result<BTreeMap<String, String>, BatchError> {
        let path = self.input_path(sub);
        request_file::read_keys(&path).map_err(|e| {
            BatchError::RequestFileLost(Box::new(LostRequestFile {
                input: sub.input.clone(),
                seq: sub.seq,
                job: self.job.clone(),
                batch: sub.batch_id().map(str::to_owned),
                source: e,
                recovery: self.move_journal_aside("aside"),
            }))
        })
    }

    /// Re-collects the outcomes that the response cache lacks (a damaged cache moved aside, a
    /// cache cut short) from the downloaded files of collected submissions, before anything is
    /// planned, so that nothing a batch already served is bought again.
    async fn recollect(
        &mut self,
        client: &Client,
        journal: &Journal,
        pending: &[&Request],
    ) -> Result<(), BatchError> {
        let missing: BTreeMap<&str, &str> = pending
            .iter()
            .filter(|r| !self.runner.cache.contains(&r.custom_id, r.body_hash()))
            .map(|r| (r.custom_id.as_str(), r.body_hash()))
            .collect();
        let mut added = 0;
        for sub in &journal.submissions {
            let Stage::Collected(ended) = &sub.stage else {
                continue;
            };
            let Ok(keys) = request_file::read_keys(&self.input_path(sub)) else {
                self.runner.printer.warn(format!(
                    "job {}: the request file state/{} of collected submission {} is missing, so the results of batch {} cannot be taken from its downloaded files",
                    self.job, sub.input, sub.seq, ended.batch_id
                ));
                continue;
            };
            let lost = keys
                .iter()
                .any(|(id, hash)| missing.get(id.as_str()) == Some(&hash.as_str()));
            if !lost {
                continue;
            }
            let batch_id = &ended.batch_id;
            for file_id in ended.files() {
                let dest = self.download_path(file_id);
                if !dest.exists() {
                    match self.download(client, file_id, &dest).await {
                        Ok(_) => {}
                        Err(BatchError::Client(e)) if e.status() == Some(404) => {
                            self.runner.printer.warn(format!(
                                "job {}: the downloaded file {} of batch {batch_id} is gone and the server no longer has it ({e}); the results it held are bought again",
                                self.job,
                                dest.display()
                            ));
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                }
                added += self.ingest(&dest, &keys, batch_id)?.added;
            }
        }
        if added > 0 {
            self.runner.printer.note(format!(
                "job {}: re-collected {added} result(s) that the response cache lacked from the downloaded files under state/downloads (nothing was bought again)",
                self.job
            ));
        }
        Ok(())
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
            if !sub.is_live() || sub.stage == Stage::Exported {
                continue;
            }
            let keys = self.keys(&sub)?;
            let all_wanted = keys
                .iter()
                .all(|(id, h)| want.get(id.as_str()).is_some_and(|(_, wh)| wh == h));
            let mut keep =
                all_wanted || matches!(sub.stage, Stage::Created(_) | Stage::Finished(_));
            if let (false, Stage::Uploaded { file_id }) = (keep, &sub.stage) {
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
                    journal.submissions[i].stage = Stage::Created(Running {
                        file_id: file_id.clone(),
                        batch_id: batch.id,
                        status: None,
                        counts: None,
                    });
                    journal.save("created")?;
                    keep = true;
                }
            }
            if keep {
                covered.extend(keys);
            } else {
                tracing::info!(job = %self.job, seq = sub.seq, "abandoning a submission whose requests changed before any batch was created");
                let file_id = match &sub.stage {
                    Stage::Uploaded { file_id } => Some(file_id.clone()),
                    _ => None,
                };
                journal.submissions[i].stage = Stage::Abandoned { file_id };
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
        for sub in &journal.submissions {
            let Stage::Collected(ended) = &sub.stage else {
                continue;
            };
            if ended.status != BatchStatus::Failed {
                continue;
            }
            let keys = self.keys(sub)?;
            if uncovered
                .iter()
                .any(|r| keys.get(&r.custom_id).map(String::as_str) == Some(r.body_hash()))
            {
                return Err(BatchError::FailedEarlier {
                    job: self.job.clone(),
                    batch: ended.batch_id.clone(),
                    errors: ended.errors.clone(),
                });
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
                    .map_err(BatchError::RequestTooLarge)?;
            for (chunk, text) in chunks {
                let state_root = &self.runner.state.root;
                journal
                    .add_submission(state_root, model, chunk.len(), &text, Stage::Planned)
                    .map_err(|source| BatchError::RequestFileWrite {
                        dir: state_root.clone(),
                        source,
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
            if sub.stage == Stage::Planned {
                let file_id = self
                    .server_view(client)
                    .await?
                    .files
                    .get(&upload_name)
                    .cloned();
                let file_id = match file_id {
                    Some(id) => id,
                    None => {
                        let bytes = std::fs::read(self.input_path(&sub)).map_err(|source| {
                            BatchError::ReadFile {
                                path: self.input_path(&sub),
                                source,
                            }
                        })?;
                        let id = self.upload_once(client, &upload_name, bytes).await?;
                        crate::util::hooks::crash_point("uploaded-unjournaled");
                        id
                    }
                };
                journal.submissions[i].stage = Stage::Uploaded { file_id };
                journal.save("uploaded")?;
            }
            let sub = journal.submissions[i].clone();
            if let Stage::Uploaded { file_id } = &sub.stage {
                let existing = self
                    .server_view(client)
                    .await?
                    .batches
                    .get(&sub.fingerprint)
                    .cloned();
                let batch = match existing {
                    Some(b) => b,
                    None => self.create_once(client, &sub, file_id).await?,
                };
                crate::util::hooks::crash_point("created-unjournaled");
                self.runner.printer.note(format!(
                    "job {}: batch {} holds {} requests for {}",
                    self.job, batch.id, sub.requests, sub.model
                ));
                journal.submissions[i].stage = Stage::Created(Running {
                    file_id: file_id.clone(),
                    batch_id: batch.id,
                    status: None,
                    counts: None,
                });
                journal.save("created")?;
            }
        }
        Ok(())
    }

    /// Uploads a request file; when the reply is lost, looks for the file by its name before
    /// uploading again (the name carries the fingerprint).
    async fn upload_once(
        &mut self,
        client: &Client,
        name: &str,
        bytes: Vec<u8>,
    ) -> Result<String, BatchError> {
        let mut lost = 0;
        loop {
            let error = match client.upload(name, bytes.clone()).await {
                Ok(file) => return Ok(file.id),
                Err(e @ ClientError::Unconfirmed { .. }) => e,
                Err(e) => return Err(e.into()),
            };
            lost += 1;
            self.lost_reply_pause(
                &error,
                lost,
                "looking for the file by its name before uploading it again",
            )
            .await?;
            match client.list_files().await {
                Ok(files) => {
                    if let Some(file) = files
                        .into_iter()
                        .find(|f| f.filename.as_deref() == Some(name))
                    {
                        self.runner.printer.note(format!(
                            "job {}: the upload {name} reached the server (file {}); not uploading it again",
                            self.job,
                            printable(&file.id)
                        ));
                        return Ok(file.id);
                    }
                }
                Err(e) if e.is_unsupported_reply() => {
                    self.runner.printer.warn(format!("job {}: the server cannot list files ({e}); uploading {name} again (an upload alone costs nothing)", self.job));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Creates a submission's batch; when the reply is lost, looks for the batch by its
    /// fingerprint before creating it again, so that a lost reply never buys a batch twice.
    async fn create_once(
        &mut self,
        client: &Client,
        sub: &Submission,
        file_id: &str,
    ) -> Result<BatchObject, BatchError> {
        let metadata = json!({ "saseval_job": self.job, FINGERPRINT_KEY: sub.fingerprint });
        let window = self.runner.config.api.completion_window.clone();
        let mut lost = 0;
        loop {
            let error = match client
                .create_batch(file_id, &window, metadata.clone())
                .await
            {
                Ok(batch) => return Ok(batch),
                Err(e @ ClientError::Unconfirmed { .. }) => e,
                Err(e) => return Err(e.into()),
            };
            lost += 1;
            self.lost_reply_pause(
                &error,
                lost,
                "looking for the batch by its fingerprint before creating it again",
            )
            .await?;
            let found = client.batches_by_metadata(FINGERPRINT_KEY).await?;
            if let Some(batch) = found.get(&sub.fingerprint) {
                self.runner.printer.note(format!(
                    "job {}: batch {} was created before its reply was lost; not creating it again",
                    self.job,
                    printable(&batch.id)
                ));
                return Ok(batch.clone());
            }
        }
    }

    /// Says that a reply to a creating request was lost and waits before looking; after
    /// `api.max_retries` such losses the run stops (a re-run looks again before creating).
    async fn lost_reply_pause(
        &self,
        error: &ClientError,
        lost: usize,
        next: &str,
    ) -> Result<(), BatchError> {
        let api = &self.runner.config.api;
        if lost > api.max_retries {
            return Err(BatchError::RepliesLost {
                job: self.job.clone(),
                error: error.to_string(),
                times: lost,
            });
        }
        self.runner
            .printer
            .warn(format!("job {}: {error}; {next}", self.job));
        let wait = api.retry_initial_secs * 2f64.powi(lost as i32 - 1);
        tokio::time::sleep(Duration::from_secs_f64(wait.min(60.0))).await;
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
                        self.runner.printer.warn(format!(
                            "listing files failed ({e}); uploading anew (an upload alone costs nothing)"
                        ));
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
            .filter(|s| matches!(s.stage, Stage::Created(_)))
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
            .filter(|s| matches!(s.stage, Stage::Created(_) | Stage::Finished(_)))
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
            let Pass {
                waiting,
                progress,
                statuses,
            } = self.poll_once(client, journal, &mut end).await?;
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

    /// Polls every created batch once and collects each that has finished.
    async fn poll_once(
        &mut self,
        client: &Client,
        journal: &mut Journal,
        end: &mut RoundEnd,
    ) -> Result<Pass, BatchError> {
        let mut pass = Pass::default();
        for i in 0..journal.submissions.len() {
            if let Stage::Created(running) = &journal.submissions[i].stage {
                let id = running.batch_id.clone();
                let batch = match client.get_batch(&id).await {
                    Ok(batch) => batch,
                    Err(e) if e.status() == Some(404) => {
                        return Err(self.unknown_batch(&id));
                    }
                    Err(e) => return Err(e.into()),
                };
                self.record_poll(journal, i, &batch)?;
            }
            let sub = &journal.submissions[i];
            match &sub.stage {
                Stage::Created(running) => {
                    pass.waiting = true;
                    let status = running.status.as_ref().map(BatchStatus::as_str);
                    *pass
                        .statuses
                        .entry(status.unwrap_or_default().to_string())
                        .or_default() += 1;
                }
                Stage::Finished(_) => self.collect(client, journal, i, end).await?,
                _ => {}
            }
            if let Some(c) = journal.submissions[i].counts() {
                pass.progress.0 += c.completed;
                pass.progress.1 += c.failed;
            }
        }
        Ok(pass)
    }

    /// A journal names a batch the server does not know: what that means and the way out.
    fn unknown_batch(&self, id: &str) -> BatchError {
        BatchError::UnknownBatch(Box::new(UnknownBatch {
            job: self.job.clone(),
            base_url: self.runner.config.api.base_url.clone(),
            batch: printable(id),
            journal: self.journal_path(),
            recovery: self.move_journal_aside("unknown-batch"),
        }))
    }

    /// Counts a poll that showed a status the API does not document: warns at the first, and
    /// stops the wait once it has lasted [`UNKNOWN_STATUS_POLLS`] polls.
    fn check_status(&mut self, batch: &BatchObject) -> Result<(), BatchError> {
        if batch.status.is_documented() {
            self.unknown_status.remove(&batch.id);
            return Ok(());
        }
        let polls = self.unknown_status.entry(batch.id.clone()).or_default();
        *polls += 1;
        let status = printable(batch.status.as_str());
        let id = printable(&batch.id);
        if *polls == 1 {
            self.runner.printer.warn(format!(
                "batch {id} has status `{status}`, which the Batch API does not document (expected one of {}); waiting at most {UNKNOWN_STATUS_POLLS} polls for it to change",
                BatchStatus::DOCUMENTED
                    .iter()
                    .map(BatchStatus::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if *polls >= UNKNOWN_STATUS_POLLS {
            return Err(BatchError::UnknownStatus {
                batch: id.to_string(),
                status: status.to_string(),
                polls: *polls,
            });
        }
        Ok(())
    }

    fn record_poll(
        &mut self,
        journal: &mut Journal,
        i: usize,
        batch: &BatchObject,
    ) -> Result<(), BatchError> {
        self.check_status(batch)?;
        let Stage::Created(running) = &mut journal.submissions[i].stage else {
            return Ok(());
        };
        let counts = batch.request_counts.as_ref().map(|c| Counts {
            total: c.total,
            completed: c.completed,
            failed: c.failed,
        });
        let changed = running.status.as_ref() != Some(&batch.status) || running.counts != counts;
        running.status = Some(batch.status.clone());
        running.counts = counts;
        if batch.status.is_terminal() {
            let ended = running.ended(
                batch.status.clone(),
                batch.output_file_id.clone(),
                batch.error_file_id.clone(),
                batch.error_messages(),
            );
            journal.submissions[i].stage = Stage::Finished(ended);
            journal.save("finished")?;
        } else if changed {
            journal.save("polled")?;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        if let Some(expires_at) = batch
            .expires_at
            .filter(|t| !batch.status.is_terminal() && now > t + STUCK_GRACE_SECS)
        {
            return Err(BatchError::Stuck {
                batch: printable(&batch.id),
                status: printable(batch.status.as_str()),
                minutes: (now - expires_at) / 60,
                expires_at,
            });
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
        let Stage::Finished(mut ended) = sub.stage.clone() else {
            return Ok(());
        };
        let batch_id = ended.batch_id.clone();
        let completed = ended.counts.as_ref().map_or(0, |c| c.completed);
        if ended.status == BatchStatus::Completed
            && ended.output_file_id.is_none()
            && ended.error_file_id.is_none()
            && completed > 0
        {
            return Err(BatchError::NoOutputFile {
                batch: batch_id,
                completed,
            });
        }
        let keys = self.keys(&sub)?;
        let served = ended.counts.as_ref().map_or(0, |c| c.completed + c.failed);
        let files: Vec<String> = ended.files().cloned().collect();
        let mut downloads = 0;
        loop {
            let mut lines = 0;
            for file_id in &files {
                let dest = self.download_path(file_id);
                let journaled = ended.downloaded.contains(file_id);
                if downloads > 0 || !journaled || !dest.exists() {
                    self.download(client, file_id, &dest).await?;
                    if !journaled {
                        ended.downloaded.push(file_id.clone());
                        journal.submissions[i].stage = Stage::Finished(ended.clone());
                        journal.save("downloaded")?;
                    }
                }
                lines += self.ingest(&dest, &keys, &batch_id)?.lines as u64;
            }
            if lines >= served {
                break;
            }
            downloads += 1;
            let again = downloads <= self.runner.config.api.max_retries;
            self.runner.printer.warn(format!(
                "batch {batch_id}: its request_counts say {served} request(s) were served, but its output and error files hold {lines} line(s); {}",
                if again {
                    "a download may have been cut short at a line boundary: downloading them again"
                } else {
                    "they stay short after every download, so the missing requests are submitted again"
                }
            ));
            if !again {
                break;
            }
            let wait = self.runner.config.api.retry_initial_secs * 2f64.powi(downloads as i32 - 1);
            tokio::time::sleep(Duration::from_secs_f64(wait.min(60.0))).await;
        }
        match ended.status {
            BatchStatus::Failed => end
                .failed
                .push(format!("batch {batch_id}: {}", ended.errors.join("; "))),
            BatchStatus::Cancelled => end.cancelled.push(format!(
                "batch {batch_id} was cancelled ({} of {} requests completed)",
                completed, sub.requests
            )),
            _ => {}
        }
        journal.submissions[i].stage = Stage::Collected(ended);
        journal.save("collected")?;
        Ok(())
    }

    /// Downloads a server file, saying so when its last line is the server's own bad line
    /// (the same bytes in every download) rather than a transfer cut short.
    async fn download(
        &self,
        client: &Client,
        file_id: &str,
        dest: &Path,
    ) -> Result<Downloaded, BatchError> {
        let downloaded = client.download(file_id, dest).await?;
        tracing::debug!(file_id, bytes = downloaded.bytes, "downloaded");
        if downloaded.bad_last_line {
            self.runner.printer.warn(format!(
                "file {} ({}): its last line is not complete JSON, with the same bytes in every download, so it is not a cut-short transfer: the good lines are kept and the bad one is reported below",
                printable(file_id),
                dest.display()
            ));
        }
        Ok(downloaded)
    }

    /// Moves the final outcomes of one downloaded file into the cache. Lines for requests this
    /// batch never held are ignored with a warning; unserved lines (expired, cancelled, 429,
    /// 5xx) stay without an outcome so that only they are resubmitted; a bad line that names
    /// its request is kept as that request's failure.
    fn ingest(
        &mut self,
        path: &Path,
        keys: &BTreeMap<String, String>,
        batch_id: &str,
    ) -> Result<ingest::Ingested, BatchError> {
        let printer = self.runner.printer;
        let ingested = ingest::ingest_file(
            &mut self.runner.cache,
            path,
            keys,
            batch_id,
            NamedBadLines::KeepAsFailure,
            |bad| {
                let what = match bad.kept_for {
                    Some(custom_id) => format!("kept as the failed outcome of {custom_id}"),
                    None => "skipped; it names no request of this batch (the file is kept for inspection)".into(),
                };
                printer.warn(format!(
                    "{} line {}: {}; {what}",
                    path.display(),
                    bad.line_no,
                    bad.why
                ));
                Ok(())
            },
        )?;
        if ingested.foreign > 0 {
            printer.warn(format!(
                "batch {batch_id}: ignored {} output line(s) whose custom_id was never sent in it",
                ingested.foreign
            ));
        }
        Ok(ingested)
    }
}
