//! Elicitation (MCP `elicitation/create`, form mode): a server asks, during a tool call, for a
//! few values from the person behind the client.
//!
//! Steward declares form mode only (no URL mode). This crate routes a server's request to the
//! [`Elicitor`] of the tool call that is running on that server (see
//! [`crate::McpManager::call_eliciting`]); with no such call (a tool listing, a call made
//! without one, several calls at once) the request is declined at once and the reason logged.
//! Whoever answers uses the helpers here, so that every front end (terminal, web form, the
//! conformance client) fills defaults and validates the same way:
//!
//! - [`form_fields`] checks that the requested schema is what the MCP spec allows (a flat
//!   object of string, number, integer, boolean and single-choice properties) and describes
//!   each field for a form, pre-filled with the schema's `default` (SEP-1034);
//! - [`answer_form`] turns the typed-in texts into values, applies the defaults of omitted
//!   fields, and validates the result against the schema ([`validate`], with the `jsonschema`
//!   crate, formats included). Values that do not fit are refused with a message naming the
//!   field.
//!
//! Accepted values are validated once more right before they are sent; values that fail
//! then are not sent (the server gets `cancel`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

mod error;
pub use error::{AnswerError, SchemaError};

/// A server's request for input, as received (untrusted: show it as data).
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationRequest {
    /// The configured server name.
    pub server: String,
    /// The server's message to the person.
    pub message: String,
    /// The requested schema (`requestedSchema`) as JSON.
    pub schema: Value,
    /// The schema's property names in the order the server sent them (JSON objects here
    /// keep no order); for [`form_fields`].
    pub order: Vec<String>,
}

/// The answer sent back to the server.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAnswer {
    /// Accepted with these values (they must pass [`validate`]).
    Accept(Map<String, Value>),
    /// Declined: the person (or Steward on their behalf) said no.
    Decline,
    /// Dismissed without a choice (expired, cancelled).
    Cancel,
}

impl ElicitationAnswer {
    /// `accept`, `decline` or `cancel`.
    pub fn action(&self) -> &'static str {
        match self {
            ElicitationAnswer::Accept(_) => "accept",
            ElicitationAnswer::Decline => "decline",
            ElicitationAnswer::Cancel => "cancel",
        }
    }
}

/// Someone who answers elicitations for one tool call.
#[async_trait]
pub trait Elicitor: Send + Sync {
    /// Answers `request`. Dropping the future means nobody answered (the server gets
    /// `cancel`).
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer;
}

/// One field of an elicitation form.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Field {
    /// The property name (the key sent back).
    pub name: String,
    /// Its title, else its name.
    pub label: String,
    /// Its description (may be empty).
    pub description: String,
    /// True when the schema lists it in `required`.
    pub required: bool,
    /// What kind of value it takes.
    pub kind: FieldKind,
    /// The text the form starts with: the schema's `default` (empty when none).
    pub prefill: String,
}

/// What kind of value a field takes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FieldKind {
    /// Text, with an optional `format` (`email`, `uri`, `date`, `date-time`) and lengths.
    Text {
        /// The `format`, if any.
        format: Option<String>,
        /// `minLength`.
        min_length: Option<u64>,
        /// `maxLength`.
        max_length: Option<u64>,
    },
    /// A number; `integer` for whole numbers.
    Number {
        /// True for `type: integer`.
        integer: bool,
        /// `minimum`.
        minimum: Option<f64>,
        /// `maximum`.
        maximum: Option<f64>,
    },
    /// Yes or no.
    Boolean,
    /// One of a list (`enum`, or `oneOf` of `const`/`title`).
    Choice {
        /// The options, in the schema's order.
        options: Vec<Choice>,
    },
}

/// One option of a choice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    /// The value sent.
    pub value: String,
    /// What is shown (its title, else the value).
    pub label: String,
}

