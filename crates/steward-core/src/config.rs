//! Layered TOML configuration (SPEC N).
//!
//! Files are read in this order, later ones overriding earlier ones key by key:
//! 1. `$XDG_CONFIG_HOME/steward/*.toml` (default `~/.config/steward/`), sorted by file name;
//! 2. the workspace's `.steward/*.toml`, sorted by file name.
//!
//! The arrays of tables `[[tool]]`, `[[output_filter]]`, `[[hook]]` and `[[tool_call_chain]]`
//! accumulate across files instead (a tool name defined twice, in any files, is an error
//! naming the second file and line).
//!
//! Every file shares one schema ([`RawConfig`], unknown keys refused) and is checked on its
//! own first, so an error names the file and line. The merged tables are then resolved once
//! into a [`Config`]; the rest of the program never reads TOML.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use steward_policy::PolicyConfig;
use steward_provider::ProviderConfig;

/// A configuration error naming the file and, where known, the line (1-based).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        message: String,
    },
    /// A file is not valid TOML or does not fit the schema.
    #[error("{path}:{line}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the offending key or value (0 when unknown).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The merged configuration is inconsistent (for example a bad policy glob).
    #[error("configuration: {0}")]
    Resolve(String),
}

/// Agent-loop limits (SPEC A1, A2). All optional in files; defaults in [`Limits::default`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    /// Rounds with tool calls before the run stops with `max_rounds` (default 5).
    pub max_rounds: Option<u32>,
    /// Tool calls per run before it stops with `max_tool_calls` (default 20).
    pub max_tool_calls_per_run: Option<u32>,
    /// Wall time of a run in ms before it stops with `timeout` (default 1,200,000 = 20 min).
    pub max_total_runtime_ms: Option<u64>,
    /// Characters of one tool output shown to the model (default 8,000).
    pub max_tool_output_chars: Option<usize>,
    /// Characters of assembled context before older tool results are compacted (default 120,000).
    pub max_context_chars: Option<usize>,
    /// Per-call subprocess timeout in ms (default 30,000).
    pub tool_timeout_ms: Option<u64>,
    /// Repeats of a call already refused or failed in the run (same tool, same arguments),
    /// none of them executed, before the run stops with `stuck` (default 2).
    pub max_repeated_calls: Option<u32>,
}

/// Defaults for `steward run` (the CLI flags override them).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawRun {
    /// `classic` or `model`.
    pub planner: Option<String>,
    /// Provider name: a preset or a `[providers.NAME]` entry. Setting it selects the model planner.
    pub provider: Option<String>,
    /// Model id.
    pub model: Option<String>,
    /// `loop` (default: the planner answers) or `roles` (the role pipeline, SPEC O1–O3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<crate::roles::RunMode>,
}

/// `[roles.NAME]`: who plays one role of the role pipeline (SPEC O1, P9).
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
    pub fn get(&self, role: crate::roles::RoleName) -> Option<&RoleConfig> {
        use crate::roles::RoleName;
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
    fn check(&self) -> Result<(), (String, String)> {
        for role in crate::roles::RoleName::ALL {
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

/// Sandbox settings (SPEC C3).
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
    /// [`crate::tools::sandbox_paths::DEFAULT_HOME_KEEP`].
    #[serde(default)]
    pub home_keep: Option<Vec<String>>,
    /// Data-memory limit (`RLIMIT_DATA`) of every sandboxed program, in MiB (default 2048;
    /// 0: none).
    #[serde(default)]
    pub memory_mb: Option<u64>,
}

impl RawSandbox {
    /// The settings sandboxed tool calls use: `home_keep` (or its default) resolved against
    /// `$HOME` (entries that are absolute or contain `..` are left out).
    pub fn settings(&self) -> crate::tools::sandbox_paths::SandboxSettings {
        use crate::tools::sandbox_paths::{DEFAULT_HOME_KEEP, home_paths};
        let home_keep = match &self.home_keep {
            Some(names) => home_paths(&names.iter().map(String::as_str).collect::<Vec<_>>()),
            None => home_paths(DEFAULT_HOME_KEEP),
        };
        let memory_bytes = match self.memory_mb {
            Some(0) => None,
            Some(mb) => Some(mb.saturating_mul(1024 * 1024)),
            None => Some(steward_sandbox::DEFAULT_MEMORY_BYTES),
        };
        crate::tools::sandbox_paths::SandboxSettings { show_home: self.show_home, home_keep, memory_bytes }
    }
}

/// `[shell]`: the `shell_command` tool (SPEC T4). Off by default.
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
    pub network: crate::tools::network::Network,
    /// Data-memory limit per command in MiB (default: `[sandbox] memory_mb`).
    #[serde(default)]
    pub memory_mb: Option<u64>,
    /// Let commands create Unix sockets (default: refused by the sandbox's seccomp filter).
    #[serde(default)]
    pub unix_sockets: bool,
}

/// `[trust]`: workspaces whose own `.steward/` configuration is fully trusted. Read only
/// from the user's configuration directory (`steward trust DIR` writes it).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawTrust {
    /// Workspace directories (compared after canonicalisation).
    #[serde(default)]
    pub workspaces: Vec<String>,
}

