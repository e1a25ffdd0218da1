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

/// Bytes the streaming readers take from a file at a time.
pub const CHUNK_BYTES: usize = 8 << 20;

pub fn read<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, JsonlError> {
    let mut items = Vec::new();
    for_each(path, |item| {
        items.push(item);
        Ok::<_, JsonlError>(())
    })?;
    Ok(items)
}

/// Calls `each` with every record of `path`, in file order, holding one chunk of the file at a
/// time.
pub fn for_each<T: DeserializeOwned, E: From<JsonlError>>(
    path: &Path,
    mut each: impl FnMut(T) -> Result<(), E>,
) -> Result<(), E> {
    let mut reader = ChunkReader::open(path)?;
    loop {
        let chunk = reader.next_chunk(CHUNK_BYTES)?;
        if chunk.is_empty() {
            return Ok(());
        }
        for line in chunk {
            each(line.parse(path)?)?;
        }
    }
}

/// Where a record's line lies in its file, to read it back: its byte offset and length (no
/// newline) and its 1-based line number for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub offset: u64,
    pub len: u32,
    pub line: u32,
}

/// One non-blank line as [`ChunkReader`] read it.
#[derive(Debug)]
pub struct RawLine {
    pub span: Span,
    pub bytes: Vec<u8>,
}

impl RawLine {
    /// Parses the line into a record, which may borrow from it.
    pub fn parse<'a, T: serde::Deserialize<'a>>(&'a self, path: &Path) -> Result<T, JsonlError> {
        parse_line(path, self.span.line, &self.bytes)
    }

    /// The span of `part`, a slice of this line's bytes (a value borrowed while parsing it), so
    /// that value can be read back alone; `None` when `part` lies elsewhere.
    pub fn span_of(&self, part: &[u8]) -> Option<Span> {
        let start = (part.as_ptr() as usize).checked_sub(self.bytes.as_ptr() as usize)?;
        (start + part.len() <= self.bytes.len()).then(|| Span {
            offset: self.span.offset + start as u64,
            len: part.len() as u32,
            line: self.span.line,
        })
    }
}

fn parse_line<'a, T: serde::Deserialize<'a>>(
    path: &Path,
    line: u32,
    bytes: &'a [u8],
) -> Result<T, JsonlError> {
    serde_json::from_slice(bytes).map_err(|e| JsonlError::Parse {
        path: path.to_path_buf(),
        line: line as usize,
        message: e.to_string(),
    })
}

