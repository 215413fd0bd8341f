//! Fuzz target `ledger_intake`: the checks on a ledger response body (`check_body`). A body
//! that carries the hub's credential — raw, or inside any JSON string or object key however
//! its characters are escaped — is refused as an echo; a body that passes never holds the
//! credential once decoded; a page the ledger could send parses back to itself; arbitrary
//! bytes never panic.

use proptest::prelude::*;
use serde_json::{Value, json};
use steward_fuzz::proptest;
use steward_ledger::hub::IntakeError;
use steward_ledger::hub::intake::check_body;
use steward_ledger::wire::CandidatePage;

/// `text` as a JSON string literal with the characters at the chosen places written as
/// `\uXXXX` escapes.
fn escaped(text: &str, mask: &[bool]) -> String {
    let mut out = String::from("\"");
    for (i, c) in text.chars().enumerate() {
        if mask.get(i).copied().unwrap_or(false) || c == '"' || c == '\\' || c.is_control() {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out.push('"');
    out
}

#[derive(Debug, Clone)]
enum Input {
    /// A body with the credential planted in a string or key: (credential, body).
    Planted(String, String),
    /// Any body and credential.
    Raw(Vec<u8>, String),
}

fn credential() -> impl Strategy<Value = String> {
    "stw_[A-Za-z0-9]{4,24}"
}

fn planted() -> impl Strategy<Value = Input> {
    (credential(), prop::collection::vec(any::<bool>(), 32), "[ -~]{0,6}", "[ -~]{0,6}", 0usize..4, 0usize..4).prop_map(
        |(cred, mask, before, after, place, depth)| {
            let literal = escaped(&format!("{before}{cred}{after}"), &mask);
            let mut body = match place {
                0 => format!("{{\"items\": [], \"next_cursor\": {literal}}}"),
                1 => format!("{{{literal}: 1}}"),
                2 => format!("[1, {{\"a\": [{literal}]}}]"),
                _ => literal.clone(),
            };
            for _ in 0..depth {
                body = format!("[{body}]");
            }
            Input::Planted(cred, body)
        },
    )
}

fn holds(value: &Value, needle: &str) -> bool {
    match value {
        Value::String(s) => s.contains(needle),
        Value::Array(items) => items.iter().any(|v| holds(v, needle)),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains(needle) || holds(v, needle)),
        _ => false,
    }
}

fn check(input: Input) -> Result<(), TestCaseError> {
    match input {
        Input::Planted(cred, body) => {
            let got = check_body::<Value>(body.as_bytes(), &cred);
            prop_assert_eq!(got.err(), Some(IntakeError::CredentialEcho), "the echo in {} is not caught", body);
            let got = check_body::<CandidatePage>(body.as_bytes(), &cred);
            prop_assert_eq!(got.err(), Some(IntakeError::CredentialEcho), "the echo in {} is not caught", body);
        }
        Input::Raw(body, cred) => {
            let as_value = check_body::<Value>(&body, &cred);
            if let Ok(value) = &as_value {
                prop_assert!(cred.is_empty() || !holds(value, &cred), "a body holding the credential passes");
            }
            if !cred.is_empty() && body.windows(cred.len()).any(|w| w == cred.as_bytes()) {
                prop_assert_eq!(as_value.err(), Some(IntakeError::CredentialEcho));
            }
            let page = check_body::<CandidatePage>(&body, &cred);
            if let Ok(page) = page {
                let again = serde_json::to_vec(&page).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(
                    check_body::<CandidatePage>(&again, &cred).ok(),
                    Some(page),
                    "a page does not parse back"
                );
            }
        }
    }
    Ok(())
}

fn raw() -> impl Strategy<Value = Input> {
    let body = prop_oneof![
        any::<Vec<u8>>(),
        any::<String>().prop_map(String::into_bytes),
        (prop::option::of("[ -~]{0,12}"), any::<bool>()).prop_map(|(cursor, extra)| {
            let mut v = json!({"items": [], "next_cursor": cursor});
            if extra {
                v["unknown"] = json!(1);
            }
            v.to_string().into_bytes()
        }),
        prop::collection::vec(
            prop::sample::select(vec!["[", "]", "{", "}", "\"", ":", ",", "1", "\\u0073", "null", "\"a\""]),
            0..40
        )
        .prop_map(|p| p.concat().into_bytes()),
    ];
    (body, prop_oneof![credential(), Just(String::new()), "[!-~]{1,4}"]).prop_map(|(b, c)| Input::Raw(b, c))
}

#[test]
fn fuzz_ledger_intake() {
    steward_fuzz::run(
        "ledger_intake",
        prop_oneof![planted(), raw()],
        |bytes| vec![Input::Raw(bytes.to_vec(), "stw_secret1".to_string())],
        check,
    );
}
