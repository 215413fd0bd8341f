//! The all-or-nothing writer for a validated multi-file change (SPEC X3).
//!
//! 1. Stage: every new content goes to a temporary file next to its target (`O_EXCL`, mode
//!    0600, then the target's permissions or 0644, `fsync`); missing parent folders of new
//!    files are created (and removed again on failure).
//! 2. Snapshot: the content of every changed or deleted file is saved for rollback.
//! 3. Check: every target still holds exactly the bytes that were validated (new files:
//!    nothing at the path), and is not hard-linked.
//! 4. Switch: changed files are renamed over, new files are linked into place (`link(2)`
//!    never clobbers), deleted files are renamed aside. If one step fails, the steps already
//!    done are reversed (from memory) before the error is returned.
//! 5. Clean up: the set-aside deleted files are removed.
//!
//! A failure in 1–3 leaves every target as it was.

use std::fs::{self, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::super::shared::{io_error, make_parents};
use super::super::{ToolContext, ToolError};
use super::Target;
use crate::rollback::{PatchedFile, sha256_hex};

/// A target being written.
struct Step<'a> {
    target: &'a Target,
    /// Staged new content (absent for deletions).
    tmp: Option<PathBuf>,
    /// Where a deleted file was set aside.
    aside: Option<PathBuf>,
}

/// Writes all `targets` or none; returns what rollback needs for each.
pub(super) fn commit(targets: &[Target], ctx: &ToolContext) -> Result<Vec<PatchedFile>, ToolError> {
    commit_with(targets, ctx, &mut |from, to| fs::rename(from, to))
}

/// [`commit`] with the rename used for changed and deleted files given (tests inject faults).
pub(super) fn commit_with(
    targets: &[Target],
    ctx: &ToolContext,
    rename: &mut dyn FnMut(&Path, &Path) -> io::Result<()>,
) -> Result<Vec<PatchedFile>, ToolError> {
    let mut created_dirs = Vec::new();
    let mut steps: Vec<Step<'_>> = Vec::with_capacity(targets.len());
    let result = prepare(targets, ctx, &mut steps, &mut created_dirs)
        .and_then(|records| switch(&mut steps, rename).inspect_err(|_| remove_snapshots(&records)).map(|()| records));
    for step in &steps {
        if let Some(tmp) = &step.tmp {
            let _ = fs::remove_file(tmp);
        }
    }
    if result.is_err() {
        for dir in created_dirs.iter().rev() {
            let _ = fs::remove_dir(dir);
        }
    } else {
        for step in &steps {
            if let Some(aside) = &step.aside {
                let _ = fs::remove_file(aside);
            }
        }
        sync_dirs(targets);
    }
    result
}

/// Steps 1–3: stage, snapshot, check. Pushes every staged step (so the caller can clean up).
fn prepare<'a>(
    targets: &'a [Target],
    ctx: &ToolContext,
    steps: &mut Vec<Step<'a>>,
    created_dirs: &mut Vec<PathBuf>,
) -> Result<Vec<PatchedFile>, ToolError> {
    for target in targets {
        let rel = &target.path.rel;
        if target.before.is_none() {
            created_dirs.extend(make_parents(ctx.workspace.root(), rel)?);
        }
        let tmp = match &target.after {
            Some(bytes) => {
                let mode = match &target.before {
                    Some(_) => {
                        fs::symlink_metadata(&target.path.abs).map_err(|e| io_error("inspect", rel, &e))?.permissions()
                    }
                    None => Permissions::from_mode(0o644),
                };
                Some(stage(&target.path.abs, rel, bytes, mode)?)
            }
            None => None,
        };
        steps.push(Step { target, tmp, aside: None });
    }
    // Re-check every target right before its snapshot is taken (a snapshot linked to the file
    // would count as a second hard link for this check).
    targets.iter().try_for_each(check_unchanged)?;
    let mut records = Vec::with_capacity(targets.len());
    for target in targets {
        let rel = &target.path.rel;
        let snapshot = match &target.before {
            Some(before) => match ctx.snapshots.preserve("apply_patch", &target.path.abs, before) {
                Ok(path) => Some(path),
                Err(e) => {
                    remove_snapshots(&records);
                    return Err(ToolError::failed(format!(
                        "cannot save a rollback snapshot of `{rel}`: {e}; nothing was written"
                    )));
                }
            },
            None => None,
        };
        records.push(PatchedFile {
            path: rel.clone(),
            snapshot,
            sha256_after: target.after.as_deref().map(sha256_hex),
        });
    }
    Ok(records)
}

