//! The server-rendered HTML pages (SPEC W) and the plain form posts behind them. Every page
//! works without JavaScript; `static/app.js` adds the live updates (event stream, countdowns,
//! buttons that act without a reload).

use std::sync::OnceLock;

use axum::Extension;
use axum::extract::{Form, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use minijinja::{Environment, Value, context};
use serde::{Deserialize, Serialize};
use steward_core::trace::TraceStep;
use steward_mcp::elicitation::FieldKind;
use steward_protocol::{ApprovalStatus, Event, EventKind};

use crate::error::{ApiError, ErrorClass};
use crate::live::ElicitationAction;
use crate::runs;
use crate::session::Session;
use crate::state::{AppState, StartRun};

fn templates() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        // `.html` names get HTML auto-escaping: every value from a run, a model or a tool is
        // text, never markup.
        for (name, source) in [
            ("base.html", include_str!("../../templates/base.html")),
            ("index.html", include_str!("../../templates/index.html")),
            ("run.html", include_str!("../../templates/run.html")),
            ("timeline.html", include_str!("../../templates/timeline.html")),
            ("diff.html", include_str!("../../templates/diff.html")),
            ("runs_list.html", include_str!("../../templates/runs_list.html")),
            ("turns.html", include_str!("../../templates/turns.html")),
            ("trace.html", include_str!("../../templates/trace.html")),
            ("roles.html", include_str!("../../templates/roles.html")),
            ("memory.html", include_str!("../../templates/memory.html")),
            ("tools.html", include_str!("../../templates/tools.html")),
            ("generated_tool.html", include_str!("../../templates/generated_tool.html")),
            ("grants.html", include_str!("../../templates/grants.html")),
            ("tokens.html", include_str!("../../templates/tokens.html")),
            ("compare.html", include_str!("../../templates/compare.html")),
            ("conversations.html", include_str!("../../templates/conversations.html")),
            ("conversation.html", include_str!("../../templates/conversation.html")),
            ("error.html", include_str!("../../templates/error.html")),
            ("ledger.html", include_str!("../../templates/ledger.html")),
        ] {
            if let Err(e) = env.add_template(name, source) {
                tracing::error!("template {name}: {e}");
            }
        }
        env
    })
}

/// A serialisable value for a template.
fn ser<T: Serialize>(value: &T) -> Value {
    Value::from(minijinja::value::Serde(value))
}

/// Renders template `name` with `ctx` and `status` (500 with a plain message when it fails).
pub(crate) fn render(status: StatusCode, name: &str, ctx: minijinja::Value) -> Response {
    match templates().get_template(name).and_then(|t| t.render(ctx)) {
        Ok(html) => (status, Html(html)).into_response(),
        Err(e) => {
            tracing::error!("rendering {name}: {e}");
            (StatusCode::INTERNAL_SERVER_ERROR, "page rendering failed").into_response()
        }
    }
}

/// The error page for `error` (its status, `#error` saying `class: message`).
pub fn error_page(session: &Session, error: &ApiError) -> Response {
    render(
        error.status,
        "error.html",
        context! { csrf => &session.csrf, owner => &session.owner_id, error => error.to_string() },
    )
}

/// Query of the login link.
#[derive(Deserialize)]
pub struct LoginQuery {
    token: Option<String>,
}

/// `GET /login?token=…`: the one-time link printed by `steward serve` makes this browser the
/// local owner's.
pub async fn login(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Query(query): Query<LoginQuery>,
    headers: axum::http::HeaderMap,
) -> Response {
    let token = query.token.unwrap_or_default();
    if !state.sessions.redeem_login_token(&token) {
        let error = ApiError {
            status: StatusCode::FORBIDDEN,
            class: ErrorClass::Invalid,
            message: "this login link is not valid (each link works once; restart `steward serve` for a new one)"
                .into(),
        };
        return error_page(&session, &error);
    }
    let jar = state
        .sessions
        .jar(&headers)
        .add(crate::session::Sessions::owner_cookie(state.sessions.local_owner().to_string()));
    (jar, Redirect::to("/")).into_response()
}

/// `GET /`: the start form and the owner's runs.
pub async fn index(State(state): State<AppState>, Extension(session): Extension<Session>) -> Response {
    index_page(&state, &session, None, None).await
}

