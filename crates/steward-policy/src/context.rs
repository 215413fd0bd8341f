//! Run context (SPEC C1 `context_rules`, `credential_scope`; C2 taint): what the gate knows
//! about the run rather than the call. Everything here only escalates: content never lowers
//! a decision and never raises authority.

use globset::{Glob, GlobMatcher};
use steward_protocol::{Decision, DecisionKind};

use crate::config::PolicyConfig;
use crate::data_flow::Carried;
use crate::error::PolicyError;
use crate::programs::is_name;

/// Default of `taint_escalation_risk`.
pub const DEFAULT_TAINT_ESCALATION_RISK: f64 = 0.5;

/// What the gate knows about the run a call belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GateContext {
    /// The run has read untrusted content (a web page, an e-mail, a PR body, MCP output).
    pub tainted: bool,
    /// Workspace paths the call touches that are not top-level path inputs (the files a
    /// patch changes): resolved, refused and matched by path rules like path inputs.
    pub paths: Vec<String>,
    /// Built-in actions the call performs under another name (a patch that deletes files
    /// `delete`s, one that adds files `create`s): checked against `blocked_actions`.
    pub actions: Vec<String>,
    /// The call can send data out of the machine (an MCP tool, a `[[tool]]` or
    /// `shell_command` with network access): a sink for [`GateContext::flow`].
    pub sink: bool,
    /// What the call's arguments carry from earlier in the run (tool output, a secret-shaped
    /// value), as [`Fingerprints::carried`](crate::Fingerprints::carried) found it.
    pub flow: Option<Carried>,
    /// The call is a sink that can reach any host (`network = true`, not a host list) and the
    /// run has already read something: what it sends cannot be told apart from what it read
    /// once it is encoded or split, so the call asks (`data_flow`) whatever allowed it.
    pub open_sink: bool,
}

struct ContextRuleC {
    name: String,
    tool: GlobMatcher,
    when_tainted: bool,
}

/// Compiled `context_rules`, taint threshold and `credential_scope`.
pub(crate) struct RunRules {
    rules: Vec<ContextRuleC>,
    threshold: f64,
    credentials: Vec<(GlobMatcher, Vec<String>)>,
}

fn matcher(rule: &str, glob: &str) -> Result<GlobMatcher, PolicyError> {
    Glob::new(glob).map(|g| g.compile_matcher()).map_err(|e| PolicyError::BadGlob {
        rule: rule.to_string(),
        glob: glob.to_string(),
        message: e.kind().to_string(),
    })
}

impl RunRules {
    /// Errors: [`PolicyError::BadGlob`], [`PolicyError::EmptyRuleName`],
    /// [`PolicyError::BadSetting`] (threshold outside `[0, 1]`, a credential that is not an
    /// environment variable name).
    pub(crate) fn new(config: &PolicyConfig) -> Result<RunRules, PolicyError> {
        let threshold = config.taint_escalation_risk.unwrap_or(DEFAULT_TAINT_ESCALATION_RISK);
        if !(0.0..=1.0).contains(&threshold) {
            return Err(PolicyError::BadSetting {
                setting: "taint_escalation_risk".into(),
                message: format!("{threshold} is not in [0, 1]"),
            });
        }
        let mut rules = Vec::new();
        for rule in &config.context_rules {
            if rule.name.trim().is_empty() {
                return Err(PolicyError::EmptyRuleName);
            }
            if rule.requires_human_approval {
                rules.push(ContextRuleC {
                    name: rule.name.clone(),
                    tool: matcher(&rule.name, &rule.tool)?,
                    when_tainted: rule.when_tainted,
                });
            }
        }
        let mut credentials = Vec::new();
        for (tool, names) in &config.credential_scope {
            if let Some(bad) = names.iter().find(|n| !is_name(n)) {
                return Err(PolicyError::BadSetting {
                    setting: "credential_scope".into(),
                    message: format!("`{bad}` (for `{tool}`) is not an environment variable name"),
                });
            }
            credentials.push((matcher("credential_scope", tool)?, names.clone()));
        }
        Ok(RunRules { rules, threshold, credentials })
    }

    /// Escalates a decision by what the run knows; deny is never changed, nothing is lowered.
    ///
    /// 1. `data_flow`: a sink whose arguments carry earlier output (or a secret-shaped value)
    ///    asks, whatever allowed it and whatever its risk; an ask for another reason becomes a
    ///    `data_flow` ask too (never answered by a remembered grant).
    /// 2. An allowed sink that can reach any host asks (`data_flow`) once the run has read
    ///    anything ([`GateContext::open_sink`]).
    /// 3. A matching context rule turns an allow into an ask.
    /// 4. `taint_escalation`: in a tainted run, an allow with risk at least the threshold asks,
    ///    except for a sink that writes nothing (`writes` false) and carries nothing (1 did
    ///    not apply): what such a call can do to the run's data is what it carries, and it
    ///    carries none of it; the argument check replaces run-level taint for it.
    pub(crate) fn escalate(&self, decision: Decision, tool: &str, writes: bool, ctx: &GateContext) -> Decision {
        if decision.decision == DecisionKind::Deny {
            return decision;
        }
        let risk = decision.risk;
        if ctx.sink
            && let Some(carried) = &ctx.flow
        {
            let mut reason = carried.describe(tool);
            if decision.decision == DecisionKind::Ask {
                reason.push_str(&format!(" (Also: {})", decision.reason()));
            }
            return Decision::new(DecisionKind::Ask, "data_flow", risk, reason);
        }
        if decision.decision != DecisionKind::Allow {
            return decision;
        }
        if ctx.sink && ctx.open_sink {
            return Decision::new(
                DecisionKind::Ask,
                "data_flow",
                risk,
                format!(
                    "`{tool}` can send to any host and this run has already read data; what it sends cannot be \
                     checked once it is encoded or split, so it needs approval. Give it a host list \
                     (`network = [\"host\", …]`) to let it run unasked."
                ),
            );
        }
        for rule in &self.rules {
            if (!rule.when_tainted || ctx.tainted) && rule.tool.is_match(tool) {
                let why = if rule.when_tainted { " in a run that read untrusted content" } else { "" };
                return Decision::new(
                    DecisionKind::Ask,
                    rule.name.clone(),
                    risk,
                    format!("Context rule `{}` requires human approval for `{tool}`{why}.", rule.name),
                );
            }
        }
        let checked_sink = ctx.sink && !writes;
        if ctx.tainted && risk >= self.threshold && !checked_sink {
            return Decision::new(
                DecisionKind::Ask,
                "taint_escalation",
                risk,
                format!(
                    "This run has read untrusted content (MCP output, output of a tool with network access, a \
                     web page, a PR body or a file under untrusted_paths), so \
                     `{tool}` (risk {risk:.2}, threshold {:.2}) needs approval.",
                    self.threshold
                ),
            );
        }
        decision
    }

    /// Sorted, deduplicated environment variable names `tool` may receive.
    pub(crate) fn credentials_for(&self, tool: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .credentials
            .iter()
            .filter(|(glob, _)| glob.is_match(tool))
            .flat_map(|(_, names)| names.iter().cloned())
            .collect();
        names.sort();
        names.dedup();
        names
    }
}
