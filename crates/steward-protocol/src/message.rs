use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ToolCall, ToolSpec};

/// Who wrote a message in a model conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions from Steward.
    System,
    /// The user's task and context.
    User,
    /// The model's reply (text and tool calls).
    Assistant,
    /// The result of one tool call.
    Tool,
}

/// One message of a provider-neutral conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Author.
    pub role: Role,
    /// Text content (may be empty for an assistant message with only tool calls).
    pub content: String,
    /// Tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For `Role::Tool`: the call this result answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For `Role::Tool`: true when the result is an error or refusal.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl Message {
    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Self::plain(Role::System, text.into())
    }
    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::plain(Role::User, text.into())
    }
    /// An assistant message with text and tool calls.
    pub fn assistant(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message { role: Role::Assistant, content: text.into(), tool_calls, tool_call_id: None, is_error: false }
    }
    /// A tool result answering `call_id`. An empty `content` becomes `(no output)` so that no
    /// provider rejects it.
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        let mut content = content.into();
        if content.is_empty() {
            content = "(no output)".to_string();
        }
        Message { role: Role::Tool, content, tool_calls: Vec::new(), tool_call_id: Some(call_id.into()), is_error }
    }
    fn plain(role: Role, content: String) -> Self {
        Message { role, content, tool_calls: Vec::new(), tool_call_id: None, is_error: false }
    }
}

/// How the model may pick tools.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// Exactly this tool (OpenAI `{"type":"function","function":{"name":…}}`).
    Named(String),
}

impl ToolChoice {
    /// Parses `auto`, `none`, `required`, or any other string as a tool name.
    pub fn parse(text: &str) -> Self {
        match text {
            "auto" | "" => ToolChoice::Auto,
            "none" => ToolChoice::None,
            "required" | "any" => ToolChoice::Required,
            name => ToolChoice::Named(name.to_string()),
        }
    }
}

/// A request to a provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Model id as the provider knows it.
    pub model: String,
    /// The whole conversation, system message first.
    pub messages: Vec<Message>,
    /// Tools offered, rendered by the provider as function schemas.
    pub tools: Vec<ToolSpec>,
    /// Tool choice.
    pub tool_choice: ToolChoice,
    /// Output token limit, when set.
    pub max_tokens: Option<u32>,
    /// Sampling temperature, when set.
    pub temperature: Option<f32>,
    /// Hold the reply to "one call of an offered tool, or an answer" where the provider's
    /// `constrained` setting leaves it to the request (`auto`): asked for every round after an
    /// unusable reply.
    #[serde(default)]
    pub constrain: bool,
}

/// Token usage of one provider call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Input plus output.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
    /// Adds another usage to this one.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// Natural end of the answer.
    Stop,
    /// The model asked for tool calls.
    ToolCalls,
    /// The output token limit cut the reply.
    Length,
    /// A content filter stopped the reply.
    ContentFilter,
    /// No finish reason was received (the stream ended early) or an unknown one.
    Other(String),
}

impl FinishReason {
    /// The wire word: `stop`, `tool_calls`, `length`, `content_filter`, or the provider's own.
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::Length => "length",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(word) => word,
        }
    }
}

/// A tool call that could not be used: truncated or unparsable arguments, or a text-recovered
/// call naming an undeclared tool. It is never executed; the model is told why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvalidToolCall {
    /// Call id (provider's or generated).
    pub id: String,
    /// Tool name, possibly empty.
    pub name: String,
    /// The raw argument text received (may be cut).
    pub raw_arguments: String,
    /// Why it cannot be used, e.g. `tool call truncated: finish_reason=length, 41 bytes of arguments received`.
    pub error: String,
}

/// A repair made to a tool call recovered from text before anyone judged it: every
/// recovered call has one, naming the format it was read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRepair {
    /// The repaired call's id.
    pub call_id: String,
    /// The text format the call was read from, e.g. `hermes`, `qwen3_coder`, `kimi_k2`
    /// (empty in records written before formats were named).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub format: String,
    /// Values coerced to the schema's types, e.g. `` `line`: "1" → 1 (integer) ``; empty
    /// when none was.
    pub detail: String,
}

/// A complete reply from a provider.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatResponse {
    /// Assistant text, with recovered tool-call text and `<think>` blocks removed.
    pub text: String,
    /// Reasoning text from `<think>` blocks or reasoning fields, if any.
    pub reasoning: String,
    /// Complete, parsed tool calls in order.
    pub tool_calls: Vec<ToolCall>,
    /// Tool calls that must not run, with the reason.
    pub invalid_tool_calls: Vec<InvalidToolCall>,
    /// One entry per call recovered from the text (the format it was read from, and string
    /// values coerced to the type their schema declares); empty for native calls, which are
    /// never repaired.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<ToolCallRepair>,
    /// Token usage, zero when the provider sent none.
    pub usage: Usage,
    /// Why the model stopped.
    pub finish_reason: Option<FinishReason>,
    /// The model that answered, as the provider reported it.
    pub model: String,
    /// True when the server held the reply to "one call of an offered tool, or an answer" (a
    /// JSON Schema sent with the request).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub constrained: bool,
}

/// An incremental piece of a streamed reply, for showing progress as it happens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamDelta {
    /// Assistant text.
    Text {
        /// The new text.
        text: String,
    },
    /// Reasoning text.
    Reasoning {
        /// The new text.
        text: String,
    },
    /// A tool call began (arguments follow in later chunks).
    ToolCallStarted {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// Raw provider metadata worth keeping for replay (e.g. a retry notice).
    Notice {
        /// Message.
        message: String,
        /// Extra data.
        #[serde(default)]
        data: Value,
    },
}