/// One configuration file, as written. Every `.steward/*.toml` file uses this schema.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// `[run]`
    pub run: Option<RawRun>,
    /// `[providers.NAME]`
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `[roles.NAME]` (SPEC O1)
    pub roles: Option<RawRoles>,
    /// `[policy]`
    pub policy: Option<PolicyConfig>,
    /// `[limits]`
    pub limits: Option<RawLimits>,
    /// `[sandbox]`
    pub sandbox: Option<RawSandbox>,
    /// `[trust]` (user configuration only)
    pub trust: Option<RawTrust>,
    /// `[shell]`
    pub shell: Option<RawShell>,
    /// `[mcp_servers.NAME]` (SPEC M1)
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, steward_mcp::McpServerConfig>,
    /// `[[hook]]` (SPEC T9)
    #[serde(default, rename = "hook")]
    pub hooks: Vec<crate::hooks::HookConfig>,
    /// `[[tool_call_chain]]` (SPEC T6)
    #[serde(default, rename = "tool_call_chain")]
    pub chains: Vec<crate::chains::ChainConfig>,
    /// `[[tool]]`: user-defined command tools (SPEC T5; format in [`crate::tools::command`]).
    #[serde(default, rename = "tool")]
    pub tools: Vec<crate::tools::command::CommandToolConfig>,
    /// `[[output_filter]]` (SPEC T8; format in [`crate::tools::filter`]).
    #[serde(default, rename = "output_filter")]
    pub output_filters: Vec<crate::tools::filter::OutputFilterConfig>,
}

/// Resolved limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// See [`RawLimits::max_rounds`].
    pub max_rounds: u32,
    /// See [`RawLimits::max_tool_calls_per_run`].
    pub max_tool_calls_per_run: u32,
    /// See [`RawLimits::max_total_runtime_ms`].
    pub max_total_runtime_ms: u64,
    /// See [`RawLimits::max_tool_output_chars`].
    pub max_tool_output_chars: usize,
    /// See [`RawLimits::max_context_chars`].
    pub max_context_chars: usize,
    /// See [`RawLimits::tool_timeout_ms`].
    pub tool_timeout_ms: u64,
    /// See [`RawLimits::max_repeated_calls`].
    pub max_repeated_calls: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_rounds: 5,
            max_tool_calls_per_run: 20,
            max_total_runtime_ms: 20 * 60 * 1000,
            max_tool_output_chars: 8_000,
            max_context_chars: 120_000,
            tool_timeout_ms: 30_000,
            max_repeated_calls: 2,
        }
    }
}

/// The resolved configuration.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// `[run]` defaults.
    pub run: RawRun,
    /// Providers declared in files (presets are added by the caller when named).
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Who plays each role in `roles` mode.
    pub roles: RawRoles,
    /// The policy manifest.
    pub policy: PolicyConfig,
    /// Limits.
    pub limits: Limits,
    /// Sandbox settings.
    pub sandbox: RawSandbox,
    /// The `shell_command` tool.
    pub shell: RawShell,
    /// MCP servers by name.
    pub mcp_servers: BTreeMap<String, steward_mcp::McpServerConfig>,
    /// Hooks, in configuration order.
    pub hooks: Vec<crate::hooks::HookConfig>,
    /// Toolchains.
    pub chains: Vec<crate::chains::ChainConfig>,
    /// User-defined command tools, in configuration order (names unique across files).
    pub tools: Vec<crate::tools::command::CommandToolConfig>,
    /// Output filters, in configuration order.
    pub output_filters: Vec<crate::tools::filter::OutputFilterConfig>,
    /// Instructions from the workspace's `AGENTS.md`, if present (at most 20,000 chars).
    pub instructions: Option<String>,
    /// Files that were read, in order.
    pub sources: Vec<PathBuf>,
    /// The file each entry came from (`limits.max_rounds`, `providers.NAME`, `tool.NAME`,
    /// `policy.rule.NAME` …); the last file that set it.
    pub entry_sources: BTreeMap<String, PathBuf>,
    /// True when the workspace is listed in the user's `[trust]` table.
    pub trusted: bool,
    /// Leaves out the argument-level data-flow check (`data_flow`, [`crate::data_flow`]),
    /// keeping run-level taint alone. Always false for a configuration loaded from files: no
    /// file can set it. Only a program embedding Steward may, to measure what the check
    /// changes (`steward bench injection` does).
    pub run_level_taint_only: bool,
    /// Things a user should know: settings ignored from an untrusted workspace, environment
    /// names in `env_allow` that look like secrets.
    pub warnings: Vec<String>,
}

