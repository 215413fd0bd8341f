//! The gate (SPEC C1, C2): turns a proposed tool call into allow / ask / deny with the rule
//! that decided. Pure and synchronous; table-driven tests in `tests/`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use globset::{Glob, GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};
use serde_json::Value;
use steward_protocol::{ApprovalTtl, Decision, DecisionKind, RiskLevel, ToolCall, ToolSpec};

use crate::argv_rule::ArgvRule;
use crate::config::PolicyConfig;
use crate::context::{GateContext, RunRules};
use crate::error::PolicyError;
use crate::paths::{Access, Workspace};
use crate::risk::{RiskRules, Touches};
use crate::shell::{self, SimpleCommand};

/// Name of the shell tool whose calls are judged by `argv` rules (SPEC T4).
pub const SHELL_TOOL: &str = "shell_command";

struct CompiledRule {
    name: String,
    tool: GlobMatcher,
    /// The tool pattern names MCP tools explicitly (`SERVER__…`).
    names_mcp: bool,
    /// The tool pattern as written.
    pattern: String,
    paths: Option<GlobSet>,
    decision: DecisionKind,
    approval_ttl: Option<u64>,
}

/// The compiled policy. Thread-safe; JSON Schemas are compiled once per tool and cached.
pub struct Policy {
    default: Option<DecisionKind>,
    allowed: GlobSet,
    /// Per `allowed_actions` pattern: whether it names MCP tools explicitly (contains `__`).
    allowed_names_mcp: Vec<bool>,
    /// `allowed_actions` as written.
    allowed_patterns: Vec<String>,
    blocked: GlobSet,
    rules: Vec<CompiledRule>,
    pub(crate) argv_rules: Vec<ArgvRule>,
    run_rules: RunRules,
    /// `untrusted_paths`, compiled, with each glob's literal directory prefix.
    untrusted: crate::untrusted::UntrustedPaths,
    /// `[policy.risk]`, compiled.
    risk: RiskRules,
    /// Some rule sets `approval_ttl_seconds`.
    any_ttl: bool,
    /// Tool name → (schema it was compiled from, validator). Bounded by the registry size:
    /// only specs of known tools reach it.
    validators: Mutex<HashMap<String, (Value, Arc<jsonschema::Validator>)>>,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy").field("default", &self.default).field("rules", &self.rules.len()).finish()
    }
}

/// Starts building, once per process and on a thread of its own, the validator of the
/// meta-schema that built-in tools' input schemas are checked against when first compiled for
/// an argument check (most of a process's first check, see [`crate::schema`]). Called while a
/// run waits for a model's reply, it leaves the first step. Calling it again does nothing; if
/// the thread cannot be started, the first check builds it as before.
pub fn warm_up() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let _ = std::thread::Builder::new().name("schema-warm-up".into()).spawn(crate::schema::warm_up);
    });
}

impl Policy {
    /// Compiles a configuration and checks every rule's `match` / `not_match` examples.
    /// Errors: [`PolicyError::BadGlob`] naming the rule (or list) with the bad glob,
    /// [`PolicyError::EmptyRuleName`], [`PolicyError::BadArgvRule`], [`PolicyError::Example`]
    /// naming the rule and the example, [`PolicyError::BadSetting`].
    pub fn new(config: &PolicyConfig) -> Result<Policy, PolicyError> {
        let allowed = glob_set("allowed_actions", &config.allowed_actions)?;
        let blocked = glob_set("blocked_actions", &config.blocked_actions)?;
        let mut rules = Vec::with_capacity(config.rules.len());
        let mut argv_rules = Vec::new();
        for rule in &config.rules {
            if rule.name.trim().is_empty() {
                return Err(PolicyError::EmptyRuleName);
            }
            if rule.approval_ttl_seconds == Some(0) {
                return Err(PolicyError::BadSetting {
                    setting: format!("rule `{}` approval_ttl_seconds", rule.name),
                    message: "must be at least 1 second".into(),
                });
            }
            let tool = Glob::new(&rule.tool).map_err(|e| bad_glob(&rule.name, &rule.tool, &e))?.compile_matcher();
            if !rule.argv.is_empty() || !rule.matches.is_empty() || !rule.not_match.is_empty() {
                if !tool.is_match(SHELL_TOOL) || !rule.path.is_empty() {
                    return Err(PolicyError::BadArgvRule {
                        rule: rule.name.clone(),
                        message: format!("an `argv` rule needs a `tool` matching `{SHELL_TOOL}` and no `path`"),
                    });
                }
                argv_rules.push(ArgvRule::new(rule)?);
                continue;
            }
            let paths = if rule.path.is_empty() { None } else { Some(glob_set(&rule.name, &rule.path)?) };
            let names_mcp = rule.tool.contains("__");
            rules.push(CompiledRule {
                name: rule.name.clone(),
                tool,
                names_mcp,
                pattern: rule.tool.clone(),
                paths,
                decision: rule.decision,
                approval_ttl: rule.approval_ttl_seconds,
            });
        }
        Ok(Policy {
            default: config.default,
            allowed,
            allowed_names_mcp: config.allowed_actions.iter().map(|p| p.contains("__")).collect(),
            allowed_patterns: config.allowed_actions.clone(),
            blocked,
            rules,
            argv_rules,
            run_rules: RunRules::new(config)?,
            untrusted: crate::untrusted::UntrustedPaths::new(&config.untrusted_paths)?,
            risk: RiskRules::new(&config.risk)?,
            any_ttl: config.rules.iter().any(|r| r.approval_ttl_seconds.is_some()),
            validators: Mutex::new(HashMap::new()),
        })
    }

