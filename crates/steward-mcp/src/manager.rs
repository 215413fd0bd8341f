//! [`McpManager`]: the configured servers, started lazily, their tools under registry names,
//! and calls with contained faults (case B22).
//!
//! A server is started on first use (listing or calling). When it dies, fails to start or
//! stops answering, it is marked failed: the call that was running is *not* retried, and the
//! next use within the backoff fails fast with `mcp_unavailable`; the first use after the
//! backoff restarts it. The backoff starts at 1 s and doubles after each further failure up
//! to 30 s; a successful `tools/call` resets it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{CallToolRequestParams, Tool};
use serde_json::Value;
use steward_protocol::ToolSpec;
use tokio::sync::{Mutex, RwLock};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::{McpServerConfig, ToolFilter};
use crate::connection::{Connection, HiddenPaths};
use crate::elicitation::{ActiveCalls, CallClock, Elicitor};
use crate::names::registry_names;
use crate::output::McpCallOutput;
use crate::{McpError, tool_spec};

/// Restart backoff after failures: `initial`, doubling, at most `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Wait after the first failure (default 1 s).
    pub initial: Duration,
    /// Longest wait (default 30 s).
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { initial: Duration::from_secs(1), max: Duration::from_secs(30) }
    }
}

impl Backoff {
    /// The wait after `failures` consecutive failures (≥ 1).
    pub fn delay(&self, failures: u32) -> Duration {
        let factor = 1u32.checked_shl(failures.saturating_sub(1)).unwrap_or(u32::MAX);
        self.initial.saturating_mul(factor).min(self.max)
    }
}

/// An MCP tool as offered to the registry.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The spec under its registry name (`server__tool`).
    pub spec: ToolSpec,
    /// The configured server name.
    pub server: String,
    /// The tool's own name on the server.
    pub tool: String,
}

/// The result of [`McpManager::tools`]: the tools of every server that could be listed, and
/// one error per server that could not (its previously listed tools, if any, are still
/// offered so that calls to them get a classified error rather than `unknown tool`).
#[derive(Debug, Clone, Default)]
pub struct McpTools {
    /// Tools sorted by registry name.
    pub tools: Vec<McpTool>,
    /// Per-server listing failures (`mcp_unavailable`, `timeout`, …).
    pub failures: Vec<McpError>,
    /// Elicitations the servers sent while no tool call of a run was in progress (during
    /// this listing, or since the last one), each declined automatically: why.
    pub declined_elicitations: Vec<String>,
}

/// A server's state as shown by `steward mcp list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// `enabled = false`.
    Disabled,
    /// Not started yet.
    Idle,
    /// Started and initialised.
    Running,
    /// Failed; restarts on the first use after the backoff.
    Failed {
        /// Why it failed (names the exit status when known).
        reason: String,
        /// How long until a use restarts it, in ms (0: the next use).
        retry_in_ms: u64,
    },
}

enum State {
    Idle,
    Ready(Arc<Connection>),
    Failed { reason: String, retry_at: Instant },
}

struct Server {
    name: String,
    config: McpServerConfig,
    filter: ToolFilter,
    state: Mutex<State>,
    /// Consecutive failures since the last successful call.
    failures: std::sync::atomic::AtomicU32,
    /// The last successful listing, filtered by `tool_allow`/`tool_deny`.
    listed: Mutex<Option<Vec<Tool>>>,
    /// The tool calls running on it, to route its elicitations (kept across restarts).
    calls: Arc<ActiveCalls>,
}

/// Where a registry name leads.
#[derive(Debug, Clone)]
struct Route {
    server: String,
    tool: String,
}

/// The MCP client side of Steward (SPEC M1): every configured server, started lazily.
pub struct McpManager {
    servers: BTreeMap<String, Arc<Server>>,
    disabled: Vec<String>,
    routes: RwLock<BTreeMap<String, Route>>,
    backoff: Backoff,
    hidden: Option<HiddenPaths>,
    /// Where the logins of the owner this manager works for are kept.
    logins: Option<crate::oauth::SharedTokenPlace>,
}

