//! Constrained replies: a local server is told to let the model write exactly one of a call of
//! an offered tool (arguments matching its schema) or an answer, so that names that are not
//! offered, unclosed JSON, extra keys and schema dumps cannot be written at all.
//!
//! A constrained request to an OpenAI-compatible server carries no `tools`: the tools are
//! listed in the system message ([`tool_listing`]), a last tool result gets
//! [`ANSWER_REMINDER`], and the reply is held to the JSON Schema of [`reply_schema_text`]:
//!
//! ```text
//! {"name": "read", "arguments": {"path": "notes.txt"}}      a call of an offered tool
//! {"response": "The code word is PELICAN."}                 the answer
//! ```
//!
//! The schema is sent as llama.cpp's `json_schema` field to `llama-server` (which turns it into
//! a grammar, <https://github.com/ggml-org/llama.cpp/tree/master/tools/server#post-completion-given-a-prompt-it-returns-the-predicted-completion>),
//! and as OpenAI's structured-output `response_format: {"type": "json_schema", …}` to every
//! other server (Ollama, LM Studio, vLLM). The reply is then read by text recovery in the
//! `json` format: a call becomes a tool call like any other, `{"response": …}` the answer.
//!
//! Which requests are constrained is the provider's `constrained` setting
//! ([`ConstrainedSetting`]): `auto` (the default) constrains the replies the run asks for
//! after one that could not be used ([`steward_protocol::ChatRequest::constrain`]), on a server on
//! this machine that the context-window probe found to be llama.cpp, Ollama or vLLM
//! ([`ServerKind`]); `on` every reply (the `lmstudio` preset sets it: LM Studio takes a
//! `response_format` schema but its probe answers look like any server's); `off` none.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use steward_protocol::{ChatRequest, ToolChoice, ToolSpec};

/// The `constrained` setting of a provider.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ConstrainedSetting {
    /// The replies after one that could not be used, on a server on this machine that the
    /// probe found to be llama.cpp, Ollama or vLLM; none otherwise.
    #[default]
    Auto,
    /// Every reply to a request offering tools.
    On,
    /// Never.
    Off,
}

/// What kind of server answered the context-window probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// llama.cpp's `llama-server` (answered `GET /props`).
    LlamaCpp,
    /// Ollama (answered `POST /api/show`).
    Ollama,
    /// vLLM (its model list says `owned_by: "vllm"`).
    Vllm,
    /// Answered only the model list, or nothing.
    Other,
}

impl ServerKind {
    /// The server's name as shown to users.
    pub fn label(self) -> &'static str {
        match self {
            ServerKind::LlamaCpp => "llama.cpp",
            ServerKind::Ollama => "Ollama",
            ServerKind::Vllm => "vLLM",
            ServerKind::Other => "an OpenAI-compatible server",
        }
    }

    /// True for servers known to hold a reply to a JSON Schema.
    pub fn supports_schema(self) -> bool {
        !matches!(self, ServerKind::Other)
    }
}

/// Which replies of a provider are constrained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Constrained {
    /// Every reply to a request offering tools (`constrained = "on"`).
    Every,
    /// The replies the run asks to constrain ([`steward_protocol::ChatRequest::constrain`]:
    /// every round after an unusable reply), on a server that supports it (`auto`).
    Retries,
    /// None.
    Never,
}

/// Which replies of a provider are constrained, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint {
    /// Which replies.
    pub when: Constrained,
    /// The server kind the schema is sent for (decides the field it goes in).
    pub kind: ServerKind,
    /// Why, in words for `steward models`: `after an unusable reply (llama.cpp)`, `off
    /// (constrained = "off")`, ….
    pub why: String,
}

impl Constraint {
    /// No reply constrained, for `why`.
    pub fn off(why: impl Into<String>) -> Self {
        Constraint { when: Constrained::Never, kind: ServerKind::Other, why: format!("off ({})", why.into()) }
    }

    /// True when a request that does (`asked`) or does not ask for it is constrained.
    pub fn applies(&self, asked: bool) -> bool {
        match self.when {
            Constrained::Every => true,
            Constrained::Retries => asked,
            Constrained::Never => false,
        }
    }

    /// `every`, `retries` or `never`, for `--json` output.
    pub fn name(&self) -> &'static str {
        match self.when {
            Constrained::Every => "every",
            Constrained::Retries => "retries",
            Constrained::Never => "never",
        }
    }
}

