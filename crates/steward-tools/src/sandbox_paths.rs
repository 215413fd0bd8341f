//! What the sandbox covers and freezes for a program of a run (SPEC S1, C3): the one place
//! that computes what a sandboxed process must not see, used by every launcher —
//! `shell_command`, the `[[tool]]` commands, the git tools, hooks, language servers
//! ([`confine`]) and stdio MCP servers ([`mcp_hidden_paths`]).
//!
//! Reads are not confined by the sandbox, and redaction of what a program prints cannot be
//! complete (one character a line, base64, a hard link under another name), so secret files
//! must not be readable at all inside it:
//! - every path of the workspace that [`steward_policy::is_secret_path`] calls secret or a
//!   `deny_path` glob matches is covered (a file by an empty read-only file, a folder by an
//!   empty folder), except `.git` itself: git needs it, and its hooks and config are frozen
//!   instead;
//! - Steward's own files ([`steward_config::state_paths::steward_paths`]: the state folder with its
//!   keys, database and index, the configuration folder) are covered wherever they lie, in
//!   the workspace, in `$HOME` or elsewhere; when the program works inside one of them, every
//!   entry of it except the way to the working directory and writable folders is covered;
//! - every other name of a secret file — a hard link, same device and inode — is covered too,
//!   as the gate's one hard-link index ([`Workspace::is_link_to_secret`]) finds them: links to
//!   the workspace's secret and `deny_path` files and to the home's secret files;
//! - `.git/hooks`, `.git/config` (of the workspace and of any repository inside it),
//!   `.steward`, `.stewardignore` and shell startup files are read-only, even beneath a
//!   writable folder: each makes a later program run something.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use steward_policy::{Workspace, is_secret_path};

use super::{ToolContext, ToolError};
pub use steward_config::{DEFAULT_HOME_KEEP, SandboxSettings, home_paths};

/// Most entries looked at in one workspace. A larger workspace is refused rather than
/// partly masked.
const MAX_WALK_ENTRIES: usize = 1_000_000;

/// Names that are read-only wherever they are: Steward's control files and files a shell or
/// `direnv` runs at start-up.
const READ_ONLY_NAMES: &[&str] = &[
    ".steward",
    ".stewardignore",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".envrc",
];

/// What the sandbox covers and freezes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SandboxPaths {
    /// Absolute paths to cover (secret paths and hard links to secret files).
    pub mask: Vec<PathBuf>,
    /// Absolute paths to make read-only.
    pub read_only: Vec<PathBuf>,
}

/// The workspace is too large to walk before a sandboxed call: its secret files cannot all
/// be found, so nothing runs.
#[derive(Debug, thiserror::Error)]
#[error("the workspace has more than {MAX_WALK_ENTRIES} entries; its secret files cannot all be found")]
pub struct TooManyEntries;

/// Walks `workspace` (every file, ignored ones too, without following links or
/// entering `.git`; a plain directory walk, since it runs before every sandboxed call) and
/// lists what to cover and freeze (see the module docs). Errors: [`TooManyEntries`] when the
/// workspace has more than 1,000,000 entries.
pub fn sandbox_paths(workspace: &Workspace) -> Result<SandboxPaths, TooManyEntries> {
    let root = workspace.root().to_path_buf();
    let mut paths = SandboxPaths::default();
    let mut other_files: Vec<PathBuf> = Vec::new();
    let mut seen = 0usize;
    // Folders still to read, each with whether it lies inside a masked folder.
    let mut pending: Vec<(PathBuf, bool)> = vec![(root.clone(), false)];
    while let Some((dir, inside_masked)) = pending.pop() {
        // An unreadable folder is as unreadable inside the sandbox (same user).
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_WALK_ENTRIES {
                return Err(TooManyEntries);
            }
            let Ok(kind) = entry.file_type() else { continue };
            let path = entry.path();
            let file_name = entry.file_name();
            let name = file_name.to_string_lossy();
            if name.eq_ignore_ascii_case(".git") {
                // Not entered and not masked (git needs it); what runs programs is frozen.
                for inner in ["hooks", "config"] {
                    let candidate = path.join(inner);
                    if kind.is_dir() && candidate.symlink_metadata().is_ok() {
                        paths.read_only.push(candidate);
                    }
                }
                continue;
            }
            if READ_ONLY_NAMES.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
                paths.read_only.push(path.clone());
            }
            // Every folder above was found not secret, so only this name and its pair with the
            // parent's name (`.aws/credentials`) can make the path secret: the same answer as
            // `is_secret_path` on the whole relative path, for a fraction of the work. A
            // `deny_path` glob is matched on the whole relative path.
            let parent_name = if dir == root { None } else { dir.file_name() };
            let tail: PathBuf =
                parent_name.map_or_else(|| PathBuf::from(&file_name), |p| Path::new(p).join(&file_name));
            let secret = inside_masked
                || is_secret_path(&tail)
                || path.strip_prefix(&root).is_ok_and(|rel| workspace.is_denied(rel, kind.is_dir()));
            if secret && !inside_masked {
                // A folder's mask covers what is inside; its files are still looked at for links.
                paths.mask.push(path.clone());
            }
            if kind.is_dir() {
                pending.push((path, secret));
            } else if kind.is_file() && !secret {
                other_files.push(path);
            }
        }
    }
    // Hard links: a file with one name is never another name of a secret file.
    for path in other_files {
        if let Ok(meta) = std::fs::symlink_metadata(&path)
            && meta.nlink() > 1
            && let Ok(rel) = path.strip_prefix(&root)
            && workspace.is_link_to_secret(rel)
        {
            paths.mask.push(path);
        }
    }
    Ok(paths)
}

