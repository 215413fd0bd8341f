//! S1: the one predicate that says whether a workspace path holds secrets.

use std::path::{Component, Path};

/// True when `rel` (a workspace-relative path, ideally the canonical one) names a file or
/// directory that holds secrets, or lies inside one. This is SPEC S1, the single predicate
/// shared by the file tools, the patch validator, walkers and the search index.
///
/// The check is case-insensitive (so `SUB/.ENV.LOCAL` is caught on case-insensitive
/// filesystems too) and looks at every component, so a directory named like a secret hides
/// everything below it. What counts as secret, and why:
///
/// - `.env`, `.env.*`: dotenv files, the usual home of API keys and database passwords.
/// - `*.pem`, `*.key`, `*.p12`, `*.pfx`: TLS/X.509 private keys and PKCS#12 key stores.
/// - `id_rsa*`, `id_dsa*`, `id_ecdsa*`, `id_ed25519*` except `*.pub`: OpenSSH private keys
///   (the `.pub` half is public).
/// - `.ssh/` (anything inside): keys, `known_hosts`, agent config.
/// - `.aws/credentials`: AWS access keys.
/// - `.netrc`, `.npmrc`, `.pypirc`: login and registry tokens for curl/ftp, npm and PyPI.
/// - `credentials.json`: Google/GCP service-account and OAuth client secrets.
/// - `.docker/config.json`: registry auth tokens.
/// - any `.git` component: repository internals (hooks, config with credentials, objects that
///   may contain deleted secrets); git tools reach them through `git`, not file tools.
pub fn is_secret_path(rel: &Path) -> bool {
    let names: Vec<String> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_string_lossy().to_lowercase()),
            _ => None,
        })
        .collect();
    for (i, name) in names.iter().enumerate() {
        if is_secret_name(name) {
            return true;
        }
        let next = names.get(i + 1).map(String::as_str);
        match (name.as_str(), next) {
            (".aws", Some("credentials")) | (".docker", Some("config.json")) | (".kube", Some("config")) => {
                return true;
            }
            _ => {}
        }
    }
    false
}

/// Largest secret file read by [`secret_file_values`], in bytes.
const MAX_SECRET_FILE_BYTES: u64 = 64 * 1024;
/// Most secret files read by [`secret_file_values`].
const MAX_SECRET_FILES: usize = 200;
/// Most directory entries [`secret_file_values`] looks at before it stops.
const MAX_WALK_ENTRIES: usize = 50_000;
/// Directories [`secret_file_values`] does not descend into: repository internals (their
/// objects are compressed, so their bytes never show up as text) and dependency or build
/// trees (large, and not where a project keeps its own secrets).
const SKIPPED_DIRS: &[&str] = &[".git", "node_modules", "target", ".venv", "venv", "__pycache__"];

/// The contents of the secret files (per [`is_secret_path`]) in the workspace at `root`, as
/// values a [`crate::Redactor`] should never let through: each line, and for `NAME=value`
/// lines the value without quotes. A program the policy lets run (`git diff`, a test runner)
/// can print a secret file that no path rule sees; with these values its output shows
/// `[REDACTED]` instead. Ignored files count (`.env` is usually in `.gitignore`); files over
/// 64 KiB, beyond the first 200, or past 50,000 walked entries are not read, and values
/// shorter than 8 bytes are dropped by the redactor. Unreadable files are skipped.
pub fn secret_file_values(root: &Path) -> Vec<String> {
    let walk = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .follow_links(false)
        .filter_entry(|entry| {
            !(entry.file_type().is_some_and(|t| t.is_dir())
                && SKIPPED_DIRS.contains(&entry.file_name().to_string_lossy().as_ref()))
        })
        .build();
    let mut values = Vec::new();
    let mut files = 0;
    for entry in walk.take(MAX_WALK_ENTRIES).flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else { continue };
        if !is_secret_path(rel) || entry.metadata().map_or(true, |m| m.len() > MAX_SECRET_FILE_BYTES) {
            continue;
        }
        let Ok(bytes) = std::fs::read(entry.path()) else { continue };
        for line in String::from_utf8_lossy(&bytes).lines() {
            let line = line.trim();
            values.push(line.to_string());
            if let Some((_, value)) = line.split_once('=') {
                values.push(value.trim().trim_matches(|c| c == '"' || c == '\'').to_string());
            }
        }
        files += 1;
        if files == MAX_SECRET_FILES {
            break;
        }
    }
    values
}

