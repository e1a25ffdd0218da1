//! Runs a job on the in-process local model: one worker thread owns the model and context and
//! is fed the requests in order; each result is appended to the cache as it arrives, so a killed
//! run resumes at the first request without a result and never recomputes a finished one.

use super::{BatchError, Request, Runner};

#[cfg(feature = "local")]
pub async fn run(
    runner: &mut Runner<'_>,
    job: &str,
    pending: &[&Request],
) -> Result<(), BatchError> {
    use super::local::{LocalEngine, LocalSettings};
    use super::{Failure, Outcome};

    let local = &runner.config.local;
    if !local.model_path.is_file() {
        return Err(BatchError::ModelFileMissing {
            path: local.model_path.clone(),
        });
    }
    let settings = LocalSettings {
        model_path: local.model_path.clone(),
        threads: local.threads,
        context_size: local.context_size,
        repeat_penalty: local.repeat_penalty,
        chat_template: Some(local.chat_template.clone()).filter(|t| !t.is_empty()),
    };
    let work: Vec<(String, String, serde_json::Value)> = pending
        .iter()
        .map(|r| {
            (
                r.custom_id.clone(),
                r.body_hash().to_string(),
                r.body().clone(),
            )
        })
        .collect();
    let total = work.len() as u64;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut engine = match LocalEngine::load(&settings) {
            Ok(engine) => engine,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        for (custom_id, hash, body) in work {
            let started = std::time::Instant::now();
            let result = engine.complete(&body).map_err(|e| e.to_string());
            if tx
                .send(Ok((custom_id, hash, result, started.elapsed())))
                .is_err()
            {
                return;
            }
        }
    });

    let bar = runner.printer.bar(
        total,
        "{spinner} {prefix} [{elapsed_precise}] {bar:30} {pos}/{len} requests ({msg})",
    );
    bar.set_prefix(format!("job {job} (local)"));
    let (mut tokens, mut seconds) = (0u64, 0f64);
    loop {
        let message = tokio::select! {
            m = rx.recv() => m,
            _ = tokio::signal::ctrl_c() => {
                bar.abandon();
                return Err(BatchError::Interrupted);
            }
        };
        let Some(message) = message else { break };
        let (custom_id, hash, result, elapsed) = message.map_err(|e| BatchError::LocalModel {
            message: e.to_string(),
            usage: e.is_usage(),
        })?;
        let outcome = match result {
            Ok(body) => {
                tokens += body
                    .pointer("/usage/completion_tokens")
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0);
                Outcome::Ok(body)
            }
            Err(message) => Outcome::Failed(Failure {
                code: "local_error".into(),
                status: None,
                message,
            }),
        };
        seconds += elapsed.as_secs_f64();
        runner.cache.put(&custom_id, &hash, outcome, "local")?;
        crate::hooks::crash_point("local-result");
        bar.inc(1);
        if seconds > 0.0 {
            bar.set_message(format!("{:.1} tokens/s", tokens as f64 / seconds));
        }
    }
    bar.finish_and_clear();
    runner.printer.note(format!(
        "job {job}: {total} request(s) computed locally, {tokens} tokens in {seconds:.1} s ({:.1} tokens/s)",
        if seconds > 0.0 { tokens as f64 / seconds } else { 0.0 }
    ));
    Ok(())
}

#[cfg(not(feature = "local"))]
pub async fn run(
    _runner: &mut Runner<'_>,
    _job: &str,
    _pending: &[&Request],
) -> Result<(), BatchError> {
    Err(BatchError::NoLocalBackend)
}
