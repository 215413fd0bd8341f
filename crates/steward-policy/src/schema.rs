//! Compiling a tool's input schema into the validator that checks a call's arguments.
//!
//! Compiling a schema first checks it against its dialect's meta-schema, and the validator of
//! that meta-schema is built once per process at its first use. For JSON Schema 2020-12 (the
//! default when a schema names no `$schema`, as for MCP tools) that validator is a dozen
//! documents joined by dynamic references; draft 7's is one document, about a third of the
//! work to build (`valgrind --tool=callgrind`: 1.9 million instructions for a process that
//! compiles one schema under draft 7, 5.0 million under 2020-12). Built-in tools' schemas, and
//! most tools', use only keywords that mean the same in both dialects, so such a schema is
//! compiled as draft 7 ([`same_in_draft7`]); any other is compiled as it declares (2020-12
//! by default). A process whose tools all qualify never builds the 2020-12 meta-schema.

use jsonschema::{Draft, ValidationError, Validator};
use serde_json::Value;

/// Keywords whose value is not a schema and whose meaning is the same in JSON Schema draft 7
/// and 2020-12 (validation and annotation vocabularies; `format` is left out: draft 7 asserts
/// formats by default, 2020-12 only annotates them).
const PLAIN_KEYWORDS: &[&str] = &[
    "type",
    "enum",
    "const",
    "required",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "title",
    "description",
    "default",
    "examples",
    "readOnly",
    "writeOnly",
    "$comment",
];

/// Compiles `schema` into a validator: as draft 7 when [`same_in_draft7`], else in the
/// dialect it declares (2020-12 when it declares none). A schema that draft 7's meta-schema
/// refuses is compiled as 2020-12 all the same: its `pattern` keyword must be a regular
/// expression of ECMA 262's syntax under draft 7 (`format: "regex"`, which that draft asserts),
/// while 2020-12 only needs the pattern to compile (`(?i)`, `\A`, `\z` and the like, which
/// MCP servers written in Python emit).
///
/// Errors: the schema is not valid against its dialect's meta-schema, or cannot be compiled
/// (`jsonschema`'s [`ValidationError`]).
pub fn compile(schema: &Value) -> Result<Validator, ValidationError<'static>> {
    match as_draft7(schema) {
        Some(validator) => Ok(validator),
        None => jsonschema::validator_for(schema),
    }
}

/// The validator of `schema` compiled as draft 7, when it [reads alike](same_in_draft7) in
/// both dialects and draft 7's meta-schema takes it; `None` otherwise.
pub fn as_draft7(schema: &Value) -> Option<Validator> {
    if !same_in_draft7(schema) {
        return None;
    }
    jsonschema::options().with_draft(Draft::Draft7).build(schema).ok()
}

/// Builds, where not yet built, the meta-schema validator that [`compile`] needs for the
/// schemas built-in tools have (draft 7's): what the first argument check of a process
/// otherwise spends most of its time on.
pub fn warm_up() {
    let _ = compile(&serde_json::json!({"type": "object"}));
}

