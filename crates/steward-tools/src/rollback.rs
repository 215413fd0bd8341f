//! Rollback (SPEC C5): every writing tool registers a compensating action, and
//! `steward rollback` applies them in reverse order.
//!
//! Snapshots of overwritten or deleted files are the only raw copies of workspace content
//! Steward keeps: files under `$STEWARD_HOME/snapshots/RUN_ID/` with mode 0600 in a 0700
//! directory, never in the database or logs. Every undo first checks that the file still
//! holds exactly what the tool wrote (by SHA-256), so a rollback never clobbers a later change.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use steward_policy::{Access, Workspace};

/// What undoes one writing tool call. Stored as JSON (tagged by `kind`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Compensation {
    /// Undo `create`: remove `path` if it still holds the created content.
    RemoveCreated {
        /// Workspace-relative path.
        path: String,
        /// SHA-256 (hex) of the content written.
        sha256: String,
    },
    /// Undo `edit`: put the snapshot back if the file still holds what the edit wrote.
    RestoreEdited {
        /// Workspace-relative path.
        path: String,
        /// Snapshot of the content before the edit.
        snapshot: PathBuf,
        /// SHA-256 (hex) of the content after the edit.
        sha256_after: String,
    },
    /// Undo `delete`: write the snapshot back if nothing is at `path`.
    RestoreDeleted {
        /// Workspace-relative path.
        path: String,
        /// Snapshot of the deleted file.
        snapshot: PathBuf,
        /// The file's permission bits (restored with the content; 0644 when unknown).
        #[serde(default)]
        mode: Option<u32>,
    },
    /// Undo `move`: move `to` back to `from` if `from` is free.
    MoveBack {
        /// Where the file was.
        from: String,
        /// Where it went.
        to: String,
        /// SHA-256 (hex) of the moved content.
        sha256: String,
    },
    /// Undo `apply_patch`: every file back to its snapshot (or removed, when the patch
    /// created it; recreated, when the patch deleted it). Nothing is undone unless every file
    /// still holds what the patch wrote.
    RestorePatch {
        /// The files the patch wrote, in patch order.
        files: Vec<PatchedFile>,
    },
    /// Undo a `[[tool]]` call: run the tool's `compensate` command with the call's arguments,
    /// sandboxed like the tool (see `steward-core`'s `compensate` module). Not applied by [`undo`], which
    /// touches files only: `steward rollback` runs it.
    RunCompensate {
        /// The `[[tool]]`'s name.
        tool: String,
        /// SHA-256 of the tool's definition when the call ran
        /// ([`steward_config::CommandToolConfig::definition_sha256`]); a changed definition is
        /// not run.
        definition_sha256: String,
        /// The call's arguments, the values of the template's placeholders.
        arguments: serde_json::Value,
    },
}

/// One file written by a multi-file patch (see [`Compensation::RestorePatch`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchedFile {
    /// Workspace-relative path.
    pub path: String,
    /// Snapshot of the content before the patch; `None` when the patch created the file.
    pub snapshot: Option<PathBuf>,
    /// SHA-256 (hex) of the content the patch wrote; `None` when the patch deleted the file.
    pub sha256_after: Option<String>,
}

/// SHA-256 of `bytes` as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Where a run's snapshots go.
#[derive(Debug, Clone)]
pub struct Snapshots {
    dir: PathBuf,
}

impl Snapshots {
    /// Snapshots of run `run_id` under `root` (`$STEWARD_HOME/snapshots`).
    pub fn new(root: &Path, run_id: &str) -> Self {
        Snapshots { dir: root.join(run_id) }
    }

    /// Keeps the current content of `abs` (which must equal `bytes`) as a snapshot without
    /// copying it when it can: a hard link to the file's inode, which the writer then replaces
    /// by renaming a new file over the name (the old inode lives on as the snapshot). Falls back
    /// to [`Snapshots::save`] when a link is impossible (another filesystem). The snapshot
    /// directory is owner-only either way.
    pub fn preserve(&self, call_id: &str, abs: &Path, bytes: &[u8]) -> std::io::Result<PathBuf> {
        fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir)?;
        let path = self.dir.join(format!("{}-{:08x}.snapshot", Self::file_stem(call_id), rand::random::<u32>()));
        match fs::hard_link(abs, &path) {
            Ok(()) => Ok(path),
            Err(_) => self.save(call_id, bytes),
        }
    }

    fn file_stem(call_id: &str) -> String {
        call_id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
            .take(80)
            .collect()
    }

    /// Saves `bytes` as the snapshot of call `call_id`; returns its path. The directory is
    /// created with mode 0700 and the file with 0600.
    pub fn save(&self, call_id: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
        fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir)?;
        let name: String = call_id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
            .take(80)
            .collect();
        let path = self.dir.join(format!("{name}-{:08x}.snapshot", rand::random::<u32>()));
        let mut file = fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        Ok(path)
    }
}