    /// The policy with every `argv` rule matched as written only, without reading a command's
    /// options as a set (see [`RuleConfig`](crate::RuleConfig)). Weaker than
    /// [`Policy::new`]'s policy: it exists so that tests can show their commands need the
    /// option reading and `steward bench` can compare its cost; no configuration reaches it.
    #[doc(hidden)]
    pub fn without_option_reading_for_tests(mut self) -> Policy {
        for rule in &mut self.argv_rules {
            rule.drop_option_reading();
        }
        self
    }

    /// [`Policy::decide_in`] for an untainted run.
    pub fn decide(&self, spec: Option<&ToolSpec>, call: &ToolCall, workspace: &Workspace) -> Decision {
        self.decide_in(spec, call, workspace, &GateContext::default())
    }

    /// Decides one call in a run described by `ctx`: the call's own decision (see below),
    /// then escalations that depend on the run. A sink call (`ctx.sink`) whose arguments carry
    /// earlier output or a secret-shaped value (`ctx.flow`) asks, whatever allowed it
    /// (`data_flow`). An allowed call of a tool matched by a `context_rules` entry with
    /// `requires_human_approval` (only in tainted runs when `when_tainted`) asks, named by
    /// that rule; otherwise, in a tainted run, an allowed call whose risk is at least
    /// `taint_escalation_risk` asks (`taint_escalation`), unless it is a sink that writes
    /// nothing and carries nothing. Deny is never changed, and nothing is lowered.
    pub fn decide_in(
        &self,
        spec: Option<&ToolSpec>,
        call: &ToolCall,
        workspace: &Workspace,
        ctx: &GateContext,
    ) -> Decision {
        let decision = self.decide_call(spec, call, workspace, ctx);
        let (factors, ttl) = (decision.risk_factors.clone(), decision.approval_ttl.clone());
        let tool = spec.map_or(call.name.as_str(), |s| s.name.as_str());
        // Escalations keep the call's score and expiry: they change the decision only.
        let mut decision = self.run_rules.escalate(decision, tool, spec.is_none_or(|s| s.writes), ctx);
        decision.risk_factors = factors;
        decision.approval_ttl = ttl;
        decision
    }

    /// Names of the environment variables `tool` may receive (`credential_scope`), sorted;
    /// empty when no entry matches.
    pub fn credential_scope(&self, tool: &str) -> Vec<String> {
        self.run_rules.credentials_for(tool)
    }

    /// True when reading the workspace-relative path `rel` (`""` for the root) may read
    /// content under `untrusted_paths`: `rel` or a parent matches, or, for a directory
    /// (`is_dir`), a match may lie beneath it.
    pub fn reads_untrusted(&self, rel: &str, is_dir: bool) -> bool {
        self.untrusted.reads(rel, is_dir)
    }

    /// The configured default, for the shell judge.
    pub(crate) fn configured_default(&self) -> Option<DecisionKind> {
        self.default
    }

