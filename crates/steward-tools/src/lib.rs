//! The tool interface (SPEC T1) and the registry of tools offered to planners.
//!
//! A tool never decides whether it may run: the orchestrator asks the gate first. A tool
//! validates its own arguments again (defence in depth) and resolves every path through
//! [`steward_policy::Workspace`], so a refusal can happen in either place but never be skipped.
//!
//! The built-in tools (files, search, git, patches, the shell, `[[tool]]` commands, MCP
//! servers' tools, the `lsp_*` tools) live here; [`rollback`] keeps the snapshots that undo
//! their changes, and [`workspace_index`] reads the workspace's search index for them and for
//! the run's context.
//!
//! Every other module is private: what the other crates use is re-exported by name below.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
// Every type a public item hands out can be named from here: the chosen list is complete.
#![deny(unnameable_types)]

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use steward_protocol::{ErrorClass, ToolSpec};
use tokio_util::sync::CancellationToken;

mod added;

/// The tools a small model finds first: reading, listing and searching, in that order.
const FIRST_OFFERED: &[&str] = &["read", "list", "search"];
/// The tools offered last: a patch's schema is the hardest to fill in, and a small model
/// tends to call the first tool of a list when unsure.
const LAST_OFFERED: &[&str] = &["propose_patch", "apply_patch"];

/// Puts `specs` in the order they are offered to a model: `read`, `list` and `search` first,
/// then the other tools that change nothing, then those that change files (each group by
/// name), and `propose_patch` and `apply_patch` last.
pub fn offer_order(specs: &mut [ToolSpec]) {
    specs.sort_by_cached_key(|spec| {
        let name = spec.name.as_str();
        let group = match (FIRST_OFFERED.iter().position(|n| *n == name), LAST_OFFERED.iter().position(|n| *n == name))
        {
            (Some(first), _) => (0, first),
            (_, Some(last)) => (3, last),
            _ if !spec.writes => (1, 0),
            _ => (2, 0),
        };
        (group, spec.name.clone())
    });
}

mod command;
mod exec;
mod files;
mod filter;
mod git;
mod lsp;
mod mcp;
mod network;
mod patch;
pub mod rollback;
pub mod sandbox_paths;
mod search;
mod search_index;
mod shared;
mod shell;
pub mod workspace_index;

pub use added::{AddToolError, MAX_ADDED_TOOLS};
pub use command::CommandTool;
pub use filter::FilterError;
pub use lsp::client::{LspError, LspManager, MAX_RESTARTS as LSP_MAX_RESTARTS};
pub use network::{EgressLog, TestHostsError, test_hosts};
pub use search_index::{NAME as SEARCH_INDEX_TOOL, SearchIndexTool};
pub use shell::{DirectCommand, ShellTool, Visible, direct_argv};
// The configuration's types of the tools above, for callers that build them.
pub use steward_config::{ArgItem, CommandToolConfig, Network, OutputFilterConfig, writable_folder};

/// What a tool may use while it runs.
#[derive(Clone)]
pub struct ToolContext {
    /// The workspace, with its path rules.
    pub workspace: Arc<steward_policy::Workspace>,
    /// Cancelled when the run is cancelled; long tools stop early.
    pub cancel: CancellationToken,
    /// Extra environment variable names subprocesses may receive (beyond the sandbox's
    /// built-in allow-list).
    pub env_allow: Vec<String>,
    /// Per-call timeout for subprocesses, in ms.
    pub timeout_ms: u64,
    /// Where writing tools keep snapshots for rollback.
    pub snapshots: crate::rollback::Snapshots,
    /// Sandbox protections the configuration accepts running without (`[sandbox] accept_weaker`).
    pub accept_weaker: Vec<steward_sandbox::Protection>,
    /// Environment names each tool may receive beyond the allow-list (the policy's
    /// `credential_scope`, by tool name; none by default).
    pub credentials: std::collections::HashMap<String, Vec<String>>,
    /// `[sandbox]` settings for every sandboxed program (home, memory).
    pub sandbox: sandbox_paths::SandboxSettings,
    /// Answers an MCP server's requests for input during this call: set per call by the
    /// orchestrator, which puts them to the run's owner; `None` declines them.
    pub elicitor: Option<Arc<dyn steward_mcp::Elicitor>>,
    /// Collects the egress proxy's records of a call whose tool has a host list: set per
    /// call by the orchestrator, which audits them; `None` logs them only.
    pub egress: Option<network::EgressLog>,
}