impl McpManager {
    /// Validates every `[mcp_servers.NAME]` table (errors: [`McpError::Config`] for the first
    /// invalid one). Starts nothing.
    pub fn new(configs: &BTreeMap<String, McpServerConfig>) -> Result<Self, McpError> {
        let mut servers = BTreeMap::new();
        let mut disabled = Vec::new();
        for (name, config) in configs {
            config.validate(name)?;
            if !config.enabled {
                disabled.push(name.clone());
                continue;
            }
            let server = Server {
                name: name.clone(),
                filter: ToolFilter::new(name, config)?,
                config: config.clone(),
                state: Mutex::new(State::Idle),
                failures: Default::default(),
                listed: Mutex::new(None),
                calls: Arc::default(),
            };
            servers.insert(name.clone(), Arc::new(server));
        }
        Ok(McpManager {
            servers,
            disabled,
            routes: RwLock::new(BTreeMap::new()),
            backoff: Backoff::default(),
            hidden: None,
            logins: None,
        })
    }

    /// Covers `hidden`'s paths in the sandbox of every stdio server it starts (without it,
    /// only what the sandbox hides by itself: `$HOME`).
    pub fn with_hidden_paths(mut self, hidden: HiddenPaths) -> Self {
        self.hidden = Some(hidden);
        self
    }

    /// Sends the logins kept in `place` (one owner's) to the servers that need one. Without
    /// it, a server that asks for a login fails with [`McpError::LoginRequired`].
    pub fn with_logins(mut self, place: crate::oauth::TokenPlace) -> Self {
        self.logins = Some(Arc::new(place));
        self
    }

    /// Replaces the restart backoff (default 1 s doubling to 30 s).
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Every configured server with its state, sorted by name.
    pub async fn status(&self) -> Vec<(String, ServerState)> {
        let mut out: Vec<(String, ServerState)> =
            self.disabled.iter().map(|name| (name.clone(), ServerState::Disabled)).collect();
        for (name, server) in &self.servers {
            let state = match &*server.state.lock().await {
                State::Idle => ServerState::Idle,
                State::Ready(_) => ServerState::Running,
                State::Failed { reason, retry_at } => ServerState::Failed {
                    reason: reason.clone(),
                    retry_in_ms: retry_at.saturating_duration_since(Instant::now()).as_millis() as u64,
                },
            };
            out.push((name.clone(), state));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Starts the enabled servers that are not running (all at once), lists their tools
    /// (`tools/list`, all pages, within `call_timeout_ms`), keeps those `tool_allow` /
    /// `tool_deny` admit, and names them (see [`crate::names`]). A server that fails is
    /// reported in [`McpTools::failures`]; the others are unaffected.
    pub async fn tools(&self) -> McpTools {
        let listings = futures::future::join_all(self.servers.values().map(|server| self.list(server))).await;
        let failures: Vec<McpError> = listings.into_iter().filter_map(Result::err).collect();
        let declined_elicitations = self.servers.values().flat_map(|server| server.calls.take_declined()).collect();
        let mut entries: Vec<(Arc<Server>, Tool)> = Vec::new();
        for server in self.servers.values() {
            if let Some(tools) = &*server.listed.lock().await {
                entries.extend(tools.iter().map(|tool| (server.clone(), tool.clone())));
            }
        }
        let pairs: Vec<(String, String)> =
            entries.iter().map(|(server, tool)| (server.name.clone(), tool.name.to_string())).collect();
        let names = registry_names(&pairs);
        let mut routes = BTreeMap::new();
        let mut tools = Vec::new();
        for ((server, tool), name) in entries.iter().zip(names) {
            routes.insert(name.clone(), Route { server: server.name.clone(), tool: tool.name.to_string() });
            tools.push(McpTool {
                spec: tool_spec(&name, tool, server.config.risk, server.filter.read_only(&tool.name)),
                server: server.name.clone(),
                tool: tool.name.to_string(),
            });
        }
        tools.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        *self.routes.write().await = routes;
        McpTools { tools, failures, declined_elicitations }
    }

    /// Calls the tool registered as `registry_name` with `args` (a JSON object, or `null` for
    /// none). Lists tools first when nothing has been listed yet.
    ///
    /// Ok: the result text (capped at the server's `max_output_bytes`), with `is_error` set
    /// when the server flagged it. Errors: [`McpError::UnknownTool`],
    /// [`McpError::InvalidArguments`], [`McpError::Unavailable`] (could not start, in backoff,
    /// or the process died during the call: the call is not retried),
    /// [`McpError::Timeout`] (no answer within `call_timeout_ms`; the server is told the call
    /// is cancelled), [`McpError::Rpc`] (JSON-RPC error with its code and message),
    /// [`McpError::Protocol`], [`McpError::Cancelled`] (`cancel` fired).
    ///
    /// An elicitation the server sends during the call is declined (nobody to answer); see
    /// [`McpManager::call_eliciting`].
    pub async fn call(
        &self,
        registry_name: &str,
        args: Value,
        cancel: CancellationToken,
    ) -> Result<McpCallOutput, McpError> {
        self.call_eliciting(registry_name, args, cancel, None).await
    }

    /// [`McpManager::call`], with the server's elicitations during the call (form mode) put
    /// to `elicitor`. While one waits for its answer, the call's `call_timeout_ms` does not
    /// run. Only while this is the only call in progress on the server: with several, nobody
    /// can tell which one asks, and the request is declined.
    pub async fn call_eliciting(
        &self,
        registry_name: &str,
        args: Value,
        cancel: CancellationToken,
        elicitor: Option<Arc<dyn Elicitor>>,
    ) -> Result<McpCallOutput, McpError> {
        let route = self.route(registry_name).await?;
        let arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(McpError::InvalidArguments { tool: registry_name.to_string(), got: json_type(&other) });
            }
        };
        let server = self.servers.get(&route.server).ok_or_else(|| McpError::UnknownTool(registry_name.to_string()))?;
        let connection = self.connect(server).await?;
        let mut params = CallToolRequestParams::new(route.tool.clone());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let limit_ms = server.config.call_timeout_ms;
        let what = || format!("tools/call {}", route.tool);
        let clock = Arc::new(CallClock::new());
        let _active = server.calls.enter(elicitor, clock.clone());
        let result = tokio::select! {
            // A reply that arrived before the process exited wins.
            biased;
            result = connection.peer().call_tool(params) => result,
            status = connection.closed() => {
                let reason = format!("process exited ({status}) during {}; the call was not retried", what());
                self.mark_failed(server, &connection, reason.clone()).await;
                return Err(McpError::unavailable(&server.name, reason));
            }
            _ = clock.expired(Duration::from_millis(limit_ms)) => {
                self.check_alive(server, &connection).await;
                return Err(McpError::Timeout { server: server.name.clone(), what: what(), after_ms: limit_ms });
            }
            _ = cancel.cancelled() => return Err(McpError::Cancelled { server: server.name.clone() }),
        };
        match result {
            Ok(result) => {
                server.failures.store(0, std::sync::atomic::Ordering::Relaxed);
                Ok(McpCallOutput::from_result(&result, server.config.max_output_bytes))
            }
            Err(err) => Err(self.request_failed(server, &connection, &what(), err).await),
        }
    }

