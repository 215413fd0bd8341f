//! The writing file tools (SPEC T2, X1–X3): `create`, `edit`, `delete`, `move`.
//!
//! Every path goes through [`steward_policy::Workspace::resolve`] with
//! [`Access::Write`](steward_policy::Access::Write) first, so containment, secret paths,
//! ignore rules and `deny_path` are checked again here even though the gate already did
//! (cases B09, B10). On top of that, the tools never write through a symbolic link: new files
//! are opened with `O_CREAT | O_EXCL` (which refuses any existing name, links included),
//! existing files are replaced by an atomic rename of a temporary file in the same directory,
//! and a file that is read is checked to be the same inode that `lstat` saw.
//!
//! `edit` follows cases B16, B18 and B19: matching ignores CRLF/LF differences (the file's own
//! line-ending style wins), all bytes outside the replaced text are kept exactly (a BOM,
//! Latin-1 bytes that are not UTF-8), and the file is re-read at apply time so a concurrent
//! change is never lost.

use std::fs::{self, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use steward_policy::{Access, WorkspacePath};
use steward_protocol::{RiskLevel, ToolSpec};

use super::shared::{MAX_FILE_BYTES, invalid, io_error, make_parents, read_regular_file, spec, str_arg, unified_diff};
use super::{Tool, ToolContext, ToolError, ToolOutput};
use crate::rollback::{Compensation, sha256_hex};

/// The writing file tools: `create`, `edit`, `delete`, `move`.
pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(CreateTool::default()),
        Arc::new(EditTool::default()),
        Arc::new(DeleteTool::default()),
        Arc::new(MoveTool::default()),
    ]
}

/// Fails with rule `file_exists` when anything (a link included) is at `abs`.
fn refuse_existing(abs: &Path, rel: &str) -> Result<(), ToolError> {
    match fs::symlink_metadata(abs) {
        Ok(_) => Err(ToolError::refused("file_exists", format!("`{rel}` already exists; it is not overwritten"))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error("inspect", rel, &e)),
    }
}

/// Writes `bytes` to a new temporary file next to `abs` (created with `O_EXCL`, mode 0600,
/// then given `permissions`), and renames it over `abs` only if the file at `abs` still holds
/// exactly `expected` (compare-and-swap, case B19). Returns `Ok(false)` when the file changed
/// in the meantime; nothing is written then.
fn replace_atomically(
    abs: &Path,
    rel: &str,
    expected: &[u8],
    bytes: &[u8],
    permissions: Permissions,
) -> Result<bool, ToolError> {
    let (Some(dir), Some(name)) = (abs.parent(), abs.file_name()) else {
        return Err(ToolError::refused("invalid_path", format!("`{rel}` has no parent directory")));
    };
    let mut attempt = 0;
    let (tmp, mut file) = loop {
        let tmp = dir.join(format!(".{}.steward-{:016x}.tmp", name.to_string_lossy(), rand::random::<u64>()));
        match OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp) {
            Ok(file) => break (tmp, file),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 8 => attempt += 1,
            Err(e) => return Err(io_error("write a temporary file for", rel, &e)),
        }
    };
    let outcome = (|| {
        file.write_all(bytes)?;
        file.set_permissions(permissions)?;
        file.sync_all()
    })()
    .map_err(|e| io_error("write", rel, &e))
    .and_then(|()| read_regular_file(abs, rel, MAX_FILE_BYTES).map(|current| current == expected))
    .and_then(|unchanged| {
        if unchanged {
            fs::rename(&tmp, abs).map_err(|e| io_error("replace", rel, &e))?;
        }
        Ok(unchanged)
    });
    if !matches!(outcome, Ok(true)) {
        let _ = fs::remove_file(&tmp);
    }
    outcome
}

// ----- create -------------------------------------------------------------------------------

/// `create {path, content}`: writes a new file; refuses when anything exists at `path`.
pub struct CreateTool {
    spec: ToolSpec,
}

impl Default for CreateTool {
    /// The tool with its spec (risk `medium`, writes).
    fn default() -> Self {
        let spec = spec(
            "create",
            "Create a new text file in the workspace (missing parent folders are created). Refuses when the file already exists; use `edit` to change a file.",
            json!({
                "path": {"type": "string", "description": "Workspace-relative path of the new file."},
                "content": {"type": "string", "description": "The complete file content."}
            }),
            &["path", "content"],
            RiskLevel::Medium,
            true,
            &["path"],
        );
        CreateTool { spec }
    }
}

