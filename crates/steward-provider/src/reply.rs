//! Streaming text of one reply: forwards text deltas, holding them back while the text could
//! still be a tool call written as text, sends reasoning written into the text (`<think>`,
//! `[THINK]`, harmony `analysis`, …) as reasoning deltas even when its tags are split across
//! chunks (SPEC P8), and produces the final text, reasoning and recovered calls.

use steward_protocol::{
    ChatRequest, ChatResponse, ErrorClass, FinishReason, StreamDelta, ToolCall, ToolCallRepair, ToolSpec, Usage,
};

use crate::assemble::{Ending, ToolCallAssembler};
use crate::formats::{ToolCallFormat, could_start};
use crate::reasoning::{Accumulated, Piece, Splitter};
use crate::recover::{generic_response, parse_calls};
use crate::{DeltaSink, ProviderError};

/// Accumulates text and reasoning deltas of one reply.
pub(crate) struct TextAccumulator {
    recover: bool,
    format: Option<ToolCallFormat>,
    declared: Vec<ToolSpec>,
    splitter: Splitter,
    /// Text and reasoning read so far.
    acc: Accumulated,
    /// Bytes of `acc.text` already sent as text deltas.
    sent: usize,
    /// Reasoning from dedicated fields (`reasoning_content`, thinking blocks).
    field_reasoning: String,
    /// True once the text is known not to be a text tool call: text passes straight through.
    passing: bool,
    /// Where the text is cut once it was found repeating itself ([`crate::repetition`]).
    repeated: Option<usize>,
    /// The reply was held to the reply schema ([`crate::constrained`]): an answer cut off
    /// inside its `{"response": "…` string is the text so far.
    constrained: bool,
}

/// Final text, reasoning and recovered calls of a reply.
pub(crate) struct FinishedText {
    pub text: String,
    pub reasoning: String,
    pub recovered: Vec<ToolCall>,
    pub repairs: Vec<ToolCallRepair>,
    /// The text repeated itself and was cut after its first copy.
    pub repeated: bool,
}

impl TextAccumulator {
    /// `recover`: whether text tool calls may be recovered; `declared`: the tools offered.
    pub fn new(recover: bool, declared: Vec<ToolSpec>) -> Self {
        TextAccumulator {
            recover,
            format: None,
            declared,
            splitter: Splitter::default(),
            acc: Accumulated::default(),
            sent: 0,
            field_reasoning: String::new(),
            passing: false,
            repeated: None,
            constrained: false,
        }
    }

    /// A piece of reasoning from a dedicated field: always reasoning, never text nor a call.
    pub fn push_reasoning(&mut self, piece: &str, sink: DeltaSink<'_>) {
        if piece.is_empty() {
            return;
        }
        self.field_reasoning.push_str(piece);
        sink(StreamDelta::Reasoning { text: piece.to_string() });
    }

    /// A piece of assistant text.
    pub fn push_text(&mut self, piece: &str, sink: DeltaSink<'_>) {
        if piece.is_empty() {
            return;
        }
        let pieces = self.splitter.push(piece);
        self.apply(&pieces, sink);
        if self.repeated.is_none() {
            self.repeated = crate::repetition::repeated_tail(&self.acc.text);
        }
    }

    /// True once the text was found repeating itself: the rest of the reply need not be read.
    pub fn is_repeating(&self) -> bool {
        self.repeated.is_some()
    }

    fn apply(&mut self, pieces: &[Piece], sink: DeltaSink<'_>) {
        for piece in pieces {
            match piece {
                Piece::Reasoning(text) => sink(StreamDelta::Reasoning { text: text.clone() }),
                Piece::TextWasReasoning if !self.acc.text.trim().is_empty() => {
                    sink(StreamDelta::Reasoning { text: self.acc.text.clone() });
                }
                _ => {}
            }
            self.acc.apply(piece);
            if matches!(piece, Piece::TextWasReasoning) {
                // The text so far was reasoning: what follows is judged afresh.
                self.sent = 0;
                self.passing = false;
            }
            self.flush_text(sink);
        }
    }

    /// Sends the text that can no longer become a tool call.
    fn flush_text(&mut self, sink: DeltaSink<'_>) {
        let text = &self.acc.text;
        if !self.passing {
            let rest = text.trim_start();
            if rest.is_empty() || (self.recover && could_start(rest, self.format, &self.declared)) {
                return;
            }
            self.passing = true;
            self.sent = text.len() - rest.len();
        }
        if self.sent < text.len() {
            sink(StreamDelta::Text { text: text[self.sent..].to_string() });
            self.sent = text.len();
        }
    }

