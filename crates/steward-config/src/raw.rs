//! The schema every configuration file shares, as written ([`RawConfig`] and its tables).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use steward_policy::PolicyConfig;
use steward_provider::ProviderConfig;

use super::{
    ChainConfig, CommandToolConfig, DEFAULT_HOME_KEEP, HookConfig, Network, OutputFilterConfig, RoleName, RunMode,
    SandboxSettings, home_paths,
};

/// Agent-loop limits. All optional in files; defaults in [`Limits::default`](super::Limits::default).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    /// Rounds with tool calls before the run stops with `max_rounds` (default 5).
    #[cfg_attr(feature = "schema", schemars(extend("default" = super::Limits::default().max_rounds)))]
    pub max_rounds: Option<u32>,
    /// Tool calls per run before it stops with `max_tool_calls` (default 20).
    #[cfg_attr(feature = "schema", schemars(extend("default" = super::Limits::default().max_tool_calls_per_run)))]
    pub max_tool_calls_per_run: Option<u32>,
    /// Tool calls each role may make in `roles` mode (`{ planner = 8 }`; each at least 1),
    /// within `max_tool_calls_per_run`. The run stops with `max_tool_calls`, and its
    /// `run_completed` event names the role (`limit`). Only the planner stage calls tools;
    /// the stages after it make none. Unset: no role has a limit of its own.
    #[serde(default)]
    pub max_tool_calls_per_role: BTreeMap<RoleName, u32>,
    /// Wall time of a run in ms before it stops with `timeout` (default 1,200,000 = 20 min).
    #[cfg_attr(feature = "schema", schemars(extend("default" = super::Limits::default().max_total_runtime_ms)))]
    pub max_total_runtime_ms: Option<u64>,
    /// Characters of one tool output shown to the model (default 8,000).
    #[cfg_attr(feature = "schema", schemars(extend("default" = super::Limits::default().max_tool_output_chars)))]
    pub max_tool_output_chars: Option<usize>,
    /// Characters of assembled context before older tool results are compacted (default 120,000).
    #[cfg_attr(feature = "schema", schemars(extend("default" = super::Limits::default().max_context_chars)))]
    pub max_context_chars: Option<usize>,
    /// Per-call subprocess timeout in ms (default 30,000).
    #[cfg_attr(feature = "schema", schemars(extend("default" = super::Limits::default().tool_timeout_ms)))]
    pub tool_timeout_ms: Option<u64>,
    /// Repeats of a call already refused or failed in the run (same tool, same arguments),
    /// none of them executed, before the run stops with `stuck` (default 2).
    #[cfg_attr(feature = "schema", schemars(extend("default" = super::Limits::default().max_repeated_calls)))]
    pub max_repeated_calls: Option<u32>,
}

/// Defaults for `steward run` (the CLI flags override them).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawRun {
    /// `classic` or `model`.
    pub planner: Option<String>,
    /// Provider name: a preset or a `[providers.NAME]` entry. Setting it selects the model planner.
    pub provider: Option<String>,
    /// Model id.
    pub model: Option<String>,
    /// `loop` (default: the planner answers) or `roles` (the role pipeline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<RunMode>,
    /// What a call that needs approval does when nobody can answer on the terminal (stdin is
    /// not one): `fail` (default: refused at once with `no_approver`) or `wait` (the run waits,
    /// until the approval expires, for a decision of its owner from `steward approve`/`deny`,
    /// the web UI or another process).
    #[serde(default)]
    pub approvals: ApprovalsMode,
    /// The tools offered to the model planner, by name (built-in, `[[tool]]`, MCP or chain
    /// names); unset: every tool. A small model given fewer tools gets a smaller prompt and
    /// fewer ways to go wrong. Names that match no tool are ignored; a call of a tool not
    /// offered is refused as undeclared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
}

/// `[run] approvals`: what a call that needs approval does when stdin is not a terminal.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalsMode {
    /// Refused at once with `no_approver` (fail closed).
    #[default]
    Fail,
    /// Wait until the approval expires for the owner's decision made elsewhere.
    Wait,
}

