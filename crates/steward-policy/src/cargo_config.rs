//! cargo's aliases as cargo itself finds them (The Cargo Book, "Configuration": "Hierarchical
//! structure" and `[alias]`): cargo run in a folder reads `.cargo/config.toml` and
//! `.cargo/config` in that folder and in every parent up to `/`, then the same two files in
//! `$CARGO_HOME` (default `~/.cargo`); a value in a deeper folder wins over one above it, and
//! the home's comes last. An alias is a string (split at whitespace) or an array of strings.
//! A built-in command cannot be replaced by an alias.
//!
//! Every file cargo would read is read here, wherever it lies (also above the workspace):
//! a file that exists but cannot be read or parsed, or that pulls in other files
//! (`include`), makes the alias unknowable, which the gate turns into an approval.

use std::path::{Path, PathBuf};

/// Largest cargo configuration file read, in bytes.
const MAX_CONFIG: u64 = 1024 * 1024;

/// Why the alias `cargo SUB` may expand to cannot be known.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CargoConfigError {
    /// A configuration file exists but cannot be read.
    #[error("`{}` cannot be read: {source}", file.display())]
    Unreadable {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A configuration file does not parse as TOML.
    #[error("`{}` is not valid TOML: {detail}", file.display())]
    Unparsable {
        /// The file.
        file: PathBuf,
        /// The parser's message.
        detail: String,
    },
    /// A configuration file includes other files, which are not read.
    #[error("`{}` includes other configuration files (`include`), which Steward does not read", .0.display())]
    Include(PathBuf),
    /// The alias is neither a string nor an array of strings.
    #[error("`{}`: the alias `{name}` is not a string or an array of strings", file.display())]
    BadAlias {
        /// The file.
        file: PathBuf,
        /// The alias.
        name: String,
    },
}

/// An alias found: its words and the file that defines it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Alias {
    /// What `cargo NAME` becomes (`["publish", "--dry-run"]`).
    pub words: Vec<String>,
    /// The file defining it.
    pub file: PathBuf,
}

/// cargo's home as a sandboxed cargo would use it: `$CARGO_HOME`, else `$HOME/.cargo`.
pub(crate) fn cargo_home() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cargo")))
}

/// The configuration files cargo reads when run in `dir` (absolute), in cargo's order of
/// precedence (the deepest folder first, cargo's home last), each once; missing ones left out.
pub(crate) fn config_files(dir: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> = dir.ancestors().map(|d| d.join(".cargo")).collect();
    folders.extend(home.map(Path::to_path_buf));
    let mut files: Vec<PathBuf> = Vec::new();
    for folder in folders {
        for name in ["config", "config.toml"] {
            let file = folder.join(name);
            if file.symlink_metadata().is_ok() && !files.contains(&file) {
                files.push(file);
            }
        }
    }
    files
}

/// The alias `cargo name` runs when started in `dir`: the first definition in cargo's order
/// of precedence ([`config_files`]), `None` when no file defines it. Every file is read and
/// parsed (so one that cannot be is an error even when a nearer file defines the alias).
pub(crate) fn alias(name: &str, dir: &Path, home: Option<&Path>) -> Result<Option<Alias>, CargoConfigError> {
    let mut found = None;
    for file in config_files(dir, home) {
        let text = read_limited(&file).map_err(|source| CargoConfigError::Unreadable { file: file.clone(), source })?;
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| CargoConfigError::Unparsable { file: file.clone(), detail: e.to_string() })?;
        if table.contains_key("include") {
            return Err(CargoConfigError::Include(file));
        }
        let Some(value) = table.get("alias").and_then(|a| a.as_table()).and_then(|a| a.get(name)) else { continue };
        let words = match value {
            toml::Value::String(text) => Some(text.split_whitespace().map(str::to_string).collect::<Vec<_>>()),
            toml::Value::Array(items) => {
                items.iter().map(|item| item.as_str().map(str::to_string)).collect::<Option<Vec<_>>>()
            }
            _ => None,
        };
        let Some(words) = words.filter(|w| !w.is_empty()) else {
            return Err(CargoConfigError::BadAlias { file, name: name.to_string() });
        };
        if found.is_none() {
            found = Some(Alias { words, file });
        }
    }
    Ok(found)
}

fn read_limited(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?.take(MAX_CONFIG).read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn aliases_are_found_in_parents_and_the_cargo_home_nearest_first() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (repo, svc, home) = (root.join("repo"), root.join("repo/svc"), root.join("cargo-home"));
        std::fs::create_dir_all(&svc).unwrap();
        write(&repo.join(".cargo/config.toml"), "[alias]\nship = \"publish\"\nb2 = [\"build\", \"--release\"]\n");
        write(&home.join("config.toml"), "[alias]\nfar = \"yank\"\nship = \"check\"\n");
        let got = alias("ship", &svc, Some(&home)).unwrap().unwrap();
        assert_eq!(got.words, ["publish"]);
        assert_eq!(got.file, repo.join(".cargo/config.toml"));
        assert_eq!(alias("b2", &svc, Some(&home)).unwrap().unwrap().words, ["build", "--release"]);
        assert_eq!(alias("far", &svc, Some(&home)).unwrap().unwrap().words, ["yank"]);
        assert_eq!(alias("none", &svc, Some(&home)).unwrap(), None);
        // A nearer definition wins.
        write(&svc.join(".cargo/config"), "[alias]\nship = \"fmt\"\n");
        assert_eq!(alias("ship", &svc, Some(&home)).unwrap().unwrap().words, ["fmt"]);
    }

    #[test]
    fn files_that_cannot_be_read_or_parsed_make_the_alias_unknowable() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let svc = root.join("svc");
        std::fs::create_dir_all(&svc).unwrap();
        write(&root.join(".cargo/config.toml"), "[alias\nship = ");
        assert!(matches!(alias("ship", &svc, None), Err(CargoConfigError::Unparsable { .. })));
        write(&root.join(".cargo/config.toml"), "include = \"other.toml\"\n");
        assert!(matches!(alias("ship", &svc, None), Err(CargoConfigError::Include(_))));
        write(&root.join(".cargo/config.toml"), "[alias]\nship = 3\n");
        assert!(matches!(alias("ship", &svc, None), Err(CargoConfigError::BadAlias { .. })));
        // A folder where a file should be cannot be read.
        std::fs::remove_file(root.join(".cargo/config.toml")).unwrap();
        std::fs::create_dir_all(root.join(".cargo/config.toml")).unwrap();
        assert!(matches!(alias("ship", &svc, None), Err(CargoConfigError::Unreadable { .. })));
    }
}
