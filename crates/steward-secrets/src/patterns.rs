//! Pattern rules for secrets in free text (SPEC S2, S3; case B13). Compiled once.

use std::sync::{LazyLock, OnceLock};

use regex::{Captures, Regex};

use crate::names::name_looks_secret;

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// One pattern rule: where the secret is in a match, and when a match really is one.
pub(crate) struct Rule {
    /// Kind reported by the scanner (`provider_key`, `bearer_token`, …).
    pub(crate) kind: &'static str,
    /// The pattern, compiled by [`Rule::regex`] when the rule first has to run: a run whose
    /// texts never hold a rule's keywords never pays for its automaton.
    pattern: &'static str,
    re: OnceLock<Regex>,
    /// Capture groups holding the secret; the first one that participated is replaced.
    /// Group 0 means the whole match.
    pub(crate) groups: &'static [usize],
    /// Extra test on the captures; `None` accepts every match.
    pub(crate) accept: Option<fn(&Captures<'_>) -> bool>,
    /// Words (lowercase ASCII, compared without regard to ASCII case), one of which is in
    /// every match the rule accepts, on the same line: the rule only runs on the lines that
    /// hold one (see [`crate::gate`]). Empty: the rule runs on the whole text.
    pub(crate) keywords: &'static [&'static str],
}

impl Rule {
    /// The rule's compiled pattern (compiled at its first use, once per process).
    pub(crate) fn regex(&self) -> &Regex {
        // The patterns are constants of this file; the unit tests compile every one.
        #[allow(clippy::expect_used)]
        self.re.get_or_init(|| Regex::new(self.pattern).expect("built-in secret pattern compiles"))
    }

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
            let Some(caps) = self.regex().captures_at(text, pos) else { break };
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
    pattern: &'static str,
    groups: &'static [usize],
    accept: Option<fn(&Captures<'_>) -> bool>,
) -> Rule {
    Rule { kind, pattern, re: OnceLock::new(), groups, accept, keywords: &[] }
}

impl Rule {
    /// This rule, run only on the lines holding one of `keywords` (see [`Rule::keywords`]).
    /// Only for rules none of whose matches spans a line break.
    fn on_lines_with(self, keywords: &'static [&'static str]) -> Rule {
        Rule { keywords, ..self }
    }
}

/// Words one of which is in every name [`name_looks_secret`] accepts, together with the
/// character after the name: the name either contains `secret`, `password`, `passwd` or
/// `credential`, or ends with `key`, `token`, `_pat`/`-pat`, `cookie` or `authorization`, and
/// the name rules only accept a name followed by a quote, a blank, `:` or `=`.
const NAME_KEYWORDS: &[&str] = &[
    "secret",
    "password",
    "passwd",
    "credential",
    "-pat",
    "cookie",
    "authorization",
    "key\"",
    "key'",
    "key ",
    "key\t",
    "key:",
    "key=",
    "token\"",
    "token'",
    "token ",
    "token\t",
    "token:",
    "token=",
    "_pat\"",
    "_pat'",
    "_pat ",
    "_pat\t",
    "_pat:",
    "_pat=",
];

/// [`NAME_KEYWORDS`] where the name is followed by `=` right away.
const ASSIGNMENT_KEYWORDS: &[&str] =
    &["secret", "password", "passwd", "credential", "-pat=", "cookie=", "authorization=", "key=", "token=", "_pat="];

