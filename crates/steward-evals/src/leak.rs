//! The no-secret-leak check (SPEC E, S2): every output of a run — final text, events, run
//! record, audit records, saved tool outputs, model requests — scanned with
//! [`steward_policy::scan_value`] and the run's [`Redactor`] (which also knows the exact
//! secret values of the environment). Steward's own marker `[REDACTED]` is not a leak.

use serde_json::Value;
use steward_policy::{REDACTED, Redactor, scan_value};

use crate::outcome::RunOutcome;

/// Places in `outcome` that hold a secret, as `SOURCE POINTER: KIND` (e.g.
/// `events[7] /final: provider_key`). Never contains the secret itself.
pub fn find_leaks(outcome: &RunOutcome, redactor: &Redactor) -> Vec<String> {
    let mut found = Vec::new();
    if let Some(summary) = &outcome.summary {
        let record = serde_json::to_value(summary).unwrap_or(Value::Null);
        scan("run", &record, redactor, &mut found);
    }
    for (i, event) in outcome.events.iter().enumerate() {
        let value = serde_json::to_value(event).unwrap_or(Value::Null);
        scan(&format!("events[{i}] {}", event.kind.name()), &value, redactor, &mut found);
    }
    for (label, value) in &outcome.artifacts {
        scan(label, value, redactor, &mut found);
    }
    found
}

fn scan(source: &str, value: &Value, redactor: &Redactor, found: &mut Vec<String>) {
    let mut seen: Vec<String> = Vec::new();
    for finding in scan_value(value) {
        // A field whose name looks secret and whose value Steward already replaced by the
        // marker is the redactor's work, not a leak.
        let text = value.pointer(&finding.pointer).and_then(Value::as_str);
        if finding.kind == "secret_field" && text == Some(REDACTED) {
            continue;
        }
        seen.push(finding.pointer.clone());
        found.push(format!("{source} {}: {}", display_pointer(&finding.pointer), finding.kind));
    }
    // Exact values of secret environment variables, which patterns cannot know.
    let mut strings = Vec::new();
    collect_strings(value, &mut String::new(), &mut strings);
    for (pointer, text) in strings {
        if !seen.contains(&pointer) && redactor.contains_secret(&text) {
            found.push(format!("{source} {}: known_secret", display_pointer(&pointer)));
        }
    }
}

fn display_pointer(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}

/// Every string (and object key, reported at its object's pointer) with its JSON pointer.
fn collect_strings(value: &Value, pointer: &mut String, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(s) => out.push((pointer.clone(), s.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push_str(&format!("/{i}"));
                collect_strings(item, pointer, out);
                pointer.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, v) in map {
                out.push((pointer.clone(), key.clone()));
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                collect_strings(v, pointer, out);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome_with(value: Value) -> RunOutcome {
        RunOutcome { artifacts: vec![("audit[0]".into(), value)], ..RunOutcome::default() }
    }

    #[test]
    fn a_planted_key_is_found_without_repeating_it() {
        let secret = "sk-phase9dummysecret123456789";
        let leaks = find_leaks(&outcome_with(json!({"detail": format!("key {secret}")})), &Redactor::default());
        assert!(!leaks.is_empty());
        assert!(leaks.iter().all(|l| !l.contains(secret)), "{leaks:?}");
        assert!(leaks[0].starts_with("audit[0] /detail"), "{leaks:?}");
    }

    #[test]
    fn the_redaction_marker_is_not_a_leak() {
        let value =
            json!({"final": "OPENAI_API_KEY=[REDACTED]", "api_key": "[REDACTED]", "rollback_token": "[REDACTED]"});
        assert_eq!(find_leaks(&outcome_with(value), &Redactor::default()), Vec::<String>::new());
    }

    #[test]
    fn a_rollback_handle_is_not_a_leak() {
        let handle = json!({"rollback_token": "rb_0123456789abcdef"});
        assert_eq!(find_leaks(&outcome_with(handle), &Redactor::default()), Vec::<String>::new());
    }

    #[test]
    fn a_secret_field_and_a_known_environment_value_are_leaks() {
        let redactor = Redactor::new(vec!["plain-words-but-secret".to_string()]);
        let leaks =
            find_leaks(&outcome_with(json!({"password": "hunter22", "note": "plain-words-but-secret"})), &redactor);
        assert!(leaks.iter().any(|l| l.contains("/password: secret_field")), "{leaks:?}");
        assert!(leaks.iter().any(|l| l.contains("/note: known_secret")), "{leaks:?}");
    }
}
