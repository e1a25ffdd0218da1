//! The `file` backend: writes the pending requests as batch input JSONL for another engine
//! (vLLM `run-batch`, a cluster job, a provider's console) and ingests that engine's output JSONL
//! given with `--import`.
//!
//! An import is matched by custom_id against every request the out dir exported, in any job (a
//! custom_id exported more than once, after its body changed, belongs to its newest export). It
//! adds outcomes, and replaces a cached failure with a success but never a success (the cache's
//! rule, so a crash mid-import loses nothing and a repeat is harmless). Lines that answer nothing
//! exported are counted and warned about; a file of nothing else is refused. The hint that
//! follows counts only the requests that still wait, and gives the vLLM command that serves them.

use super::ingest::{ingest_file, NamedBadLines};
use super::journal::{Journal, Stage, Submission};
use super::{request_file, BatchError, Request, Runner};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A request's custom_id → its body hash, as a request file holds them.
type Keys = BTreeMap<String, String>;

/// Reads the command's `--import` files (once; later jobs of the command see them done) into the
/// cache, then marks every exported submission whose requests all have outcomes as imported.
pub fn import_all(runner: &mut Runner<'_>) -> Result<(), BatchError> {
    let paths = std::mem::take(&mut runner.options.imports);
    if paths.is_empty() {
        return Ok(());
    }
    for path in &paths {
        if let Err(source) = std::fs::metadata(path) {
            return Err(BatchError::ImportMissing {
                path: path.clone(),
                source,
            });
        }
    }
    let mut journals = Journal::load_all(&runner.state.journal_dir())?;
    let mut keys = Keys::new();
    let mut waiting: Vec<(usize, usize, Keys)> = Vec::new();
    for (j, journal) in journals.iter().enumerate() {
        for (s, sub) in journal.submissions.iter().enumerate() {
            if !matches!(sub.stage, Stage::Exported | Stage::Imported) {
                continue;
            }
            let sub_keys = read_keys(runner, &journal.job, sub)?;
            keys.extend(sub_keys.iter().map(|(id, h)| (id.clone(), h.clone())));
            if sub.stage == Stage::Exported {
                waiting.push((j, s, sub_keys));
            }
        }
    }
    for path in &paths {
        import(runner, path, &keys)?;
    }
    let mut settled = BTreeSet::new();
    for (j, s, sub_keys) in waiting {
        if all_cached(runner, &sub_keys) {
            journals[j].submissions[s].stage = Stage::Imported;
            settled.insert(j);
        }
    }
    for j in settled {
        journals[j].save("imported")?;
    }
    Ok(())
}

fn all_cached(runner: &Runner<'_>, keys: &Keys) -> bool {
    keys.iter().all(|(id, h)| runner.cache.contains(id, h))
}

fn read_keys(runner: &Runner<'_>, job: &str, sub: &Submission) -> Result<Keys, BatchError> {
    request_file::read_keys(&runner.state.root.join(&sub.input)).map_err(|source| {
        BatchError::ExportRead {
            job: job.to_string(),
            source,
        }
    })
}

/// Ingests one `--import` file against `keys`, the requests exported from this out dir.
fn import(runner: &mut Runner<'_>, path: &Path, keys: &Keys) -> Result<(), BatchError> {
    let missing_before: Vec<(&String, &String)> = keys
        .iter()
        .filter(|(id, h)| !runner.cache.contains(id, h))
        .collect();
    let failed_before: Vec<(&String, &String)> = keys
        .iter()
        .filter(|(id, h)| runner.cache.holds_failure(id, h))
        .collect();
    let source = format!("import:{}", path.display());
    let printer = runner.printer;
    let ingested = ingest_file(
        &mut runner.cache,
        path,
        keys,
        &source,
        NamedBadLines::Report,
        |bad| match bad.kept_for {
            Some(custom_id) => {
                printer.warn(format!(
                    "--import {} line {}: {}; kept as the failed outcome of {custom_id}",
                    path.display(),
                    bad.line_no,
                    bad.why
                ));
                Ok(())
            }
            None => Err(BatchError::ImportLine {
                path: path.to_path_buf(),
                line: bad.line_no,
                why: bad.why.to_string(),
            }),
        },
    )?;
    if ingested.lines == 0 {
        return Err(BatchError::ImportEmpty {
            path: path.to_path_buf(),
        });
    }
    let answering = ingested.lines - ingested.foreign;
    let first_foreign = ingested.first_foreign.unwrap_or_default();
    if answering == 0 {
        return Err(BatchError::ImportMatchesNothing {
            path: path.to_path_buf(),
            lines: ingested.lines,
            first: first_foreign,
            export_dir: runner.state.export_dir(),
        });
    }
    if ingested.foreign > 0 {
        printer.warn(format!(
            "--import {}: {} of its {} line(s) answer no request exported from this out dir (the first: custom_id `{first_foreign}`); they were ignored. Were they run from another out dir's export?",
            path.display(),
            ingested.foreign,
            ingested.lines
        ));
    }
    let new = missing_before
        .iter()
        .filter(|(id, h)| runner.cache.contains(id, h))
        .count();
    let replaced = failed_before
        .iter()
        .filter(|(id, h)| !runner.cache.holds_failure(id, h))
        .count();
    let what = if new + replaced == 0 {
        "nothing new: the requests it answers already have their outcome, or it reports them unserved (HTTP 429 or 5xx), which leaves them waiting".to_string()
    } else {
        format!("{new} new result(s), {replaced} failed outcome(s) replaced by a success")
    };
    printer.note(format!(
        "--import {}: {answering} line(s) answer exported requests; {what}",
        path.display()
    ));
    Ok(())
}

