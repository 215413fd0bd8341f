use serde_json::json;
use steward_policy::{Finding, Redactor, scan_value};

const GEMINI_KEY: &str = "AIzaSyXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX";

fn b13_redactor() -> Redactor {
    Redactor::from_env_vars([
        ("GEMINI_API_KEY".to_string(), GEMINI_KEY.to_string()),
        ("PATH".to_string(), "/usr/bin:/bin".to_string()),
    ])
}

#[test]
fn b13_error_text_keeps_url_and_hides_key() {
    let r = b13_redactor();
    let error_text = format!(
        "Client error '404 Not Found' for url 'https://generativelanguage.googleapis.com/v1beta/models/some-model:generateContent?alt=sse&key={GEMINI_KEY}'"
    );
    assert_eq!(
        r.redact(&error_text),
        "Client error '404 Not Found' for url 'https://generativelanguage.googleapis.com/v1beta/models/some-model:generateContent?alt=sse&key=[REDACTED]'"
    );
}

#[test]
fn b13_also_scan_strings() {
    let r = b13_redactor();
    let table = [
        (
            format!("DEBUG request headers: {{'x-goog-api-key': '{GEMINI_KEY}', 'content-type': 'application/json'}}"),
            "DEBUG request headers: {'x-goog-api-key': '[REDACTED]', 'content-type': 'application/json'}",
        ),
        (
            format!("retrying https://example-gw.invalid/v1/chat?api_key={GEMINI_KEY}&model=m after 503"),
            "retrying https://example-gw.invalid/v1/chat?api_key=[REDACTED]&model=m after 503",
        ),
    ];
    for (input, expected) in table {
        assert_eq!(r.redact(&input), expected);
    }
}

#[test]
fn b13_pattern_rules_work_without_known_values() {
    // The same strings with a redactor that was told nothing: the pattern rules alone hide it.
    let r = Redactor::new(Vec::new());
    let text = format!("for url 'https://x.invalid/m?alt=sse&key={GEMINI_KEY}'");
    assert_eq!(r.redact(&text), "for url 'https://x.invalid/m?alt=sse&key=[REDACTED]'");
    assert_eq!(r.redact(&format!("the key is {GEMINI_KEY}.")), "the key is [REDACTED].");
}

#[test]
fn b13_every_sink_shape_is_scrubbed() {
    // User-facing error, trace line, journal entry, model-bound text, crash report: plain
    // text and JSON carrying the key in strings, keys and nested values.
    let r = b13_redactor();
    let sinks = json!({
        "user_error": format!("provider_error: 404 for ...?key={GEMINI_KEY}"),
        "trace": [{"level": "debug", "msg": format!("headers {{'x-goog-api-key': '{GEMINI_KEY}'}}")}],
        "journal": {"entries": [format!("retry ?api_key={GEMINI_KEY}&model=m")]},
        "to_model": format!("Tool failed: {GEMINI_KEY}"),
        "crash": {format!("frame {GEMINI_KEY}"): "panic"},
        "api_key": GEMINI_KEY,
    });
    let out = r.redact_value(&sinks).to_string();
    assert!(!out.contains(GEMINI_KEY), "{out}");
    assert!(!out.contains("AIzaSy"), "{out}");
    assert!(out.contains("key=[REDACTED]"), "{out}");
    assert!(r.contains_secret(&sinks.to_string()));
    assert!(!r.contains_secret(&out), "{out}");
}