    /// Ends the reply: flushes held-back text unless it became tool calls. `allow_recovery`
    /// is false when the reply already has native tool calls.
    pub fn finish(mut self, allow_recovery: bool, sink: DeltaSink<'_>) -> FinishedText {
        let pieces = self.splitter.finish();
        for piece in &pieces {
            if let Piece::Reasoning(text) = piece {
                sink(StreamDelta::Reasoning { text: text.clone() });
            }
            self.acc.apply(piece);
        }
        let repeated = self.repeated.or_else(|| crate::repetition::repeated_tail(&self.acc.text));
        if let Some(cut) = repeated.filter(|cut| *cut <= self.acc.text.len()) {
            self.acc.text.truncate(cut);
            self.sent = self.sent.min(cut);
        }
        let shown = self.acc.text.trim().to_string();
        let parsed =
            if self.recover && allow_recovery { parse_calls(&shown, &self.declared, self.format).ok() } else { None };
        let (text, recovered, repairs) = match parsed {
            Some((_, calls, repairs)) => (String::new(), calls, repairs),
            None => {
                if !self.passing {
                    let held = self.acc.text.trim();
                    let answer = generic_response(held)
                        .filter(|_| self.recover)
                        .or_else(|| if self.constrained { crate::constrained::partial_response(held) } else { None });
                    if let Some(answer) = answer {
                        sink(StreamDelta::Text { text: answer.clone() });
                        (answer, Vec::new(), Vec::new())
                    } else {
                        if !held.is_empty() {
                            sink(StreamDelta::Text { text: held.to_string() });
                        }
                        (shown, Vec::new(), Vec::new())
                    }
                } else {
                    if self.sent < self.acc.text.len() {
                        sink(StreamDelta::Text { text: self.acc.text[self.sent..].to_string() });
                    }
                    (shown, Vec::new(), Vec::new())
                }
            }
        };
        let think = self.acc.reasoning();
        let reasoning = match (self.field_reasoning.is_empty(), think.is_empty()) {
            (true, _) => think,
            (false, true) => self.field_reasoning,
            (false, false) => format!("{}\n{}", self.field_reasoning, think),
        };
        FinishedText { text, reasoning, recovered, repairs, repeated: repeated.is_some() }
    }
}

/// Maps a wire finish reason (OpenAI `finish_reason`, Anthropic `stop_reason`).
pub(crate) fn finish_reason(wire: &str) -> FinishReason {
    match wire {
        "stop" | "end_turn" | "stop_sequence" | "eos" => FinishReason::Stop,
        "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
        "length" | "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "content_filter" | "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_string()),
    }
}

/// Everything received for one reply so far.
pub(crate) struct ReplyBuilder {
    pub text: TextAccumulator,
    pub calls: ToolCallAssembler,
    pub usage: Usage,
    pub model: String,
    /// The wire finish reason, once received.
    pub finish: Option<String>,
}

impl ReplyBuilder {
    /// A builder for a reply to `request`; `recover`: text tool-call recovery on (detecting
    /// the format; see [`ReplyBuilder::with_format`]).
    pub fn new(recover: bool, request: &ChatRequest, calls: ToolCallAssembler) -> Self {
        let declared = request.tools.clone();
        ReplyBuilder {
            text: TextAccumulator::new(recover, declared),
            calls,
            usage: Usage::default(),
            model: request.model.clone(),
            finish: None,
        }
    }

    /// The same builder reading text tool calls in `format` only (`None`: detect).
    pub fn with_format(mut self, format: Option<ToolCallFormat>) -> Self {
        self.text.format = format;
        self
    }

    /// The same builder for a reply held to the reply schema ([`crate::constrained`]): calls
    /// are read from its text in the `json` format whatever the provider's settings, and an
    /// answer cut off inside its string is kept.
    pub fn constrained(mut self) -> Self {
        self.text.recover = true;
        self.text.format = Some(ToolCallFormat::Json);
        self.text.constrained = true;
        self
    }

    /// Records a finish reason; empty strings (sent by some servers on every chunk) are ignored.
    pub fn set_finish(&mut self, reason: Option<&str>) {
        if let Some(r) = reason.filter(|r| !r.is_empty()) {
            self.finish = Some(r.to_string());
        }
    }

    /// The error for a stream that ended before the reply was complete. Names every tool call
    /// that was being received; none of them is returned.
    pub fn interrupted(&self, provider: &str, cause: &str) -> ProviderError {
        let mut msg = format!("the stream from provider '{provider}' ended before the reply was complete ({cause})");
        for call in self.calls.interrupted() {
            msg.push_str("; ");
            msg.push_str(&call);
        }
        ProviderError::new(ErrorClass::StreamInterrupted, msg)
    }