/// A successful tool result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOutput {
    /// Text shown to the model (before redaction and capping, which the orchestrator does).
    pub content: String,
    /// The complete output when `content` was already cut by the tool (an MCP server's byte
    /// cap): saved beside the run, not shown to the model.
    pub full_content: Option<String>,
    /// For writing tools: each file changed, as `(workspace-relative path, unified diff)`.
    pub changes: Vec<(String, String)>,
    /// Sandbox profile used, e.g. `env-scrub,netns,rlimits`; empty when no subprocess ran.
    pub sandbox: String,
    /// For writing tools: what undoes the change (SPEC C5).
    pub compensation: Option<crate::rollback::Compensation>,
    /// Workspace-relative files whose content the output quotes beyond the call's own path
    /// inputs (the sections of a `git_show` or a whole-workspace `git_diff`): the run is
    /// tainted when one is under `untrusted_paths`, as reading it would have.
    pub quoted_paths: Vec<String>,
}

/// A tool failure: shown to the model as an error result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// Error class (`tool_failed`, `timeout`, `cancelled`, …).
    pub class: ErrorClass,
    /// What went wrong, for the user and the model. Never contains file content of a
    /// refused path.
    pub message: String,
    /// The rule that refused it when the refusal came from a path or validation rule
    /// (`workspace_boundary`, `secret_path`, `invalid_arguments`, …).
    pub rule: Option<String>,
}

impl ToolError {
    /// A `tool_failed` error.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError { class: ErrorClass::ToolFailed, message: message.into(), rule: None }
    }

    /// A refusal by a named rule (class `tool_failed`).
    pub fn refused(rule: impl Into<String>, message: impl Into<String>) -> Self {
        ToolError { class: ErrorClass::ToolFailed, message: message.into(), rule: Some(rule.into()) }
    }
}

impl From<steward_policy::PathError> for ToolError {
    fn from(err: steward_policy::PathError) -> Self {
        ToolError::refused(err.rule(), err.to_string())
    }
}

