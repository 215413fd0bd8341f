//! Steward as an MCP server (SPEC M2, the protocol side): five narrow tools offered to a remote
//! assistant, answered by a [`RunService`] that the `steward` binary implements over its
//! store and run loop (`steward mcp serve` on stdio, `/mcp` of `steward serve` over HTTP).
//!
//! The tools are `submit_task`, `list_runs`, `get_run`, `list_pending_approvals` and
//! `submit_work_request` ([`TOOL_NAMES`]). None of them can approve a call, change policy or configuration: what an
//! assistant sends is data for a run, never a grant. Approving stays with the owner (terminal
//! or web UI); it is deliberately not an MCP tool.
//!
//! Every request is made by a [`Caller`]: an owner and the [`Scope`]s it was given. `read`
//! allows `list_runs`, `get_run` and `list_pending_approvals`; `submit` allows `submit_task` and
//! `submit_work_request` (which files a work request in the ledger; only the owner approves it)
//! ([`tool_scope`]); `hub` allows no tool. `tools/list` shows only the tools the caller's scopes allow; calling
//! another one gives an error result naming the missing scope. The stdio server has one fixed
//! caller (the local owner with every scope); over HTTP the caller comes from the request
//! (the bearer token it carried), see [`StewardMcpServer::with_caller_lookup`].
//!
//! Arguments are checked here against each tool's schema (unknown fields are refused) before
//! the service sees them. A service error becomes a tool result with `isError: true` (the
//! assistant sees the message); an unknown tool is a JSON-RPC `invalid_params` error. A
//! successful result carries the service's JSON both as `structuredContent` and as one text
//! part. Protocol reference: the MCP specification's `tools/list` and `tools/call`.

use std::future::Future;
use std::sync::Arc;

use std::collections::BTreeMap;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Extensions, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use steward_protocol::{Event, EventKind};

/// `submit_task`: start a run, answer its `run_id` at once.
pub const SUBMIT_TASK: &str = "submit_task";
/// `list_runs`: recent runs of the owner, newest first.
pub const LIST_RUNS: &str = "list_runs";
/// `get_run`: one run's status and final answer.
pub const GET_RUN: &str = "get_run";
/// `list_pending_approvals`: approval requests waiting for the owner (read only).
pub const LIST_PENDING_APPROVALS: &str = "list_pending_approvals";
/// `submit_work_request`: file a work request in the ledger (never approve it).
pub const SUBMIT_WORK_REQUEST: &str = "submit_work_request";
/// Every tool the server offers, in the order `tools/list` gives them.
pub const TOOL_NAMES: [&str; 5] = [SUBMIT_TASK, LIST_RUNS, GET_RUN, LIST_PENDING_APPROVALS, SUBMIT_WORK_REQUEST];

/// Default and largest `limit` of `list_runs`.
pub const LIST_RUNS_DEFAULT: u32 = 20;
/// Largest `limit` of `list_runs`.
pub const LIST_RUNS_MAX: u32 = 200;
/// Longest accepted task text, in characters.
pub const MAX_TASK_CHARS: usize = 100_000;
/// Longest accepted work request text, in characters.
pub const MAX_WORK_TEXT_CHARS: usize = 4_000;

/// What a caller may do with the tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// `read`: `list_runs`, `get_run`, `list_pending_approvals`.
    Read,
    /// `submit`: `submit_task`.
    Submit,
    /// `hub`: no MCP tool; over HTTP, the work ledger's candidates, claims and result reports
    /// (`/api/ledger/…` of `steward serve`).
    Hub,
}

impl Scope {
    /// Every scope, in the order they are listed.
    pub const ALL: [Scope; 3] = [Scope::Read, Scope::Submit, Scope::Hub];

    /// The scope's name: `read` or `submit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Submit => "submit",
            Scope::Hub => "hub",
        }
    }

    /// The scope named exactly `name` (`read`, `submit`, `hub`).
    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Scopes from a comma list such as `read,submit` (spaces around names are ignored;
    /// duplicates collapse). `Err` names an unknown scope, or says the list is empty.
    pub fn parse_list(list: &str) -> Result<Vec<Scope>, ScopeListError> {
        let mut scopes = Vec::new();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let scope = Scope::parse(name).ok_or_else(|| ScopeListError::Unknown(name.to_string()))?;
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        if scopes.is_empty() {
            return Err(ScopeListError::Empty);
        }
        scopes.sort();
        Ok(scopes)
    }
}