/// One lower-cased path component on its own. Backup suffixes (`.bak`, `~`, …) are looked
/// through: `server.pem.bak` is a key too.
fn is_secret_name(name: &str) -> bool {
    const EXACT: &[&str] = &[
        ".env",
        ".envrc",
        ".git",
        ".ssh",
        ".netrc",
        ".npmrc",
        ".pypirc",
        ".pgpass",
        ".my.cnf",
        ".git-credentials",
        "credentials.json",
    ];
    const KEY_EXTENSIONS: &[&str] = &[".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".kdbx", ".tfstate"];
    const SSH_KEY_PREFIXES: &[&str] = &["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"];
    const BACKUP_SUFFIXES: &[&str] = &[".bak", ".backup", ".old", ".orig", ".save", ".swp", "~"];
    let mut name = name;
    while let Some(stripped) = BACKUP_SUFFIXES.iter().find_map(|s| name.strip_suffix(s)).filter(|n| !n.is_empty()) {
        name = stripped;
    }
    if EXACT.contains(&name) || name.starts_with(".env.") || name.starts_with(".env-") || name.starts_with(".env_") {
        return true;
    }
    // `prod.env`, `docker.env`: dotenv files named by their use.
    if name.strip_suffix(".env").is_some_and(|stem| {
        !stem.is_empty() && stem.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    }) {
        return true;
    }
    if KEY_EXTENSIONS.iter().any(|ext| name.ends_with(ext)) {
        return true;
    }
    SSH_KEY_PREFIXES.iter().any(|p| name.starts_with(p)) && !name.ends_with(".pub")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_file_values_cover_lines_and_values_of_secret_files_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".env"), "API_TOKEN=\"abcdef123456\"\nmy db pass is zebra-purple-9911\n")
            .unwrap();
        std::fs::create_dir_all(dir.path().join("keys")).unwrap();
        std::fs::write(dir.path().join("keys/id_ed25519"), "b3BlbnNzaC1rZXktdjEAAAAA\n").unwrap();
        std::fs::write(dir.path().join("README.md"), "public words here\n").unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/config"), "url = https://example.com/private\n").unwrap();
        let values = secret_file_values(dir.path());
        for expected in ["abcdef123456", "my db pass is zebra-purple-9911", "b3BlbnNzaC1rZXktdjEAAAAA"] {
            assert!(values.iter().any(|v| v == expected), "{expected} missing from {values:?}");
        }
        assert!(!values.iter().any(|v| v.contains("public words") || v.contains("example.com")), "{values:?}");
        let redactor = crate::Redactor::new(values);
        assert_eq!(redactor.redact("+my db pass is zebra-purple-9911"), "+[REDACTED]");
    }

    #[test]
    fn secret_paths_table() {
        let table = [
            (".envrc", true),
            (".env-prod", true),
            ("prod.env", true),
            (".git-credentials", true),
            (".pgpass", true),
            (".kube/config", true),
            ("infra/terraform.tfstate", true),
            ("infra/terraform.tfstate.backup", true),
            ("android/release.jks", true),
            ("certs/server.pem.bak", true),
            ("notes~", false),
            ("environment.rs", false),
            (".env", true),
            ("sub/.env.local", true),
            ("SUB/.ENV.LOCAL", true),
            (".env.prod", true),
            ("config/.env/anything.txt", true),
            ("certs/server.pem", true),
            ("certs/SERVER.KEY", true),
            ("store.p12", true),
            ("store.pfx", true),
            ("keys/id_ed25519", true),
            ("keys/id_rsa", true),
            ("keys/id_rsa_backup", true),
            ("keys/id_ecdsa", true),
            ("keys/id_dsa", true),
            ("keys/id_ed25519.pub", false),
            ("keys/id_rsa.pub", false),
            ("home/.ssh/config", true),
            (".ssh", true),
            (".aws/credentials", true),
            (".aws/config", false),
            (".netrc", true),
            (".npmrc", true),
            (".pypirc", true),
            ("gcp/credentials.json", true),
            (".docker/config.json", true),
            ("docker/config.json", false),
            (".git", true),
            (".git/config", true),
            ("vendor/lib/.git/HEAD", true),
            (".gitignore", false),
            (".github/workflows/ci.yml", false),
            ("src/env.rs", false),
            ("src/keyboard.rs", false),
            ("environment.md", false),
            ("README.md", false),
            ("", false),
        ];
        for (path, expected) in table {
            assert_eq!(is_secret_path(Path::new(path)), expected, "{path}");
        }
    }
}
