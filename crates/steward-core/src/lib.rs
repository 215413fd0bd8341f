//! The agent loop and its composition (SPEC A, C, O): planners, the role pipeline, and the
//! orchestrator that runs policy → approval → sandboxed execution → audit for every tool call.
//! The built-in tools are `steward-tools`'s and the configuration is `steward-config`'s.
//!
//! Every module is private: what front ends use is the chosen list re-exported below, grouped
//! by concern, plus four namespaces of related functions ([`compare`], [`mcp_tokens`],
//! [`memory`], [`trace`]).
#![deny(missing_docs)]
#![forbid(unsafe_code)]
// Every type a public item hands out can be named from here: the chosen list is complete.
#![deny(unnameable_types)]

mod agent;
mod approval;
mod call_trace;
mod chains;
mod clock;
pub mod compare;
mod compensate;
mod compose;
mod context;
mod conversation;
mod data_flow;
mod decide;
mod decisions;
mod elicitation;
mod events;
mod fit;
mod generated;
mod hooks;
mod interrupt;
pub mod mcp_tokens;
pub mod memory;
mod orchestrator;
mod planner;
mod planner_reply;
mod provenance;
mod recovery;
mod repeats;
mod replay;
mod roles;
mod runtime;
mod stage;
mod telemetry;
pub mod trace;
mod undo;
mod workspace_search;

// Composing and starting a run: what every front end does.
pub use agent::{PlannerChoice, RunError, RunRequest, run_task};
pub use compose::{
    Launcher, LauncherError, PrepareError, Prepared, ProviderStatus, ReadyRun, RunOptions, Task, prepare,
    registry as tool_registry,
};
pub use context::{Attachment, Turn};
pub use conversation::history as conversation_history;
pub use planner::classic::{CLASSIC as CLASSIC_PLANNER, ClassicPlanner};
pub use planner::{PlannerError, PlannerOverrides, resolve as resolve_planner, resolve_roles};
pub use roles::{Locality, RoleAssignment, RoleName, RolePlan, RolePlanError, RunMode};
pub use runtime::Runtime;

// What a run shares and reports through: the clock, the events, the executing runs.
pub use clock::{Clock, ManualClock, SystemClock};
pub use events::{EventObserver, NoObserver};
pub use recovery::{
    Executing, ExecutingRuns, LeaseTiming, Recovered, keep_leases, recover_expired_leases, recover_interrupted,
};

// Approvals and the other decisions a run waits on (SPEC C4, H).
pub use approval::{ApprovalAnswer, ApprovalKey, ApprovalScope, Approver, NoApprover, QueueApprover, call_hash};
pub use decisions::{
    Decided, DecisionError, DecisionQueue, OwnerDecision, SubmitError, Verdict, Via, Waiting,
    pending as pending_decisions, record as record_decision,
};
pub use elicitation::{ElicitationPrompt, ElicitationReply};

// Judging a call without running it, and what the run's data flow allows.
pub use data_flow::reads_untrusted;
pub use decide::decide;

// Tool call chains, hooks and generated tools.
pub use chains::{ChainConfig, ChainError, ChainPlan, ChainState, Chains};
pub use generated::{
    NO_WORKER as NO_TOOL_WORKER, remove_registered as remove_generated_tool, worker_from_env as tool_worker_from_env,
};
pub use hooks::HookConfig;

// After a run: replaying it, undoing its steps, running its compensations.
pub use compensate::{CompensateError, CompensationRun, CompensationRunner, CompensationTest};
pub use replay::{Recorded as RecordedDecision, Replayed, RunReplay, Skipped, replay_run};
pub use undo::{RollbackError, RollbackSummary, StepUndo, last_changing_run, roll_back};

// The context block of workspace search.
pub use workspace_search::CONTEXT_HEADING as SEARCH_CONTEXT_HEADING;