impl Config {
    /// Loads `user_dir/**/*.toml` then `workspace/.steward/**/*.toml` (each set sorted by
    /// path) and the workspace's `AGENTS.md` and `.agents/AGENTS.md`.
    /// Missing directories are fine; unreadable or invalid files are errors.
    ///
    /// A workspace's own files come with the repository, so unless the user trusts the
    /// workspace (`[trust] workspaces` in the user's configuration) they may only make things
    /// stricter: `[providers]`, `[run]`, `[roles]`, `[sandbox]`, `[shell]`, `[trust]`, and the command-running
    /// `[[tool]]`, `[[hook]]` and `[[tool_call_chain]]` entries are ignored, and in
    /// `[policy]` only `blocked_actions`, `deny_path`, `context_rules`, `untrusted_paths`,
    /// `max_tool_calls_per_run` and rules that deny or ask are kept — added to the user's, never
    /// replacing them. Everything ignored is listed in [`Config::warnings`].
    pub fn load(user_dir: Option<&Path>, workspace: &Path) -> Result<Config, ConfigError> {
        let user_files = match user_dir {
            Some(dir) => toml_files(dir)?,
            None => Vec::new(),
        };
        let workspace_files = toml_files(&workspace.join(".steward"))?;
        let mut merged = toml::Table::new();
        // Tool names across all files that count: name → (file, line).
        let mut tool_names = BTreeMap::new();
        let mut entry_sources = BTreeMap::new();
        for path in &user_files {
            let (table, names) = read_file(path)?;
            claim_tool_names(&mut tool_names, path, names)?;
            note_sources(&mut entry_sources, path, &table);
            merge(&mut merged, table);
        }
        let trusted = is_trusted(&merged, workspace);
        let mut warnings = Vec::new();
        for path in &workspace_files {
            let (mut table, names) = read_file(path)?;
            if trusted {
                table.remove("trust");
                claim_tool_names(&mut tool_names, path, names)?;
                note_sources(&mut entry_sources, path, &table);
                merge(&mut merged, table);
            } else {
                for ignored in restrict_untrusted(&mut table) {
                    warnings.push(format!(
                        "{}: `{ignored}` ignored: the workspace is not trusted (trust it with `steward trust {}`)",
                        path.display(),
                        workspace.display()
                    ));
                }
                note_sources(&mut entry_sources, path, &table);
                for ignored in merge_stricter(&mut merged, table) {
                    warnings.push(format!("{}: `{ignored}` ignored: the workspace is not trusted", path.display()));
                }
            }
        }
        let raw: RawConfig = toml::Value::Table(merged)
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Resolve(e.message().to_string()))?;
        let mut config = Config::resolve(raw)?;
        config.sources = user_files.into_iter().chain(workspace_files).collect();
        config.entry_sources = entry_sources;
        config.trusted = trusted;
        for name in &config.sandbox.env_allow {
            if steward_sandbox::env_name_looks_secret(name) {
                warnings.push(format!(
                    "sandbox.env_allow passes `{name}` to every tool subprocess; it looks like a key, token or password"
                ));
            }
        }
        config.instructions = read_instructions(workspace, &mut warnings);
        config.warnings = warnings;
        Ok(config)
    }

    /// Resolves one raw configuration (already merged) with defaults.
    pub fn resolve(raw: RawConfig) -> Result<Config, ConfigError> {
        let l = raw.limits.clone().unwrap_or_default();
        let d = Limits::default();
        let limits = Limits {
            max_rounds: l.max_rounds.unwrap_or(d.max_rounds),
            max_tool_calls_per_run: raw
                .policy
                .as_ref()
                .and_then(|p| p.max_tool_calls_per_run)
                .or(l.max_tool_calls_per_run)
                .unwrap_or(d.max_tool_calls_per_run),
            max_total_runtime_ms: l.max_total_runtime_ms.unwrap_or(d.max_total_runtime_ms),
            max_tool_output_chars: l.max_tool_output_chars.unwrap_or(d.max_tool_output_chars),
            max_context_chars: l.max_context_chars.unwrap_or(d.max_context_chars),
            tool_timeout_ms: l.tool_timeout_ms.unwrap_or(d.tool_timeout_ms),
            max_repeated_calls: l.max_repeated_calls.unwrap_or(d.max_repeated_calls),
        };
        if let Err((_, message)) = check_limits(&l) {
            return Err(ConfigError::Resolve(message));
        }
        if let Some(Err((_, message))) = raw.roles.as_ref().map(RawRoles::check) {
            return Err(ConfigError::Resolve(message));
        }
        if let Some(bad) = raw
            .sandbox
            .as_ref()
            .and_then(|s| s.accept_weaker.iter().find(|name| steward_sandbox::Protection::parse(name).is_none()))
        {
            return Err(ConfigError::Resolve(format!(
                "sandbox.accept_weaker: `{bad}` is not a protection (env_scrub, network_deny, fs_confine, fs_mask, pid_namespace, seccomp, rlimits, timeout)"
            )));
        }
        Ok(Config {
            run: raw.run.unwrap_or_default(),
            providers: raw.providers,
            roles: raw.roles.unwrap_or_default(),
            policy: raw.policy.unwrap_or_default(),
            limits,
            sandbox: raw.sandbox.unwrap_or_default(),
            shell: raw.shell.unwrap_or_default(),
            mcp_servers: raw.mcp_servers,
            hooks: raw.hooks,
            chains: raw.chains,
            tools: raw.tools,
            output_filters: raw.output_filters,
            instructions: None,
            sources: Vec::new(),
            entry_sources: BTreeMap::new(),
            trusted: false,
            run_level_taint_only: false,
            warnings: Vec::new(),
        })
    }
}

