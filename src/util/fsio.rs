//! Durable file writes. Every state file and release file goes through here so that a crash at
//! any instant leaves either the old bytes or the new bytes, never a torn file.
//!
//! This is the one module that writes, truncates or removes files: `clippy.toml` disallows those
//! calls everywhere else, so that every write keeps the guarantees above.
#![allow(clippy::disallowed_methods)]

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically: temp file in the same folder, fsync, rename, fsync folder.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    require_file_name(path)?;
    let tmp = temp_path(path);
    {
        let mut file = create_temp(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    commit_temp(&tmp, path)
}

/// The temp file beside `path` that an atomic write fills before `commit_temp`.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    parent_dir(path).join(format!(".{name}.tmp-{}", std::process::id()))
}

/// Creates the temp file `tmp` afresh: whatever a crashed run (or anyone) left at that name,
/// a symlink included, is removed first, and the new file is created exclusively, so a write
/// never follows a link planted at the temp name.
pub fn create_temp(tmp: &Path) -> io::Result<File> {
    remove_if_present(tmp)?;
    OpenOptions::new().write(true).create_new(true).open(tmp)
}

/// Removes the file at `path`; one that is already gone is not an error.
pub fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates `path` exclusively with `bytes`, fsynced: fails with `AlreadyExists` when anything
/// is at that name, so two processes cannot both create it.
pub fn create_exclusive(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Cuts the file at `path` to its first `len` bytes and fsyncs it (a torn last line dropped).
pub fn truncate_durable(path: &Path, len: u64) -> io::Result<()> {
    let file = OpenOptions::new().write(true).open(path)?;
    file.set_len(len)?;
    file.sync_all()
}

/// Renames a fully written and fsynced temp file over `path`, then fsyncs the folder.
pub fn commit_temp(tmp: &Path, path: &Path) -> io::Result<()> {
    require_file_name(path)?;
    fs::rename(tmp, path)?;
    sync_dir(parent_dir(path))
}

/// Reads a small input file (config, template) whole, refusing anything that is not a regular
/// file or is larger than `limit` bytes, so that `/dev/zero` or a huge file fails at once
/// instead of filling memory.
pub fn read_capped(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let file = File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is not a regular file",
        ));
    }
    let too_large = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "it is larger than the {} the tool reads",
                human_bytes(limit)
            ),
        )
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KB", n >> 10),
        n => format!("{n} bytes"),
    }
}

/// Where the first invalid UTF-8 byte of some text sits (1-based; columns count characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utf8Position {
    pub line: usize,
    pub column: usize,
    pub byte: u8,
}

impl std::fmt::Display for Utf8Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}, column {} (byte 0x{:02X})",
            self.line, self.column, self.byte
        )
    }
}

/// The position in `bytes` of the invalid byte that `error` (from decoding `bytes`) found.
pub fn utf8_error_position(bytes: &[u8], error: &std::str::Utf8Error) -> Utf8Position {
    let valid = &bytes[..error.valid_up_to()];
    let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
    let line_start = valid
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |nl| nl + 1);
    let column = String::from_utf8_lossy(&valid[line_start..])
        .chars()
        .count()
        + 1;
    let byte = bytes.get(error.valid_up_to()).copied().unwrap_or(0);
    Utf8Position { line, column, byte }
}

