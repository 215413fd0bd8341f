//! One tool call from proposal to result, as its steps:
//! request → decide → preview → permit → execute → record → result for the model.
//!
//! - **decide**: the gate's policy and validation, pure and synchronous ([`crate::decide`]);
//! - **preview**: the tool's dry run, so a change that cannot apply fails before anyone is asked;
//! - **permit** ([`gate`]): an allow, a remembered grant or the owner's approval
//!   ([`ask`], the first valid decision taken from the runtime's
//!   [`DecisionQueue`](crate::decisions::DecisionQueue)) becomes a [`Permit`](gate::Permit);
//!   anything else a typed [`Refusal`];
//! - **execute** ([`execute`]): the tool runs in the sandbox its
//!   [`CallSandbox`](execute::CallSandbox) describes,
//!   answering MCP elicitations meanwhile ([`elicit`]);
//! - **record** ([`record`]): every step is an audit record
//!   ([`AuditRecord`](record::AuditRecord)), a change
//!   registers its rollback, and the output is redacted, filtered and capped ([`output`]).
//!
//! Every decision is an audit record, and the record that lets a call run is durable before
//! the call starts: a crash between the two leaves an `approved` record without an outcome,
//! which the next start marks `unknown` and never re-runs. A call that only reads (changes
//! nothing) may start once its record is committed, and the record reaches the disk while it
//! runs: the run's next model request, which carries its result, waits for that
//! ([`CallContext::reads_on_disk`]).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use steward_policy::{Fingerprints, Policy, Redactor, Workspace};
use steward_protocol::{Decision, DecisionKind, EventKind, ToolCall};
use steward_store::{Store, StoreError};

use crate::approval::{ApprovalKey, Approver};
use crate::clock::Clock;
use crate::decisions::DecisionQueue;
use crate::events::EventEmitter;
use crate::interrupt::{Interrupt, Interruptible};
use steward_config::HookConfig;
use steward_tools::{Tool, ToolContext, ToolRegistry};

mod ask;
mod egress;
mod elicit;
mod execute;
mod gate;
mod generate;
mod grants;
mod output;
mod record;

use gate::Refusal;

/// Appended to the reason of an approval request whose arguments or preview had parts
/// redacted.
pub(crate) const HIDDEN_PARTS_WARNING: &str = " — WARNING: parts of this call are shown as [REDACTED] because they look \
     like secrets, so you cannot see everything it would write or run; deny it unless you expect a secret there.";

/// Everything one run's tool calls need, in five parts.
pub(crate) struct CallContext<'a> {
    /// Whose run it is, where, and under which policy.
    pub run: RunScope<'a>,
    /// Where every decision and outcome is written.
    pub records: Recorders<'a>,
    /// Who approves, and how long approvals and grants hold.
    pub approvals: Approvals<'a>,
    /// The tools, what they run with, and how their outputs are kept.
    pub tools: Tools<'a>,
    /// What the run's calls so far left behind.
    pub state: RunState,
}

impl CallContext<'_> {
    /// Waits until the audit records that let the run's reads run before they reached the disk
    /// are there ([`RunState::on_disk_owed`]): before what those reads returned is sent to a
    /// model or ends the run.
    ///
    /// Errors: the store could not force them to disk.
    pub(crate) async fn reads_on_disk(&self) -> Result<(), StoreError> {
        match self.state.on_disk_owed() {
            0 => Ok(()),
            seq => self.records.store.audit_on_disk(seq).await,
        }
    }
}

/// Whose run it is, where, and under which policy.
pub(crate) struct RunScope<'a> {
    /// The run's id.
    pub run_id: &'a str,
    /// The run's owner: the only one who may approve its calls.
    pub owner_id: &'a str,
    /// The workspace, with its path rules.
    pub workspace: &'a Arc<Workspace>,
    /// The policy the gate applies.
    pub policy: &'a Policy,
    /// Cancellation and the run's deadline.
    pub interrupt: &'a Interruptible,
}

/// Where every decision and outcome is written: the audit log and the run's events, both
/// through the redactor.
pub(crate) struct Recorders<'a> {
    /// Audit records, approvals, grants and rollbacks.
    pub store: &'a Arc<dyn Store>,
    /// Redacts what is recorded or shown.
    pub redactor: &'a Redactor,
    /// The run's events.
    pub events: &'a EventEmitter,
}

