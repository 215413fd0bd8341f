//! The execute step: a permitted call runs in the sandbox the orchestrator sets up for it
//! ([`CallSandbox`]), and its outcome is recorded: interrupted, failed, or completed (output
//! redacted, filtered and capped, the change's rollback registered, hooks run).

use std::time::Instant;

use steward_protocol::{AuditOutcome, Decision, EventKind, ToolCall};
use steward_store::StoreError;
use tokio::sync::mpsc;

use super::elicit::{self, Asked};
use super::gate::Permit;
use super::output::{cap_output, tool_output_taints};
use super::record::{AuditRecord, Rule, register_rollback};
use super::{CallAbort, CallContext, CallResult, egress};
use crate::interrupt::Interrupt;
use steward_tools::EgressLog;
use steward_tools::{Tool, ToolContext, ToolError, ToolOutput};

/// The sandbox one call runs in: the run's tool context — workspace and path rules,
/// `[sandbox]` settings (hidden home, memory limit), protections the configuration accepts
/// running without, the tool's credentials, the timeout — with this call's own elicitor (an
/// MCP server's questions go to the owner) and egress log (its connections through the proxy
/// are audited). The tool confines each program it starts to these; the profile it ran under
/// comes back in [`ToolOutput::sandbox`] and is recorded with the outcome.
pub(super) struct CallSandbox {
    context: ToolContext,
    egress: EgressLog,
    asked: mpsc::Receiver<Asked>,
}

impl CallSandbox {
    /// The sandbox of one call of the run `cx`.
    pub(super) fn prepare(cx: &CallContext<'_>) -> Self {
        let (elicitor, asked) = elicit::channel();
        let egress = EgressLog::default();
        let context =
            ToolContext { elicitor: Some(elicitor), egress: Some(egress.clone()), ..cx.tools.context.clone() };
        CallSandbox { context, egress, asked }
    }

    /// Runs `call` with `tool` in this sandbox, answering the elicitations it makes
    /// meanwhile; `Err` when the run was interrupted first.
    async fn run(
        &mut self,
        cx: &CallContext<'_>,
        call: &ToolCall,
        tool: &dyn Tool,
    ) -> Result<Result<Result<ToolOutput, ToolError>, Interrupt>, StoreError> {
        let running = elicit::run_answering(cx, call, tool.run(&call.arguments, &self.context), &mut self.asked);
        match cx.run.interrupt.run(running).await {
            Ok(Err(storage)) => Err(storage),
            Ok(Ok(result)) => Ok(Ok(result)),
            Err(interrupt) => Ok(Err(interrupt)),
        }
    }
}

/// Runs a permitted call and records its outcome. The record that permitted it is already
/// durable.
pub(super) async fn execute(
    cx: &CallContext<'_>,
    call: &ToolCall,
    decision: &Decision,
    permit: Permit<'_>,
) -> Result<CallResult, CallAbort> {
    let approval_id = permit.authority.approval_id();
    let allowed_by = permit.authority.allowed_by();
    cx.records
        .events
        .emit(EventKind::ToolStarted { call_id: call.id.clone(), tool: call.name.clone(), allowed_by })
        .await?;
    let started = Instant::now();
    let mut sandbox = CallSandbox::prepare(cx);
    let result = sandbox.run(cx, call, permit.tool.as_ref()).await?;
    let ms = started.elapsed().as_millis() as u64;
    // Each connection the call made through the egress proxy, before the call's own outcome.
    egress::queue(cx, call, sandbox.egress.take()).await?;
    let ran = Ran { call, decision, approval_id, ms };
    match result {
        Err(interrupt) => interrupted(cx, &ran, interrupt).await,
        Ok(Err(err)) => failed(cx, &ran, err).await,
        Ok(Ok(output)) => completed(cx, &ran, output).await,
    }
}

/// A call that ran: what allowed it and how long it took.
struct Ran<'r> {
    call: &'r ToolCall,
    decision: &'r Decision,
    approval_id: &'r str,
    ms: u64,
}

impl Ran<'_> {
    /// The audit record of its outcome.
    fn record(&self, cx: &CallContext<'_>, outcome: AuditOutcome) -> AuditRecord {
        AuditRecord::of(cx, self.call, self.decision, outcome).approval(self.approval_id).latency(self.ms)
    }

    /// Reports its failure (or interruption) as `tool_failed`.
    async fn report_failure(&self, cx: &CallContext<'_>, error: String) -> Result<(), StoreError> {
        cx.records
            .events
            .emit(EventKind::ToolFailed {
                call_id: self.call.id.clone(),
                tool: self.call.name.clone(),
                duration_ms: self.ms,
                error,
            })
            .await
            .map(|_| ())
    }
}

/// Says that `call`'s output was the first untrusted content the run saw.
async fn tainted_by(cx: &CallContext<'_>, call: &ToolCall) -> Result<(), StoreError> {
    let source = format!("the output of {} (call {})", call.name, call.id);
    cx.records.events.emit(EventKind::RunTainted { source }).await.map(|_| ())
}

/// A call stopped while running: its effect is unknown, and the run stops.
async fn interrupted(cx: &CallContext<'_>, ran: &Ran<'_>, interrupt: Interrupt) -> Result<CallResult, CallAbort> {
    let detail = format!("{}: stopped while running; its effect is unknown", interrupt.as_str());
    ran.record(cx, AuditOutcome::Unknown).detail(detail.clone()).write(cx).await?;
    ran.report_failure(cx, detail).await?;
    Err(CallAbort::Interrupted(interrupt))
}