/// The start page, with `form` typed back into the form and `error` beside the field it is
/// about when a start was refused (then status 400).
async fn index_page(
    state: &AppState,
    session: &Session,
    form: Option<&StartForm>,
    error: Option<&ApiError>,
) -> Response {
    let rows = match run_rows(state, &session.owner_id).await {
        Ok(r) => r,
        Err(e) => return error_page(session, &e),
    };
    let providers = state.launcher.providers().await;
    let unreachable: Vec<_> = providers.iter().filter(|p| !p.reachable).cloned().collect();
    let workspaces: Vec<String> = state.options.workspaces.iter().map(|w| w.display().to_string()).collect();
    let field_error = error.map(|e| {
        let message = e.message.to_lowercase();
        if message.contains("workspace") || message.contains("serves") {
            "workspace"
        } else if message.contains("task") {
            "task"
        } else {
            "other"
        }
    });
    let typed = context! {
        task => form.map(|f| f.task.as_str()).unwrap_or(""),
        workspace => form.and_then(|f| f.workspace.clone()).or_else(|| workspaces.first().cloned()).unwrap_or_default(),
    };
    render(
        error.map(|e| e.status).unwrap_or(StatusCode::OK),
        "index.html",
        context! {
            csrf => &session.csrf, owner => &session.owner_id, runs => rows, providers => ser(&providers),
            unreachable => ser(&unreachable), workspaces => workspaces, form => typed, field_error => field_error,
            form_error => error.map(|e| e.to_string()), current_page => "start",
        },
    )
}

