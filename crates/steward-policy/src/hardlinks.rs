//! Secret files under other names (SPEC S1): a hard link shares its file with every other
//! name of it, so `notes.txt` linked to `.env` *is* `.env`, whatever [`is_secret_path`] says
//! about the name `notes.txt`. The same holds for a file matched by `deny_path`.
//!
//! A regular file with a single name (`st_nlink == 1`) cannot be another secret file's name,
//! so only files with several names are compared. They are compared by `(st_dev, st_ino)`
//! with every file that has several names and a secret name somewhere the scan looks: the
//! whole workspace (nothing skipped, `.git` and dependency folders included, links not
//! followed) and the usual secret files of the home directory (`$HOME/.ssh/*`, `.aws/*`,
//! `.docker/*`, `.kube/*`, and the home's own secret-named entries such as `.netrc`, `.env`).
//!
//! The scan runs on the first multiply-linked file a check meets and again whenever a check
//! meets one the last scan did not see (it was linked after the scan), so a link made during
//! a run is caught by the next check. Every multiply-linked file a scan sees is remembered
//! with its verdict; a scan stops after [`MAX_SCAN_ENTRIES`] entries, and then a file it did
//! not see counts as secret (fail closed). A verdict is kept for the life of the
//! [`crate::Workspace`] (one run): a multiply-linked file renamed to a secret name after the
//! scan saw it (`mv backup.txt .env` while `copy.txt` still links it) is noticed by the next
//! run's workspace.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use steward_secrets::is_secret_path;

/// Most entries one scan looks at (workspace and home together) before it stops.
pub const MAX_SCAN_ENTRIES: usize = 200_000;

/// Home sub-folders whose entries are looked at (one level deep, plus their files).
const HOME_SECRET_DIRS: &[&str] = &[".ssh", ".aws", ".docker", ".kube", ".gnupg", ".config/gh"];

/// A file's identity: device and inode number.
type FileId = (u64, u64);

/// What one scan found.
#[derive(Debug, Default)]
struct Scan {
    /// Every multiply-linked regular file seen → the strictest verdict over its names.
    seen: HashMap<FileId, LinkVerdict>,
    /// The scan stopped at [`MAX_SCAN_ENTRIES`].
    truncated: bool,
}

/// The verdict on one file, in increasing strictness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LinkVerdict {
    /// One name, or several names none of which is secret or denied.
    Plain,
    /// Another name of a file matched by `deny_path`.
    Denied,
    /// Several names, and the scan stopped before it could compare them all.
    Unknown,
    /// Another name of a secret file.
    Secret,
}

/// Which names of the workspace `deny_path` matches (workspace-relative paths of files).
pub(crate) type DenyCheck<'a> = &'a dyn Fn(&Path) -> bool;

/// The hard-link index of one workspace (held by [`crate::Workspace`]).
#[derive(Debug)]
pub(crate) struct SecretLinks {
    root: PathBuf,
    home: Option<PathBuf>,
    scan: Mutex<Option<Scan>>,
}

impl SecretLinks {
    /// An index for the canonical workspace `root`; the home directory is `$HOME` when set.
    pub(crate) fn new(root: PathBuf) -> SecretLinks {
        let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        SecretLinks { root, home, scan: Mutex::new(None) }
    }

    /// The verdict for the file at `abs` (links not followed: pass the real path); `denied`
    /// says which workspace names `deny_path` matches. Anything that is not a regular file
    /// with several names is [`LinkVerdict::Plain`].
    pub(crate) fn verdict(&self, abs: &Path, denied: DenyCheck<'_>) -> LinkVerdict {
        match std::fs::symlink_metadata(abs) {
            Ok(meta) => self.verdict_for(&meta, denied),
            Err(_) => LinkVerdict::Plain,
        }
    }

    /// [`SecretLinks::verdict`] for metadata already at hand (a walker's entry).
    pub(crate) fn verdict_for(&self, meta: &std::fs::Metadata, denied: DenyCheck<'_>) -> LinkVerdict {
        if !meta.is_file() || meta.nlink() < 2 {
            return LinkVerdict::Plain;
        }
        let id = (meta.dev(), meta.ino());
        let mut slot = self.scan.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(known) = slot.as_ref().and_then(|s| s.seen.get(&id)) {
            return *known;
        }
        let fresh = scan(&self.root, self.home.as_deref(), denied);
        let verdict = match fresh.seen.get(&id) {
            Some(known) => *known,
            None if fresh.truncated => LinkVerdict::Unknown,
            // Not under the workspace or the home's secret folders: no secret name there.
            None => LinkVerdict::Plain,
        };
        *slot = Some(fresh);
        verdict
    }
}

