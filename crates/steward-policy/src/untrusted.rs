//! `[policy] untrusted_paths` (SPEC C2): workspace paths whose content is not the user's.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::error::PolicyError;

/// The compiled globs, and the literal directory each starts with (`vendor/` for
/// `vendor/**`, `` for `**/node_modules`).
#[derive(Debug)]
pub(crate) struct UntrustedPaths {
    globs: GlobSet,
    prefixes: Vec<String>,
}

impl UntrustedPaths {
    /// Errors: [`PolicyError::BadGlob`] naming `untrusted_paths`.
    pub(crate) fn new(globs: &[String]) -> Result<Self, PolicyError> {
        let mut builder = GlobSetBuilder::new();
        let mut prefixes = Vec::with_capacity(globs.len());
        for glob in globs {
            let trimmed = glob.trim_start_matches("./").trim_end_matches('/');
            let compiled =
                GlobBuilder::new(trimmed).literal_separator(true).build().map_err(|e| PolicyError::BadGlob {
                    rule: "untrusted_paths".into(),
                    glob: glob.clone(),
                    message: e.kind().to_string(),
                })?;
            builder.add(compiled);
            let literal = trimmed.find(['*', '?', '[', '{', '\\']).map_or(trimmed, |at| &trimmed[..at]);
            // A fully literal glob names the directory itself; otherwise the part before the
            // last `/` is the directory every match lies under.
            let prefix = if literal.len() == trimmed.len() {
                format!("{trimmed}/")
            } else {
                literal.rfind('/').map_or(String::new(), |at| literal[..=at].to_string())
            };
            prefixes.push(prefix);
        }
        let globs = builder.build().map_err(|e| PolicyError::BadGlob {
            rule: "untrusted_paths".into(),
            glob: globs.join(", "),
            message: e.kind().to_string(),
        })?;
        Ok(Self { globs, prefixes })
    }

    /// True when `rel` or one of its parents matches, or, for a directory, when a match may
    /// lie beneath it (the glob's literal directory is inside `rel`, or `rel` inside it).
    pub(crate) fn reads(&self, rel: &str, is_dir: bool) -> bool {
        if self.prefixes.is_empty() {
            return false;
        }
        let rel = rel.trim_start_matches("./").trim_end_matches('/');
        let rel = if rel == "." { "" } else { rel };
        let mut at = rel;
        while !at.is_empty() {
            if self.globs.is_match(at) {
                return true;
            }
            at = at.rfind('/').map_or("", |i| &at[..i]);
        }
        if !is_dir {
            return false;
        }
        let dir = if rel.is_empty() { String::new() } else { format!("{rel}/") };
        self.prefixes.iter().any(|prefix| prefix.starts_with(&dir) || dir.starts_with(prefix.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untrusted_paths_cover_matches_their_contents_and_directories_above_them() {
        let paths = UntrustedPaths::new(&["vendor".into(), "**/node_modules".into(), "dl/*.html".into()]).unwrap();
        assert!(paths.reads("vendor/lib/a.c", false));
        assert!(paths.reads("vendor", true));
        assert!(paths.reads("web/node_modules/x/index.js", false));
        assert!(paths.reads("dl/page.html", false));
        assert!(!paths.reads("dl/page.txt", false));
        assert!(!paths.reads("src/main.rs", false));
        // Searching a directory that may hold matches reads them.
        assert!(paths.reads("", true));
        assert!(paths.reads("web", true));
        // `**/node_modules` may be anywhere, so any directory may hold one.
        let vendored = UntrustedPaths::new(&["vendor/**".into(), "dl/*.html".into()]).unwrap();
        assert!(!vendored.reads("src", true));
        assert!(vendored.reads("", true));
        assert!(vendored.reads("dl", true));
        assert!(vendored.reads("vendor/x", true));
        assert!(UntrustedPaths::new(&["[".into()]).is_err());
        assert!(!UntrustedPaths::new(&[]).unwrap().reads("", true));
    }
}