/// A tool (SPEC T1).
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description, input schema, risk and path inputs.
    fn spec(&self) -> &ToolSpec;

    /// Shows what the call would do without doing it (for approval prompts and
    /// `patch_proposed`): `Ok(Some((path, unified diff)))` for writing tools, `Ok(None)`
    /// when there is nothing to preview. Errors mean the call cannot succeed (for example the
    /// text to replace is not in the file) and are returned to the model before anyone is
    /// asked.
    async fn preview(&self, _args: &Value, _ctx: &ToolContext) -> Result<Option<(String, String)>, ToolError> {
        Ok(None)
    }

    /// Runs the call.
    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;

    /// True when a successful run returns a [`ToolOutput::compensation`]. A writing tool that
    /// cannot be undone always needs approval (SPEC C5).
    fn compensable(&self) -> bool {
        false
    }

    /// True when the tool declares a way to undo its calls, whether or not it is trusted yet
    /// ([`Tool::compensable`] says that): a `[[tool]]` with a `compensate` command not yet
    /// tested. The decision then names why it still asks.
    fn compensation_declared(&self) -> bool {
        self.compensable()
    }

    /// True for a tool a model wrote (a generated tool): only a rule naming it exactly allows
    /// it unasked, never a glob, a default or its risk level.
    fn is_generated(&self) -> bool {
        false
    }

    /// True when the tool can send to any host (`network = true`, the web of a generated
    /// tool) rather than to named ones (a host list, an MCP server): such a sink asks once the
    /// run has read anything (`data_flow`, see [`steward_policy::GateContext::open_sink`]).
    fn reaches_any_host(&self) -> bool {
        false
    }

    /// Workspace paths the call would touch beyond its top-level path inputs (the files of a
    /// patch, the files a `[[tool]]`'s other values name), for the gate to check and match
    /// like path inputs. A path that cannot be determined makes the call fail later, in
    /// `preview`/`run`, never pass unchecked.
    fn target_paths(&self, _args: &Value, _workspace: &steward_policy::Workspace) -> Vec<String> {
        Vec::new()
    }

    /// A refusal known from the call's arguments alone (an MCP tool's argument naming a secret
    /// file): decided with the policy in `steward_core::decide`, so the run and `steward
    /// policy check` refuse it alike (`deny`, named by the error's rule) before anything runs.
    fn refusal(&self, _args: &Value, _workspace: &steward_policy::Workspace) -> Option<ToolError> {
        None
    }

    /// Seconds an approval request for a call of this tool stays open, when its definition
    /// sets it (`[[tool]] approval_ttl_seconds`, SPEC C4); `None` for the default.
    fn approval_ttl_seconds(&self) -> Option<u64> {
        None
    }

    /// Built-in actions the call performs under this tool's name (a patch that removes a file
    /// `delete`s it), so that `blocked_actions` cannot be sidestepped.
    fn implied_actions(&self, _args: &Value) -> Vec<String> {
        Vec::new()
    }

    /// True when a call only reads the workspace and its result depends on nothing but its
    /// arguments and the workspace's files (the built-in `read`, `list`, `search`, git reads
    /// and `propose_patch`): a repeat of a successful call with nothing changed since is then
    /// answered from the run's record instead of running again. False by default; never true
    /// for programs, MCP tools or anything whose output can change on its own.
    fn pure_read(&self) -> bool {
        false
    }

    /// True when a call sends data to another service while it runs although it only reads
    /// (the `search_index` tool with `[search] embeddings`: changed chunks and the query go to
    /// the embeddings provider). Such a call is not let run before the record that allows it is
    /// on disk, unlike other pure reads ([`Tool::pure_read`]). False by default.
    fn sends_data(&self) -> bool {
        false
    }

    /// Workspace-relative paths the call reads (files, or directories it walks) beyond its
    /// path inputs, such as the workspace root a search with no `path` walks (`""`); checked
    /// against `[policy] untrusted_paths`.
    fn default_read_paths(&self, _args: &Value) -> Vec<String> {
        Vec::new()
    }

    /// True for tools offered only inside their toolchain (`callable = "chain_only"`, SPEC T6).
    fn chain_only(&self) -> bool {
        false
    }
}

/// The tools a run may offer, by name, in a stable order.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    /// `[[output_filter]]`s (SPEC T8), applied by the orchestrator to successful outputs.
    filters: Arc<filter::OutputFilters>,
    /// Why each `required = true` MCP server could not be listed (see
    /// [`ToolRegistry::with_mcp_servers`]).
    required_unavailable: Vec<String>,
    /// Tools added while the run goes on (generated tools); `None` when it cannot change.
    added: Option<Arc<added::AddedTools>>,
    /// The language servers behind the `lsp_*` tools (SPEC T11); `None` when no `[[lsp]]`
    /// server serves a file of the workspace.
    lsp: Option<Arc<crate::lsp::client::LspManager>>,
    /// Its tools run programs in the sandbox (`shell_command`, `[[tool]]`s): see
    /// [`ToolRegistry::warm_up_sandbox`].
    sandboxed: bool,
}