    /// Ends the reply normally: judges tool calls, recovers text tool calls, flushes text.
    pub fn finish(self, sink: DeltaSink<'_>) -> ChatResponse {
        let ending = match self.finish.as_deref() {
            Some(r @ ("length" | "max_tokens")) => Ending::Length(r),
            Some(r) => Ending::Finished(r),
            None => Ending::Finished("none"),
        };
        let native = !self.calls.is_empty();
        let (mut tool_calls, invalid_tool_calls) = self.calls.finish(ending);
        let constrained = self.text.constrained;
        let text = self.text.finish(!native, sink);
        let mut finish_reason = self.finish.as_deref().map(finish_reason);
        if !text.recovered.is_empty() {
            for call in &text.recovered {
                sink(StreamDelta::ToolCallStarted { id: call.id.clone(), name: call.name.clone() });
            }
            tool_calls = text.recovered;
            finish_reason = Some(FinishReason::ToolCalls);
        }
        if text.repeated {
            finish_reason = Some(FinishReason::Other(crate::repetition::REPETITION.to_string()));
        }
        ChatResponse {
            text: text.text,
            reasoning: text.reasoning,
            tool_calls,
            invalid_tool_calls,
            repairs: text.repairs,
            usage: self.usage,
            finish_reason,
            model: self.model,
            constrained,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(recover: bool, pieces: &[&str]) -> (Vec<StreamDelta>, FinishedText, Vec<usize>) {
        let spec = ToolSpec {
            name: "get_current_location".into(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            risk: steward_protocol::RiskLevel::Safe,
            writes: false,
            path_inputs: Vec::new(),
            untrusted_output: false,
        };
        let mut acc = TextAccumulator::new(recover, vec![spec]);
        let mut deltas = Vec::new();
        let mut after_each = Vec::new();
        for p in pieces {
            acc.push_text(p, &mut |d| deltas.push(d));
            after_each.push(deltas.len());
        }
        let done = acc.finish(true, &mut |d| deltas.push(d));
        (deltas, done, after_each)
    }

    fn text(s: &str) -> StreamDelta {
        StreamDelta::Text { text: s.to_string() }
    }

    #[test]
    fn plain_text_flows_immediately() {
        let (deltas, done, after) = run(true, &["Hello", " world"]);
        assert_eq!(deltas, vec![text("Hello"), text(" world")]);
        assert_eq!(after, vec![1, 2]);
        assert_eq!(done.text, "Hello world");
    }

    #[test]
    fn json_prefix_is_held_then_becomes_a_call() {
        let (deltas, done, after) = run(true, &["{\"name\": \"get_current_", "location\", \"parameters\": {}}"]);
        assert_eq!(after, vec![0, 0]);
        assert!(deltas.is_empty());
        assert_eq!(done.recovered.len(), 1);
        assert_eq!(done.text, "");
    }

    #[test]
    fn held_json_that_is_not_a_call_is_flushed_at_the_end() {
        let (deltas, done, _) = run(true, &["{\"a\":", " 1}"]);
        assert_eq!(deltas, vec![text("{\"a\": 1}")]);
        assert!(done.recovered.is_empty());
    }

    #[test]
    fn think_is_reasoning_and_then_text_flows() {
        let (deltas, done, after) = run(true, &["<thi", "nk>ponder</think>", "\nAnswer", " more"]);
        assert_eq!(after, vec![0, 1, 2, 3]);
        assert_eq!(deltas, vec![StreamDelta::Reasoning { text: "ponder".into() }, text("Answer"), text(" more")]);
        assert_eq!(done.text, "Answer more");
        assert_eq!(done.reasoning, "ponder");
    }

    #[test]
    fn without_recovery_json_flows_as_text() {
        let (deltas, done, after) = run(false, &["{\"name\": \"get_current_location\", \"parameters\": {}}"]);
        assert_eq!(after, vec![1]);
        assert_eq!(deltas.len(), 1);
        assert!(done.recovered.is_empty());
    }

    #[test]
    fn prose_repeating_itself_is_cut_after_its_first_copy() {
        let line = "The file holds the code word BLUEBIRD, as read.\n";
        let pieces: Vec<String> = std::iter::repeat_n(line.to_string(), 8).collect();
        let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
        let (_, done, _) = run(true, &pieces);
        assert!(done.repeated);
        assert_eq!(done.text, line.trim());
        let (_, done, _) = run(true, &[line, line]);
        assert!(!done.repeated, "two copies are not a runaway");
    }

    #[test]
    fn unclosed_think_at_end_is_reasoning() {
        let (deltas, done, _) = run(true, &["<think>out of tokens"]);
        assert_eq!(deltas, vec![StreamDelta::Reasoning { text: "out of tokens".into() }]);
        assert_eq!(done.text, "");
        assert_eq!(done.reasoning, "out of tokens");
    }
}
