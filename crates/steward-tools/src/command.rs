//! User-defined command tools (SPEC T5, T7, T10): `[[tool]]` entries that run a fixed argv
//! template with typed, validated inputs, in the sandbox, never through a shell.
//!
//! ```toml
//! [[tool]]
//! name = "cargo_test"                      # ^[a-zA-Z0-9_-]{1,64}$, not a built-in tool's name
//! description = "Run the tests of one crate."   # what the model reads
//! command = ["cargo", "test", "-p", { input = "crate" }, "--", { input = "filters" }]
//! cwd = "crates"                           # optional, workspace-relative (default: the root)
//! env = { RUST_BACKTRACE = "1", CARGO_HOME = true }
//! timeout_ms = 600000                      # optional (default: [limits] tool_timeout_ms)
//! risk = "low"                             # safe|low|medium|high|dangerous
//! network = false                          # false: none; true: all; or hosts: ["crates.io"]
//! writes = ["target/**"]                   # workspace paths it may write (default: none)
//! callable = "always"                      # or "chain_only" (offered only inside its chain)
//! compensate = "none"                      # see below
//!
//! [[tool.input]]
//! name = "crate"
//! type = "string"                          # string|number|integer|boolean|array
//! required = true                          # default false
//! pattern = "^[a-z][a-z0-9_-]*$"           # regex (Rust `regex` syntax), strings only
//! description = "The crate to test."
//!
//! [[tool.input]]
//! name = "filters"
//! type = "array"
//! items = "string"                         # or a table: { type = "string", enum = [...], pattern = "..." }
//! min_items = 0
//! max_items = 5
//! ```
//!
//! Meaning:
//! - `command`: argv items are literal strings or `{ input = "NAME" }` placeholders naming a
//!   declared input. A string, number, integer or boolean input becomes one argv item
//!   (`true`/`false` for booleans); an array input becomes one item per element; an optional
//!   input that is absent or `null` becomes no item at all. No shell is involved unless the
//!   argv names one itself (the sandbox then runs it without startup files).
//! - Option injection: a string input (or array element) starting with `-` is refused before
//!   anything runs, unless the input says `allow_dash = true`.
//! - Every other value is a path too when it names one: the whole value, the parts between
//!   `=`, `,`, `:`, `;` (`--file=.env`, `a,.env`), and those without a leading `@`, when
//!   something of that name exists (relative to `cwd`, or absolute) or the spelling is a
//!   secret path. The gate resolves them like path inputs (read access, write access when
//!   the tool has `writes`) and refuses the call on any refusal: `secret_path` (also for a
//!   hard link to a secret file), `workspace_boundary` (an existing path outside the
//!   workspace, `..`, `/`), `ignored_path`, `deny_path`. There is no opt-out.
//! - `path = true` (strings, or arrays whose items are strings): the value is a workspace
//!   path. The gate resolves it before the call is decided (canonical, inside the workspace,
//!   not a secret path, not ignored by `.gitignore`/`.stewardignore`, not matched by
//!   `deny_path`; write access when the tool has `writes`) and refuses the call on any match;
//!   the tool resolves it again. The command receives the resolved workspace-relative path
//!   (`.` for the root, `./-name` for a name starting with `-`) when `cwd` is the workspace
//!   root, and the resolved absolute path otherwise.
//! - `env`: a string value sets the variable; `true` passes it from Steward's environment,
//!   which is allowed only for names on the sandbox allow-list (`PATH HOME USER LANG LC_ALL
//!   TERM TZ TMPDIR SHELL`, `LC_*`), in `[sandbox] env_allow`, or in the tool's
//!   `[policy.credential_scope]`. Unlike the built-in tools, a command tool receives the
//!   `[sandbox] env_allow` names only when it lists them here; its `credential_scope`
//!   names it always receives.
//! - `writes`: globs of workspace paths the tool may write. The sandbox confines by path, not
//!   by glob: each glob grants its literal leading part (`target/**` grants `target/`,
//!   `docs/*.md` grants `docs/`, `**` grants the workspace), which must exist when the call
//!   runs and pass the workspace's path rules. A tool with `writes` is a writing tool: every
//!   call needs approval unless its `compensate` is declared and tested (below).
//! - `network`: `false` (default), `true` (the whole network), or a list of hosts reached
//!   only through Steward's egress proxy (`["crates.io", "*.example.com", "host:8080"]`; see
//!   [`super::network`]).
//! - `risk` defaults to `high` with `writes`, `medium` with any network, else `low`.
//!   Output of a tool with any network counts as untrusted (it taints the run).
//! - `compensate`: `"none"` or an argv template (same placeholders as `command`) that undoes
//!   a call. Each completed call registers it as the call's rollback step with the call's
//!   arguments; `steward rollback` expands the template with them exactly as `command` is
//!   expanded (each value one argv item, never through a shell; paths and option injection
//!   checked again) and runs it sandboxed like the tool itself (same `cwd`, `env`, `writes`,
//!   `network`, `timeout_ms`). A non-zero exit is a failed undo and stops the rollback. Until
//!   `steward tools test-compensation NAME` has shown that the compensation restores what the
//!   command changed (recorded in the user's `[tested_compensations]` for exactly this
//!   definition), every call of a writing tool still needs approval; after it, the policy
//!   decides as for the built-in writers.
//! - The model sees only the name, the description and the inputs (as a strict function
//!   schema); never the command, `cwd` or `env`.
//!
//! Output: `[exit status N]`, stdout, then `[stderr]` and stderr when there is any. A non-zero
//! exit status is a tool failure carrying that output.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use steward_policy::Access;
use steward_protocol::ToolSpec;
use steward_sandbox::ExecRequest;

