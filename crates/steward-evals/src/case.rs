//! Eval cases in Steward's own format (TOML), and the shape every other format is mapped to.
//!
//! A case file holds one `[[case]]` table per case:
//!
//! ```toml
//! [[case]]
//! name = "tool_approval_required"         # unique; `--case NAME` selects it
//! task = "Request an approval-gated shell command"
//!
//! # The planner: a built-in fake scenario by name (see `scenarios::BUILTIN`) …
//! scenario = "tool_approval_required"
//! # … or inline fake-provider rounds (the format of `steward run --provider fake --scenario`):
//! # [[case.round]]
//! # text = "Reading."
//! # [[case.round.tool_call]]
//! # name = "read"
//! # arguments = { path = "note.txt" }
//! # … or neither: a real provider, from the case or from `steward eval --provider/--model/--base-url`
//! # (the CLI wins); such a case's expectations must suit a real model.
//! # provider = "llamacpp"                 # a preset or a [providers.NAME] of `config`
//! # model = "local-model"
//! # base_url = "http://127.0.0.1:8080/v1"
//! # tool_choice = "git_status"            # first planner call only: auto | none | required | TOOL
//! # max_tokens = 200
//!
//! approvals = "approve"                   # approve | reject | none (default) | ignore,
//!                                         # or per tool: { shell_command = "approve" } (others: none)
//! cancel_after_ms = 25                    # optional: cancel the run this long after it starts
//! mode = "roles"                          # optional: loop (default) | roles (the role pipeline)
//! fail_roles = []                         # roles whose model cannot be reached (implies roles)
//! memory = ["My editor is helix."]        # facts remembered for the owner before the run
//! requires = []                           # capabilities the case needs (unknown ones: skipped)
//! after = "celsius"                       # run that case first, same workspace and state; its
//!                                         # task and answer are this run's conversation history
//! # [[case.generator_round]]              # scripted generator of generated tools (round format)
//! # text = "{\"description\": …, \"input_schema\": …, \"source\": …}"
//!
//! [case.files]                            # extra workspace files, committed with note.txt
//! "docs/a.md" = "hello\n"
//!
//! [case.config]                           # the case's own configuration (Steward's config schema)
//! shell = { enabled = true }
//! limits = { max_rounds = 2 }
//!
//! [case.expect]
//! status = "completed"                    # completed | failed | cancelled
//! stop_reason = "answered"                # answered | max_rounds | max_tool_calls | timeout | …
//! final_contains = ["implementation"]     # substrings of the final text
//! events = ["tool_approval_required", "tool_approved|tool_rejected"]  # all present (order ignored);
//!                                         # `a|b` is satisfied by either
//! forbidden_events = ["tool_started"]     # none of these may occur
//! no_secret_leak = true                   # default true: S2 scan of every output of the run
//! patch_applied = true                    # a `patch_applied` event occurred (or not)
//! error_class = "missing_api_key"         # the run's error class
//! min_rounds = 1                          # planner calls, inclusive bounds
//! max_rounds = 2
//! tools_used = ["shell_command"]          # tools that ran (a `tool_started` event)
//! tools_not_used = ["apply_patch"]        # tools that never ran
//! tool_output_contains = ["37.8"]         # substrings of some completed call's output
//! rollback = true                         # every applied change left a rollback record
//! model_saw = ["helix"]                   # substrings of the planner's first request (fake provider)
//! facts = ["My editor is helix."]         # the owner's remembered facts after the run
//! [case.expect.files]                     # workspace file contents after the run
//! "note.txt" = "new\n"
//! ```
//!
//! Every case runs in a fresh temporary git repository holding `note.txt` = `old\n` (committed)
//! plus `[case.files]`, with its own state directory and configuration: the user's
//! `~/.config/steward` is never read.

use std::collections::BTreeMap;

use serde::Deserialize;
use steward_provider::fake::Round;
use steward_store::RunStatus;

/// How the harness answers approval requests for one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalAction {
    /// Approve once, as the run's owner, with the decision token.
    Approve,
    /// Reject as the run's owner.
    Reject,
    /// Nobody can answer: the gate denies with `no_approver` (Steward's `NoApprover`).
    #[default]
    None,
    /// Never answer: the request expires after `policy.approval_timeout_seconds`.
    Ignore,
}

/// Approvals of a case: one action for every tool, or one per tool (unlisted tools: `none`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Approvals {
    /// The same action for every tool.
    All(ApprovalAction),
    /// Per tool name.
    PerTool(BTreeMap<String, ApprovalAction>),
}

impl Default for Approvals {
    fn default() -> Self {
        Approvals::All(ApprovalAction::None)
    }
}

impl Approvals {
    /// The action for `tool`.
    pub fn for_tool(&self, tool: &str) -> ApprovalAction {
        match self {
            Approvals::All(action) => *action,
            Approvals::PerTool(map) => map.get(tool).copied().unwrap_or_default(),
        }
    }
}

