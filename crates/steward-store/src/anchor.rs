//! The audit anchor: the newest `(seq, hash)` of the chain, kept in a file outside the
//! database. Deleting records from the *end* of a hash chain leaves a valid shorter chain;
//! the anchor makes that visible to `verify_audit`.
//!
//! Several processes may append to one database, so the file is updated under an exclusive
//! `flock(2)` and only ever moves forward (a larger `seq`). Format: one line, `SEQ HASH\n`.
//!
//! The anchor is created with the chain's first record and never again by an append: a chain
//! that has records and no anchor had its anchor removed (deleting it would otherwise hide a
//! cut end, as the next append would write a fresh one at the shortened head). Such a chain
//! does not verify (`anchor missing`) until the owner resets the anchor on purpose
//! (`steward audit anchor --reset`), which is itself an audit record
//! ([`crate::Store::reset_audit_anchor`]).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use steward_protocol::AuditRecord;

use crate::AuditVerification;

/// Reads the anchor: `Ok(None)` when the file does not exist yet or holds no `SEQ HASH` line.
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
/// `starts_chain` says the batch being anchored holds the chain's first record: only then is
/// a missing anchor file created; otherwise a missing file is an error (`NotFound`) and stays
/// missing, so `verify_audit` reports it.
pub fn advance(path: &Path, seq: u64, hash: &str, starts_chain: bool) -> std::io::Result<()> {
    let file = OpenOptions::new().read(true).write(true).create(starts_chain).truncate(false).mode(0o600).open(path)?;
    let _lock = Lock::exclusive(&file)?;
    let mut text = String::new();
    (&file).read_to_string(&mut text)?;
    match parse(&text) {
        Some((known, _)) if known >= seq => return Ok(()),
        Some(_) => {}
        // Emptied or garbled: as good as removed, so it is not rewritten at the head either.
        None if !starts_chain => {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "the audit anchor is empty or garbled"));
        }
        None => {}
    }
    file.set_len(0)?;
    (&file).seek(SeekFrom::Start(0))?;
    (&file).write_all(format!("{seq} {hash}\n").as_bytes())?;
    file.sync_data()
}

/// Sets the anchor to `(seq, hash)` whatever it held, creating the file if needed (the
/// deliberate reset behind [`crate::Store::reset_audit_anchor`]).
pub fn reset(path: &Path, seq: u64, hash: &str) -> std::io::Result<()> {
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(path)?;
    let _lock = Lock::exclusive(&file)?;
    file.set_len(0)?;
    (&file).seek(SeekFrom::Start(0))?;
    (&file).write_all(format!("{seq} {hash}\n").as_bytes())?;
    file.sync_data()
}

/// Compares a chain that verified on its own (`verdict` is `Valid`, `records` in chain
/// order) with the anchor at `path`: a chain with records but no anchor file is broken
/// (`anchor missing`), one that ends before the anchor's record lost its end (`removed`),
/// and one whose record at the anchor's `seq` has another hash was changed. An empty chain
/// without an anchor is a fresh store and valid.
///
/// Errors: the anchor file exists but cannot be read.
pub fn check(path: &Path, records: &[AuditRecord], verdict: AuditVerification) -> std::io::Result<AuditVerification> {
    let last = records.last().map_or(0, |r| r.seq);
    let Some((seq, hash)) = read(path)? else {
        if let Some(head) = records.last() {
            return Ok(AuditVerification::Broken {
                seq: last,
                id: head.id.clone(),
                problem: format!(
                    "anchor missing: the chain has {} records but the anchor {} does not exist or holds no `SEQ HASH` \
                     line (records cut off the end would go unnoticed); if it was removed on purpose, `steward audit \
                     anchor --reset` records that and anchors the chain's head",
                    records.len(),
                    path.display()
                ),
            });
        }
        return Ok(verdict);
    };
    if seq > last {
        return Ok(AuditVerification::Broken {
            seq: last + 1,
            id: String::new(),
            problem: format!(
                "removed: the chain ends at record {last}, but the anchor {} names record {seq} (records {} to {seq} \
                 are missing)",
                path.display(),
                last + 1
            ),
        });
    }
    if let Some(record) = records.iter().find(|r| r.seq == seq)
        && record.hash != hash
    {
        return Ok(AuditVerification::Broken {
            seq,
            id: record.id.clone(),
            problem: format!("changed: the hash differs from the anchor {}", path.display()),
        });
    }
    Ok(verdict)
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
        advance(&path, 5, "abc", true).unwrap();
        advance(&path, 3, "old", false).unwrap();
        assert_eq!(read(&path).unwrap(), Some((5, "abc".to_string())));
        advance(&path, 6, "def", false).unwrap();
        assert_eq!(read(&path).unwrap(), Some((6, "def".to_string())));
    }

    #[test]
    fn a_removed_anchor_is_not_recreated_by_a_later_append_only_by_a_reset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.anchor");
        advance(&path, 1, "first", true).unwrap();
        std::fs::remove_file(&path).unwrap();
        let err = advance(&path, 2, "second", false).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
        assert_eq!(read(&path).unwrap(), None);
        reset(&path, 2, "second").unwrap();
        assert_eq!(read(&path).unwrap(), Some((2, "second".to_string())));
        reset(&path, 1, "back").unwrap();
        assert_eq!(read(&path).unwrap(), Some((1, "back".to_string())));
        // Emptied instead of removed: not rewritten by an append either.
        std::fs::write(&path, "").unwrap();
        let err = advance(&path, 3, "third", false).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
        assert_eq!(read(&path).unwrap(), None);
    }
}
