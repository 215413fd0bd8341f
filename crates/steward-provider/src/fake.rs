//! The scripted `fake` provider (SPEC P4): deterministic replies from a scenario, no network,
//! no key. It is an ordinary [`Provider`], so everything above it runs unchanged.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;
use steward_protocol::{ChatRequest, ChatResponse, ErrorClass, Role, Usage};

use crate::assemble::ToolCallAssembler;
use crate::formats::ToolCallFormatSetting;
use crate::reply::ReplyBuilder;
use crate::{DeltaSink, Provider, ProviderError};

/// Text of the reply after the last scripted round.
pub const SCENARIO_FINISHED: &str = "(scenario finished)";

/// A fake provider script.
///
/// A scenario file is TOML (`.toml`) or JSON (`.json`, same keys: `{"round": [{…}]}`). One
/// `[[round]]` per model call; round N answers the request that contains N-1 assistant
/// messages, so replies are chosen statelessly and deterministically. After the last round the
/// reply is the text `(scenario finished)`.
///
/// ```toml
/// [[round]]
/// text = "I'll read the file."      # optional; the reply text
/// chunks = ["I'll ", "read"]         # optional; streamed pieces (their concatenation is the text)
/// delay_ms = 0                       # optional; wait before answering (cancellation interrupts it)
/// usage = { input_tokens = 10, output_tokens = 5 }   # optional
/// finish_reason = "length"           # optional; default "tool_calls" with calls, else "stop"
/// [[round.tool_call]]
/// name = "read"
/// arguments = { path = "README.md" } # or arguments_raw = "{\"path\":" for a truncated call
/// id = "call_1"                      # optional; default call_<round>_<n>
/// expect = ["Task: list the files"]  # optional: text the request must contain, else 400
/// [round.error]                      # optional: the call fails
/// class = "missing_api_key"          # any error class wire name
/// message = "OPENAI_API_KEY is not set"
/// status = 401                       # optional HTTP status
/// ```
///
/// The text goes through the same text tool-call recovery as real providers, so local-model
/// behaviour (a tool call written as JSON text, `<think>` blocks) can be scripted. Like a
/// strict real API, the fake rejects a conversation in which an assistant message's tool calls
/// are not followed, immediately and in order, by exactly one tool result per call id (class
/// `provider_error`, status 400).
#[derive(Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The rounds in order.
    #[serde(default, rename = "round", alias = "rounds")]
    pub rounds: Vec<Round>,
}

/// One scripted model reply.
#[derive(Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Round {
    /// Reply text.
    #[serde(default)]
    pub text: Option<String>,
    /// The text in streamed pieces.
    #[serde(default)]
    pub chunks: Option<Vec<String>>,
    /// Wait before answering, in ms.
    #[serde(default)]
    pub delay_ms: Option<u64>,
    /// Reported token usage.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Wire finish reason (`stop`, `tool_calls`, `length`, …).
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Tool calls.
    #[serde(default, rename = "tool_call", alias = "tool_calls")]
    pub tool_calls: Vec<FakeToolCall>,
    /// Makes the call fail.
    #[serde(default)]
    pub error: Option<FakeError>,
    /// Text the request must contain (each, in some message): otherwise the call fails with
    /// `provider_error` (status 400) naming what is missing. Lets a test check, through the
    /// binary, what reached the model.
    #[serde(default)]
    pub expect: Vec<String>,
}

/// A scripted tool call.
#[derive(Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FakeToolCall {
    /// Tool name.
    pub name: String,
    /// Arguments as a JSON value.
    #[serde(default)]
    pub arguments: Option<Value>,
    /// Arguments as raw text (may be cut, to script a truncated call); wins over `arguments`.
    #[serde(default)]
    pub arguments_raw: Option<String>,
    /// Call id.
    #[serde(default)]
    pub id: Option<String>,
}

/// A scripted failure.
#[derive(Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FakeError {
    /// Error class (wire name).
    pub class: ErrorClass,
    /// Message.
    pub message: String,
    /// HTTP status.
    #[serde(default)]
    pub status: Option<u16>,
}

impl Scenario {
    /// Parses a TOML scenario. Errors ([`ErrorClass::Config`]): a TOML or shape error, or a
    /// round whose `chunks` do not join to its `text`.
    pub fn from_toml(text: &str) -> Result<Self, ProviderError> {
        toml::from_str::<Self>(text)
            .map_err(|e| ProviderError::new(ErrorClass::Config, format!("invalid fake scenario: {e}")))?
            .checked()
    }

    /// Parses a JSON scenario. Errors as [`Scenario::from_toml`].
    pub fn from_json(text: &str) -> Result<Self, ProviderError> {
        serde_json::from_str::<Self>(text)
            .map_err(|e| ProviderError::new(ErrorClass::Config, format!("invalid fake scenario: {e}")))?
            .checked()
    }

    /// Refuses a round that gives both `text` and `chunks` when they disagree: only the chunks
    /// would be played, and the rest of the text would be lost without a word.
    fn checked(self) -> Result<Self, ProviderError> {
        for (i, round) in self.rounds.iter().enumerate() {
            if let (Some(text), Some(chunks)) = (&round.text, &round.chunks)
                && chunks.concat() != *text
            {
                return Err(ProviderError::new(
                    ErrorClass::Config,
                    format!(
                        "invalid fake scenario: round {}: `chunks` join to {:?}, not to `text` {:?} (give one, or make them agree)",
                        i + 1,
                        chunks.concat(),
                        text
                    ),
                ));
            }
        }
        Ok(self)
    }

