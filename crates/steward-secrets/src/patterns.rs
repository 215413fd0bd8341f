//! Pattern rules for secrets in free text (SPEC S2, S3; case B13). Compiled once.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use crate::names::name_looks_secret;

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// One pattern rule: where the secret is in a match, and when a match really is one.
pub(crate) struct Rule {
    /// Kind reported by the scanner (`provider_key`, `bearer_token`, …).
    pub(crate) kind: &'static str,
    /// The pattern.
    pub(crate) re: Regex,
    /// Capture groups holding the secret; the first one that participated is replaced.
    /// Group 0 means the whole match.
    pub(crate) groups: &'static [usize],
    /// Extra test on the captures; `None` accepts every match.
    pub(crate) accept: Option<fn(&Captures<'_>) -> bool>,
}

impl Rule {
    /// The byte range of the secret in a match, if the match is accepted.
    pub(crate) fn secret_range(&self, caps: &Captures<'_>) -> Option<std::ops::Range<usize>> {
        if let Some(accept) = self.accept
            && !accept(caps)
        {
            return None;
        }
        let m = self.groups.iter().find_map(|&g| caps.get(g))?;
        // Already redacted (also when a wide value class runs on past an earlier redaction).
        if m.as_str().is_empty() || m.as_str().starts_with(REDACTED) {
            return None;
        }
        Some(m.range())
    }

