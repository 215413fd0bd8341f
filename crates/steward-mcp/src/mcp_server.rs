//! Steward as an MCP server (SPEC M2, the protocol side): four narrow tools offered to a remote
//! assistant, answered by a [`RunService`] that the `steward` binary implements over its
//! store and run loop.
//!
//! The tools are `submit_task`, `list_runs`, `get_run` and `list_pending_approvals`
//! ([`TOOL_NAMES`]). None of them can approve a call, change policy or configuration: what an
//! assistant sends is data for a run, never a grant. Approving stays with the owner (terminal
//! or web UI); it is deliberately not an MCP tool.
//!
//! Arguments are checked here against each tool's schema (unknown fields are refused) before
//! the service sees them. A service error becomes a tool result with `isError: true` (the
//! assistant sees the message); an unknown tool is a JSON-RPC `invalid_params` error. A
//! successful result carries the service's JSON both as `structuredContent` and as one text
//! part. Protocol reference: the MCP specification's `tools/list` and `tools/call`.

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// `submit_task`: start a run, answer its `run_id` at once.
pub const SUBMIT_TASK: &str = "submit_task";
/// `list_runs`: recent runs of the owner, newest first.
pub const LIST_RUNS: &str = "list_runs";
/// `get_run`: one run's status and final answer.
pub const GET_RUN: &str = "get_run";
/// `list_pending_approvals`: approval requests waiting for the owner (read only).
pub const LIST_PENDING_APPROVALS: &str = "list_pending_approvals";
/// Every tool the server offers, in the order `tools/list` gives them.
pub const TOOL_NAMES: [&str; 4] = [SUBMIT_TASK, LIST_RUNS, GET_RUN, LIST_PENDING_APPROVALS];

/// Default and largest `limit` of `list_runs`.
pub const LIST_RUNS_DEFAULT: u32 = 20;
/// Largest `limit` of `list_runs`.
pub const LIST_RUNS_MAX: u32 = 200;
/// Longest accepted task text, in characters.
pub const MAX_TASK_CHARS: usize = 100_000;

/// Arguments of `submit_task`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitTask {
    /// An existing directory on the server's machine (checked by the service).
    pub workspace: String,
    /// The task in plain words; not empty, at most [`MAX_TASK_CHARS`] characters.
    pub task: String,
}

/// Arguments of `list_runs`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListRuns {
    /// How many runs, 1 to [`LIST_RUNS_MAX`]; [`LIST_RUNS_DEFAULT`] when absent.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Arguments of `get_run`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetRun {
    /// The run id (`run_…`).
    pub run_id: String,
}

/// Arguments of `list_pending_approvals`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListPendingApprovals {
    /// Only this run's requests; every unfinished run of the owner when absent.
    #[serde(default)]
    pub run_id: Option<String>,
}

/// What the tools do. `Ok` is the JSON answered to the assistant; `Err` a message it sees as
/// a failed tool call (it must not contain secrets: it is sent as is).
pub trait RunService: Send + Sync + 'static {
    /// Starts a run and returns at once, e.g. `{"run_id": "run_…", "status": "running"}`.
    fn submit_task(&self, args: SubmitTask) -> impl Future<Output = Result<Value, String>> + Send;
    /// Recent runs, e.g. `{"runs": [{"run_id", "status", "stop_reason", "task", "created_at"}]}`.
    fn list_runs(&self, args: ListRuns) -> impl Future<Output = Result<Value, String>> + Send;
    /// One run's state and, once finished, its final answer.
    fn get_run(&self, args: GetRun) -> impl Future<Output = Result<Value, String>> + Send;
    /// Pending approval requests, read only.
    fn list_pending_approvals(&self, args: ListPendingApprovals) -> impl Future<Output = Result<Value, String>> + Send;
}

/// Errors of [`serve`].
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The client never completed `initialize`, or the transport failed before it did.
    #[error("mcp serve: initialize failed: {0}")]
    Initialize(String),
    /// The protocol task ended abnormally (it panicked or was aborted).
    #[error("mcp serve: the session ended abnormally: {0}")]
    Session(String),
}

/// The MCP handler over a [`RunService`].
pub struct StewardMcpServer<S> {
    service: Arc<S>,
}

impl<S: RunService> StewardMcpServer<S> {
    /// A handler answering with `service`.
    pub fn new(service: Arc<S>) -> Self {
        StewardMcpServer { service }
    }

