//! The typed parts of a `[[tool]]` definition: argv items, environment values, inputs and
//! their JSON Schema, and the expansion of a call's arguments into argv items.

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value, json};
use steward_policy::{Access, Workspace};

use crate::tools::ToolError;

/// One argv item of a template: a literal string, or `{ input = "NAME" }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "toml::Value")]
pub enum ArgItem {
    /// Passed as written.
    Literal(String),
    /// Replaced by the value(s) of the named input.
    Input {
        /// The input's name.
        input: String,
    },
}

impl TryFrom<toml::Value> for ArgItem {
    type Error = String;

    fn try_from(value: toml::Value) -> Result<Self, String> {
        let shape = "an argv item must be a string or { input = \"NAME\" }";
        match value {
            toml::Value::String(text) => Ok(ArgItem::Literal(text)),
            toml::Value::Table(table) if table.len() == 1 => match table.get("input") {
                Some(toml::Value::String(name)) => Ok(ArgItem::Input { input: name.clone() }),
                _ => Err(shape.into()),
            },
            _ => Err(shape.into()),
        }
    }
}

impl Serialize for ArgItem {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ArgItem::Literal(text) => s.serialize_str(text),
            ArgItem::Input { input } => json!({ "input": input }).serialize(s),
        }
    }
}

/// An `env` value: a string sets the variable; `true` passes it from Steward's environment.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "toml::Value")]
pub enum EnvValue {
    /// Set to this value.
    Set(String),
    /// Passed through (allowed names only).
    Pass,
}

impl TryFrom<toml::Value> for EnvValue {
    type Error = String;

    fn try_from(value: toml::Value) -> Result<Self, String> {
        match value {
            toml::Value::String(text) => Ok(EnvValue::Set(text)),
            toml::Value::Boolean(true) => Ok(EnvValue::Pass),
            _ => Err("an env value must be a string (set it) or true (pass it through)".into()),
        }
    }
}

impl Serialize for EnvValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            EnvValue::Set(text) => s.serialize_str(text),
            EnvValue::Pass => s.serialize_bool(true),
        }
    }
}

/// `callable`: where the tool is offered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Callable {
    /// Offered in every round.
    #[default]
    Always,
    /// Offered only as a step of a `[[tool_call_chain]]`.
    ChainOnly,
}

/// `compensate`: `"none"` or an argv template.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "toml::Value")]
pub enum Compensate {
    /// Nothing undoes the call.
    None,
    /// An argv template that undoes it (recorded; not run yet).
    Command(Vec<ArgItem>),
}

impl TryFrom<toml::Value> for Compensate {
    type Error = String;

    fn try_from(value: toml::Value) -> Result<Self, String> {
        match value {
            toml::Value::String(text) if text == "none" => Ok(Compensate::None),
            toml::Value::Array(items) => {
                items.into_iter().map(ArgItem::try_from).collect::<Result<_, _>>().map(Compensate::Command)
            }
            _ => Err("compensate must be \"none\" or an argv array".into()),
        }
    }
}

impl Serialize for Compensate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Compensate::None => s.serialize_str("none"),
            Compensate::Command(argv) => argv.serialize(s),
        }
    }
}

/// An input's JSON type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InputType {
    /// A JSON string.
    String,
    /// Any JSON number.
    Number,
    /// A whole number.
    Integer,
    /// `true` or `false`.
    Boolean,
    /// A JSON array whose elements are described by `items`.
    Array,
}

impl InputType {
    fn as_str(self) -> &'static str {
        match self {
            InputType::String => "string",
            InputType::Number => "number",
            InputType::Integer => "integer",
            InputType::Boolean => "boolean",
            InputType::Array => "array",
        }
    }

    /// True when `value` is of this (scalar) type.
    fn accepts(self, value: &Value) -> bool {
        match self {
            InputType::String => value.is_string(),
            InputType::Number => value.is_number(),
            InputType::Integer => value.as_i64().is_some() || value.as_u64().is_some(),
            InputType::Boolean => value.is_boolean(),
            InputType::Array => value.is_array(),
        }
    }
}

