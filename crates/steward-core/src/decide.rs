//! The decision on one tool call before any approval: the policy gate over the tool's facts
//! (risk, paths it touches, actions it implies), then Steward's own rule that a change which
//! cannot be undone never goes ahead without the owner (SPEC C5). The orchestrator and
//! `steward policy check` both decide through here, so a check shows what a run would do
//! (remembered grants aside: they answer an `ask`, they do not change it).

use steward_policy::{Fingerprints, GateContext, Policy, Workspace};
use steward_protocol::{ApprovalTtl, Decision, DecisionKind, ToolCall};

use steward_tools::ToolRegistry;

/// Decides `call` against `policy` in `workspace`; `tainted` says whether untrusted output
/// already reached the run, `seen` holds the fingerprints of the run's earlier outputs (what a
/// sink's arguments are checked against, `crate::data_flow`; `None` when that check is off,
/// leaving run-level taint alone). Never fails: an unknown tool or
/// bad arguments give a `deny`.
pub fn decide(
    policy: &Policy,
    tools: &ToolRegistry,
    call: &ToolCall,
    workspace: &Workspace,
    tainted: bool,
    seen: Option<&Fingerprints>,
) -> Decision {
    let tool = tools.get(&call.name);
    let sink = seen.is_some() && tool.is_some_and(|t| crate::data_flow::is_sink(t.as_ref()));
    let context = GateContext {
        tainted,
        paths: tool.map(|t| t.target_paths(&call.arguments, workspace)).unwrap_or_default(),
        actions: tool.map(|t| t.implied_actions(&call.arguments)).unwrap_or_default(),
        sink,
        open_sink: sink
            && tool.is_some_and(|t| t.reaches_any_host())
            && seen.is_some_and(|seen| !seen.is_empty() || seen.overflowed()),
        flow: seen.filter(|_| sink).and_then(|seen| {
            let tool = tool?;
            seen.carried(&crate::data_flow::payload(tool.as_ref(), &call.arguments, workspace))
        }),
    };
    let mut decision = policy.decide_in(tool.map(|t| t.spec()), call, workspace, &context);
    // A tool a model wrote is allowed unasked only by a rule naming it exactly.
    if decision.decision == DecisionKind::Allow
        && let Some(tool) = tool
        && tool.is_generated()
        && !policy.names_exactly(&decision.rule, &call.name)
    {
        let reason = format!(
            "`{}` was written by a model; only a rule naming it exactly (`tool = \"{}\"`) allows it unasked, not `{}`",
            call.name, call.name, decision.rule
        );
        let mut ask = Decision::new(DecisionKind::Ask, "generated_tool", decision.risk, reason);
        ask.risk_factors = decision.risk_factors;
        ask.approval_ttl = decision.approval_ttl.take();
        decision = ask;
    }
    // What the tool itself refuses by its arguments (an MCP argument naming a secret file) is
    // a denial here, before any approval or execution, for the run and `steward policy check`.
    if decision.decision != DecisionKind::Deny
        && let Some(tool) = tool
        && let Some(refused) = tool.refusal(&call.arguments, workspace)
    {
        let rule = refused.rule.as_deref().unwrap_or("tool_refused");
        let mut deny = Decision::new(DecisionKind::Deny, rule, decision.risk, refused.message);
        deny.risk_factors = decision.risk_factors;
        return deny;
    }
    // A `[[tool]]`'s own `approval_ttl_seconds` counts like a rule's: the shorter wins.
    if let Some(tool) = tool
        && let Some(seconds) = tool.approval_ttl_seconds()
    {
        let own = ApprovalTtl { seconds, source: format!("tool `{}`", tool.spec().name) };
        decision.approval_ttl = ApprovalTtl::shorter(decision.approval_ttl.take(), Some(own));
    }
    match tool {
        Some(tool) if decision.decision == DecisionKind::Allow && tool.spec().writes && !tool.compensable() => {
            let (rule, reason) = if tool.compensation_declared() {
                (
                    "compensation_untested",
                    format!(
                        "the compensation of `{}` has not passed `steward tools test-compensation` for its current definition, so the change needs approval",
                        tool.spec().name
                    ),
                )
            } else {
                ("no_compensation", "this change cannot be rolled back, so it needs approval".to_string())
            };
            let mut ask = Decision::new(DecisionKind::Ask, rule, decision.risk, reason);
            ask.risk_factors = decision.risk_factors;
            ask.approval_ttl = decision.approval_ttl;
            ask
        }
        _ => decision,
    }
}