/// The `*.toml` files of `dir`, sorted; none when `dir` does not exist.
fn toml_files(dir: &Path) -> Result<Vec<PathBuf>, ConfigError> {
    let mut files = Vec::new();
    collect_toml(dir, 0, &mut files)?;
    files.sort();
    Ok(files)
}

/// The `*.toml` files below `dir` (`**/*.toml`), not following symbolic links, at most 8
/// folders deep.
fn collect_toml(dir: &Path, depth: usize, files: &mut Vec<PathBuf>) -> Result<(), ConfigError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && depth == 0 => return Ok(()),
        Err(e) => return Err(ConfigError::Io { path: dir.to_path_buf(), message: e.to_string() }),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() && depth < 8 {
            collect_toml(&path, depth + 1, files)?;
        } else if kind.is_file() && path.extension().is_some_and(|x| x == "toml") {
            files.push(path);
        }
    }
    Ok(())
}

/// Records which file each entry of `table` came from: `section.key` for plain settings,
/// `providers.NAME`, and `tool.NAME` / `hook.NAME` / `tool_call_chain.NAME` /
/// `policy.rule.NAME` for named entries. Later files overwrite earlier ones.
fn note_sources(sources: &mut BTreeMap<String, PathBuf>, path: &Path, table: &toml::Table) {
    for (section, value) in table {
        match value {
            toml::Value::Table(inner) => {
                for (key, item) in inner {
                    if section == "policy" && key == "rule" {
                        for rule in item.as_array().into_iter().flatten() {
                            if let Some(name) = rule.get("name").and_then(|n| n.as_str()) {
                                sources.insert(format!("policy.rule.{name}"), path.to_path_buf());
                            }
                        }
                    } else {
                        sources.insert(format!("{section}.{key}"), path.to_path_buf());
                    }
                }
            }
            toml::Value::Array(items) => {
                for item in items {
                    if let Some(name) = item.get("name").and_then(|n| n.as_str()) {
                        sources.insert(format!("{section}.{name}"), path.to_path_buf());
                    }
                }
            }
            _ => {
                sources.insert(section.clone(), path.to_path_buf());
            }
        }
    }
}

