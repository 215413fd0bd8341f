//! Fuzz targets of the secret scanner and redactor (`secrets_redact`, `secrets_scan`): a
//! secret planted in generated text (provider keys, bearer tokens, auth headers, private key
//! blocks, URL passwords and query keys, secret assignments, known values) never survives
//! redaction, in text or inside JSON; the scanner reports a finding wherever the redactor
//! would change a string; neither panics on any input.

use proptest::prelude::*;
use serde_json::{Value, json};
use steward_fuzz::proptest;
use steward_secrets::{Redactor, scan_value};

fn alnum(min: usize, max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[A-Za-z0-9]{{{min},{max}}}")).unwrap()
}

/// A secret and the context it is written in; the secret is what must not survive.
fn planted() -> impl Strategy<Value = (String, String)> {
    let with_digit = |s: String| format!("{s}7");
    prop_oneof![
        alnum(20, 40).prop_map(|s| {
            let k = format!("sk-{s}");
            (k.clone(), k)
        }),
        alnum(20, 40).prop_map(|s| {
            let k = format!("sk-ant-api03-{s}");
            (k.clone(), k)
        }),
        alnum(36, 36).prop_map(|s| {
            let k = format!("ghp_{s}");
            (k.clone(), k)
        }),
        alnum(20, 30).prop_map(|s| {
            let k = format!("xai-{s}");
            (k.clone(), k)
        }),
        alnum(35, 35).prop_map(|s| {
            let k = format!("AIza{s}");
            (k.clone(), k)
        }),
        "[0-9A-Z]{16}".prop_map(|s| {
            let k = format!("AKIA{s}");
            (k.clone(), k)
        }),
        alnum(20, 40).prop_map(|s| (s.clone(), format!("Authorization: Bearer {s}"))),
        alnum(8, 30).prop_map(with_digit).prop_map(|s| (s.clone(), format!("x-api-key: {s}"))),
        alnum(8, 30).prop_map(with_digit).prop_map(|s| (s.clone(), format!("OPENAI_API_KEY={s}"))),
        alnum(8, 30).prop_map(with_digit).prop_map(|s| (s.clone(), format!("\"password\": \"{s}\""))),
        alnum(8, 30).prop_map(with_digit).prop_map(|s| (s.clone(), format!("https://user:{s}@example.com/x"))),
        alnum(8, 30).prop_map(with_digit).prop_map(|s| (s.clone(), format!("https://h/p?alt=sse&key={s}&x=1"))),
        alnum(40, 60).prop_map(|s| {
            let block = format!("-----BEGIN PRIVATE KEY-----\n{s}\n-----END PRIVATE KEY-----");
            (s, block)
        }),
    ]
}

/// Text around a planted secret: anything, separated from it by a word boundary.
fn around() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[ -~\n\t]{0,40}",
        1 => any::<String>(),
        1 => "[ a-z.,;:\n]{0,20}",
    ]
}

#[derive(Debug, Clone)]
struct Case {
    before: String,
    secret: String,
    written: String,
    after: String,
    known: Vec<String>,
}

fn case() -> impl Strategy<Value = Case> {
    (around(), planted(), around(), prop::collection::vec("[!-~]{8,24}", 0..3))
        .prop_map(|(before, (secret, written), after, known)| Case { before, secret, written, after, known })
}

fn text_of(c: &Case) -> String {
    format!("{} {} {}", c.before, c.written, c.after)
}

fn check_case(c: Case) -> Result<(), TestCaseError> {
    let redactor = Redactor::new(c.known.clone());
    let text = text_of(&c);
    let out = redactor.redact(&text);
    prop_assert!(!out.contains(&c.secret), "the secret survives redaction: {out:?}");
    for value in c.known.iter().map(|v| v.trim()).filter(|v| v.len() >= 8) {
        prop_assert!(!out.contains(value), "the known value {value:?} survives redaction: {out:?}");
    }
    prop_assert!(redactor.contains_secret(&text), "contains_secret misses the planted secret");
    let json_out = redactor.redact_value(&json!({"text": text, "list": [text], "nested": {"k": text}})).to_string();
    prop_assert!(!json_out.contains(&c.secret), "the secret survives JSON redaction: {json_out}");
    let findings = scan_value(&json!({ "text": text }));
    prop_assert!(!findings.is_empty(), "the scanner reports nothing for a planted secret");
    for f in &findings {
        prop_assert!(!f.pointer.contains(&c.secret), "a finding repeats the secret");
    }
    Ok(())
}

#[test]
fn fuzz_secrets_redact() {
    steward_fuzz::run(
        "secrets_redact",
        case(),
        |bytes| {
            // A seed is `SECRET\nTEXT`: TEXT holds SECRET, which must not survive.
            let text = String::from_utf8_lossy(bytes);
            let Some((secret, written)) = text.split_once('\n') else { return Vec::new() };
            vec![Case {
                before: String::new(),
                secret: secret.to_string(),
                written: written.to_string(),
                after: String::new(),
                known: Vec::new(),
            }]
        },
        check_case,
    );
}

/// Arbitrary text: redaction never panics, is idempotent, and the scanner reports a finding
/// exactly when the redactor changes the text.
fn check_text(text: String) -> Result<(), TestCaseError> {
    let redactor = Redactor::new(Vec::<String>::new());
    let once = redactor.redact(&text);
    let twice = redactor.redact(&once);
    prop_assert_eq!(&once, &twice, "redaction is not idempotent");
    let changed = once != text;
    prop_assert_eq!(redactor.contains_secret(&text), changed, "contains_secret disagrees with redact");
    let value: Value = json!({ "text": text });
    let findings = scan_value(&value);
    prop_assert_eq!(!findings.is_empty(), changed, "the scanner disagrees with the redactor: {:?}", findings);
    Ok(())
}

#[test]
fn fuzz_secrets_scan() {
    steward_fuzz::run(
        "secrets_scan",
        prop_oneof![
            any::<String>(),
            "[ -~\n]{0,200}",
            (around(), planted(), around()).prop_map(|(a, (_, w), b)| format!("{a}{w}{b}")),
        ],
        |bytes| vec![String::from_utf8_lossy(bytes).into_owned()],
        check_text,
    );
}

/// Found by `secrets_redact`: in `a: "password": "…"` the field rule first matched the name
/// `a` with the value `"password"`, refused it (`a` is no secret name), and went on after that
/// match, so the real pair `"password": "…"` was never looked at and its value survived.
#[test]
fn refused_match_does_not_hide_a_secret_pair_inside_it() {
    let redactor = Redactor::new(Vec::<String>::new());
    for text in ["a: \"password\": \"0aa0AAAa7\" ", "note = 'token': 'zz9zz9zz9zz'", "x=\"API_KEY=abc123def456\""] {
        let out = redactor.redact(text);
        assert!(out.contains("[REDACTED]"), "{text:?} gives {out:?}");
        assert!(!out.contains("0aa0AAAa7") && !out.contains("zz9zz9zz9zz") && !out.contains("abc123def456"), "{out:?}");
        assert!(redactor.contains_secret(text));
        assert!(!scan_value(&json!({ "t": text })).is_empty());
    }
}
