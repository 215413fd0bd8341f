//! Ignore files (`.gitignore`, `.stewardignore`) and `deny_path` globs, matched with the
//! `ignore` crate's gitignore implementation (gitignore(5) syntax and precedence).

use std::path::{Path, PathBuf};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// Names of the ignore files read in every directory of the workspace, in gitignore syntax.
/// `.stewardignore` lets a user hide files from the agent without touching `.gitignore`.
pub(crate) const IGNORE_FILES: &[&str] = &[".gitignore", ".stewardignore"];

/// Largest ignore file read (bytes); a larger one is not an ignore file anyone writes.
pub(crate) const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

/// True when an ignore file may be read: a regular file, not a symbolic link (git refuses
/// those too), of at most [`MAX_IGNORE_FILE_BYTES`]. A repository can otherwise point its
/// `.gitignore` at `/dev/zero` or a huge file and make every walk read without end.
pub(crate) fn readable_ignore_file(file: &Path) -> bool {
    std::fs::symlink_metadata(file).is_ok_and(|m| m.file_type().is_file() && m.len() <= MAX_IGNORE_FILE_BYTES)
}

/// True when `dir` holds an ignore file that must not be read ([`readable_ignore_file`]): a
/// walk does not enter such a directory (the walker would read the file itself).
pub(crate) fn has_unreadable_ignore_file(dir: &Path) -> bool {
    IGNORE_FILES.iter().any(|name| {
        let file = dir.join(name);
        std::fs::symlink_metadata(&file).is_ok() && !readable_ignore_file(&file)
    })
}

/// Builds one matcher from the ignore files found directly in `dir` (absolute, canonical).
/// Returns `None` when the directory has none. Unreadable lines are skipped as git does;
/// matching is case-insensitive so that a rule also hides a differently-cased spelling.
pub(crate) fn dir_matcher(dir: &Path) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(dir);
    let _ = builder.case_insensitive(true);
    let mut any = false;
    for name in IGNORE_FILES {
        let file = dir.join(name);
        if readable_ignore_file(&file) {
            any = true;
            // A partly invalid file still adds its valid lines; the error is about the rest.
            let _ = builder.add(&file);
        }
    }
    if !any {
        return None;
    }
    builder.build().ok()
}

/// Ignore matchers for a chain of directories, outermost first.
#[derive(Debug, Default, Clone)]
pub(crate) struct IgnoreStack {
    /// `(directory, matcher)`, outermost first.
    layers: Vec<(PathBuf, Gitignore)>,
}

impl IgnoreStack {
    /// Reads the ignore files of `root` and of every directory from `root` down to
    /// `root/rel_dir` inclusive (`rel_dir` relative, `""` for the root alone).
    pub(crate) fn for_dirs(root: &Path, rel_dir: &Path) -> IgnoreStack {
        let mut layers = Vec::new();
        let mut dir = root.to_path_buf();
        if let Some(m) = dir_matcher(&dir) {
            layers.push((dir.clone(), m));
        }
        for component in rel_dir.components() {
            dir.push(component);
            if let Some(m) = dir_matcher(&dir) {
                layers.push((dir.clone(), m));
            }
        }
        IgnoreStack { layers }
    }

    /// True when the absolute path `abs` (under the root) is ignored. The deepest ignore file
    /// that has an opinion wins, as in git; a match on a parent directory covers its content.
    pub(crate) fn is_ignored(&self, abs: &Path, is_dir: bool) -> bool {
        for (dir, matcher) in self.layers.iter().rev() {
            let Ok(rel) = abs.strip_prefix(dir) else { continue };
            if rel.as_os_str().is_empty() {
                continue;
            }
            match matcher.matched_path_or_any_parents(rel, is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
        false
    }
}

/// The `deny_path` globs of the configuration, in gitignore syntax, rooted at the workspace.
#[derive(Debug, Clone)]
pub(crate) struct DenyGlobs {
    matcher: Gitignore,
}

impl DenyGlobs {
    /// Compiles the globs; the error names the first bad glob.
    pub(crate) fn new(root: &Path, globs: &[String]) -> Result<DenyGlobs, (String, String)> {
        let mut builder = GitignoreBuilder::new(root);
        builder.case_insensitive(true).map_err(|e| (String::new(), e.to_string()))?;
        builder.allow_unclosed_class(false);
        for glob in globs {
            builder.add_line(None, glob).map_err(|e| (glob.clone(), e.to_string()))?;
        }
        let matcher = builder.build().map_err(|e| (String::new(), e.to_string()))?;
        Ok(DenyGlobs { matcher })
    }

    /// True when the workspace-relative `rel` (or a parent directory of it) is denied.
    pub(crate) fn is_denied(&self, rel: &Path, is_dir: bool) -> bool {
        if rel.as_os_str().is_empty() || rel.has_root() {
            return false;
        }
        self.matcher.matched_path_or_any_parents(rel, is_dir).is_ignore()
    }
}