impl CreateTool {
    fn check(&self, args: &Value, ctx: &ToolContext) -> Result<(WorkspacePath, String), ToolError> {
        let path = ctx.workspace.resolve(str_arg(args, "path")?, Access::Write)?;
        let content = str_arg(args, "content")?;
        refuse_existing(&path.abs, &path.rel)?;
        let diff = unified_diff(&path.rel, b"", content.as_bytes());
        Ok((path, diff))
    }
}

#[async_trait]
impl Tool for CreateTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Result<Option<(String, String)>, ToolError> {
        let (path, diff) = self.check(args, ctx)?;
        Ok(Some((path.rel, diff)))
    }

    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (path, diff) = self.check(args, ctx)?;
        let content = str_arg(args, "content")?;
        make_parents(ctx.workspace.root(), &path.rel)?;
        // O_CREAT | O_EXCL: fails on any existing name, including a (dangling) symbolic link.
        let mut file =
            OpenOptions::new().write(true).create_new(true).mode(0o644).open(&path.abs).map_err(|e| {
                match e.kind() {
                    io::ErrorKind::AlreadyExists => {
                        ToolError::refused("file_exists", format!("`{}` already exists", path.rel))
                    }
                    _ => io_error("create", &path.rel, &e),
                }
            })?;
        file.write_all(content.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| io_error("write", &path.rel, &e))?;
        let compensation =
            Compensation::RemoveCreated { path: path.rel.clone(), sha256: sha256_hex(content.as_bytes()) };
        Ok(ToolOutput {
            content: format!("created `{}` ({} bytes)", path.rel, content.len()),
            changes: vec![(path.rel, diff)],
            sandbox: String::new(),
            full_content: None,
            compensation: Some(compensation),
            quoted_paths: Vec::new(),
        })
    }

    fn compensable(&self) -> bool {
        true
    }
}

// ----- edit ---------------------------------------------------------------------------------

/// `edit {path, old, new}`: replaces the one occurrence of `old` with `new` (cases B16, B18,
/// B19).
pub struct EditTool {
    spec: ToolSpec,
}

/// A planned edit: what was read and what would be written.
struct PlannedEdit {
    path: WorkspacePath,
    before: Vec<u8>,
    after: Vec<u8>,
}

impl Default for EditTool {
    /// The tool with its spec (risk `medium`, writes).
    fn default() -> Self {
        let spec = spec(
            "edit",
            "Replace exactly one occurrence of `old` with `new` in a workspace file. `old` must match the current file text exactly (line endings may differ) and occur once; include surrounding lines to make it unique.",
            json!({
                "path": {"type": "string", "description": "Workspace-relative path of the file to change."},
                "old": {"type": "string", "description": "The exact text to replace; must occur exactly once."},
                "new": {"type": "string", "description": "The replacement text."}
            }),
            &["path", "old", "new"],
            RiskLevel::Medium,
            true,
            &["path"],
        );
        EditTool { spec }
    }
}

impl EditTool {
    fn plan(&self, args: &Value, ctx: &ToolContext) -> Result<PlannedEdit, ToolError> {
        let path = ctx.workspace.resolve(str_arg(args, "path")?, Access::Write)?;
        let (old, new) = (str_arg(args, "old")?, str_arg(args, "new")?);
        let before = read_regular_file(&path.abs, &path.rel, MAX_FILE_BYTES)?;
        if let Some(offset) = before.iter().position(|b| *b == 0) {
            return Err(ToolError::refused(
                "binary_file",
                format!("`{}` looks binary (NUL byte at offset {offset}); it is not edited", path.rel),
            ));
        }
        let after = replace_once(&before, old, new).map_err(|fault| fault.into_error(&path.rel))?;
        Ok(PlannedEdit { path, before, after })
    }
}