    async fn route(&self, registry_name: &str) -> Result<Route, McpError> {
        if let Some(route) = self.routes.read().await.get(registry_name) {
            return Ok(route.clone());
        }
        let never_listed = self.routes.read().await.is_empty();
        if never_listed {
            self.tools().await;
            if let Some(route) = self.routes.read().await.get(registry_name) {
                return Ok(route.clone());
            }
        }
        Err(McpError::UnknownTool(registry_name.to_string()))
    }

    /// Lists one server's tools into `server.listed`.
    async fn list(&self, server: &Arc<Server>) -> Result<(), McpError> {
        let connection = self.connect(server).await?;
        let limit_ms = server.config.call_timeout_ms;
        let result = tokio::select! {
            biased;
            result = connection.peer().list_all_tools() => result,
            status = connection.closed() => {
                let reason = format!("process exited ({status}) during tools/list");
                self.mark_failed(server, &connection, reason.clone()).await;
                return Err(McpError::unavailable(&server.name, reason));
            }
            _ = tokio::time::sleep(Duration::from_millis(limit_ms)) => {
                self.check_alive(server, &connection).await;
                return Err(McpError::Timeout { server: server.name.clone(), what: "tools/list".into(), after_ms: limit_ms });
            }
        };
        match result {
            Ok(tools) => {
                let allowed = tools.into_iter().filter(|tool| server.filter.allows(&tool.name)).collect();
                *server.listed.lock().await = Some(allowed);
                Ok(())
            }
            Err(err) => Err(self.request_failed(server, &connection, "tools/list", err).await),
        }
    }

