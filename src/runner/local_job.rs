//! Runs a job on the in-process local models: the pending requests are grouped by model (each
//! name's GGUF file comes from `[local.models]`, or `local.model_path` when that table is empty),
//! and one worker thread loads each model in turn and decodes its requests `local.parallel` at a
//! time. Each result is appended to the cache as soon as its request finishes, so a killed run
//! loses at most the requests in flight and never recomputes a finished one.

use super::{BatchError, Request, Runner};

#[cfg(feature = "local")]
pub async fn run(
    runner: &mut Runner<'_>,
    job: &str,
    pending: &[&Request],
) -> Result<(), BatchError> {
    use super::local::{LocalEngine, LocalSettings, Timing};
    use super::{Failure, Outcome};
    use std::ops::ControlFlow;

    /// What the worker thread reports.
    enum Message {
        Loaded(String),
        Done {
            custom_id: String,
            hash: String,
            result: Result<serde_json::Value, String>,
            timing: Timing,
        },
        ModelDone(Timing),
        Failed(super::local::LocalError),
    }

    let local = &runner.config.local;
    let groups = by_model(runner.config, pending)?;
    let settings_of = |path: std::path::PathBuf| LocalSettings {
        model_path: path,
        threads: local.threads,
        context_size: local.context_size,
        repeat_penalty: local.repeat_penalty,
        chat_template: Some(local.chat_template.clone()).filter(|t| !t.is_empty()),
        parallel: local.parallel,
        cut_loops: local.cut_loops,
    };
    let work: Vec<(String, LocalSettings, Vec<Work>)> = groups
        .into_iter()
        .map(|group| (group.model, settings_of(group.path), group.work))
        .collect();
    let total = pending.len() as u64;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for (model, settings, requests) in work {
            let mut engine = match LocalEngine::load(&settings) {
                Ok(engine) => engine,
                Err(error) => {
                    let _ = tx.send(Message::Failed(error));
                    return;
                }
            };
            if tx.send(Message::Loaded(model)).is_err() {
                return;
            }
            let requests = requests
                .into_iter()
                .map(|work| ((work.custom_id, work.hash), work.body));
            let timing = engine.complete_all(requests, |(custom_id, hash), result, timing| {
                let message = Message::Done {
                    custom_id,
                    hash,
                    result: result.map_err(|error| error.to_string()),
                    timing: *timing,
                };
                match tx.send(message) {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(_) => ControlFlow::Break(()),
                }
            });
            if tx.send(Message::ModelDone(timing)).is_err() {
                return;
            }
        }
    });

    let bar = runner.printer.bar(
        total,
        "{spinner} {prefix} [{elapsed_precise}] {bar:30} {pos}/{len} requests ({msg})",
    );
    bar.set_prefix(format!("job {job} (local)"));
    let started = std::time::Instant::now();
    let mut spent = Timing::default();
    let mut model = String::new();
    let mut done = 0_u64;
    loop {
        let message = tokio::select! {
            m = rx.recv() => m,
            _ = tokio::signal::ctrl_c() => {
                bar.abandon();
                return Err(BatchError::Interrupted);
            }
        };
        let Some(message) = message else { break };
        let (custom_id, hash, result, timing) = match message {
            Message::Loaded(name) => {
                bar.set_prefix(format!("job {job} (local, {name})"));
                model = name;
                continue;
            }
            Message::ModelDone(timing) => {
                spent.add(&timing);
                continue;
            }
            Message::Failed(error) => {
                bar.abandon();
                return Err(BatchError::LocalModel {
                    message: error.to_string(),
                    usage: error.is_usage(),
                });
            }
            Message::Done {
                custom_id,
                hash,
                result,
                timing,
            } => (custom_id, hash, result, timing),
        };
        let outcome = match result {
            Ok(body) => Outcome::Ok(body),
            Err(message) => Outcome::Failed(Failure {
                code: "local_error".into(),
                status: None,
                message,
            }),
        };
        runner.cache.put(&custom_id, &hash, outcome, "local")?;
        crate::util::hooks::crash_point("local-result");
        done += 1;
        let speed = format!(
            "{} tokens generated, {:.1} tokens/s",
            timing.completion_tokens,
            timing.generation_tokens_per_second()
        );
        bar.inc(1);
        bar.set_message(speed.clone());
        if bar.is_hidden() {
            // Without a terminal there is no bar: a line per request shows the run is alive.
            runner.printer.note(format!(
                "job {job} (local, {model}): {done}/{total} requests done after {:.0} s; {speed} with this model",
                started.elapsed().as_secs_f64()
            ));
        }
    }
    bar.finish_and_clear();
    runner.printer.note(format!(
        "job {job}: {total} request(s) computed locally, up to {} decoded together; prompts: {} \
         tokens shared with a sequence already in the context, {} evaluated in {:.1} s ({:.1} \
         tokens/s); {} tokens generated in {:.1} s ({:.1} tokens/s){}",
        local.parallel,
        spent.reused_prompt_tokens,
        spent.evaluated_prompt_tokens,
        spent.prompt_evaluation.as_secs_f64(),
        spent.prompt_tokens_per_second(),
        spent.completion_tokens,
        spent.generation.as_secs_f64(),
        spent.generation_tokens_per_second(),
        match spent.loops_cut {
            0 => String::new(),
            n => format!("; {n} reply(ies) ended early, caught in a loop (local.cut_loops)"),
        },
    ));
    Ok(())
}