use super::{Tool, ToolContext, ToolError, ToolOutput};
use crate::rollback::Compensation;
use input::{Template, input_schema, named_paths};

use steward_config::literal_prefix;
use steward_config::{ArgItem, Callable, CommandToolConfig, Compensate, DefinitionError, EnvValue};

mod input;

/// Most bytes of output kept per stream (the orchestrator caps what the model sees further).
const MAX_COMMAND_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

/// Most characters of output carried in a failure message (failures are not capped later).
const MAX_FAILURE_CHARS: usize = 8_000;

/// A `[[tool]]` ready to run.
pub struct CommandTool {
    spec: ToolSpec,
    config: CommandToolConfig,
    /// The compensation passed `steward tools test-compensation` for this definition.
    compensation_tested: bool,
}

impl CommandTool {
    /// Builds the tool from a definition ([`CommandToolConfig::validate`] runs first).
    /// The input schema accepts an absent or `null` optional input; path inputs (and arrays
    /// of them) are listed in [`ToolSpec::path_inputs`].
    pub fn new(config: CommandToolConfig) -> Result<Self, DefinitionError> {
        config.validate()?;
        let spec = ToolSpec {
            name: config.name.clone(),
            description: config.description.clone(),
            input_schema: input_schema(&config.inputs),
            risk: config.risk_level(),
            writes: !config.writes.is_empty(),
            path_inputs: config.inputs.iter().filter(|i| i.path).map(|i| i.name.clone()).collect(),
            untrusted_output: config.network.enabled(),
        };
        Ok(CommandTool { spec, config, compensation_tested: false })
    }

    /// Marks the tool's compensation as tested for this definition
    /// ([`steward_config::Config::compensation_tested`]): calls are then rolled back like the
    /// built-in writers' and need no approval for that reason alone. Ignored without a
    /// `compensate` command.
    pub fn with_compensation_tested(mut self, tested: bool) -> Self {
        self.compensation_tested = tested && self.compensate_template().is_some();
        self
    }

    /// The `compensate` argv template, when one is declared.
    fn compensate_template(&self) -> Option<&[ArgItem]> {
        match &self.config.compensate {
            Some(Compensate::Command(argv)) => Some(argv),
            _ => None,
        }
    }

    /// The definition it was built from.
    pub fn config(&self) -> &CommandToolConfig {
        &self.config
    }

