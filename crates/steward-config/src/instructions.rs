//! Instruction files, read as other agent harnesses read them: the user's global `AGENTS.md`
//! in Steward's configuration folder, then the `AGENTS.md` of every folder from the
//! repository root down to the workspace (a folder without one offers its `CLAUDE.md`
//! instead; a folder's `.agents/AGENTS.md` follows its own). More general files come first, so
//! a more specific one, later in the prompt, takes precedence.
//!
//! They are context for model planners and nothing more: the files of a repository are text
//! its authors wrote, so nothing in them changes what the policy allows, and they are read
//! through the repository's path rules (a link leading outside it, or to a secret file, is
//! refused with a warning).

use std::path::{Path, PathBuf};

use serde::Serialize;

/// Most characters given to the model from one instruction file; the rest is cut, with a
/// warning.
pub const MAX_INSTRUCTION_FILE_CHARS: usize = 16_000;

/// Most characters given to the model from all instruction files together; files past it are
/// cut or left out, with a warning.
pub const MAX_INSTRUCTIONS_CHARS: usize = 32_000;

/// One instruction file given to model planners.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstructionFile {
    /// Where it was read (absolute).
    pub path: PathBuf,
    /// What it applies to: `all workspaces` (the global file), `the whole repository`, or a
    /// folder relative to the repository root (`crates/core/`).
    pub applies_to: String,
    /// Characters given to the model, after the caps.
    pub chars: usize,
    /// True when a cap cut it.
    pub truncated: bool,
}

/// The instruction text for model planners (`None` when no file has any) and the files it
/// came from, in prompt order.
pub(super) fn read_instructions(
    user_dir: Option<&Path>,
    workspace: &Path,
    warnings: &mut Vec<String>,
) -> (Option<String>, Vec<InstructionFile>) {
    let mut found: Vec<(PathBuf, String, String)> = Vec::new();
    if let Some(dir) = user_dir {
        let path = dir.join("AGENTS.md");
        if std::fs::symlink_metadata(&path).is_ok() {
            match std::fs::read_to_string(&path) {
                Ok(body) => found.push((path, "all workspaces".into(), body)),
                Err(e) => {
                    warnings.push(format!("{}: not readable text ({e}); it is not given to the model", path.display()))
                }
            }
        }
    }
    if let Ok(workspace) = std::fs::canonicalize(workspace) {
        let root = repository_root(&workspace);
        match steward_policy::Workspace::open(&root, &[]) {
            Ok(repo) => {
                for folder in folders(&root, &workspace) {
                    repository_files(&repo, &root, &folder, &mut found, warnings);
                }
            }
            Err(e) => warnings.push(format!("{}: instruction files not read: {e}", root.display())),
        }
    }
    let mut text = String::new();
    let mut files = Vec::new();
    let mut left = MAX_INSTRUCTIONS_CHARS;
    for (path, applies_to, body) in found {
        let body = body.trim();
        if body.is_empty() {
            continue;
        }
        let total = body.chars().count();
        let given = total.min(MAX_INSTRUCTION_FILE_CHARS).min(left);
        if given == 0 {
            warnings.push(format!(
                "{}: left out: the instruction files before it already hold {MAX_INSTRUCTIONS_CHARS} characters",
                path.display()
            ));
            continue;
        }
        if given < total {
            warnings.push(format!(
                "{}: cut to {given} of {total} characters (at most {MAX_INSTRUCTION_FILE_CHARS} per file, {MAX_INSTRUCTIONS_CHARS} in all)",
                path.display()
            ));
        }
        left -= given;
        text.push_str(&format!("--- {} (applies to {applies_to}) ---\n", path.display()));
        text.push_str(steward_protocol::truncate_chars(body, given));
        text.push_str("\n\n");
        files.push(InstructionFile { path, applies_to, chars: given, truncated: given < total });
    }
    let text = text.trim_end().to_string();
    ((!text.is_empty()).then_some(text), files)
}

/// The nearest folder at or above `workspace` holding `.git` (a folder, or a file for a
/// worktree); `workspace` itself when there is none.
fn repository_root(workspace: &Path) -> PathBuf {
    workspace
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
        .unwrap_or(workspace)
        .to_path_buf()
}

/// Folders from `root` down to `workspace`, relative to `root` (`""` first).
fn folders(root: &Path, workspace: &Path) -> Vec<PathBuf> {
    let below = workspace.strip_prefix(root).unwrap_or(Path::new(""));
    let mut out = vec![PathBuf::new()];
    let mut current = PathBuf::new();
    for part in below.components() {
        current.push(part);
        out.push(current.clone());
    }
    out
}