/// `[roles.NAME]`: who plays one role of the role pipeline.
///
/// ```toml
/// [roles.local_drafter]
/// provider = "ollama"          # a preset or a [providers.NAME] entry
/// model = "qwen2.5:7b"         # optional: default, the provider's default model
/// [roles.cloud_drafter]
/// provider = "openai"
/// ```
///
/// A role without an entry is played by the run's planner provider and model.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RoleConfig {
    /// Provider name: a preset or a `[providers.NAME]` entry.
    pub provider: String,
    /// Model id (default: the provider's `default_model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// `[roles]`: one optional entry per role; other names are refused.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawRoles {
    /// `[roles.planner]`: the planner stage (the agent loop with tools). Without it, the
    /// planner chosen as in loop mode; a planner named on the command line wins over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner: Option<RoleConfig>,
    /// `[roles.local_drafter]`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_drafter: Option<RoleConfig>,
    /// `[roles.cloud_drafter]`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_drafter: Option<RoleConfig>,
    /// `[roles.critic]`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critic: Option<RoleConfig>,
    /// `[roles.reviewer]`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<RoleConfig>,
    /// `[roles.synthesizer]`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synthesizer: Option<RoleConfig>,
}

impl RawRoles {
    /// The entry of `role`, if configured.
    pub fn get(&self, role: RoleName) -> Option<&RoleConfig> {
        match role {
            RoleName::Planner => self.planner.as_ref(),
            RoleName::LocalDrafter => self.local_drafter.as_ref(),
            RoleName::CloudDrafter => self.cloud_drafter.as_ref(),
            RoleName::Critic => self.critic.as_ref(),
            RoleName::Reviewer => self.reviewer.as_ref(),
            RoleName::Synthesizer => self.synthesizer.as_ref(),
        }
    }

    /// The first entry with an empty `provider` or `model`: `(key, message)`.
    pub(super) fn check(&self) -> Result<(), (String, String)> {
        for role in RoleName::ALL {
            let Some(entry) = self.get(role) else { continue };
            let name = role.as_str();
            if entry.provider.trim().is_empty() {
                return Err((
                    format!("roles.{name}.provider"),
                    format!("roles.{name}.provider is empty: name a preset or a [providers.NAME] entry"),
                ));
            }
            if entry.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
                return Err((
                    format!("roles.{name}.model"),
                    format!("roles.{name}.model is empty: leave it out to use the provider's default model"),
                ));
            }
        }
        Ok(())
    }
}

/// Sandbox settings.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawSandbox {
    /// Extra environment variable names subprocesses may receive.
    #[serde(default)]
    pub env_allow: Vec<String>,
    /// Protections this machine may run without (`env_scrub`, `network_deny`, `fs_confine`,
    /// `rlimits`, `timeout`). Empty by default: a tool whose protection cannot be enforced is
    /// refused rather than run weaker.
    #[serde(default)]
    pub accept_weaker: Vec<String>,
    /// Leave `$HOME` visible to sandboxed programs (default false: it is an empty folder
    /// there, so `~/.ssh`, `~/.aws`, `~/.npmrc`, `~/.config/gh` are not).
    #[serde(default)]
    pub show_home: bool,
    /// Folders or files beneath `$HOME` (relative to it, e.g. `.cargo/bin`, `.rustup`) that
    /// stay visible, read-only, when it is hidden. Unset: the toolchain folders of
    /// [`DEFAULT_HOME_KEEP`].
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(extend("default" = DEFAULT_HOME_KEEP)))]
    pub home_keep: Option<Vec<String>>,
    /// Data-memory limit (`RLIMIT_DATA`) of every sandboxed program, in MiB (default 2048;
    /// 0: none).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(extend("default" = steward_sandbox::DEFAULT_MEMORY_BYTES / (1024 * 1024))))]
    pub memory_mb: Option<u64>,
}

