//! `[sandbox]` settings as every sandboxed program gets them, and which workspace folders a
//! sandboxed command may ever be given to write.

use std::path::{Path, PathBuf};

/// `[sandbox]` settings every sandboxed tool call uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    /// Leave `$HOME` visible (`[sandbox] show_home = true`); hidden by default.
    pub show_home: bool,
    /// Absolute paths beneath `$HOME` kept visible when it is hidden (`[sandbox] home_keep`).
    pub home_keep: Vec<PathBuf>,
    /// Data limit of a tool's or hook's program in bytes (`[sandbox] memory_mb`, 2048 MiB
    /// by default; `None` with `memory_mb = 0`).
    pub memory_bytes: Option<u64>,
}

/// Parts of `$HOME` kept visible (read-only) by default when it is hidden: where toolchain
/// managers keep programs (`rustup` and `cargo install`, `pyenv`, `nvm`, `volta`, `bun`, `deno`,
/// `go install`, `pip install --user`). None holds credentials: `~/.cargo` is kept only for
/// its `bin`, `registry` and `git` folders, not its `credentials.toml`.
pub const DEFAULT_HOME_KEEP: &[&str] = &[
    ".cargo/bin",
    ".cargo/registry",
    ".cargo/git",
    ".rustup",
    ".pyenv",
    ".nvm",
    ".volta",
    ".bun/bin",
    ".deno/bin",
    "go/bin",
    ".local/bin",
];

/// `names` (relative to `$HOME`) as absolute paths; absolute names and names with `..` are
/// left out, and so is everything when `$HOME` is unset.
pub fn home_paths(names: &[&str]) -> Vec<PathBuf> {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else { return Vec::new() };
    names
        .iter()
        .map(Path::new)
        .filter(|p| p.is_relative() && !p.components().any(|c| c == std::path::Component::ParentDir))
        .map(|p| home.join(p))
        .collect()
}

impl Default for SandboxSettings {
    /// `$HOME` hidden except [`DEFAULT_HOME_KEEP`], the default data limit.
    fn default() -> Self {
        SandboxSettings {
            show_home: false,
            home_keep: home_paths(DEFAULT_HOME_KEEP),
            memory_bytes: Some(steward_sandbox::DEFAULT_MEMORY_BYTES),
        }
    }
}

/// Whether a sandboxed command may be given write access to the workspace folder `rel`
/// (workspace-relative). Never the workspace root (the sandbox grants folders with everything
/// beneath them, so that would include `.git` — its hooks and config run programs later — and
/// Steward's own `.steward/`), nor anything under `.git` or `.steward`. Errors say why.
pub fn writable_folder(rel: &str) -> Result<(), WritableFolderError> {
    let trimmed = rel.trim_start_matches("./").trim_end_matches('/');
    if trimmed.is_empty() || trimmed == "." {
        return Err(WritableFolderError::WholeWorkspace);
    }
    let path = std::path::Path::new(trimmed);
    if steward_policy::is_protected_path(path) || path.components().any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
    {
        return Err(WritableFolderError::Protected(trimmed.to_string()));
    }
    Ok(())
}

/// Why a folder may not be made writable for a sandboxed command ([`writable_folder`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WritableFolderError {
    /// The folder is the workspace root.
    #[error("the whole workspace would be writable, including .git and .steward; name a folder (e.g. `target/**`)")]
    WholeWorkspace,
    /// The folder is `.git`, `.steward` or beneath one (the folder, as written).
    #[error("`{0}` is .git or Steward's own configuration; it is never writable")]
    Protected(String),
}
