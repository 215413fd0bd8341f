//! Steward's own files, which no sandboxed program may see wherever they lie: the state
//! folder (`$STEWARD_HOME`, default `~/.steward`: the database, `approval.key`,
//! `session.key`, the search index, saved outputs, snapshots), the user configuration folder
//! (`$XDG_CONFIG_HOME/steward`, default `~/.config/steward`), and Steward's folders under the
//! XDG cache, data and state homes. A process adds the places it actually uses
//! ([`register`]: the runtime's state folder, the configuration folder it loaded, a session
//! key file); [`steward_paths`] gives them all, and the sandbox of every program covers them
//! (see `tools::sandbox_paths`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The places registered by this process.
static REGISTERED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Adds `path` (a folder or file Steward owns) to what sandboxed programs must not see and
/// what the built-in tools refuse ([`steward_policy::set_steward_owned`]), for the rest of the
/// process. A relative path is taken from the current directory.
pub fn register(path: &Path) {
    let Some(path) = absolute(path) else { return };
    if let Ok(mut registered) = REGISTERED.lock()
        && !registered.contains(&path)
    {
        registered.push(path);
    }
    // The same places are refused to the built-in tools (as secret paths), not only hidden
    // from sandboxed programs.
    steward_policy::set_steward_owned(steward_paths());
}

/// Every place Steward keeps its own files, as absolute paths, each once: the defaults read
/// from the environment (`STEWARD_HOME`, `XDG_CONFIG_HOME`, `XDG_CACHE_HOME`,
/// `XDG_DATA_HOME`, `XDG_STATE_HOME`, `HOME`) and what [`register`] added. Places that do not
/// exist are included (a sandbox skips them).
pub fn steward_paths() -> Vec<PathBuf> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home = env("HOME");
    let under_home = |rel: &str| home.as_ref().map(|h| h.join(rel));
    let mut paths: Vec<PathBuf> = Vec::new();
    paths.extend(env("STEWARD_HOME").or_else(|| under_home(".steward")));
    for (var, default) in [
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
    ] {
        paths.extend(env(var).or_else(|| under_home(default)).map(|base| base.join("steward")));
    }
    if let Ok(registered) = REGISTERED.lock() {
        paths.extend(registered.iter().cloned());
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for path in paths.iter().filter_map(|p| absolute(p)) {
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// `path` made absolute and, when it exists, canonical (links resolved, so that a mount
/// covers the real folder); `None` when no absolute form can be made.
fn absolute(path: &Path) -> Option<PathBuf> {
    if let Ok(real) = path.canonicalize() {
        return Some(real);
    }
    let joined = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().ok()?.join(path) };
    Some(joined)
}

/// The paths to cover so that `hidden` cannot be seen while each of `keep` (the workspace,
/// the working directory, writable folders) stays visible: `hidden` itself when no kept path
/// lies within it; otherwise every entry of it that neither is a kept path nor leads to one,
/// and so on down each way to a kept path — except in a place that is itself kept, where only
/// Steward's state files (keys, database, anchors, index, outputs, snapshots) are covered.
/// Entries of a folder that cannot be read are left as they are (a program of the same user
/// cannot read them either).
pub fn cover_around(hidden: &Path, keep: &[PathBuf]) -> Vec<PathBuf> {
    let inside: Vec<&PathBuf> = keep.iter().filter(|k| k.starts_with(hidden)).collect();
    if inside.is_empty() {
        return vec![hidden.to_path_buf()];
    }
    // The place is itself kept (a state folder that is the workspace): what Steward keeps
    // there is covered, the rest is the user's.
    let kept_itself = inside.iter().any(|k| k.as_path() == hidden);
    let mut covered = Vec::new();
    for entry in read_entries(hidden) {
        if keep.contains(&entry) {
            continue;
        }
        if kept_itself && !inside.iter().any(|k| k.starts_with(&entry)) {
            if is_state_name(&entry) {
                covered.push(entry);
            }
            continue;
        }
        if inside.iter().any(|k| k.starts_with(&entry)) {
            covered.extend(cover_around(&entry, keep));
        } else {
            covered.push(entry);
        }
    }
    covered
}

/// Whether `entry` is one of the files or folders Steward keeps in its state folder: the
/// keys, the database and its journal files, the audit anchors, the index, saved outputs and
/// snapshots.
fn is_state_name(entry: &Path) -> bool {
    let Some(name) = entry.file_name().and_then(|n| n.to_str()) else { return false };
    ["approval.key", "session.key", "index", "outputs", "snapshots"].contains(&name)
        || name.starts_with("steward.db")
        || (name.starts_with("audit") && name.ends_with(".anchor"))
}

fn read_entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries.flatten().map(|e| e.path()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_folder_holding_a_kept_path_is_covered_around_it() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().canonicalize().unwrap().join("state");
        for sub in ["index/a", "ws/deep/src", "ws/other"] {
            std::fs::create_dir_all(state.join(sub)).unwrap();
        }
        std::fs::write(state.join("approval.key"), "k").unwrap();
        std::fs::write(state.join("ws/deep/notes"), "n").unwrap();
        assert_eq!(cover_around(&state, &[PathBuf::from("/elsewhere")]), vec![state.clone()]);
        let mut got = cover_around(&state, &[state.join("ws/deep")]);
        got.sort();
        assert_eq!(got, [state.join("approval.key"), state.join("index"), state.join("ws/other")]);
        // The state folder is the workspace: Steward's files in it are covered, not the rest.
        let mut got = cover_around(&state, std::slice::from_ref(&state));
        got.sort();
        assert_eq!(got, [state.join("approval.key"), state.join("index")]);
    }

    #[test]
    fn registered_places_are_steward_paths() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("session.key");
        std::fs::write(&key, "k").unwrap();
        register(&key);
        assert!(steward_paths().contains(&key.canonicalize().unwrap()));
    }
}