/// An export file of this job that still holds requests without an outcome.
struct Waiting {
    file: PathBuf,
    model: String,
    requests: usize,
    waiting: usize,
}

pub struct FileJob<'r, 'a> {
    runner: &'r mut Runner<'a>,
    job: String,
}

impl<'r, 'a> FileJob<'r, 'a> {
    pub fn new(runner: &'r mut Runner<'a>, job: &str) -> Self {
        FileJob {
            runner,
            job: job.to_string(),
        }
    }

    /// Exports the pending requests that no export file of the job holds, then says which files
    /// hold the requests that still wait, and how to run them.
    pub fn run(self, pending: &[&Request]) -> Result<(), BatchError> {
        let mut journal = Journal::load(&self.runner.state.journal_dir(), &self.job)?;
        // The newest export of each custom_id: its body hash and submission.
        let mut newest: BTreeMap<String, (String, usize)> = BTreeMap::new();
        for s in 0..journal.submissions.len() {
            let exported = match journal.submissions[s].stage {
                Stage::Exported => true,
                Stage::Imported => false,
                _ => continue,
            };
            let keys = read_keys(self.runner, &self.job, &journal.submissions[s])?;
            if exported && all_cached(self.runner, &keys) {
                journal.submissions[s].stage = Stage::Imported;
                journal.save("collected")?;
            }
            newest.extend(keys.into_iter().map(|(id, h)| (id, (h, s))));
        }
        let without_outcome: Vec<&Request> = pending
            .iter()
            .copied()
            .filter(|r| !self.runner.cache.contains(&r.custom_id, r.body_hash()))
            .collect();
        let held_by = |r: &Request, journal: &Journal| {
            newest
                .get(&r.custom_id)
                .filter(|(h, s)| {
                    h == r.body_hash() && journal.submissions[*s].stage == Stage::Exported
                })
                .map(|(_, s)| *s)
        };
        // Submission → how many of its requests still wait.
        let mut waiting_in: BTreeMap<usize, usize> = BTreeMap::new();
        let mut uncovered = Vec::new();
        for r in &without_outcome {
            match held_by(r, &journal) {
                Some(s) => *waiting_in.entry(s).or_default() += 1,
                None => uncovered.push(*r),
            }
        }
        for (s, requests) in self.export(&mut journal, &uncovered)? {
            *waiting_in.entry(s).or_default() += requests;
        }
        let export_dir = self.runner.state.export_dir();
        let files: Vec<Waiting> = waiting_in
            .into_iter()
            .map(|(s, waiting)| {
                let sub = &journal.submissions[s];
                Waiting {
                    file: export_dir.join(export_name(sub)),
                    model: sub.model.clone(),
                    requests: sub.requests,
                    waiting,
                }
            })
            .collect();
        if !files.is_empty() {
            self.runner
                .printer
                .note(hint(&self.job, &export_dir, &files));
        }
        Ok(())
    }