/// Removes the snapshots of a patch that was not applied.
fn remove_snapshots(records: &[PatchedFile]) {
    for snapshot in records.iter().filter_map(|r| r.snapshot.as_ref()) {
        let _ = fs::remove_file(snapshot);
    }
}

/// Writes `bytes` to a new temporary file beside `abs`, synced, with `mode`.
fn stage(abs: &Path, rel: &str, bytes: &[u8], mode: Permissions) -> Result<PathBuf, ToolError> {
    let (Some(dir), Some(name)) = (abs.parent(), abs.file_name()) else {
        return Err(ToolError::refused("invalid_path", format!("`{rel}` has no parent directory")));
    };
    for _ in 0..8 {
        let tmp = dir.join(format!(".{}.steward-{:016x}.tmp", name.to_string_lossy(), rand::random::<u64>()));
        let mut file = match OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_error("write a temporary file for", rel, &e)),
        };
        let written =
            file.write_all(bytes).and_then(|()| file.set_permissions(mode.clone())).and_then(|()| file.sync_all());
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(io_error("write", rel, &e));
        }
        return Ok(tmp);
    }
    Err(ToolError::failed(format!("cannot find a free temporary name next to `{rel}`")))
}

/// Refuses (rule `stale`) when the target no longer holds the validated bytes.
fn check_unchanged(target: &Target) -> Result<(), ToolError> {
    let rel = &target.path.rel;
    let stale =
        || ToolError::refused("stale", format!("`{rel}` changed while the patch was applied; nothing was written"));
    match &target.before {
        Some(before) => {
            let meta = fs::symlink_metadata(&target.path.abs).map_err(|_| stale())?;
            if meta.nlink() > 1 {
                return Err(super::hard_linked(rel));
            }
            if !meta.is_file() || meta.len() != before.len() as u64 || !holds(&target.path.abs, &meta, before) {
                return Err(stale());
            }
        }
        None => {
            if fs::symlink_metadata(&target.path.abs).is_ok() {
                return Err(ToolError::refused(
                    "file_exists",
                    format!("`{rel}` appeared while the patch was applied; nothing was written"),
                ));
            }
        }
    }
    Ok(())
}

/// True when the file at `abs` is still the inode `seen` and holds exactly `bytes`.
fn holds(abs: &Path, seen: &fs::Metadata, bytes: &[u8]) -> bool {
    let Ok(mut file) = fs::File::open(abs) else { return false };
    let same = file.metadata().is_ok_and(|m| (m.dev(), m.ino()) == (seen.dev(), seen.ino()));
    let mut current = Vec::with_capacity(bytes.len() + 1);
    same && io::Read::read_to_end(&mut file, &mut current).is_ok() && current == bytes
}

