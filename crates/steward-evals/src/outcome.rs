//! What one run of a case left behind: the record the scorer checks. The runner fills it from
//! a real run; tests build it by hand.

use std::collections::BTreeMap;

use serde::Serialize;
use steward_protocol::Event;
use steward_store::RunStatus;

/// The run record's fields the scorer looks at.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// Final status.
    pub status: RunStatus,
    /// Stop reason wire name, once stopped.
    pub stop_reason: Option<String>,
    /// Final text (redacted by Steward).
    pub final_text: Option<String>,
    /// Error class wire name of a failed or cancelled run.
    pub error_class: Option<String>,
    /// Redacted error message.
    pub error: Option<String>,
    /// Planner calls.
    pub rounds: u32,
    /// Tool calls proposed.
    pub tool_calls: u32,
    /// Input tokens reported by the provider.
    pub input_tokens: u64,
    /// Output tokens reported by the provider.
    pub output_tokens: u64,
}

/// Everything one run produced.
#[derive(Debug, Clone, Default)]
pub struct RunOutcome {
    /// The run record's summary; `None` when the run could not start (see `harness_error`).
    pub summary: Option<RunSummary>,
    /// Why the harness could not run or inspect the case (workspace, configuration, storage).
    pub harness_error: Option<String>,
    /// The run's events in order, as published.
    pub events: Vec<Event>,
    /// Texts to scan for secrets, each with a label saying where it comes from: the run record
    /// (`run`), audit records (`audit[N]`), saved tool outputs (`output:FILE`), model requests
    /// (`model_request[N]`).
    pub artifacts: Vec<(String, serde_json::Value)>,
    /// Rollback tokens stored for the run.
    pub rollback_tokens: Vec<String>,
    /// Contents after the run of the workspace files the case names (`None`: missing or not text).
    pub files: BTreeMap<String, Option<String>>,
    /// Wall time of the run in ms.
    pub duration_ms: u64,
    /// The text of every message of each request the fake planner received, in order (empty
    /// with a real provider).
    pub model_inputs: Vec<String>,
    /// The owner's remembered facts after the run, in order.
    pub facts: Vec<String>,
}

impl RunOutcome {
    /// Names of the events that occurred, in order.
    pub fn event_names(&self) -> Vec<&'static str> {
        self.events.iter().map(|e| e.kind.name()).collect()
    }

    /// Tools that ran (a `tool_started` event), in order, with repeats.
    pub fn tools_started(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match &e.kind {
                steward_protocol::EventKind::ToolStarted { tool, .. } => Some(tool.clone()),
                _ => None,
            })
            .collect()
    }

    /// Input plus output tokens.
    pub fn tokens(&self) -> u64 {
        self.summary.as_ref().map_or(0, |s| s.input_tokens + s.output_tokens)
    }
}
