//! The `file` backend: writes the pending requests as batch input JSONL for another engine
//! (vLLM `run-batch`, a cluster job, a provider's console) and ingests that engine's output JSONL
//! given with `--import`, matching lines by custom_id to what was exported.

use super::ingest::{ingest_file, NamedBadLines};
use super::journal::{Journal, Stage, Submission};
use super::{request_file, BatchError, Request, Runner};
use std::collections::BTreeMap;

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

    pub fn run(mut self, pending: &[&Request]) -> Result<(), BatchError> {
        let mut journal = Journal::load(&self.runner.state.journal_dir(), &self.job)?;
        let mut exported: BTreeMap<String, String> = BTreeMap::new();
        for i in 0..journal.submissions.len() {
            if journal.submissions[i].stage != Stage::Exported {
                continue;
            }
            let keys = self.keys(&journal.submissions[i])?;
            for path in self.runner.options.imports.clone() {
                self.import(&path, &keys)?;
            }
            if keys.iter().all(|(id, h)| self.runner.cache.contains(id, h)) {
                journal.submissions[i].stage = Stage::Imported;
                journal.save("collected")?;
            } else {
                exported.extend(keys);
            }
        }
        let uncovered: Vec<&Request> = pending
            .iter()
            .copied()
            .filter(|r| {
                let hash = r.body_hash();
                !self.runner.cache.contains(&r.custom_id, hash)
                    && exported.get(&r.custom_id).map(String::as_str) != Some(hash)
            })
            .collect();
        if !uncovered.is_empty() {
            self.export(&mut journal, &uncovered)?;
        }
        let waiting: Vec<_> = journal
            .submissions
            .iter()
            .filter(|s| s.stage == Stage::Exported)
            .collect();
        if !waiting.is_empty() {
            let dir = self.runner.state.export_dir();
            self.runner.printer.note(format!(
                "job {}: {} request(s) wait in {} file(s) under {} — run them with your engine, e.g.\n  python -m vllm.entrypoints.openai.run_batch -i {}/<file> -o results.jsonl --model <model>\nthen re-run this command with --import results.jsonl",
                self.job,
                waiting.iter().map(|s| s.requests).sum::<usize>(),
                waiting.len(),
                dir.display(),
                dir.display()
            ));
        }
        Ok(())
    }

    fn keys(&self, sub: &Submission) -> Result<BTreeMap<String, String>, BatchError> {
        request_file::read_keys(&self.runner.state.root.join(&sub.input)).map_err(|source| {
            BatchError::ExportRead {
                job: self.job.clone(),
                source,
            }
        })
    }

    fn import(
        &mut self,
        path: &std::path::Path,
        keys: &BTreeMap<String, String>,
    ) -> Result<(), BatchError> {
        if let Err(source) = std::fs::metadata(path) {
            return Err(BatchError::ImportMissing {
                path: path.to_path_buf(),
                source,
            });
        }
        let source = format!("import:{}", path.display());
        let printer = self.runner.printer;
        let added = ingest_file(
            &mut self.runner.cache,
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
        )?
        .added;
        if added > 0 {
            self.runner.printer.note(format!(
                "job {}: imported {added} result(s) from {}",
                self.job,
                path.display()
            ));
        }
        Ok(())
    }

    fn export(&self, journal: &mut Journal, requests: &[&Request]) -> Result<(), BatchError> {
        let mut by_model: BTreeMap<&str, Vec<&Request>> = BTreeMap::new();
        for r in requests {
            by_model.entry(r.model()).or_default().push(r);
        }
        let export_dir = self.runner.state.export_dir();
        let io = |source: std::io::Error| BatchError::ExportWrite {
            dir: export_dir.clone(),
            source,
        };
        std::fs::create_dir_all(&export_dir).map_err(io)?;
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
            let name = sub.input.trim_start_matches("requests/").to_string();
            crate::fsio::write_atomic(&export_dir.join(name), text.as_bytes()).map_err(io)?;
            journal.save("exported")?;
        }
        Ok(())
    }
}