/// Step 4, reversed on the first failure.
fn switch(steps: &mut [Step<'_>], rename: &mut dyn FnMut(&Path, &Path) -> io::Result<()>) -> Result<(), ToolError> {
    for index in 0..steps.len() {
        if let Err(err) = switch_one(&mut steps[index], rename) {
            let mut unrestored = Vec::new();
            for done in steps[..index].iter_mut().rev() {
                if let Err(e) = reverse_one(done) {
                    unrestored.push(format!("`{}` ({e})", done.target.path.rel));
                }
            }
            if unrestored.is_empty() {
                return Err(ToolError::failed(format!("{}; every file was put back as it was", err.message)));
            }
            return Err(ToolError::failed(format!(
                "{}; could NOT put back: {} — use `steward rollback`",
                err.message,
                unrestored.join(", ")
            )));
        }
    }
    Ok(())
}

fn switch_one(step: &mut Step<'_>, rename: &mut dyn FnMut(&Path, &Path) -> io::Result<()>) -> Result<(), ToolError> {
    let (abs, rel) = (&step.target.path.abs, &step.target.path.rel);
    match (&step.target.before, &step.tmp) {
        (Some(_), Some(tmp)) => {
            rename(tmp, abs).map_err(|e| io_error("replace", rel, &e))?;
            step.tmp = None;
        }
        (None, Some(tmp)) => {
            fs::hard_link(tmp, abs).map_err(|e| match e.kind() {
                io::ErrorKind::AlreadyExists => {
                    ToolError::refused("file_exists", format!("`{rel}` appeared meanwhile"))
                }
                _ => io_error("create", rel, &e),
            })?;
            let _ = fs::remove_file(tmp);
            step.tmp = None;
        }
        (Some(_), None) => {
            let aside = abs.with_file_name(format!(
                ".{}.steward-deleted-{:016x}",
                abs.file_name().unwrap_or_default().to_string_lossy(),
                rand::random::<u64>()
            ));
            rename(abs, &aside).map_err(|e| io_error("delete", rel, &e))?;
            step.aside = Some(aside);
        }
        (None, None) => {}
    }
    Ok(())
}

/// Undoes one completed switch from what is in memory.
fn reverse_one(step: &mut Step<'_>) -> io::Result<()> {
    let abs = &step.target.path.abs;
    match (&step.target.before, step.aside.take()) {
        (_, Some(aside)) => fs::rename(aside, abs),
        (None, None) => fs::remove_file(abs),
        (Some(before), None) => {
            let mode = fs::symlink_metadata(abs)?.permissions();
            let tmp = stage(abs, &step.target.path.rel, before, mode).map_err(|e| io::Error::other(e.message))?;
            fs::rename(&tmp, abs).inspect_err(|_| {
                let _ = fs::remove_file(&tmp);
            })
        }
    }
}

/// Best effort: makes the renames durable by syncing each parent directory once.
fn sync_dirs(targets: &[Target]) {
    let mut dirs: Vec<&Path> = targets.iter().filter_map(|t| t.path.abs.parent()).collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        if let Ok(handle) = fs::File::open(dir) {
            let _ = handle.sync_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use steward_policy::{Access, Workspace};
    use tokio_util::sync::CancellationToken;

    use super::*;

    fn context(root: &Path) -> ToolContext {
        ToolContext {
            workspace: Arc::new(Workspace::open(root, &[]).unwrap()),
            cancel: CancellationToken::new(),
            env_allow: Vec::new(),
            timeout_ms: 1_000,
            snapshots: crate::rollback::Snapshots::new(&root.join(".snaps"), "run"),
            credentials: Default::default(),
            elicitor: None,
            egress: None,
            accept_weaker: Vec::new(),
            sandbox: Default::default(),
        }
    }

    fn target(ctx: &ToolContext, rel: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> Target {
        let path = ctx.workspace.resolve(rel, Access::Write).unwrap();
        Target { path, before: before.map(<[u8]>::to_vec), after: after.map(<[u8]>::to_vec) }
    }

    #[test]
    fn a_rename_failing_midway_puts_back_every_earlier_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        fs::create_dir(&root).unwrap();
        for name in ["a.txt", "c.txt", "d.txt"] {
            fs::write(root.join(name), format!("{name} before\n")).unwrap();
        }
        let ctx = context(&root);
        let targets = vec![
            target(&ctx, "a.txt", Some(b"a.txt before\n"), Some(b"a after\n")),
            target(&ctx, "new/b.txt", None, Some(b"b new\n")),
            target(&ctx, "c.txt", Some(b"c.txt before\n"), None),
            target(&ctx, "d.txt", Some(b"d.txt before\n"), Some(b"d after\n")),
        ];
        let mut calls = 0;
        let mut failing_third = |from: &Path, to: &Path| {
            calls += 1;
            if calls == 3 { Err(io::Error::other("injected failure")) } else { fs::rename(from, to) }
        };
        let err = commit_with(&targets, &ctx, &mut failing_third).unwrap_err();
        assert!(err.message.contains("injected failure") && err.message.contains("put back"), "{}", err.message);
        for name in ["a.txt", "c.txt", "d.txt"] {
            assert_eq!(fs::read_to_string(root.join(name)).unwrap(), format!("{name} before\n"));
        }
        assert!(!root.join("new").exists(), "the created folder and file are removed again");
        let mut left: Vec<String> =
            fs::read_dir(&root).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, [".snaps", "a.txt", "c.txt", "d.txt"]);
        assert_eq!(
            fs::read_dir(root.join(".snaps/run")).unwrap().count(),
            0,
            "snapshots of a failed patch are removed"
        );

        let records = commit(&targets, &ctx).unwrap();
        assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "a after\n");
        assert_eq!(fs::read_to_string(root.join("new/b.txt")).unwrap(), "b new\n");
        assert!(!root.join("c.txt").exists());
        assert_eq!(records.iter().filter(|r| r.snapshot.is_some()).count(), 3);
    }

    #[test]
    fn a_target_changed_after_validation_stops_everything() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.txt"), "v1\n").unwrap();
        fs::write(dir.path().join("b.txt"), "v2 from someone else\n").unwrap();
        let ctx = context(dir.path());
        let targets = vec![
            target(&ctx, "a.txt", Some(b"v1\n"), Some(b"mine\n")),
            target(&ctx, "b.txt", Some(b"v1\n"), Some(b"mine\n")),
        ];
        assert_eq!(commit(&targets, &ctx).unwrap_err().rule.as_deref(), Some("stale"));
        assert_eq!(fs::read_to_string(dir.path().join("a.txt")).unwrap(), "v1\n");
    }
}