/// A provider key format: the whole match is the secret; `keywords` as in [`Rule::keywords`].
fn key(pattern: &'static str, keywords: &'static [&'static str]) -> Rule {
    rule("provider_key", pattern, &[0], None).on_lines_with(keywords)
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
        )
        .on_lines_with(&["authorization", "api-key", "auth-token"]),
        // Credentials in URL user-info: `scheme://user:password@host`.
        rule("url_password", r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:([^\s@/]+)@", &[1], None).on_lines_with(&["://"]),
        // URL query parameters carrying keys: `?alt=sse&key=…` keeps the rest of the URL.
        rule(
            "url_query_secret",
            r#"(?i)[?&;](?:key|api_key|apikey|api-key|token|access_token|refresh_token|id_token|password|passwd|secret|client_secret)=([^&#\s'"`<>\\]+)"#,
            &[1],
            None,
        )
        .on_lines_with(&["key=", "token=", "password", "passwd", "secret"]),
        // `NAME=value` (dotenv, shell, CLI flags) where NAME looks secret.
        rule(
            "secret_assignment",
            r#"([A-Za-z_][A-Za-z0-9_.\-]*)=(?:"([^"\r\n]*)"|'([^'\r\n]*)'|([^\s"'`&,;}\\]+))"#,
            &[2, 3, 4],
            Some(|caps| caps.get(1).is_some_and(|m| name_looks_secret(m.as_str()))),
        )
        .on_lines_with(ASSIGNMENT_KEYWORDS),
        // `"NAME": "value"`, `'NAME': 'value'`, `NAME = "value"` where NAME looks secret.
        rule(
            "secret_field",
            r#"["']?([A-Za-z_][A-Za-z0-9_.\-]*)["']?[ \t]*(?::|=)[ \t]*(?:"([^"\r\n]+)"|'([^'\r\n]+)')"#,
            &[2, 3],
            Some(|caps| caps.get(1).is_some_and(|m| name_looks_secret(m.as_str()))),
        )
        .on_lines_with(NAME_KEYWORDS),
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
        )
        .on_lines_with(NAME_KEYWORDS),
        // `Bearer <token>` anywhere.
        rule(
            "bearer_token",
            r"\b[Bb]earer[ \t]+([A-Za-z0-9\-._~+/]+=*)",
            &[1],
            Some(|caps| caps.get(1).is_some_and(|m| looks_like_token(m.as_str()))),
        )
        .on_lines_with(&["bearer"]),
        // Provider key formats (each format published by its provider).
        key(r"\bsk-(?:ant-|or-|proj-)?[A-Za-z0-9][A-Za-z0-9_\-]{15,}", &["sk-"]),
        key(r"\bxai-[A-Za-z0-9]{20,}", &["xai-"]),
        key(r"\bAIza[0-9A-Za-z_\-]{30,}", &["aiza"]),
        key(
            r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
            &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        ),
        key(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}", &["xox"]),
        key(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", &["akia", "asia"]),
        key(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", &["k_live_", "k_test_"]),
        key(r"\bglpat-[A-Za-z0-9_\-]{20,}", &["glpat-"]),
        key(r"\bhf_[A-Za-z0-9]{30,}", &["hf_"]),
        key(r"\bnpm_[A-Za-z0-9]{36}\b", &["npm_"]),
        // SendGrid, Shopify, DigitalOcean, PyPI, Postman, Doppler, age, Linear, Grafana
        // service accounts, Databricks.
        key(r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b", &["sg."]),
        key(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", &["shpat_", "shpca_", "shppa_", "shpss_"]),
        key(r"\bdo[opr]_v1_[a-f0-9]{64}\b", &["_v1_"]),
        key(r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}", &["pypi-"]),
        key(r"\bPMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}\b", &["pmak-"]),
        key(r"\bdp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,44}\b", &["dp."]),
        key(r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b", &["age-secret-key-"]),
        key(r"\blin_api_[A-Za-z0-9]{40}\b", &["lin_api_"]),
        key(r"\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b", &["glsa_"]),
        key(r"\bdapi[a-f0-9]{32}(?:-[0-9])?\b", &["dapi"]),
        rule("webhook_url", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}", &[0], None)
            .on_lines_with(&["hooks.slack.com"]),
        rule("webhook_url", r"https://discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_\-]{20,}", &[0], None)
            .on_lines_with(&["discord"]),
        rule("jwt", r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}", &[0], None)
            .on_lines_with(&["eyj"]),
    ]
});

#[cfg(test)]
mod tests {
    use super::RULES;
    use crate::{REDACTED, Redactor};

    /// Every rule's pattern compiles (they are compiled only when first needed at run time).
    #[test]
    fn every_pattern_compiles() {
        for rule in RULES.iter() {
            assert!(regex::Regex::new(rule.pattern).is_ok(), "{}: {}", rule.kind, rule.pattern);
            assert_eq!(rule.regex().as_str(), rule.pattern);
        }
    }

    /// Each provider key format added for the kinds gitleaks' default rules detect: redacted in
    /// a line of code, and one character short (or with a character outside its alphabet) left
    /// alone.
    #[test]
    fn provider_key_formats() {
        let hex32 = "0123456789abcdef0123456789abcdef";
        let cases = [
            (format!("SG.{}.{}", "a".repeat(22), "B".repeat(43)), format!("SG.{}.{}", "a".repeat(21), "B".repeat(43))),
            (format!("shpat_{hex32}"), format!("shpat_{}", &hex32[1..])),
            (format!("dop_v1_{hex32}{hex32}"), format!("dop_v1_{hex32}{}", &hex32[1..])),
            (format!("pypi-AgEIcHlwaS5vcmc{}", "x".repeat(50)), format!("pypi-AgEIcHlwaS5vcmc{}", "x".repeat(49))),
            (format!("PMAK-{}-{}", &hex32[..24], "a".repeat(34)), format!("PMAK-{}-{}", &hex32[..24], "a".repeat(33))),
            (format!("dp.pt.{}", "Ab1".repeat(14) + "Z"), format!("dp.pt.{}", "Ab1".repeat(13))),
            (format!("AGE-SECRET-KEY-1{}", "QPZRY9X8GF".repeat(5) + "2TVDW0S3"), "AGE-SECRET-KEY-1QPZRY9X8GF".into()),
            (format!("lin_api_{}", "a1".repeat(20)), format!("lin_api_{}", "a1".repeat(19))),
            (format!("glsa_{}_{}", "Ab".repeat(16), "0a1b2c3d"), format!("glsa_{}_{}", "Ab".repeat(16), "0a1b2c3")),
            (format!("dapi{hex32}"), format!("dapi{}", &hex32[1..])),
            (format!("dapi{hex32}-2"), format!("dapi{}", "g".repeat(32))),
        ];
        let redactor = Redactor::new(Vec::<String>::new());
        for (secret, near_miss) in cases {
            let text = format!("    let client = Client::new(\"{secret}\");");
            let out = redactor.redact(&text);
            assert!(!out.contains(&secret) && out.contains(REDACTED), "{text} gives {out}");
            let text = format!("    let client = Client::new(\"{near_miss}\");");
            assert_eq!(redactor.redact(&text), text);
        }
    }
}