/// `items` of an array input: a type name (`items = "string"`) or a table.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(try_from = "toml::Value")]
pub struct ItemsConfig {
    /// The element type (not `array`).
    #[serde(rename = "type")]
    pub kind: InputType,
    /// Allowed element values.
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<Value>>,
    /// Regex every string element must match (anywhere, unless anchored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ItemsTable {
    #[serde(rename = "type")]
    kind: InputType,
    #[serde(rename = "enum", default)]
    allowed: Option<Vec<Value>>,
    #[serde(default)]
    pattern: Option<String>,
}

impl TryFrom<toml::Value> for ItemsConfig {
    type Error = String;

    fn try_from(value: toml::Value) -> Result<Self, String> {
        match value {
            toml::Value::String(_) => {
                let kind: InputType =
                    value.try_into().map_err(|e: toml::de::Error| format!("items: {}", e.message()))?;
                Ok(ItemsConfig { kind, allowed: None, pattern: None })
            }
            toml::Value::Table(_) => {
                let t: ItemsTable = value.try_into().map_err(|e: toml::de::Error| format!("items: {}", e.message()))?;
                Ok(ItemsConfig { kind: t.kind, allowed: t.allowed, pattern: t.pattern })
            }
            _ => Err("items must be a type name or a table { type = \"string\", … }".into()),
        }
    }
}

/// One `[[tool.input]]`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InputConfig {
    /// Argument name the model uses (`^[a-zA-Z0-9_-]{1,64}$`).
    pub name: String,
    /// JSON type.
    #[serde(rename = "type")]
    pub kind: InputType,
    /// Element type of an array input (required for arrays, refused otherwise).
    #[serde(default)]
    pub items: Option<ItemsConfig>,
    /// Must be given (default false: absent or `null` expands to no argv item).
    #[serde(default)]
    pub required: bool,
    /// Fewest elements of an array input.
    #[serde(default)]
    pub min_items: Option<u64>,
    /// Most elements of an array input.
    #[serde(default)]
    pub max_items: Option<u64>,
    /// Allowed values (of the input's type).
    #[serde(rename = "enum", default)]
    pub allowed: Option<Vec<Value>>,
    /// Regex a string must match (Rust `regex` syntax; anywhere, unless anchored).
    #[serde(default)]
    pub pattern: Option<String>,
    /// Shown to the model.
    #[serde(default)]
    pub description: Option<String>,
    /// The value (or each element) is a workspace path, checked by the gate.
    #[serde(default)]
    pub path: bool,
    /// Accept strings starting with `-` (default false: option injection is refused).
    #[serde(default)]
    pub allow_dash: bool,
}

impl InputConfig {
    /// The type of the values that become argv items: the element type for arrays.
    fn value_kind(&self) -> InputType {
        match (&self.kind, &self.items) {
            (InputType::Array, Some(items)) => items.kind,
            (kind, _) => *kind,
        }
    }

    fn value_pattern(&self) -> Option<&str> {
        self.items.as_ref().and_then(|i| i.pattern.as_deref()).or(self.pattern.as_deref())
    }

    fn value_enum(&self) -> Option<&[Value]> {
        self.items.as_ref().and_then(|i| i.allowed.as_deref()).or(self.allowed.as_deref())
    }

    /// Checks this input on its own; the message says what is wrong.
    pub(super) fn validate(&self) -> Result<(), String> {
        let name_ok = (1..=64).contains(&self.name.len())
            && self.name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !name_ok {
            return Err("the name must be 1 to 64 letters, digits, `_` or `-`".into());
        }
        let is_array = self.kind == InputType::Array;
        match (&self.items, is_array) {
            (None, true) => return Err("an array input needs `items`".into()),
            (Some(_), false) => return Err("`items` applies only to arrays".into()),
            (Some(items), true) if items.kind == InputType::Array => {
                return Err("arrays of arrays are not supported".into());
            }
            _ => {}
        }
        if !is_array && (self.min_items.is_some() || self.max_items.is_some()) {
            return Err("`min_items`/`max_items` apply only to arrays".into());
        }
        if let (Some(min), Some(max)) = (self.min_items, self.max_items)
            && min > max
        {
            return Err(format!("min_items ({min}) is greater than max_items ({max})"));
        }
        if is_array && (self.pattern.is_some() || self.allowed.is_some()) {
            return Err("put `pattern` and `enum` of an array input in `items`".into());
        }
        let kind = self.value_kind();
        if let Some(pattern) = self.value_pattern() {
            if kind != InputType::String {
                return Err("`pattern` applies only to strings".into());
            }
            regex::Regex::new(pattern).map_err(|e| format!("bad pattern `{pattern}`: {e}"))?;
        }
        if let Some(values) = self.value_enum() {
            if values.is_empty() {
                return Err("`enum` is empty".into());
            }
            if let Some(bad) = values.iter().find(|v| !kind.accepts(v)) {
                return Err(format!("enum value {bad} is not a {}", kind.as_str()));
            }
        }
        if (self.path || self.allow_dash) && kind != InputType::String {
            return Err("`path` and `allow_dash` apply only to strings (or arrays of strings)".into());
        }
        Ok(())
    }

