use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ErrorClass, Timestamp, Usage};

/// Why a run stopped. Serialised in snake_case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The planner gave a final answer.
    Answered,
    /// `max_rounds` rounds with tool calls were used up.
    MaxRounds,
    /// `max_tool_calls_per_run` was reached.
    MaxToolCalls,
    /// `max_total_runtime_ms` ran out.
    Timeout,
    /// The run was cancelled.
    Cancelled,
    /// The model kept repeating a call that was already refused or failed in the run
    /// (`limits.max_repeated_calls` repeats, none of them executed).
    Stuck,
    /// The run failed (see the error class).
    Failed,
}

impl StopReason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Answered => "answered",
            StopReason::MaxRounds => "max_rounds",
            StopReason::MaxToolCalls => "max_tool_calls",
            StopReason::Timeout => "timeout",
            StopReason::Cancelled => "cancelled",
            StopReason::Stuck => "stuck",
            StopReason::Failed => "failed",
        }
    }
}

/// One event of a run, as published and persisted.
///
/// JSON shape: `{"event": "<name>", "run_id": "run_…", "seq": 3, "at": "<RFC 3339>", …fields}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Event {
    /// The run.
    pub run_id: String,
    /// 1-based sequence number within the run; strictly increasing.
    pub seq: u64,
    /// When it happened (UTC).
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: Timestamp,
    /// The event name and its fields.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Who plays one role of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RoleModel {
    /// Role name (`planner`, `local_drafter`, `cloud_drafter`, `critic`, `reviewer`,
    /// `synthesizer`).
    pub role: String,
    /// Provider name (a preset or `[providers.NAME]`); empty for the classic planner.
    pub provider: String,
    /// Model id; empty for the classic planner.
    pub model: String,
}

/// One chunk of the workspace given to the planner as context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ContextChunk {
    /// Workspace-relative path.
    pub path: String,
    /// First line (1-based).
    pub start_line: u32,
    /// Last line (inclusive).
    pub end_line: u32,
    /// Its rank score (BM25).
    pub score: f64,
}

