//! A run's trace (SPEC R3): its stored events folded into steps — planner calls, refusals,
//! approval and input waits, tool steps, repeats and the ending — each with its duration and
//! tokens. `steward show` prints the steps; the web UI's trace page shows them as a table.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use steward_protocol::{ErrorClass, Event, EventKind, RoleModel, Usage};

/// One step of a run's trace, in event order.
#[derive(Debug, Clone, PartialEq)]
pub enum TraceStep {
    /// A model call of a stage (`planner`, a role) that completed.
    StageCompleted {
        /// The stage.
        stage: String,
        /// Its round (1-based).
        round: u32,
        /// How long the call took, in milliseconds.
        duration_ms: u64,
        /// Tokens it used.
        usage: Usage,
        /// Tool calls it proposed.
        tool_calls: u32,
        /// The reply was held to "one call of an offered tool, or an answer".
        constrained: bool,
    },
    /// A model call of a stage that failed.
    StageFailed {
        /// The stage.
        stage: String,
        /// Its round (1-based).
        round: u32,
        /// How long the call took, in milliseconds.
        duration_ms: u64,
        /// Why, as an error class.
        class: ErrorClass,
        /// Why, in words (redacted when recorded).
        error: String,
    },
    /// A proposed call the gate refused.
    Denied {
        /// The tool.
        tool: String,
        /// The deciding rule.
        rule: String,
        /// Why.
        reason: String,
    },
    /// A call that asked its owner for approval.
    ApprovalAsked {
        /// The tool.
        tool: String,
        /// The rule that asked.
        rule: String,
    },
    /// The owner's answer to an approval request (or its expiry).
    ApprovalAnswered {
        /// The tool (empty when the request was not seen).
        tool: String,
        /// `approved`, `rejected` or `expired`.
        outcome: &'static str,
        /// The event's name (`tool_approved`, `tool_rejected`, `tool_approval_expired`).
        event: &'static str,
        /// Milliseconds from the request to the answer; `None` when the request was not seen.
        waited_ms: Option<u64>,
    },
    /// An MCP server asked the owner for input during a call.
    InputAsked {
        /// The tool being called.
        tool: String,
        /// The MCP server.
        server: String,
    },
    /// The owner's answer to an MCP server's request for input.
    InputAnswered {
        /// The tool (empty when the request was not seen).
        tool: String,
        /// `accept`, `decline` or `cancel`.
        action: String,
        /// Who answered.
        decided_by: String,
        /// Why, when given.
        reason: String,
        /// Milliseconds from the request to the answer; `None` when the request was not seen.
        waited_ms: Option<u64>,
    },
    /// A tool call that ran.
    Tool {
        /// The tool.
        tool: String,
        /// How long it ran, in milliseconds.
        duration_ms: u64,
        /// Characters of output when it completed.
        output_chars: Option<u64>,
        /// Why it failed; `None` when it completed.
        error: Option<String>,
    },
    /// A repeated call that was not run again.
    Repeated {
        /// The tool.
        tool: String,
        /// The earlier call it repeats.
        earlier_call_id: String,
        /// What the earlier call's outcome was.
        earlier_outcome: String,
        /// The rule that stopped it, if any.
        rule: String,
        /// How many repeats so far.
        repeats: u32,
        /// True when it was answered from the run's record.
        answered_from_record: bool,
    },
    /// Workspace context looked up for the planner (SPEC K): the passages given, or why the
    /// index could not be used.
    Context {
        /// The passages given, as `path:start-end`, best first.
        passages: Vec<String>,
        /// How long the lookup took, in milliseconds (0 when it failed).
        duration_ms: u64,
        /// Why the index could not be used; `None` when it was.
        error: Option<String>,
        /// How the passages were ranked: `bm25` or `hybrid` (empty when the index could not
        /// be used).
        ranking: String,
        /// Why embeddings were configured but the ranking fell back to keywords.
        embedding_error: Option<String>,
    },
    /// The planner's prompt was shrunk to fit the model's context window.
    PromptFitted {
        /// Its round (1-based).
        round: u32,
        /// What was left out, in words ([`prompt_fitted_summary`]).
        summary: String,
    },
    /// The run answered.
    Answered {
        /// The final text.
        text: String,
    },
    /// The run failed.
    Failed {
        /// Why, as an error class.
        class: ErrorClass,
        /// Why, in words.
        error: String,
    },
}