/// Whether `schema` validates exactly the same instances whether read as JSON Schema draft 7
/// or 2020-12: it declares no `$schema` and, at every level, uses only [`PLAIN_KEYWORDS`] and
/// the applicators that both read alike (`properties`, `additionalProperties`, `items` given
/// one schema, `allOf`, `anyOf`, `oneOf`, `not`). References (`$ref`, whose siblings draft 7
/// ignores), `format`, `items` given an array, and anything unknown make it false.
pub fn same_in_draft7(schema: &Value) -> bool {
    match schema {
        Value::Bool(_) => true,
        Value::Object(map) => map.iter().all(|(keyword, value)| match keyword.as_str() {
            "properties" => value.as_object().is_some_and(|props| props.values().all(same_in_draft7)),
            "additionalProperties" | "not" => same_in_draft7(value),
            "items" => value.is_object() && same_in_draft7(value),
            "allOf" | "anyOf" | "oneOf" => value.as_array().is_some_and(|all| all.iter().all(same_in_draft7)),
            plain => PLAIN_KEYWORDS.contains(&plain),
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Schemas of the kinds tools have: plain ones take draft 7, the rest keep their dialect.
    #[test]
    fn only_schemas_that_read_alike_in_both_dialects_take_draft_7() {
        let plain = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "a file", "minLength": 1},
                "lines": {"type": "array", "items": {"type": "integer", "minimum": 1}, "maxItems": 2},
                "mode": {"enum": ["a", "b"]},
                "either": {"anyOf": [{"type": "string"}, {"type": "null"}]}
            },
            "required": ["path"],
            "additionalProperties": false
        });
        assert!(same_in_draft7(&plain));
        assert!(same_in_draft7(&json!(true)));
        for other in [
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {}}}),
            json!({"type": "string", "format": "uri"}),
            json!({"type": "array", "items": [{"type": "string"}]}),
            json!({"type": "array", "prefixItems": [{"type": "string"}]}),
            json!({"type": "object", "properties": {"a": {"dependentRequired": {}}}}),
            json!({"type": "object", "unevaluatedProperties": false}),
            json!({"type": "object", "properties": {"a": 3}}),
            json!("object"),
        ] {
            assert!(!same_in_draft7(&other), "{other}");
        }
    }

    /// A schema compiled as draft 7 accepts and refuses what the same schema compiled as
    /// 2020-12 does.
    #[test]
    fn a_schema_compiled_as_draft_7_decides_as_2020_12_would() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "lines": {"type": "array", "items": {"type": "integer", "exclusiveMinimum": 0}, "uniqueItems": true},
                "mode": {"oneOf": [{"const": "a"}, {"const": "b"}]},
                "extra": {"not": {"type": "null"}}
            },
            "required": ["path"],
            "additionalProperties": false
        });
        assert!(same_in_draft7(&schema));
        let draft7 = compile(&schema).unwrap();
        let latest = jsonschema::validator_for(&schema).unwrap();
        for instance in [
            json!({"path": "a"}),
            json!({"path": ""}),
            json!({}),
            json!({"path": "a", "lines": [1, 2]}),
            json!({"path": "a", "lines": [1, 1]}),
            json!({"path": "a", "lines": [0]}),
            json!({"path": "a", "mode": "b"}),
            json!({"path": "a", "mode": "c"}),
            json!({"path": "a", "extra": null}),
            json!({"path": "a", "other": 1}),
            json!("a"),
        ] {
            assert_eq!(draft7.is_valid(&instance), latest.is_valid(&instance), "{instance}");
        }
    }

    /// A pattern that only 2020-12 takes (draft 7's meta-schema wants ECMA 262's syntax)
    /// compiles, as it did before, and decides as 2020-12 does.
    #[test]
    fn a_pattern_only_2020_12_takes_still_compiles() {
        for pattern in ["(?i)^[a-z]+$", "\\A[a-z]+\\z", "^(?P<word>[a-z]+)$"] {
            let schema = json!({"type": "object", "properties": {"q": {"type": "string", "pattern": pattern}}});
            assert!(same_in_draft7(&schema));
            assert!(as_draft7(&schema).is_none(), "{pattern}");
            let validator = compile(&schema).unwrap_or_else(|e| panic!("{pattern}: {e}"));
            assert!(validator.is_valid(&json!({"q": "abc"})), "{pattern}");
            assert!(!validator.is_valid(&json!({"q": "ab1"})), "{pattern}");
        }
    }

    /// A schema that is not valid is refused under either dialect.
    #[test]
    fn an_invalid_schema_is_refused() {
        assert!(compile(&json!({"type": "no-such-type"})).is_err());
        assert!(compile(&json!({"type": "object", "$ref": 3})).is_err());
    }
}