    /// The call's own decision. `spec` is `None` for an unknown tool.
    ///
    /// Order: unknown tool → deny `unknown_tool`; arguments not an object or not valid
    /// against the tool's JSON Schema → deny `invalid_arguments`; each path input resolved
    /// in `workspace` (write access for writing tools) → deny with the path rule
    /// (`workspace_boundary`, `secret_path`, …); `blocked_actions` → deny; matching
    /// `[[policy.rule]]`s → the strictest wins, named by the rule; `allowed_actions` → allow;
    /// then the configured `default` (rule `default`) or by risk level (`default:<risk>`:
    /// safe/low allow, medium/high/dangerous ask). The risk score and its factors come from
    /// `[policy.risk]` (see [`RiskConfig`](crate::RiskConfig)); an unknown tool scores 1. The
    /// per-action approval expiry is the shortest `approval_ttl_seconds` of the rules that
    /// match the call.
    ///
    /// `shell_command` (SPEC T4) differs after `blocked_actions`: its `command` string is
    /// judged by [`Policy::judge_command`]; tool rules without `argv` may only make it
    /// stricter (ask, deny), and neither `allowed_actions` nor an allowing `default` apply.
    fn decide_call(
        &self,
        spec: Option<&ToolSpec>,
        call: &ToolCall,
        workspace: &Workspace,
        ctx: &GateContext,
    ) -> Decision {
        let Some(spec) = spec else {
            // `shell_command` is only registered when the shell is on: say so, and how to turn it on.
            let reason = if call.name == SHELL_TOOL {
                format!(
                    "`{SHELL_TOOL}` is off: set `[shell] enabled = true` in the user config \
                     (~/.config/steward/config.toml; a workspace's .steward/ config counts only after `steward \
                     trust`); see docs/shell-commands.md."
                )
            } else {
                format!("There is no tool named `{}`.", call.name)
            };
            return Decision::new(DecisionKind::Deny, "unknown_tool", 1.0, reason);
        };
        let (extra_paths, extra_actions) = (&ctx.paths, &ctx.actions);
        let commands: Vec<SimpleCommand> = match call.arguments.get("command").and_then(Value::as_str) {
            Some(line) if spec.name == SHELL_TOOL => shell::split_in(line, Some(workspace.root())).unwrap_or_default(),
            _ => Vec::new(),
        };
        let score = |paths: &[String]| {
            let touches = Touches { paths, actions: extra_actions, commands: &commands, tainted: ctx.tainted };
            self.risk.score(spec, &call.arguments, &touches)
        };
        let refused = |rule: &str, reason: String| {
            let (risk, factors) = score(&[]);
            let mut decision = Decision::new(DecisionKind::Deny, rule, risk, reason);
            decision.risk_factors = factors;
            decision
        };
        if let Err(message) = self.validate_arguments(spec, &call.arguments) {
            return refused("invalid_arguments", format!("The arguments of `{}` are invalid: {message}", spec.name));
        }
        let paths = match self.resolve_paths(spec, &call.arguments, extra_paths, workspace) {
            Ok(paths) => paths,
            Err((rule, reason)) => return refused(rule, reason),
        };
        let (risk, factors) = score(&paths);
        let mut decision = self.decide_resolved(spec, call, workspace, &paths, extra_actions, risk);
        decision.risk_factors = factors;
        decision.approval_ttl = self.approval_ttl(spec, &paths, &commands);
        decision
    }

    /// The shortest `approval_ttl_seconds` among the rules that match a call of `spec`
    /// touching `paths` (a path rule when any path matches), or running `commands` (an `argv`
    /// rule when it matches one of them).
    fn approval_ttl(&self, spec: &ToolSpec, paths: &[String], commands: &[SimpleCommand]) -> Option<ApprovalTtl> {
        if !self.any_ttl {
            return None;
        }
        let mut best = None;
        for rule in &self.rules {
            let Some(seconds) = rule.approval_ttl else { continue };
            let paths_ok = rule.paths.as_ref().is_none_or(|globs| paths.iter().any(|p| globs.is_match(p)));
            if rule.tool.is_match(&spec.name) && paths_ok {
                let ttl = ApprovalTtl { seconds, source: format!("policy rule `{}`", rule.name) };
                best = ApprovalTtl::shorter(best, Some(ttl));
            }
        }
        for cmd in commands {
            let Some(view) = crate::argv_rule::CommandView::new(cmd) else { continue };
            for rule in &self.argv_rules {
                let Some(seconds) = rule.approval_ttl else { continue };
                if rule.matches(&view).is_some() {
                    let ttl = ApprovalTtl { seconds, source: format!("policy rule `{}`", rule.name) };
                    best = ApprovalTtl::shorter(best, Some(ttl));
                }
            }
        }
        best
    }

