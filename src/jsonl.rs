//! Reading and writing the pipeline's JSONL side files (authored, repaired, rejects) with errors
//! that name the file and line, and atomic replacement on write.

use serde::{de::DeserializeOwned, Serialize};
use std::io::BufRead;
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
    let write_err = |source| JsonlError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut bytes = Vec::new();
    for item in items {
        serde_json::to_writer(&mut bytes, item).map_err(|e| write_err(std::io::Error::other(e)))?;
        bytes.push(b'\n');
    }
    crate::fsio::write_atomic(path, &bytes).map_err(write_err)
}
