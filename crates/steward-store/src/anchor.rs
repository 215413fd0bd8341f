//! The audit anchor: the newest `(seq, hash)` of the chain, kept in a file outside the
//! database. Deleting records from the *end* of a hash chain leaves a valid shorter chain;
//! the anchor makes that visible to `verify_audit`.
//!
//! Several processes may append to one database, so the file is updated under an exclusive
//! `flock(2)` and only ever moves forward (a larger `seq`). Format: one line, `SEQ HASH\n`.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// Reads the anchor: `Ok(None)` when the file does not exist yet.
pub fn read(path: &Path) -> std::io::Result<Option<(u64, String)>> {
    let mut text = String::new();
    match File::open(path) {
        Ok(mut file) => {
            file.read_to_string(&mut text)?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    }
    Ok(parse(&text))
}

fn parse(text: &str) -> Option<(u64, String)> {
    let (seq, hash) = text.trim().split_once(' ')?;
    Some((seq.parse().ok()?, hash.to_string()))
}

/// Moves the anchor forward to `(seq, hash)` unless it already points at a later record.
pub fn advance(path: &Path, seq: u64, hash: &str) -> std::io::Result<()> {
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(path)?;
    let _lock = Lock::exclusive(&file)?;
    let mut text = String::new();
    (&file).read_to_string(&mut text)?;
    if parse(&text).is_some_and(|(known, _)| known >= seq) {
        return Ok(());
    }
    file.set_len(0)?;
    (&file).seek(SeekFrom::Start(0))?;
    (&file).write_all(format!("{seq} {hash}\n").as_bytes())?;
    file.sync_data()
}

/// An exclusive `flock` on a file of its own (created with mode 0600), held until dropped.
/// Blocks until the lock is free.
pub struct FileLock(File);

impl FileLock {
    /// Opens (creating) `path` and locks it exclusively.
    pub fn acquire(path: &Path) -> std::io::Result<FileLock> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(path)?;
        // SAFETY: flock on an open descriptor we own; released when the file is closed.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(FileLock(file))
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // SAFETY: unlocking the descriptor locked in `acquire`.
        unsafe {
            libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

/// An exclusive `flock` held until dropped.
struct Lock<'a>(&'a File);

impl<'a> Lock<'a> {
    fn exclusive(file: &'a File) -> std::io::Result<Self> {
        // SAFETY: flock on an open descriptor we own; released in Drop.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Lock(file))
    }
}

impl Drop for Lock<'_> {
    fn drop(&mut self) {
        // SAFETY: unlocking the descriptor locked in `exclusive`.
        unsafe {
            libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_anchor_only_moves_forward() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.anchor");
        assert_eq!(read(&path).unwrap(), None);
        advance(&path, 5, "abc").unwrap();
        advance(&path, 3, "old").unwrap();
        assert_eq!(read(&path).unwrap(), Some((5, "abc".to_string())));
        advance(&path, 6, "def").unwrap();
        assert_eq!(read(&path).unwrap(), Some((6, "def".to_string())));
    }
}