/// Everything a sandboxed program must not see, `keep` being the paths that must stay visible
/// to it (the workspace, its working directory and writable folders): the workspace's masks
/// and read-only paths of [`sandbox_paths`], and Steward's own files
/// ([`steward_config::state_paths::steward_paths`], covered around the kept paths with
/// [`steward_config::state_paths::cover_around`]). Errors: [`TooManyEntries`].
pub fn hidden_paths(workspace: &Workspace, keep: &[PathBuf]) -> Result<SandboxPaths, TooManyEntries> {
    let mut paths = sandbox_paths(workspace)?;
    let keep: Vec<PathBuf> = keep.iter().map(|k| k.canonicalize().unwrap_or_else(|_| k.clone())).collect();
    for place in steward_config::state_paths::steward_paths() {
        for covered in steward_config::state_paths::cover_around(&place, &keep) {
            if !paths.mask.contains(&covered) {
                paths.mask.push(covered);
            }
        }
    }
    Ok(paths)
}

/// What the sandbox of a stdio MCP server started for a run in `workspace` covers: the masks
/// of [`hidden_paths`] keeping the workspace and its working directory visible, computed each
/// time one starts.
pub fn mcp_hidden_paths(workspace: Workspace) -> steward_mcp::HiddenPaths {
    std::sync::Arc::new(move |cwd: &Path| {
        let keep = [workspace.root().to_path_buf(), cwd.to_path_buf()];
        hidden_paths(&workspace, &keep).map(|paths| paths.mask).map_err(|e| e.to_string())
    })
}

