//! Reading and writing the pipeline's JSONL side files (authored, repaired, rejects) with errors
//! that name the file and line, and atomic replacement on write.

use serde::{de::DeserializeOwned, Serialize};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum JsonlError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} line {line}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub fn read<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, JsonlError> {
    let read_err = |source| JsonlError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    let mut items = Vec::new();
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(read_err)?;
        if line.trim().is_empty() {
            continue;
        }
        items.push(serde_json::from_str(&line).map_err(|e| JsonlError::Parse {
            path: path.to_path_buf(),
            line: n + 1,
            message: e.to_string(),
        })?);
    }
    Ok(items)
}

pub fn write<T: Serialize>(path: &Path, items: &[T]) -> Result<(), JsonlError> {
    let mut writer = Writer::create(path)?;
    for item in items {
        writer.push(item)?;
    }
    writer.commit()
}

/// Streams records into a temp file beside `path`; `commit` makes them the file's content at
/// once (fsync, rename), so readers see the old file or the whole new one. A writer dropped
/// without a commit removes its temp file.
pub struct Writer {
    path: PathBuf,
    tmp: PathBuf,
    /// None once committed.
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl Writer {
    pub fn create(path: &Path) -> Result<Writer, JsonlError> {
        let tmp = crate::fsio::temp_path(path);
        let file = std::fs::File::create(&tmp).map_err(|source| JsonlError::Write {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Writer {
            path: path.to_path_buf(),
            tmp,
            file: Some(std::io::BufWriter::with_capacity(1 << 20, file)),
        })
    }

    pub fn push<T: Serialize>(&mut self, item: &T) -> Result<(), JsonlError> {
        let Some(file) = self.file.as_mut() else {
            return Err(self.write_err(std::io::Error::other("already committed")));
        };
        let written = serde_json::to_writer(&mut *file, item)
            .map_err(std::io::Error::other)
            .and_then(|()| file.write_all(b"\n"));
        written.map_err(|source| self.write_err(source))
    }

    pub fn commit(mut self) -> Result<(), JsonlError> {
        let Some(file) = self.file.take() else {
            return Ok(());
        };
        let committed = file
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all())
            .and_then(|()| crate::fsio::commit_temp(&self.tmp, &self.path));
        committed.map_err(|source| self.write_err(source))
    }

    fn write_err(&self, source: std::io::Error) -> JsonlError {
        JsonlError::Write {
            path: self.path.clone(),
            source,
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_committed_writer_replaces_the_file_and_a_dropped_one_leaves_it_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("items.jsonl");
        write(&path, &[1, 2]).unwrap();
        let mut abandoned = Writer::create(&path).unwrap();
        abandoned.push(&3).unwrap();
        drop(abandoned);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "1\n2\n");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file is left behind"
        );
        let mut writer = Writer::create(&path).unwrap();
        writer.push(&"x").unwrap();
        writer.commit().unwrap();
        assert_eq!(read::<String>(&path).unwrap(), ["x"]);
    }
}