/// Why a compensation was not applied ([`undo`]). Each message names the workspace-relative
/// path it is about.
#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    /// A path of the compensation is no longer inside the workspace (or is denied).
    #[error(transparent)]
    Path(#[from] steward_policy::PathError),
    /// The file the run wrote is gone.
    #[error("`{0}` no longer exists")]
    Gone(String),
    /// The path the run wrote is no longer a regular file.
    #[error("`{0}` is no longer a regular file")]
    NotAFile(String),
    /// The file changed after the run wrote it: it is left as it is.
    #[error("`{0}` changed after the run wrote it; it is left as it is")]
    ChangedSince(String),
    /// Something is at the place of a deleted file again: it is not overwritten.
    #[error("`{0}` exists again; it is not overwritten")]
    TakenAgain(String),
    /// Something is at the place of a file the patch deleted: the patch is not undone.
    #[error("`{0}` exists again; the patch is not undone")]
    PatchTargetTaken(String),
    /// The snapshot of the content before the change cannot be read.
    #[error("the snapshot of `{path}` is unreadable: {source}")]
    SnapshotUnreadable {
        /// The file the snapshot is of.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file cannot be read to compare its content.
    #[error("cannot read `{path}`: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file's permissions cannot be read.
    #[error("cannot inspect `{path}`: {source}")]
    Inspect {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A file the run created cannot be removed.
    #[error("cannot remove `{path}`: {source}")]
    Remove {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A moved file cannot be linked back to where it was.
    #[error("cannot move `{to}` back to `{from}`: {source}")]
    MoveBack {
        /// Where it was before the move.
        from: String,
        /// Where the run moved it.
        to: String,
        /// Why.
        source: std::io::Error,
    },
    /// A moved file, linked back, cannot be removed from where the run moved it.
    #[error("cannot remove `{to}` after moving it back: {source}")]
    RemoveMoved {
        /// Where the run moved it.
        to: String,
        /// Why.
        source: std::io::Error,
    },
    /// The folder of a deleted file cannot be recreated.
    #[error("cannot recreate the folder of `{path}`: {source}")]
    RecreateFolder {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A deleted file cannot be created again.
    #[error("cannot recreate `{path}`: {source}")]
    Recreate {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The content of a recreated file cannot be written.
    #[error("cannot write `{path}`: {source}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The permissions of a recreated file cannot be set.
    #[error("cannot restore the permissions of `{path}`: {source}")]
    Permissions {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The path has no parent folder to write the restored content in.
    #[error("`{0}` has no parent folder")]
    NoParent(String),
    /// The compensation is a command, which [`undo`] does not run (see
    /// `steward_core::CompensationRunner`).
    #[error("the compensation of `{0}` is a command; `steward rollback` runs it")]
    Command(String),
    /// The restored content cannot be written over the file.
    #[error("cannot restore `{path}`: {source}")]
    Restore {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Applies a compensation inside `workspace`. `Ok(description)` when undone; `Err` says why
/// it must not or cannot be undone (the file changed since, the place is taken, a path is no
/// longer inside the workspace).
pub fn undo(compensation: &Compensation, workspace: &Workspace) -> Result<String, UndoError> {
    match compensation {
        Compensation::RemoveCreated { path, sha256 } => {
            let target = resolve(workspace, path)?;
            expect_content(&target, path, sha256)?;
            fs::remove_file(&target).map_err(|source| UndoError::Remove { path: path.clone(), source })?;
            Ok(format!("removed `{path}` (it was created by the run)"))
        }
        Compensation::RestoreEdited { path, snapshot, sha256_after } => {
            let target = resolve(workspace, path)?;
            expect_content(&target, path, sha256_after)?;
            let before =
                fs::read(snapshot).map_err(|source| UndoError::SnapshotUnreadable { path: path.clone(), source })?;
            write_over(&target, path, &before)?;
            Ok(format!("restored `{path}` to its content before the edit"))
        }
        Compensation::RestoreDeleted { path, snapshot, mode } => {
            let target = resolve(workspace, path)?;
            if fs::symlink_metadata(&target).is_ok() {
                return Err(UndoError::TakenAgain(path.clone()));
            }
            recreate(&target, path, snapshot, *mode)?;
            Ok(format!("restored deleted `{path}`"))
        }
        Compensation::MoveBack { from, to, sha256 } => {
            let source = resolve(workspace, to)?;
            let back = resolve(workspace, from)?;
            expect_content(&source, to, sha256)?;
            fs::hard_link(&source, &back).map_err(|e| UndoError::MoveBack {
                from: from.clone(),
                to: to.clone(),
                source: e,
            })?;
            fs::remove_file(&source).map_err(|e| UndoError::RemoveMoved { to: to.clone(), source: e })?;
            Ok(format!("moved `{to}` back to `{from}`"))
        }
        Compensation::RestorePatch { files } => undo_patch(files, workspace),
        Compensation::RunCompensate { tool, .. } => Err(UndoError::Command(tool.clone())),
    }
}

/// Checks every file of the patch first, then restores each; stops at the first failure.
fn undo_patch(files: &[PatchedFile], workspace: &Workspace) -> Result<String, UndoError> {
    let mut targets = Vec::with_capacity(files.len());
    for file in files {
        let target = resolve(workspace, &file.path)?;
        match &file.sha256_after {
            Some(sha256) => expect_content(&target, &file.path, sha256)?,
            None if fs::symlink_metadata(&target).is_ok() => {
                return Err(UndoError::PatchTargetTaken(file.path.clone()));
            }
            None => {}
        }
        targets.push(target);
    }
    for (file, target) in files.iter().zip(&targets) {
        match (&file.snapshot, &file.sha256_after) {
            (None, _) => {
                fs::remove_file(target).map_err(|source| UndoError::Remove { path: file.path.clone(), source })?
            }
            (Some(snapshot), None) => recreate(target, &file.path, snapshot, None)?,
            (Some(snapshot), Some(_)) => {
                let before = fs::read(snapshot)
                    .map_err(|source| UndoError::SnapshotUnreadable { path: file.path.clone(), source })?;
                write_over(target, &file.path, &before)?;
            }
        }
    }
    let names: Vec<String> = files.iter().map(|f| format!("`{}`", f.path)).collect();
    Ok(format!("restored {} to their content before the patch", names.join(", ")))
}

/// Writes `snapshot` to the new file `target` (its folder recreated when missing).
/// Writes a snapshot back to a path where nothing is, created owner-only and then given
/// `mode` (0644 when unknown) once the content is in.
fn recreate(target: &Path, rel: &str, snapshot: &Path, mode: Option<u32>) -> Result<(), UndoError> {
    let path = || rel.to_string();
    let before = fs::read(snapshot).map_err(|source| UndoError::SnapshotUnreadable { path: path(), source })?;
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent).map_err(|source| UndoError::RecreateFolder { path: path(), source })?;
    }
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(target)
        .map_err(|source| UndoError::Recreate { path: path(), source })?;
    file.write_all(&before).map_err(|source| UndoError::Write { path: path(), source })?;
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(fs::Permissions::from_mode(mode.unwrap_or(0o644) & 0o7777))
        .map_err(|source| UndoError::Permissions { path: path(), source })
}

fn resolve(workspace: &Workspace, rel: &str) -> Result<PathBuf, UndoError> {
    Ok(workspace.resolve(rel, Access::Write)?.abs)
}

fn expect_content(abs: &Path, rel: &str, sha256: &str) -> Result<(), UndoError> {
    let meta = fs::symlink_metadata(abs).map_err(|_| UndoError::Gone(rel.to_string()))?;
    if !meta.is_file() {
        return Err(UndoError::NotAFile(rel.to_string()));
    }
    let bytes = fs::read(abs).map_err(|source| UndoError::Read { path: rel.to_string(), source })?;
    if sha256_hex(&bytes) != sha256 {
        return Err(UndoError::ChangedSince(rel.to_string()));
    }
    Ok(())
}

fn write_over(abs: &Path, rel: &str, bytes: &[u8]) -> Result<(), UndoError> {
    let permissions =
        fs::metadata(abs).map_err(|source| UndoError::Inspect { path: rel.to_string(), source })?.permissions();
    let dir = abs.parent().ok_or_else(|| UndoError::NoParent(rel.to_string()))?;
    let tmp = dir.join(format!(".steward-rollback-{:016x}.tmp", rand::random::<u64>()));
    let result = (|| {
        let mut file = fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
        file.write_all(bytes)?;
        file.set_permissions(permissions)?;
        file.sync_all()?;
        fs::rename(&tmp, abs)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(|source| UndoError::Restore { path: rel.to_string(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_undo_never_clobbers_a_later_change() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path(), &[]).unwrap();
        std::fs::write(dir.path().join("a.txt"), "after edit").unwrap();
        let snaps = Snapshots::new(&dir.path().join("snaps"), "run_1");
        let snapshot = snaps.save("call_1", b"before edit").unwrap();
        let comp = Compensation::RestoreEdited {
            path: "a.txt".into(),
            snapshot: snapshot.clone(),
            sha256_after: sha256_hex(b"after edit"),
        };
        std::fs::write(dir.path().join("a.txt"), "someone else's change").unwrap();
        assert!(
            matches!(undo(&comp, &ws), Err(UndoError::ChangedSince(path)) if path == "a.txt"),
            "changed after the run wrote it"
        );
        std::fs::write(dir.path().join("a.txt"), "after edit").unwrap();
        undo(&comp, &ws).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "before edit");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&snapshot).unwrap().permissions().mode() & 0o777, 0o600);
    }
}
