//! The environment allow-list (SPEC C3; case B12).
#![forbid(unsafe_code)]

use std::ffi::OsString;

/// Names passed from the parent environment by default, plus every `LC_*` name.
pub const DEFAULT_ENV_ALLOW: &[&str] = &["PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "TZ", "TMPDIR", "SHELL"];

/// Names never passed to a child, even when allow-listed or set explicitly: each makes a
/// shell source a file at start-up (`BASH_ENV` for non-interactive bash, `ENV` for
/// interactive POSIX shells), which could export secrets again (case B12).
pub const ENV_NEVER_PASSED: &[&str] = &["BASH_ENV", "ENV"];

/// True when a variable name looks like it holds a key, token or password (`*_KEY`,
/// `*KEY`, `*_TOKEN`, `*SECRET*`, `*PASSWORD*`, `*PASSWD*`, `*_PAT`, `*CREDENTIAL*`,
/// `*AUTH*`), case-insensitive. Used to warn when config adds such a name to the allow-list.
pub fn env_name_looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"].iter().any(|w| upper.contains(w))
        || upper.ends_with("KEY")
        || upper.ends_with("TOKEN")
        || upper.ends_with("_PAT")
}

/// The child's environment: allow-listed names present in `parent`, then `set`; never a
/// name of [`ENV_NEVER_PASSED`].
pub(crate) fn child_env(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    extra_allow: &[String],
    set: &[(String, String)],
) -> Vec<(OsString, OsString)> {
    let allowed = |name: &str| {
        !ENV_NEVER_PASSED.contains(&name)
            && (DEFAULT_ENV_ALLOW.contains(&name) || name.starts_with("LC_") || extra_allow.iter().any(|n| n == name))
    };
    let mut env: Vec<(OsString, OsString)> =
        parent.into_iter().filter(|(name, _)| name.to_str().is_some_and(allowed)).collect();
    for (name, value) in set.iter().filter(|(name, _)| !ENV_NEVER_PASSED.contains(&name.as_str())) {
        env.retain(|(n, _)| n.to_str() != Some(name.as_str()));
        env.push((OsString::from(name), OsString::from(value)));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b12_only_allowed_names_pass() {
        let parent = [
            ("PATH", "/usr/bin:/bin"),
            ("HOME", "/home/user"),
            ("LANG", "C.UTF-8"),
            ("MY_FLAG", "1"),
            ("OPENAI_API_KEY", "sk-PLACEHOLDER"),
            ("ANTHROPIC_API_KEY", "sk-ant-PLACEHOLDER"),
            ("AWS_SECRET_ACCESS_KEY", "PLACEHOLDER"),
            ("GITHUB_TOKEN", "ghp_PLACEHOLDER"),
            ("LC_CTYPE", "C"),
            ("BASH_ENV", "/home/user/.bashrc"),
            ("ENV", "/home/user/.profile"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let allow = ["MY_FLAG".to_string(), "BASH_ENV".to_string(), "ENV".to_string()];
        let set = [("STEWARD".to_string(), "1".to_string()), ("ENV".to_string(), "/x".to_string())];
        let env = child_env(parent, &allow, &set);
        let mut names: Vec<String> = env.iter().map(|(k, _)| k.to_string_lossy().into_owned()).collect();
        names.sort();
        assert_eq!(names, ["HOME", "LANG", "LC_CTYPE", "MY_FLAG", "PATH", "STEWARD"]);
    }

    #[test]
    fn secret_looking_names() {
        for name in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "MY_PAT",
            "ssh_auth_sock",
            "apikey",
        ] {
            assert!(env_name_looks_secret(name), "{name}");
        }
        for name in ["PATH", "HOME", "MY_FLAG", "LANG", "CARGO_HOME", "RUST_LOG"] {
            assert!(!env_name_looks_secret(name), "{name}");
        }
    }
}