/// Why a configuration's tools cannot be set up ([`ToolRegistry::for_config`]); nothing runs.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The policy does not compile.
    #[error(transparent)]
    Policy(#[from] steward_policy::PolicyError),
    /// A `[shell] writable` folder may not be writable.
    #[error("[shell] writable `{dir}`: {source}")]
    ShellWritable {
        /// The folder as written.
        dir: String,
        /// Why not.
        source: steward_config::WritableFolderError,
    },
    /// A `[shell] writable` folder is not a writable place inside the workspace.
    #[error("[shell] writable `{dir}`: {source}")]
    ShellWritablePath {
        /// The folder as written.
        dir: String,
        /// Why not.
        source: steward_policy::PathError,
    },
    /// A `[[tool]]` definition is invalid.
    #[error(transparent)]
    Command(#[from] steward_config::DefinitionError),
    /// An `[[output_filter]]` does not compile.
    #[error(transparent)]
    Filter(#[from] filter::FilterError),
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts the sandbox's one-time probes on a background thread ([`steward_sandbox::warm_up`])
    /// when this registry's tools run programs in the sandbox (it was made by
    /// [`ToolRegistry::for_config`] from a configuration that enables `shell_command` or defines
    /// a `[[tool]]`); else does nothing. A run calls it once its first model request is on its
    /// way, so that the probes overlap the wait for the model's reply instead of the run's
    /// start-up, and are done before the first call in the common case. Calling it again does
    /// nothing; a call made while they still run waits only for the rest.
    pub fn warm_up_sandbox(&self) {
        if self.sandboxed {
            steward_sandbox::warm_up();
        }
    }

    /// The built-in file, patch, search and git tools (SPEC T2, T3, X1–X3). They keep no state
    /// of their own (a call gets its [`ToolContext`]), so every registry shares one set: a run
    /// does not carry its own copy of their schemas.
    pub fn builtin() -> Self {
        static BUILTIN: std::sync::OnceLock<ToolRegistry> = std::sync::OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                let mut registry = Self::new();
                for tool in files::tools().into_iter().chain(patch::tools()).chain(search::tools()).chain(git::tools())
                {
                    registry.insert(tool);
                }
                registry
            })
            .clone()
    }

    /// The tools a configuration offers: the built-in ones, plus `shell_command` when
    /// `[shell] enabled = true` (its writable folders must be inside the workspace).
    pub fn for_config(
        config: &steward_config::Config,
        workspace: &steward_policy::Workspace,
    ) -> Result<Self, RegistryError> {
        let policy = steward_policy::Policy::new(&config.policy)?;
        Self::for_config_with_policy(config, workspace, &policy)
    }

    /// [`ToolRegistry::for_config`] with `policy` already compiled from `config.policy`.
    pub fn for_config_with_policy(
        config: &steward_config::Config,
        workspace: &steward_policy::Workspace,
        policy: &steward_policy::Policy,
    ) -> Result<Self, RegistryError> {
        let mut registry = Self::builtin();
        registry.sandboxed = config.shell.enabled || !config.tools.is_empty();
        if config.shell.enabled {
            let mut writable = Vec::new();
            for dir in &config.shell.writable {
                writable_folder(dir).map_err(|source| RegistryError::ShellWritable { dir: dir.clone(), source })?;
                let resolved = workspace
                    .resolve(dir, steward_policy::Access::Write)
                    .map_err(|source| RegistryError::ShellWritablePath { dir: dir.clone(), source })?;
                writable.push(resolved.abs);
            }
            let memory = config.shell.memory_mb.map(|mb| mb.saturating_mul(1024 * 1024));
            registry.insert(Arc::new(shell::ShellTool::new(
                writable,
                config.shell.network.clone(),
                memory,
                config.shell.unix_sockets,
            )));
        }
        // Language-server tools (SPEC T11), when a server serves files of the workspace.
        let serving = crate::lsp::client::LspManager::serving(workspace, &config.lsp);
        if !serving.is_empty() {
            let manager = Arc::new(crate::lsp::client::LspManager::new(serving));
            for tool in lsp::tools(manager.clone()) {
                registry.insert(tool);
            }
            registry.lsp = Some(manager);
        }
        // The workspace search index (SPEC K); a run gives it its state folder.
        if config.search.enabled {
            registry.insert(Arc::new(search_index::SearchIndexTool::new(None, config.search.index_options())));
        }
        // User-defined command tools (SPEC T5): never replacing a built-in tool.
        let builtin = registry.clone();
        let commands = command::build_tools(
            &config.tools,
            &|name| builtin.get(name).is_some(),
            &config.sandbox.env_allow,
            &|name| policy.credential_scope(name),
            &|definition| config.compensation_tested(definition),
        )?;
        for tool in commands {
            registry.insert(tool);
        }
        registry.filters = Arc::new(filter::OutputFilters::new(&config.output_filters)?);
        if config.generated_tools.enabled {
            registry.allow_adding();
        }
        Ok(registry)
    }

    /// `text` (a tool's redacted output) after the output filters that apply to `tool`.
    pub fn filter_output<'a>(&self, tool: &str, text: &'a str) -> std::borrow::Cow<'a, str> {
        self.filters.apply(tool, text)
    }

    /// Why the first `required = true` MCP server that could not be started or listed is
    /// missing; a run with such a registry fails before its first model call (class
    /// `mcp_unavailable`). `None` when every required server answered.
    pub fn required_unavailable(&self) -> Option<&str> {
        self.required_unavailable.first().map(String::as_str)
    }

    /// Adds or replaces a tool.
    pub fn insert(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name.clone(), tool);
    }

    /// Looks a tool up by name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name).or_else(|| self.added.as_ref().and_then(|added| added.get(name)))
    }

    /// Specs of every tool, sorted by name.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> = self.tools.values().map(|t| t.spec().clone()).collect();
        if let Some(added) = &self.added {
            specs.extend(added.current().into_iter().map(|t| t.spec().clone()));
            specs.sort_by(|a, b| a.name.cmp(&b.name));
        }
        specs
    }

    /// Lets this registry (and every clone made from now on) take tools while the run goes
    /// on ([`ToolRegistry::add_while_running`]); a registry starts without it.
    pub fn allow_adding(&mut self) {
        self.added = Some(Arc::new(added::AddedTools::new()));
    }

    /// Adds `tool` for every holder of this registry: offered from the next request to the
    /// planner on. A newer tool of the same name replaces an added one; a built-in or
    /// configured tool is never replaced ([`AddToolError::Taken`]).
    pub fn add_while_running(&self, tool: Arc<dyn Tool>) -> Result<(), AddToolError> {
        let added = self.added.as_ref().ok_or(AddToolError::Fixed)?;
        let name = &tool.spec().name;
        if self.tools.contains_key(name) {
            return Err(AddToolError::Taken(name.clone()));
        }
        added.add(tool)
    }

    /// The language servers of the `lsp_*` tools, when the registry offers them.
    pub fn lsp(&self) -> Option<&Arc<crate::lsp::client::LspManager>> {
        self.lsp.as_ref()
    }

    /// True when [`ToolRegistry::allow_adding`] was called.
    pub fn can_add(&self) -> bool {
        self.added.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tool a configuration can enable without a server has an input schema that reads
    /// alike as JSON Schema draft 7 and 2020-12, so a run checks its calls' arguments without
    /// building the 2020-12 meta-schema's validator (see `steward_policy::schema`).
    #[test]
    fn built_in_tools_schemas_compile_as_draft_7() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = steward_policy::Workspace::open(dir.path(), &[]).unwrap();
        let mut config = steward_config::Config::default();
        config.shell.enabled = true;
        config.search.enabled = true;
        let registry = ToolRegistry::for_config(&config, &workspace).unwrap();
        let specs = registry.specs();
        assert!(specs.iter().any(|s| s.name == "shell_command") && specs.iter().any(|s| s.name == "read"));
        for spec in specs {
            assert!(
                steward_policy::schema::as_draft7(&spec.input_schema).is_some(),
                "{}: {}",
                spec.name,
                spec.input_schema
            );
        }
    }

    #[test]
    fn simple_tools_are_offered_first_and_patches_last() {
        let mut specs: Vec<ToolSpec> = [
            ("apply_patch", true),
            ("delete", true),
            ("edit", true),
            ("git_status", false),
            ("list", false),
            ("propose_patch", false),
            ("read", false),
            ("search", false),
            ("git_diff", false),
            ("write", true),
        ]
        .iter()
        .map(|(name, writes)| ToolSpec {
            name: name.to_string(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            risk: steward_protocol::RiskLevel::Low,
            writes: *writes,
            path_inputs: Vec::new(),
            untrusted_output: false,
        })
        .collect();
        offer_order(&mut specs);
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "read",
                "list",
                "search",
                "git_diff",
                "git_status",
                "delete",
                "edit",
                "write",
                "propose_patch",
                "apply_patch"
            ]
        );
    }
}