    /// The argv (of `template`), working directory and writable paths for `args`, or the
    /// refusal. Nothing runs here; it is called for the preview (before anyone is asked) and
    /// again to run.
    fn prepare(&self, template: &[ArgItem], args: &Value, ctx: &ToolContext) -> Result<Prepared, ToolError> {
        let ws = &ctx.workspace;
        let cwd = match &self.config.cwd {
            None => ws.root().to_path_buf(),
            Some(dir) => {
                let resolved = ws.resolve(dir, Access::Read)?;
                if !resolved.abs.is_dir() {
                    return Err(ToolError::failed(format!("the tool's cwd `{dir}` is not a directory")));
                }
                resolved.abs
            }
        };
        let at_root = cwd == ws.root();
        let access = if self.spec.writes { Access::Write } else { Access::Read };
        let expander =
            Template { inputs: &self.config.inputs, access, at_root, cwd: self.config.cwd.as_deref().unwrap_or("") };
        let argv = expander.expand(template, args, ws)?;
        let mut writable = Vec::new();
        for glob in &self.config.writes {
            let prefix = literal_prefix(glob);
            super::writable_folder(&prefix).map_err(|m| ToolError::refused("protected_path", m.to_string()))?;
            let resolved = ws.resolve(&prefix, Access::Write)?;
            if !resolved.abs.exists() {
                return Err(ToolError::failed(format!("`{prefix}` (from writes `{glob}`) does not exist")));
            }
            writable.push(resolved.abs);
        }
        let mut env_allow: Vec<String> = ctx.credentials.get(&self.spec.name).cloned().unwrap_or_default();
        let mut env_set = Vec::new();
        for (name, value) in &self.config.env {
            match value {
                EnvValue::Set(text) => env_set.push((name.clone(), text.clone())),
                EnvValue::Pass => {
                    let allowed = steward_sandbox::DEFAULT_ENV_ALLOW.contains(&name.as_str())
                        || name.starts_with("LC_")
                        || ctx.env_allow.contains(name)
                        || env_allow.contains(name);
                    if !allowed {
                        return Err(ToolError::refused(
                            "env_not_allowed",
                            format!("env `{name}` is not in the sandbox allow-list or the tool's credential_scope"),
                        ));
                    }
                    env_allow.push(name.clone());
                }
            }
        }
        Ok(Prepared { argv, cwd, writable, env_allow, env_set })
    }
}

/// What one call runs.
struct Prepared {
    argv: Vec<String>,
    cwd: PathBuf,
    writable: Vec<PathBuf>,
    env_allow: Vec<String>,
    env_set: Vec<(String, String)>,
}

#[async_trait]
impl Tool for CommandTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn reaches_any_host(&self) -> bool {
        self.config.network == steward_config::Network::All
    }

    fn approval_ttl_seconds(&self) -> Option<u64> {
        self.config.approval_ttl_seconds
    }

    /// Checks the call completely (inputs, option injection, paths, writable paths, env)
    /// without running it, so a bad call is refused before anyone is asked.
    /// The paths the values of inputs not declared `path` name (existing files and folders,
    /// secret spellings), so the gate refuses `{ input = "file" }` given `.env` like a path
    /// input given it.
    fn target_paths(&self, args: &Value, workspace: &steward_policy::Workspace) -> Vec<String> {
        named_paths(&self.config.inputs, args, workspace, self.config.cwd.as_deref().unwrap_or(""))
    }

    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Result<Option<(String, String)>, ToolError> {
        self.prepare(&self.config.command, args, ctx).map(|_| None)
    }

    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let mut output = self.execute(&self.config.command, args, ctx, "").await?;
        output.compensation = self.compensate_template().map(|_| Compensation::RunCompensate {
            tool: self.spec.name.clone(),
            definition_sha256: self.config.definition_sha256(),
            arguments: args.clone(),
        });
        Ok(output)
    }

    fn compensable(&self) -> bool {
        self.compensation_tested
    }

    fn compensation_declared(&self) -> bool {
        self.compensate_template().is_some()
    }

    fn chain_only(&self) -> bool {
        self.config.callable == Callable::ChainOnly
    }
}

impl CommandTool {
    /// Runs the `compensate` command for a call made with `args` (the undo step of
    /// `steward rollback`): expanded and sandboxed exactly like `command`. Errors: no
    /// `compensate` command, a refused argument or path, a sandbox failure, or a non-zero exit
    /// (carrying the output).
    pub async fn compensate(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(template) = self.compensate_template() else {
            return Err(ToolError::failed(format!("`{}` declares no compensate command", self.spec.name)));
        };
        self.execute(template, args, ctx, " compensation").await
    }