/// The workspace's `AGENTS.md` and `.agents/AGENTS.md`, each read through the workspace's
/// path rules (a link to a file outside the workspace or to a secret file is refused with a
/// warning), together at most 20,000 characters.
fn read_instructions(workspace: &Path, warnings: &mut Vec<String>) -> Option<String> {
    let ws = steward_policy::Workspace::open(workspace, &[]).ok()?;
    let mut text = String::new();
    for name in ["AGENTS.md", ".agents/AGENTS.md"] {
        if std::fs::symlink_metadata(workspace.join(name)).is_err() {
            continue;
        }
        match ws.resolve(name, steward_policy::Access::Read).map(|p| std::fs::read_to_string(p.abs)) {
            Ok(Ok(body)) => {
                text.push_str(&body);
                text.push('\n');
            }
            Ok(Err(e)) => warnings.push(format!("{name} is not readable text ({e}); it is not given to the model")),
            Err(e) => warnings.push(format!("{name} is not given to the model: {e}")),
        }
    }
    (!text.trim().is_empty()).then(|| steward_protocol::truncate_chars(&text, 20_000).to_string())
}

/// A file's table and the names of its `[[tool]]`s with their lines.
fn read_file(path: &Path) -> Result<(toml::Table, Vec<(String, usize)>), ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::Io { path: path.to_path_buf(), message: e.to_string() })?;
    let table = parse_file(path, &text)?;
    let names = spans(&text).tool.into_iter().map(|t| (t.name.get_ref().clone(), line_of(&text, t.name.span().start)));
    Ok((table, names.collect()))
}

/// Records the `[[tool]]` names of `path`; a name already defined (in any file that counts)
/// is an error naming this file and line and the first definition.
fn claim_tool_names(
    seen: &mut BTreeMap<String, (PathBuf, usize)>,
    path: &Path,
    names: Vec<(String, usize)>,
) -> Result<(), ConfigError> {
    for (name, line) in names {
        if let Some((first, first_line)) = seen.get(&name) {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                line,
                message: format!("duplicate tool name `{name}` (first defined at {}:{first_line})", first.display()),
            });
        }
        seen.insert(name, (path.to_path_buf(), line));
    }
    Ok(())
}

/// True when the user's `[trust] workspaces` lists `workspace` (both canonicalised).
fn is_trusted(user: &toml::Table, workspace: &Path) -> bool {
    let Ok(workspace) = std::fs::canonicalize(workspace) else { return false };
    let listed = user.get("trust").and_then(|t| t.get("workspaces")).and_then(|w| w.as_array());
    listed
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str())
        .any(|dir| std::fs::canonicalize(dir).is_ok_and(|d| d == workspace))
}

/// Removes from an untrusted workspace file everything that could loosen the user's settings
/// or send data elsewhere; returns the dotted names of what was removed.
fn restrict_untrusted(table: &mut toml::Table) -> Vec<String> {
    let mut ignored = Vec::new();
    // `tool`, `hook` and `tool_call_chain` would run commands the workspace chose.
    // `roles` names providers, like `run` and `providers`: it decides where data is sent.
    for key in [
        "providers",
        "run",
        "roles",
        "sandbox",
        "trust",
        "shell",
        "tool",
        "hook",
        "tool_call_chain",
        "output_filter",
        "mcp_servers",
    ] {
        if table.remove(key).is_some() {
            ignored.push(key.to_string());
        }
    }
    if let Some(toml::Value::Table(policy)) = table.get_mut("policy") {
        const KEEP: &[&str] = &[
            "blocked_actions",
            "deny_path",
            "context_rules",
            "max_tool_calls_per_run",
            "rule",
            "default",
            "untrusted_paths",
        ];
        let keys: Vec<String> = policy.keys().cloned().collect();
        for key in keys {
            if !KEEP.contains(&key.as_str()) {
                policy.remove(&key);
                ignored.push(format!("policy.{key}"));
            }
        }
        if policy.get("default").and_then(|d| d.as_str()).is_some_and(|d| d == "allow") {
            policy.remove("default");
            ignored.push("policy.default = \"allow\"".into());
        }
        if let Some(toml::Value::Array(rules)) = policy.get_mut("rule") {
            let before = rules.len();
            rules.retain(|r| r.get("decision").and_then(|d| d.as_str()).is_some_and(|d| d == "deny" || d == "ask"));
            if rules.len() != before {
                ignored.push(format!("{} policy.rule(s) that allow", before - rules.len()));
            }
        }
    }
    ignored
}