/// The owner's newest runs as the runs list shows them: status badge (`waiting for you` while
/// one of its approvals waits, with that approval's id in `waiting`), task, start time.
async fn run_rows(state: &AppState, owner_id: &str) -> Result<Vec<Value>, ApiError> {
    let runs = runs::list(state, owner_id, 50).await?;
    Ok(runs
        .iter()
        .map(|v| {
            let waiting = state.live.get(&v.id).and_then(|l| l.pending_approvals().into_iter().next()).map(|a| a.id);
            let (text, tone) = match (v.status.as_str(), &v.record) {
                ("queued", _) => match v.queue_position {
                    Some(n) => (format!("queued (position {n})"), "info"),
                    None => ("queued".to_string(), "info"),
                },
                ("running", _) if waiting.is_some() => ("waiting for you".to_string(), "wait"),
                ("failed", Some(r)) => {
                    (format!("failed: {}", r.error_class.map(|c| c.as_str()).unwrap_or("error")), "bad")
                }
                ("completed", Some(r)) if r.stop_reason.is_some_and(|s| s == steward_protocol::StopReason::Stuck) => {
                    ("stuck".to_string(), "bad")
                }
                ("completed", Some(r)) if r.stop_reason.is_some_and(|s| s != steward_protocol::StopReason::Answered) => {
                    (format!("stopped: {}", r.stop_reason.map(|s| s.as_str()).unwrap_or("limit")), "wait")
                }
                ("completed", _) => ("completed".to_string(), "ok"),
                ("cancelled" | "interrupted", _) => (v.status.clone(), "bad"),
                (other, _) => (other.to_string(), "info"),
            };
            let record = v.record.as_ref();
            context! {
                id => &v.id, status => &v.status, status_text => text, tone => tone, waiting => waiting,
                task => run::short(&steward_protocol::reveal_invisible(&v.task), 140), planner => record.map(|r| r.planner.as_str()).unwrap_or(""),
                provider => record.map(|r| r.provider.as_str()).unwrap_or(""),
                model => record.map(|r| r.model.as_str()).unwrap_or(""),
                created_at => record.map(|r| r.created_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            }
        })
        .collect())
}

/// `GET /runs/list`: the runs list alone, refetched by `app.js` while the start page is open.
pub async fn runs_list_fragment(State(state): State<AppState>, Extension(session): Extension<Session>) -> Response {
    match run_rows(&state, &session.owner_id).await {
        Ok(rows) => render(StatusCode::OK, "runs_list.html", context! { runs => rows }),
        Err(e) => (e.status, e.to_string()).into_response(),
    }
}

/// `GET /runs/waiting`: how many approvals of the owner's runs wait in this server, as the
/// navigation's badge (a link to the oldest), or nothing. `app.js` refetches it on every page.
pub async fn waiting_fragment(State(state): State<AppState>, Extension(session): Extension<Session>) -> Response {
    let waiting = state.live.waiting_of(&session.owner_id);
    let html = match waiting.first() {
        None => String::new(),
        Some((run, approval)) => format!(
            "<a class=\"badge tone-wait\" href=\"/runs/{run}#approval-{}\">{} waiting for you</a>",
            approval.id,
            waiting.len()
        ),
    };
    (StatusCode::OK, Html(html)).into_response()
}

/// The start form.
#[derive(Deserialize, Clone)]
pub struct StartForm {
    csrf: String,
    task: String,
    #[serde(default)]
    workspace: Option<String>,
    #[serde(default)]
    planner: Option<String>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    mode: Option<String>,
}

/// `csrf` (403) unless `token` is the session's CSRF token.
pub(crate) fn check_csrf(state: &AppState, session: &Session, token: &str) -> Result<(), ApiError> {
    if state.sessions.csrf_ok(&session.owner_id, token) { Ok(()) } else { Err(ApiError::csrf()) }
}

/// Answers a form post: `act` runs only once the form's CSRF token checks out; its success
/// redirects (303) to the location it gives, a refusal shows the error page.
pub(crate) async fn form_post(
    state: &AppState,
    session: &Session,
    csrf: &str,
    act: impl std::future::Future<Output = Result<String, ApiError>>,
) -> Response {
    let result = match check_csrf(state, session, csrf) {
        Ok(()) => act.await,
        Err(e) => Err(e),
    };
    match result {
        Ok(location) => Redirect::to(&location).into_response(),
        Err(e) => error_page(session, &e),
    }
}

fn non_empty(v: Option<String>) -> Option<String> {
    v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// `POST /runs` (form): starts a run and shows it.
pub async fn start(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Form(form): Form<StartForm>,
) -> Response {
    let start = StartRun {
        task: form.task.clone(),
        workspace: non_empty(form.workspace.clone()),
        planner: non_empty(form.planner.clone()),
        provider: non_empty(form.provider.clone()),
        model: non_empty(form.model.clone()),
        mode: non_empty(form.mode.clone()),
    };
    if let Err(e) = check_csrf(&state, &session, &form.csrf) {
        return error_page(&session, &e);
    }
    match runs::start(&state, &session.owner_id, start).await {
        Ok(started) => Redirect::to(&format!("/runs/{}", started.id)).into_response(),
        // What was typed comes back in the form, with the reason beside the field.
        Err(e) if e.class == ErrorClass::Invalid => index_page(&state, &session, Some(&form), Some(&e)).await,
        Err(e) => error_page(&session, &e),
    }
}

/// A form carrying only the CSRF token.
#[derive(Deserialize)]
pub struct CsrfForm {
    csrf: String,
}

/// `POST /runs/{id}/cancel` (form).
pub async fn cancel(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let act = async { runs::cancel(&state, &session.owner_id, &id).await.map(|_| format!("/runs/{id}")) };
    form_post(&state, &session, &form.csrf, act).await
}

/// The approve/deny form.
#[derive(Deserialize)]
pub struct DecideForm {
    csrf: String,
    run: String,
    decision: String,
    #[serde(default)]
    scope: Option<String>,
    /// The hash of the call the page showed (see `steward_core::call_hash`).
    #[serde(default)]
    call_hash: Option<String>,
}

/// `POST /approvals/{id}` (form).
pub async fn decide(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<DecideForm>,
) -> Response {
    let act = async {
        let decision = runs::parse_decision(&form.decision, form.scope.as_deref(), None)?;
        runs::decide(&state, &session.owner_id, &id, decision, form.call_hash.filter(|h| !h.is_empty())).await?;
        // Back to the run, when the form names one that is a run id and nothing else.
        let run = &form.run;
        let is_run = run.starts_with("run_") && run.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        Ok(if is_run { format!("/runs/{run}") } else { "/".to_string() })
    };
    form_post(&state, &session, &form.csrf, act).await
}

mod compare;
mod conversations;
mod diff;
mod generated;
mod markdown;
mod memory;
mod run;
mod timeline;

pub use compare::*;
pub use conversations::*;
pub use generated::{RemoveGeneratedForm, generated_tool_page, remove_generated_tool};
pub use memory::*;
pub use run::*;
