//! Keeping credentials out of provider error messages (case B13).
//!
//! HTTP client errors and server bodies can echo the request URL (with `?key=…`) or auth
//! headers. Every message a provider returns passes through [`redact_text`], which removes the
//! exact key values the provider holds plus anything shaped like a credential: query
//! parameters named `key`, `api_key`, `apikey`, `access_token` or `token`, `Bearer …` tokens,
//! and `x-api-key` / `x-goog-api-key` / `api-key` / `authorization` header values.

use std::sync::LazyLock;

use regex::Regex;

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";

static QUERY_SECRET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)([?&;](?:key|api[_-]?key|access[_-]?token|token|auth|sig|signature)=)[^&#\s'\x22<>]+")
        .unwrap_or_else(|e| panic!("static regex: {e}"))
});
static BEARER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]+").unwrap_or_else(|e| panic!("static regex: {e}"))
});
static HEADER_SECRET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)((?:x-api-key|x-goog-api-key|api-key|xi-api-key)['"]?\s*[:=]\s*['"]?)[^'"\s,}]+"#)
        .unwrap_or_else(|e| panic!("static regex: {e}"))
});
static USERINFO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s'\x22]+@").unwrap_or_else(|e| panic!("static regex: {e}"))
});

/// Replaces every occurrence of each non-empty value in `secrets`, then every
/// credential-shaped pattern (see the module docs), with `[REDACTED]`.
///
/// Example: `for url 'https://h/v1?alt=sse&key=AIza…'` → `for url 'https://h/v1?alt=sse&key=[REDACTED]'`.
pub fn redact_text(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    for secret in secrets {
        // Very short values would blank out ordinary words; keys are never that short.
        if secret.len() >= 4 {
            out = out.replace(secret, REDACTED);
        }
    }
    let out = QUERY_SECRET.replace_all(&out, format!("${{1}}{REDACTED}"));
    let out = BEARER.replace_all(&out, format!("${{1}}{REDACTED}"));
    let out = HEADER_SECRET.replace_all(&out, format!("${{1}}{REDACTED}"));
    let out = USERINFO.replace_all(&out, format!("${{1}}{REDACTED}@"));
    out.into_owned()
}

/// A URL fit for messages: user info and credential-like query values replaced, everything
/// else kept for debugging.
pub fn redact_url(url: &str) -> String {
    redact_text(url, &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "AIzaSyXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX";

    #[test]
    fn b13_key_in_url_query_is_redacted() {
        let error_text = format!(
            "Client error '404 Not Found' for url 'https://generativelanguage.googleapis.com/v1beta/models/some-model:generateContent?alt=sse&key={KEY}'"
        );
        let shown = redact_text(&error_text, &[KEY]);
        assert_eq!(
            shown,
            "Client error '404 Not Found' for url 'https://generativelanguage.googleapis.com/v1beta/models/some-model:generateContent?alt=sse&key=[REDACTED]'"
        );
        // Pattern rules alone (the key is not known to this provider) give the same result.
        assert_eq!(redact_text(&error_text, &[]), shown);

        let header =
            format!("DEBUG request headers: {{'x-goog-api-key': '{KEY}', 'content-type': 'application/json'}}");
        let shown = redact_text(&header, &[]);
        assert!(!shown.contains(KEY), "{shown}");
        assert!(shown.contains("content-type"));

        let retry = format!("retrying https://example-gw.invalid/v1/chat?api_key={KEY}&model=m after 503");
        assert_eq!(
            redact_text(&retry, &[]),
            "retrying https://example-gw.invalid/v1/chat?api_key=[REDACTED]&model=m after 503"
        );
    }

    #[test]
    fn bearer_tokens_userinfo_and_exact_values() {
        assert_eq!(redact_text("Authorization: Bearer sk-abc.def", &[]), "Authorization: Bearer [REDACTED]");
        assert_eq!(
            redact_url("http://user:pw@localhost:8080/v1?token=t1"),
            "http://[REDACTED]@localhost:8080/v1?token=[REDACTED]"
        );
        assert_eq!(redact_text("the key sk-live-123456 leaked", &["sk-live-123456"]), "the key [REDACTED] leaked");
        assert_eq!(redact_url("http://localhost:11434/v1"), "http://localhost:11434/v1");
    }
}
