//! Paths named by free-form argument values (SPEC T7, S1): a value a program receives as an
//! argv item is a path to that program whenever a file of that name exists, whatever the
//! input was declared as. A `[[tool]]` input without `path = true` given `.env` runs `cat
//! .env` all the same, so such values are judged by what they name on disk, not by how the
//! input is labelled.
//!
//! [`Workspace::paths_named_by`] lists the parts of a value that name a path: the whole value,
//! every piece between the separators `=`, `,`, `:` and `;` (`--file=.env`, `if=.env`,
//! `a,.env`, `HEAD:.env`), every suffix after such a separator, and each of these without a
//! leading `@` (`@.env`, as curl reads it). A part counts when something of that name exists
//! (relative to the directory the program runs in, or absolute), or when its spelling alone
//! is a secret path ([`is_secret_path`]: `.env` that does not exist yet, `id_rsa`). The gate
//! then resolves each like a path input, so an existing path outside the workspace is refused
//! as `workspace_boundary` and a secret one as `secret_path`.
//!
//! Bounds: parts longer than 4096 bytes (`PATH_MAX`) are skipped, and suffixes are taken after
//! the first 16 separators only (every piece is always taken), so a value costs linear time.
//!
//! Not covered: values a program splits by other rules (a space-separated list inside one
//! item, a glob the program expands itself, `~` expanded by the program, a prefix glued to a
//! path without a separator such as `-f.env`), and names a program derives from a value (a
//! directory it walks on its own is judged by the directory's name only).

use std::path::Path;

use crate::paths::{Access, PathError, Workspace};
use steward_secrets::is_secret_path;

/// Characters that separate the parts of one value.
const SEPARATORS: &[char] = &['=', ',', ':', ';'];

/// Suffixes are taken after the first this many separators only (every piece between two
/// separators is always taken), so a value with thousands of separators costs linear time.
const MAX_SUFFIXES: usize = 16;

/// Longest part looked at, in bytes: a longer one cannot be opened as one path (`PATH_MAX`).
const MAX_PART_BYTES: usize = 4096;

/// The parts of `value` that a program could open as a path (see the module documentation),
/// deduplicated, in order of appearance; empty parts and parts longer than 4096 bytes are
/// left out, and suffixes are taken after the first 16 separators only.
pub fn path_parts(value: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = vec![value];
    let mut start = 0;
    for (count, (index, ch)) in value.char_indices().filter(|(_, c)| SEPARATORS.contains(c)).enumerate() {
        parts.push(&value[start..index]);
        if count < MAX_SUFFIXES {
            parts.push(&value[index + ch.len_utf8()..]);
        }
        start = index + ch.len_utf8();
    }
    if start > 0 {
        parts.push(&value[start..]);
    }
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<&str> = Vec::with_capacity(parts.len() * 2);
    for part in parts.into_iter().filter(|p| p.len() <= MAX_PART_BYTES) {
        for candidate in [part, part.strip_prefix('@').unwrap_or("")] {
            if !candidate.is_empty() && seen.insert(candidate) {
                out.push(candidate);
            }
        }
    }
    out
}

impl Workspace {
    /// The paths `value` names for a program that runs in `cwd` (workspace-relative,
    /// `/`-separated, `""` for the root): each part from [`path_parts`] that exists (relative
    /// to `cwd`, or absolute) or is spelled like a secret path, as a path for
    /// [`Workspace::resolve`] (joined to `cwd` when relative). Only reads the filesystem
    /// (`lstat`, no links followed for the test of existence).
    pub fn paths_named_by(&self, value: &str, cwd: &str) -> Vec<String> {
        let base = self.root().join(cwd);
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for part in path_parts(value) {
            let given = Path::new(part);
            let exists = std::fs::symlink_metadata(base.join(given)).is_ok();
            if !exists && !is_secret_path(given) {
                continue;
            }
            let named = if given.is_absolute() || cwd.is_empty() {
                part.to_string()
            } else {
                Path::new(cwd).join(given).to_string_lossy().into_owned()
            };
            if seen.insert(named.clone()) {
                out.push(named);
            }
        }
        out
    }