/// Who approves, and how long approvals and grants hold.
pub(crate) struct Approvals<'a> {
    /// Signs and checks approval decision tokens.
    pub key: &'a ApprovalKey,
    /// Puts requests (and MCP elicitations) to the owner.
    pub approver: &'a Arc<dyn Approver>,
    /// Where every front end submits its decisions and the permit step takes them from.
    pub decisions: &'a DecisionQueue,
    /// When requests are made and whether they (and grants) have expired.
    pub clock: &'a dyn Clock,
    /// Lifetime of an approval request (`approval_timeout_seconds`).
    pub ttl: chrono::Duration,
    /// Lifetime of remembered grants (`token_ttl_seconds`).
    pub grant_ttl: chrono::Duration,
}

/// The tools, what they run with, and how their outputs are kept.
pub(crate) struct Tools<'a> {
    /// The tools the run offers.
    pub registry: &'a ToolRegistry,
    /// What every call runs with (workspace, sandbox settings, credentials).
    pub context: &'a ToolContext,
    /// Hooks of the configuration (SPEC T9).
    pub hooks: &'a [HookConfig],
    /// Characters of one output shown to the model (`max_tool_output_chars`).
    pub max_output_chars: usize,
    /// Where complete outputs of capped results are saved.
    pub outputs_dir: &'a Path,
    /// Writes the tools the planner names that do not exist (`[generated_tools]`, SPEC G);
    /// `None` when that is off.
    pub generator: Option<&'a crate::generated::Generator>,
}

/// What the run's calls so far left behind.
pub(crate) struct RunState {
    /// Set once the run has seen untrusted content (SPEC C2); never cleared.
    tainted: AtomicBool,
    /// Fingerprints of every tool output of the run so far (SPEC C2, [`crate::data_flow`]);
    /// `None` when the configuration turned the check off
    /// ([`steward_config::Config::run_level_taint_only`]).
    seen: Option<Mutex<Fingerprints>>,
    /// Writing calls that registered a compensation so far (their rollback step numbers).
    write_steps: AtomicU32,
    /// The newest `approved` record of a read that was let run before it reached the disk
    /// (`seq`; 0: none).
    on_disk_owed: AtomicU64,
}

impl RunState {
    /// A run that has seen nothing yet; `data_flow` keeps the fingerprints of outputs for the
    /// argument-level check.
    pub fn new(data_flow: bool) -> Self {
        RunState {
            tainted: AtomicBool::new(false),
            seen: data_flow.then(|| Mutex::new(Fingerprints::new())),
            write_steps: AtomicU32::new(0),
            on_disk_owed: AtomicU64::new(0),
        }
    }

    /// True once the run has seen untrusted content.
    pub fn is_tainted(&self) -> bool {
        self.tainted.load(Ordering::SeqCst)
    }

    /// Marks the run as having seen untrusted content; true when it had not before (the
    /// caller then says so with a `run_tainted` event).
    pub(crate) fn taint(&self) -> bool {
        !self.tainted.swap(true, Ordering::SeqCst)
    }

    /// Fingerprints `text`, a part of the model's context that is not a tool's output
    /// ([`crate::provenance`]), described by `what`.
    pub(crate) fn remember_context(&self, what: &str, text: &str) {
        if let Some(seen) = &self.seen {
            seen.lock().unwrap_or_else(PoisonError::into_inner).record_context(what, text);
        }
    }

    /// True when a call carrying `text` as an argument would carry fingerprinted data.
    #[cfg(test)]
    pub(crate) fn has_seen(&self, text: &str) -> bool {
        self.seen.as_ref().is_some_and(|seen| {
            seen.lock().unwrap_or_else(PoisonError::into_inner).carried(&serde_json::json!({ "data": text })).is_some()
        })
    }

    /// Fingerprints what the model is shown of a call's output (result or error), whatever
    /// the tool, for the `data_flow` check of later calls.
    fn remember_output(&self, call: &ToolCall, shown: &str) {
        if let Some(seen) = &self.seen {
            seen.lock().unwrap_or_else(PoisonError::into_inner).record(&call.name, &call.id, shown);
        }
    }

