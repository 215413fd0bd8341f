//! Schema-driven coercion of the values of a tool call recovered from text (SPEC P8).
//!
//! Models writing calls as text often quote scalars (`"line": "1"`), and formats whose values
//! are untyped text need the schema to give them a type. A string value is replaced only when
//! the schema at that place declares types without `string` and exactly one reading of the
//! string fits: an integer (`-?[0-9]+`), a JSON number, `true`/`false` for a boolean, or JSON
//! text of an object or array where the schema wants one (then coerced inside too).
//! Anything else is left as written, for the gate's schema check to refuse.

use serde_json::Value;

/// Coerces string values in `args` to the scalar types `schema` declares (walking
/// `properties` and `items`); returns one line per change, e.g. `` `line`: "1" → 1 (integer) ``.
pub(crate) fn coerce_to_schema(args: &mut Value, schema: &Value) -> Vec<String> {
    let mut changes = Vec::new();
    walk(args, schema, "", &mut changes);
    changes
}

fn walk(value: &mut Value, schema: &Value, at: &str, changes: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let Some(Value::Object(properties)) = schema.get("properties") else { return };
            for (key, item) in map.iter_mut() {
                if let Some(sub) = properties.get(key) {
                    let path = if at.is_empty() { key.clone() } else { format!("{at}.{key}") };
                    walk(item, sub, &path, changes);
                }
            }
        }
        Value::Array(items) => {
            let Some(sub) = schema.get("items") else { return };
            for (i, item) in items.iter_mut().enumerate() {
                walk(item, sub, &format!("{at}[{i}]"), changes);
            }
        }
        Value::String(text) => {
            let types = declared_types(schema);
            if let Some((typed, kind)) = coerce_scalar(text, &types) {
                changes.push(format!("`{at}`: {} → {typed} ({kind})", Value::String(text.clone())));
                *value = typed;
            } else if let Some(mut parsed) = coerce_json(text, &types) {
                changes.push(format!("`{at}`: JSON text → {}", if parsed.is_array() { "array" } else { "object" }));
                walk(&mut parsed, schema, at, changes);
                *value = parsed;
            }
        }
        _ => {}
    }
}

/// The `type` names of a schema (`"integer"` or `["integer", "null"]`).
fn declared_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A string holding a JSON object or array where the schema wants that and no string (XML
/// formats write every value as text).
fn coerce_json(text: &str, types: &[&str]) -> Option<Value> {
    if types.contains(&"string") {
        return None;
    }
    match serde_json::from_str::<Value>(text.trim()).ok()? {
        v @ Value::Object(_) if types.contains(&"object") => Some(v),
        v @ Value::Array(_) if types.contains(&"array") => Some(v),
        _ => None,
    }
}

fn coerce_scalar(text: &str, types: &[&str]) -> Option<(Value, &'static str)> {
    if types.is_empty() || types.contains(&"string") {
        return None;
    }
    let digits = text.strip_prefix('-').unwrap_or(text);
    if types.contains(&"integer") && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = text.parse::<i64>() {
            return Some((Value::from(n), "integer"));
        }
        if let Ok(n) = text.parse::<u64>() {
            return Some((Value::from(n), "integer"));
        }
    }
    if types.contains(&"number")
        && let Ok(n) = serde_json::from_str::<serde_json::Number>(text)
    {
        return Some((Value::Number(n), "number"));
    }
    if types.contains(&"boolean") {
        match text {
            "true" => return Some((Value::Bool(true), "boolean")),
            "false" => return Some((Value::Bool(false), "boolean")),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_unambiguous_scalars_are_coerced() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"},
            "s": {"type": "string"}, "list": {"type": "array", "items": {"type": "integer"}},
        }});
        let mut args = json!({"n": "-3", "x": "1e2", "b": "false", "s": "5", "list": ["1", "2"], "other": "9"});
        let changes = coerce_to_schema(&mut args, &schema);
        assert_eq!(args, json!({"n": -3, "x": 100.0, "b": false, "s": "5", "list": [1, 2], "other": "9"}));
        assert_eq!(changes.len(), 5, "{changes:?}");
        assert!(changes.contains(&"`list[1]`: \"2\" → 2 (integer)".to_string()), "{changes:?}");

        let schema = json!({"type": "object", "properties": {
            "changes": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        }});
        let mut args = json!({"changes": "[{\"n\": \"4\"}]"});
        assert_eq!(coerce_to_schema(&mut args, &schema).len(), 2);
        assert_eq!(args, json!({"changes": [{"n": 4}]}));
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}, "b": {"type": "boolean"}}});
        for bad in [" 1", "+1", "1.5", "", "0x10", "NaN", "True", "[1]"] {
            let mut args = json!({"n": bad, "b": bad});
            let before = args.clone();
            assert!(coerce_to_schema(&mut args, &schema).is_empty(), "{bad}");
            assert_eq!(args, before);
        }
    }
}
