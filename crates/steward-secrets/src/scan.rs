//! S2: a scanner that says where secrets are in a JSON value, without repeating them.

use serde::Serialize;
use serde_json::Value;

use crate::gate::Candidates;
use crate::names::name_looks_secret;
use crate::patterns::RULES;

/// One secret found by [`scan_value`]. Never holds the secret itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// RFC 6901 JSON pointer to the value (or to the object whose key matched), `""` for the
    /// root.
    pub pointer: String,
    /// What was found: `provider_key`, `bearer_token`, `auth_header`, `private_key_block`,
    /// `url_query_secret`, `url_password`, `secret_assignment`, `secret_field` (a string
    /// under a key whose name looks secret), or `secret_key_name` (the secret is in a key).
    pub kind: &'static str,
}

/// Walks any nested value (objects, arrays, strings, and object keys) and reports each place
/// that holds a secret by pattern (provider key formats, `Bearer` tokens, private key
/// blocks, auth headers, secret query parameters, `NAME=value` assignments) or by the name of
/// its key. One finding per pointer and kind, in document order.
pub fn scan_value(value: &Value) -> Vec<Finding> {
    let mut findings = Vec::new();
    walk(value, &mut String::new(), &mut findings);
    findings
}

fn walk(value: &Value, pointer: &mut String, findings: &mut Vec<Finding>) {
    match value {
        Value::String(s) => scan_text(s, pointer, findings),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                walk(item, pointer, findings);
                pointer.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, v) in map {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                if rule_kinds(key).next().is_some() {
                    push(findings, &pointer[..len], "secret_key_name");
                }
                let named_secret = match v {
                    Value::String(s) => name_looks_secret(key) && !s.is_empty(),
                    Value::Number(_) => name_looks_secret(key),
                    _ => false,
                };
                if named_secret {
                    push(findings, pointer, "secret_field");
                }
                walk(v, pointer, findings);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

fn scan_text(text: &str, pointer: &str, findings: &mut Vec<Finding>) {
    for kind in rule_kinds(text) {
        push(findings, pointer, kind);
    }
}

/// The kinds of the pattern rules that accept a match in `text`.
fn rule_kinds(text: &str) -> impl Iterator<Item = &'static str> + '_ {
    let candidates = Candidates::of(text);
    (0..RULES.len()).filter(move |&index| candidates.has_secret(index, text)).map(|index| RULES[index].kind)
}

fn push(findings: &mut Vec<Finding>, pointer: &str, kind: &'static str) {
    if !findings.iter().rev().take_while(|f| f.pointer == pointer).any(|f| f.kind == kind) {
        findings.push(Finding { pointer: pointer.to_string(), kind });
    }
}