/// Merges an untrusted workspace table: lists in `[policy]` are appended to the user's
/// (a workspace cannot drop a user's blocked action or deny rule); anything else merges as
/// usual (only the stricter keys are left in it).
fn merge_stricter(base: &mut toml::Table, mut over: toml::Table) -> Vec<String> {
    let mut ignored = Vec::new();
    // Limits may only come down: a workspace must not give a run more time or rounds.
    let defaults = Limits::default();
    let effective = |table: &toml::Table, section: &str, key: &str| -> Option<i64> {
        table.get(section).and_then(|s| s.get(key)).and_then(|v| v.as_integer())
    };
    if let Some(toml::Value::Table(limits)) = over.get_mut("limits") {
        let keys: Vec<String> = limits.keys().cloned().collect();
        for key in keys {
            let default = match key.as_str() {
                "max_rounds" => i64::from(defaults.max_rounds),
                "max_tool_calls_per_run" => i64::from(defaults.max_tool_calls_per_run),
                "max_total_runtime_ms" => defaults.max_total_runtime_ms as i64,
                "max_tool_output_chars" => defaults.max_tool_output_chars as i64,
                "max_context_chars" => defaults.max_context_chars as i64,
                "tool_timeout_ms" => defaults.tool_timeout_ms as i64,
                "max_repeated_calls" => i64::from(defaults.max_repeated_calls),
                _ => continue,
            };
            let mine = effective(base, "limits", &key).unwrap_or(default);
            if limits.get(&key).and_then(|v| v.as_integer()).is_none_or(|theirs| theirs > mine) {
                limits.remove(&key);
                ignored.push(format!("limits.{key} (a workspace may only lower limits)"));
            }
        }
    }
    if let Some(toml::Value::Table(over_policy)) = over.get_mut("policy") {
        // `!pattern` would re-include what the user's `deny_path` excludes.
        if let Some(toml::Value::Array(globs)) = over_policy.get_mut("deny_path") {
            let before = globs.len();
            globs.retain(|g| g.as_str().is_some_and(|g| !g.trim_start().starts_with('!')));
            if globs.len() != before {
                ignored.push("policy.deny_path entries starting with `!`".into());
            }
        }
        if let Some(theirs) = over_policy.get("max_tool_calls_per_run").and_then(|v| v.as_integer()) {
            let mine = effective(base, "policy", "max_tool_calls_per_run")
                .or_else(|| effective(base, "limits", "max_tool_calls_per_run"))
                .unwrap_or(i64::from(defaults.max_tool_calls_per_run));
            if theirs > mine {
                over_policy.remove("max_tool_calls_per_run");
                ignored.push("policy.max_tool_calls_per_run (a workspace may only lower limits)".into());
            }
        }
        if base.get("policy").and_then(|p| p.get("default")).and_then(|d| d.as_str()) == Some("deny") {
            over_policy.remove("default");
            // Against a default of deny, a rule that asks would loosen it: only denials count.
            if let Some(toml::Value::Array(rules)) = over_policy.get_mut("rule") {
                let before = rules.len();
                rules.retain(|r| r.get("decision").and_then(|d| d.as_str()) == Some("deny"));
                if rules.len() != before {
                    ignored.push("policy.rule entries that ask (your default is deny)".into());
                }
            }
        }
        if let Some(toml::Value::Table(base_policy)) = base.get_mut("policy") {
            // `untrusted_paths` only ever adds taint.
            for key in ["blocked_actions", "deny_path", "context_rules", "rule", "untrusted_paths"] {
                if let Some(toml::Value::Array(theirs)) = over_policy.remove(key) {
                    match base_policy.get_mut(key) {
                        Some(toml::Value::Array(mine)) => mine.extend(theirs),
                        _ => {
                            base_policy.insert(key.to_string(), toml::Value::Array(theirs));
                        }
                    }
                }
            }
        }
    }
    merge(base, over);
    ignored
}

/// Parses one file and checks it against the schema, naming the line of the first error.
fn parse_file(path: &Path, text: &str) -> Result<toml::Table, ConfigError> {
    let invalid = |e: toml::de::Error| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: e.span().map(|s| line_of(text, s.start)).unwrap_or(0),
        message: e.message().trim().to_string(),
    };
    let table: toml::Table = toml::from_str(text).map_err(invalid)?;
    let checked: RawConfig = toml::from_str(text).map_err(invalid)?;
    if let Some(limits) = &checked.limits
        && let Err((key, message)) = check_limits(limits)
    {
        let line = text.find(key).map(|at| line_of(text, at)).unwrap_or(0);
        return Err(ConfigError::Invalid { path: path.to_path_buf(), line, message });
    }
    if let Some(roles) = &checked.roles
        && let Err((key, message)) = roles.check()
    {
        let line = role_key_line(text, &key).unwrap_or(0);
        return Err(ConfigError::Invalid { path: path.to_path_buf(), line, message });
    }
    check_tools_and_filters(path, text, &checked)?;
    Ok(table)
}