/// Fills in the sandbox's view for `request`: the masks and read-only paths of
/// [`hidden_paths`] keeping the workspace, its working directory and writable paths visible,
/// and the home settings of
/// `[sandbox]`. Errors (`tool_failed`): the workspace cannot be walked.
pub fn confine(
    request: steward_sandbox::ExecRequest,
    ctx: &ToolContext,
) -> Result<steward_sandbox::ExecRequest, ToolError> {
    let mut keep = vec![ctx.workspace.root().to_path_buf(), request.cwd.clone()];
    keep.extend(request.writable.iter().cloned());
    let paths =
        hidden_paths(&ctx.workspace, &keep).map_err(|e| ToolError::failed(format!("the command was not run: {e}")))?;
    Ok(steward_sandbox::ExecRequest {
        mask: paths.mask,
        read_only: paths.read_only,
        hide_home: !ctx.sandbox.show_home,
        home_keep: ctx.sandbox.home_keep.clone(),
        ..request
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_paths_and_their_hard_links_are_masked_but_not_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join(".env"), "KEY=value").unwrap();
        std::fs::create_dir_all(root.join("sub/.ssh")).unwrap();
        std::fs::write(root.join("sub/.ssh/id_rsa"), "key").unwrap();
        std::fs::hard_link(root.join(".env"), root.join("notes.txt")).unwrap();
        std::fs::hard_link(root.join("sub/.ssh/id_rsa"), root.join("sub/copy")).unwrap();
        std::fs::write(root.join("plain.txt"), "x").unwrap();
        // A secret only as a pair of names, and one deep down.
        std::fs::create_dir_all(root.join("sub/.aws")).unwrap();
        std::fs::write(root.join("sub/.aws/credentials"), "k").unwrap();
        std::fs::write(root.join("sub/.aws/config"), "region").unwrap();
        std::fs::create_dir_all(root.join("deep/a/b")).unwrap();
        std::fs::write(root.join("deep/a/b/.env.local"), "k").unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        std::fs::create_dir_all(root.join(".steward")).unwrap();
        std::fs::write(root.join("out.bashrc"), "").unwrap();
        std::fs::create_dir_all(root.join("out")).unwrap();
        std::fs::write(root.join("out/.bashrc"), "").unwrap();

        let paths = sandbox_paths(&Workspace::open(&root, &[]).unwrap()).unwrap();
        let mut mask = paths.mask.clone();
        mask.sort();
        let expected: Vec<PathBuf> =
            [".env", "deep/a/b/.env.local", "notes.txt", "sub/.aws/credentials", "sub/.ssh", "sub/copy"]
                .iter()
                .map(|p| root.join(p))
                .collect();
        assert_eq!(mask, expected);
        for frozen in [".git/hooks", ".git/config", ".steward", "out/.bashrc"] {
            assert!(paths.read_only.contains(&root.join(frozen)), "{frozen}: {:?}", paths.read_only);
        }
        assert!(!paths.read_only.contains(&root.join("out.bashrc")));
    }

    #[test]
    fn deny_path_matches_and_steward_files_are_covered() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir_all(root.join("private/deep")).unwrap();
        std::fs::write(root.join("private/deep/plan.txt"), "secret plan").unwrap();
        std::fs::create_dir_all(root.join("data")).unwrap();
        std::fs::write(root.join("data/app.sqlite"), "rows").unwrap();
        std::fs::write(root.join("data/readme.md"), "x").unwrap();
        std::fs::hard_link(root.join("data/app.sqlite"), root.join("copy.bin")).unwrap();
        let ws = Workspace::open(&root, &["private/".into(), "*.sqlite".into()]).unwrap();
        let mut mask = sandbox_paths(&ws).unwrap().mask;
        mask.sort();
        assert_eq!(mask, [root.join("copy.bin"), root.join("data/app.sqlite"), root.join("private")]);

        // A state folder registered by the process: covered, around the working directory
        // when it lies inside it.
        let state = dir.path().canonicalize().unwrap().join("state");
        std::fs::create_dir_all(state.join("index")).unwrap();
        std::fs::write(state.join("approval.key"), "k").unwrap();
        steward_config::state_paths::register(&state);
        let paths = hidden_paths(&ws, std::slice::from_ref(&root)).unwrap();
        assert!(paths.mask.contains(&state), "{:?}", paths.mask);
        let inner = state.join("ws");
        std::fs::create_dir_all(&inner).unwrap();
        let inner_ws = Workspace::open(&inner, &[]).unwrap();
        let paths = hidden_paths(&inner_ws, std::slice::from_ref(&inner)).unwrap();
        assert!(!paths.mask.contains(&state), "{:?}", paths.mask);
        assert!(paths.mask.contains(&state.join("approval.key")) && paths.mask.contains(&state.join("index")));
        assert!(!paths.mask.contains(&inner));
        // The MCP launch path keeps the whole workspace visible whatever the server's folder.
        std::fs::create_dir_all(inner.join("sub")).unwrap();
        std::fs::write(inner.join("notes.txt"), "n").unwrap();
        let mcp = mcp_hidden_paths(inner_ws.clone())(&inner.join("sub")).unwrap();
        assert!(mcp.contains(&state.join("approval.key")), "{mcp:?}");
        assert!(!mcp.iter().any(|m| m.starts_with(&inner)), "{mcp:?}");
        // The MCP launch path uses the same computation.
        let mcp = mcp_hidden_paths(ws.clone())(&root).unwrap();
        assert!(mcp.contains(&state) && mcp.contains(&root.join("private")), "{mcp:?}");
    }
}