    /// This input's JSON Schema property: optional inputs are nullable.
    fn schema(&self) -> Value {
        let mut p = Map::new();
        let kind = self.kind.as_str();
        p.insert("type".into(), if self.required { json!(kind) } else { json!([kind, "null"]) });
        if let Some(description) = &self.description {
            p.insert("description".into(), json!(description));
        }
        if let Some(values) = &self.allowed {
            let mut values = values.clone();
            if !self.required {
                values.push(Value::Null);
            }
            p.insert("enum".into(), Value::Array(values));
        }
        if let Some(pattern) = &self.pattern {
            p.insert("pattern".into(), json!(pattern));
        }
        if let Some(items) = &self.items {
            let mut i = Map::new();
            i.insert("type".into(), json!(items.kind.as_str()));
            if let Some(values) = &items.allowed {
                i.insert("enum".into(), json!(values));
            }
            if let Some(pattern) = &items.pattern {
                i.insert("pattern".into(), json!(pattern));
            }
            p.insert("items".into(), Value::Object(i));
        }
        if let Some(min) = self.min_items {
            p.insert("minItems".into(), json!(min));
        }
        if let Some(max) = self.max_items {
            p.insert("maxItems".into(), json!(max));
        }
        Value::Object(p)
    }
}

/// The JSON Schema of a tool's arguments: an object of the inputs, `additionalProperties:
/// false`, `required` listing the required inputs; optional inputs are nullable so the
/// strict rendering (SPEC T10, every property required) describes the same calls.
pub(super) fn input_schema(inputs: &[InputConfig]) -> Value {
    let properties: Map<String, Value> = inputs.iter().map(|i| (i.name.clone(), i.schema())).collect();
    let required: Vec<&str> = inputs.iter().filter(|i| i.required).map(|i| i.name.as_str()).collect();
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// Expands argv templates for one call.
pub(super) struct Template<'a> {
    pub inputs: &'a [InputConfig],
    /// Access used to resolve path inputs.
    pub access: Access,
    /// True when the command runs at the workspace root (paths passed relative).
    pub at_root: bool,
    /// The command's working directory, workspace-relative (`""` for the root): values of
    /// other inputs are judged by the paths they name from there.
    pub cwd: &'a str,
}

/// The text a scalar value becomes as an argv item (`None` for arrays, objects, `null`).
fn argv_text(kind: InputType, value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(n) if kind == InputType::Integer => {
            Some(n.as_i64().map_or_else(|| n.to_string(), |i| i.to_string()))
        }
        Value::Number(_) | Value::Bool(_) => Some(value.to_string()),
        _ => None,
    }
}

/// The workspace paths named by the values of the inputs that are not declared `path`
/// (see [`steward_policy::Workspace::paths_named_by`]), for the gate to resolve like path
/// inputs: a value is a path to the program whenever it names one, however it is declared.
pub(super) fn named_paths(inputs: &[InputConfig], args: &Value, ws: &Workspace, cwd: &str) -> Vec<String> {
    let mut out = Vec::new();
    for input in inputs.iter().filter(|i| !i.path) {
        let values: Vec<&Value> = match args.get(&input.name) {
            None | Some(Value::Null) => continue,
            Some(Value::Array(items)) => items.iter().collect(),
            Some(other) => vec![other],
        };
        for text in values.into_iter().filter_map(|v| argv_text(input.value_kind(), v)) {
            for path in ws.paths_named_by(&text, cwd) {
                if !out.contains(&path) {
                    out.push(path);
                }
            }
        }
    }
    out
}

