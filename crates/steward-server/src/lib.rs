//! `steward serve` (SPEC §8, §9, C7): a JSON API, Server-Sent Events of each run's events,
//! and server-rendered web pages to start runs, watch them live, and approve or deny their
//! risky tool calls with a countdown.
//!
//! The server never decides anything itself: runs go through `steward_core::run_task`, the
//! same control layer as `steward run`; the browser is one more approver, bound to the run's
//! owner by a signed cookie.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod api;
pub mod conversations;
pub mod error;
pub mod ledger;
pub mod live;
pub mod mcp;
pub mod memory;
pub mod openapi;
mod owner;
pub mod pages;
pub mod runs;
mod schema;
pub mod session;
pub mod sse;
pub mod state;
pub mod tokens;

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use steward_core::Runtime;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use error::{ApiError, ErrorClass};
pub use session::Sessions;
pub use state::{AppState, DEFAULT_NOTICE_POLL, Inner, ServerOptions, StartRun, UnknownMode};
pub use steward_core::{Launcher, LauncherError, Prepared, ProviderStatus, RunOptions};

/// How often old finished runs are cleaned up (also once at start).
const CLEANUP_EVERY: Duration = Duration::from_secs(600);

/// How long runs get to record their cancellation when the server stops.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The shared state of a server.
pub fn app_state(
    runtime: Arc<Runtime>,
    launcher: Arc<dyn Launcher>,
    sessions: Sessions,
    options: ServerOptions,
) -> AppState {
    let (facts_changed, _) = tokio::sync::broadcast::channel(256);
    let (conversations_changed, _) = tokio::sync::broadcast::channel(256);
    let (run_finished, _) = tokio::sync::broadcast::channel(256);
    let decisions = runtime.decisions.clone();
    AppState(Arc::new(Inner {
        runtime,
        launcher,
        live: live::LiveRuns::new(options.max_running, decisions),
        sessions,
        options,
        shutdown: CancellationToken::new(),
        tasks: TaskTracker::new(),
        facts_changed,
        conversations: conversations::Conversations::default(),
        conversations_changed,
        run_finished,
        open_streams: std::sync::atomic::AtomicUsize::new(0),
        tokens_just_made: Default::default(),
    }))
}

/// Every route: pages, form posts, `/api/…` (all of it from [`openapi::routes`], which documents
/// each route it registers), `/static/…`, and `/mcp` (bearer tokens, outside the cookie and
/// CSRF layer). Whatever `routes` registers is behind [`openapi::documented_api_only`], so
/// an `/api/…` route missing from the OpenAPI document answers 404 wherever it was added.
pub fn router(state: AppState) -> Router {
    openapi::documented_api_only(routes(state.clone()))
        .layer(axum::middleware::from_fn(security_headers))
        .layer(axum::middleware::from_fn_with_state(state.clone(), host_check))
        .with_state(state)
}

/// The routes of [`router`] with the session and bearer layers; add new routes here (the
/// JSON API's in [`openapi::routes`], so that they are documented).
fn routes(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/", get(pages::index))
        .route("/login", get(pages::login))
        .route("/runs", post(pages::start))
        .route("/runs/list", get(pages::runs_list_fragment))
        .route("/runs/waiting", get(pages::waiting_fragment))
        .route("/runs/{id}", get(pages::run_page))
        .route("/runs/{id}/timeline", get(pages::timeline_fragment))
        .route("/runs/{id}/rollback", post(pages::rollback))
        .route("/runs/{id}/trace", get(pages::trace_page))
        .route("/runs/{id}/cancel", post(pages::cancel))
        .route("/approvals/{id}", post(pages::decide))
        .route("/elicitations/{id}", post(pages::answer_elicitation))
        .route("/memory", get(pages::memory_page).post(pages::remember))
        .route("/memory/{id}/forget", post(pages::forget))
        .route("/compare", get(pages::compare_page).post(pages::compare))
        .route("/conversations", get(pages::conversations_page).post(pages::create_conversation))
        .route("/conversations/{id}", get(pages::conversation_page))
        .route("/conversations/{id}/turns", get(pages::turns_fragment))
        .route("/conversations/{id}/messages", post(pages::send_message))
        .route("/conversations/{id}/end", post(pages::end_conversation))
        .route("/tools", get(pages::tools_page))
        .route("/tools/generated/{name}", get(pages::generated_tool_page))
        .route("/tools/generated/{name}/remove", post(pages::remove_generated_tool))
        .route("/grants", get(pages::grants_page))
        .route("/grants/{id}/revoke", post(pages::revoke_grant))
        .route("/tokens", get(tokens::tokens_page).post(tokens::create_token))
        .route("/tokens/{id}/revoke", post(tokens::revoke_token))
        .route("/static/app.js", get(app_js))
        .route("/static/app.css", get(app_css))
        .route("/static/icon.svg", get(|| svg(include_str!("../static/icon.svg"))))
        .route("/static/icon-waiting.svg", get(|| svg(include_str!("../static/icon-waiting.svg"))))
        .route("/favicon.ico", get(|| svg(include_str!("../static/icon.svg"))))
        // The work ledger: pages (and, with the JSON API below, its API) for the owner's session;
        // calls with a bearer token are answered by `ledger::bearer_layer` (below) before the
        // session layer sees them.
        .route("/ledger", get(ledger::ledger_page).post(ledger::file_request_form))
        .route("/ledger/{id}/approve", post(ledger::approve_form))
        .route("/ledger/{id}/revoke", post(ledger::revoke_form))
        // The JSON API, documented as it is routed: see `openapi::routes`.
        .merge(openapi::routes().split_for_parts().0)
        .layer(axum::middleware::from_fn_with_state(state.clone(), owner::owner_layer))
        .layer(axum::middleware::from_fn_with_state(
            ledger::TokenRoutes::new(state.clone(), openapi::documented_api_only(ledger::routes().split_for_parts().0)),
            ledger::bearer_layer,
        ))
        // After the session layer: `/mcp` authenticates by bearer token and sets no cookie.
        .merge(mcp::router(state))
}