/// Provider and model of each role, as the run's `run_started` event records them (empty
/// for a classic run in loop mode and for runs recorded before roles were recorded).
pub fn roles(events: &[Event]) -> Vec<RoleModel> {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::RunStarted { roles, .. } => Some(roles.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// What a `prompt_fitted` event says, in words: the window, the estimate before and after,
/// and what was left out; `None` for any other event.
pub fn prompt_fitted_summary(kind: &EventKind) -> Option<String> {
    let EventKind::PromptFitted {
        window,
        window_source,
        reserved_for_reply,
        before_tokens,
        estimated_tokens,
        rounds_dropped,
        descriptions_shortened,
        tools_dropped,
        ..
    } = kind
    else {
        return None;
    };
    let mut dropped = Vec::new();
    if *rounds_dropped > 0 {
        dropped.push(format!("{rounds_dropped} earlier round{}", if *rounds_dropped == 1 { "" } else { "s" }));
    }
    if *descriptions_shortened {
        dropped.push("the tool descriptions shortened".to_string());
    }
    if !tools_dropped.is_empty() {
        dropped.push(format!(
            "{} tool{} ({})",
            tools_dropped.len(),
            if tools_dropped.len() == 1 { "" } else { "s" },
            tools_dropped.join(", ")
        ));
    }
    Some(format!(
        "prompt fitted to a {window}-token window ({window_source}, {reserved_for_reply} kept for the reply): \
         about {before_tokens} → {estimated_tokens} tokens; left out: {}",
        dropped.join("; ")
    ))
}

/// Folds a run's events (oldest first) into its trace steps. An answer is paired with its
/// request by approval (or elicitation) id; the wait is measured between their timestamps.
pub fn steps(events: &[Event]) -> Vec<TraceStep> {
    let mut steps = Vec::new();
    let mut asked: HashMap<&str, (&str, DateTime<Utc>)> = HashMap::new();
    let waited = |asked: &mut HashMap<&str, (&str, DateTime<Utc>)>, id: &str, at: DateTime<Utc>| {
        asked
            .remove(id)
            .map(|(tool, since)| (tool.to_string(), Some((at - since).num_milliseconds().max(0) as u64)))
            .unwrap_or((String::new(), None))
    };
    for event in events {
        let step = match &event.kind {
            EventKind::StageCompleted { stage, round, duration_ms, usage, tool_calls, constrained, .. } => {
                TraceStep::StageCompleted {
                    stage: stage.clone(),
                    round: *round,
                    duration_ms: *duration_ms,
                    usage: *usage,
                    tool_calls: *tool_calls,
                    constrained: *constrained,
                }
            }
            EventKind::StageFailed { stage, round, duration_ms, class, error } => TraceStep::StageFailed {
                stage: stage.clone(),
                round: *round,
                duration_ms: *duration_ms,
                class: *class,
                error: error.clone(),
            },
            EventKind::ToolDenied { tool, rule, reason, .. } => {
                TraceStep::Denied { tool: tool.clone(), rule: rule.clone(), reason: reason.clone() }
            }
            EventKind::ToolApprovalRequired { approval_id, tool, rule, .. } => {
                asked.insert(approval_id, (tool, event.at));
                TraceStep::ApprovalAsked { tool: tool.clone(), rule: rule.clone() }
            }
            EventKind::ToolApproved { approval_id, .. }
            | EventKind::ToolRejected { approval_id, .. }
            | EventKind::ToolApprovalExpired { approval_id, .. } => {
                let outcome = match &event.kind {
                    EventKind::ToolApproved { .. } => "approved",
                    EventKind::ToolRejected { .. } => "rejected",
                    _ => "expired",
                };
                let (tool, waited_ms) = waited(&mut asked, approval_id, event.at);
                TraceStep::ApprovalAnswered { tool, outcome, event: event.kind.name(), waited_ms }
            }
            EventKind::McpElicitationRequested { elicitation_id, tool, server, .. } => {
                asked.insert(elicitation_id, (tool, event.at));
                TraceStep::InputAsked { tool: tool.clone(), server: server.clone() }
            }
            EventKind::McpElicitationAnswered { elicitation_id, action, decided_by, reason, .. } => {
                let (tool, waited_ms) = waited(&mut asked, elicitation_id, event.at);
                TraceStep::InputAnswered {
                    tool,
                    action: action.clone(),
                    decided_by: decided_by.clone(),
                    reason: reason.clone(),
                    waited_ms,
                }
            }
            EventKind::ToolCompleted { tool, duration_ms, output_chars, .. } => TraceStep::Tool {
                tool: tool.clone(),
                duration_ms: *duration_ms,
                output_chars: Some(*output_chars),
                error: None,
            },
            EventKind::ToolFailed { tool, duration_ms, error, .. } => TraceStep::Tool {
                tool: tool.clone(),
                duration_ms: *duration_ms,
                output_chars: None,
                error: Some(error.clone()),
            },
            EventKind::ToolCallRepeated {
                tool,
                earlier_call_id,
                earlier_outcome,
                rule,
                repeats,
                answered_from_record,
                ..
            } => TraceStep::Repeated {
                tool: tool.clone(),
                earlier_call_id: earlier_call_id.clone(),
                earlier_outcome: earlier_outcome.clone(),
                rule: rule.clone(),
                repeats: *repeats,
                answered_from_record: *answered_from_record,
            },
            EventKind::ContextRetrieved { chunks, duration_ms, ranking, embedding_error, .. } => TraceStep::Context {
                passages: chunks.iter().map(|c| format!("{}:{}-{}", c.path, c.start_line, c.end_line)).collect(),
                duration_ms: *duration_ms,
                error: None,
                ranking: ranking.clone(),
                embedding_error: embedding_error.clone(),
            },
            EventKind::ContextUnavailable { error } => TraceStep::Context {
                passages: Vec::new(),
                duration_ms: 0,
                error: Some(error.clone()),
                ranking: String::new(),
                embedding_error: None,
            },
            EventKind::PromptFitted { round, .. } => TraceStep::PromptFitted {
                round: *round,
                summary: prompt_fitted_summary(&event.kind).unwrap_or_default(),
            },
            EventKind::RunCompleted { final_text, .. } => TraceStep::Answered { text: final_text.clone() },
            EventKind::RunFailed { error, class, .. } => TraceStep::Failed { class: *class, error: error.clone() },
            _ => continue,
        };
        steps.push(step);
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64, kind: EventKind) -> Event {
        let at = DateTime::<Utc>::from_timestamp_millis(1_000_000 + ms).unwrap();
        Event { run_id: "run_1".into(), seq: 0, at, kind }
    }

    #[test]
    fn an_answer_is_paired_with_its_request_and_timed() {
        let events = vec![
            at(
                0,
                EventKind::ToolApprovalRequired {
                    approval_id: "apr_1".into(),
                    call_id: "c1".into(),
                    tool: "edit".into(),
                    arguments: serde_json::json!({}),
                    rule: "ask_writes".into(),
                    risk: 0.5,
                    reason: String::new(),
                    preview: String::new(),
                    expires_at: Utc::now(),
                },
            ),
            at(
                250,
                EventKind::ToolApproved {
                    approval_id: "apr_1".into(),
                    call_id: "c1".into(),
                    decided_by: "o".into(),
                    scope: "once".into(),
                },
            ),
            at(
                300,
                EventKind::ToolRejected {
                    approval_id: "apr_unknown".into(),
                    call_id: "c2".into(),
                    reason: String::new(),
                },
            ),
        ];
        let steps = steps(&events);
        assert_eq!(steps[0], TraceStep::ApprovalAsked { tool: "edit".into(), rule: "ask_writes".into() });
        assert_eq!(
            steps[1],
            TraceStep::ApprovalAnswered {
                tool: "edit".into(),
                outcome: "approved",
                event: "tool_approved",
                waited_ms: Some(250)
            }
        );
        assert_eq!(
            steps[2],
            TraceStep::ApprovalAnswered {
                tool: String::new(),
                outcome: "rejected",
                event: "tool_rejected",
                waited_ms: None
            }
        );
    }
}