/// Event names and fields. Tagged by `event` in snake_case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// A run began.
    RunStarted {
        /// The task text, redacted.
        task: String,
        /// Owner id (`local:<user>` for the CLI).
        owner_id: String,
        /// `classic` or `model`.
        planner: String,
        /// Provider name, empty for the classic planner.
        provider: String,
        /// Model id, empty for the classic planner.
        model: String,
        /// Canonical workspace path.
        workspace: String,
        /// Instruction files given to the model planner as context, in prompt order
        /// (absolute paths: the user's global `AGENTS.md`, then the `AGENTS.md` or `CLAUDE.md`
        /// files from the repository root down to the workspace). Empty for the classic
        /// planner or when there are none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        instruction_files: Vec<String>,
        /// Provider and model of each role of the run, in pipeline order: the
        /// planner alone in loop mode, every stage in roles mode; empty for the classic planner
        /// in loop mode. Absent in runs recorded before it existed.
        #[serde(default)]
        roles: Vec<RoleModel>,
    },
    /// A stage (a planner round) began.
    StageStarted {
        /// Stage name (`planner`).
        stage: String,
        /// Round number, 1-based.
        round: u32,
    },
    /// Streamed text of a stage.
    StageChunk {
        /// Stage name.
        stage: String,
        /// The new text, redacted.
        text: String,
    },
    /// A stage finished.
    StageCompleted {
        /// Stage name.
        stage: String,
        /// Round number.
        round: u32,
        /// Duration in ms.
        duration_ms: u64,
        /// Tokens used by this planner call.
        usage: Usage,
        /// Number of tool calls proposed.
        tool_calls: u32,
        /// Why the model stopped (`stop`, `tool_calls`, `length`, `content_filter`, or the
        /// provider's own word); empty when it did not say. Absent in runs recorded before it
        /// existed.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        finish_reason: String,
        /// The model that answered, as the provider reported it; empty when it did not say.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        response_model: String,
        /// True when the server held the reply to "one call of an offered tool, or an answer"
        /// (the provider's `constrained` setting); absent when false.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        constrained: bool,
    },
    /// A stage failed.
    StageFailed {
        /// Stage name.
        stage: String,
        /// Round number.
        round: u32,
        /// Duration in ms.
        duration_ms: u64,
        /// Redacted error message.
        error: String,
        /// Error class.
        class: ErrorClass,
    },
    /// The run saw untrusted content for the first time (SPEC C2): from here on, calls the
    /// policy would allow at medium risk ask, and sinks carrying what it saw ask `data_flow`.
    RunTainted {
        /// What it was, in words: `the output of web__fetch (call c3)`, `an earlier turn of
        /// the conversation (run …), whose run had seen untrusted content`.
        source: String,
    },
    /// A planner proposed a tool call.
    ToolRequested {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// Arguments, redacted.
        #[cfg_attr(feature = "openapi", schema(value_type = Object))]
        arguments: Value,
    },
    /// The gate refused a tool call (or it was invalid).
    ToolDenied {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// Deciding rule.
        rule: String,
        /// Risk score.
        risk: f64,
        /// Why.
        reason: String,
    },
    /// The gate asks the owner.
    ToolApprovalRequired {
        /// Approval id.
        approval_id: String,
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// Arguments, redacted.
        #[cfg_attr(feature = "openapi", schema(value_type = Object))]
        arguments: Value,
        /// Deciding rule.
        rule: String,
        /// Risk score.
        risk: f64,
        /// Why it asks.
        reason: String,
        /// Effect preview (diff), redacted.
        preview: String,
        /// Expiry (RFC 3339).
        #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
        expires_at: Timestamp,
    },
    /// The owner approved.
    ToolApproved {
        /// Approval id.
        approval_id: String,
        /// Call id.
        call_id: String,
        /// Who decided.
        decided_by: String,
        /// What the approval covers: `once` (this call only), `run` (calls like it for the
        /// rest of the run) or `workspace` (a grant in the workspace). Empty in events
        /// recorded before approvals said so.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        scope: String,
    },
    /// The owner (or the lack of one) rejected.
    ToolRejected {
        /// Approval id.
        approval_id: String,
        /// Call id.
        call_id: String,
        /// Why (`rejected by owner`, `no_approver`, …).
        reason: String,
    },
    /// An approval expired without a decision.
    ToolApprovalExpired {
        /// Approval id.
        approval_id: String,
        /// Call id.
        call_id: String,
    },
    /// A tool began executing.
    ToolStarted {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// What let it run: the deciding rule (`default:low`, a `[[policy.rule]]` name,
        /// `grant:…`) or `approved` when the owner approved it.
        #[serde(default)]
        allowed_by: String,
    },
    /// A tool finished.
    ToolCompleted {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// Duration in ms.
        duration_ms: u64,
        /// Characters of output (before capping).
        output_chars: u64,
        /// Output as shown to the model, redacted and capped.
        output: String,
        /// What the hooks the call fired reported (`[hook `NAME` passed|FAILED after TOOL of
        /// `PATH`]` and their output, redacted), as appended to the model's result; empty when
        /// no hook ran.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        hook_output: String,
    },
    /// A tool failed.
    ToolFailed {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// Duration in ms.
        duration_ms: u64,
        /// Redacted error.
        error: String,
    },
    /// A proposed call repeated one already made in the run (same tool, same arguments after
    /// normalising) and was not executed: the model got the earlier outcome instead, with
    /// what would change it (or, for an unchanged read, the earlier result).
    ToolCallRepeated {
        /// Call id of the repeat.
        call_id: String,
        /// Tool name.
        tool: String,
        /// Arguments, redacted.
        #[cfg_attr(feature = "openapi", schema(value_type = Object))]
        arguments: Value,
        /// Call id of the earlier call whose outcome stands.
        earlier_call_id: String,
        /// The earlier outcome: `refused`, `rejected`, `expired`, `failed` or `completed`.
        earlier_outcome: String,
        /// The rule that refused the earlier call (empty when none did).
        rule: String,
        /// True when the repeat was answered with the earlier result (an unchanged read);
        /// false when it was refused as a repeat.
        answered_from_record: bool,
        /// Refused repeats in the run so far, this one included (0 for an answered read).
        repeats: u32,
        /// What the model was told.
        message: String,
    },
    /// An MCP server asked the run's owner for input during a tool call (form elicitation);
    /// the owner answers on the terminal or the run's page until `expires_at`.
    McpElicitationRequested {
        /// Elicitation id (`eli_…`).
        elicitation_id: String,
        /// The tool call during which the server asked.
        call_id: String,
        /// Tool name (`server__tool`).
        tool: String,
        /// The configured server name.
        server: String,
        /// The server's message (untrusted text), redacted.
        message: String,
        /// The names of the fields asked for.
        fields: Vec<String>,
        /// Expiry (RFC 3339); unanswered by then, the server gets `cancel`.
        #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
        expires_at: Timestamp,
    },
    /// An elicitation was answered: `accept` (the values went to the server; they are not
    /// recorded), `decline` or `cancel`.
    McpElicitationAnswered {
        /// Elicitation id.
        elicitation_id: String,
        /// Call id.
        call_id: String,
        /// `accept`, `decline` or `cancel`.
        action: String,
        /// Who answered: the owner's id, or `steward` (expired, nobody could answer, not a
        /// form Steward can show).
        decided_by: String,
        /// Why, when Steward answered (empty when the owner did).
        reason: String,
    },
    /// Chunks of the workspace search index matching the task were looked up for the model
    /// planner's context; `chunks` lists those given, best first (empty when
    /// none matched).
    ContextRetrieved {
        /// What was looked up (the task), redacted.
        query: String,
        /// The chunks given, best first.
        chunks: Vec<ContextChunk>,
        /// Files in the index.
        files: usize,
        /// Files read again for this run (new or changed since the last update).
        updated: usize,
        /// Time to update the index and rank, in ms.
        duration_ms: u64,
        /// How the chunks were ranked: `bm25` (keywords), or `hybrid` (keywords and
        /// embeddings, fused by reciprocal rank) when `[search] embeddings` is set and the
        /// provider answered.
        #[serde(default = "bm25")]
        ranking: String,
        /// Chunks embedded for this run (new or changed text since the last update).
        #[serde(default)]
        embedded: usize,
        /// Why embeddings were configured but not used (the ranking fell back to `bm25`),
        /// redacted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        embedding_error: Option<String>,
    },
    /// The workspace search index could not be used: the run goes on without workspace
    /// context, and this says why.
    ContextUnavailable {
        /// Why, redacted.
        error: String,
    },
    /// The planner's prompt was shrunk to fit the model's context window before it was sent:
    /// what was left out, in the order it was tried (fewer earlier rounds, shorter tool
    /// descriptions, fewer tools). Token counts are estimates (see `estimated_tokens`).
    PromptFitted {
        /// Round number, 1-based.
        round: u32,
        /// The model's context window, in tokens.
        window: u32,
        /// Where the window's size came from: `config` or `server`.
        window_source: String,
        /// Tokens kept free for the reply (the request's output limit).
        reserved_for_reply: u32,
        /// The prompt's estimated size before shrinking, in tokens.
        before_tokens: u32,
        /// The prompt's estimated size as sent, in tokens.
        estimated_tokens: u32,
        /// Earlier rounds left out (their calls and results).
        rounds_dropped: u32,
        /// Whether the tools' descriptions were shortened.
        descriptions_shortened: bool,
        /// Tools no longer offered this round, by name.
        tools_dropped: Vec<String>,
    },
    /// A change was proposed (diff), not yet applied.
    PatchProposed {
        /// Call id.
        call_id: String,
        /// Workspace-relative path.
        path: String,
        /// Unified diff, redacted.
        diff: String,
    },
    /// A proposed change was written.
    PatchApplied {
        /// Call id.
        call_id: String,
        /// Workspace-relative path.
        path: String,
        /// Token for `steward rollback`.
        rollback_token: String,
    },
    /// The run ended with an answer, or stopped by a limit with what it had.
    RunCompleted {
        /// Final text, redacted.
        #[serde(rename = "final")]
        final_text: String,
        /// Why it stopped.
        stop_reason: StopReason,
        /// Planner rounds.
        rounds: u32,
        /// Tool calls proposed.
        tool_calls: u32,
        /// Total tokens.
        usage: Usage,
        /// Wall time in ms.
        duration_ms: u64,
        /// The limit that stopped the run when it was a role's own (`stop_reason`
        /// `max_tool_calls` under `max_tool_calls_per_role`): the setting, the role and its
        /// value, e.g. `max_tool_calls_per_role: planner (3)`. Absent otherwise.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        limit: String,
    },
    /// The run failed.
    RunFailed {
        /// Redacted error.
        error: String,
        /// Error class.
        class: ErrorClass,
        /// Planner rounds.
        rounds: u32,
        /// Wall time in ms.
        duration_ms: u64,
    },
    /// The run was cancelled.
    RunCancelled {
        /// Why (`cancelled by user`, …).
        reason: String,
        /// Planner rounds.
        rounds: u32,
        /// Wall time in ms.
        duration_ms: u64,
    },
}

