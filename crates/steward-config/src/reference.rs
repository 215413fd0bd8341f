//! The configuration reference (`docs/reference/configuration.md`), rendered from the JSON
//! Schema that `schemars` derives from [`RawConfig`] and the types its tables use (doc comments
//! become descriptions, `serde` attributes decide names and defaults), plus the lists the loader
//! itself applies to decide which layer may set a key (`super::merge`).

use std::collections::BTreeMap;

use regex::Regex;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use super::RawConfig;
use super::merge::{UNTRUSTED_IGNORED, UNTRUSTED_POLICY_KEPT, UNTRUSTED_RULES, USER_ONLY};

/// The JSON Schema of one configuration file (draft 2020-12; subschemas under `$defs`).
pub fn schema() -> Value {
    let generator = SchemaSettings::draft2020_12().into_generator();
    generator.into_root_schema_for::<RawConfig>().to_value()
}

/// The configuration reference as Markdown: where files are read from and in which order, then
/// one section per table with every key's type, default, the layers that may set it, and its
/// description.
pub fn configuration_markdown() -> String {
    let root = schema();
    let page = Page { defs: root.get("$defs").and_then(Value::as_object).cloned().unwrap_or_default(), links: links() };
    let mut out = String::from(
        "<!-- Generated from the code by `steward reference config` (scripts/reference.sh); do not edit. -->\n\n\
         # Configuration reference\n\n\
         Steward reads every `*.toml` file of the user's configuration folder \
         (`$XDG_CONFIG_HOME/steward/`, default `~/.config/steward/`), then every `*.toml` file of the \
         workspace's `.steward/` folder, each set sorted by path. A later file overrides an earlier one \
         key by key; arrays of tables (`[[tool]]`, `[[hook]]`, `[[policy.rule]]`, …) add up instead. \
         Unknown keys are refused, naming the file and line. `steward config show` prints the result \
         and the file each entry came from; [configuration.md](../configuration.md) explains the \
         sections with examples.\n\n\
         **Set by** says which layers may set a key:\n\n\
         - **user**: the user's configuration folder;\n\
         - **trusted**: the `.steward/` folder of a workspace the user trusts (`steward trust DIR`, \
         `[trust] workspaces`);\n\
         - **untrusted**: the `.steward/` folder of any other workspace. Its files come with the \
         repository, so they may only make things stricter: everything else in them is ignored, with \
         a warning.\n",
    );
    let props = root.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    for (key, field) in &props {
        let resolved = page.resolve(field);
        let (header, table) = match shape(resolved, &page) {
            Shape::Table(t) => (format!("[{key}]"), t),
            Shape::NamedTables(t) => (format!("[{key}.NAME]"), t),
            Shape::ArrayOfTables(t) => (format!("[[{key}]]"), t),
            Shape::Value => continue,
        };
        let description = page.text(section_description(field, table, &page));
        page.section(&mut out, &[key.as_str()], &header, &description, table);
    }
    out
}

/// Rewrites of rustdoc text: `[`x`](path)` → `x`, `[`x`]` → `x`.
fn links() -> Vec<(Regex, &'static str)> {
    [(r"\[([^\]]+)\]\([^)]*\)", "$1"), (r"\[(`[^`\]]+`)\]", "$1")]
        .into_iter()
        .filter_map(|(pattern, with)| Regex::new(pattern).ok().map(|r| (r, with)))
        .collect()
}