impl RawSandbox {
    /// The settings sandboxed tool calls use: `home_keep` (or its default) resolved against
    /// `$HOME` (entries that are absolute or contain `..` are left out).
    pub fn settings(&self) -> SandboxSettings {
        let home_keep = match &self.home_keep {
            Some(names) => home_paths(&names.iter().map(String::as_str).collect::<Vec<_>>()),
            None => home_paths(DEFAULT_HOME_KEEP),
        };
        let memory_bytes = match self.memory_mb {
            Some(0) => None,
            Some(mb) => Some(mb.saturating_mul(1024 * 1024)),
            None => Some(steward_sandbox::DEFAULT_MEMORY_BYTES),
        };
        SandboxSettings { show_home: self.show_home, home_keep, memory_bytes }
    }
}

/// `[shell]`: the `shell_command` tool. Off by default.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawShell {
    /// Offer `shell_command` to planners. Its calls ask by default; argv rules may allow or
    /// deny specific commands.
    #[serde(default)]
    pub enabled: bool,
    /// Workspace folders commands may write (everything else is read-only). With any, every
    /// call asks, because a command's changes cannot be rolled back.
    #[serde(default)]
    pub writable: Vec<String>,
    /// `false` (default): no network; `true`: all of it; a host list: those hosts only,
    /// through the egress proxy.
    #[serde(default)]
    pub network: Network,
    /// Data-memory limit per command in MiB (default: `[sandbox] memory_mb`).
    #[serde(default)]
    pub memory_mb: Option<u64>,
    /// Let commands create Unix sockets (default: refused by the sandbox's seccomp filter).
    #[serde(default)]
    pub unix_sockets: bool,
}

/// `[trust]`: workspaces whose own `.steward/` configuration is fully trusted. Read only
/// from the user's configuration directory (`steward trust DIR` writes it).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawTrust {
    /// Workspace directories (compared after canonicalisation).
    #[serde(default)]
    pub workspaces: Vec<String>,
}

/// One configuration file, as written. Every `.steward/*.toml` file uses this schema.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// `[run]`
    pub run: Option<RawRun>,
    /// `[providers.NAME]`
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `[roles.NAME]`
    pub roles: Option<RawRoles>,
    /// `[policy]`
    pub policy: Option<PolicyConfig>,
    /// `[limits]`
    pub limits: Option<RawLimits>,
    /// `[sandbox]`
    pub sandbox: Option<RawSandbox>,
    /// `[trust]` (user configuration only)
    pub trust: Option<RawTrust>,
    /// `[tested_compensations]` (user configuration only): tool name → the SHA-256 of the
    /// `[[tool]]` definition whose `compensate` passed `steward tools test-compensation`.
    #[serde(default)]
    pub tested_compensations: BTreeMap<String, String>,
    /// `[shell]`
    pub shell: Option<RawShell>,
    /// `[mcp_servers.NAME]`
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, steward_mcp::McpServerConfig>,
    /// `[[hook]]`
    #[serde(default, rename = "hook")]
    pub hooks: Vec<HookConfig>,
    /// `[[tool_call_chain]]`
    #[serde(default, rename = "tool_call_chain")]
    pub chains: Vec<ChainConfig>,
    /// `[[tool]]`: user-defined command tools (format in `steward-tools`'s `command` module).
    #[serde(default, rename = "tool")]
    pub tools: Vec<CommandToolConfig>,
    /// `[[output_filter]]` (format in `steward-tools`'s `filter` module).
    #[serde(default, rename = "output_filter")]
    pub output_filters: Vec<OutputFilterConfig>,
    /// `[generated_tools]`
    pub generated_tools: Option<super::GeneratedToolsConfig>,
    /// `[[lsp]]`: language servers behind the `lsp_*` tools.
    #[serde(default)]
    pub lsp: Vec<super::LspServerConfig>,
    /// `[telemetry]` (user configuration only)
    pub telemetry: Option<steward_telemetry::TelemetryConfig>,
    /// `[search]`
    pub search: Option<super::SearchConfig>,
}
