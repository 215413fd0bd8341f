//! Workspace containment for every path a tool touches (SPEC T2, T7, X2; cases B09, B10).
//!
//! A path is accepted only when its *real* location — after following every symbolic link
//! that exists — is inside the canonical workspace root, compared component by component
//! (`/ws_evil` is not inside `/ws`), and when it is not a secret path (S1), not matched by
//! `deny_path`, and not ignored by a `.gitignore` / `.stewardignore` of the workspace.

use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::hardlinks::{LinkVerdict, SecretLinks};
use crate::ignore_rules::{DenyGlobs, IgnoreStack};
use steward_secrets::is_secret_path;

/// How a tool means to use a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read or list.
    Read,
    /// Create, overwrite, delete or move.
    Write,
}

/// A path checked against the workspace rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspacePath {
    /// Absolute path with every existing symbolic link resolved (for `Access::Write` the final
    /// component is never a link). Tools open this path.
    pub abs: PathBuf,
    /// Path relative to the workspace root, `/`-separated; `""` for the root itself.
    pub rel: String,
}

/// Why a walker must leave an entry out (see [`Workspace::exclusion`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exclusion {
    /// A secret path (S1).
    Secret,
    /// Ignored by a `.gitignore` or `.stewardignore`.
    Ignored,
    /// Matched by a configured `deny_path` glob.
    Denied,
}

/// Why a path was refused. [`PathError::rule`] gives the rule name used in decisions.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// The real path lies outside the workspace (absolute path elsewhere, `..` climbing out,
    /// a symbolic link pointing out, a dangling link, or a write through a link).
    #[error("`{input}` is outside the workspace: {detail}")]
    Outside {
        /// The path as given.
        input: String,
        /// What exactly escapes.
        detail: String,
    },
    /// A secret path (S1).
    #[error("`{rel}` is a secret path and is never read or written")]
    Secret {
        /// Workspace-relative path.
        rel: String,
    },
    /// Another name (a hard link) of a secret file, or a file with several names that could
    /// not be compared with every secret file (the workspace was too large to scan).
    #[error("`{rel}` {detail}; it is never read or written")]
    SecretLink {
        /// Workspace-relative path.
        rel: String,
        /// Why it counts as secret.
        detail: String,
    },
    /// Another name (a hard link) of a file matched by a `deny_path` glob.
    #[error("`{rel}` is another name (a hard link) of a file matched by a deny_path rule")]
    DeniedLink {
        /// Workspace-relative path.
        rel: String,
    },
    /// Ignored by a `.gitignore` or `.stewardignore` of the workspace.
    #[error("`{rel}` is ignored by the workspace's .gitignore/.stewardignore rules")]
    Ignored {
        /// Workspace-relative path.
        rel: String,
    },
    /// Steward's own control files (`.steward/`, `.stewardignore`): readable, never written
    /// by a tool — a change there would change the policy that judges the change.
    #[error("`{rel}` is Steward's own configuration; tools never write it (edit it yourself)")]
    Protected {
        /// Workspace-relative path.
        rel: String,
    },
    /// Matched by a configured `deny_path` glob.
    #[error("`{rel}` matches a deny_path rule")]
    Denied {
        /// Workspace-relative path.
        rel: String,
    },
    /// Not a usable path (empty, NUL byte, not UTF-8) or a bad `deny_path` glob.
    #[error("invalid path `{input}`: {detail}")]
    Invalid {
        /// The path or glob as given (NUL bytes shown as `\0`).
        input: String,
        /// What is wrong.
        detail: String,
    },
    /// The filesystem failed (workspace root missing, permission denied).
    #[error("cannot inspect `{path}`: {source}")]
    Io {
        /// The path being inspected.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

impl PathError {
    /// The deciding rule's name: `workspace_boundary`, `secret_path`, `ignored_path`,
    /// `deny_path`, `invalid_path` or `io`.
    pub fn rule(&self) -> &'static str {
        match self {
            PathError::Outside { .. } => "workspace_boundary",
            PathError::Secret { .. } | PathError::SecretLink { .. } => "secret_path",
            PathError::Protected { .. } => "protected_path",
            PathError::Ignored { .. } => "ignored_path",
            PathError::Denied { .. } | PathError::DeniedLink { .. } => "deny_path",
            PathError::Invalid { .. } => "invalid_path",
            PathError::Io { .. } => "io",
        }
    }
}

/// A workspace: a canonical root plus the rules that hide paths inside it. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Workspace {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    deny: DenyGlobs,
    links: SecretLinks,
    /// Steward's own places ([`set_steward_owned`]) that lie inside the root, relative to it.
    owned: Vec<PathBuf>,
}

