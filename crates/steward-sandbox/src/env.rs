//! The environment allow-list (SPEC C3; case B12).

use std::ffi::OsString;

/// Names passed from the parent environment by default, plus every `LC_*` name.
pub const DEFAULT_ENV_ALLOW: &[&str] = &["PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "TZ", "TMPDIR", "SHELL"];

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

/// The child's environment: allow-listed names present in `parent`, then `set`.
pub(crate) fn child_env(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    extra_allow: &[String],
    set: &[(String, String)],
) -> Vec<(OsString, OsString)> {
    let allowed = |name: &str| {
        DEFAULT_ENV_ALLOW.contains(&name) || name.starts_with("LC_") || extra_allow.iter().any(|n| n == name)
    };
    let mut env: Vec<(OsString, OsString)> =
        parent.into_iter().filter(|(name, _)| name.to_str().is_some_and(allowed)).collect();
    for (name, value) in set {
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
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env = child_env(parent, &["MY_FLAG".to_string()], &[("STEWARD".into(), "1".into())]);
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