/// The scope a tool needs; `None` for a name that is not one of [`TOOL_NAMES`].
pub fn tool_scope(tool: &str) -> Option<Scope> {
    match tool {
        SUBMIT_TASK | SUBMIT_WORK_REQUEST => Some(Scope::Submit),
        LIST_RUNS | GET_RUN | LIST_PENDING_APPROVALS => Some(Scope::Read),
        _ => None,
    }
}

/// Who makes a request: the owner whose runs it sees and starts, and what it may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// Owner id (`local:<user>`, `web:<16 hex>`).
    pub owner_id: String,
    /// The scopes it was given.
    pub scopes: Vec<Scope>,
}

impl Caller {
    /// A caller with every scope (the stdio server's local owner).
    pub fn all_scopes(owner_id: impl Into<String>) -> Caller {
        Caller { owner_id: owner_id.into(), scopes: Scope::ALL.to_vec() }
    }

    /// True when it was given `scope`.
    pub fn may(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }
}

/// Finds the caller of a request in its extensions (filled by the transport); `None` refuses
/// the request.
pub type CallerLookup = Arc<dyn Fn(&Extensions) -> Option<Caller> + Send + Sync>;

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

/// Arguments of `submit_work_request`: ask for a summary of pull request `pr_number` of
/// `repository`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitWorkRequest {
    /// The repository's name (checked by the service).
    pub repository: String,
    /// The pull request's number (≥ 1).
    pub pr_number: u64,
    /// Free text for the job, at most [`MAX_WORK_TEXT_CHARS`] characters: data, never a grant.
    #[serde(default)]
    pub text: String,
}

/// Why a scope list ([`Scope::parse_list`]) is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeListError {
    /// A name is no scope.
    #[error("unknown scope `{0}`; the scopes are read, submit, hub")]
    Unknown(String),
    /// The list names no scope.
    #[error("no scope given; the scopes are read, submit, hub")]
    Empty,
}

/// A [`RunService`] method's failure: the message the assistant sees as the failed tool
/// call's text. It is sent as is, so whoever makes one has redacted it already.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ServiceError(pub String);

impl From<String> for ServiceError {
    fn from(message: String) -> ServiceError {
        ServiceError(message)
    }
}

impl From<&str> for ServiceError {
    fn from(message: &str) -> ServiceError {
        ServiceError(message.to_string())
    }
}

/// Why a tool call's arguments are refused before the service sees them; sent to the
/// assistant as the failed call's text.
#[derive(Debug, thiserror::Error)]
pub enum ArgumentError {
    /// The arguments do not fit the tool's schema (an unknown field, a wrong type).
    #[error("invalid arguments for {tool}: {source}")]
    Schema {
        /// The tool called.
        tool: String,
        /// What `serde_json` found.
        source: serde_json::Error,
    },
    /// `submit_task` with a blank task.
    #[error("the task is empty: say what to do")]
    EmptyTask,
    /// `submit_task` with a task over [`MAX_TASK_CHARS`].
    #[error("the task is longer than {MAX_TASK_CHARS} characters")]
    TaskTooLong,
    /// `submit_task` with a blank workspace.
    #[error("workspace is empty: give an existing directory")]
    EmptyWorkspace,
    /// `submit_work_request` with a blank repository.
    #[error("repository is empty: name the repository")]
    EmptyRepository,
    /// `submit_work_request` with PR number 0.
    #[error("pr_number must be at least 1")]
    PrNumber,
    /// `submit_work_request` with a text over [`MAX_WORK_TEXT_CHARS`].
    #[error("the text is longer than {MAX_WORK_TEXT_CHARS} characters")]
    WorkTextTooLong,
    /// `list_runs` with `limit` 0.
    #[error("limit must be at least 1")]
    LimitZero,
    /// `list_runs` with `limit` over [`LIST_RUNS_MAX`].
    #[error("limit must be at most {LIST_RUNS_MAX}")]
    LimitTooHigh,
}