/// Where the `[[tool]]` and `[[output_filter]]` entries of one file are (for error lines).
#[derive(Deserialize, Default)]
struct Spans {
    #[serde(default)]
    tool: Vec<ToolSpan>,
    #[serde(default)]
    output_filter: Vec<FilterSpan>,
}

#[derive(Deserialize)]
struct ToolSpan {
    name: toml::Spanned<String>,
    #[serde(default)]
    input: Vec<InputSpan>,
}

#[derive(Deserialize)]
struct InputSpan {
    name: toml::Spanned<String>,
}

#[derive(Deserialize)]
struct FilterSpan {
    #[serde(default)]
    tool: Option<toml::Spanned<String>>,
    pattern: toml::Spanned<String>,
}

fn spans(text: &str) -> Spans {
    toml::from_str(text).unwrap_or_default()
}

/// Validates each `[[tool]]` and `[[output_filter]]` of one file; an error names the line of
/// the tool's (or the offending input's) `name`, or of the filter's `pattern`/`tool`.
fn check_tools_and_filters(path: &Path, text: &str, checked: &RawConfig) -> Result<(), ConfigError> {
    let spans = spans(text);
    let invalid = |span: Option<std::ops::Range<usize>>, message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: span.map(|s| line_of(text, s.start)).unwrap_or(0),
        message,
    };
    for (index, tool) in checked.tools.iter().enumerate() {
        if let Err(err) = tool.validate() {
            let at = spans.tool.get(index);
            let span = match (at, err.input) {
                (Some(t), Some(i)) => t.input.get(i).map(|i| i.name.span()).or(Some(t.name.span())),
                (Some(t), None) => Some(t.name.span()),
                (None, _) => None,
            };
            return Err(invalid(span, err.to_string()));
        }
    }
    for (index, filter) in checked.output_filters.iter().enumerate() {
        if let Err((key, message)) = filter.validate() {
            let at = spans.output_filter.get(index);
            let span = match key {
                "tool" => at.and_then(|f| f.tool.as_ref()).map(|t| t.span()),
                _ => at.map(|f| f.pattern.span()),
            };
            return Err(invalid(span, message));
        }
    }
    Ok(())
}

/// The line of the `roles.ROLE.KEY` value in `text` (`key` is that dotted name).
fn role_key_line(text: &str, key: &str) -> Option<usize> {
    #[derive(Deserialize)]
    struct File {
        roles: BTreeMap<String, BTreeMap<String, toml::Spanned<toml::Value>>>,
    }
    let mut parts = key.split('.').skip(1);
    let (role, field) = (parts.next()?, parts.next()?);
    let file: File = toml::from_str(text).ok()?;
    let span = file.roles.get(role)?.get(field)?.span();
    Some(line_of(text, span.start))
}

/// Lower bounds of the limits: `(key, message)` of the first one broken.
fn check_limits(l: &RawLimits) -> Result<(), (&'static str, String)> {
    if l.max_rounds == Some(0) {
        return Err(("max_rounds", "limits.max_rounds must be at least 1".into()));
    }
    if l.max_tool_output_chars.is_some_and(|n| n < 400) {
        return Err(("max_tool_output_chars", "limits.max_tool_output_chars must be at least 400 characters".into()));
    }
    if l.max_repeated_calls == Some(0) {
        return Err(("max_repeated_calls", "limits.max_repeated_calls must be at least 1".into()));
    }
    if l.max_tool_calls_per_run == Some(0) {
        return Err(("max_tool_calls_per_run", "limits.max_tool_calls_per_run must be at least 1".into()));
    }
    Ok(())
}

fn line_of(text: &str, byte: usize) -> usize {
    text.get(..byte).map(|head| head.matches('\n').count() + 1).unwrap_or(0)
}

/// Top-level arrays of tables that accumulate across files instead of being replaced.
const CONCATENATED: &[&str] = &["tool", "output_filter", "hook", "tool_call_chain"];

/// Deep-merges `over` into `base`: tables merge key by key, the [`CONCATENATED`] arrays and
/// every other array of tables (`[[policy.rule]]`) are appended, anything else (plain values,
/// lists of strings such as `blocked_actions`) is replaced by the later file.
fn merge(base: &mut toml::Table, mut over: toml::Table) {
    for key in CONCATENATED {
        if let Some(toml::Value::Array(theirs)) = over.remove(*key) {
            match base.get_mut(*key) {
                Some(toml::Value::Array(mine)) => mine.extend(theirs),
                _ => {
                    base.insert(key.to_string(), toml::Value::Array(theirs));
                }
            }
        }
    }
    merge_tables(base, over);
}

