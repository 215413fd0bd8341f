//! The typed parts of a `[[tool]]` definition as written: argv items, environment values,
//! inputs (checked on their own) and their JSON Schema.

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value, json};

/// A `[[tool]]` value of the wrong shape; the message says which shape is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// An argv item that is neither a string nor `{ input = "NAME" }`.
    #[error("an argv item must be a string or {{ input = \"NAME\" }}")]
    ArgItem,
    /// An `env` value that is neither a string nor `true`.
    #[error("an env value must be a string (set it) or true (pass it through)")]
    EnvValue,
    /// A `compensate` that is neither `"none"` nor an argv array.
    #[error("compensate must be \"none\" or an argv array")]
    Compensate,
    /// An `items` that is neither a type name nor a table.
    #[error("items must be a type name or a table {{ type = \"string\", … }}")]
    Items,
    /// An `items` whose type or table does not parse (the parser's message).
    #[error("items: {0}")]
    ItemsValue(String),
}

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
    type Error = ShapeError;

    fn try_from(value: toml::Value) -> Result<Self, ShapeError> {
        match value {
            toml::Value::String(text) => Ok(ArgItem::Literal(text)),
            toml::Value::Table(table) if table.len() == 1 => match table.get("input") {
                Some(toml::Value::String(name)) => Ok(ArgItem::Input { input: name.clone() }),
                _ => Err(ShapeError::ArgItem),
            },
            _ => Err(ShapeError::ArgItem),
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
    type Error = ShapeError;

    fn try_from(value: toml::Value) -> Result<Self, ShapeError> {
        match value {
            toml::Value::String(text) => Ok(EnvValue::Set(text)),
            toml::Value::Boolean(true) => Ok(EnvValue::Pass),
            _ => Err(ShapeError::EnvValue),
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
    /// An argv template that undoes it (run by `steward rollback`).
    Command(Vec<ArgItem>),
}

impl TryFrom<toml::Value> for Compensate {
    type Error = ShapeError;

    fn try_from(value: toml::Value) -> Result<Self, ShapeError> {
        match value {
            toml::Value::String(text) if text == "none" => Ok(Compensate::None),
            toml::Value::Array(items) => {
                items.into_iter().map(ArgItem::try_from).collect::<Result<_, _>>().map(Compensate::Command)
            }
            _ => Err(ShapeError::Compensate),
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
    /// The JSON Schema type name: `string`, `number`, `integer`, `boolean` or `array`.
    pub fn as_str(self) -> &'static str {
        match self {
            InputType::String => "string",
            InputType::Number => "number",
            InputType::Integer => "integer",
            InputType::Boolean => "boolean",
            InputType::Array => "array",
        }
    }

    /// True when `value` is of this (scalar) type.
    pub fn accepts(self, value: &Value) -> bool {
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
    type Error = ShapeError;

    fn try_from(value: toml::Value) -> Result<Self, ShapeError> {
        let invalid = |e: toml::de::Error| ShapeError::ItemsValue(e.message().to_string());
        match value {
            toml::Value::String(_) => {
                let kind: InputType = value.try_into().map_err(invalid)?;
                Ok(ItemsConfig { kind, allowed: None, pattern: None })
            }
            toml::Value::Table(_) => {
                let t: ItemsTable = value.try_into().map_err(invalid)?;
                Ok(ItemsConfig { kind: t.kind, allowed: t.allowed, pattern: t.pattern })
            }
            _ => Err(ShapeError::Items),
        }
    }
}

/// What is wrong with one `[[tool.input]]` on its own ([`InputConfig::validate`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// The name is not 1 to 64 letters, digits, `_` or `-`.
    #[error("the name must be 1 to 64 letters, digits, `_` or `-`")]
    Name,
    /// An array input without `items`.
    #[error("an array input needs `items`")]
    ArrayWithoutItems,
    /// `items` on an input that is not an array.
    #[error("`items` applies only to arrays")]
    ItemsOnNonArray,
    /// `items` of type array.
    #[error("arrays of arrays are not supported")]
    NestedArray,
    /// `min_items` or `max_items` on an input that is not an array.
    #[error("`min_items`/`max_items` apply only to arrays")]
    CountOnNonArray,
    /// `min_items` above `max_items`.
    #[error("min_items ({min}) is greater than max_items ({max})")]
    MinAboveMax {
        /// `min_items`.
        min: u64,
        /// `max_items`.
        max: u64,
    },
    /// `pattern` or `enum` on an array input itself rather than its `items`.
    #[error("put `pattern` and `enum` of an array input in `items`")]
    ArrayPatternOrEnum,
    /// `pattern` on values that are not strings.
    #[error("`pattern` applies only to strings")]
    PatternOnNonString,
    /// `pattern` is not a valid regular expression.
    #[error("bad pattern `{pattern}`: {message}")]
    BadPattern {
        /// The pattern as written.
        pattern: String,
        /// The regex parser's message.
        message: String,
    },
    /// `enum` lists nothing.
    #[error("`enum` is empty")]
    EmptyEnum,
    /// An `enum` value of another type than the input's.
    #[error("enum value {value} is not a {kind}")]
    EnumValueType {
        /// The value, as JSON.
        value: String,
        /// The input's type.
        kind: &'static str,
    },
    /// `path` or `allow_dash` on values that are not strings.
    #[error("`path` and `allow_dash` apply only to strings (or arrays of strings)")]
    PathOrDashOnNonString,
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
    pub fn value_kind(&self) -> InputType {
        match (&self.kind, &self.items) {
            (InputType::Array, Some(items)) => items.kind,
            (kind, _) => *kind,
        }
    }

    /// The regular expression each argv value must match: the items' for arrays, else the input's.
    pub fn value_pattern(&self) -> Option<&str> {
        self.items.as_ref().and_then(|i| i.pattern.as_deref()).or(self.pattern.as_deref())
    }

    /// The values each argv value must be one of: the items' for arrays, else the input's.
    pub fn value_enum(&self) -> Option<&[Value]> {
        self.items.as_ref().and_then(|i| i.allowed.as_deref()).or(self.allowed.as_deref())
    }

    /// Checks this input on its own; the message says what is wrong.
    pub fn validate(&self) -> Result<(), InputError> {
        let name_ok = (1..=64).contains(&self.name.len())
            && self.name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !name_ok {
            return Err(InputError::Name);
        }
        let is_array = self.kind == InputType::Array;
        match (&self.items, is_array) {
            (None, true) => return Err(InputError::ArrayWithoutItems),
            (Some(_), false) => return Err(InputError::ItemsOnNonArray),
            (Some(items), true) if items.kind == InputType::Array => return Err(InputError::NestedArray),
            _ => {}
        }
        if !is_array && (self.min_items.is_some() || self.max_items.is_some()) {
            return Err(InputError::CountOnNonArray);
        }
        if let (Some(min), Some(max)) = (self.min_items, self.max_items)
            && min > max
        {
            return Err(InputError::MinAboveMax { min, max });
        }
        if is_array && (self.pattern.is_some() || self.allowed.is_some()) {
            return Err(InputError::ArrayPatternOrEnum);
        }
        let kind = self.value_kind();
        if let Some(pattern) = self.value_pattern() {
            if kind != InputType::String {
                return Err(InputError::PatternOnNonString);
            }
            regex::Regex::new(pattern)
                .map_err(|e| InputError::BadPattern { pattern: pattern.to_string(), message: e.to_string() })?;
        }
        if let Some(values) = self.value_enum() {
            if values.is_empty() {
                return Err(InputError::EmptyEnum);
            }
            if let Some(bad) = values.iter().find(|v| !kind.accepts(v)) {
                return Err(InputError::EnumValueType { value: bad.to_string(), kind: kind.as_str() });
            }
        }
        if (self.path || self.allow_dash) && kind != InputType::String {
            return Err(InputError::PathOrDashOnNonString);
        }
        Ok(())
    }

    /// This input's JSON Schema property: optional inputs are nullable.
    pub fn schema(&self) -> Value {
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