/// How a key's value is written.
enum Shape<'a> {
    /// `[key]`: a table with its own keys.
    Table(&'a Value),
    /// `[key.NAME]`: a map of such tables.
    NamedTables(&'a Value),
    /// `[[key]]`: an array of such tables.
    ArrayOfTables(&'a Value),
    /// Anything else: a row of its table.
    Value,
}

fn shape<'a>(schema: &'a Value, page: &'a Page) -> Shape<'a> {
    let is_table = |s: &Value| s.get("properties").is_some_and(Value::is_object);
    if is_table(schema) {
        return Shape::Table(schema);
    }
    if let Some(inner) = schema.get("additionalProperties").filter(|v| v.is_object()).map(|v| page.resolve(v))
        && is_table(inner)
    {
        return Shape::NamedTables(inner);
    }
    if schema.get("type").and_then(Value::as_str) == Some("array")
        && let Some(inner) = schema.get("items").map(|v| page.resolve(v))
        && is_table(inner)
    {
        return Shape::ArrayOfTables(inner);
    }
    Shape::Value
}

/// A section's description: its type's, else the field's.
fn section_description<'a>(field: &'a Value, table: &'a Value, page: &'a Page) -> &'a str {
    let own = table.get("description").and_then(Value::as_str).unwrap_or("");
    if !own.is_empty() {
        return own;
    }
    let field = page.resolve_items(field);
    field.get("description").and_then(Value::as_str).unwrap_or("")
}

/// A section below another, by the definition it shows: (its headers, the dotted path of the
/// first, its table, its description).
type Subsection<'a> = (Vec<String>, Vec<String>, &'a Value, String);

struct Page {
    defs: Map<String, Value>,
    links: Vec<(Regex, &'static str)>,
}

impl Page {
    /// `schema` without the `null` an `Option` adds, following a `$ref` into `$defs`.
    fn resolve<'a>(&'a self, schema: &'a Value) -> &'a Value {
        let schema = non_null(schema);
        match schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
            Some(name) => self.defs.get(name).unwrap_or(schema),
            None => schema,
        }
    }

    /// The field itself, unless it has no description: then the definition it refers to.
    fn resolve_items<'a>(&'a self, schema: &'a Value) -> &'a Value {
        if schema.get("description").is_some() { schema } else { self.resolve(schema) }
    }

    /// The first paragraph of a doc comment, on one line, links as plain code.
    fn text(&self, doc: &str) -> String {
        let first = doc.trim().split("\n\n").next().unwrap_or("").replace('\n', " ");
        self.links.iter().fold(first, |text, (re, with)| re.replace_all(&text, *with).into_owned())
    }

