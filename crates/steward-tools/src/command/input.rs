//! The expansion of a call's arguments into argv items, and the JSON Schema of a
//! `[[tool]]`'s arguments (its typed parts are [`steward_config::InputConfig`] and kin).

use serde_json::{Map, Value, json};
use steward_policy::{Access, Workspace};

use crate::ToolError;
use steward_config::{ArgItem, InputConfig, InputType};

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