    /// The decision of a call of `spec` whose arguments are valid and whose `paths` resolved.
    fn decide_resolved(
        &self,
        spec: &ToolSpec,
        call: &ToolCall,
        workspace: &Workspace,
        paths: &[String],
        extra_actions: &[String],
        risk: f64,
    ) -> Decision {
        let deny = |rule: &str, reason: String| Decision::new(DecisionKind::Deny, rule, risk, reason);
        if self.blocked.is_match(&spec.name) {
            return deny("blocked_actions", format!("`{}` is in blocked_actions.", spec.name));
        }
        if let Some(action) = extra_actions.iter().find(|a| self.blocked.is_match(a.as_str())) {
            return deny(
                "blocked_actions",
                format!("`{}` would {action} a file, and `{action}` is in blocked_actions.", spec.name),
            );
        }
        if spec.name == SHELL_TOOL {
            let Some(line) = call.arguments.get("command").and_then(Value::as_str) else {
                return deny("invalid_arguments", format!("`{SHELL_TOOL}` needs a string `command`."));
            };
            let judged = self.judge_line(line, workspace, risk);
            return match self.rule_decision(spec, paths, risk) {
                Some(rule) if rule.decision > judged.decision => rule,
                _ => judged,
            };
        }
        if let Some(decision) = self.rule_decision(spec, paths, risk) {
            return decision;
        }
        if self.allowed.matches(&spec.name).into_iter().any(|i| allows_name(self.allowed_names_mcp[i], &spec.name)) {
            return Decision::new(
                DecisionKind::Allow,
                "allowed_actions",
                risk,
                format!("`{}` is in allowed_actions.", spec.name),
            );
        }
        if let Some(kind) = self.default {
            return Decision::new(
                kind,
                "default",
                risk,
                format!("The configured default for `{}` is {}.", spec.name, kind.as_str()),
            );
        }
        let kind = match spec.risk {
            RiskLevel::Safe | RiskLevel::Low => DecisionKind::Allow,
            RiskLevel::Medium | RiskLevel::High | RiskLevel::Dangerous => DecisionKind::Ask,
        };
        let reason = match kind {
            DecisionKind::Allow => {
                format!("`{}` is a {}-risk tool, allowed by default.", spec.name, spec.risk.as_str())
            }
            _ => format!("`{}` is a {}-risk tool and needs approval by default.", spec.name, spec.risk.as_str()),
        };
        Decision::new(kind, format!("default:{}", spec.risk.as_str()), risk, reason)
    }

