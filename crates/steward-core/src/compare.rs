//! Two runs of one task side by side (SPEC A4): the classic planner's and the model planner's,
//! with what each cost. `steward compare` and the web UI's Compare page both use these counts.

use serde::Serialize;
use steward_protocol::{Event, EventKind};
use steward_store::{RunRecord, RunStatus};

/// How a run is named in a comparison: `Classic planner`, or `Model planner (PROVIDER/MODEL)`.
pub fn label(run: &RunRecord) -> String {
    if run.planner == "classic" {
        "Classic planner".to_string()
    } else {
        format!("Model planner ({}/{})", run.provider, run.model)
    }
}

/// Tool calls of a run that were refused: denied by the gate, rejected or left to expire by the
/// owner, or repeats that were not run and not answered from the record.
pub fn refused(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::ToolDenied { .. }
                    | EventKind::ToolRejected { .. }
                    | EventKind::ToolApprovalExpired { .. }
                    | EventKind::ToolCallRepeated { answered_from_record: false, .. }
            )
        })
        .count()
}

/// Tokens (input plus output) of every completed stage of a run, from its events.
pub fn tokens(events: &[Event]) -> u64 {
    events
        .iter()
        .map(|e| match &e.kind {
            EventKind::StageCompleted { usage, .. } => usage.input_tokens + usage.output_tokens,
            _ => 0,
        })
        .sum()
}

/// One finished run of a comparison, with its costs.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The run's id.
    pub id: String,
    /// See [`label`].
    pub label: String,
    /// `classic` or `model`.
    pub planner: String,
    /// Provider name, empty for the classic planner.
    pub provider: String,
    /// Model id, empty for the classic planner.
    pub model: String,
    /// Final status (`completed`, `failed`, `cancelled`, …).
    pub status: String,
    /// Why it stopped (a stop reason or an error class), if it did.
    pub stop: Option<String>,
    /// Planner rounds.
    pub rounds: u32,
    /// Tool calls proposed.
    pub tool_calls: u32,
    /// Tool calls refused (see [`refused`]).
    pub refused: usize,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Wall time from start to end, in milliseconds (0 while it has not ended).
    pub wall_ms: u64,
    /// The final answer, or why there is none.
    #[serde(rename = "final")]
    pub final_text: String,
}

impl Summary {
    /// The summary of `run` from its record and its events.
    pub fn of(run: &RunRecord, events: &[Event]) -> Summary {
        let stop = match run.status {
            RunStatus::Failed => run.error_class.map(|c| c.as_str().to_string()),
            _ => run.stop_reason.map(|s| s.as_str().to_string()),
        };
        let final_text = match (&run.final_text, &run.error) {
            (Some(text), _) => text.clone(),
            (None, Some(error)) => error.clone(),
            (None, None) => String::new(),
        };
        Summary {
            id: run.id.clone(),
            label: label(run),
            planner: run.planner.clone(),
            provider: if run.planner == "classic" { String::new() } else { run.provider.clone() },
            model: if run.planner == "classic" { String::new() } else { run.model.clone() },
            status: run.status.as_str().to_string(),
            stop,
            rounds: run.rounds,
            tool_calls: run.tool_calls,
            refused: refused(events),
            input_tokens: run.input_tokens,
            output_tokens: run.output_tokens,
            wall_ms: run.finished_at.map(|f| (f - run.created_at).num_milliseconds().max(0) as u64).unwrap_or(0),
            final_text,
        }
    }
}