    /// Writes one section (`path` is its dotted key without `NAME`), then its subsections: one
    /// per table-valued key, tables of the same type sharing one.
    fn section(&self, out: &mut String, path: &[&str], header: &str, description: &str, table: &Value) {
        out.push_str(&format!("\n## `{header}`\n\n"));
        if !description.is_empty() {
            out.push_str(&format!("{description}\n\n"));
        }
        // (key, type, default, set by, description)
        let mut rows: Vec<[String; 5]> = Vec::new();
        let required: Vec<&str> = table
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut subsections: BTreeMap<String, Subsection> = BTreeMap::new();
        let mut order = Vec::new();
        let props = table.get("properties").and_then(Value::as_object);
        for (key, field) in props.into_iter().flatten() {
            let resolved = self.resolve(field);
            let mut key_path: Vec<&str> = path.to_vec();
            key_path.push(key);
            let dotted = header_path(header, key);
            let (sub_header, sub_table, kind) = match shape(resolved, self) {
                Shape::Table(t) => (format!("[{dotted}]"), Some(t), "table".to_string()),
                Shape::NamedTables(t) => (format!("[{dotted}.NAME]"), Some(t), "tables by name".to_string()),
                Shape::ArrayOfTables(t) => (format!("[[{dotted}]]"), Some(t), "array of tables".to_string()),
                Shape::Value => (String::new(), None, self.type_name(field)),
            };
            let default = if required.contains(&key.as_str()) {
                "required".to_string()
            } else {
                match field.get("default") {
                    None | Some(Value::Null) => "—".to_string(),
                    Some(value) => format!("`{}`", toml_value(value)),
                }
            };
            let mut description = self.text(field.get("description").and_then(Value::as_str).unwrap_or(""));
            if let Some(sub) = sub_table {
                let bare = non_null(field);
                let id = bare
                    .pointer("/items/$ref")
                    .or_else(|| bare.pointer("/additionalProperties/$ref"))
                    .or_else(|| bare.get("$ref"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| sub_header.clone());
                let entry = subsections.entry(id.clone()).or_insert_with(|| {
                    order.push(id.clone());
                    let own = self.text(section_description(field, sub, self));
                    (Vec::new(), key_path.iter().map(|s| s.to_string()).collect(), sub, own)
                });
                entry.0.push(sub_header.clone());
                if !description.contains(&sub_header) {
                    description = format!("{description} See `{sub_header}`.").trim().to_string();
                }
            }
            rows.push([format!("`{key}`"), cell(&kind), default, cell(&layers(&key_path)), cell(&description)]);
        }
        // One "set by" for the whole table when every key has the same.
        let shared = rows.first().map(|r| r[3].clone()).filter(|first| rows.iter().all(|r| &r[3] == first));
        match &shared {
            Some(layers) => {
                out.push_str(&format!(
                    "Set by: {layers}.\n\n| key | type | default | description |\n|---|---|---|---|\n"
                ));
                for [key, kind, default, _, description] in &rows {
                    out.push_str(&format!("| {key} | {kind} | {default} | {description} |\n"));
                }
            }
            None => {
                out.push_str("| key | type | default | set by | description |\n|---|---|---|---|---|\n");
                for [key, kind, default, layers, description] in &rows {
                    out.push_str(&format!("| {key} | {kind} | {default} | {layers} | {description} |\n"));
                }
            }
        }
        for id in order {
            let Some((headers, sub_path, sub, text)) = subsections.remove(&id) else { continue };
            let sub_path: Vec<&str> = sub_path.iter().map(String::as_str).collect();
            // Tables of the same type share one section: `[roles.planner]`, `[roles.critic]` …
            let header = headers.join("`, `");
            self.section(out, &sub_path, &header, &text, sub);
        }
    }

    /// A short type: `string`, `integer`, `array of string`, `"a" or "b"`, `table of string`.
    fn type_name(&self, schema: &Value) -> String {
        let schema = self.resolve(schema);
        if let Some(value) = schema.get("const") {
            return format!("`{value}`");
        }
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            return values.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(" or ");
        }
        if let Some(parts) = schema.get("oneOf").or_else(|| schema.get("anyOf")).and_then(Value::as_array) {
            return parts.iter().filter(|p| !is_null(p)).map(|p| self.type_name(p)).collect::<Vec<_>>().join(" or ");
        }
        let kinds: Vec<&str> = match schema.get("type") {
            Some(Value::String(kind)) => vec![kind.as_str()],
            Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).filter(|k| *k != "null").collect(),
            _ => Vec::new(),
        };
        let named: Vec<String> = kinds
            .iter()
            .map(|kind| match *kind {
                "array" => match schema.get("items") {
                    Some(items) => format!("array of {}", grouped(self.type_name(items))),
                    None => "array".to_string(),
                },
                "object" => match schema.get("additionalProperties").filter(|v| v.is_object()) {
                    Some(values) => format!("table of {}", grouped(self.type_name(values))),
                    None => "table".to_string(),
                },
                other => other.to_string(),
            })
            .collect();
        if named.is_empty() { "any value".to_string() } else { named.join(" or ") }
    }
}

/// A type name inside another: in parentheses when it has alternatives.
fn grouped(name: String) -> String {
    if name.contains(" or ") { format!("({name})") } else { name }
}

/// `schema`, or its one alternative besides `null` (the shape schemars gives an `Option`).
fn non_null(schema: &Value) -> &Value {
    if let Some(parts) = schema.get("anyOf").or_else(|| schema.get("oneOf")).and_then(Value::as_array) {
        let rest: Vec<&Value> = parts.iter().filter(|p| !is_null(p)).collect();
        if rest.len() == 1 && rest.len() < parts.len() {
            return rest[0];
        }
    }
    schema
}

