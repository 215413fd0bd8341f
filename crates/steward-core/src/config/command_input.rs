//! The typed parts of a `[[tool]]` definition as written: argv items, environment values,
//! inputs (checked on their own) and their JSON Schema.

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value, json};

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

#[cfg(feature = "schema")]
impl schemars::JsonSchema for ArgItem {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ArgItem".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [
                { "type": "string" },
                { "type": "object", "properties": { "input": { "type": "string" } }, "required": ["input"] },
            ],
        })
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

#[cfg(feature = "schema")]
impl schemars::JsonSchema for EnvValue {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "EnvValue".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "anyOf": [{ "type": "string" }, { "const": true }] })
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Compensate {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Compensate".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [{ "const": "none" }, { "type": "array", "items": generator.subschema_for::<ArgItem>() }],
        })
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            InputType::String => "string",
            InputType::Number => "number",
            InputType::Integer => "integer",
            InputType::Boolean => "boolean",
            InputType::Array => "array",
        }
    }

    /// True when `value` is of this (scalar) type.
    pub(crate) fn accepts(self, value: &Value) -> bool {
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

#[cfg(feature = "schema")]
impl schemars::JsonSchema for ItemsConfig {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ItemsConfig".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let kind = generator.subschema_for::<InputType>();
        schemars::json_schema!({
            "anyOf": [
                kind.clone(),
                {
                    "type": "object",
                    "properties": {
                        "type": kind,
                        "enum": { "type": "array" },
                        "pattern": { "type": "string" },
                    },
                    "required": ["type"],
                },
            ],
        })
    }
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    pub(crate) fn value_kind(&self) -> InputType {
        match (&self.kind, &self.items) {
            (InputType::Array, Some(items)) => items.kind,
            (kind, _) => *kind,
        }
    }

    pub(crate) fn value_pattern(&self) -> Option<&str> {
        self.items.as_ref().and_then(|i| i.pattern.as_deref()).or(self.pattern.as_deref())
    }

    pub(crate) fn value_enum(&self) -> Option<&[Value]> {
        self.items.as_ref().and_then(|i| i.allowed.as_deref()).or(self.allowed.as_deref())
    }

    /// Checks this input on its own; the message says what is wrong.
    pub(crate) fn validate(&self) -> Result<(), String> {
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
    pub(crate) fn schema(&self) -> Value {
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