    /// The running connection, starting the server when it is idle, its child has exited, or
    /// its backoff has passed. Fails fast while the backoff runs.
    async fn connect(&self, server: &Server) -> Result<Arc<Connection>, McpError> {
        let mut state = server.state.lock().await;
        match &*state {
            State::Ready(connection) if !connection.has_exited() => return Ok(connection.clone()),
            State::Ready(_) => {
                // Died while idle: nothing was lost, so restart now (it still counts).
                server.failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::warn!(server = %server.name, "mcp server exited while idle; restarting");
            }
            State::Failed { reason, retry_at } if Instant::now() < *retry_at => {
                let wait = retry_at.saturating_duration_since(Instant::now()).as_millis();
                return Err(McpError::unavailable(&server.name, format!("{reason}; restart in {wait} ms")));
            }
            State::Failed { .. } | State::Idle => {}
        }
        let logins = self.logins.as_deref();
        match Connection::start(&server.name, &server.config, server.calls.clone(), self.hidden.as_ref(), logins).await
        {
            Ok(connection) => {
                let connection = Arc::new(connection);
                *state = State::Ready(connection.clone());
                Ok(connection)
            }
            Err(err @ McpError::LoginRequired { .. }) => {
                // No backoff: a login made meanwhile is used at the next attempt.
                *state = State::Idle;
                Err(err.masked(&server.config.url_secrets()))
            }
            Err(err) => {
                let err = err.masked(&server.config.url_secrets());
                *state = self.failed_state(server, err.to_string());
                Err(err)
            }
        }
    }

    fn failed_state(&self, server: &Server, reason: String) -> State {
        let failures = server.failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let delay = self.backoff.delay(failures);
        tracing::warn!(server = %server.name, failures, retry_in_ms = delay.as_millis() as u64, "mcp server failed: {reason}");
        State::Failed { reason, retry_at: Instant::now() + delay }
    }

    /// Marks `server` failed if `connection` is still its current one (dropping it kills the
    /// child).
    async fn mark_failed(&self, server: &Server, connection: &Arc<Connection>, reason: String) {
        let mut state = server.state.lock().await;
        if matches!(&*state, State::Ready(current) if Arc::ptr_eq(current, connection)) {
            *state = self.failed_state(server, reason);
        }
    }

    /// After a timeout: a server that does not answer a ping within 2 s is marked failed.
    async fn check_alive(&self, server: &Server, connection: &Arc<Connection>) {
        let ping = tokio::time::timeout(Duration::from_secs(2), connection.peer().send_request(ping_request())).await;
        if !matches!(ping, Ok(Ok(_))) {
            self.mark_failed(server, connection, "stopped answering (no reply to ping)".into()).await;
        }
    }

    /// Classifies a failed request; a lost transport marks the server failed.
    async fn request_failed(
        &self,
        server: &Server,
        connection: &Arc<Connection>,
        what: &str,
        err: ServiceError,
    ) -> McpError {
        let secrets = server.config.url_secrets();
        let error = match err {
            ServiceError::McpError(data) => {
                McpError::Rpc { server: server.name.clone(), code: data.code.0, message: data.message.to_string() }
            }
            ServiceError::Timeout { timeout } => McpError::Timeout {
                server: server.name.clone(),
                what: what.to_string(),
                after_ms: timeout.as_millis() as u64,
            },
            ServiceError::UnexpectedResponse => {
                McpError::Protocol { server: server.name.clone(), message: format!("unexpected reply to {what}") }
            }
            other if other.auth_challenge().is_some() => {
                let challenge = other.auth_challenge().map(String::from);
                // The next attempt connects again with whatever login is stored by then.
                let mut state = server.state.lock().await;
                if matches!(&*state, State::Ready(current) if Arc::ptr_eq(current, connection)) {
                    *state = State::Idle;
                }
                McpError::login_required(&server.name, crate::oauth::refusal(challenge.as_deref(), what), challenge)
            }
            other => {
                let reason =
                    format!("{} during {what}; the call was not retried", connection.describe_failure(&other).await);
                let error = McpError::unavailable(&server.name, reason).masked(&secrets);
                if let McpError::Unavailable { message, .. } = &error {
                    self.mark_failed(server, connection, message.clone()).await;
                }
                error
            }
        };
        error.masked(&secrets)
    }
}

fn ping_request() -> rmcp::model::ClientRequest {
    rmcp::model::ClientRequest::PingRequest(Default::default())
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_the_cap() {
        let b = Backoff::default();
        let secs: Vec<u64> = (1..=8).map(|n| b.delay(n).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(b.delay(100).as_secs(), 30);
    }
}
