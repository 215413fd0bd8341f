//! `shell_command` (SPEC T4): runs one command line with `bash --noprofile --norc -c` in the
//! sandbox. Off by default (`[shell] enabled = true` turns it on).
//!
//! The gate judges the line before it runs: it is split into its simple commands and each
//! is matched against the argv rules of the policy (unparseable lines never run without a
//! human). The command runs with the workspace as working directory, a scrubbed environment
//! (plus the tool's `credential_scope`), no network unless `[shell] network` is `true` (all)
//! or a host list (those hosts through the egress proxy, see [`super::network`]), and a
//! filesystem that is read-only except the `[shell] writable` folders, secret files covered
//! and `$HOME` empty (see `sandbox_paths`). With no writable folder
//! a command cannot change anything, so nothing needs undoing; with writable folders its
//! changes cannot be rolled back, so every call asks (SPEC C5). With any network its output
//! counts as untrusted and taints the run (SPEC C2).

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use steward_protocol::{RiskLevel, ToolSpec};
use steward_sandbox::ExecRequest;

use super::network::Network;
use super::shared::{opt_u64, spec, str_arg};
use super::{Tool, ToolContext, ToolError, ToolOutput};

/// Most bytes of output kept per stream (the orchestrator caps what the model sees further).
const MAX_SHELL_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

/// The `shell_command` tool.
pub struct ShellTool {
    spec: ToolSpec,
    writable: Vec<PathBuf>,
    network: Network,
    memory_bytes: Option<u64>,
    unix_sockets: bool,
}

impl ShellTool {
    /// A shell tool that may write only below `writable` (absolute, inside the workspace),
    /// reach the network as `network` says (nothing, everything, or listed hosts through the
    /// egress proxy), create Unix sockets only when `unix_sockets` is true, and use at most
    /// `memory_bytes` of data memory (`None`: the `[sandbox] memory_mb` limit).
    pub fn new(writable: Vec<PathBuf>, network: Network, memory_bytes: Option<u64>, unix_sockets: bool) -> Self {
        let mut spec = spec(
            "shell_command",
            "Run one shell command line in the workspace (bash, no login files). Prefer the file and git tools; use this for builds, tests and linters. Output and the exit status are returned.",
            json!({
                "command": {"type": "string", "description": "The command line, e.g. `cargo test -p core`."},
                "timeout_ms": {"type": ["integer", "null"], "minimum": 1, "description": "Time limit in ms (at most the configured per-call timeout)."}
            }),
            &["command"],
            RiskLevel::High,
            !writable.is_empty(),
            &[],
        );
        // Without network a command sees what the workspace and the system hold, which is as
        // trusted as reading files; with network its output may come from anywhere.
        spec.untrusted_output = network.enabled();
        ShellTool { spec, writable, network, memory_bytes, unix_sockets }
    }
}

#[async_trait]
impl Tool for ShellTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let command = str_arg(args, "command")?;
        let timeout_ms = opt_u64(args, "timeout_ms")?.unwrap_or(ctx.timeout_ms).clamp(1, ctx.timeout_ms);
        let mut env_allow = ctx.env_allow.clone();
        env_allow.extend(ctx.credentials.get(&self.spec.name).cloned().unwrap_or_default());
        let argv = ["bash", "--noprofile", "--norc", "-c", command].map(String::from).to_vec();
        let request = ExecRequest {
            env_allow,
            timeout: Duration::from_millis(timeout_ms),
            max_output_bytes: MAX_SHELL_OUTPUT_BYTES,
            writable: self.writable.clone(),
            memory_bytes: self.memory_bytes.or(ctx.sandbox.memory_bytes),
            unix_sockets: self.unix_sockets,
            accept_weaker: ctx.accept_weaker.clone(),
            ..ExecRequest::new(argv, ctx.workspace.root().to_path_buf())
        };
        let request = super::sandbox_paths::confine(request, ctx)?;
        let output = super::network::run_with_network(request, &self.network, ctx).await?;
        let content = super::exec::render(&output, MAX_SHELL_OUTPUT_BYTES);
        Ok(ToolOutput { content, sandbox: output.profile, ..Default::default() })
    }
}