/// Walks the workspace and the home's secret places once, recording every multiply-linked
/// regular file and whether one of its names is secret.
fn scan(root: &Path, home: Option<&Path>, denied: DenyCheck<'_>) -> Scan {
    let mut out = Scan::default();
    let mut budget = MAX_SCAN_ENTRIES;
    walk_into(&mut out, root, root, &mut budget, None, denied);
    if let Some(home) = home {
        let nothing_denied: DenyCheck<'_> = &|_| false;
        // The home's own entries (one level: `.netrc`, `.env`, `.git-credentials`, …).
        walk_into(&mut out, home, home, &mut budget, Some(1), nothing_denied);
        for dir in HOME_SECRET_DIRS {
            walk_into(&mut out, home, &home.join(dir), &mut budget, Some(3), nothing_denied);
        }
    }
    out
}

fn walk_into(
    out: &mut Scan,
    base: &Path,
    start: &Path,
    budget: &mut usize,
    depth: Option<usize>,
    denied: DenyCheck<'_>,
) {
    if !start.is_dir() {
        return;
    }
    let walk = ignore::WalkBuilder::new(start).standard_filters(false).follow_links(false).max_depth(depth).build();
    for entry in walk {
        if *budget == 0 {
            out.truncated = true;
            return;
        }
        *budget -= 1;
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if meta.nlink() < 2 {
            continue;
        }
        let verdict = match entry.path().strip_prefix(base) {
            Ok(rel) if is_secret_path(rel) => LinkVerdict::Secret,
            Ok(rel) if denied(rel) => LinkVerdict::Denied,
            _ => LinkVerdict::Plain,
        };
        let known = out.seen.entry((meta.dev(), meta.ino())).or_insert(LinkVerdict::Plain);
        *known = (*known).max(verdict);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_name_of_a_secret_file_is_secret_and_single_names_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join(".env"), "TOKEN=abc\n").unwrap();
        std::fs::write(root.join("plain.txt"), "hello\n").unwrap();
        std::fs::write(root.join("shared.txt"), "hello\n").unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::hard_link(root.join("shared.txt"), root.join("sub/copy.txt")).unwrap();
        std::fs::create_dir_all(root.join("private")).unwrap();
        std::fs::write(root.join("private/db.txt"), "rows\n").unwrap();
        std::fs::hard_link(root.join("private/db.txt"), root.join("rows.txt")).unwrap();
        let links = SecretLinks { root: root.clone(), home: None, scan: Mutex::new(None) };
        let denied: DenyCheck<'_> = &|rel| rel.starts_with("private");
        assert_eq!(links.verdict(&root.join("plain.txt"), denied), LinkVerdict::Plain);
        assert_eq!(links.verdict(&root.join("sub/copy.txt"), denied), LinkVerdict::Plain);
        assert_eq!(links.verdict(&root.join("rows.txt"), denied), LinkVerdict::Denied);
        // Linked after the first scan: the next check sees it.
        std::fs::hard_link(root.join(".env"), root.join("sub/notes.txt")).unwrap();
        assert_eq!(links.verdict(&root.join("sub/notes.txt"), denied), LinkVerdict::Secret);
        assert_eq!(links.verdict(&root.join(".env"), denied), LinkVerdict::Secret);
    }

    #[test]
    fn a_link_to_a_secret_file_of_the_home_is_secret() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (root, home) = (base.join("ws"), base.join("home"));
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(home.join(".ssh/id_ed25519"), "key\n").unwrap();
        std::fs::write(home.join(".netrc"), "machine x password y\n").unwrap();
        std::fs::hard_link(home.join(".ssh/id_ed25519"), root.join("a.txt")).unwrap();
        std::fs::hard_link(home.join(".netrc"), root.join("b.txt")).unwrap();
        let links = SecretLinks { root: root.clone(), home: Some(home), scan: Mutex::new(None) };
        assert_eq!(links.verdict(&root.join("a.txt"), &|_| false), LinkVerdict::Secret);
        assert_eq!(links.verdict(&root.join("b.txt"), &|_| false), LinkVerdict::Secret);
    }
}