impl Field {
    /// A short description of the expected value (`whole number, 1 to 10`, `email`, `one of:
    /// a, b`), for prompts.
    pub fn hint(&self) -> String {
        match &self.kind {
            FieldKind::Text { format, min_length, max_length } => {
                let mut parts = vec![format.clone().unwrap_or_else(|| "text".into())];
                match (min_length, max_length) {
                    (Some(a), Some(b)) => parts.push(format!("{a} to {b} characters")),
                    (Some(a), None) => parts.push(format!("at least {a} characters")),
                    (None, Some(b)) => parts.push(format!("at most {b} characters")),
                    (None, None) => {}
                }
                parts.join(", ")
            }
            FieldKind::Number { integer, minimum, maximum } => {
                let what = if *integer { "whole number" } else { "number" };
                match (minimum, maximum) {
                    (Some(a), Some(b)) => format!("{what}, {a} to {b}"),
                    (Some(a), None) => format!("{what}, at least {a}"),
                    (None, Some(b)) => format!("{what}, at most {b}"),
                    (None, None) => what.to_string(),
                }
            }
            FieldKind::Boolean => "yes or no".into(),
            FieldKind::Choice { options } => {
                let values: Vec<&str> = options.iter().map(|o| o.value.as_str()).collect();
                format!("one of: {}", values.join(", "))
            }
        }
    }
}

/// Checks that `schema` is a form Steward can show (the MCP spec's restricted schema: an
/// object whose properties are strings, numbers, integers, booleans or single choices) and
/// describes its fields, pre-filled with their defaults: those named in `order` first, in
/// that order, then the others by name. `Err` says what is not supported.
pub fn form_fields(schema: &Value, order: &[String]) -> Result<Vec<Field>, SchemaError> {
    let object = schema.as_object().ok_or(SchemaError::NotAnObject)?;
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return Err(SchemaError::NotObjectType);
    }
    let properties = match object.get("properties") {
        None => return Ok(Vec::new()),
        Some(Value::Object(p)) => p,
        Some(_) => return Err(SchemaError::PropertiesNotAnObject),
    };
    let required: Vec<&str> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields = Vec::new();
    for (name, property) in properties {
        let property = property.as_object().ok_or_else(|| SchemaError::PropertyNotAnObject(name.clone()))?;
        let text = |key: &str| property.get(key).and_then(Value::as_str).map(str::to_string);
        let kind = field_kind(name, property)?;
        let prefill = match property.get("default") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        };
        fields.push(Field {
            name: name.clone(),
            label: text("title").filter(|t| !t.trim().is_empty()).unwrap_or_else(|| name.clone()),
            description: text("description").unwrap_or_default(),
            required: required.contains(&name.as_str()),
            kind,
            prefill,
        });
    }
    let position = |f: &Field| order.iter().position(|n| *n == f.name).unwrap_or(usize::MAX);
    fields.sort_by(|a, b| position(a).cmp(&position(b)).then_with(|| a.name.cmp(&b.name)));
    Ok(fields)
}

fn field_kind(name: &str, property: &Map<String, Value>) -> Result<FieldKind, SchemaError> {
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    let count = |key: &str| property.get(key).and_then(Value::as_u64);
    let kind = property.get("type").and_then(Value::as_str).unwrap_or("");
    if let Some(Value::Array(values)) = property.get("enum") {
        let labels: Vec<&str> = property
            .get("enumNames")
            .and_then(Value::as_array)
            .map(|n| n.iter().map(|l| l.as_str().unwrap_or("")).collect())
            .unwrap_or_default();
        let mut options = Vec::new();
        for (i, value) in values.iter().enumerate() {
            let value = value.as_str().ok_or_else(|| SchemaError::ChoiceNotText(name.to_string()))?;
            let label = labels.get(i).copied().filter(|l| !l.is_empty()).unwrap_or(value);
            options.push(Choice { value: value.to_string(), label: label.to_string() });
        }
        return Ok(FieldKind::Choice { options });
    }
    if let Some(Value::Array(alternatives)) = property.get("oneOf") {
        let mut options = Vec::new();
        for alternative in alternatives {
            let value = alternative
                .get("const")
                .and_then(Value::as_str)
                .ok_or_else(|| SchemaError::ChoiceWithoutConst(name.to_string()))?;
            let label = alternative.get("title").and_then(Value::as_str).filter(|l| !l.is_empty()).unwrap_or(value);
            options.push(Choice { value: value.to_string(), label: label.to_string() });
        }
        return Ok(FieldKind::Choice { options });
    }
    match kind {
        "string" => Ok(FieldKind::Text {
            format: property.get("format").and_then(Value::as_str).map(str::to_string),
            min_length: count("minLength"),
            max_length: count("maxLength"),
        }),
        "number" | "integer" => {
            Ok(FieldKind::Number { integer: kind == "integer", minimum: number("minimum"), maximum: number("maximum") })
        }
        "boolean" => Ok(FieldKind::Boolean),
        "array" => Err(SchemaError::List(name.to_string())),
        "" => Err(SchemaError::NoType(name.to_string())),
        other => Err(SchemaError::Type { name: name.to_string(), kind: other.to_string() }),
    }
}