    /// The secret file `value` names, if any, as the refusal: like
    /// [`Workspace::paths_named_by`] from the workspace root, but only secrets count — a
    /// secret path or a hard link to a secret file inside the workspace, and outside it any
    /// path spelled like a secret (`/home/me/.ssh/id_rsa`). For values handed to programs
    /// whose own rules decide where they may reach (MCP servers): paths elsewhere are theirs
    /// to refuse, secret files never.
    pub fn secret_named_by(&self, value: &str) -> Option<PathError> {
        for named in self.paths_named_by(value, "") {
            match self.resolve(&named, Access::Read) {
                Err(err @ (PathError::Secret { .. } | PathError::SecretLink { .. })) => return Some(err),
                Err(PathError::Outside { .. }) if is_secret_path(Path::new(&named)) => {
                    return Some(PathError::Secret { rel: named });
                }
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::Access;

    #[test]
    fn parts_cover_option_values_lists_and_at_files() {
        assert_eq!(path_parts("--file=.env"), ["--file=.env", "--file", ".env"]);
        assert_eq!(path_parts("a,.env"), ["a,.env", "a", ".env"]);
        assert_eq!(path_parts("HEAD:.env"), ["HEAD:.env", "HEAD", ".env"]);
        assert_eq!(path_parts("@.env"), ["@.env", ".env"]);
        assert_eq!(path_parts("if=x,y"), ["if=x,y", "if", "x,y", "x", "y"]);
        assert_eq!(path_parts(""), Vec::<&str>::new());
        // Thousands of separators: every piece, suffixes only after the first ones.
        let long = "x,".repeat(5000) + ".env";
        let parts = path_parts(&long);
        assert!(parts.contains(&".env") && parts.len() < 40, "{}", parts.len());
    }

    #[test]
    fn values_naming_existing_or_secret_paths_are_resolved_like_path_inputs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws/sub")).unwrap();
        std::fs::write(dir.path().join("ws/.env"), "X=1\n").unwrap();
        std::fs::write(dir.path().join("ws/sub/a.txt"), "a\n").unwrap();
        std::fs::write(dir.path().join("outside.txt"), "o\n").unwrap();
        let ws = Workspace::open(&dir.path().join("ws"), &[]).unwrap();
        let refused = |value: &str, cwd: &str| {
            ws.paths_named_by(value, cwd).iter().find_map(|p| ws.resolve(p, Access::Read).err()).map(|e| e.rule())
        };
        assert_eq!(refused(".env", ""), Some("secret_path"));
        assert_eq!(refused("--env-file=.env", ""), Some("secret_path"));
        assert_eq!(refused("../.env", "sub"), Some("secret_path"));
        assert_eq!(refused("prod.env", ""), Some("secret_path"), "a secret spelling that does not exist");
        assert_eq!(refused("../outside.txt", ""), Some("workspace_boundary"));
        assert_eq!(refused("/", ""), Some("workspace_boundary"));
        assert_eq!(refused("a.txt", "sub"), None);
        assert_eq!(refused("hello world", ""), None);
        assert_eq!(refused("https://example.com/x", ""), None);
        assert_eq!(ws.paths_named_by("a.txt", "sub"), ["sub/a.txt"]);
        // Only secrets count for `secret_named_by`.
        let secret = |value: &str| ws.secret_named_by(value).map(|e| e.rule());
        assert_eq!(secret("sub/../.env"), Some("secret_path"));
        assert_eq!(secret("/elsewhere/.ssh/id_rsa"), Some("secret_path"));
        assert_eq!(secret("../outside.txt"), None);
        assert_eq!(secret("sub/a.txt"), None);
    }
}