/// Why a tool call failed, as the assistant is told.
#[derive(Debug, thiserror::Error)]
enum CallFailure {
    /// The arguments were refused.
    #[error(transparent)]
    Arguments(#[from] ArgumentError),
    /// The service refused or failed.
    #[error(transparent)]
    Service(#[from] ServiceError),
}

/// Runs `call` on the checked arguments, or answers why they were refused.
async fn run_checked<A, F>(args: Result<A, ArgumentError>, call: impl FnOnce(A) -> F) -> Result<Value, CallFailure>
where
    F: Future<Output = Result<Value, ServiceError>>,
{
    Ok(call(args?).await?)
}

/// What the tools do, for `caller` (whose scopes were already checked: the service decides
/// only what the caller's owner may see). `Ok` is the JSON answered to the assistant; `Err` a
/// message it sees as a failed tool call (it must not contain secrets: it is sent as is).
pub trait RunService: Send + Sync + 'static {
    /// Starts a run owned by `caller.owner_id` and returns at once, e.g. `{"run_id": "run_…",
    /// "status": "running"}`.
    fn submit_task(
        &self,
        caller: &Caller,
        args: SubmitTask,
    ) -> impl Future<Output = Result<Value, ServiceError>> + Send;
    /// The owner's recent runs, e.g. `{"runs": [{"run_id", "status", "stop_reason", "task",
    /// "created_at"}]}`.
    fn list_runs(&self, caller: &Caller, args: ListRuns) -> impl Future<Output = Result<Value, ServiceError>> + Send;
    /// One of the owner's runs: its state and, once finished, its final answer. Another
    /// owner's run is reported as absent.
    fn get_run(&self, caller: &Caller, args: GetRun) -> impl Future<Output = Result<Value, ServiceError>> + Send;
    /// The owner's pending approval requests, read only.
    fn list_pending_approvals(
        &self,
        caller: &Caller,
        args: ListPendingApprovals,
    ) -> impl Future<Output = Result<Value, ServiceError>> + Send;
    /// Files an `open` work request owned by `caller.owner_id` in the ledger, e.g.
    /// `{"request_id": "wrq_…", "status": "open"}`. Only the owner approves it, never over MCP.
    fn submit_work_request(
        &self,
        caller: &Caller,
        args: SubmitWorkRequest,
    ) -> impl Future<Output = Result<Value, ServiceError>> + Send;
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

/// Where a handler finds the caller of each request.
#[derive(Clone)]
enum CallerSource {
    /// Always the same caller (stdio: one client, the local owner).
    Fixed(Caller),
    /// Looked up in each request's extensions (HTTP: the bearer token's owner and scopes).
    Lookup(CallerLookup),
}

/// The MCP handler over a [`RunService`].
pub struct StewardMcpServer<S> {
    service: Arc<S>,
    caller: CallerSource,
}

impl<S: RunService> StewardMcpServer<S> {
    /// A handler answering with `service`, every request made by `caller` (stdio).
    pub fn new(service: Arc<S>, caller: Caller) -> Self {
        StewardMcpServer { service, caller: CallerSource::Fixed(caller) }
    }

    /// A handler answering with `service`, the caller of each request found by `lookup` in
    /// the request's extensions; a request without one is refused (`invalid_request`).
    pub fn with_caller_lookup(service: Arc<S>, lookup: CallerLookup) -> Self {
        StewardMcpServer { service, caller: CallerSource::Lookup(lookup) }
    }

    fn caller(&self, extensions: &Extensions) -> Result<Caller, ErrorData> {
        match &self.caller {
            CallerSource::Fixed(caller) => Ok(caller.clone()),
            CallerSource::Lookup(lookup) => {
                lookup(extensions).ok_or_else(|| ErrorData::invalid_request("the request carries no credentials", None))
            }
        }
    }

    async fn dispatch(&self, caller: &Caller, name: &str, args: Value) -> Result<CallToolResult, ErrorData> {
        let Some(scope) = tool_scope(name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{name}`; the tools are {}", TOOL_NAMES.join(", ")),
                None,
            ));
        };
        if !caller.may(scope) {
            let given: Vec<&str> = caller.scopes.iter().map(|s| s.as_str()).collect();
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "{name} needs the `{}` scope; this token has: {}",
                scope.as_str(),
                if given.is_empty() { "none".to_string() } else { given.join(", ") }
            ))]));
        }
        let service = &self.service;
        let answer = match name {
            SUBMIT_TASK => {
                run_checked(parse(name, args).and_then(check_submit), |a| service.submit_task(caller, a)).await
            }
            LIST_RUNS => {
                run_checked(parse(name, args).and_then(check_list_runs), |a| service.list_runs(caller, a)).await
            }
            GET_RUN => run_checked(parse(name, args), |a| service.get_run(caller, a)).await,
            SUBMIT_WORK_REQUEST => {
                let args = parse(name, args).and_then(check_work_request);
                run_checked(args, |a| service.submit_work_request(caller, a)).await
            }
            _ => run_checked(parse(name, args), |a| service.list_pending_approvals(caller, a)).await,
        };
        Ok(match answer {
            Ok(value) => CallToolResult::structured(value),
            Err(failure) => CallToolResult::error(vec![ContentBlock::text(failure.to_string())]),
        })
    }
}

fn parse<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ArgumentError> {
    serde_json::from_value(args).map_err(|source| ArgumentError::Schema { tool: tool.to_string(), source })
}

fn check_submit(args: SubmitTask) -> Result<SubmitTask, ArgumentError> {
    if args.task.trim().is_empty() {
        return Err(ArgumentError::EmptyTask);
    }
    if args.task.chars().count() > MAX_TASK_CHARS {
        return Err(ArgumentError::TaskTooLong);
    }
    if args.workspace.trim().is_empty() {
        return Err(ArgumentError::EmptyWorkspace);
    }
    Ok(args)
}

fn check_work_request(args: SubmitWorkRequest) -> Result<SubmitWorkRequest, ArgumentError> {
    if args.repository.trim().is_empty() {
        return Err(ArgumentError::EmptyRepository);
    }
    if args.pr_number == 0 {
        return Err(ArgumentError::PrNumber);
    }
    if args.text.chars().count() > MAX_WORK_TEXT_CHARS {
        return Err(ArgumentError::WorkTextTooLong);
    }
    Ok(args)
}

fn check_list_runs(args: ListRuns) -> Result<ListRuns, ArgumentError> {
    match args.limit {
        Some(0) => Err(ArgumentError::LimitZero),
        Some(n) if n > LIST_RUNS_MAX => Err(ArgumentError::LimitTooHigh),
        _ => Ok(args),
    }
}

fn schema(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The five tools with their input schemas (JSON Schema objects, no extra properties).
pub fn tools() -> Vec<Tool> {
    let read_only = ToolAnnotations::new().read_only(true).destructive(false);
    vec![
        Tool::new(
            SUBMIT_TASK,
            "Start a Steward run of TASK in WORKSPACE (an existing directory) and return its run_id at once. \
             The run goes through Steward's policy and approval gate. Approving is not possible over MCP: \
             over HTTP the token's owner approves in Steward's web UI; over stdio calls that need approval \
             are denied (`no_approver`). Poll get_run for the result.",
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
        Tool::new(
            SUBMIT_WORK_REQUEST,
            "File a work request in Steward's ledger: ask for a summary of pull request PR_NUMBER of \
             REPOSITORY. It starts `open`; nothing runs until the owner approves it in Steward's web UI or \
             terminal, pinned to a head commit and an expiry. Approving is not possible over MCP, and the text \
             is passed to the job as data only.",
            schema(json!({
                "type": "object",
                "properties": {
                    "repository": {"type": "string", "description": "The repository's name, e.g. demo or org/demo"},
                    "pr_number": {"type": "integer", "minimum": 1},
                    "text": {"type": "string", "description": "Free text for the job", "maxLength": MAX_WORK_TEXT_CHARS}
                },
                "required": ["repository", "pr_number"],
                "additionalProperties": false
            })),
        )
        .annotate(ToolAnnotations::new().read_only(false).destructive(false)),
    ]
}

impl<S: RunService> ServerHandler for StewardMcpServer<S> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("steward", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Steward runs tasks in local workspaces under its policy and approval gate. submit_task starts \
                 a run; get_run and list_runs report on it; submit_work_request files a work request in the \
                 ledger. Approvals are given by the owner in the terminal or web UI, never over MCP.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = self.caller(&context.extensions)?;
        let allowed = tools().into_iter().filter(|t| tool_scope(&t.name).is_some_and(|s| caller.may(s))).collect();
        Ok(ListToolsResult::with_all_items(allowed))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = self.caller(&context.extensions)?;
        let args = request.arguments.map(Value::Object).unwrap_or_else(|| Value::Object(Map::new()));
        self.dispatch(&caller, &request.name, args).await.map(CallToolResponse::from)
    }
}

/// Each tool call of a run with its last outcome, in the order the calls were proposed:
/// `{call_id, tool, outcome, reason?}` where outcome is `requested`, `denied` (with the rule
/// and reason), `awaiting_approval`, `approved`, `rejected` (with the reason, e.g.
/// `no_approver`), `expired`, `running`, `completed` or `failed` (with the error). Not
/// redacted: the caller redacts the result.
pub fn call_outcomes(events: &[Event]) -> Vec<Value> {
    let mut order: Vec<String> = Vec::new();
    let mut calls: BTreeMap<String, Value> = BTreeMap::new();
    let mut set = |call_id: &str, tool: Option<&str>, outcome: &str, reason: Option<&str>| {
        let entry = calls.entry(call_id.to_string()).or_insert_with(|| {
            order.push(call_id.to_string());
            json!({"call_id": call_id, "tool": "", "outcome": "", "reason": null})
        });
        if let Some(tool) = tool {
            entry["tool"] = json!(tool);
        }
        entry["outcome"] = json!(outcome);
        entry["reason"] = json!(reason);
    };
    for event in events {
        match &event.kind {
            EventKind::ToolRequested { call_id, tool, .. } => set(call_id, Some(tool), "requested", None),
            EventKind::ToolDenied { call_id, tool, rule, reason, .. } => {
                set(call_id, Some(tool), "denied", Some(&format!("{rule}: {reason}")))
            }
            EventKind::ToolApprovalRequired { call_id, tool, .. } => {
                set(call_id, Some(tool), "awaiting_approval", None)
            }
            EventKind::ToolApproved { call_id, .. } => set(call_id, None, "approved", None),
            EventKind::ToolRejected { call_id, reason, .. } => set(call_id, None, "rejected", Some(reason)),
            EventKind::ToolApprovalExpired { call_id, .. } => set(call_id, None, "expired", None),
            EventKind::ToolStarted { call_id, tool, .. } => set(call_id, Some(tool), "running", None),
            EventKind::ToolCompleted { call_id, tool, .. } => set(call_id, Some(tool), "completed", None),
            EventKind::ToolFailed { call_id, tool, error, .. } => set(call_id, Some(tool), "failed", Some(error)),
            _ => {}
        }
    }
    order.into_iter().filter_map(|id| calls.remove(&id)).collect()
}

/// Serves `service` on one byte stream pair (`reader` from the client, `writer` to it) until
/// the client closes it; every request is made by `caller`. Errors: [`ServeError::Initialize`]
/// when the session never started, [`ServeError::Session`] when it ended abnormally.
pub async fn serve<S, R, W>(service: Arc<S>, caller: Caller, reader: R, writer: W) -> Result<(), ServeError>
where
    S: RunService,
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let running = rmcp::serve_server(StewardMcpServer::new(service, caller), (reader, writer))
        .await
        .map_err(|e| ServeError::Initialize(e.to_string()))?;
    running.waiting().await.map_err(|e| ServeError::Session(e.to_string()))?;
    Ok(())
}

/// [`serve`] on this process's stdin and stdout (nothing else may write to stdout meanwhile).
pub async fn serve_stdio<S: RunService>(service: Arc<S>, caller: Caller) -> Result<(), ServeError> {
    let (stdin, stdout) = rmcp::transport::io::stdio();
    serve(service, caller, stdin, stdout).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Echoes which method saw which arguments; fails `get_run` for `run_missing`.
    struct Echo;

    impl RunService for Echo {
        async fn submit_task(&self, caller: &Caller, args: SubmitTask) -> Result<Value, ServiceError> {
            Ok(json!({"submit": args.task, "workspace": args.workspace, "owner": caller.owner_id}))
        }
        async fn list_runs(&self, _caller: &Caller, args: ListRuns) -> Result<Value, ServiceError> {
            Ok(json!({"limit": args.limit}))
        }
        async fn get_run(&self, _caller: &Caller, args: GetRun) -> Result<Value, ServiceError> {
            if args.run_id == "run_missing" {
                Err("no run `run_missing`".into())
            } else {
                Ok(json!({"run": args.run_id}))
            }
        }
        async fn list_pending_approvals(
            &self,
            _caller: &Caller,
            args: ListPendingApprovals,
        ) -> Result<Value, ServiceError> {
            Ok(json!({"pending_for": args.run_id}))
        }
        async fn submit_work_request(&self, caller: &Caller, args: SubmitWorkRequest) -> Result<Value, ServiceError> {
            Ok(json!({"repository": args.repository, "pr": args.pr_number, "owner": caller.owner_id}))
        }
    }

    async fn call_as(caller: &Caller, name: &str, args: Value) -> Result<CallToolResult, ErrorData> {
        StewardMcpServer::new(Arc::new(Echo), caller.clone()).dispatch(caller, name, args).await
    }

    async fn call(name: &str, args: Value) -> Result<CallToolResult, ErrorData> {
        call_as(&Caller::all_scopes("local:alice"), name, args).await
    }

    #[test]
    fn tools_are_the_five_names_with_closed_object_schemas() {
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
        assert_eq!(read_only, [false, true, true, true, false]);
    }

    #[tokio::test]
    async fn valid_arguments_reach_the_service_and_its_json_is_structured() {
        let result = call(SUBMIT_TASK, json!({"workspace": "/w", "task": "list files"})).await.unwrap();
        assert_eq!(result.is_error, Some(false));
        assert_eq!(
            result.structured_content,
            Some(json!({"submit": "list files", "workspace": "/w", "owner": "local:alice"}))
        );
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
    async fn a_tool_outside_the_callers_scopes_is_an_error_naming_the_scope() {
        let reader = Caller { owner_id: "web:1".into(), scopes: vec![Scope::Read] };
        let result = call_as(&reader, SUBMIT_TASK, json!({"workspace": "/w", "task": "x"})).await.unwrap();
        assert_eq!(result.is_error, Some(true));
        let text = format!("{:?}", result.content);
        assert!(text.contains("needs the `submit` scope") && text.contains("this token has: read"), "{text}");
        let result = call_as(&reader, LIST_RUNS, json!({})).await.unwrap();
        assert_eq!(result.is_error, Some(false));
        let submitter = Caller { owner_id: "web:1".into(), scopes: vec![Scope::Submit] };
        let result = call_as(&submitter, GET_RUN, json!({"run_id": "run_1"})).await.unwrap();
        assert_eq!(result.is_error, Some(true));
        assert!(format!("{:?}", result.content).contains("needs the `read` scope"));
    }

    #[tokio::test]
    async fn work_requests_need_submit_and_valid_arguments() {
        let submitter = Caller { owner_id: "web:1".into(), scopes: vec![Scope::Submit] };
        let args = json!({"repository": "demo", "pr_number": 4, "text": "please"});
        let result = call_as(&submitter, SUBMIT_WORK_REQUEST, args.clone()).await.unwrap();
        assert_eq!(result.structured_content, Some(json!({"repository": "demo", "pr": 4, "owner": "web:1"})));
        let hub = Caller { owner_id: "web:1".into(), scopes: vec![Scope::Hub] };
        let result = call_as(&hub, SUBMIT_WORK_REQUEST, args).await.unwrap();
        assert_eq!(result.is_error, Some(true));
        for bad in [
            json!({"repository": "demo", "pr_number": 0}),
            json!({"repository": " ", "pr_number": 1}),
            json!({"repository": "demo", "pr_number": 1, "approve": true}),
            json!({"repository": "demo", "pr_number": 1, "text": "x".repeat(MAX_WORK_TEXT_CHARS + 1)}),
        ] {
            let result = call_as(&submitter, SUBMIT_WORK_REQUEST, bad.clone()).await.unwrap();
            assert_eq!(result.is_error, Some(true), "{bad}");
        }
    }

    #[test]
    fn scope_lists_parse() {
        assert_eq!(Scope::parse_list("read").unwrap(), vec![Scope::Read]);
        assert_eq!(Scope::parse_list(" submit , read,read").unwrap(), vec![Scope::Read, Scope::Submit]);
        assert!(Scope::parse_list("").unwrap_err().to_string().contains("no scope"));
        assert!(Scope::parse_list("read,approve").unwrap_err().to_string().contains("unknown scope `approve`"));
        for name in TOOL_NAMES {
            assert!(tool_scope(name).is_some(), "{name}");
        }
        assert_eq!(tool_scope("approve"), None);
    }

    #[test]
    fn call_outcomes_follow_each_call() {
        let at = chrono::Utc::now();
        let event = |seq, kind| Event { run_id: "run_1".into(), seq, at, kind };
        let events = vec![
            event(1, EventKind::ToolRequested { call_id: "c1".into(), tool: "edit".into(), arguments: json!({}) }),
            event(
                2,
                EventKind::ToolRejected {
                    call_id: "c1".into(),
                    approval_id: "apr_1".into(),
                    reason: "no_approver".into(),
                },
            ),
        ];
        assert_eq!(
            call_outcomes(&events),
            vec![json!({"call_id": "c1", "tool": "edit", "outcome": "rejected", "reason": "no_approver"})]
        );
    }

    #[tokio::test]
    async fn an_unknown_tool_is_a_protocol_error() {
        let err = call("approve", json!({"approval_id": "apr_1"})).await.unwrap_err();
        assert!(err.message.contains("unknown tool `approve`"), "{}", err.message);
    }
}