#[async_trait]
impl Tool for EditTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Result<Option<(String, String)>, ToolError> {
        let plan = self.plan(args, ctx)?;
        Ok(Some((plan.path.rel.clone(), unified_diff(&plan.path.rel, &plan.before, &plan.after))))
    }

    /// Re-reads the file and re-validates `old` against its current content; when the file
    /// changes between that read and the rename, it tries once more against the newest
    /// content (a formatter racing the write), then refuses as stale.
    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        for _attempt in 0..2 {
            let plan = self.plan(args, ctx)?;
            let permissions = fs::symlink_metadata(&plan.path.abs)
                .map_err(|e| io_error("inspect", &plan.path.rel, &e))?
                .permissions();
            // No write without a way back: the snapshot is on disk first.
            let snapshot = ctx.snapshots.save("edit", &plan.before).map_err(|e| {
                ToolError::failed(format!(
                    "cannot save a rollback snapshot of `{}`: {e}; nothing was written",
                    plan.path.rel
                ))
            })?;
            if replace_atomically(&plan.path.abs, &plan.path.rel, &plan.before, &plan.after, permissions)? {
                let diff = unified_diff(&plan.path.rel, &plan.before, &plan.after);
                let compensation = Compensation::RestoreEdited {
                    path: plan.path.rel.clone(),
                    snapshot,
                    sha256_after: sha256_hex(&plan.after),
                };
                return Ok(ToolOutput {
                    content: format!("edited `{}`\n{diff}", plan.path.rel),
                    changes: vec![(plan.path.rel, diff)],
                    sandbox: String::new(),
                    full_content: None,
                    compensation: Some(compensation),
                    quoted_paths: Vec::new(),
                });
            }
            let _ = fs::remove_file(snapshot);
        }
        Err(ToolError::refused(
            "stale",
            "the file kept changing while the edit was applied (twice); nothing was written — read it again and retry",
        ))
    }

    fn compensable(&self) -> bool {
        true
    }
}

/// Why [`replace_once`] could not make a change.
#[derive(Debug, PartialEq)]
enum EditFault {
    EmptyOld,
    NoChange,
    NotFound,
    Ambiguous(usize),
}

impl EditFault {
    fn into_error(self, rel: &str) -> ToolError {
        match self {
            EditFault::EmptyOld => invalid("`old` must not be empty".into()),
            EditFault::NoChange => invalid("`old` and `new` are the same text; nothing to change".into()),
            EditFault::NotFound => ToolError::refused(
                "edit_not_found",
                format!(
                    "the text to replace was not found in `{rel}` (it may have changed since it was read; matching ignores CRLF/LF differences but is otherwise exact) — read the file again and copy the text exactly"
                ),
            ),
            EditFault::Ambiguous(n) => ToolError::refused(
                "ambiguous",
                format!(
                    "ambiguous: the text to replace occurs {n} times in `{rel}`; include more surrounding lines so it occurs exactly once"
                ),
            ),
        }
    }
}

/// Replaces the single occurrence of `old` in `file` with `new`, byte-preservingly.
///
/// Matching treats CRLF and LF as equal and is otherwise exact (tabs stay tabs, case and
/// spaces count); overlapping occurrences count separately, so `aa` in `aaa` is ambiguous.
/// The replacement takes the line endings of the text it replaces (or, when that text holds
/// no line break, the file's dominant style). Every byte outside the replaced range is kept
/// as it was, so a BOM and bytes that are not valid UTF-8 survive unchanged (case B18).
fn replace_once(file: &[u8], old: &str, new: &str) -> Result<Vec<u8>, EditFault> {
    let old = old.replace("\r\n", "\n");
    let new = new.replace("\r\n", "\n");
    if old.is_empty() {
        return Err(EditFault::EmptyOld);
    }
    if old == new {
        return Err(EditFault::NoChange);
    }
    // The file with every CRLF collapsed to LF, plus where (in collapsed indices) that happened.
    let mut text = Vec::with_capacity(file.len());
    let mut collapsed = Vec::new();
    let mut i = 0;
    while i < file.len() {
        if file[i] == b'\r' && file.get(i + 1) == Some(&b'\n') {
            collapsed.push(text.len());
            text.push(b'\n');
            i += 2;
        } else {
            text.push(file[i]);
            i += 1;
        }
    }
    let finder = regex::bytes::Regex::new(&regex::escape(&old)).map_err(|_| EditFault::NotFound)?;
    let mut starts = Vec::new();
    let mut from = 0;
    while let Some(found) = finder.find_at(&text, from) {
        starts.push(found.start());
        from = found.start() + 1;
    }
    let start = match starts.as_slice() {
        [] => return Err(EditFault::NotFound),
        [one] => *one,
        many => return Err(EditFault::Ambiguous(many.len())),
    };
    // Map collapsed indices back to byte offsets in `file`.
    let to_file = |index: usize| index + collapsed.partition_point(|&c| c < index);
    let (begin, end) = (to_file(start), to_file(start + old.len()));
    let replaced = &file[begin..end];
    let crlf = match replaced.iter().position(|b| *b == b'\n') {
        Some(lf) => lf > 0 && replaced[lf - 1] == b'\r',
        None => {
            let line_feeds = text.iter().filter(|b| **b == b'\n').count();
            collapsed.len() * 2 > line_feeds
        }
    };
    let new_bytes = if crlf { new.replace('\n', "\r\n") } else { new };
    let mut out = Vec::with_capacity(file.len() + new_bytes.len());
    out.extend_from_slice(&file[..begin]);
    out.extend_from_slice(new_bytes.as_bytes());
    out.extend_from_slice(&file[end..]);
    Ok(out)
}

