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
//!
//! # When the anchor reaches the disk
//!
//! A decision's audit record is durable before its action runs because its database commit
//! is forced to disk; the anchor needs no disk sync of its own for that. The store's writer
//! moves the anchor only to records whose commit is already durable, right after that
//! commit, with a plain `write` ([`advance`]): the file is current for every reader on the
//! machine at once, so a tail cut from the database while the machine runs is detected from
//! the next record on. It is forced to disk ([`sync`]) when it is created, at every
//! [`crate::Store::flush`] (the end of each run) and at least every
//! [`SYNC_INTERVAL`] while it moves. What a power loss can cost is therefore bounded: the
//! anchor on disk may lag the chain by the records of the runs still going and of at most
//! [`SYNC_INTERVAL`] — it never names a record that is not durable, so it never reports a
//! false `removed` — and those lagging records are still covered by the chain's own hashes
//! (a changed, removed or reordered record anywhere before the chain's end is reported) and
//! by the database's durable commits; only a deliberate cut of exactly that unsynced end,
//! right after a power loss, would go unnoticed. The file is rewritten in place (the new line
//! at offset 0, then the length set), never emptied first, so a crash mid-update leaves the
//! old or the new line, not an empty file that would read as `anchor missing`.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
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

/// Longest time the anchor moves without being forced to disk (see the module's
/// documentation).
pub const SYNC_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);

/// Moves the anchor forward to `(seq, hash)` unless it already points at a later record:
/// `Ok(true)` when the file was rewritten. `starts_chain` says the record being anchored is
/// the chain's first or follows it in the same commit: only then is a missing anchor file
/// created (and forced to disk with its directory entry, as an anchor lost to a power loss
/// would read as `anchor missing`); otherwise a missing file is an error (`NotFound`) and
/// stays missing, so `verify_audit` reports it. The new line is written without a disk sync
/// ([`sync`] forces it).
pub fn advance(path: &Path, seq: u64, hash: &str, starts_chain: bool) -> std::io::Result<bool> {
    let file = OpenOptions::new().read(true).write(true).create(starts_chain).truncate(false).mode(0o600).open(path)?;
    let _lock = Lock::exclusive(&file)?;
    let mut text = String::new();
    (&file).read_to_string(&mut text)?;
    let created = text.is_empty();
    match parse(&text) {
        Some((known, _)) if known >= seq => return Ok(false),
        Some(_) => {}
        // Emptied or garbled: as good as removed, so it is not rewritten at the head either.
        None if !starts_chain => {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "the audit anchor is empty or garbled"));
        }
        None => {}
    }
    write_line(&file, seq, hash, text.len())?;
    if created {
        file.sync_data()?;
        sync_parent(path)?;
    }
    Ok(true)
}

/// Forces the anchor file to disk (`fdatasync`). A missing file is left missing (nothing to
/// sync; `verify_audit` reports it).
pub fn sync(path: &Path) -> std::io::Result<()> {
    match File::open(path) {
        Ok(file) => file.sync_data(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes `SEQ HASH\n` at offset 0 of the file of `old_len` bytes, then cuts it to that line
/// when it was longer (never empty between). A later record's line is never shorter, so the
/// file is cut only after a reset or garbling: a cut to the same length would still change the
/// file's inode, a journal write of its own on every move.
fn write_line(file: &File, seq: u64, hash: &str, old_len: usize) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let line = format!("{seq} {hash}\n");
    file.write_all_at(line.as_bytes(), 0)?;
    if line.len() < old_len {
        file.set_len(line.len() as u64)?;
    }
    Ok(())
}

/// Forces the directory entry of a new file to disk.
fn sync_parent(path: &Path) -> std::io::Result<()> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => File::open(dir)?.sync_all(),
        None => File::open(".")?.sync_all(),
    }
}

/// Sets the anchor to `(seq, hash)` whatever it held, creating the file if needed (the
/// deliberate reset behind [`crate::Store::reset_audit_anchor`]).
pub fn reset(path: &Path, seq: u64, hash: &str) -> std::io::Result<()> {
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(path)?;
    let _lock = Lock::exclusive(&file)?;
    let old_len = usize::try_from(file.metadata()?.len()).unwrap_or(usize::MAX);
    write_line(&file, seq, hash, old_len)?;
    file.sync_data()?;
    sync_parent(path)
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

/// An exclusive lock (`flock` on Unix, through [`File::lock`]) on a file of its own (created
/// with mode 0600), held until dropped.
pub struct FileLock(File);

impl FileLock {
    /// Opens (creating) `path` and locks it exclusively, waiting for another holder.
    pub fn acquire(path: &Path) -> std::io::Result<FileLock> {
        let file = Self::open(path)?;
        file.lock()?;
        Ok(FileLock(file))
    }

    /// Opens (creating) `path` and locks it exclusively if nobody holds it: `Ok(None)` when
    /// another holder has it (then [`FileLock::acquire`] waits for it).
    pub fn try_acquire(path: &Path) -> std::io::Result<Option<FileLock>> {
        let file = Self::open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(FileLock(file))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(error)) => Err(error),
        }
    }

    fn open(path: &Path) -> std::io::Result<File> {
        OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(path)
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlocking first says so.
        let _ = self.0.unlock();
    }
}

/// An exclusive lock on an open file ([`File::lock`]), held until dropped.
struct Lock<'a>(&'a File);

impl<'a> Lock<'a> {
    fn exclusive(file: &'a File) -> std::io::Result<Self> {
        file.lock()?;
        Ok(Lock(file))
    }
}

impl Drop for Lock<'_> {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `try_acquire` takes a free lock and says `None` while another descriptor holds it
    /// (`flock` locks belong to the open file, so a second open in one process conflicts too).
    #[test]
    fn try_acquire_does_not_wait_for_a_held_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.open-lock");
        let held = FileLock::try_acquire(&path).unwrap().expect("a free lock is taken");
        assert!(FileLock::try_acquire(&path).unwrap().is_none());
        drop(held);
        assert!(FileLock::try_acquire(&path).unwrap().is_some());
    }

    #[test]
    fn the_anchor_only_moves_forward() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.anchor");
        assert_eq!(read(&path).unwrap(), None);
        assert!(advance(&path, 5, "abc", true).unwrap());
        assert!(!advance(&path, 3, "old", false).unwrap());
        assert_eq!(read(&path).unwrap(), Some((5, "abc".to_string())));
        advance(&path, 6, "def", false).unwrap();
        assert_eq!(read(&path).unwrap(), Some((6, "def".to_string())));
        // A longer line, then a reset to a shorter one: the file holds exactly the newest line.
        advance(&path, 1_000_000, "ghi", false).unwrap();
        reset(&path, 7, "jk").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "7 jk\n");
        sync(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        sync(&path).unwrap();
        assert_eq!(read(&path).unwrap(), None);
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