    async fn dispatch(&self, name: &str, args: Value) -> Result<CallToolResult, ErrorData> {
        let answer = match name {
            SUBMIT_TASK => match parse::<SubmitTask>(name, args).and_then(check_submit) {
                Ok(a) => self.service.submit_task(a).await,
                Err(e) => Err(e),
            },
            LIST_RUNS => match parse::<ListRuns>(name, args).and_then(check_list_runs) {
                Ok(a) => self.service.list_runs(a).await,
                Err(e) => Err(e),
            },
            GET_RUN => match parse::<GetRun>(name, args) {
                Ok(a) => self.service.get_run(a).await,
                Err(e) => Err(e),
            },
            LIST_PENDING_APPROVALS => match parse::<ListPendingApprovals>(name, args) {
                Ok(a) => self.service.list_pending_approvals(a).await,
                Err(e) => Err(e),
            },
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool `{other}`; the tools are {}", TOOL_NAMES.join(", ")),
                    None,
                ));
            }
        };
        Ok(match answer {
            Ok(value) => CallToolResult::structured(value),
            Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        })
    }
}

fn parse<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, String> {
    serde_json::from_value(args).map_err(|e| format!("invalid arguments for {tool}: {e}"))
}

fn check_submit(args: SubmitTask) -> Result<SubmitTask, String> {
    if args.task.trim().is_empty() {
        return Err("the task is empty: say what to do".to_string());
    }
    if args.task.chars().count() > MAX_TASK_CHARS {
        return Err(format!("the task is longer than {MAX_TASK_CHARS} characters"));
    }
    if args.workspace.trim().is_empty() {
        return Err("workspace is empty: give an existing directory".to_string());
    }
    Ok(args)
}

fn check_list_runs(args: ListRuns) -> Result<ListRuns, String> {
    match args.limit {
        Some(0) => Err("limit must be at least 1".to_string()),
        Some(n) if n > LIST_RUNS_MAX => Err(format!("limit must be at most {LIST_RUNS_MAX}")),
        _ => Ok(args),
    }
}

fn schema(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The four tools with their input schemas (JSON Schema objects, no extra properties).
pub fn tools() -> Vec<Tool> {
    let read_only = ToolAnnotations::new().read_only(true).destructive(false);
    vec![
        Tool::new(
            SUBMIT_TASK,
            "Start a Steward run of TASK in WORKSPACE (an existing directory) and return its run_id at once. \
             The run goes through Steward's policy and approval gate; calls that need approval are denied \
             (`no_approver`) because approving is not possible over MCP. Poll get_run for the result.",
            schema(json!({
                "type": "object",
                "properties": {
                    "workspace": {"type": "string", "description": "Absolute path of an existing directory"},
                    "task": {"type": "string", "description": "The task in plain words", "maxLength": MAX_TASK_CHARS}
                },
                "required": ["workspace", "task"],
                "additionalProperties": false
            })),
        )
        .annotate(ToolAnnotations::new().read_only(false).destructive(false)),
        Tool::new(
            LIST_RUNS,
            "List recent runs, newest first: run_id, status, stop_reason, task (redacted), created_at.",
            schema(json!({
                "type": "object",
                "properties": {
                    "limit": {"type": "integer", "minimum": 1, "maximum": LIST_RUNS_MAX, "default": LIST_RUNS_DEFAULT}
                },
                "additionalProperties": false
            })),
        )
        .annotate(read_only.clone()),
        Tool::new(
            GET_RUN,
            "A run's status, stop_reason, final answer (redacted), error class, rounds and tool calls with their outcomes.",
            schema(json!({
                "type": "object",
                "properties": {"run_id": {"type": "string", "description": "run_…"}},
                "required": ["run_id"],
                "additionalProperties": false
            })),
        )
        .annotate(read_only.clone()),
        Tool::new(
            LIST_PENDING_APPROVALS,
            "Approval requests waiting for the owner (read only: approving is not an MCP tool).",
            schema(json!({
                "type": "object",
                "properties": {"run_id": {"type": "string", "description": "Only this run (run_…)"}},
                "additionalProperties": false
            })),
        )
        .annotate(read_only),
    ]
}

impl<S: RunService> ServerHandler for StewardMcpServer<S> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("steward", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Steward runs tasks in local workspaces under its policy and approval gate. submit_task starts \
                 a run; get_run and list_runs report on it. Approvals are given by the owner in the terminal \
                 or web UI, never over MCP.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Value::Object).unwrap_or_else(|| Value::Object(Map::new()));
        self.dispatch(&request.name, args).await.map(CallToolResponse::from)
    }
}