// ----- delete -------------------------------------------------------------------------------

/// `delete {path}`: removes one regular file (never a directory, never through a link).
pub struct DeleteTool {
    spec: ToolSpec,
}

impl Default for DeleteTool {
    /// The tool with its spec (risk `high`, writes).
    fn default() -> Self {
        let spec = spec(
            "delete",
            "Delete one file in the workspace. Directories are not deleted.",
            json!({"path": {"type": "string", "description": "Workspace-relative path of the file to delete."}}),
            &["path"],
            RiskLevel::High,
            true,
            &["path"],
        );
        DeleteTool { spec }
    }
}

impl DeleteTool {
    fn check(&self, args: &Value, ctx: &ToolContext) -> Result<(WorkspacePath, String), ToolError> {
        let path = ctx.workspace.resolve(str_arg(args, "path")?, Access::Write)?;
        let meta = fs::symlink_metadata(&path.abs).map_err(|e| io_error("delete", &path.rel, &e))?;
        if meta.is_dir() {
            return Err(ToolError::refused(
                "not_regular_file",
                format!("`{}` is a directory; delete removes files only", path.rel),
            ));
        }
        if !meta.is_file() {
            return Err(ToolError::refused("not_regular_file", format!("`{}` is not a regular file", path.rel)));
        }
        let diff = match read_regular_file(&path.abs, &path.rel, MAX_FILE_BYTES) {
            Ok(bytes) if !bytes.contains(&0) => unified_diff(&path.rel, &bytes, b""),
            _ => format!(
                "--- a/{rel}\n+++ /dev/null\nBinary or large file `{rel}` ({} bytes) deleted\n",
                meta.len(),
                rel = path.rel
            ),
        };
        Ok((path, diff))
    }
}

#[async_trait]
impl Tool for DeleteTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Result<Option<(String, String)>, ToolError> {
        let (path, diff) = self.check(args, ctx)?;
        Ok(Some((path.rel, diff)))
    }

    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (path, diff) = self.check(args, ctx)?;
        let bytes = fs::read(&path.abs).map_err(|e| io_error("read before deleting", &path.rel, &e))?;
        let mode = {
            use std::os::unix::fs::PermissionsExt;
            fs::symlink_metadata(&path.abs).map_err(|e| io_error("inspect", &path.rel, &e))?.permissions().mode()
        };
        let snapshot = ctx.snapshots.save("delete", &bytes).map_err(|e| {
            ToolError::failed(format!("cannot save a rollback snapshot of `{}`: {e}; nothing was deleted", path.rel))
        })?;
        // unlink never follows a link; `check` made sure this is a regular file.
        fs::remove_file(&path.abs).map_err(|e| io_error("delete", &path.rel, &e))?;
        Ok(ToolOutput {
            content: format!("deleted `{}`", path.rel),
            compensation: Some(Compensation::RestoreDeleted { path: path.rel.clone(), snapshot, mode: Some(mode) }),
            changes: vec![(path.rel, diff)],
            sandbox: String::new(),
            full_content: None,
            quoted_paths: Vec::new(),
        })
    }

    fn compensable(&self) -> bool {
        true
    }
}

