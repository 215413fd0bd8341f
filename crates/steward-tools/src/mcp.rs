//! MCP tools (SPEC M1, T12) as ordinary tools: each tool of a configured MCP server appears
//! as `server__tool` and passes the same gate as every other tool; its output taints the run.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use steward_mcp::{McpManager, McpTool};
use steward_protocol::ToolSpec;

use super::{Tool, ToolContext, ToolError, ToolOutput, ToolRegistry};

/// One MCP server tool.
pub struct McpToolAdapter {
    spec: ToolSpec,
    manager: Arc<McpManager>,
}

#[async_trait]
impl Tool for McpToolAdapter {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// A call naming a secret file is refused by the decision (see `refuse_secret_arguments`).
    fn refusal(&self, args: &Value, workspace: &steward_policy::Workspace) -> Option<ToolError> {
        refuse_secret_arguments(args, workspace).err()
    }

    /// Refuses a call that names a secret file (see `refuse_secret_arguments`).
    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Result<Option<(String, String)>, ToolError> {
        refuse_secret_arguments(args, &ctx.workspace).map(|()| None)
    }

    /// Calls the tool on its server. A server error, an `isError` result, a dead or silent
    /// server are tool failures with the server's words (classified `mcp_unavailable`,
    /// `timeout`, …). Results are cut at the server's `max_output_bytes` (head and tail); the
    /// complete text goes to `full_content`, which the orchestrator saves. A server's request
    /// for input during the call goes to `ctx.elicitor` (the run's owner).
    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        refuse_secret_arguments(args, &ctx.workspace)?;
        let output = self
            .manager
            .call_eliciting(&self.spec.name, args.clone(), ctx.cancel.clone(), ctx.elicitor.clone())
            .await
            .map_err(|e| ToolError { class: e.class(), message: e.to_string(), rule: None })?;
        if output.is_error {
            return Err(ToolError::failed(output.text));
        }
        // The server's `max_output_bytes` cap applies; the whole text is saved beside the run.
        Ok(ToolOutput {
            content: output.text,
            full_content: output.full_text,
            sandbox: "mcp:env-scrub".into(),
            ..Default::default()
        })
    }
}

/// Refuses arguments any string of which (at any depth) names a secret file
/// ([`steward_policy::Workspace::secret_named_by`]): a server that reads files would otherwise
/// read `.env`, or a hard link to it, for the model. Other paths are the server's to allow or
/// refuse. Relative values are taken from the workspace root.
fn refuse_secret_arguments(args: &Value, workspace: &steward_policy::Workspace) -> Result<(), ToolError> {
    let mut stack = vec![args];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(text) => {
                if let Some(err) = workspace.secret_named_by(text) {
                    return Err(err.into());
                }
            }
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    Ok(())
}

impl ToolRegistry {
    /// Adds the tools of the configured MCP servers (starting them). A server that cannot be
    /// listed is left out; the returned messages say which and why.
    pub async fn with_mcp(self, manager: Arc<McpManager>) -> (Self, Vec<String>) {
        self.with_mcp_servers(manager, &[]).await
    }

    /// [`ToolRegistry::with_mcp`], where the servers named in `required` (`required = true`)
    /// must be listed: each one that is not is kept in
    /// [`ToolRegistry::required_unavailable`], which fails a run before its first model call.
    pub async fn with_mcp_servers(mut self, manager: Arc<McpManager>, required: &[String]) -> (Self, Vec<String>) {
        let listing = manager.tools().await;
        for failure in &listing.failures {
            if server_of(failure).is_some_and(|server| required.iter().any(|r| r == server)) {
                self.required_unavailable.push(failure.to_string());
            }
        }
        for McpTool { spec, .. } in listing.tools {
            if self.get(&spec.name).is_some() {
                continue;
            }
            self.insert(Arc::new(McpToolAdapter { spec, manager: manager.clone() }));
        }
        (self, listing.failures.iter().map(|e| format!("{} ({})", e, e.class())).collect())
    }
}

/// The server an error is about, when it names one.
fn server_of(error: &steward_mcp::McpError) -> Option<&str> {
    use steward_mcp::McpError;
    match error {
        McpError::Config { server, .. }
        | McpError::Unavailable { server, .. }
        | McpError::Timeout { server, .. }
        | McpError::Rpc { server, .. }
        | McpError::Protocol { server, .. }
        | McpError::LoginRequired { server, .. }
        | McpError::Cancelled { server } => Some(server),
        McpError::UnknownTool(_) | McpError::InvalidArguments { .. } => None,
    }
}