/// `values` with the schema's `default` for every property they omit (SEP-1034: the client
/// applies defaults).
pub fn with_defaults(schema: &Value, mut values: Map<String, Value>) -> Map<String, Value> {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            if let Some(default) = property.get("default").filter(|d| !d.is_null())
                && !values.contains_key(name)
            {
                values.insert(name.clone(), default.clone());
            }
        }
    }
    values
}

/// The form's inputs as it starts: each field's pre-filled text. Submitting them unchanged
/// through [`answer_form`] answers with the defaults.
pub fn prefilled_inputs(fields: &[Field]) -> Vec<(String, String)> {
    fields.iter().map(|f| (f.name.clone(), f.prefill.clone())).collect()
}

/// Turns a form's texts (`(field name, text)`) into values: an empty text omits the field, a
/// number must parse as one, a yes/no must be `true`/`false` (or yes/no, y/n). Then applies
/// the defaults of omitted fields and validates the whole against `schema`. `Err` says what
/// is wrong, naming the field.
pub fn answer_form(
    schema: &Value,
    fields: &[Field],
    inputs: &[(String, String)],
) -> Result<Map<String, Value>, AnswerError> {
    let mut values = Map::new();
    for (name, text) in inputs {
        let Some(field) = fields.iter().find(|f| &f.name == name) else {
            return Err(AnswerError::UnknownField(name.clone()));
        };
        if text.is_empty() {
            continue;
        }
        let value = match &field.kind {
            FieldKind::Text { .. } | FieldKind::Choice { .. } => Value::String(text.clone()),
            FieldKind::Number { integer: true, .. } => match text.trim().parse::<i64>() {
                Ok(n) => Value::from(n),
                Err(_) => return Err(AnswerError::NotWholeNumber(field.label.clone())),
            },
            FieldKind::Number { integer: false, .. } => {
                match text.trim().parse::<f64>().ok().filter(|n| n.is_finite()).and_then(serde_json::Number::from_f64) {
                    Some(n) => Value::Number(n),
                    None => return Err(AnswerError::NotANumber(field.label.clone())),
                }
            }
            FieldKind::Boolean => match text.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" | "y" | "on" => Value::Bool(true),
                "false" | "no" | "n" | "off" => Value::Bool(false),
                _ => return Err(AnswerError::NotYesOrNo(field.label.clone())),
            },
        };
        values.insert(name.clone(), value);
    }
    let values = with_defaults(schema, values);
    validate(schema, &values)?;
    Ok(values)
}

/// Checks `values` against the requested `schema` (formats included) and that they hold only
/// the schema's properties. `Err` lists what is wrong (at most three problems).
pub fn validate(schema: &Value, values: &Map<String, Value>) -> Result<(), AnswerError> {
    form_fields(schema, &[])?;
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(extra) = values.keys().find(|k| !properties.is_some_and(|p| p.contains_key(*k))) {
        return Err(AnswerError::NotAskedFor(extra.clone()));
    }
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| AnswerError::InvalidSchema(e.to_string()))?;
    let instance = Value::Object(values.clone());
    let problems: Vec<String> = validator
        .iter_errors(&instance)
        .take(3)
        .map(|e| {
            let at = e.instance_path().to_string();
            let field = at.trim_start_matches('/');
            let problem = match e.kind() {
                jsonschema::error::ValidationErrorKind::Format { format } => {
                    format!("{} {}", e.instance(), format_problem(format))
                }
                _ => e.to_string(),
            };
            if field.is_empty() { problem } else { format!("`{field}`: {problem}") }
        })
        .collect();
    if problems.is_empty() { Ok(()) } else { Err(AnswerError::Invalid(problems)) }
}

