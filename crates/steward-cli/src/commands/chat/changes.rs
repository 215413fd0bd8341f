//! `/diff`: what a conversation changed in its workspace, read from the rollback records of its
//! runs — each file as the conversation's first change found it (the snapshot that undoes that
//! change) against the file as it is now. Changes already rolled back are left out.

use std::path::Path;

use steward_store::{RollbackStatus, Store, StoreError};
use steward_tools::rollback::Compensation;

/// Most bytes of a file `/diff` reads.
const MAX_DIFF_BYTES: u64 = 4 * 1024 * 1024;

/// One file the conversation touched: its content before the first change (`None`: it did not
/// exist) and now (`None`: it does not exist any more).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// Workspace-relative path.
    pub path: String,
    /// Content before the conversation's first change of it.
    pub before: Option<Vec<u8>>,
    /// Content now.
    pub after: Option<Vec<u8>>,
}

/// What the runs `run_ids` (oldest first) of a conversation in `workspace` changed: the files,
/// in the order they were first changed, and notes on changes that are not file contents (a
/// `[[tool]]` whose undo is a command). Errors: the store cannot be read.
pub async fn conversation_changes(
    store: &dyn Store,
    run_ids: &[String],
    workspace: &steward_policy::Workspace,
) -> Result<(Vec<FileChange>, Vec<String>), StoreError> {
    let mut files: Vec<FileChange> = Vec::new();
    let mut notes = Vec::new();
    let mut first = |path: &str, before: Option<Vec<u8>>| {
        if !files.iter().any(|f| f.path == path) {
            files.push(FileChange { path: path.to_string(), before, after: None });
        }
    };
    // Snapshots are Steward's own files; a workspace file is read as the `read` tool would
    // read it (the path rules: no secret, denied or outside path, no link out), only when it is
    // a regular file and not a link put in its place, and at most a few MiB of it.
    let read = |path: &Path| super::read_regular_file(path, MAX_DIFF_BYTES).ok();
    let read_workspace = |rel: &str| {
        let resolved = workspace.resolve(rel, steward_policy::Access::Read).ok()?;
        let regular = std::fs::symlink_metadata(workspace.root().join(rel)).is_ok_and(|m| m.file_type().is_file());
        if regular { super::read_regular_file(&resolved.abs, MAX_DIFF_BYTES).ok() } else { None }
    };
    for run_id in run_ids {
        for record in store.rollbacks(run_id).await? {
            if record.status == RollbackStatus::Undone {
                continue;
            }
            match serde_json::from_value::<Compensation>(record.compensation.clone()) {
                Ok(Compensation::RemoveCreated { path, .. }) => first(&path, None),
                Ok(Compensation::RestoreEdited { path, snapshot, .. })
                | Ok(Compensation::RestoreDeleted { path, snapshot, .. }) => first(&path, read(&snapshot)),
                Ok(Compensation::MoveBack { from, to, .. }) => {
                    first(&from, read_workspace(&to));
                    first(&to, None);
                }
                Ok(Compensation::RestorePatch { files: patched }) => {
                    for file in patched {
                        first(&file.path, file.snapshot.as_deref().and_then(read));
                    }
                }
                Ok(Compensation::RunCompensate { tool, .. }) => notes.push(format!(
                    "`{tool}` ran in {run_id} (step {}): its changes are not file snapshots; `steward rollback {run_id} --list` shows it",
                    record.step
                )),
                Err(e) => notes.push(format!("{run_id} step {}: unreadable rollback record: {e}", record.step)),
            }
        }
    }
    for file in &mut files {
        file.after = read_workspace(&file.path);
    }
    files.retain(|f| f.before != f.after);
    Ok((files, notes))
}

/// A unified diff of `change` (3 lines of context) and its counts of added and removed lines;
/// a file that is not UTF-8 text is named, not shown.
pub fn render(change: &FileChange) -> (String, usize, usize) {
    let text = |bytes: &Option<Vec<u8>>| match bytes {
        None => Some(String::new()),
        Some(b) => String::from_utf8(b.clone()).ok(),
    };
    let (Some(before), Some(after)) = (text(&change.before), text(&change.after)) else {
        return (format!("{}: binary file changed\n", change.path), 0, 0);
    };
    let diff = similar::TextDiff::from_lines(&before, &after);
    let (mut added, mut removed) = (0, 0);
    for op in diff.iter_all_changes() {
        match op.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    let old = if change.before.is_some() { format!("a/{}", change.path) } else { "/dev/null".into() };
    let new = if change.after.is_some() { format!("b/{}", change.path) } else { "/dev/null".into() };
    (diff.unified_diff().context_radius(3).header(&old, &new).to_string(), added, removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rendered_change_counts_its_lines_and_names_created_files() {
        let change = FileChange {
            path: "n.txt".into(),
            before: Some(b"a\nold\nc\n".to_vec()),
            after: Some(b"a\nnew\nc\n".to_vec()),
        };
        let (diff, added, removed) = render(&change);
        assert_eq!((added, removed), (1, 1));
        assert!(diff.contains("--- a/n.txt") && diff.contains("-old") && diff.contains("+new"), "{diff}");
        let created = FileChange { path: "x.txt".into(), before: None, after: Some(b"hi\n".to_vec()) };
        let (diff, added, removed) = render(&created);
        assert_eq!((added, removed), (1, 0));
        assert!(diff.contains("--- /dev/null") && diff.contains("+++ b/x.txt"), "{diff}");
        let binary = FileChange { path: "b.bin".into(), before: None, after: Some(vec![0xff, 0xfe]) };
        assert_eq!(render(&binary).0, "b.bin: binary file changed\n");
    }
}