    /// Reads a scenario file: JSON when the extension is `.json`, TOML otherwise.
    pub fn from_file(path: &Path) -> Result<Self, ProviderError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ProviderError::new(ErrorClass::Config, format!("cannot read fake scenario {}: {e}", path.display()))
        })?;
        let parsed = if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
            Self::from_json(&text)
        } else {
            Self::from_toml(&text)
        };
        parsed.map_err(|e| ProviderError::new(ErrorClass::Config, format!("{}: {}", path.display(), e.message)))
    }
}

/// The fake provider. Records every request it receives.
#[derive(Debug)]
pub struct FakeProvider {
    name: String,
    scenario: Scenario,
    text_tool_calls: bool,
    tool_call_format: Option<ToolCallFormatSetting>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl FakeProvider {
    /// A fake named `fake` playing `scenario`, with text tool-call recovery on.
    pub fn new(scenario: Scenario) -> Self {
        FakeProvider {
            name: "fake".to_string(),
            scenario,
            text_tool_calls: true,
            tool_call_format: None,
            requests: Mutex::new(Vec::new()),
        }
    }

    /// A fake playing the scenario file at `path` (see [`Scenario`]). Errors: `config`.
    pub fn from_file(path: &Path) -> Result<Self, ProviderError> {
        Ok(Self::new(Scenario::from_file(path)?))
    }

    /// The same fake under another name.
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    /// Turns text tool-call recovery on or off.
    pub fn with_text_tool_calls(mut self, on: bool) -> Self {
        self.text_tool_calls = on;
        self
    }

    /// Reads text tool calls in the format `setting` names for the model (`None`: detect).
    pub fn with_tool_call_format(mut self, setting: Option<ToolCallFormatSetting>) -> Self {
        self.tool_call_format = setting;
        self
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_else(|p| p.into_inner().clone())
    }

    fn record(&self, request: &ChatRequest) {
        match self.requests.lock() {
            Ok(mut r) => r.push(request.clone()),
            Err(p) => p.into_inner().push(request.clone()),
        }
    }
}

/// Checks that each assistant message's tool calls are answered, immediately and in order,
/// by exactly one tool result each, and that no tool result answers an unknown call.
pub fn check_tool_results(request: &ChatRequest) -> Result<(), ProviderError> {
    let bad = |msg: String| Err(ProviderError::new(ErrorClass::ProviderError, msg).with_status(400));
    let msgs = &request.messages;
    let mut i = 0;
    while i < msgs.len() {
        let m = &msgs[i];
        if m.role == Role::Tool {
            let id = m.tool_call_id.as_deref().unwrap_or("");
            return bad(format!(
                "messages[{i}]: tool result for call id '{id}' does not follow an assistant message with that tool call"
            ));
        }
        i += 1;
        if m.role != Role::Assistant {
            continue;
        }
        for call in &m.tool_calls {
            match msgs.get(i) {
                Some(r) if r.role == Role::Tool && r.tool_call_id.as_deref() == Some(call.id.as_str()) => i += 1,
                _ => {
                    return bad(format!(
                        "tool call '{}' ({}) has no tool result: each tool call must be followed by a tool message with tool_call_id '{}'",
                        call.id, call.name, call.id
                    ));
                }
            }
        }
    }
    Ok(())
}

#[async_trait]
impl Provider for FakeProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn default_model(&self) -> &str {
        "fake"
    }

    async fn stream(&self, request: &ChatRequest, on_delta: DeltaSink<'_>) -> Result<ChatResponse, ProviderError> {
        self.record(request);
        check_tool_results(request)?;
        let round_no = request.messages.iter().filter(|m| m.role == Role::Assistant).count();
        let finished = Round { text: Some(SCENARIO_FINISHED.to_string()), ..Round::default() };
        let round = self.scenario.rounds.get(round_no).unwrap_or(&finished);
        if let Some(ms) = round.delay_ms.filter(|ms| *ms > 0) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        if let Some(e) = &round.error {
            return Err(ProviderError { class: e.class, message: e.message.clone(), status: e.status });
        }
        if let Some(missing) =
            round.expect.iter().find(|t| !request.messages.iter().any(|m| m.content.contains(t.as_str())))
        {
            return Err(ProviderError::new(
                ErrorClass::ProviderError,
                format!("round {}: the request does not contain the expected text {missing:?}", round_no + 1),
            )
            .with_status(400));
        }
        let mut req = request.clone();
        if req.model.is_empty() {
            req.model = "fake".to_string();
        }
        let format = self.tool_call_format.as_ref().and_then(|s| s.for_model(&req.model));
        let mut reply = ReplyBuilder::new(self.text_tool_calls, &req, ToolCallAssembler::default()).with_format(format);
        match (&round.chunks, &round.text) {
            (Some(chunks), _) => chunks.iter().for_each(|c| reply.text.push_text(c, on_delta)),
            (None, Some(text)) => reply.text.push_text(text, on_delta),
            (None, None) => {}
        }
        for (n, call) in round.tool_calls.iter().enumerate() {
            let id = call.id.clone().unwrap_or_else(|| format!("call_{}_{}", round_no + 1, n + 1));
            let args = match (&call.arguments_raw, &call.arguments) {
                (Some(raw), _) => raw.clone(),
                (None, Some(v)) => v.to_string(),
                (None, None) => String::new(),
            };
            reply.calls.push(Some(n as u64), Some(&id), Some(&call.name), Some(&args), on_delta);
        }
        let default_finish = if round.tool_calls.is_empty() { "stop" } else { "tool_calls" };
        reply.set_finish(Some(round.finish_reason.as_deref().unwrap_or(default_finish)));
        reply.usage = round.usage.unwrap_or_default();
        Ok(reply.finish(on_delta))
    }

    async fn list_models(&self) -> Result<Vec<String>, ProviderError> {
        Ok(vec!["fake".to_string()])
    }
}

#[cfg(test)]
#[path = "fake_tests.rs"]
mod tests;
