//! Which variable, field and header names hold secrets.

/// True when a variable, field or header name looks like it holds a secret.
///
/// Case-insensitive, `-` treated like `_`. Matches `*_KEY` / `KEY` suffixes of API keys
/// (`OPENAI_API_KEY`, `api-key`, `apikey`, `private_key`), `*_TOKEN` and `TOKEN`,
/// `*SECRET*`, `*PASSWORD*`, `*PASSWD*`, `*_PAT`, `*CREDENTIAL*`, and the auth headers
/// `authorization`, `proxy-authorization`, `x-api-key`, `x-goog-api-key`, `cookie`.
/// Key names that are plainly not credentials (`primary_key`, `sort_key`, …) and token
/// counters (`max_tokens`) do not match.
pub fn name_looks_secret(name: &str) -> bool {
    const HEADERS: &[&str] =
        &["AUTHORIZATION", "PROXY_AUTHORIZATION", "X_API_KEY", "X_GOOG_API_KEY", "COOKIE", "SET_COOKIE"];
    const NOT_SECRET_KEYS: &[&str] = &[
        "PRIMARY_KEY",
        "FOREIGN_KEY",
        "SORT_KEY",
        "PARTITION_KEY",
        "CACHE_KEY",
        "LOOKUP_KEY",
        "DICT_KEY",
        "MAP_KEY",
        "SORTKEY",
        "HOTKEY",
        "IDEMPOTENCY_KEY",
        "ROLLBACK_TOKEN",
        "MAX_TOKENS",
        "NEXT_PAGE_TOKEN",
    ];
    // The name upper-cased with `-` as `_`, on the stack: this runs for every `name=value`
    // and `name: value` the pattern rules see. Byte by byte is the same as char by char here:
    // both changes are ASCII, and the bytes of other characters are left alone.
    let trimmed = name.trim().as_bytes();
    if trimmed.is_empty() || trimmed.len() > 128 {
        return false;
    }
    let mut buffer = [0u8; 128];
    let upper = &mut buffer[..trimmed.len()];
    for (to, &from) in upper.iter_mut().zip(trimmed) {
        *to = if from == b'-' { b'_' } else { from.to_ascii_uppercase() };
    }
    let upper: &[u8] = upper;
    let contains = |word: &str| memchr::memmem::find(upper, word.as_bytes()).is_some();
    if HEADERS.iter().any(|h| upper == h.as_bytes()) {
        return true;
    }
    // `upper == k` or `upper` ends with `_k`.
    let is_or_ends_with_word = |k: &str| {
        upper == k.as_bytes()
            || (upper.ends_with(k.as_bytes()) && upper.len() > k.len() && upper[upper.len() - k.len() - 1] == b'_')
    };
    if NOT_SECRET_KEYS.iter().any(|k| is_or_ends_with_word(k)) {
        return false;
    }
    if contains("SECRET") || contains("PASSWORD") || contains("PASSWD") || contains("CREDENTIAL") {
        return true;
    }
    if upper == b"TOKEN" || upper.ends_with(b"_TOKEN") || upper.ends_with(b"_PAT") {
        return true;
    }
    if upper.ends_with(b"APIKEY") {
        return true;
    }
    if upper.ends_with(b"_KEY") {
        return !NOT_SECRET_KEYS.iter().any(|k| upper.ends_with(k.as_bytes()));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_table() {
        let table = [
            ("OPENAI_API_KEY", true),
            ("rollback_token", false),
            ("max_tokens", false),
            ("ANTHROPIC_API_KEY", true),
            ("AWS_SECRET_ACCESS_KEY", true),
            ("GITHUB_TOKEN", true),
            ("github_pat", true),
            ("MY_GH_PAT", true),
            ("DB_PASSWORD", true),
            ("client_secret", true),
            ("x-api-key", true),
            ("X-Goog-Api-Key", true),
            ("Authorization", true),
            ("access_token", true),
            ("refresh_token", true),
            ("token", true),
            ("apikey", true),
            ("private_key", true),
            ("max_tokens", false),
            ("input_tokens", false),
            ("primary_key", false),
            ("sort_key", false),
            ("key", false),
            ("PATH", false),
            ("HOME", false),
            ("MY_FLAG", false),
            ("TOKENIZER", false),
            ("", false),
        ];
        for (name, expected) in table {
            assert_eq!(name_looks_secret(name), expected, "{name}");
        }
    }
}