    /// The newest audit record (`seq`) that let a read run before it reached the disk: what
    /// must be on disk before the model is shown what the run's reads returned
    /// ([`steward_store::AuditStore::audit_on_disk`]); 0 when there is none.
    fn on_disk_owed(&self) -> u64 {
        self.on_disk_owed.load(Ordering::SeqCst)
    }

    /// Notes that audit record `seq` let a read run before it reached the disk.
    fn owe_on_disk(&self, seq: u64) {
        self.on_disk_owed.fetch_max(seq, Ordering::SeqCst);
    }

    /// The next rollback step number (1, 2, …).
    fn next_write_step(&self) -> u32 {
        self.write_steps.fetch_add(1, Ordering::SeqCst) + 1
    }
}

/// What the model is told about one call.
pub(crate) struct CallResult {
    pub content: String,
    pub is_error: bool,
}

/// Why a call could not finish and the run must stop.
pub(crate) enum CallAbort {
    Interrupted(Interrupt),
    Storage(StoreError),
    /// The run is no longer this process's to execute: another node sharing the database took
    /// it over (its lease expired) and recovered it, or it was ended elsewhere. Nothing more
    /// of it runs here.
    Superseded,
}

impl From<StoreError> for CallAbort {
    fn from(err: StoreError) -> Self {
        CallAbort::Storage(err)
    }
}

/// Takes one proposed call through the control layer and, if allowed, runs it.
pub(crate) async fn handle_call(cx: &CallContext<'_>, call: &ToolCall) -> Result<CallResult, CallAbort> {
    requested(cx, call).await?;
    let tool = cx.tools.registry.get(&call.name);
    let decision = decide(cx, call);
    if let (None, Some(generator)) = (tool, cx.tools.generator)
        && decision.rule == "unknown_tool"
        && steward_generated::valid_name(&call.name)
    {
        return generate::generate(cx, call, generator).await;
    }
    let preview = match preview(cx, call, tool, &decision).await {
        Ok(preview) => preview,
        Err(err) => return record::cannot_apply(cx, call, &decision, &err).await,
    };
    match gate::permit(cx, call, tool, &decision, preview.as_ref()).await? {
        Ok(permit) => execute::execute(cx, call, &decision, permit).await,
        Err(refusal) => refusal.report(cx, call, &decision).await,
    }
}

/// Refuses a call without judging it (chain mode, chain-only tools): recorded and reported
/// like any refusal by the gate.
pub(crate) async fn refuse_call(
    cx: &CallContext<'_>,
    call: &ToolCall,
    rule: &str,
    reason: &str,
) -> Result<CallResult, CallAbort> {
    requested(cx, call).await?;
    let decision = Decision::new(DecisionKind::Deny, rule, 1.0, reason);
    Refusal::Denied(decision.clone()).report(cx, call, &decision).await
}

/// The request, as the model made it (redacted by the emitter).
async fn requested(cx: &CallContext<'_>, call: &ToolCall) -> Result<(), StoreError> {
    cx.records
        .events
        .emit(EventKind::ToolRequested {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
        })
        .await
        .map(|_| ())
}

/// Policy and validation: pure, synchronous, strictest rule wins; a change that cannot be
/// undone is never made without the owner (SPEC C5).
fn decide(cx: &CallContext<'_>, call: &ToolCall) -> Decision {
    let seen = cx.state.seen.as_ref().map(|seen| seen.lock().unwrap_or_else(PoisonError::into_inner));
    crate::decide::decide(
        cx.run.policy,
        cx.tools.registry,
        call,
        cx.run.workspace,
        cx.state.is_tainted(),
        seen.as_deref(),
    )
}

/// The tool's own dry run of a call the gate allows or asks about: `(path, diff)` to show,
/// if any. An error means the call cannot succeed.
async fn preview(
    cx: &CallContext<'_>,
    call: &ToolCall,
    tool: Option<&Arc<dyn Tool>>,
    decision: &Decision,
) -> Result<Option<(String, String)>, steward_tools::ToolError> {
    match (tool, decision.decision) {
        (Some(tool), DecisionKind::Allow | DecisionKind::Ask) => tool.preview(&call.arguments, cx.tools.context).await,
        _ => Ok(None),
    }
}
