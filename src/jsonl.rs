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
/// once (fsync, rename), so readers see the old file or the whole new one.
pub struct Writer {
    path: PathBuf,
    tmp: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
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
            file: std::io::BufWriter::with_capacity(1 << 20, file),
        })
    }

    pub fn push<T: Serialize>(&mut self, item: &T) -> Result<(), JsonlError> {
        serde_json::to_writer(&mut self.file, item)
            .map_err(std::io::Error::other)
            .and_then(|()| self.file.write_all(b"\n"))
            .map_err(|source| self.write_err(source))
    }

    pub fn commit(self) -> Result<(), JsonlError> {
        let path = self.path.clone();
        let write_err = |source| JsonlError::Write {
            path: path.clone(),
            source,
        };
        let file = self
            .file
            .into_inner()
            .map_err(|e| write_err(e.into_error()))?;
        file.sync_all().map_err(write_err)?;
        crate::fsio::commit_temp(&self.tmp, &self.path).map_err(write_err)
    }

    fn write_err(&self, source: std::io::Error) -> JsonlError {
        JsonlError::Write {
            path: self.path.clone(),
            source,
        }
    }
}
