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
    use super::local::{LocalEngine, LocalSettings, RequestTiming};
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
            let result = engine.complete(&body).map_err(|e| e.to_string());
            if tx
                .send(Ok((custom_id, hash, result, engine.last_timing())))
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
    let mut spent = RequestTiming::default();
    loop {
        let message = tokio::select! {
            m = rx.recv() => m,
            _ = tokio::signal::ctrl_c() => {
                bar.abandon();
                return Err(BatchError::Interrupted);
            }
        };
        let Some(message) = message else { break };
        let (custom_id, hash, result, timing) = message.map_err(|e| BatchError::LocalModel {
            message: e.to_string(),
            usage: e.is_usage(),
        })?;
        if let Some(timing) = timing {
            tracing::debug!(custom_id, ?timing, "local request computed");
            spent.add(&timing);
        }
        let outcome = match result {
            Ok(body) => Outcome::Ok(body),
            Err(message) => Outcome::Failed(Failure {
                code: "local_error".into(),
                status: None,
                message,
            }),
        };
        runner.cache.put(&custom_id, &hash, outcome, "local")?;
        crate::hooks::crash_point("local-result");
        bar.inc(1);
        bar.set_message(format!(
            "{:.1} tokens/s",
            spent.generation_tokens_per_second()
        ));
    }
    bar.finish_and_clear();
    runner.printer.note(format!(
        "job {job}: {total} request(s) computed locally; prompts: {} tokens kept from the previous \
         request, {} evaluated in {:.1} s ({:.1} tokens/s); {} tokens generated in {:.1} s ({:.1} tokens/s)",
        spent.reused_prompt_tokens,
        spent.evaluated_prompt_tokens,
        spent.prompt_evaluation.as_secs_f64(),
        spent.prompt_tokens_per_second(),
        spent.completion_tokens,
        spent.generation.as_secs_f64(),
        spent.generation_tokens_per_second(),
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