    /// Writes one export file per model; returns each new submission with its request count.
    fn export(
        &self,
        journal: &mut Journal,
        requests: &[&Request],
    ) -> Result<Vec<(usize, usize)>, BatchError> {
        let mut by_model: BTreeMap<&str, Vec<&Request>> = BTreeMap::new();
        for r in requests {
            by_model.entry(r.model()).or_default().push(r);
        }
        let export_dir = self.runner.state.export_dir();
        let io = |source: std::io::Error| BatchError::ExportWrite {
            dir: export_dir.clone(),
            source,
        };
        if !by_model.is_empty() {
            std::fs::create_dir_all(&export_dir).map_err(io)?;
        }
        let mut added = Vec::new();
        for (model, reqs) in by_model {
            let text: String = reqs.iter().map(|r| request_file::line(r)).collect();
            let sub = journal
                .add_submission(
                    &self.runner.state.root,
                    model,
                    reqs.len(),
                    &text,
                    Stage::Exported,
                )
                .map_err(io)?;
            let name = export_name(sub);
            crate::util::fsio::write_atomic(&export_dir.join(name), text.as_bytes()).map_err(io)?;
            journal.save("exported")?;
            added.push((journal.submissions.len() - 1, reqs.len()));
        }
        Ok(added)
    }
}

/// The export file's name: the request file's, without its `requests/` folder.
fn export_name(sub: &Submission) -> String {
    sub.input.trim_start_matches("requests/").to_string()
}

/// Where vLLM is told to write a file's output: beside it, as `<name>.results.jsonl`.
fn results_path(file: &Path) -> PathBuf {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    file.with_file_name(format!("{stem}.results.jsonl"))
}

/// What to run next: for each file, the vLLM command that serves it. vLLM answers a request only
/// when its `model` is a served name, so `--served-model-name` is the model the requests name and
/// `--model` the weights, which the user fills in.
fn hint(job: &str, export_dir: &Path, files: &[Waiting]) -> String {
    use crate::util::fsio::shell_word;
    let total: usize = files.iter().map(|f| f.waiting).sum();
    let mut text = format!(
        "job {job}: {total} request(s) wait in {} file(s) under {}. Run each with vLLM: --served-model-name must be the model the requests name, --model the weights to serve (a local path or a Hugging Face id):",
        files.len(),
        export_dir.display()
    );
    for file in files {
        if file.waiting < file.requests {
            text.push_str(&format!(
                "\n  # {} of its {} request(s) still wait",
                file.waiting, file.requests
            ));
        }
        text.push_str(&format!(
            "\n  python -m vllm.entrypoints.openai.run_batch -i {} -o {} --model <path or HF id of the weights> --served-model-name {}",
            shell_word(&file.file),
            shell_word(&results_path(&file.file)),
            shell_word(Path::new(&file.model))
        ));
    }
    let imports: Vec<String> = files
        .iter()
        .map(|f| format!("--import {}", shell_word(&results_path(&f.file))))
        .collect();
    text.push_str(&format!(
        "\nthen re-run this command with {}",
        imports.join(" ")
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_names_each_file_its_served_model_and_what_still_waits() {
        let files = [
            Waiting {
                file: PathBuf::from("out/export/author-r0-000-ab.jsonl"),
                model: "qwen/qwen3-32b".into(),
                requests: 12,
                waiting: 9,
            },
            Waiting {
                file: PathBuf::from("out dir/export/author-r0-001-cd.jsonl"),
                model: "llama-3.3-70b-versatile".into(),
                requests: 3,
                waiting: 3,
            },
        ];
        assert_eq!(
            hint("author-r0", Path::new("out/export"), &files),
            "job author-r0: 12 request(s) wait in 2 file(s) under out/export. Run each with vLLM: --served-model-name must be the model the requests name, --model the weights to serve (a local path or a Hugging Face id):\n  \
             # 9 of its 12 request(s) still wait\n  \
             python -m vllm.entrypoints.openai.run_batch -i out/export/author-r0-000-ab.jsonl -o out/export/author-r0-000-ab.results.jsonl --model <path or HF id of the weights> --served-model-name qwen/qwen3-32b\n  \
             python -m vllm.entrypoints.openai.run_batch -i 'out dir/export/author-r0-001-cd.jsonl' -o 'out dir/export/author-r0-001-cd.results.jsonl' --model <path or HF id of the weights> --served-model-name llama-3.3-70b-versatile\n\
             then re-run this command with --import out/export/author-r0-000-ab.results.jsonl --import 'out dir/export/author-r0-001-cd.results.jsonl'"
        );
    }
}