/// Decides from the setting, whether the server is on this machine, and what the probe found
/// (`None`: not asked). `auto` constrains only the replies a run asks to: held to the schema on
/// every round, Qwen2.5-Coder-0.5B on llama.cpp completed 9 of 22 everyday tasks against 16
/// unconstrained (it called a tool where it could have answered from the passages it was
/// given, and wrote terse answers), while the unconstrained runs that failed did so on
/// unusable replies, which a constrained retry cannot repeat.
pub(crate) fn decide(setting: ConstrainedSetting, local: bool, kind: Option<ServerKind>) -> Constraint {
    let kind_or_other = kind.unwrap_or(ServerKind::Other);
    match setting {
        ConstrainedSetting::Off => Constraint::off("constrained = \"off\""),
        ConstrainedSetting::On => Constraint {
            when: Constrained::Every,
            kind: kind_or_other,
            why: "every reply (constrained = \"on\")".to_string(),
        },
        ConstrainedSetting::Auto if !local => Constraint::off("not a server on this machine"),
        ConstrainedSetting::Auto => match kind {
            Some(k) if k.supports_schema() => Constraint {
                when: Constrained::Retries,
                kind: k,
                why: format!("the replies after an unusable one ({})", k.label()),
            },
            Some(_) => Constraint::off("the server is not known to support a reply schema"),
            None => Constraint::off(
                "the server is not asked what it is: set probe_context_window = true or constrained = \"on\"",
            ),
        },
    }
}

/// The tools a constrained reply may call under `choice`, and whether it may answer instead.
/// `None` when nothing is to be constrained (no tools, or `tool_choice: none`).
fn alternatives<'a>(tools: &'a [ToolSpec], choice: &ToolChoice) -> Option<(Vec<&'a ToolSpec>, bool)> {
    if tools.is_empty() {
        return None;
    }
    match choice {
        ToolChoice::None => None,
        ToolChoice::Auto => Some((tools.iter().collect(), true)),
        ToolChoice::Required => Some((tools.iter().collect(), false)),
        ToolChoice::Named(name) => {
            let named: Vec<&ToolSpec> = tools.iter().filter(|t| &t.name == name).collect();
            (!named.is_empty()).then_some((named, false))
        }
    }
}

/// The JSON Schema a constrained reply is held to, as JSON text: `anyOf` one object per
/// callable tool (`{"name": {"const": NAME}, "arguments": SCHEMA}`, both required, nothing
/// else) and, when the model may answer, `{"response": string}`. Written by hand rather than
/// through `serde_json::Value`, whose maps sort their keys: grammar-based servers make the
/// model write properties in the schema's order, and `name` must come before `arguments`,
/// and a tool's required arguments in the order its schema lists them. `None` when the
/// request has nothing to constrain.
pub fn reply_schema_text(tools: &[ToolSpec], choice: &ToolChoice) -> Option<String> {
    let (callable, may_answer) = alternatives(tools, choice)?;
    let mut options: Vec<String> = callable
        .iter()
        .map(|tool| {
            let name = Value::String(tool.name.clone());
            format!(
                "{{\"type\":\"object\",\"properties\":{{\"name\":{{\"const\":{name}}},\"arguments\":{}}},\
                 \"required\":[\"name\",\"arguments\"],\"additionalProperties\":false}}",
                ordered_schema(&tool.input_schema)
            )
        })
        .collect();
    if may_answer {
        options.push(
            "{\"type\":\"object\",\"properties\":{\"response\":{\"type\":\"string\"}},\
             \"required\":[\"response\"],\"additionalProperties\":false}"
                .to_string(),
        );
    }
    Some(format!("{{\"anyOf\":[{}]}}", options.join(",")))
}

/// `schema` as JSON text with every object schema closed (`additionalProperties: false`
/// unless it says otherwise, `properties` present) and its properties written required ones
/// first, in the order of `required`, then the others in their own order.
fn ordered_schema(schema: &Value) -> String {
    let Some(object) = schema.as_object() else { return schema.to_string() };
    let is_object = object.get("type").and_then(Value::as_str) == Some("object") || object.contains_key("properties");
    let mut parts: Vec<String> = Vec::new();
    for (key, value) in object {
        let text = match key.as_str() {
            "properties" => ordered_properties(value, object.get("required")),
            "items" | "additionalProperties" if value.is_object() => ordered_schema(value),
            "anyOf" | "oneOf" | "allOf" => match value.as_array() {
                Some(list) => format!("[{}]", list.iter().map(ordered_schema).collect::<Vec<_>>().join(",")),
                None => value.to_string(),
            },
            _ => value.to_string(),
        };
        parts.push(format!("{}:{text}", Value::String(key.clone())));
    }
    if is_object {
        if !object.contains_key("properties") {
            parts.push("\"properties\":{}".to_string());
        }
        if !object.contains_key("additionalProperties") {
            parts.push("\"additionalProperties\":false".to_string());
        }
    }
    format!("{{{}}}", parts.join(","))
}