// ----- move ---------------------------------------------------------------------------------

/// `move {from, to}`: renames one regular file; never overwrites.
pub struct MoveTool {
    spec: ToolSpec,
}

impl Default for MoveTool {
    /// The tool with its spec (risk `medium`, writes).
    fn default() -> Self {
        let spec = spec(
            "move",
            "Move or rename one file inside the workspace (missing parent folders are created). Refuses when the destination exists.",
            json!({
                "from": {"type": "string", "description": "Workspace-relative path of the file to move."},
                "to": {"type": "string", "description": "Workspace-relative destination path."}
            }),
            &["from", "to"],
            RiskLevel::Medium,
            true,
            &["from", "to"],
        );
        MoveTool { spec }
    }
}

impl MoveTool {
    fn check(&self, args: &Value, ctx: &ToolContext) -> Result<(WorkspacePath, WorkspacePath, String), ToolError> {
        let from = ctx.workspace.resolve(str_arg(args, "from")?, Access::Write)?;
        let to = ctx.workspace.resolve(str_arg(args, "to")?, Access::Write)?;
        let meta = fs::symlink_metadata(&from.abs).map_err(|e| io_error("move", &from.rel, &e))?;
        if !meta.is_file() {
            return Err(ToolError::refused(
                "not_regular_file",
                format!("`{}` is not a regular file; move handles files only", from.rel),
            ));
        }
        refuse_existing(&to.abs, &to.rel)?;
        let diff = format!("diff --git a/{f} b/{t}\nrename from {f}\nrename to {t}\n", f = from.rel, t = to.rel);
        Ok((from, to, diff))
    }
}

#[async_trait]
impl Tool for MoveTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Result<Option<(String, String)>, ToolError> {
        let (_, to, diff) = self.check(args, ctx)?;
        Ok(Some((to.rel, diff)))
    }

    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (from, to, diff) = self.check(args, ctx)?;
        let sha256 = sha256_hex(&fs::read(&from.abs).map_err(|e| io_error("read", &from.rel, &e))?);
        make_parents(ctx.workspace.root(), &to.rel)?;
        // link(2) fails when `to` exists (no clobbering, even in a race) and does not follow
        // a link at `from`; the old name is removed only after the new one exists.
        fs::hard_link(&from.abs, &to.abs).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => {
                ToolError::refused("file_exists", format!("`{}` already exists; it is not overwritten", to.rel))
            }
            _ => io_error("move", &from.rel, &e),
        })?;
        fs::remove_file(&from.abs).map_err(|e| io_error("remove the old name", &from.rel, &e))?;
        Ok(ToolOutput {
            content: format!("moved `{}` to `{}`", from.rel, to.rel),
            compensation: Some(Compensation::MoveBack { from: from.rel.clone(), to: to.rel.clone(), sha256 }),
            changes: vec![(to.rel, diff)],
            sandbox: String::new(),
            full_content: None,
            quoted_paths: Vec::new(),
        })
    }

    fn compensable(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_occurrences_are_ambiguous() {
        assert_eq!(replace_once(b"aaa", "aa", "b"), Err(EditFault::Ambiguous(2)));
    }

    #[test]
    fn crlf_counts_once_not_twice() {
        // `\n` in `old` must not be found both at the CR and at the LF of one CRLF.
        assert_eq!(replace_once(b"a\r\nb\r\n", "\nb", "\nc").unwrap(), b"a\r\nc\r\n");
    }

    #[test]
    fn single_line_new_text_with_breaks_follows_file_style() {
        assert_eq!(replace_once(b"x\r\ny\r\n", "y", "y\nz").unwrap(), b"x\r\ny\r\nz\r\n");
        assert_eq!(replace_once(b"x\ny\n", "y", "y\r\nz").unwrap(), b"x\ny\nz\n");
    }

    #[test]
    fn empty_old_and_no_change_are_refused() {
        assert_eq!(replace_once(b"abc", "", "x"), Err(EditFault::EmptyOld));
        assert_eq!(replace_once(b"abc", "b\r\n", "b\n"), Err(EditFault::NoChange));
        assert_eq!(replace_once(b"abc", "zz", "x"), Err(EditFault::NotFound));
    }
}