/// One pending request, as the worker thread needs it.
#[cfg(feature = "local")]
struct Work {
    custom_id: String,
    hash: String,
    body: serde_json::Value,
}

/// The requests of one model, with the GGUF file that serves it.
#[cfg(feature = "local")]
struct ModelGroup {
    model: String,
    path: std::path::PathBuf,
    work: Vec<Work>,
}

/// Groups `pending` by the model its body names, in the order each model first appears (a
/// request keeps its place within its model), and checks every model's file before any loads.
#[cfg(feature = "local")]
fn by_model(
    config: &crate::config::Config,
    pending: &[&Request],
) -> Result<Vec<ModelGroup>, BatchError> {
    let local = &config.local;
    let mut groups: Vec<ModelGroup> = Vec::new();
    for request in pending {
        let name = request.model();
        let work = Work {
            custom_id: request.custom_id.clone(),
            hash: request.body_hash().to_string(),
            body: request.body().clone(),
        };
        if let Some(group) = groups.iter_mut().find(|group| group.model == name) {
            group.work.push(work);
            continue;
        }
        let key = local.model_key(name);
        let Some(path) = local.model_file(name) else {
            return Err(BatchError::LocalModel {
                message: format!(
                    "model \"{name}\" has no GGUF file: add `\"{name}\" = \"models/<file>.gguf\"` to [local.models]"
                ),
                usage: true,
            });
        };
        if !path.is_file() {
            if local.models.is_empty() {
                return Err(BatchError::ModelFileMissing {
                    path: path.to_path_buf(),
                });
            }
            return Err(BatchError::LocalModel {
                message: format!(
                    "the GGUF file of model \"{name}\" ({key}) does not exist: {}; run scripts/fetch-model.sh --profile local to fetch the bundled models, or set {key} to a GGUF file",
                    path.display()
                ),
                usage: true,
            });
        }
        groups.push(ModelGroup {
            model: name.to_string(),
            path: path.to_path_buf(),
            work: vec![work],
        });
    }
    Ok(groups)
}

#[cfg(not(feature = "local"))]
pub async fn run(
    _runner: &mut Runner<'_>,
    _job: &str,
    _pending: &[&Request],
) -> Result<(), BatchError> {
    Err(BatchError::NoLocalBackend)
}

#[cfg(all(test, feature = "local"))]
mod tests {
    use super::*;
    use crate::config::Config;
    use serde_json::json;

    fn config(dir: &std::path::Path, sets: &[&str]) -> Config {
        let pipeline = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline.toml");
        let mut args = vec![
            "api.provider=local".to_string(),
            "author.model=\"writer\"".to_string(),
            "repair.models=[\"checker\"]".to_string(),
            "audit.models=[\"checker\", \"writer\"]".to_string(),
        ];
        for name in ["writer", "checker"] {
            let file = dir.join(format!("{name}.gguf"));
            args.push(format!("local.models.{name}=\"{}\"", file.display()));
        }
        args.extend(sets.iter().map(|set| set.to_string()));
        Config::load(&pipeline, &args).expect("config")
    }

    fn request(id: &str, model: &str) -> Request {
        Request::new(id.to_string(), json!({"model": model, "messages": []}))
    }

    #[test]
    fn requests_are_grouped_by_model_in_first_appearance_order_with_each_models_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        for name in ["writer", "checker"] {
            std::fs::write(dir.path().join(format!("{name}.gguf")), b"GGUF").expect("write");
        }
        let config = config(dir.path(), &[]);
        let requests = [
            request("audit/a/checker", "checker"),
            request("audit/a/writer", "writer"),
            request("audit/b/checker", "checker"),
            request("audit/b/writer", "writer"),
        ];
        let pending: Vec<&Request> = requests.iter().collect();
        let groups = by_model(&config, &pending).expect("groups");
        let summary: Vec<(&str, Vec<&str>)> = groups
            .iter()
            .map(|group| {
                let ids = group.work.iter().map(|w| w.custom_id.as_str()).collect();
                (group.model.as_str(), ids)
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("checker", vec!["audit/a/checker", "audit/b/checker"]),
                ("writer", vec!["audit/a/writer", "audit/b/writer"]),
            ]
        );
        assert_eq!(groups[0].path, dir.path().join("checker.gguf"));
        assert_eq!(groups[1].path, dir.path().join("writer.gguf"));

        std::fs::remove_file(dir.path().join("writer.gguf")).expect("remove");
        let Err(error) = by_model(&config, &pending) else {
            panic!("a missing file is refused before any model loads");
        };
        let message = error.to_string();
        assert!(
            message.contains("local.models.\"writer\"") && message.contains("--profile local"),
            "{message}"
        );
        assert_eq!(error.code(), crate::exit::USAGE);
        let stray = [request("x", "nobody")];
        let Err(error) = by_model(&config, &[&stray[0]]) else {
            panic!("a name without a file is refused");
        };
        assert!(
            error.to_string().contains("\"nobody\" has no GGUF file"),
            "{error}"
        );
    }
}