    /// Validates `args` against the tool's schema, compiling it on first use.
    fn validate_arguments(&self, spec: &ToolSpec, args: &Value) -> Result<(), InvalidArguments> {
        if !args.is_object() {
            return Err(InvalidArguments::NotAnObject);
        }
        let validator = self.validator(spec)?;
        if validator.is_valid(args) {
            return Ok(());
        }
        let messages: Vec<String> = validator
            .iter_errors(args)
            .take(3)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() { e.to_string() } else { format!("{e} (at {at})") }
            })
            .collect();
        if messages.is_empty() { Ok(()) } else { Err(InvalidArguments::Mismatch(messages)) }
    }

    fn validator(&self, spec: &ToolSpec) -> Result<Arc<jsonschema::Validator>, InvalidArguments> {
        let mut cache = self.validators.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((schema, validator)) = cache.get(&spec.name)
            && *schema == spec.input_schema
        {
            return Ok(Arc::clone(validator));
        }
        let validator =
            Arc::new(crate::schema::compile(&spec.input_schema).map_err(|e| InvalidArguments::Schema(Box::new(e)))?);
        cache.insert(spec.name.clone(), (spec.input_schema.clone(), Arc::clone(&validator)));
        Ok(validator)
    }

    /// Resolves every present path input; returns the workspace-relative paths, or the
    /// refusing rule and reason.
    fn resolve_paths(
        &self,
        spec: &ToolSpec,
        args: &Value,
        extra: &[String],
        workspace: &Workspace,
    ) -> Result<Vec<String>, (&'static str, String)> {
        let access = if spec.writes { Access::Write } else { Access::Read };
        let mut out = Vec::new();
        for text in extra {
            match workspace.resolve(text, access) {
                Ok(path) => out.push(path.rel),
                Err(err) => return Err((err.rule(), format!("Refused `{text}`: {err}."))),
            }
        }
        for name in &spec.path_inputs {
            let values: Vec<&Value> = match args.get(name) {
                None | Some(Value::Null) => continue,
                Some(Value::Array(items)) => items.iter().collect(),
                Some(other) => vec![other],
            };
            for value in values {
                let Some(text) = value.as_str() else {
                    return Err((
                        "invalid_arguments",
                        format!("The path input `{name}` of `{}` must be a string.", spec.name),
                    ));
                };
                match workspace.resolve(text, access) {
                    Ok(path) => out.push(path.rel),
                    Err(err) => return Err((err.rule(), format!("Refused `{name}`: {err}."))),
                }
            }
        }
        Ok(out)
    }

    /// True when the decision made by `rule` (a [`Decision::rule`]) names `tool` exactly: a
    /// `[[policy.rule]]` of that name whose `tool` is the tool's name itself, or
    /// `allowed_actions` listing the name itself. A glob, a default or a risk level never
    /// does. A tool a model wrote is allowed unasked only this way.
    pub fn names_exactly(&self, rule: &str, tool: &str) -> bool {
        if rule == "allowed_actions" {
            return self.allowed_patterns.iter().any(|p| p == tool);
        }
        self.rules.iter().any(|r| r.name == rule && r.pattern == tool)
    }

    /// The strictest matching `[[policy.rule]]`, if any (first one listed among equals).
    fn rule_decision(&self, spec: &ToolSpec, paths: &[String], risk: f64) -> Option<Decision> {
        let mut best: Option<&CompiledRule> = None;
        for rule in &self.rules {
            if !rule.tool.is_match(&spec.name)
                || (rule.decision == DecisionKind::Allow && !allows_name(rule.names_mcp, &spec.name))
            {
                continue;
            }
            // A rule that allows must cover every path the call touches; one that asks or
            // denies applies as soon as any path matches.
            if let Some(globs) = &rule.paths {
                let covered = match rule.decision {
                    DecisionKind::Allow => !paths.is_empty() && paths.iter().all(|p| globs.is_match(p)),
                    _ => paths.iter().any(|p| globs.is_match(p)),
                };
                if !covered {
                    continue;
                }
            }
            if best.is_none_or(|b| rule.decision > b.decision) {
                best = Some(rule);
            }
        }
        let rule = best?;
        let verb = match rule.decision {
            DecisionKind::Allow => "allows",
            DecisionKind::Ask => "requires approval for",
            DecisionKind::Deny => "denies",
        };
        Some(Decision::new(
            rule.decision,
            rule.name.clone(),
            risk,
            format!("Policy rule `{}` {verb} `{}`.", rule.name, spec.name),
        ))
    }
}

fn bad_glob(rule: &str, glob: &str, err: &globset::Error) -> PolicyError {
    PolicyError::BadGlob { rule: rule.to_string(), glob: glob.to_string(), message: err.kind().to_string() }
}

/// A set of globs; `/` is matched only literally (`*` stays within one path component).
fn glob_set(rule: &str, globs: &[String]) -> Result<GlobSet, PolicyError> {
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        let compiled = GlobBuilder::new(glob).literal_separator(true).build().map_err(|e| bad_glob(rule, glob, &e))?;
        builder.add(compiled);
    }
    builder.build().map_err(|e| bad_glob(rule, &globs.join(", "), &e))
}

/// Whether an allowing pattern may allow `name`: MCP tools (`SERVER__TOOL`) are allowed only by
/// patterns that name them as such (contain `__`), so `git_*` never allows a server named `git`.
fn allows_name(pattern_names_mcp: bool, name: &str) -> bool {
    pattern_names_mcp || !name.contains("__")
}

/// Why a call's arguments do not pass its tool's input schema (the reason the model is told).
#[derive(Debug, thiserror::Error)]
enum InvalidArguments {
    /// Arguments are JSON, but not an object.
    #[error("the arguments must be a JSON object")]
    NotAnObject,
    /// The tool's schema itself is not a valid JSON Schema.
    #[error("the tool's own schema does not compile ({0})")]
    Schema(Box<jsonschema::ValidationError<'static>>),
    /// Up to three places where the arguments do not match, each with its JSON pointer.
    #[error("{}", .0.join("; "))]
    Mismatch(Vec<String>),
}