/// The places Steward keeps its own files (state folder, configuration folder, caches), as
/// absolute paths; see [`set_steward_owned`].
static STEWARD_OWNED: RwLock<Vec<PathBuf>> = RwLock::new(Vec::new());

/// Sets the places where Steward keeps its own files (the state folder with its keys,
/// database, snapshots and index; the user configuration folder with `trust.toml`; caches),
/// as absolute paths, for every workspace opened from now on in this process. A path inside a
/// workspace that lies in one of them is refused to every tool as a secret path (read or
/// written) and left out of listings and searches, so an agent working in `$HOME` can neither
/// read the keys or snapshots nor rewrite its own policy or trust list. A place that contains
/// the workspace itself is not counted (a workspace kept under the state folder stays usable).
pub fn set_steward_owned(paths: Vec<PathBuf>) {
    if let Ok(mut owned) = STEWARD_OWNED.write() {
        *owned = paths;
    }
}

/// The places of [`STEWARD_OWNED`] that lie strictly inside `root` (canonical), relative to it.
fn owned_inside(root: &Path) -> Vec<PathBuf> {
    let Ok(owned) = STEWARD_OWNED.read() else { return Vec::new() };
    owned
        .iter()
        .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
        .filter_map(|p| p.strip_prefix(root).ok().map(Path::to_path_buf))
        .filter(|rel| !rel.as_os_str().is_empty())
        .collect()
}