fn open_file(path: &Path) -> Result<std::fs::File, JsonlError> {
    std::fs::File::open(path).map_err(|source| JsonlError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Whether a line holds nothing but whitespace (such lines are skipped).
fn is_blank(bytes: &[u8]) -> bool {
    let trimmed = bytes.trim_ascii();
    match trimmed.first() {
        None => true,
        Some(first) if first.is_ascii() => false,
        Some(_) => std::str::from_utf8(trimmed).is_ok_and(|text| text.trim().is_empty()),
    }
}

/// Reads a JSONL file a chunk of non-blank lines at a time, each with its [`Span`], so a caller
/// can parse a chunk on every core, keep only what it needs of each record and read the rest
/// back later ([`SpanReader`]); memory stays one chunk, whatever the file's size.
pub struct ChunkReader {
    path: PathBuf,
    reader: std::io::BufReader<std::fs::File>,
    offset: u64,
    line: u32,
}

impl ChunkReader {
    pub fn open(path: &Path) -> Result<Self, JsonlError> {
        let file = open_file(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            reader: std::io::BufReader::with_capacity(1 << 20, file),
            offset: 0,
            line: 0,
        })
    }

    /// The next lines, about `bytes` of them (at least one line); empty at the end of the file.
    pub fn next_chunk(&mut self, bytes: usize) -> Result<Vec<RawLine>, JsonlError> {
        let mut chunk = Vec::new();
        let mut taken = 0;
        while taken < bytes {
            let mut line = Vec::new();
            let read =
                self.reader
                    .read_until(b'\n', &mut line)
                    .map_err(|source| JsonlError::Read {
                        path: self.path.clone(),
                        source,
                    })?;
            if read == 0 {
                break;
            }
            let offset = self.offset;
            self.offset += read as u64;
            self.line = self.line.checked_add(1).ok_or_else(|| self.too_long())?;
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            if is_blank(&line) {
                continue;
            }
            taken += line.len();
            let len = u32::try_from(line.len()).map_err(|_| self.too_long())?;
            chunk.push(RawLine {
                span: Span {
                    offset,
                    len,
                    line: self.line,
                },
                bytes: line,
            });
        }
        Ok(chunk)
    }

    fn too_long(&self) -> JsonlError {
        JsonlError::Parse {
            path: self.path.clone(),
            line: self.line as usize,
            message: "more lines, or a longer line, than a pipeline file can have (4 GiB)".into(),
        }
    }
}

/// Reads single records back from a JSONL file by the [`Span`] a [`ChunkReader`] gave them.
pub struct SpanReader {
    path: PathBuf,
    file: std::fs::File,
}

impl SpanReader {
    pub fn open(path: &Path) -> Result<Self, JsonlError> {
        let file = open_file(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
        })
    }

    pub fn read<T: DeserializeOwned>(&self, span: Span) -> Result<T, JsonlError> {
        let mut bytes = vec![0; span.len as usize];
        crate::util::fsio::read_exact_at(&self.file, &mut bytes, span.offset).map_err(
            |source| JsonlError::Read {
                path: self.path.clone(),
                source,
            },
        )?;
        parse_line(&self.path, span.line, &bytes)
    }
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
/// without a commit removes its temp file. A large file is synced ahead as it grows
/// ([`crate::util::fsio::SyncAhead`]), so the commit does not wait for all of it to reach the disk.
pub struct Writer {
    path: PathBuf,
    tmp: PathBuf,
    /// None once committed.
    file: Option<std::io::BufWriter<crate::util::fsio::SyncAhead>>,
}

impl Writer {
    pub fn create(path: &Path) -> Result<Writer, JsonlError> {
        let tmp = crate::util::fsio::temp_path(path);
        let file = crate::util::fsio::create_temp(&tmp).map_err(|source| JsonlError::Write {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Writer {
            path: path.to_path_buf(),
            tmp,
            file: Some(std::io::BufWriter::with_capacity(
                1 << 20,
                crate::util::fsio::SyncAhead::new(file, crate::util::fsio::SYNC_AHEAD_BYTES),
            )),
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
            .and_then(crate::util::fsio::SyncAhead::finish)
            .and_then(|f| f.sync_all())
            .and_then(|()| crate::util::fsio::commit_temp(&self.tmp, &self.path));
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
            let _ = crate::util::fsio::remove_if_present(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_hold_every_record_read_would_and_each_span_reads_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("items.jsonl");
        let text = "{\"n\":1}\n\n  \n\u{a0}\n{\"n\":\"é\"}\r\n{\"n\":3}";
        std::fs::write(&path, text).unwrap();
        let expected: Vec<serde_json::Value> = read(&path).unwrap();
        let mut reader = ChunkReader::open(&path).unwrap();
        let back = SpanReader::open(&path).unwrap();
        let mut seen = Vec::new();
        loop {
            let chunk = reader.next_chunk(1).unwrap();
            if chunk.is_empty() {
                break;
            }
            assert_eq!(chunk.len(), 1, "a chunk of one byte still holds one line");
            for line in chunk {
                let record: serde_json::Value = line.parse(&path).unwrap();
                assert_eq!(back.read::<serde_json::Value>(line.span).unwrap(), record);
                seen.push((line.span.line, record));
            }
        }
        let lines: Vec<u32> = seen.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, [1, 5, 6]);
        let records: Vec<serde_json::Value> = seen.into_iter().map(|(_, r)| r).collect();
        assert_eq!(records, expected);
    }

    #[test]
    fn a_bad_line_is_named_by_its_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("items.jsonl");
        std::fs::write(&path, "1\n\nnot json\n").unwrap();
        let chunk = ChunkReader::open(&path)
            .unwrap()
            .next_chunk(1 << 20)
            .unwrap();
        let error = chunk[1].parse::<u32>(&path).unwrap_err().to_string();
        assert!(error.contains("items.jsonl line 3"), "{error}");
    }

    #[cfg(unix)]
    #[test]
    fn a_writer_does_not_follow_a_link_planted_at_its_temp_name() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "keep me").unwrap();
        let path = dir.path().join("rejects.jsonl");
        std::os::unix::fs::symlink(&victim, crate::util::fsio::temp_path(&path)).unwrap();
        write(&path, &[1, 2]).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "1\n2\n");
    }

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