/// Why a URL-mode request is declined.
const URL_MODE: &str = "it asked to open a URL; Steward offers form elicitation only";

/// What a value that fails the `format` check is not, in words (`is not a valid email
/// address`); formats without a name here read `does not match format "…"`.
fn format_problem(format: &str) -> String {
    let what = match format {
        "email" | "idn-email" => "a valid email address",
        "uri" | "iri" => "a valid URI (such as https://example.org/page)",
        "date" => "a valid date (YYYY-MM-DD)",
        "date-time" => "a valid date and time (such as 2025-01-31T09:30:00Z)",
        "time" => "a valid time (such as 09:30:00Z)",
        _ => return format!("does not match format {format:?}"),
    };
    format!("is not {what}")
}

/// How long a tool call has waited for people: its timeout does not run while an elicitation
/// of it waits for an answer.
pub(crate) struct CallClock {
    started: Instant,
    /// (elicitations waiting now, time spent waiting before the current wait, when the
    /// current wait began).
    state: watch::Sender<(usize, Duration, Option<Instant>)>,
}

impl CallClock {
    pub(crate) fn new() -> Self {
        CallClock { started: Instant::now(), state: watch::channel((0, Duration::ZERO, None)).0 }
    }

    /// Stops the clock until the returned guard is dropped.
    fn pause(&self) -> PauseGuard<'_> {
        self.state.send_modify(|(waiting, _, since)| {
            if *waiting == 0 {
                *since = Some(Instant::now());
            }
            *waiting += 1;
        });
        PauseGuard(self)
    }

    /// Resolves once `limit` of running time (time not spent waiting for an answer) has
    /// passed since the call began.
    pub(crate) async fn expired(&self, limit: Duration) {
        let mut rx = self.state.subscribe();
        loop {
            let (waiting, paused, _) = *rx.borrow_and_update();
            if waiting > 0 {
                if rx.changed().await.is_err() {
                    return std::future::pending().await;
                }
                continue;
            }
            let deadline = self.started + limit + paused;
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return,
                changed = rx.changed() => if changed.is_err() {
                    tokio::time::sleep_until(deadline).await;
                    return;
                },
            }
        }
    }
}

struct PauseGuard<'a>(&'a CallClock);

impl Drop for PauseGuard<'_> {
    fn drop(&mut self) {
        self.0.state.send_modify(|(waiting, paused, since)| {
            *waiting = waiting.saturating_sub(1);
            if *waiting == 0
                && let Some(start) = since.take()
            {
                *paused += start.elapsed();
            }
        });
    }
}

/// The tool calls running on one server, for routing its elicitations.
#[derive(Default)]
pub(crate) struct ActiveCalls {
    calls: Mutex<Vec<ActiveCall>>,
    next: AtomicU64,
    /// Why elicitations were declined without asking anyone (taken by the next listing).
    declined: Mutex<Vec<String>>,
}

struct ActiveCall {
    id: u64,
    elicitor: Option<Arc<dyn Elicitor>>,
    clock: Arc<CallClock>,
}

/// Unregisters a call when it ends.
pub(crate) struct ActiveGuard {
    calls: Arc<ActiveCalls>,
    id: u64,
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.calls.calls.lock().unwrap_or_else(PoisonError::into_inner).retain(|c| c.id != self.id);
    }
}