fn ordered_properties(properties: &Value, required: Option<&Value>) -> String {
    let Some(properties) = properties.as_object() else { return properties.to_string() };
    let required: Vec<&str> =
        required.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let mut names: Vec<&String> = Vec::with_capacity(properties.len());
    for name in required.iter().filter_map(|r| properties.keys().find(|k| k == r)) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names.extend(properties.keys().filter(|k| !required.contains(&k.as_str())));
    let parts: Vec<String> = names
        .iter()
        .map(|name| format!("{}:{}", Value::String((*name).clone()), ordered_schema(&properties[*name])))
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// The system-message text telling the model the tools and the reply's shape.
pub fn tool_listing(tools: &[ToolSpec], choice: &ToolChoice) -> String {
    let Some((callable, may_answer)) = alternatives(tools, choice) else { return String::new() };
    let mut text = String::from("Reply with exactly one JSON object and nothing else: ");
    text.push_str("{\"name\": \"TOOL\", \"arguments\": {…}} to call one of the tools below");
    if may_answer {
        text.push_str(", or {\"response\": \"…\"} with your answer to the user");
    }
    text.push_str(".\n\nTools:");
    for tool in callable {
        let description = tool.description.trim();
        text.push_str(&format!(
            "\n- {}: {}",
            tool.name,
            if description.is_empty() { "(no description)" } else { description }
        ));
        text.push_str(&format!(" Arguments: {}", ordered_schema(&tool.input_schema)));
    }
    text
}

/// The line added to the last tool result of a request whose reply may be the answer. Without
/// it a small model held to the schema tends to call the tool it just called again rather
/// than answer: Qwen2.5-Coder-0.5B on llama.cpp wrote `{"name": "read", …}` again after
/// reading the code word, and `{"response": "PELICAN"}` with this line (a shorter
/// "(Reply … if this answers the task.)" did not do it).
pub const ANSWER_REMINDER: &str = "If this result answers the task, reply {\"response\": \"…\"} with the answer.";

/// Rewrites an OpenAI-compatible request `body` for a constrained reply: `tools` and
/// `tool_choice` left out, the tools listed at the end of the system message (one is added
/// when the request has none), [`ANSWER_REMINDER`] after the last message when it is a tool
/// result and the reply may be the answer, and the reply schema added as `json_schema` for
/// llama.cpp or `response_format` for other servers. Returns the body as JSON text, or `None` (body
/// unchanged) when the request has nothing to constrain.
pub(crate) fn constrain(body: &mut Value, request: &ChatRequest, kind: ServerKind) -> Option<String> {
    let schema = reply_schema_text(&request.tools, &request.tool_choice)?;
    let listing = tool_listing(&request.tools, &request.tool_choice);
    let object = body.as_object_mut()?;
    object.remove("tools");
    object.remove("tool_choice");
    if let Some(Value::Array(messages)) = object.get_mut("messages") {
        match messages.first_mut().filter(|m| matches!(m["role"].as_str(), Some("system" | "developer"))) {
            Some(first) => {
                let content = first["content"].as_str().unwrap_or_default();
                first["content"] = Value::String(format!("{content}\n\n{listing}").trim_start().to_string());
            }
            None => messages.insert(0, serde_json::json!({"role": "system", "content": listing})),
        }
        let may_answer = alternatives(&request.tools, &request.tool_choice).is_some_and(|(_, answer)| answer);
        if let Some(last) = messages.last_mut().filter(|m| m["role"] == "tool" && may_answer) {
            let content = last["content"].as_str().unwrap_or_default();
            last["content"] = Value::String(format!("{content}\n\n{ANSWER_REMINDER}"));
        }
    }
    let text = serde_json::to_string(&object).ok()?;
    let field = match kind {
        ServerKind::LlamaCpp => format!("\"json_schema\":{schema}"),
        _ => format!(
            "\"response_format\":{{\"type\":\"json_schema\",\"json_schema\":{{\"name\":\"reply\",\"strict\":true,\"schema\":{schema}}}}}"
        ),
    };
    // `text` is a JSON object: its closing brace gets the schema field before it.
    let open = text.strip_suffix('}')?;
    let separator = if open.ends_with('{') { "" } else { "," };
    Some(format!("{open}{separator}{field}}}"))
}

/// The answer of a constrained reply cut off inside its `{"response": "…` string (by the
/// output limit, or where it began repeating itself): the string's text so far, escapes
/// decoded by `serde_json` once the object is closed (`"}` appended, after dropping what is
/// left of an escape cut short). `None` when `text` does not become such an object.
pub(crate) fn partial_response(text: &str) -> Option<String> {
    let text = text.trim_end();
    let mut end = text.len();
    // The longest escape cut short, `\uXXX`, is five characters.
    for _ in 0..=5 {
        if let Some(answer) = crate::recover::generic_response(&format!("{}\"}}", &text[..end])) {
            return Some(answer.trim().to_string());
        }
        end = text[..end].char_indices().next_back()?.0;
    }
    None
}

#[cfg(test)]
#[path = "constrained_tests.rs"]
mod tests;