/// A call whose tool failed: the model is told the (redacted, capped) error.
async fn failed(cx: &CallContext<'_>, ran: &Ran<'_>, err: ToolError) -> Result<CallResult, CallAbort> {
    let call = ran.call;
    // A failure's text can come from outside too (an MCP server's error message).
    if tool_output_taints(cx, call) && cx.state.taint() {
        tainted_by(cx, call).await?;
    }
    // Capped like any output: an error can be as long as a result (an MCP server's).
    let error = cap_output(cx, call, &cx.records.redactor.redact(&err.message), None);
    cx.state.remember_output(call, &error);
    ran.record(cx, AuditOutcome::Failed).detail(error.clone()).write(cx).await?;
    ran.report_failure(cx, error.clone()).await?;
    Ok(CallResult { content: format!("Error: {error}"), is_error: true })
}

/// A call that completed: its output redacted, filtered (SPEC T8) and capped, its change's
/// rollback registered, its hooks run, all recorded; the result for the model.
async fn completed(cx: &CallContext<'_>, ran: &Ran<'_>, output: ToolOutput) -> Result<CallResult, CallAbort> {
    let call = ran.call;
    // Output filters rewrite the redacted output; the audit keeps the digest of the unfiltered
    // output.
    let redacted = cx.records.redactor.redact(&output.content);
    let filtered = cx.tools.registry.filter_output(&call.name, &redacted);
    let was_filtered = filtered != redacted;
    let full = filtered.into_owned();
    let digest = steward_tools::rollback::sha256_hex(output.content.as_bytes());
    let filter_note = if was_filtered { ", output filters applied" } else { "" };
    let detail = format!("output sha256 {digest}, {} chars{filter_note}", output.content.chars().count());
    let rollback_token = match &output.compensation {
        Some(compensation) => register_rollback(cx, call, compensation).await?,
        None => String::new(),
    };
    // Queued: committed with the next decision or the run's final flush.
    ran.record(cx, AuditOutcome::Completed)
        .sandbox(&output.sandbox)
        .rollback(&rollback_token)
        .detail(detail)
        .queue(cx)
        .await?;
    for (path, _diff) in &output.changes {
        cx.records
            .events
            .emit(EventKind::PatchApplied {
                call_id: call.id.clone(),
                path: path.clone(),
                rollback_token: rollback_token.clone(),
            })
            .await?;
    }
    // A file the output quotes (a diff's sections) taints like reading it would.
    let quotes_untrusted = output.quoted_paths.iter().any(|p| cx.run.policy.reads_untrusted(p, false));
    if (tool_output_taints(cx, call) || quotes_untrusted) && cx.state.taint() {
        tainted_by(cx, call).await?;
    }
    let complete = output.full_content.as_deref().map(|text| cx.records.redactor.redact(text));
    let shown = cap_output(cx, call, &full, complete.as_deref());
    // Hooks run before the call is reported complete, so their reports reach the event (and
    // every front end) as well as the model.
    let mut hook_output = String::new();
    for (path, _diff) in &output.changes {
        hook_output.push_str(&run_hooks(cx, call, path).await?);
    }
    // Running language servers learn of the change, so their next answers are about the new text.
    if let Some(lsp) = cx.tools.registry.lsp()
        && !output.changes.is_empty()
    {
        let paths: Vec<String> = output.changes.iter().map(|(path, _)| path.clone()).collect();
        lsp.files_changed(&paths, cx.tools.context).await;
    }
    cx.state.remember_output(call, &shown);
    cx.state.remember_output(call, &hook_output);
    cx.records
        .events
        .emit(EventKind::ToolCompleted {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            duration_ms: ran.ms,
            output_chars: full.chars().count() as u64,
            output: shown.clone(),
            hook_output: hook_output.trim_start().to_string(),
        })
        .await?;
    Ok(CallResult { content: shown + &hook_output, is_error: false })
}

/// Runs the hooks a change fires (SPEC T9) and returns their reports for the model (empty
/// when none ran). Each hook run is an audit record; a failing hook is reported, not fatal.
async fn run_hooks(cx: &CallContext<'_>, call: &ToolCall, path: &str) -> Result<String, StoreError> {
    // A patch edits files: `edit` hooks (formatters) run for each file it changed too.
    let events: &[&str] = if call.name == "apply_patch" { &["apply_patch", "edit"] } else { &[call.name.as_str()] };
    let reports = crate::hooks::run_hooks(cx.tools.hooks, events, path, cx.tools.context).await;
    let mut text = String::new();
    for report in reports {
        let output = cx.records.redactor.redact(&report.output);
        let status = if report.ok { "passed" } else { "FAILED" };
        text.push_str(&format!(
            "\n\n[hook `{}` {status} after {} of `{path}`]\n{}",
            report.name,
            call.name,
            output.trim_end()
        ));
        let outcome = if report.ok { AuditOutcome::Completed } else { AuditOutcome::Failed };
        AuditRecord::new(cx, call, Rule::Hook.as_str(), 0.0, outcome)
            .action(format!("hook:{}", report.name))
            .input(serde_json::json!({"event": call.name, "path": path}))
            .sandbox(&report.sandbox)
            .detail(format!("hook {status}"))
            .queue(cx)
            .await?;
    }
    Ok(text)
}