/// Serves `service` on one byte stream pair (`reader` from the client, `writer` to it) until
/// the client closes it. Errors: [`ServeError::Initialize`] when the session never started,
/// [`ServeError::Session`] when it ended abnormally.
pub async fn serve<S, R, W>(service: Arc<S>, reader: R, writer: W) -> Result<(), ServeError>
where
    S: RunService,
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let running = rmcp::serve_server(StewardMcpServer::new(service), (reader, writer))
        .await
        .map_err(|e| ServeError::Initialize(e.to_string()))?;
    running.waiting().await.map_err(|e| ServeError::Session(e.to_string()))?;
    Ok(())
}

/// [`serve`] on this process's stdin and stdout (nothing else may write to stdout meanwhile).
pub async fn serve_stdio<S: RunService>(service: Arc<S>) -> Result<(), ServeError> {
    let (stdin, stdout) = rmcp::transport::io::stdio();
    serve(service, stdin, stdout).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Echoes which method saw which arguments; fails `get_run` for `run_missing`.
    struct Echo;

    impl RunService for Echo {
        async fn submit_task(&self, args: SubmitTask) -> Result<Value, String> {
            Ok(json!({"submit": args.task, "workspace": args.workspace}))
        }
        async fn list_runs(&self, args: ListRuns) -> Result<Value, String> {
            Ok(json!({"limit": args.limit}))
        }
        async fn get_run(&self, args: GetRun) -> Result<Value, String> {
            if args.run_id == "run_missing" {
                Err("no run `run_missing`".into())
            } else {
                Ok(json!({"run": args.run_id}))
            }
        }
        async fn list_pending_approvals(&self, args: ListPendingApprovals) -> Result<Value, String> {
            Ok(json!({"pending_for": args.run_id}))
        }
    }

    async fn call(name: &str, args: Value) -> Result<CallToolResult, ErrorData> {
        StewardMcpServer::new(Arc::new(Echo)).dispatch(name, args).await
    }

    #[test]
    fn tools_are_the_four_names_with_closed_object_schemas() {
        let tools = tools();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, TOOL_NAMES);
        for tool in &tools {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            assert_eq!(tool.input_schema["additionalProperties"], false, "{}", tool.name);
            assert!(!tool.name.contains("approve"));
        }
        let read_only: Vec<bool> =
            tools.iter().map(|t| t.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true)).collect();
        assert_eq!(read_only, [false, true, true, true]);
    }

    #[tokio::test]
    async fn valid_arguments_reach_the_service_and_its_json_is_structured() {
        let result = call(SUBMIT_TASK, json!({"workspace": "/w", "task": "list files"})).await.unwrap();
        assert_eq!(result.is_error, Some(false));
        assert_eq!(result.structured_content, Some(json!({"submit": "list files", "workspace": "/w"})));
        let result = call(LIST_RUNS, json!({})).await.unwrap();
        assert_eq!(result.structured_content, Some(json!({"limit": null})));
        let result = call(LIST_PENDING_APPROVALS, json!({"run_id": "run_1"})).await.unwrap();
        assert_eq!(result.structured_content, Some(json!({"pending_for": "run_1"})));
    }

    #[tokio::test]
    async fn bad_arguments_and_service_errors_are_error_results() {
        for (tool, args, expected) in [
            (SUBMIT_TASK, json!({"workspace": "/w"}), "missing field `task`"),
            (SUBMIT_TASK, json!({"workspace": "/w", "task": "x", "grant": true}), "unknown field `grant`"),
            (SUBMIT_TASK, json!({"workspace": "/w", "task": " \n"}), "the task is empty"),
            (SUBMIT_TASK, json!({"workspace": "", "task": "x"}), "workspace is empty"),
            (LIST_RUNS, json!({"limit": 0}), "at least 1"),
            (LIST_RUNS, json!({"limit": LIST_RUNS_MAX + 1}), "at most"),
            (LIST_RUNS, json!({"limit": "ten"}), "invalid arguments for list_runs"),
            (GET_RUN, json!({"run_id": "run_missing"}), "no run `run_missing`"),
        ] {
            let result = call(tool, args).await.unwrap();
            assert_eq!(result.is_error, Some(true), "{tool} {expected}");
            let text = format!("{:?}", result.content);
            assert!(text.contains(expected), "{tool}: {text} lacks {expected}");
        }
        let long = "x".repeat(MAX_TASK_CHARS + 1);
        let result = call(SUBMIT_TASK, json!({"workspace": "/w", "task": long})).await.unwrap();
        assert_eq!(result.is_error, Some(true));
    }

    #[tokio::test]
    async fn an_unknown_tool_is_a_protocol_error() {
        let err = call("approve", json!({"approval_id": "apr_1"})).await.unwrap_err();
        assert!(err.message.contains("unknown tool `approve`"), "{}", err.message);
    }
}