/// `path` as one shell word, quoted only when it needs to be, for commands that error messages
/// tell the user to run.
pub fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if plain {
        text
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// Appends `bytes` to `path` (created if missing) and fsyncs before returning.
pub fn append_durable(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(bytes)?;
    file.sync_data()
}

/// Bytes a [`SyncAhead`] file takes between two early syncs.
pub const SYNC_AHEAD_BYTES: u64 = 16 << 20;

/// A file being written that fsyncs itself on a thread of its own every `every` bytes, so the
/// fsync that finally commits it finds little left to write: the disk writes while the caller
/// computes the next records. A 177 MB `authored.jsonl` otherwise waits 0.3–0.6 s at its
/// commit on this project's machines. The commit's own fsync stays the guarantee; an early
/// sync's error stops the writes and is returned, because Linux reports a failed writeback to
/// one fsync only.
pub struct SyncAhead {
    file: File,
    every: u64,
    written: u64,
    /// `written` when the last early sync was asked for.
    asked_at: u64,
    asked: u64,
    worker: Option<SyncWorker>,
}

struct SyncWorker {
    asks: std::sync::mpsc::SyncSender<()>,
    done: std::thread::JoinHandle<io::Result<()>>,
}

impl SyncAhead {
    pub fn new(file: File, every: u64) -> SyncAhead {
        SyncAhead {
            file,
            every: every.max(1),
            written: 0,
            asked_at: 0,
            asked: 0,
            worker: None,
        }
    }

    /// Early syncs asked for so far (one still running absorbs the asks made meanwhile).
    pub fn early_syncs(&self) -> u64 {
        self.asked
    }

    /// Waits for the early sync under way and returns the file, or the first early sync's
    /// error. The caller still fsyncs the file to commit it.
    pub fn finish(mut self) -> io::Result<File> {
        self.stop_worker()?;
        Ok(self.file)
    }

    fn stop_worker(&mut self) -> io::Result<()> {
        match self.worker.take() {
            Some(SyncWorker { asks, done }) => {
                drop(asks);
                done.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }
            None => Ok(()),
        }
    }

    fn ask_for_sync(&mut self) -> io::Result<()> {
        self.asked_at = self.written;
        if self.worker.is_none() {
            let file = self.file.try_clone()?;
            let (asks, asked) = std::sync::mpsc::sync_channel::<()>(1);
            let done = std::thread::Builder::new()
                .name("sync-ahead".into())
                .spawn(move || {
                    for () in asked {
                        file.sync_data()?;
                    }
                    Ok(())
                })?;
            self.worker = Some(SyncWorker { asks, done });
        }
        let Some(worker) = &self.worker else {
            return Ok(());
        };
        match worker.asks.try_send(()) {
            Ok(()) => {
                self.asked += 1;
                Ok(())
            }
            Err(std::sync::mpsc::TrySendError::Full(())) => Ok(()),
            Err(std::sync::mpsc::TrySendError::Disconnected(())) => {
                self.stop_worker()?;
                Err(io::Error::other("the early sync stopped without an error"))
            }
        }
    }
}

impl Write for SyncAhead {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let wrote = self.file.write(buf)?;
        self.written += wrote as u64;
        if self.written - self.asked_at >= self.every {
            self.ask_for_sync()?;
        }
        Ok(wrote)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Fsyncs a folder so that a rename or a new file inside it survives a power cut.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

fn require_file_name(path: &Path) -> io::Result<()> {
    match path.file_name() {
        Some(_) => Ok(()),
        None => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "path has no file name",
        )),
    }
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Reads exactly `buf.len()` bytes at `offset`, without moving the file's cursor.
#[cfg(unix)]
pub fn read_exact_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
pub fn read_exact_at(
    file: &std::fs::File,
    mut buf: &mut [u8],
    mut offset: u64,
) -> std::io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(file, buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole_content_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        write_atomic(&path, b"first version, long").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "temp file left behind");
    }

    #[test]
    fn append_adds_to_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        append_durable(&path, b"a\n").unwrap();
        append_durable(&path, b"b\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"a\nb\n");
    }

    #[test]
    fn a_sync_ahead_file_syncs_early_past_its_interval_and_keeps_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.jsonl");
        let mut file = SyncAhead::new(File::create(&path).unwrap(), 1000);
        let mut expected = Vec::new();
        for n in 0..500u32 {
            let line = format!("{{\"n\":{n}}}\n");
            file.write_all(line.as_bytes()).unwrap();
            expected.extend_from_slice(line.as_bytes());
        }
        assert!(
            file.early_syncs() > 0,
            "{} bytes past an interval of 1000 asked for no early sync",
            expected.len()
        );
        file.finish().unwrap().sync_all().unwrap();
        assert_eq!(fs::read(&path).unwrap(), expected);

        let small = dir.path().join("small.jsonl");
        let mut file = SyncAhead::new(File::create(&small).unwrap(), 1000);
        file.write_all(b"short\n").unwrap();
        assert_eq!(
            file.early_syncs(),
            0,
            "a file under its interval syncs only at its commit"
        );
        assert!(file.worker.is_none(), "and starts no thread");
        file.finish().unwrap();
        assert_eq!(fs::read(&small).unwrap(), b"short\n");
    }
}