impl Workspace {
    /// Opens a workspace at `root` (canonicalised; it must be an existing directory).
    /// `deny_path` are gitignore-style globs from config, relative to the root
    /// (`secrets/`, `**/*.sqlite`, `/build`), matched case-insensitively.
    ///
    /// Errors: [`PathError::Io`] when the root cannot be canonicalised,
    /// [`PathError::Invalid`] when it is not a directory or a glob does not compile.
    pub fn open(root: &Path, deny_path: &[String]) -> Result<Workspace, PathError> {
        let canonical = root.canonicalize().map_err(|source| PathError::Io { path: root.to_path_buf(), source })?;
        if !canonical.is_dir() {
            return Err(PathError::Invalid {
                input: root.display().to_string(),
                detail: "the workspace root is not a directory".into(),
            });
        }
        let deny = DenyGlobs::new(&canonical, deny_path).map_err(|(glob, detail)| PathError::Invalid {
            input: glob,
            detail: format!("bad deny_path glob: {detail}"),
        })?;
        let links = SecretLinks::new(canonical.clone());
        let owned = owned_inside(&canonical);
        Ok(Workspace { inner: Arc::new(Inner { root: canonical, deny, links, owned }) })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// Checks `input` (relative to the root, or absolute inside it) for `access`.
    ///
    /// Every existing component is resolved through the filesystem (symbolic links followed),
    /// components that do not exist yet are appended as written, and the result must lie
    /// under the root component-wise. Then the path must not be secret, denied or ignored;
    /// both the real path and the path as spelled are checked, so a link named `notes` that
    /// points at `.env` and a link named `.env` are both refused.
    ///
    /// Errors: empty input or NUL → `invalid_path`; escape (including `..`, absolute paths
    /// elsewhere, links out, dangling links, and for `Access::Write` a final component that is
    /// a link) → `workspace_boundary`; then `secret_path`, `deny_path`, `ignored_path`.
    pub fn resolve(&self, input: &str, access: Access) -> Result<WorkspacePath, PathError> {
        if input.is_empty() || input.contains('\0') {
            return Err(PathError::Invalid {
                input: input.replace('\0', "\\0"),
                detail: if input.is_empty() { "empty path".into() } else { "contains a NUL byte".into() },
            });
        }
        let root = self.root();
        let outside = |detail: &str| PathError::Outside { input: input.to_string(), detail: detail.to_string() };
        let given = Path::new(input);
        let mut lexical = if given.is_absolute() { PathBuf::from("/") } else { root.to_path_buf() };
        let mut real = lexical.clone();
        let components: Vec<Component<'_>> = given.components().collect();
        let last_normal = components.iter().rposition(|c| matches!(c, Component::Normal(_)));
        for (index, component) in components.iter().enumerate() {
            match component {
                Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
                Component::ParentDir => {
                    lexical.pop();
                    real.pop();
                }
                Component::Normal(name) => {
                    lexical.push(name);
                    let is_last = Some(index) == last_normal;
                    real = step(&real, name, is_last, access).map_err(|e| match e {
                        StepError::Outside(detail) => outside(&detail),
                        StepError::Io(path, source) => PathError::Io { path, source },
                    })?;
                }
            }
        }
        let rel_real =
            real.strip_prefix(root).map_err(|_| outside(&format!("it resolves to {}", real.display())))?.to_path_buf();
        let rel = rel_string(&rel_real, input)?;
        let is_dir = real.is_dir();
        self.check_rel(&rel_real, is_dir, &rel)?;
        if access == Access::Write && is_protected_path(&rel_real) {
            return Err(PathError::Protected { rel });
        }
        // The path as spelled (a link's own name) must pass the same rules.
        if let Ok(rel_lexical) = lexical.strip_prefix(root)
            && rel_lexical != rel_real
        {
            self.check_rel(rel_lexical, is_dir, &rel_lexical.to_string_lossy())?;
        }
        check_links(self.inner.links.verdict(&real, &|r| self.inner.deny.is_denied(r, false)), &rel)?;
        Ok(WorkspacePath { abs: real, rel })
    }

    fn check_rel(&self, rel: &Path, is_dir: bool, shown: &str) -> Result<(), PathError> {
        // (Protected control files are checked for writes in `resolve`.)
        match self.name_exclusion(rel, is_dir) {
            None => Ok(()),
            Some(Exclusion::Secret) => Err(PathError::Secret { rel: shown.to_string() }),
            Some(Exclusion::Denied) => Err(PathError::Denied { rel: shown.to_string() }),
            Some(Exclusion::Ignored) => Err(PathError::Ignored { rel: shown.to_string() }),
        }
    }

    /// True when the file at the workspace-relative `rel` is another name (a hard link, same
    /// device and inode) of a secret or `deny_path` file of the workspace or of the home's
    /// secret places, or when that cannot be known (the scan stopped at its limit). The one
    /// hard-link index every path check uses; the sandbox masks what it names.
    pub fn is_link_to_secret(&self, rel: &Path) -> bool {
        let verdict = self.inner.links.verdict(&self.root().join(rel), &|r| self.inner.deny.is_denied(r, false));
        !matches!(verdict, LinkVerdict::Plain)
    }

    /// True when a configured `deny_path` glob matches the workspace-relative `rel` (or a
    /// folder above it). The sandbox covers what it matches, as it covers secret paths.
    pub fn is_denied(&self, rel: &Path, is_dir: bool) -> bool {
        self.inner.deny.is_denied(rel, is_dir)
    }

    /// For walkers (list, search): why the entry at the workspace-relative `rel` must be left
    /// out, if it must. Checks, in order, the secret predicate, `deny_path`, then the ignore
    /// files of the root and of every directory down to the entry's parent. The ignore files
    /// are read on every call (always current, nothing cached); inside a [`Workspace::walk`]
    /// the walker has already applied them. Another name (a hard link) of a secret file is
    /// secret too.
    pub fn exclusion(&self, rel: &Path, is_dir: bool) -> Option<Exclusion> {
        if rel.as_os_str().is_empty() || rel.has_root() {
            return None;
        }
        if !is_dir {
            match self.inner.links.verdict(&self.root().join(rel), &|r| self.inner.deny.is_denied(r, false)) {
                LinkVerdict::Plain => {}
                LinkVerdict::Denied => return Some(Exclusion::Denied),
                LinkVerdict::Secret | LinkVerdict::Unknown => return Some(Exclusion::Secret),
            }
        }
        self.name_exclusion(rel, is_dir)
    }

    /// [`Workspace::exclusion`] by the path's name alone (hard links are checked apart, so a
    /// refusal can say which rule applied).
    fn name_exclusion(&self, rel: &Path, is_dir: bool) -> Option<Exclusion> {
        if rel.as_os_str().is_empty() || rel.has_root() {
            return None;
        }
        if is_secret_path(rel) || self.inner.owned.iter().any(|owned| rel.starts_with(owned)) {
            return Some(Exclusion::Secret);
        }
        if self.inner.deny.is_denied(rel, is_dir) {
            return Some(Exclusion::Denied);
        }
        let parent = rel.parent().unwrap_or(Path::new(""));
        let stack = IgnoreStack::for_dirs(self.root(), parent);
        if stack.is_ignored(&self.root().join(rel), is_dir) {
            return Some(Exclusion::Ignored);
        }
        None
    }

    /// A walker rooted at `dir` that honours `.gitignore` and `.stewardignore` (nested ones
    /// too, also outside a git repository; the files between the root and `dir` included),
    /// shows hidden files, never yields secret paths, `.git`, or `deny_path` matches (nor hard
    /// links to such files), and does not follow symbolic links (links are yielded as links;
    /// resolve before reading).
    pub fn walk(&self, dir: &WorkspacePath) -> ignore::Walk {
        self.walk_pruned(dir, |_, _| false)
    }

    /// [`Workspace::walk`] that also leaves out every entry for which `prune(rel, is_dir)` is
    /// true (a pruned directory is not entered), `rel` being workspace-relative: the search
    /// index leaves dependency and build folders out this way.
    pub fn walk_pruned(
        &self,
        dir: &WorkspacePath,
        prune: impl Fn(&Path, bool) -> bool + Send + Sync + 'static,
    ) -> ignore::Walk {
        let root = self.root().to_path_buf();
        let rel_dir = PathBuf::from(&dir.rel);
        // Ignore files above `dir` (the walker itself reads those of `dir` and below).
        let above = IgnoreStack::for_dirs(&root, rel_dir.parent().unwrap_or(Path::new("")));
        let inner = Arc::clone(&self.inner);
        let mut builder = ignore::WalkBuilder::new(&dir.abs);
        // An ignore file that is a link, a device or huge is never read: such a folder is not
        // walked at all (the walker reads a folder's ignore files as it enters it).
        if crate::ignore_rules::has_unreadable_ignore_file(&dir.abs) {
            builder.max_depth(Some(0));
        }
        builder
            .hidden(false)
            .parents(false)
            .ignore(false)
            .git_ignore(true)
            .git_global(false)
            .git_exclude(false)
            .require_git(false)
            .ignore_case_insensitive(true)
            .follow_links(false)
            .add_custom_ignore_filename(".stewardignore")
            .filter_entry(move |entry| {
                let Ok(rel) = entry.path().strip_prefix(&inner.root) else { return false };
                if rel.as_os_str().is_empty() {
                    return true;
                }
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                if is_dir && crate::ignore_rules::has_unreadable_ignore_file(entry.path()) {
                    return false;
                }
                let denied = |r: &Path| inner.deny.is_denied(r, false);
                let linked_secret = entry.file_type().is_some_and(|t| t.is_file())
                    && entry
                        .metadata()
                        .map_or(true, |meta| inner.links.verdict_for(&meta, &denied) != LinkVerdict::Plain);
                !(is_secret_path(rel)
                    || inner.owned.iter().any(|owned| rel.starts_with(owned))
                    || prune(rel, is_dir)
                    || linked_secret
                    || inner.deny.is_denied(rel, is_dir)
                    || above.is_ignored(entry.path(), is_dir))
            });
        builder.build()
    }
}

/// Refuses a file that is another name of a secret or denied file, or that could not be
/// compared.
fn check_links(verdict: LinkVerdict, rel: &str) -> Result<(), PathError> {
    let detail = match verdict {
        LinkVerdict::Plain => return Ok(()),
        LinkVerdict::Denied => return Err(PathError::DeniedLink { rel: rel.to_string() }),
        LinkVerdict::Secret => "is another name (a hard link) of a secret file",
        LinkVerdict::Unknown => {
            "has several names (hard links) and the workspace is too large to compare them all with the secret files"
        }
    };
    Err(PathError::SecretLink { rel: rel.to_string(), detail: detail.to_string() })
}

enum StepError {
    Outside(String),
    Io(PathBuf, io::Error),
}

/// Appends `name` to the already-real path `base`, following a symbolic link if `name` is
/// one. Links must resolve (a dangling link is refused); for a write, the final component
/// must not be a link at all.
fn step(base: &Path, name: &OsStr, is_last: bool, access: Access) -> Result<PathBuf, StepError> {
    let candidate = base.join(name);
    match std::fs::symlink_metadata(&candidate) {
        Ok(meta) if meta.file_type().is_symlink() => {
            if is_last && access == Access::Write {
                return Err(StepError::Outside(format!(
                    "`{}` is a symbolic link and writes never go through links",
                    name.to_string_lossy()
                )));
            }
            candidate.canonicalize().map_err(|_| {
                StepError::Outside(format!("`{}` is a symbolic link that does not resolve", name.to_string_lossy()))
            })
        }
        Ok(_) => Ok(candidate),
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => Ok(candidate),
        Err(e) => Err(StepError::Io(candidate, e)),
    }
}

/// The `/`-separated form of a relative path; non-UTF-8 names are refused.
fn rel_string(rel: &Path, input: &str) -> Result<String, PathError> {
    let mut parts = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(name) => match name.to_str() {
                Some(s) => parts.push(s),
                None => {
                    return Err(PathError::Invalid { input: input.to_string(), detail: "not valid UTF-8".into() });
                }
            },
            _ => {
                return Err(PathError::Invalid {
                    input: input.to_string(),
                    detail: "not a plain relative path".into(),
                });
            }
        }
    }
    Ok(parts.join("/"))
}

/// True for Steward's own control files, which tools may read but never write: anything under
/// a `.steward` folder and any `.stewardignore` file (compared case-insensitively).
pub fn is_protected_path(rel: &Path) -> bool {
    rel.components().any(|c| {
        let name = c.as_os_str().to_string_lossy().to_lowercase();
        name == ".steward" || name == ".stewardignore"
    })
}