impl EventKind {
    /// The event's wire name (`run_started`, …).
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::RunStarted { .. } => "run_started",
            EventKind::StageStarted { .. } => "stage_started",
            EventKind::StageChunk { .. } => "stage_chunk",
            EventKind::StageCompleted { .. } => "stage_completed",
            EventKind::StageFailed { .. } => "stage_failed",
            EventKind::ToolRequested { .. } => "tool_requested",
            EventKind::ToolDenied { .. } => "tool_denied",
            EventKind::ToolApprovalRequired { .. } => "tool_approval_required",
            EventKind::RunTainted { .. } => "run_tainted",
            EventKind::ToolApproved { .. } => "tool_approved",
            EventKind::ToolRejected { .. } => "tool_rejected",
            EventKind::ToolApprovalExpired { .. } => "tool_approval_expired",
            EventKind::ToolStarted { .. } => "tool_started",
            EventKind::ToolCompleted { .. } => "tool_completed",
            EventKind::ToolFailed { .. } => "tool_failed",
            EventKind::ToolCallRepeated { .. } => "tool_call_repeated",
            EventKind::McpElicitationRequested { .. } => "mcp_elicitation_requested",
            EventKind::McpElicitationAnswered { .. } => "mcp_elicitation_answered",
            EventKind::ContextRetrieved { .. } => "context_retrieved",
            EventKind::ContextUnavailable { .. } => "context_unavailable",
            EventKind::PromptFitted { .. } => "prompt_fitted",
            EventKind::PatchProposed { .. } => "patch_proposed",
            EventKind::PatchApplied { .. } => "patch_applied",
            EventKind::RunCompleted { .. } => "run_completed",
            EventKind::RunFailed { .. } => "run_failed",
            EventKind::RunCancelled { .. } => "run_cancelled",
        }
    }

    /// True for the three events that end a run.
    pub fn is_terminal(&self) -> bool {
        matches!(self, EventKind::RunCompleted { .. } | EventKind::RunFailed { .. } | EventKind::RunCancelled { .. })
    }
}

/// The ranking of a `context_retrieved` event recorded before it said which.
fn bm25() -> String {
    "bm25".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_json_has_flat_name_and_fields() {
        let ev = Event {
            run_id: "run_1".into(),
            seq: 7,
            at: chrono::DateTime::parse_from_rfc3339("2026-01-02T03:04:05Z").unwrap().into(),
            kind: EventKind::RunCompleted {
                final_text: "done".into(),
                stop_reason: StopReason::Answered,
                rounds: 1,
                tool_calls: 0,
                usage: Usage::default(),
                duration_ms: 3,
                limit: String::new(),
            },
        };
        let v = serde_json::to_value(&ev).unwrap();
        assert_eq!(v["event"], "run_completed");
        assert_eq!(v["final"], "done");
        assert_eq!(v["stop_reason"], "answered");
        assert_eq!(v["seq"], 7);
        assert_eq!(v["at"], "2026-01-02T03:04:05Z");
        let back: Event = serde_json::from_value(v).unwrap();
        assert_eq!(back, ev);
    }
}
