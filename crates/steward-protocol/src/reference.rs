//! The JSON event reference (`docs/reference/events.md`), rendered from the schemas that
//! `utoipa` derives from [`EventKind`] and the types its fields use, so that the page lists
//! exactly the events and fields the code publishes.

use serde_json::Value;
use utoipa::PartialSchema;

use crate::{ErrorClass, EventKind, StopReason, Usage};

/// The event reference as Markdown: the common fields, then one section per event with a
/// table of its fields (name, JSON type, required or optional, description), then the values
/// of the enumerations the fields use.
pub fn events_markdown() -> String {
    let mut out = String::from(
        "<!-- Generated from the code by `steward reference events` (scripts/reference.sh); do not edit. -->\n\n\
         # JSON event reference\n\n\
         Every event is one JSON object with `event` (its name), `run_id`, `seq` (1, 2, … within \
         the run) and `at` (RFC 3339, UTC), plus the fields below. `steward run --json` prints \
         them one per line; `GET /api/runs/{id}/events` streams them as Server-Sent Events.\n",
    );
    let kinds = json(EventKind::schema());
    for variant in kinds.get("oneOf").and_then(Value::as_array).into_iter().flatten() {
        let name = variant.pointer("/properties/event/enum/0").and_then(Value::as_str).unwrap_or("(unnamed)");
        let required: Vec<&str> = variant
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        out.push_str(&format!("\n## `{name}`\n\n{}\n", text(variant.get("description"))));
        let fields: Vec<(&String, &Value)> = variant
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.iter().filter(|(k, _)| k.as_str() != "event").collect())
            .unwrap_or_default();
        if fields.is_empty() {
            out.push_str("\nNo fields of its own.\n");
            continue;
        }
        out.push_str("\n| field | type | present | description |\n|---|---|---|---|\n");
        for (field, schema) in fields {
            let presence = if required.contains(&field.as_str()) { "always" } else { "optional" };
            let description = text(schema.get("description")).replace('\n', " ").replace('|', "\\|");
            out.push_str(&format!("| `{field}` | {} | {presence} | {description} |\n", type_name(schema)));
        }
    }
    out.push_str("\n## Types\n");
    out.push_str(&object_section("Usage", &json(Usage::schema())));
    out.push_str(&enum_section("ErrorClass", &json(ErrorClass::schema())));
    out.push_str(&enum_section("StopReason", &json(StopReason::schema())));
    out
}

fn json(schema: impl serde::Serialize) -> Value {
    serde_json::to_value(schema).unwrap_or(Value::Null)
}

fn text(value: Option<&Value>) -> String {
    value.and_then(Value::as_str).unwrap_or("").trim().to_string()
}

/// A field's JSON type as the page shows it (`string`, `integer`, `array of string`, a link to
/// a type section).
fn type_name(schema: &Value) -> String {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or(reference);
        return format!("[{name}](#{})", name.to_lowercase());
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" or "),
        _ => "any".to_string(),
    };
    match (kind.as_str(), schema.get("items")) {
        ("array", Some(items)) => format!("array of {}", type_name(items)),
        _ => match schema.get("format").and_then(Value::as_str) {
            Some("date-time") => "string (RFC 3339)".to_string(),
            _ => kind,
        },
    }
}

fn object_section(name: &str, schema: &Value) -> String {
    let mut out = format!(
        "\n### {name}\n\n{}\n\n| field | type | description |\n|---|---|---|\n",
        text(schema.get("description"))
    );
    for (field, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
        out.push_str(&format!("| `{field}` | {} | {} |\n", type_name(property), text(property.get("description"))));
    }
    out
}

fn enum_section(name: &str, schema: &Value) -> String {
    let values: Vec<String> = schema
        .get("enum")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).map(|s| format!("`{s}`")).collect())
        .unwrap_or_default();
    format!("\n### {name}\n\n{}\n\nOne of: {}.\n", text(schema.get("description")), values.join(", "))
}