async fn app_js() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], include_str!("../static/app.js"))
}

/// An icon (SVG; `/favicon.ico` answers with the same image, which browsers take by its type).
async fn svg(body: &'static str) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "image/svg+xml")], body)
}

async fn app_css() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], include_str!("../static/app.css"))
}

/// Headers on every response: no framing by other sites, no content sniffing, scripts and
/// styles from this server only, no referrer to other sites (`same-origin` keeps the `Origin`
/// header of form posts, which `no-referrer` would turn into `null`).
async fn security_headers(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    response
}

/// Refuses a request whose `Host` names a host the server does not answer to (421), before
/// anything else: a web page that rebinds its own domain to 127.0.0.1 gets nothing.
async fn host_check(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if let Some(allowed) = &state.options.allowed_hosts {
        // A request without `Host` comes from no browser (HTTP/1.1 browsers always send it).
        let host = request.headers().get(header::HOST).map(|v| v.to_str().unwrap_or("?"));
        if let Some(host) = host
            && !host_allowed(host, allowed)
        {
            let error = ApiError {
                status: axum::http::StatusCode::MISDIRECTED_REQUEST,
                class: error::ErrorClass::Invalid,
                message: format!(
                    "this server does not answer to the host name in the request; open it as http://127.0.0.1:PORT \
                     (or start it with --allow-remote) [{}]",
                    host.chars().take(100).collect::<String>()
                ),
            };
            return error.into_response();
        }
    }
    next.run(request).await
}

/// True when `host` (`name` or `name:port`, IPv6 in brackets) names one of `allowed`.
fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let name = match host.rsplit_once(':') {
        Some((name, port)) if !name.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) && !host.ends_with(']') => {
            name
        }
        _ => host,
    };
    allowed.iter().any(|a| a.eq_ignore_ascii_case(name))
}

/// Serves on `listener` until `stop` is cancelled, then closes every connection (open event
/// streams included), cancels the live runs and waits up to ten seconds for them to record it.
pub async fn serve(state: AppState, listener: tokio::net::TcpListener, stop: CancellationToken) -> std::io::Result<()> {
    let app = router(state.clone()).into_make_service_with_connect_info::<SocketAddr>();
    // Decisions given through other nodes on runs of this one.
    state.tasks.spawn(live::follow_recorded_decisions(
        state.runtime.clone(),
        state.options.notice_poll,
        state.shutdown.clone(),
    ));
    let cleaner = state.clone();
    state.tasks.spawn(async move {
        loop {
            match runs::cleanup(&cleaner).await {
                Ok(0) => {}
                Ok(n) => tracing::info!("deleted {n} old finished runs"),
                Err(e) => tracing::warn!("cleaning up old runs: {e}"),
            }
            tokio::select! {
                _ = tokio::time::sleep(CLEANUP_EVERY) => {}
                _ = cleaner.shutdown.cancelled() => break,
            }
        }
    });
    let result = tokio::select! {
        served = axum::serve(listener, app).into_future() => served,
        _ = stop.cancelled() => Ok(()),
    };
    state.shutdown.cancel();
    state.tasks.close();
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, state.tasks.wait()).await;
    result
}

#[cfg(test)]
mod host_tests {
    use super::*;

    #[test]
    fn only_loopback_names_pass_on_a_loopback_server() {
        let allowed: Vec<String> = state::LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect();
        for ok in ["127.0.0.1:7878", "localhost:1", "LOCALHOST", "[::1]:7878", "[::1]"] {
            assert!(host_allowed(ok, &allowed), "{ok}");
        }
        for bad in ["rebind.attacker.example:7878", "127.0.0.1.evil.example", "", "evil:127.0.0.1", "0.0.0.0:7878"] {
            assert!(!host_allowed(bad, &allowed), "{bad}");
        }
    }
}
