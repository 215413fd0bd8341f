//! `/mcp`: Steward as an MCP server over streamable HTTP (SPEC M2), inside `steward serve`.
//!
//! The protocol side is `steward_mcp::mcp_server` (the five tools, their schemas, scope
//! checks); the transport is rmcp's `StreamableHttpService`, stateless (every POST is one
//! JSON-RPC exchange answered as JSON, no `Mcp-Session-Id`), behind [`bearer_layer`]:
//!
//! - an `Origin` header naming another site than the request's `Host` is refused with 403
//!   (DNS rebinding, MCP transport specification);
//! - a missing, unknown or revoked bearer token is refused with 401 and
//!   `WWW-Authenticate: Bearer`;
//! - otherwise the token's owner and scopes ([`Caller`]) go into the request's extensions, where
//!   the handler finds them (rmcp hands the HTTP request parts to the handler).
//!
//! `/mcp` is outside the cookie and CSRF layer of [`crate::session`]: it authenticates by
//! token, sets no cookie, and browsers are not its clients. Runs submitted here start with
//! [`runs::start`] for the token's owner, exactly like runs started from the web UI: they
//! execute in this server and their approvals are answered by that owner in the browser.
//! Listing and reading show only the owner's runs; approving is not an MCP tool.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::Extensions;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use steward_mcp::mcp_server::{
    Caller, CallerLookup, GetRun, LIST_RUNS_DEFAULT, ListPendingApprovals, ListRuns, RunService, ServiceError,
    StewardMcpServer, SubmitTask, SubmitWorkRequest, call_outcomes,
};
use steward_protocol::ApprovalStatus;
use steward_store::RunStatus;

use crate::error::{ApiError, ErrorClass};
use crate::runs::{self, RunView};
use crate::state::{AppState, StartRun};
use crate::tokens::{self, AuthError};

/// The path of the MCP endpoint.
pub const PATH: &str = "/mcp";

/// The `/mcp` route: rmcp's streamable HTTP service behind [`bearer_layer`]. Merge it into the
/// application router outside the session layer.
pub fn router(state: AppState) -> Router<AppState> {
    let runs = Arc::new(ServerRuns { state: state.clone() });
    let lookup: CallerLookup = Arc::new(caller_of);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        // Hosts are not limited to loopback names: `--allow-remote` serves other machines, and
        // every request needs a bearer token; `Origin` is checked by `bearer_layer`.
        .disable_allowed_hosts()
        .with_cancellation_token(state.shutdown.child_token());
    let service = StreamableHttpService::new(
        move || Ok(StewardMcpServer::with_caller_lookup(runs.clone(), lookup.clone())),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    // `route_layer`: only `/mcp` itself needs a token; other paths stay 404.
    Router::new().route_service(PATH, service).route_layer(axum::middleware::from_fn_with_state(state, bearer_layer))
}

/// The caller that [`bearer_layer`] put into the HTTP request, as the handler sees it.
fn caller_of(extensions: &Extensions) -> Option<Caller> {
    extensions.get::<axum::http::request::Parts>().and_then(|parts| parts.extensions.get::<Caller>()).cloned()
}

/// Middleware of `/mcp`: refuses a cross-site `Origin` (403) and a request without a valid,
/// unrevoked bearer token (401, `WWW-Authenticate: Bearer`); puts the token's [`Caller`] into
/// the request's extensions.
pub async fn bearer_layer(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    if !crate::session::same_origin(request.headers()) {
        return (
            StatusCode::FORBIDDEN,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "Forbidden: the Origin header names another site than this server\n",
        )
            .into_response();
    }
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim().to_string());
    let result = match presented {
        Some(token) => tokens::authenticate(state.runtime.store.as_ref(), state.runtime.clock.as_ref(), &token).await,
        None => Err(AuthError::Missing),
    };
    match result {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(AuthError::Storage) => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "the token store cannot be read; try again\n",
        )
            .into_response(),
        Err(error) => unauthorized(error),
    }
}

fn unauthorized(error: AuthError) -> Response {
    let (challenge, message) = match error {
        AuthError::Missing => (
            r#"Bearer realm="steward""#,
            "this endpoint needs `Authorization: Bearer <token>`; make a token with `steward mcp token create` or on the Tokens page",
        ),
        AuthError::Revoked => (
            r#"Bearer realm="steward", error="invalid_token", error_description="the token was revoked""#,
            "the token was revoked",
        ),
        _ => (r#"Bearer realm="steward", error="invalid_token", error_description="unknown token""#, "unknown token"),
    };
    let mut response =
        (StatusCode::UNAUTHORIZED, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], format!("{message}\n"))
            .into_response();
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    response
}

/// The tools' answers from this server's runs and store, for each caller's owner.
struct ServerRuns {
    state: AppState,
}

impl ServerRuns {
    fn redact(&self, text: &str) -> String {
        self.state.runtime.redactor.redact(text)
    }

    /// An API error as the assistant sees it: another owner's run is reported as absent.
    fn message(&self, error: ApiError, run_id: Option<&str>) -> String {
        match (error.class, run_id) {
            (ErrorClass::NotOwner | ErrorClass::NotFound, Some(id)) => format!("no run `{id}`"),
            _ => error.message,
        }
    }

    fn run_row(&self, view: &RunView) -> Value {
        let record = view.record.as_ref();
        json!({
            "run_id": view.id,
            "status": view.status,
            "stop_reason": record.and_then(|r| r.stop_reason.map(|s| s.as_str())),
            "task": record.map(|r| self.redact(steward_protocol::truncate_chars(&r.task, 500))),
            "created_at": record.map(|r| r.created_at.to_rfc3339()),
            "queue_position": view.queue_position,
        })
    }
}