fn invalid(message: String) -> ToolError {
    ToolError::refused("invalid_arguments", message)
}

impl Template<'_> {
    /// The argv for `args`. Refuses (before anything runs) unknown arguments, missing
    /// required inputs, values of the wrong type or outside `enum`/`pattern`/`min_items`/
    /// `max_items`, strings starting with `-` (rule `option_injection`) unless allowed, NUL
    /// bytes, path values the workspace rules refuse (named by their rule), and values of
    /// other inputs naming a path those rules refuse (see [`named_paths`]).
    pub fn expand(&self, argv: &[ArgItem], args: &Value, ws: &Workspace) -> Result<Vec<String>, ToolError> {
        let Some(object) = args.as_object() else { return Err(invalid("the arguments must be an object".into())) };
        if let Some(unknown) = object.keys().find(|k| !self.inputs.iter().any(|i| &i.name == *k)) {
            return Err(invalid(format!("unknown argument `{unknown}`")));
        }
        for input in self.inputs.iter().filter(|i| i.required) {
            if object.get(&input.name).is_none_or(Value::is_null) {
                return Err(invalid(format!("missing required argument `{}`", input.name)));
            }
        }
        let mut out = Vec::with_capacity(argv.len());
        for item in argv {
            match item {
                ArgItem::Literal(text) => out.push(text.clone()),
                ArgItem::Input { input: name } => {
                    let Some(input) = self.inputs.iter().find(|i| &i.name == name) else {
                        return Err(invalid(format!("placeholder `{name}` names no input")));
                    };
                    match object.get(name) {
                        None | Some(Value::Null) => {}
                        Some(Value::Array(values)) if input.kind == InputType::Array => {
                            let count = values.len() as u64;
                            if input.min_items.is_some_and(|m| count < m) || input.max_items.is_some_and(|m| count > m)
                            {
                                return Err(invalid(format!("`{name}` has {count} items, outside the allowed range")));
                            }
                            for value in values {
                                out.push(self.scalar(input, value, ws)?);
                            }
                        }
                        Some(_) if input.kind == InputType::Array => {
                            return Err(invalid(format!("`{name}` must be an array")));
                        }
                        Some(value) => out.push(self.scalar(input, value, ws)?),
                    }
                }
            }
        }
        Ok(out)
    }

    /// One value as one argv item.
    fn scalar(&self, input: &InputConfig, value: &Value, ws: &Workspace) -> Result<String, ToolError> {
        let name = &input.name;
        let kind = input.value_kind();
        if !kind.accepts(value) {
            return Err(invalid(format!("`{name}` must be a {} (got {value})", kind.as_str())));
        }
        if let Some(values) = input.value_enum()
            && !values.contains(value)
        {
            return Err(invalid(format!("`{name}` must be one of the allowed values")));
        }
        let text = argv_text(kind, value).unwrap_or_else(|| value.to_string());
        if text.contains('\0') {
            return Err(invalid(format!("`{name}` contains a NUL byte")));
        }
        if let Some(pattern) = input.value_pattern() {
            let re = regex::Regex::new(pattern).map_err(|e| ToolError::failed(format!("bad pattern: {e}")))?;
            if !re.is_match(&text) {
                return Err(invalid(format!("`{name}` does not match the pattern `{pattern}`")));
            }
        }
        if input.path {
            let resolved = ws.resolve(&text, self.access)?;
            return Ok(if !self.at_root {
                resolved.abs.display().to_string()
            } else if resolved.rel.is_empty() {
                ".".to_string()
            } else if resolved.rel.starts_with('-') {
                format!("./{}", resolved.rel)
            } else {
                resolved.rel
            });
        }
        // Not declared a path, but a path to the program all the same when it names one.
        for named in ws.paths_named_by(&text, self.cwd) {
            ws.resolve(&named, self.access)?;
        }
        if text.starts_with('-') && !input.allow_dash {
            return Err(ToolError::refused(
                "option_injection",
                format!("`{name}` starts with `-` and could be read as an option; this input does not allow it"),
            ));
        }
        Ok(text)
    }
}