fn merge_tables(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge_tables(b, o),
            // Arrays of tables (`[[policy.rule]]`, `[[policy.context_rules]]`) add up across
            // files like `[[tool]]`: a rule in one file never silently replaces another's.
            (Some(toml::Value::Array(mine)), toml::Value::Array(theirs))
                if mine.iter().chain(&theirs).all(toml::Value::is_table) && !theirs.is_empty() =>
            {
                mine.extend(theirs);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_rules_from_several_user_files_add_up() {
        let user = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let rule = |name: &str| format!("[[policy.rule]]\nname = \"{name}\"\ntool = \"edit\"\ndecision = \"deny\"\n");
        std::fs::write(user.path().join("a.toml"), rule("first")).unwrap();
        std::fs::write(user.path().join("b.toml"), rule("second")).unwrap();
        let c = Config::load(Some(user.path()), ws.path()).unwrap();
        let names: Vec<&str> = c.policy.rules.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["first", "second"]);
    }

    #[test]
    fn an_untrusted_workspace_can_only_tighten() {
        let user = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(user.path().join("a.toml"), "[policy]\nblocked_actions = [\"delete\"]\n").unwrap();
        std::fs::create_dir(ws.path().join(".steward")).unwrap();
        std::fs::write(
            ws.path().join(".steward/config.toml"),
            "[run]\nprovider = \"evil\"\n[providers.evil]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\n\
             [sandbox]\nenv_allow = [\"OPENAI_API_KEY\"]\n[policy]\ndefault = \"allow\"\nallowed_actions = [\"edit\"]\n\
             blocked_actions = [\"move\"]\n[[policy.rule]]\nname = \"a\"\ntool = \"*\"\ndecision = \"allow\"\n\
             [[policy.rule]]\nname = \"b\"\ntool = \"create\"\ndecision = \"deny\"\n",
        )
        .unwrap();
        let c = Config::load(Some(user.path()), ws.path()).unwrap();
        assert!(!c.trusted);
        assert!(c.providers.is_empty() && c.run.provider.is_none() && c.sandbox.env_allow.is_empty());
        assert_eq!(c.policy.default, None);
        assert!(c.policy.allowed_actions.is_empty());
        assert_eq!(c.policy.blocked_actions, ["delete", "move"]);
        assert_eq!(c.policy.rules.len(), 1);
        assert_eq!(c.policy.rules[0].name, "b");
        assert!(c.warnings.iter().any(|w| w.contains("`providers` ignored")), "{:?}", c.warnings);

        // Once trusted, the workspace's file counts in full.
        let trust = format!("[trust]\nworkspaces = [\"{}\"]\n", ws.path().display());
        std::fs::write(user.path().join("trust.toml"), trust).unwrap();
        let c = Config::load(Some(user.path()), ws.path()).unwrap();
        assert!(c.trusted);
        assert_eq!(c.run.provider.as_deref(), Some("evil"));
        assert_eq!(c.sandbox.env_allow, ["OPENAI_API_KEY"]);
        assert!(c.warnings.iter().any(|w| w.contains("OPENAI_API_KEY")), "secret-looking env_allow warns");
    }

    #[test]
    fn later_files_override_and_errors_name_file_and_line() {
        let user = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(user.path().join("a.toml"), "[limits]\nmax_rounds = 7\nmax_tool_output_chars = 900\n").unwrap();
        std::fs::create_dir(ws.path().join(".steward")).unwrap();
        std::fs::write(ws.path().join(".steward/policy.toml"), "[limits]\nmax_rounds = 2\n").unwrap();
        let c = Config::load(Some(user.path()), ws.path()).unwrap();
        assert_eq!(c.limits.max_rounds, 2);
        assert_eq!(c.limits.max_tool_output_chars, 900);
        assert_eq!(c.sources.len(), 2);

        std::fs::write(ws.path().join(".steward/zz.toml"), "[limits]\n\nmax_roundz = 3\n").unwrap();
        let err = Config::load(Some(user.path()), ws.path()).unwrap_err().to_string();
        assert!(err.contains("zz.toml:3:"), "{err}");
        assert!(err.contains("max_roundz"), "{err}");
    }
}
