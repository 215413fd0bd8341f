//! Re-deciding the recorded tool calls of a past run under the current policy (`steward policy
//! replay`): nothing runs; each call is judged by [`crate::decide::decide`], the function a
//! run uses, with the run's state (taint, earlier outputs) rebuilt from its events as it was
//! when the call was proposed.

use std::collections::HashMap;

use steward_policy::{Fingerprints, Policy, Workspace};
use steward_protocol::{Decision, DecisionKind, Event, EventKind, ToolCall};

use steward_tools::ToolRegistry;

/// What the run decided about one call, from its events.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// allow, ask (asked the owner, or a remembered grant answered the ask) or deny.
    pub decision: DecisionKind,
    /// The deciding rule as recorded (`allowed_by` for an allow).
    pub rule: String,
}

/// One recorded call, judged again.
#[derive(Debug, Clone, PartialEq)]
pub struct Replayed {
    /// The call as recorded: id, tool and arguments (redacted when they were recorded).
    pub call: ToolCall,
    /// What the run decided.
    pub recorded: Recorded,
    /// What the current policy decides, in the run's state at that point.
    pub now: Decision,
}

impl Replayed {
    /// True when the current decision differs from the recorded one (allow → ask, ask →
    /// deny, deny → allow, …).
    pub fn changed(&self) -> bool {
        self.recorded.decision != self.now.decision
    }
}

/// A recorded call that was not judged again, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    /// The call as recorded.
    pub call: ToolCall,
    /// Why it was not judged again.
    pub why: String,
}

/// Every call of one run judged again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunReplay {
    /// Calls the gate decided during the run, in order, each judged again.
    pub calls: Vec<Replayed>,
    /// Calls that could not be judged again.
    pub skipped: Vec<Skipped>,
}

/// Judges the tool calls recorded in `events` (one run's, in order) again with `policy` and
/// `tools` in `workspace`. A call counts when the run's gate decided it: refused
/// (`tool_denied`), asked about (`tool_approval_required`) or let run (`tool_started`); a
/// repeat that was not judged (`tool_call_repeated`) is left out. The run's taint is rebuilt
/// as it grew: after a call that completed or failed, the run is tainted when that tool's
/// output taints under the current configuration (MCP and networked tools, reads under
/// `untrusted_paths`); with `data_flow`, outputs as recorded are fingerprinted for the
/// argument-level check. MCP tools (`SERVER__TOOL`) are skipped: their servers are not started.
/// Arguments are judged as recorded, that is redacted: a call whose recorded arguments were
/// redacted may be judged on the redaction marker.
pub fn replay_run(
    policy: &Policy,
    tools: &ToolRegistry,
    workspace: &Workspace,
    events: &[Event],
    data_flow: bool,
) -> RunReplay {
    let mut out = RunReplay::default();
    let mut tainted = false;
    let mut seen = data_flow.then(Fingerprints::new);
    // Proposed calls not decided yet: call id → (call, decision now).
    let mut pending: HashMap<String, (ToolCall, Option<Decision>)> = HashMap::new();
    let mut decided: HashMap<String, ToolCall> = HashMap::new();
    for event in events {
        match &event.kind {
            EventKind::ToolRequested { call_id, tool, arguments } => {
                let call = ToolCall { id: call_id.clone(), name: tool.clone(), arguments: arguments.clone() };
                let now = (tools.get(tool).is_some() || !tool.contains("__"))
                    .then(|| crate::decide::decide(policy, tools, &call, workspace, tainted, seen.as_ref()));
                pending.insert(call_id.clone(), (call, now));
            }
            EventKind::ToolCallRepeated { call_id, .. } => {
                pending.remove(call_id);
            }
            EventKind::ToolDenied { call_id, rule, .. } => {
                settle(&mut out, &mut pending, &mut decided, call_id, DecisionKind::Deny, rule);
            }
            EventKind::ToolApprovalRequired { call_id, rule, .. } => {
                settle(&mut out, &mut pending, &mut decided, call_id, DecisionKind::Ask, rule);
            }
            EventKind::ToolStarted { call_id, allowed_by, .. } => {
                // Started after an approval: already settled as an ask. A remembered grant
                // answered an ask without asking.
                let kind = if allowed_by.starts_with("grant ") { DecisionKind::Ask } else { DecisionKind::Allow };
                settle(&mut out, &mut pending, &mut decided, call_id, kind, allowed_by);
            }
            EventKind::ToolCompleted { call_id, output: text, .. }
            | EventKind::ToolFailed { call_id, error: text, .. } => {
                let Some(call) = decided.get(call_id) else { continue };
                if let Some(seen) = seen.as_mut() {
                    seen.record(&call.name, &call.id, text);
                }
                if let Some(tool) = tools.get(&call.name)
                    && (tool.spec().untrusted_output
                        || crate::data_flow::reads_untrusted(policy, workspace, tool.as_ref(), &call.arguments))
                {
                    tainted = true;
                }
            }
            _ => {}
        }
    }
    out
}

/// Records the run's decision on `call_id`, once (the first decision counts).
fn settle(
    out: &mut RunReplay,
    pending: &mut HashMap<String, (ToolCall, Option<Decision>)>,
    decided: &mut HashMap<String, ToolCall>,
    call_id: &str,
    kind: DecisionKind,
    rule: &str,
) {
    let Some((call, now)) = pending.remove(call_id) else { return };
    decided.insert(call_id.to_string(), call.clone());
    match now {
        Some(now) => {
            out.calls.push(Replayed { call, recorded: Recorded { decision: kind, rule: rule.to_string() }, now })
        }
        None => {
            out.skipped.push(Skipped { call, why: "an MCP tool: its server is not started to judge it again".into() })
        }
    }
}