/// One eval case. See the module documentation for the TOML format.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Unique name.
    pub name: String,
    /// The task given to the planner.
    pub task: String,
    /// A built-in fake scenario by name.
    #[serde(default)]
    pub scenario: Option<String>,
    /// Inline fake-provider rounds (win over `scenario`).
    #[serde(default, rename = "round")]
    pub rounds: Option<Vec<Round>>,
    /// Real provider name (a preset or a `[providers.NAME]` of `config`).
    #[serde(default)]
    pub provider: Option<String>,
    /// Model id for the real provider.
    #[serde(default)]
    pub model: Option<String>,
    /// Base URL of an OpenAI-compatible server.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Tool choice for the first planner call.
    #[serde(default)]
    pub tool_choice: Option<String>,
    /// Output token limit per planner call.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Approvals to give.
    #[serde(default)]
    pub approvals: Approvals,
    /// Cancel the run this many ms after it starts.
    #[serde(default)]
    pub cancel_after_ms: Option<u64>,
    /// `loop` (default) or `roles`: the role pipeline (SPEC O1–O3), as `--mode roles` runs
    /// it. A case failing a role runs the pipeline whatever this says.
    #[serde(default)]
    pub mode: Option<steward_core::RunMode>,
    /// Roles to fail (`local_drafter`, …): each gets a provider nobody answers, so its stage
    /// fails as an unreachable model does. Implies `mode = "roles"`.
    #[serde(default)]
    pub fail_roles: Vec<String>,
    /// Facts remembered for the run's owner before it starts (SPEC A5), stored as "remember
    /// that …" stores them (redacted, one line, within the limits).
    #[serde(default)]
    pub memory: Vec<String>,
    /// Capabilities needed (see [`crate::runner::missing_capability`]).
    #[serde(default)]
    pub requires: Vec<String>,
    /// Extra workspace files (relative path → content), committed.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// The case's configuration, in Steward's configuration schema.
    #[serde(default)]
    pub config: toml::Table,
    /// Scripted replies of the generator of generated tools (the fake provider's round
    /// format); sets `[generated_tools] provider` to a fake provider playing them.
    #[serde(default, rename = "generator_round")]
    pub generator_rounds: Option<Vec<toml::Table>>,
    /// The name of a case whose run comes first, in the same workspace and state, as the
    /// earlier turn of this run's conversation (its task and answer are this run's history).
    #[serde(default)]
    pub after: Option<String>,
    /// The case named by `after`, filled in by [`crate::run_cases`].
    #[serde(skip)]
    pub earlier: Option<Box<Case>>,
    /// Expectations.
    #[serde(default)]
    pub expect: Expect,
}

impl Case {
    /// True when the case runs the role pipeline: `mode = "roles"`, or a role to fail.
    pub fn runs_roles(&self) -> bool {
        self.mode == Some(steward_core::RunMode::Roles) || !self.fail_roles.is_empty()
    }
}

fn yes() -> bool {
    true
}

/// What a run must show. Unset expectations are not checked.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Final status.
    #[serde(default)]
    pub status: Option<RunStatus>,
    /// Stop reason wire name (`answered`, `max_rounds`, …).
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// Substrings of the final text.
    #[serde(default)]
    pub final_contains: Vec<String>,
    /// Events that must occur; `a|b` alternatives.
    #[serde(default)]
    pub events: Vec<String>,
    /// Events that must not occur; `a|b` forbids both.
    #[serde(default)]
    pub forbidden_events: Vec<String>,
    /// No secret in any output of the run (default true).
    #[serde(default = "yes")]
    pub no_secret_leak: bool,
    /// A `patch_applied` event occurred (true) or none did (false).
    #[serde(default)]
    pub patch_applied: Option<bool>,
    /// The run's error class wire name.
    #[serde(default)]
    pub error_class: Option<String>,
    /// Fewest planner calls.
    #[serde(default)]
    pub min_rounds: Option<u32>,
    /// Most planner calls.
    #[serde(default)]
    pub max_rounds: Option<u32>,
    /// Tools that ran.
    #[serde(default)]
    pub tools_used: Vec<String>,
    /// Tools that never ran.
    #[serde(default)]
    pub tools_not_used: Vec<String>,
    /// Substrings of the output of some completed tool call (a `tool_completed` event), e.g.
    /// what a generated tool computed.
    #[serde(default)]
    pub tool_output_contains: Vec<String>,
    /// Every `patch_applied` event has a stored rollback record (true), or there is none (false).
    #[serde(default)]
    pub rollback: Option<bool>,
    /// Workspace file contents after the run (relative path → text).
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Substrings the planner's first request must hold (remembered facts reaching the model,
    /// for example). Recorded only with the fake provider; with a real one the check fails.
    #[serde(default)]
    pub model_saw: Vec<String>,
    /// The owner's remembered facts after the run, exactly and in order.
    #[serde(default)]
    pub facts: Option<Vec<String>>,
}

impl Default for Expect {
    fn default() -> Self {
        Expect {
            status: None,
            stop_reason: None,
            final_contains: Vec::new(),
            events: Vec::new(),
            forbidden_events: Vec::new(),
            no_secret_leak: true,
            patch_applied: None,
            error_class: None,
            min_rounds: None,
            max_rounds: None,
            tools_used: Vec::new(),
            tools_not_used: Vec::new(),
            tool_output_contains: Vec::new(),
            rollback: None,
            files: BTreeMap::new(),
            model_saw: Vec::new(),
            facts: None,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    #[serde(default, rename = "case")]
    cases: Vec<Case>,
}

/// Parses a case file in Steward's TOML format. Errors name the line (from `toml`).
pub fn parse_toml(text: &str) -> Result<Vec<Case>, toml::de::Error> {
    let file: CaseFile = toml::from_str(text)?;
    Ok(file.cases)
}