/// True for the schema of `null` alone.
fn is_null(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null") || schema.get("const") == Some(&Value::Null)
}

/// The dotted path of a key within a section header: `[roles.planner]` + `model` →
/// `roles.planner.model`; `[[tool]]` + `input` → `tool.input`; `[providers.NAME]` + `kind` →
/// `providers.NAME.kind`.
fn header_path(header: &str, key: &str) -> String {
    let inner = header.trim_matches(['[', ']']);
    let first = inner.split(", ").next().unwrap_or(inner);
    format!("{}.{key}", first.trim_matches(['[', ']', '`']))
}

/// Which layers may set the key at `path` (section names without `NAME`), from the lists the
/// loader applies.
fn layers(path: &[&str]) -> String {
    let top = path.first().copied().unwrap_or("");
    if USER_ONLY.contains(&top) {
        return "user".into();
    }
    if UNTRUSTED_IGNORED.contains(&top) {
        return "user, trusted".into();
    }
    if top == "policy" && path.get(1).is_some_and(|key| !UNTRUSTED_POLICY_KEPT.contains(key)) {
        return "user, trusted".into();
    }
    let dotted = path.iter().take(2).copied().collect::<Vec<_>>().join(".");
    let rule = UNTRUSTED_RULES
        .iter()
        .find(|(key, _)| *key == dotted)
        .or_else(|| UNTRUSTED_RULES.iter().find(|(key, _)| *key == top));
    match rule {
        Some((_, rule)) => format!("user, trusted, untrusted ({rule})"),
        None => "user, trusted, untrusted".into(),
    }
}

/// A JSON default written as TOML would write it.
fn toml_value(value: &Value) -> String {
    match value {
        Value::Object(map) if map.is_empty() => "{}".into(),
        Value::Array(items) => format!("[{}]", items.iter().map(toml_value).collect::<Vec<_>>().join(", ")),
        other => other.to_string(),
    }
}

/// Text fit for one table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_section_and_the_layer_rules_appear() {
        let page = configuration_markdown();
        for header in [
            "## `[run]`",
            "## `[providers.NAME]`",
            "## `[limits]`",
            "## `[[tool]]`",
            "## `[[tool.input]]`",
            "## `[[policy.rule]]`",
            "## `[mcp_servers.NAME]`",
            "## `[trust]`",
        ] {
            assert!(page.contains(header), "{header} missing:\n{page}");
        }
        assert!(
            page.contains("Set by: user, trusted, untrusted (only lower than the value already in effect)."),
            "{page}"
        );
        assert!(page.contains("| `max_rounds` | integer | `5` | Rounds with tool calls"), "{page}");
        assert!(
            page.contains("Set by: user.\n\n| key | type | default | description |\n|---|---|---|---|\n| `workspaces`"),
            "{page}"
        );
        assert!(
            page.contains("## `[roles.cloud_drafter]`, `[roles.critic]`"),
            "tables of one type share a section: {page}"
        );
        assert!(page.contains("| `allowed_actions` | array of string | `[]` | user, trusted |"), "{page}");
    }

    #[test]
    fn the_untrusted_rules_name_keys_the_loader_keeps() {
        for (key, _) in UNTRUSTED_RULES {
            let mut parts = key.split('.');
            let top = parts.next().unwrap_or("");
            assert!(!UNTRUSTED_IGNORED.contains(&top), "{key}: an untrusted workspace cannot set it at all");
            if top == "policy" {
                let inner = parts.next().unwrap_or("");
                assert!(UNTRUSTED_POLICY_KEPT.contains(&inner), "{key} is dropped, not restricted");
            }
        }
        for key in super::super::merge::UNTRUSTED_POLICY_ADDED {
            assert!(UNTRUSTED_POLICY_KEPT.contains(key), "{key} is added, so it is kept");
        }
    }
}