    /// The byte ranges of the secrets this rule finds in `text`, in order, not overlapping.
    ///
    /// A match the rule does not accept (a name that does not look secret, a value already
    /// redacted) does not hide a match that starts inside it: `a: "password": "…"` is first
    /// matched as the name `a` with the value `"password"`, which is refused, and the search
    /// goes on right after the refused match's name (group 1), or one character after its
    /// start for rules without one, so the pair `"password": "…"` is still found.
    pub(crate) fn secret_ranges(&self, text: &str) -> Vec<std::ops::Range<usize>> {
        let mut ranges = Vec::new();
        let mut pos = 0;
        while pos <= text.len() {
            let Some(caps) = self.re.captures_at(text, pos) else { break };
            let Some(whole) = caps.get(0) else { break };
            let next = match self.secret_range(&caps) {
                Some(range) => {
                    let end = range.end.max(whole.end());
                    ranges.push(range);
                    end
                }
                None => caps.get(1).map_or(whole.start(), |name| name.end()),
            };
            // Always move forward, by at least one character.
            pos = if next > pos { next } else { next_char(text, pos) };
        }
        ranges
    }
}

/// The byte offset of the character after the one at `pos` (`text.len() + 1` at the end).
fn next_char(text: &str, pos: usize) -> usize {
    text[pos..].chars().next().map_or(text.len() + 1, |c| pos + c.len_utf8())
}

fn rule(
    kind: &'static str,
    pattern: &str,
    groups: &'static [usize],
    accept: Option<fn(&Captures<'_>) -> bool>,
) -> Rule {
    // The patterns are constants of this file; a typo is caught by the unit tests.
    #[allow(clippy::expect_used)]
    let re = Regex::new(pattern).expect("built-in secret pattern compiles");
    Rule { kind, re, groups, accept }
}

/// A value that looks like a credential rather than a word: at least 8 characters and a digit,
/// or at least 20 characters.
fn looks_like_token(value: &str) -> bool {
    let len = value.chars().count();
    len >= 20 || (len >= 8 && value.chars().any(|c| c.is_ascii_digit()))
}

/// A name for a password (`password`, `db_passwd`), whose value is a secret even when short.
fn names_password(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.contains("password") || name.contains("passwd")
}

/// A password-shaped value: at least 6 chars with one that is not a letter (`hunter2`), so
/// type names and placeholders (`str`, `string`, `null`, `required`) stay visible.
fn looks_like_password(value: &str) -> bool {
    value.chars().count() >= 6 && value.chars().any(|c| !c.is_ascii_alphabetic())
}

/// The pattern rules, in the order the redactor applies them (widest first).
pub(crate) static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        // PEM private key blocks, the whole block (also one cut off before its END line).
        rule(
            "private_key_block",
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?s:.*?-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|.*)",
            &[0],
            None,
        ),
        // Auth headers, as `Name: value`, `"Name": "value"` or Python's `'name': 'value'`.
        rule(
            "auth_header",
            r#"(?i)\b(?:proxy-authorization|authorization|x-api-key|x-goog-api-key|api-key|x-auth-token)["']?[ \t]*[:=][ \t]*(?:"([^"\r\n]*)"|'([^'\r\n]*)'|([^\s"',;}][^\r\n"',;}]*))"#,
            &[1, 2, 3],
            None,
        ),
        // Credentials in URL user-info: `scheme://user:password@host`.
        rule("url_password", r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:([^\s@/]+)@", &[1], None),
        // URL query parameters carrying keys: `?alt=sse&key=…` keeps the rest of the URL.
        rule(
            "url_query_secret",
            r#"(?i)[?&;](?:key|api_key|apikey|api-key|token|access_token|refresh_token|id_token|password|passwd|secret|client_secret)=([^&#\s'"`<>\\]+)"#,
            &[1],
            None,
        ),
        // `NAME=value` (dotenv, shell, CLI flags) where NAME looks secret.
        rule(
            "secret_assignment",
            r#"([A-Za-z_][A-Za-z0-9_.\-]*)=(?:"([^"\r\n]*)"|'([^'\r\n]*)'|([^\s"'`&,;}\\]+))"#,
            &[2, 3, 4],
            Some(|caps| caps.get(1).is_some_and(|m| name_looks_secret(m.as_str()))),
        ),
        // `"NAME": "value"`, `'NAME': 'value'`, `NAME = "value"` where NAME looks secret.
        rule(
            "secret_field",
            r#"["']?([A-Za-z_][A-Za-z0-9_.\-]*)["']?[ \t]*(?::|=)[ \t]*(?:"([^"\r\n]+)"|'([^'\r\n]+)')"#,
            &[2, 3],
            Some(|caps| caps.get(1).is_some_and(|m| name_looks_secret(m.as_str()))),
        ),
        // YAML / INI / TOML lines with an unquoted value: `password: Pr0d…`, `aws_secret_access_key = wJal…`,
        // also behind a prefix such as a search result's `file:line:`; the name must look secret and
        // the value like a credential (not `token: Token,`), or under a password's name like a
        // password (`password: hunter2`).
        rule(
            "secret_line",
            r#"(?m)(?:^|[\s,;({])[\-]?[ \t]*["']?([A-Za-z_][A-Za-z0-9_.\-]*)["']?[ \t]*(?::|=)[ \t]*([^\s"'#\[{(;,][^\s"'();,]*)[ \t]*(?:#[^\r\n]*)?$"#,
            &[2],
            Some(|caps| {
                caps.get(1).is_some_and(|m| name_looks_secret(m.as_str()))
                    && caps.get(2).is_some_and(|m| {
                        looks_like_token(m.as_str())
                            || (caps.get(1).is_some_and(|n| names_password(n.as_str()))
                                && looks_like_password(m.as_str()))
                    })
            }),
        ),
        // `Bearer <token>` anywhere.
        rule(
            "bearer_token",
            r"\b[Bb]earer[ \t]+([A-Za-z0-9\-._~+/]+=*)",
            &[1],
            Some(|caps| caps.get(1).is_some_and(|m| looks_like_token(m.as_str()))),
        ),
        // Provider key formats.
        rule("provider_key", r"\bsk-(?:ant-|or-|proj-)?[A-Za-z0-9][A-Za-z0-9_\-]{15,}", &[0], None),
        rule("provider_key", r"\bxai-[A-Za-z0-9]{20,}", &[0], None),
        rule("provider_key", r"\bAIza[0-9A-Za-z_\-]{30,}", &[0], None),
        rule("provider_key", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})", &[0], None),
        rule("provider_key", r"\bxox[abprs]-[A-Za-z0-9\-]{10,}", &[0], None),
        rule("provider_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", &[0], None),
        rule("provider_key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", &[0], None),
        rule("provider_key", r"\bglpat-[A-Za-z0-9_\-]{20,}", &[0], None),
        rule("provider_key", r"\bhf_[A-Za-z0-9]{30,}", &[0], None),
        rule("provider_key", r"\bnpm_[A-Za-z0-9]{36}\b", &[0], None),
        rule("webhook_url", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}", &[0], None),
        rule("webhook_url", r"https://discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_\-]{20,}", &[0], None),
        rule("jwt", r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}", &[0], None),
    ]
});
