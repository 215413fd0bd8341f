//! The checks a generated tool passes before it is ever run: its name, its source (static
//! checks) and its input schema.
//!
//! The static checks are a first, cheap refusal with a clear reason that goes back to the
//! generator; they are not what keeps the code confined (the interpreter has none of these
//! things, and the worker process is sandboxed).

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Longest source accepted (bytes).
pub const MAX_SOURCE_BYTES: usize = 64 * 1024;

/// Why a name, source or schema is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// The name does not match `^[a-z][a-z0-9_]{2,49}$`.
    #[error("the name `{0}` is not a valid generated tool name (^[a-z][a-z0-9_]{{2,49}}$)")]
    Name(String),
    /// The source is empty or over [`MAX_SOURCE_BYTES`].
    #[error("the source is {0} bytes; it must be 1 to {MAX_SOURCE_BYTES} bytes")]
    Size(usize),
    /// The source names something generated tools do not have.
    #[error("static check: the source uses `{found}`: {why}")]
    Forbidden {
        /// What was found.
        found: &'static str,
        /// Why it is refused.
        why: &'static str,
    },
    /// The input schema is not a JSON Schema for an object.
    #[error("input schema: {0}")]
    Schema(String),
}

/// True when `name` matches `^[a-z][a-z0-9_]{2,49}$`.
pub fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    (3..=50).contains(&bytes.len())
        && bytes[0].is_ascii_lowercase()
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
}

/// [`valid_name`] as a check.
pub fn check_name(name: &str) -> Result<(), CheckError> {
    if valid_name(name) { Ok(()) } else { Err(CheckError::Name(name.chars().take(80).collect())) }
}

/// Identifiers a source may not use, with the reason told to the generator.
const FORBIDDEN: &[(&str, &str)] = &[
    ("require", "there is no module system; use only the language and the host functions"),
    ("import", "there is no module system; use only the language and the host functions"),
    ("process", "there is no process object; the input comes as run's argument"),
    ("Deno", "there is no Deno object"),
    ("std", "there is no std module"),
    ("os", "there is no os module"),
    ("Date", "there is no clock: generated tools are deterministic"),
    ("performance", "there is no clock: generated tools are deterministic"),
    ("setTimeout", "there are no timers"),
    ("setInterval", "there are no timers"),
    ("Function", "code is not made at run time"),
    ("eval", "code is not made at run time"),
    ("__proto__", "prototypes are not changed"),
];

/// The static checks on `source`: its size, and no use of an identifier in the forbidden list
/// (as a whole word outside strings is not distinguished: a word in a string literal counts
/// too, which errs on the side of refusing).
pub fn check_source(source: &str) -> Result<(), CheckError> {
    if source.trim().is_empty() || source.len() > MAX_SOURCE_BYTES {
        return Err(CheckError::Size(source.len()));
    }
    for word in words(source) {
        if let Some((found, why)) = FORBIDDEN.iter().find(|(name, _)| *name == word) {
            return Err(CheckError::Forbidden { found, why });
        }
    }
    Ok(())
}

/// The identifier-like words of `text`.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$')).filter(|w| !w.is_empty())
}

/// Checks that `schema` is a valid JSON Schema whose type is `object` (the arguments of a
/// tool call are always an object).
pub fn check_schema(schema: &Value) -> Result<(), CheckError> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(CheckError::Schema("must be a JSON Schema with \"type\": \"object\"".into()));
    }
    jsonschema::validator_for(schema).map(|_| ()).map_err(|e| CheckError::Schema(e.to_string()))
}

/// Checks `input` against `schema`: `Err` with the first problem.
pub fn check_input(schema: &Value, input: &Value) -> Result<(), CheckError> {
    let validator = jsonschema::validator_for(schema).map_err(|e| CheckError::Schema(e.to_string()))?;
    match validator.iter_errors(input).next() {
        Some(error) => Err(CheckError::Schema(format!("the probe input does not match: {error}"))),
        None => Ok(()),
    }
}

/// The SHA-256 of `source` in lowercase hex: what approvals and the registry show.
pub fn source_hash(source: &str) -> String {
    hex::encode(Sha256::digest(source.as_bytes()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_follow_the_pattern() {
        for good in ["abc", "fahrenheit_to_celsius", "a12", &"a".repeat(50)] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["ab", "1abc", "_abc", "Abc", "ab-c", "ab c", &"a".repeat(51), "read@v1"] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn static_checks_refuse_ambient_authority_with_the_reason() {
        for (source, found) in [
            ("const fs = require('fs'); function run(){}", "require"),
            ("import fs from 'fs'; function run(){}", "import"),
            ("function run(){ return import('os'); }", "import"),
            ("function run(){ return process.env; }", "process"),
            ("function run(){ return Deno.readTextFile('/etc/passwd'); }", "Deno"),
            ("function run(){ return std.loadFile('/etc/passwd'); }", "std"),
            ("function run(){ return Date.now(); }", "Date"),
            ("function run(){ return new Function('return this')(); }", "Function"),
        ] {
            match check_source(source) {
                Err(CheckError::Forbidden { found: f, .. }) => assert_eq!(f, found, "{source}"),
                other => panic!("{source}: {other:?}"),
            }
        }
        check_source("function run(input) { return (input.fahrenheit - 32) * 5 / 9; }").unwrap();
        assert!(matches!(check_source("  "), Err(CheckError::Size(_))));
    }

    #[test]
    fn schemas_must_be_valid_object_schemas() {
        check_schema(&json!({"type": "object", "properties": {"f": {"type": "number"}}})).unwrap();
        assert!(check_schema(&json!({"type": "string"})).is_err());
        assert!(check_schema(&json!({"type": "object", "properties": {"f": {"type": 12}}})).is_err());
        let schema = json!({"type": "object", "required": ["f"], "properties": {"f": {"type": "number"}}});
        check_input(&schema, &json!({"f": 1})).unwrap();
        assert!(check_input(&schema, &json!({"f": "x"})).is_err());
    }
}
