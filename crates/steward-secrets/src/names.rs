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
    let upper: String = name.trim().chars().map(|c| if c == '-' { '_' } else { c.to_ascii_uppercase() }).collect();
    if upper.is_empty() || upper.len() > 128 {
        return false;
    }
    if HEADERS.contains(&upper.as_str()) {
        return true;
    }
    if NOT_SECRET_KEYS.iter().any(|k| upper == *k || upper.ends_with(&format!("_{k}"))) {
        return false;
    }
    if upper.contains("SECRET")
        || upper.contains("PASSWORD")
        || upper.contains("PASSWD")
        || upper.contains("CREDENTIAL")
    {
        return true;
    }
    if upper == "TOKEN" || upper.ends_with("_TOKEN") || upper.ends_with("_PAT") {
        return true;
    }
    if upper.ends_with("APIKEY") {
        return true;
    }
    if upper.ends_with("_KEY") {
        return !NOT_SECRET_KEYS.iter().any(|k| upper.ends_with(k));
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