impl ActiveCalls {
    /// Registers a running call; its elicitations go to `elicitor` (declined when `None`).
    pub(crate) fn enter(self: &Arc<Self>, elicitor: Option<Arc<dyn Elicitor>>, clock: Arc<CallClock>) -> ActiveGuard {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).push(ActiveCall { id, elicitor, clock });
        ActiveGuard { calls: self.clone(), id }
    }

    /// The reasons of elicitations declined without asking anyone since the last call.
    pub(crate) fn take_declined(&self) -> Vec<String> {
        std::mem::take(&mut *self.declined.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn decline(&self, server: &str, reason: String) -> ElicitResult {
        tracing::warn!(server = %server, "mcp elicitation declined: {reason}");
        let mut declined = self.declined.lock().unwrap_or_else(PoisonError::into_inner);
        if declined.len() < 16 {
            declined.push(format!("server `{server}` asked for input; declined automatically: {reason}"));
        }
        ElicitResult::new(ElicitationAction::Decline)
    }

    /// Answers one `elicitation/create` from `server`: routed to the only running call's
    /// elicitor (which checks the form with [`form_fields`]); declined when no call (or more
    /// than one) is running, or it asks to open a URL. `cancelled` fires when the server
    /// withdraws the request.
    pub(crate) async fn elicit(
        &self,
        server: &str,
        params: ElicitRequestParams,
        cancelled: CancellationToken,
    ) -> ElicitResult {
        let (message, schema, order) = match params {
            ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
                let order = requested_schema.property_order.clone().unwrap_or_default();
                match serde_json::to_value(&requested_schema) {
                    Ok(schema) => (message, schema, order),
                    Err(e) => return self.decline(server, format!("its schema could not be read ({e})")),
                }
            }
            _ => return self.decline(server, URL_MODE.into()),
        };
        self.route(server, message, schema, order, cancelled).await
    }

    /// Answers one `elicitation/create` whose parameters the SDK could not read as a form
    /// request (`params` as sent): a requested schema beyond what the MCP spec allows (a
    /// list, a nested object, a property without a type). Routed like [`Self::elicit`], so
    /// the run's elicitor declines it (with its audit records and events) after
    /// [`form_fields`] refused the schema; declined at once when it asks to open a URL or
    /// lacks a message or a `requestedSchema` object.
    pub(crate) async fn elicit_unread(
        &self,
        server: &str,
        params: Value,
        cancelled: CancellationToken,
    ) -> ElicitResult {
        if params.get("mode").and_then(Value::as_str) == Some("url") {
            return self.decline(server, URL_MODE.into());
        }
        let Some(message) = params.get("message").and_then(Value::as_str) else {
            return self.decline(server, "its request has no text `message`".into());
        };
        let schema = match params.get("requestedSchema") {
            Some(schema @ Value::Object(_)) => schema.clone(),
            _ => return self.decline(server, "its request has no `requestedSchema` object".into()),
        };
        let order: Vec<String> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        self.route(server, message.to_string(), schema, order, cancelled).await
    }

    /// Puts a form request to the only running call's elicitor and turns its answer into the
    /// server's result (accepted values validated once more; `cancel` when they do not fit).
    async fn route(
        &self,
        server: &str,
        message: String,
        schema: Value,
        order: Vec<String>,
        cancelled: CancellationToken,
    ) -> ElicitResult {
        let route = {
            let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
            match calls.as_slice() {
                [] => Err("no tool call of a run is in progress on this server, so no one is there to answer".into()),
                [only] => match &only.elicitor {
                    Some(elicitor) => Ok((elicitor.clone(), only.clock.clone())),
                    None => Err("the tool call in progress has no one to answer (not part of a run)".into()),
                },
                several => Err(format!(
                    "{} tool calls are in progress on this server; Steward cannot tell which one asks",
                    several.len()
                )),
            }
        };
        let (elicitor, clock) = match route {
            Ok(route) => route,
            Err(reason) => return self.decline(server, reason),
        };
        let request = ElicitationRequest { server: server.to_string(), message, schema: schema.clone(), order };
        let answer = {
            let _paused = clock.pause();
            tokio::select! {
                answer = elicitor.elicit(request) => answer,
                _ = cancelled.cancelled() => ElicitationAnswer::Cancel,
            }
        };
        match answer {
            ElicitationAnswer::Accept(values) => match validate(&schema, &values) {
                Ok(()) => ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(values)),
                Err(problem) => {
                    tracing::warn!(server = %server, "mcp elicitation: the answer does not fit the schema ({problem}); sent cancel");
                    ElicitResult::new(ElicitationAction::Cancel)
                }
            },
            ElicitationAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
            ElicitationAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The schema of the conformance suite's SEP-1034 scenario.
    fn sep1034() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "description": "Verification status", "default": true}
            },
            "required": []
        })
    }

    fn order() -> Vec<String> {
        ["email", "n", "ok", "color", "size", "code", "when"].map(String::from).to_vec()
    }

    #[test]
    fn defaults_fill_only_what_is_missing() {
        let filled = with_defaults(&sep1034(), Map::new());
        assert_eq!(
            Value::Object(filled),
            json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
        );
        let mut given = Map::new();
        given.insert("age".into(), json!(41));
        let filled = with_defaults(&sep1034(), given);
        assert_eq!(filled["age"], 41);
        assert_eq!(filled["name"], "John Doe");
        let no_defaults = json!({"type": "object", "properties": {"x": {"type": "string"}}});
        assert!(with_defaults(&no_defaults, Map::new()).is_empty());
    }

    #[test]
    fn the_prefilled_form_submitted_unchanged_answers_with_the_defaults() {
        let schema = sep1034();
        let order: Vec<String> = ["name", "age", "score", "status", "verified"].map(String::from).to_vec();
        let fields = form_fields(&schema, &order).unwrap();
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, order, "the server's order is kept");
        let prefill: Vec<&str> = fields.iter().map(|f| f.prefill.as_str()).collect();
        assert_eq!(prefill, ["John Doe", "30", "95.5", "active", "true"]);
        let unordered: Vec<String> = form_fields(&schema, &[]).unwrap().into_iter().map(|f| f.name).collect();
        assert_eq!(unordered, ["age", "name", "score", "status", "verified"], "by name without an order");
        let values = answer_form(&schema, &fields, &prefilled_inputs(&fields)).unwrap();
        assert_eq!(Value::Object(values), Value::Object(with_defaults(&schema, Map::new())));
    }

    #[test]
    fn fields_describe_every_allowed_kind() {
        let schema = json!({
            "type": "object",
            "properties": {
                "email": {"type": "string", "format": "email", "title": "E-mail", "minLength": 3, "maxLength": 80},
                "n": {"type": "integer", "minimum": 1, "maximum": 10},
                "ok": {"type": "boolean"},
                "color": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
                "size": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]}
            },
            "required": ["email"]
        });
        let fields = form_fields(&schema, &order()).unwrap();
        assert_eq!(fields[0].label, "E-mail");
        assert!(fields[0].required);
        assert_eq!(fields[0].hint(), "email, 3 to 80 characters");
        assert_eq!(fields[1].hint(), "whole number, 1 to 10");
        assert!(!fields[1].required);
        assert_eq!(fields[2].kind, FieldKind::Boolean);
        assert_eq!(
            fields[3].kind,
            FieldKind::Choice {
                options: vec![
                    Choice { value: "r".into(), label: "Red".into() },
                    Choice { value: "g".into(), label: "Green".into() }
                ]
            }
        );
        assert_eq!(fields[4].hint(), "one of: s, m");
        let FieldKind::Choice { options } = &fields[4].kind else { panic!() };
        assert_eq!(options[1].label, "Medium");
    }

    #[test]
    fn schemas_beyond_the_spec_are_refused() {
        let nested = json!({"type": "object", "properties": {"a": {"type": "object"}}});
        assert!(form_fields(&nested, &[]).unwrap_err().to_string().contains("`a`"));
        let list = json!({"type": "object", "properties": {"a": {"type": "array", "items": {"enum": ["x"]}}}});
        assert!(form_fields(&list, &[]).unwrap_err().to_string().contains("list"));
        assert!(form_fields(&json!({"type": "string"}), &[]).is_err());
        assert!(form_fields(&json!("x"), &[]).is_err());
        assert_eq!(form_fields(&json!({"type": "object"}), &[]).unwrap(), Vec::new());
    }

    #[test]
    fn invalid_answers_are_refused_with_a_clear_message() {
        let schema = json!({
            "type": "object",
            "properties": {
                "email": {"type": "string", "format": "email"},
                "n": {"type": "integer", "minimum": 1, "maximum": 10},
                "ok": {"type": "boolean"},
                "size": {"type": "string", "enum": ["s", "m"]},
                "code": {"type": "string", "minLength": 2, "maxLength": 3},
                "when": {"type": "string", "format": "date"}
            },
            "required": ["email"]
        });
        let fields = form_fields(&schema, &order()).unwrap();
        let answer = |pairs: &[(&str, &str)]| {
            let inputs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            answer_form(&schema, &fields, &inputs).map_err(|e| e.to_string())
        };
        let ok =
            answer(&[("email", "a@example.org"), ("n", "3"), ("ok", "yes"), ("size", "m"), ("when", "2025-01-31")])
                .unwrap();
        assert_eq!(
            Value::Object(ok),
            json!({"email": "a@example.org", "n": 3, "ok": true, "size": "m", "when": "2025-01-31"})
        );
        let missing = answer(&[("email", ""), ("n", "3")]).unwrap_err();
        assert!(missing.contains("email") && missing.contains("required"), "{missing}");
        assert_eq!(
            answer(&[("email", "not an address")]).unwrap_err(),
            r#"`email`: "not an address" is not a valid email address"#
        );
        assert_eq!(
            answer(&[("email", "a@b.org"), ("when", "31/01/2025")]).unwrap_err(),
            r#"`when`: "31/01/2025" is not a valid date (YYYY-MM-DD)"#
        );
        let odd = json!({"type": "object", "properties": {"v": {"type": "string", "format": "ipv4"}}});
        let odd_fields = form_fields(&odd, &[]).unwrap();
        let wrong = answer_form(&odd, &odd_fields, &[("v".into(), "x".into())]).unwrap_err().to_string();
        assert_eq!(wrong, r#"`v`: "x" does not match format "ipv4""#);
        assert_eq!(answer(&[("email", "a@b.org"), ("n", "three")]).unwrap_err(), "`n` must be a whole number");
        let big = answer(&[("email", "a@b.org"), ("n", "11")]).unwrap_err();
        assert!(big.contains("`n`") && big.contains("maximum"), "{big}");
        assert!(answer(&[("email", "a@b.org"), ("ok", "maybe")]).unwrap_err().contains("yes or no"));
        assert!(answer(&[("email", "a@b.org"), ("size", "xl")]).unwrap_err().contains("`size`"));
        assert!(answer(&[("email", "a@b.org"), ("code", "abcd")]).unwrap_err().contains("`code`"));
        assert!(answer(&[("email", "a@b.org"), ("when", "yesterday")]).unwrap_err().contains("`when`"));
        assert!(answer(&[("email", "a@b.org"), ("other", "x")]).unwrap_err().contains("not a field"));
        let mut extra = Map::new();
        extra.insert("email".into(), json!("a@b.org"));
        extra.insert("smuggled".into(), json!(1));
        assert!(validate(&schema, &extra).unwrap_err().to_string().contains("not asked for"));
    }

    #[tokio::test(start_paused = true)]
    async fn the_call_timeout_stops_while_an_answer_is_awaited() {
        let clock = Arc::new(CallClock::new());
        let limit = Duration::from_secs(10);
        let waiter = {
            let clock = clock.clone();
            tokio::spawn(async move {
                clock.expired(limit).await;
                Instant::now()
            })
        };
        tokio::time::sleep(Duration::from_secs(4)).await;
        let paused_at = Instant::now();
        {
            let _paused = clock.pause();
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        let expired_at = waiter.await.unwrap();
        // 4 s ran before the pause, 6 s after it.
        assert_eq!(expired_at - paused_at, Duration::from_secs(66));
    }
}