#[test]
fn pattern_table() {
    let r = Redactor::new(Vec::new());
    let table = [
        ("OPENAI_API_KEY=sk-phase9dummysecret123456789", "OPENAI_API_KEY=[REDACTED]"),
        ("export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "export GITHUB_TOKEN=[REDACTED]"),
        ("use sk-ant-api03-abcdefghijklmnopqrstuv now", "use [REDACTED] now"),
        ("or sk-or-v1-0123456789abcdef0123 here", "or [REDACTED] here"),
        ("xai-abcdefghijklmnopqrstuvwx", "[REDACTED]"),
        ("token github_pat_11ABCDEFG0123456789_abcdefghijkl", "token [REDACTED]"),
        ("slack xoxb-1234567890-abcdefghij", "slack [REDACTED]"),
        ("aws AKIAIOSFODNN7EXAMPLE id", "aws [REDACTED] id"),
        ("Authorization: Bearer abc.def-123_456", "Authorization: [REDACTED]"),
        ("curl -H 'x-api-key: abcd1234efgh' url", "curl -H 'x-api-key: [REDACTED]' url"),
        ("got Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc123 back", "got Bearer [REDACTED] back"),
        (r#"{"password": "hunter2!", "user": "bob"}"#, r#"{"password": "[REDACTED]", "user": "bob"}"#),
        ("db_password = 'correct horse'", "db_password = '[REDACTED]'"),
        ("postgres://app:s3cr3tpw@db.local:5432/app", "postgres://app:[REDACTED]@db.local:5432/app"),
        (
            "https://h.invalid/cb?code=1&access_token=abc123&state=x",
            "https://h.invalid/cb?code=1&access_token=[REDACTED]&state=x",
        ),
        (
            "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----\ndone",
            "key:\n[REDACTED]\ndone",
        ),
        ("cut: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk", "cut: [REDACTED]"),
        ("password: Pr0dDbPassw0rd!", "password: [REDACTED]"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = [REDACTED]"),
        ("  client_secret: GOCSPX-abcdefghijklmnop1234", "  client_secret: [REDACTED]"),
        ("secret_key = django-insecure-abcdefghijklmnopqrst # dev", "secret_key = [REDACTED] # dev"),
        ("  api_key: 9f8e7d6c5b4a39281706", "  api_key: [REDACTED]"),
        ("charge with sk_live_abcdefghijklmnop1234", "charge with [REDACTED]"),
        ("jwt eyJhbGciOiJIUzI1NiJ9x.eyJzdWIiOiIxMjM0In0x.abcdefghijklmnop", "jwt [REDACTED]"),
        ("gitlab glpat-abcdefghij0123456789", "gitlab [REDACTED]"),
        ("config.yml:2:   password: Pr0dDbPassw0rd!", "config.yml:2:   password: [REDACTED]"),
        // A short password under a password's name is a password too.
        ("password: hunter2", "password: [REDACTED]"),
        ("  db_passwd = hunter2", "  db_passwd = [REDACTED]"),
    ];
    for (input, expected) in table {
        assert_eq!(r.redact(input), expected, "{input}");
        assert!(r.contains_secret(input), "{input}");
        assert_eq!(r.redact(expected), expected, "idempotent: {expected}");
    }
}

#[test]
fn ordinary_text_is_unchanged() {
    let r = Redactor::new(vec!["short".to_string()]);
    let texts = [
        "fn main() { println!(\"hello\"); }",
        "let api_key = std::env::var(\"OPENAI_API_KEY\")?;",
        "password = get_password()",
        "def login(password: str) -> bool:",
        "Use the Bearer scheme in the Authorization header.",
        "The task-management module and risk-based scoring.",
        "max_tokens=1024 temperature=0.2",
        "https://example.com/search?q=rust&page=2",
        "primary_key = \"id\"",
        "short short short",
        "AIza is a prefix of Google keys",
        "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----",
        "git log --oneline | head",
        "MY_FLAG=1 PATH=/usr/bin",
        "    token: Token,",
        "password: str",
        "password: required",
        "secret_name: db",
    ];
    for text in texts {
        assert_eq!(r.redact(text), text);
        assert!(!r.contains_secret(text), "{text}");
    }
}

#[test]
fn known_values_are_exact_and_short_ones_ignored() {
    let r = Redactor::new(vec!["Zq9-unusual-value-77".to_string(), "tiny".to_string(), String::new()]);
    assert_eq!(r.redact("x Zq9-unusual-value-77 y Zq9-unusual-value-77"), "x [REDACTED] y [REDACTED]");
    assert_eq!(r.redact("tiny things"), "tiny things");
    let env = Redactor::from_env_vars([
        ("MY_SERVICE_PASSWORD".to_string(), "plainwords".to_string()),
        ("EDITOR".to_string(), "vim-editor-x".to_string()),
    ]);
    assert_eq!(env.redact("pw plainwords, editor vim-editor-x"), "pw [REDACTED], editor vim-editor-x");
}

#[test]
fn redact_value_handles_keys_and_nesting() {
    let r = Redactor::new(vec!["value-known-123".to_string()]);
    let v = json!({
        "headers": {"Authorization": "Basic dXNlcjpwYXNz", "Accept": "text/plain"},
        "list": ["ok", "value-known-123", {"api_key": 12345678}],
        "value-known-123": true,
        "max_tokens": 100,
    });
    assert_eq!(
        r.redact_value(&v),
        json!({
            "headers": {"Authorization": "[REDACTED]", "Accept": "text/plain"},
            "list": ["ok", "[REDACTED]", {"api_key": "[REDACTED]"}],
            "[REDACTED]": true,
            "max_tokens": 100,
        })
    );
}

#[test]
fn scanner_reports_where_and_what_never_the_secret() {
    let v = json!({
        "a": {"b": ["fine", "Bearer abcdef123456789"]},
        "env": "OPENAI_API_KEY=sk-phase9dummysecret123456789",
        "password": "x",
        "url": format!("https://h.invalid/?key={GEMINI_KEY}"),
        "ok": "nothing here",
        "sk-abcdefghijklmnop1234": 1,
    });
    let findings = scan_value(&v);
    let f = |pointer: &str, kind: &'static str| Finding { pointer: pointer.to_string(), kind };
    for expected in [
        f("/a/b/1", "bearer_token"),
        f("/env", "secret_assignment"),
        f("/env", "provider_key"),
        f("/password", "secret_field"),
        f("/url", "url_query_secret"),
        f("/url", "provider_key"),
        f("", "secret_key_name"),
    ] {
        assert!(findings.contains(&expected), "missing {expected:?} in {findings:?}");
    }
    assert!(!findings.iter().any(|x| x.pointer == "/ok" || x.pointer == "/a/b/0"), "{findings:?}");
    let shown = serde_json::to_string(&findings).unwrap();
    assert!(!shown.contains("sk-phase9") && !shown.contains("AIza") && !shown.contains("abcdef123"), "{shown}");
    assert!(scan_value(&json!({"text": "hello", "n": [1, 2]})).is_empty());
}