impl RunService for ServerRuns {
    async fn submit_work_request(&self, caller: &Caller, args: SubmitWorkRequest) -> Result<Value, ServiceError> {
        let new = steward_ledger::wire::NewWorkRequest {
            kind: steward_ledger::wire::WorkKind::PrSummary,
            repository: args.repository,
            pr_number: args.pr_number,
            text: args.text,
        };
        let ledger = self.state.runtime.store.ledger().ok_or("this server keeps no work ledger")?;
        let record = crate::ledger::file_request(ledger, self.state.now(), &caller.owner_id, &new)
            .await
            .map_err(|e| self.redact(&e.to_string()))?;
        Ok(json!({
            "request_id": record.id,
            "status": record.status.as_str(),
            "revision": record.revision,
            "owner_id": record.requester,
            "note": format!(
                "nothing runs until {} approves it on the Ledger page of Steward's web UI or with `steward ledger \
                 approve`; approving is not an MCP tool",
                record.requester
            ),
        }))
    }

    async fn submit_task(&self, caller: &Caller, args: SubmitTask) -> Result<Value, ServiceError> {
        let start = StartRun { task: args.task, workspace: Some(args.workspace), ..StartRun::default() };
        let started = runs::start(&self.state, &caller.owner_id, start).await.map_err(|e| self.message(e, None))?;
        Ok(json!({
            "run_id": started.id,
            "status": started.status,
            "queue_position": started.queue_position,
            "owner_id": caller.owner_id,
            "note": format!(
                "calls that need approval wait for {} in Steward's web UI (page /runs/{}); approving is not an MCP tool",
                caller.owner_id, started.id
            ),
        }))
    }

    async fn list_runs(&self, caller: &Caller, args: ListRuns) -> Result<Value, ServiceError> {
        let limit = args.limit.unwrap_or(LIST_RUNS_DEFAULT) as usize;
        let views = runs::list(&self.state, &caller.owner_id, limit).await.map_err(|e| self.message(e, None))?;
        Ok(json!({ "runs": views.iter().map(|v| self.run_row(v)).collect::<Vec<_>>() }))
    }

    async fn get_run(&self, caller: &Caller, args: GetRun) -> Result<Value, ServiceError> {
        let id = args.run_id.as_str();
        let (view, events, approvals) =
            runs::trace(&self.state, &caller.owner_id, id).await.map_err(|e| self.message(e, Some(id)))?;
        let redact = |text: &Option<String>| text.as_deref().map(|t| self.redact(t));
        let record = view.record.as_ref();
        let pending = approvals.iter().filter(|a| a.status == ApprovalStatus::Pending).count();
        Ok(json!({
            "run_id": view.id,
            "status": view.status,
            "queue_position": view.queue_position,
            "stop_reason": record.and_then(|r| r.stop_reason.map(|s| s.as_str())),
            "final": record.and_then(|r| redact(&r.final_text)),
            "error_class": record.and_then(|r| r.error_class.and_then(|c| serde_json::to_value(c).ok())),
            "error": record.and_then(|r| redact(&r.error)),
            "task": record.map(|r| self.redact(&r.task)),
            "workspace": record.map(|r| r.workspace.clone()),
            "planner": record.map(|r| r.planner.clone()),
            "created_at": record.map(|r| r.created_at.to_rfc3339()),
            "finished_at": record.and_then(|r| r.finished_at.map(|t| t.to_rfc3339())),
            "rounds": record.map(|r| r.rounds),
            "tool_calls": record.map(|r| r.tool_calls),
            "pending_approvals": pending,
            "calls": self.state.runtime.redactor.redact_value(&Value::Array(call_outcomes(&events))),
        }))
    }

    async fn list_pending_approvals(&self, caller: &Caller, args: ListPendingApprovals) -> Result<Value, ServiceError> {
        let store = self.state.runtime.store.as_ref();
        let storage = |e: steward_store::StoreError| self.redact(&format!("storage: {e}"));
        // Only runs that go on can still have their requests answered.
        let run_ids: Vec<String> = match &args.run_id {
            Some(id) => {
                let view =
                    runs::owned(&self.state, &caller.owner_id, id).await.map_err(|e| self.message(e, Some(id)))?;
                if view.live || view.status == "running" { vec![view.id] } else { Vec::new() }
            }
            None => store
                .runs_with_status(RunStatus::Running)
                .await
                .map_err(storage)?
                .into_iter()
                .filter(|r| r.owner_id == caller.owner_id)
                .map(|r| r.id)
                .collect(),
        };
        let now = self.state.now();
        let mut pending = Vec::new();
        for run_id in &run_ids {
            let approvals = store.approvals(run_id).await.map_err(storage)?;
            for request in approvals {
                if request.status != ApprovalStatus::Pending || request.expires_at <= now {
                    continue;
                }
                pending.push(json!({
                    "approval_id": request.id,
                    "run_id": request.run_id,
                    "call_id": request.call_id,
                    "tool": request.tool,
                    "arguments": self.state.runtime.redactor.redact_value(&request.arguments),
                    "reason": self.redact(&request.reason),
                    "rule": request.rule,
                    "risk": request.risk,
                    "preview": self.redact(&request.preview),
                    "created_at": request.created_at.to_rfc3339(),
                    "expires_at": request.expires_at.to_rfc3339(),
                    "approve_at": format!("/runs/{run_id}"),
                }));
            }
        }
        Ok(json!({
            "approvals": pending,
            "note": format!(
                "read only: {} approves in Steward's web UI (the run's page); approving is not an MCP tool",
                caller.owner_id
            ),
        }))
    }
}
