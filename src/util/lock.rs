//! One process per out dir: a lock file holding the owner's pid. A second `saseval-gen` on the
//! same out dir is refused; a lock left by a dead process is taken over.

use crate::ui::Printer;
use crate::util::fsio;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another saseval-gen (pid {pid}) is working in {dir}: wait for it to finish, or use another --out. If no such process runs, delete {lock}")]
    Held {
        pid: u32,
        dir: PathBuf,
        lock: PathBuf,
    },
    #[error("cannot lock the out dir {dir}: {source}")]
    Io {
        dir: PathBuf,
        source: std::io::Error,
    },
}

pub struct OutLock {
    path: PathBuf,
}

impl OutLock {
    pub fn acquire(out_dir: &Path, printer: &Printer) -> Result<OutLock, LockError> {
        let path = out_dir.join(".saseval.lock");
        let io = |source| LockError::Io {
            dir: out_dir.to_path_buf(),
            source,
        };
        for _ in 0..3 {
            match fsio::create_exclusive(&path, std::process::id().to_string().as_bytes()) {
                Ok(()) => return Ok(OutLock { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let owner = std::fs::read_to_string(&path)
                        .ok()
                        .and_then(|s| s.trim().parse::<u32>().ok());
                    match owner {
                        Some(pid) if pid != std::process::id() && process_alive(pid) => {
                            return Err(LockError::Held {
                                pid,
                                dir: out_dir.to_path_buf(),
                                lock: path,
                            })
                        }
                        _ => {
                            printer.warn(format!(
                                "taking over the stale lock {} left by a process that is gone",
                                path.display()
                            ));
                            fsio::remove_if_present(&path).map_err(io)?;
                        }
                    }
                }
                Err(e) => return Err(io(e)),
            }
        }
        Err(io(std::io::Error::other(
            "the lock file keeps changing; another process is racing for it",
        )))
    }
}

impl Drop for OutLock {
    fn drop(&mut self) {
        let _ = fsio::remove_if_present(&self.path);
    }
}

fn process_alive(pid: u32) -> bool {
    let proc_root = Path::new("/proc");
    if proc_root.is_dir() {
        return proc_root.join(pid.to_string()).exists();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_in_same_dir_is_refused_while_owner_lives() {
        let dir = tempfile::tempdir().unwrap();
        let _first = OutLock::acquire(dir.path(), &crate::ui::Printer::default()).unwrap();
        // Pretend a live foreign process holds it: pid 1 always exists.
        std::fs::write(dir.path().join(".saseval.lock"), "1").unwrap();
        assert!(matches!(
            OutLock::acquire(dir.path(), &crate::ui::Printer::default()),
            Err(LockError::Held { pid: 1, .. })
        ));
    }

    #[test]
    fn stale_lock_of_dead_pid_is_taken_over_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".saseval.lock"), "999999999").unwrap();
        let lock = OutLock::acquire(dir.path(), &crate::ui::Printer::default()).unwrap();
        let owner = std::fs::read_to_string(dir.path().join(".saseval.lock")).unwrap();
        assert_eq!(owner, std::process::id().to_string());
        drop(lock);
        assert!(!dir.path().join(".saseval.lock").exists());
    }
}