/// The instruction files of one folder (`folder` relative to the repository root): its
/// `AGENTS.md`, else its `CLAUDE.md`, then its `.agents/AGENTS.md`.
fn repository_files(
    repo: &steward_policy::Workspace,
    root: &Path,
    folder: &Path,
    found: &mut Vec<(PathBuf, String, String)>,
    warnings: &mut Vec<String>,
) {
    let exists = |name: &str| std::fs::symlink_metadata(root.join(folder).join(name)).is_ok();
    let main = if exists("AGENTS.md") {
        Some("AGENTS.md")
    } else if exists("CLAUDE.md") {
        Some("CLAUDE.md")
    } else {
        None
    };
    let extra = exists(".agents/AGENTS.md").then_some(".agents/AGENTS.md");
    let applies_to = if folder.as_os_str().is_empty() {
        "the whole repository".to_string()
    } else {
        format!("{}/", folder.display())
    };
    for name in main.into_iter().chain(extra) {
        let rel = folder.join(name);
        let shown = root.join(&rel);
        let Some(rel_text) = rel.to_str() else {
            warnings.push(format!("{}: the path is not UTF-8; it is not given to the model", shown.display()));
            continue;
        };
        match repo.resolve(rel_text, steward_policy::Access::Read).map(|p| std::fs::read_to_string(p.abs)) {
            Ok(Ok(body)) => found.push((shown, applies_to.clone(), body)),
            Ok(Err(e)) => {
                warnings.push(format!("{}: not readable text ({e}); it is not given to the model", shown.display()))
            }
            Err(e) => warnings.push(format!("{}: not given to the model: {e}", shown.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("folder");
        std::fs::write(path, text).expect("written");
    }

    #[test]
    fn files_are_read_from_the_global_folder_then_root_down_with_claude_md_as_fallback() {
        let user = tempfile::tempdir().expect("tempdir");
        let repo = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(repo.path()).expect("canonical");
        std::fs::create_dir(root.join(".git")).expect(".git");
        write(user.path(), "AGENTS.md", "global rule");
        write(&root, "AGENTS.md", "root rule");
        write(&root, "CLAUDE.md", "ignored: AGENTS.md exists here");
        write(&root, "crates/CLAUDE.md", "crates rule");
        write(&root, "crates/core/AGENTS.md", "core rule");
        write(&root, "crates/core/src/AGENTS.md", "below the workspace: not read");
        write(&root, "other/AGENTS.md", "another subtree: not read");
        let mut warnings = Vec::new();
        let (text, files) = read_instructions(Some(user.path()), &root.join("crates/core"), &mut warnings);
        let text = text.expect("instructions");
        let order: Vec<usize> = ["global rule", "root rule", "crates rule", "core rule"]
            .iter()
            .map(|needle| text.find(needle).expect(needle))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(!text.contains("ignored") && !text.contains("not read"), "{text}");
        let applies: Vec<&str> = files.iter().map(|f| f.applies_to.as_str()).collect();
        assert_eq!(applies, ["all workspaces", "the whole repository", "crates/", "crates/core/"]);
        assert!(files[2].path.ends_with("crates/CLAUDE.md"));
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn the_caps_cut_a_long_file_and_leave_out_what_no_longer_fits() {
        let repo = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(repo.path()).expect("canonical");
        std::fs::create_dir(root.join(".git")).expect(".git");
        write(&root, "AGENTS.md", &"a".repeat(MAX_INSTRUCTION_FILE_CHARS + 10));
        write(&root, "x/AGENTS.md", &"b".repeat(MAX_INSTRUCTION_FILE_CHARS + 10));
        write(&root, "x/y/AGENTS.md", "c");
        let mut warnings = Vec::new();
        let (_, files) = read_instructions(None, &root.join("x/y"), &mut warnings);
        assert_eq!(files.len(), 2, "{files:?}");
        assert!(files.iter().all(|f| f.truncated && f.chars == MAX_INSTRUCTION_FILE_CHARS));
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[2].contains("left out"), "{warnings:?}");
    }

    #[test]
    fn a_link_leaving_the_repository_is_refused() {
        let outside = tempfile::tempdir().expect("tempdir");
        write(outside.path(), "secret.md", "outside text");
        let repo = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(repo.path()).expect("canonical");
        std::os::unix::fs::symlink(outside.path().join("secret.md"), root.join("AGENTS.md")).expect("link");
        let mut warnings = Vec::new();
        let (text, files) = read_instructions(None, &root, &mut warnings);
        assert!(text.is_none() && files.is_empty());
        assert!(warnings.iter().any(|w| w.contains("AGENTS.md")), "{warnings:?}");
    }
}