    /// Expands `template` with `args` and runs it in the sandbox; `what` names the command in
    /// a failure (`""` for the tool's own command).
    async fn execute(
        &self,
        template: &[ArgItem],
        args: &Value,
        ctx: &ToolContext,
        what: &str,
    ) -> Result<ToolOutput, ToolError> {
        let prepared = self.prepare(template, args, ctx)?;
        let timeout_ms = self.config.timeout_ms.unwrap_or(ctx.timeout_ms).max(1);
        let request = ExecRequest {
            env_allow: prepared.env_allow,
            env_set: prepared.env_set,
            timeout: Duration::from_millis(timeout_ms),
            max_output_bytes: MAX_COMMAND_OUTPUT_BYTES,
            writable: prepared.writable,
            memory_bytes: ctx.sandbox.memory_bytes,
            unix_sockets: self.config.unix_sockets,
            accept_weaker: ctx.accept_weaker.clone(),
            ..ExecRequest::new(prepared.argv, prepared.cwd)
        };
        let request = super::sandbox_paths::confine(request, ctx)?;
        let output = super::network::run_with_network(request, &self.config.network, ctx).await?;
        let content = super::exec::render(&output, MAX_COMMAND_OUTPUT_BYTES);
        if output.exit_code != Some(0) {
            let (shown, _) = steward_protocol::head_tail_chars(&content, MAX_FAILURE_CHARS, "");
            return Err(ToolError::failed(format!("`{}`{what} failed: {shown}", self.spec.name)));
        }
        Ok(ToolOutput { content, sandbox: output.profile, ..Default::default() })
    }
}

/// Builds the command tools of a configuration. Errors name the tool: an invalid definition,
/// a name taken by a built-in tool (`taken`), or an `env = true` entry whose name is neither
/// on the sandbox allow-list, in `env_allow`, nor in the tool's credential scope
/// (`credentials(tool)`). `tested(definition)` says whether its compensation passed
/// `steward tools test-compensation` ([`steward_config::Config::compensation_tested`]).
pub fn build_tools(
    configs: &[CommandToolConfig],
    taken: &dyn Fn(&str) -> bool,
    env_allow: &[String],
    credentials: &dyn Fn(&str) -> Vec<String>,
    tested: &dyn Fn(&CommandToolConfig) -> bool,
) -> Result<Vec<Arc<dyn Tool>>, DefinitionError> {
    let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(configs.len());
    for config in configs {
        if taken(&config.name) {
            return Err(DefinitionError {
                tool: config.name.clone(),
                input: None,
                message: "the name is taken by a built-in tool".into(),
            });
        }
        let scope = credentials(&config.name);
        for (name, value) in &config.env {
            let allowed = steward_sandbox::DEFAULT_ENV_ALLOW.contains(&name.as_str())
                || name.starts_with("LC_")
                || env_allow.contains(name)
                || scope.contains(name);
            if *value == EnvValue::Pass && !allowed {
                return Err(DefinitionError {
                    tool: config.name.clone(),
                    input: None,
                    message: format!(
                        "env `{name}` = true, but `{name}` is not on the sandbox allow-list, in [sandbox] env_allow, or in the tool's credential_scope"
                    ),
                });
            }
        }
        tools.push(Arc::new(CommandTool::new(config.clone())?.with_compensation_tested(tested(config))));
    }
    Ok(tools)
}

#[cfg(test)]
mod tests {
    use steward_protocol::RiskLevel;

    use super::*;

    #[test]
    fn a_host_list_counts_as_network_for_risk_and_taint() {
        let tool = |network: &str| {
            let text = format!("name = \"t\"\ndescription = \"d\"\ncommand = [\"true\"]\nnetwork = {network}\n");
            let config: CommandToolConfig = toml::from_str(&text).unwrap();
            let spec = CommandTool::new(config).unwrap().spec().clone();
            (spec.risk, spec.untrusted_output)
        };
        assert_eq!(tool("false"), (RiskLevel::Low, false));
        assert_eq!(tool("true"), (RiskLevel::Medium, true));
        assert_eq!(tool("[\"crates.io\"]"), (RiskLevel::Medium, true));
    }

    #[test]
    fn literal_prefix_stops_at_the_first_glob_component() {
        assert_eq!(literal_prefix("target/**"), "target");
        assert_eq!(literal_prefix("docs/*.md"), "docs");
        assert_eq!(literal_prefix("out/sub/file.txt"), "out/sub/file.txt");
        assert_eq!(literal_prefix("**"), "");
    }
}
