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

use crate::error::ApiError;
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
            ("base.html", include_str!("../templates/base.html")),
            ("index.html", include_str!("../templates/index.html")),
            ("run.html", include_str!("../templates/run.html")),
            ("trace.html", include_str!("../templates/trace.html")),
            ("memory.html", include_str!("../templates/memory.html")),
            ("tools.html", include_str!("../templates/tools.html")),
            ("grants.html", include_str!("../templates/grants.html")),
            ("tokens.html", include_str!("../templates/tokens.html")),
            ("compare.html", include_str!("../templates/compare.html")),
            ("conversations.html", include_str!("../templates/conversations.html")),
            ("conversation.html", include_str!("../templates/conversation.html")),
            ("error.html", include_str!("../templates/error.html")),
            ("ledger.html", include_str!("../templates/ledger.html")),
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
            class: "invalid",
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
    let runs = match runs::list(&state, &session.owner_id, 50).await {
        Ok(r) => r,
        Err(e) => return error_page(&session, &e),
    };
    let providers = state.launcher.providers().await;
    let unreachable: Vec<_> = providers.iter().filter(|p| !p.reachable).cloned().collect();
    let rows: Vec<_> = runs
        .iter()
        .map(|v| match &v.record {
            Some(r) => context! { id => &r.id, status => &v.status, task => &r.task, planner => &r.planner,
            provider => &r.provider, model => &r.model, created_at => r.created_at.to_rfc3339() },
            None => context! { id => &v.id, status => &v.status, task => &v.task, planner => "",
            provider => "", model => "", created_at => "" },
        })
        .collect();
    let workspaces: Vec<String> = state.options.workspaces.iter().map(|w| w.display().to_string()).collect();
    render(
        StatusCode::OK,
        "index.html",
        context! {
            csrf => &session.csrf, owner => &session.owner_id, runs => rows, providers => ser(&providers),
            unreachable => ser(&unreachable), default_workspace => workspaces.first().cloned().unwrap_or_default(),
            workspaces => workspaces,
        },
    )
}

/// The start form.
#[derive(Deserialize)]
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
        task: form.task,
        workspace: non_empty(form.workspace),
        planner: non_empty(form.planner),
        provider: non_empty(form.provider),
        model: non_empty(form.model),
        mode: non_empty(form.mode),
    };
    let act = async { Ok(format!("/runs/{}", runs::start(&state, &session.owner_id, start).await?.id)) };
    form_post(&state, &session, &form.csrf, act).await
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
        runs::decide(&state, &session.owner_id, &id, decision).await?;
        // Back to the run, when the form names one that is a run id and nothing else.
        let run = &form.run;
        let is_run = run.starts_with("run_") && run.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        Ok(if is_run { format!("/runs/{run}") } else { "/".to_string() })
    };
    form_post(&state, &session, &form.csrf, act).await
}

/// One stage's text as the run page shows it.
#[derive(Serialize, Default)]
struct StageView {
    stage: String,
    text: String,
}

/// One tool call as the run page shows it.
#[derive(Serialize)]
struct CallView {
    call_id: String,
    tool: String,
    arguments: String,
    decision: String,
    rule: String,
    detail: String,
}

/// Stages and tool calls replayed from a run's events (the same rules as `app.js`).
fn replay(events: &[Event]) -> (Vec<StageView>, Vec<CallView>, String) {
    let mut stages: Vec<StageView> = Vec::new();
    let mut calls: Vec<CallView> = Vec::new();
    let mut final_text = String::new();
    let set = |calls: &mut Vec<CallView>, id: &str, decision: &str, rule: Option<&str>, detail: Option<&str>| {
        if let Some(c) = calls.iter_mut().rev().find(|c| c.call_id == id) {
            c.decision = decision.to_string();
            if let Some(r) = rule {
                c.rule = r.to_string();
            }
            if let Some(d) = detail {
                c.detail = d.to_string();
            }
        }
    };
    for event in events {
        match &event.kind {
            // A later round of a stage starts on a new line.
            EventKind::StageStarted { stage, .. } => match stages.iter_mut().find(|s| &s.stage == stage) {
                Some(s) if !s.text.is_empty() && !s.text.ends_with('\n') => s.text.push('\n'),
                Some(_) => {}
                None => stages.push(StageView { stage: stage.clone(), text: String::new() }),
            },
            EventKind::StageChunk { stage, text } => match stages.iter_mut().find(|s| &s.stage == stage) {
                Some(s) => s.text.push_str(text),
                None => stages.push(StageView { stage: stage.clone(), text: text.clone() }),
            },
            EventKind::ToolRequested { call_id, tool, arguments } => calls.push(CallView {
                call_id: call_id.clone(),
                tool: tool.clone(),
                arguments: serde_json::to_string_pretty(arguments).unwrap_or_default(),
                decision: "requested".into(),
                rule: String::new(),
                detail: String::new(),
            }),
            EventKind::ToolDenied { call_id, rule, reason, .. } => {
                set(&mut calls, call_id, "denied", Some(rule), Some(reason))
            }
            EventKind::ToolApprovalRequired { call_id, rule, .. } => {
                set(&mut calls, call_id, "approval required", Some(rule), None)
            }
            EventKind::ToolApproved { call_id, .. } => set(&mut calls, call_id, "approved", None, None),
            EventKind::ToolRejected { call_id, reason, .. } => set(&mut calls, call_id, "rejected", None, Some(reason)),
            EventKind::ToolApprovalExpired { call_id, .. } => set(&mut calls, call_id, "expired", None, None),
            EventKind::ToolStarted { call_id, allowed_by, .. } => {
                let rule = (!allowed_by.is_empty()).then_some(allowed_by.as_str());
                set(&mut calls, call_id, "running", rule, None)
            }
            EventKind::McpElicitationRequested { call_id, .. } => {
                set(&mut calls, call_id, "waiting for input", None, None)
            }
            EventKind::McpElicitationAnswered { call_id, .. } => set(&mut calls, call_id, "running", None, None),
            EventKind::ToolCompleted { call_id, output, hook_output, .. } if !hook_output.is_empty() => {
                set(&mut calls, call_id, "completed", None, Some(&format!("{output}\n\n{hook_output}")))
            }
            EventKind::ToolCompleted { call_id, output, .. } => {
                set(&mut calls, call_id, "completed", None, Some(output))
            }
            EventKind::ToolFailed { call_id, error, .. } => set(&mut calls, call_id, "failed", None, Some(error)),
            EventKind::ToolCallRepeated { call_id, rule, answered_from_record, message, .. } => {
                let decision = if *answered_from_record { "answered from the record" } else { "repeat, not run" };
                set(&mut calls, call_id, decision, (!rule.is_empty()).then_some(rule.as_str()), Some(message))
            }
            EventKind::RunCompleted { final_text: f, .. } => final_text = f.clone(),
            EventKind::RunFailed { error, class, .. } => final_text = format!("failed ({}): {error}", class.as_str()),
            EventKind::RunCancelled { reason, .. } => final_text = format!("cancelled: {reason}"),
            _ => {}
        }
    }
    (stages, calls, final_text)
}

/// A request for input whose answer was refused: shown again with the message and what was
/// typed.
struct Retry {
    id: String,
    message: String,
    inputs: Vec<(String, String)>,
}

/// The input type of an elicitation field in the form.
fn input_type(kind: &FieldKind) -> &'static str {
    match kind {
        FieldKind::Text { format, .. } => match format.as_deref() {
            Some("email") => "email",
            Some("uri") => "url",
            Some("date") => "date",
            _ => "text",
        },
        FieldKind::Number { .. } => "number",
        FieldKind::Boolean | FieldKind::Choice { .. } => "select",
    }
}

/// The pending requests for input of a live run, for the template: each field with the value
/// the form starts with (its default, or what was typed before a refused answer).
fn elicitation_views(state: &AppState, run_id: &str, retry: Option<&Retry>) -> Vec<minijinja::Value> {
    let Some(live) = state.live.get(run_id) else { return Vec::new() };
    let now = chrono::Utc::now();
    live.pending_elicitations()
        .into_iter()
        .map(|e| {
            let retry = retry.filter(|r| r.id == e.id);
            let fields: Vec<_> = e
                .fields
                .iter()
                .map(|f| {
                    let value = retry
                        .and_then(|r| r.inputs.iter().find(|(name, _)| name == &f.name).map(|(_, v)| v.clone()))
                        .unwrap_or_else(|| f.prefill.clone());
                    let (integer, minimum, maximum, min_length, max_length, options) = match &f.kind {
                        FieldKind::Number { integer, minimum, maximum } => (*integer, *minimum, *maximum, None, None, Vec::new()),
                        FieldKind::Text { min_length, max_length, .. } => (false, None, None, *min_length, *max_length, Vec::new()),
                        FieldKind::Choice { options } => (false, None, None, None, None, options.clone()),
                        FieldKind::Boolean => {
                            let yes_no = [("true", "yes"), ("false", "no")];
                            let options = yes_no
                                .map(|(value, label)| steward_mcp::elicitation::Choice { value: value.into(), label: label.into() })
                                .to_vec();
                            (false, None, None, None, None, options)
                        }
                    };
                    context! {
                        name => &f.name, label => &f.label, description => &f.description, required => f.required,
                        hint => f.hint(), input => input_type(&f.kind), value => value, step => if integer { "1" } else { "any" },
                        minimum => minimum, maximum => maximum, min_length => min_length, max_length => max_length,
                        options => ser(&options),
                    }
                })
                .collect();
            context! {
                id => &e.id, server => &e.server, tool => &e.tool, message => &e.message, fields => fields,
                expires_at => e.expires_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                time_left => minutes_seconds((e.expires_at - now).num_seconds()),
                error => retry.map(|r| r.message.as_str()),
            }
        })
        .collect()
}

/// `GET /runs/{id}`: the run view.
pub async fn run_page(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
) -> Response {
    render_run(&state, &session, &id, None).await
}

/// The run view, with a refused answer to a request for input shown again (status 400).
async fn render_run(state: &AppState, session: &Session, id: &str, retry: Option<Retry>) -> Response {
    let (view, events, approvals) = match runs::trace(state, &session.owner_id, id).await {
        Ok(t) => t,
        Err(e) => return error_page(session, &e),
    };
    let (stages, calls, final_text) = replay(&events);
    let ended = !matches!(view.status.as_str(), "queued" | "running");
    let now = chrono::Utc::now();
    let approvals: Vec<_> = approvals
        .iter()
        .map(|a| {
            let state = match a.status {
                ApprovalStatus::Pending if ended => "closed",
                ApprovalStatus::Pending if a.expires_at <= now => "expired",
                s => s.as_str(),
            };
            context! {
                id => &a.id, tool => &a.tool, rule => &a.rule, reason => &a.reason, risk => format!("{:.2}", a.risk),
                arguments => serde_json::to_string_pretty(&a.arguments).unwrap_or_default(), preview => &a.preview,
                expires_at => a.expires_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true), state => state,
                time_left => minutes_seconds((a.expires_at - now).num_seconds()),
            }
        })
        .collect();
    let task = view.task.clone();
    let last_seq = events.last().map(|e| e.seq).unwrap_or(0);
    let elicitations = elicitation_views(state, id, retry.as_ref());
    let status = if retry.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    render(
        status,
        "run.html",
        context! {
            csrf => &session.csrf, owner => &session.owner_id, run => ser(&view), task => task, stages => ser(&stages),
            calls => ser(&calls), approvals => approvals, final => final_text, ended => ended, last_seq => last_seq,
            elicitations => elicitations,
        },
    )
}

/// `POST /elicitations/{id}` (form): the owner's answer to an MCP server's request for input:
/// `action` = `accept` (with a `value.NAME` field per form field), `decline` or `cancel`.
/// Values that do not fit the requested schema show the run page again with the reason and
/// what was typed; the request keeps waiting.
pub async fn answer_elicitation(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Response {
    let field = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).unwrap_or_default();
    let inputs: Vec<(String, String)> =
        pairs.iter().filter_map(|(k, v)| k.strip_prefix("value.").map(|name| (name.to_string(), v.clone()))).collect();
    let run = field("run");
    let is_run = run.starts_with("run_") && run.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if let Err(e) = check_csrf(&state, &session, &field("csrf")) {
        return error_page(&session, &e);
    }
    let action = match field("action").as_str() {
        "accept" => ElicitationAction::Accept(inputs.clone()),
        "decline" => ElicitationAction::Decline,
        "cancel" => ElicitationAction::Cancel,
        other => {
            return error_page(
                &session,
                &ApiError::invalid(format!("unknown action `{other}`; use accept, decline or cancel")),
            );
        }
    };
    match runs::answer_elicitation(&state, &session.owner_id, &id, action) {
        Ok(()) => Redirect::to(&if is_run { format!("/runs/{run}") } else { "/".to_string() }).into_response(),
        Err(e) if e.class == "invalid" && is_run => {
            render_run(&state, &session, &run, Some(Retry { id, message: e.message, inputs })).await
        }
        Err(e) => error_page(&session, &e),
    }
}

/// One row of the trace table (SPEC R3).
#[derive(Serialize)]
struct Step {
    kind: &'static str,
    detail: String,
    duration_ms: u64,
    input_tokens: u64,
    output_tokens: u64,
    outcome: String,
}

/// Planner calls, tool steps, approval waits and waits for an MCP server's request for input,
/// with durations and tokens: the rows of the run's trace ([`steward_core::trace::steps`]).
fn steps(events: &[Event]) -> Vec<Step> {
    let row = |kind, detail: String, duration_ms, input_tokens, output_tokens, outcome: &str| Step {
        kind,
        detail,
        duration_ms,
        input_tokens,
        output_tokens,
        outcome: outcome.to_string(),
    };
    steward_core::trace::steps(events)
        .into_iter()
        .filter_map(|step| match step {
            TraceStep::StageCompleted { stage, round, duration_ms, usage, tool_calls } => Some(row(
                "planner call",
                format!("{stage}, round {round}, {tool_calls} tool call(s)"),
                duration_ms,
                usage.input_tokens,
                usage.output_tokens,
                "completed",
            )),
            TraceStep::StageFailed { stage, round, duration_ms, class, .. } => Some(row(
                "planner call",
                format!("{stage}, round {round}"),
                duration_ms,
                0,
                0,
                &format!("failed ({})", class.as_str()),
            )),
            TraceStep::ApprovalAnswered { tool, outcome, waited_ms: Some(ms), .. } => {
                Some(row("approval wait", tool, ms, 0, 0, outcome))
            }
            TraceStep::InputAnswered { tool, action, waited_ms: Some(ms), .. } => {
                Some(row("input wait", tool, ms, 0, 0, &action))
            }
            TraceStep::Tool { tool, duration_ms, output_chars: Some(chars), .. } => {
                Some(row("tool", format!("{tool}, {chars} chars of output"), duration_ms, 0, 0, "completed"))
            }
            TraceStep::Tool { tool, duration_ms, .. } => Some(row("tool", tool, duration_ms, 0, 0, "failed")),
            TraceStep::Repeated { tool, earlier_call_id, earlier_outcome, answered_from_record, .. } => {
                let outcome = if answered_from_record { "answered from the record" } else { "not run" };
                let detail = format!("{tool}, repeat of {earlier_call_id} ({earlier_outcome})");
                Some(row("repeated call", detail, 0, 0, 0, outcome))
            }
            _ => None,
        })
        .collect()
}

/// `GET /runs/{id}/trace`.
pub async fn trace_page(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
) -> Response {
    let (view, events, _) = match runs::trace(&state, &session.owner_id, &id).await {
        Ok(t) => t,
        Err(e) => return error_page(&session, &e),
    };
    let steps = steps(&events);
    let totals = context! {
        steps => steps.len(),
        duration_ms => steps.iter().map(|s| s.duration_ms).sum::<u64>(),
        input_tokens => steps.iter().map(|s| s.input_tokens).sum::<u64>(),
        output_tokens => steps.iter().map(|s| s.output_tokens).sum::<u64>(),
        error_class => view.record.as_ref().and_then(|r| r.error_class.map(|c| c.as_str())),
        stop_reason => view.record.as_ref().and_then(|r| r.stop_reason.map(|s| s.as_str())),
    };
    render(
        StatusCode::OK,
        "trace.html",
        context! { csrf => &session.csrf, owner => &session.owner_id, run => ser(&view), steps => ser(&steps), totals => totals },
    )
}

/// `GET /memory`.
pub async fn memory_page(State(state): State<AppState>, Extension(session): Extension<Session>) -> Response {
    match crate::memory::list(&state, &session.owner_id).await {
        Ok(facts) => render(
            StatusCode::OK,
            "memory.html",
            context! { csrf => &session.csrf, owner => &session.owner_id, facts => ser(&facts),
            max_facts => steward_core::memory::MAX_FACTS, max_chars => steward_core::memory::MAX_FACT_CHARS },
        ),
        Err(e) => error_page(&session, &e),
    }
}

/// The remember form.
#[derive(Deserialize)]
pub struct FactForm {
    csrf: String,
    text: String,
}

/// `POST /memory` (form).
pub async fn remember(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Form(form): Form<FactForm>,
) -> Response {
    let act = async { crate::memory::remember(&state, &session.owner_id, &form.text).await.map(|_| "/memory".into()) };
    form_post(&state, &session, &form.csrf, act).await
}

/// `POST /memory/{id}/forget` (form).
pub async fn forget(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let act = async { crate::memory::forget(&state, &session.owner_id, &id).await.map(|()| "/memory".into()) };
    form_post(&state, &session, &form.csrf, act).await
}

/// `GET /tools`.
pub async fn tools_page(State(state): State<AppState>, Extension(session): Extension<Session>) -> Response {
    let result = async {
        let workspace = runs::resolve_workspace(&state, None)?;
        let tools = state.launcher.tools(&workspace).await.map_err(ApiError::invalid)?;
        Ok::<_, ApiError>((workspace, tools))
    }
    .await;
    match result {
        Ok((workspace, tools)) => {
            let rows: Vec<_> = tools
                .iter()
                .map(|t| {
                    context! { name => &t.name, description => &t.description,
                    parameters => serde_json::to_string_pretty(&t.input_schema).unwrap_or_default() }
                })
                .collect();
            render(
                StatusCode::OK,
                "tools.html",
                context! { csrf => &session.csrf, owner => &session.owner_id,
                workspace => workspace.display().to_string(), tools => rows },
            )
        }
        Err(e) => error_page(&session, &e),
    }
}

/// `GET /grants`.
pub async fn grants_page(State(state): State<AppState>, Extension(session): Extension<Session>) -> Response {
    let grants = match state.runtime.store.grants(&session.owner_id).await {
        Ok(g) => g,
        Err(e) => return error_page(&session, &ApiError::storage(e)),
    };
    let now = chrono::Utc::now();
    let rows: Vec<_> = grants
        .iter()
        .map(|g| {
            let state = runs::grant_state(g, now);
            context! { id => &g.id, tool => &g.tool, scope => match g.scope { steward_store::GrantScope::Run => "run", steward_store::GrantScope::Workspace => "workspace" },
            expires_at => g.expires_at.to_rfc3339(), active => state == "active", state => state }
        })
        .collect();
    render(
        StatusCode::OK,
        "grants.html",
        context! { csrf => &session.csrf, owner => &session.owner_id, grants => rows },
    )
}

/// `POST /grants/{id}/revoke` (form).
pub async fn revoke_grant(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let act = async { runs::revoke_grant(&state, &session.owner_id, &id).await.map(|()| "/grants".into()) };
    form_post(&state, &session, &form.csrf, act).await
}

/// Query of the side-by-side view: the two runs to show.
#[derive(Deserialize)]
pub struct CompareQuery {
    a: Option<String>,
    b: Option<String>,
}

/// One column of the side-by-side view.
#[derive(Serialize)]
struct CompareColumn {
    id: String,
    label: String,
    status: String,
    ended: bool,
    last_seq: u64,
    calls: usize,
    refused: usize,
    tokens: u64,
    #[serde(rename = "final")]
    final_text: String,
}

/// Counts of one run's events for the side-by-side view (the same rules as `app.js`).
fn column(view: &runs::RunView, events: &[Event]) -> CompareColumn {
    let (_, calls, final_text) = replay(events);
    let refused = events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::ToolDenied { .. }
                    | EventKind::ToolRejected { .. }
                    | EventKind::ToolApprovalExpired { .. }
                    | EventKind::ToolCallRepeated { answered_from_record: false, .. }
            )
        })
        .count();
    let tokens = events
        .iter()
        .map(|e| match &e.kind {
            EventKind::StageCompleted { usage, .. } => usage.input_tokens + usage.output_tokens,
            _ => 0,
        })
        .sum();
    let label = match &view.record {
        Some(r) if r.planner == "classic" => "Classic planner".to_string(),
        Some(r) => format!("Model planner ({}/{})", r.provider, r.model),
        None => "Queued".to_string(),
    };
    CompareColumn {
        id: view.id.clone(),
        label,
        status: view.status.clone(),
        ended: !matches!(view.status.as_str(), "queued" | "running"),
        last_seq: events.last().map(|e| e.seq).unwrap_or(0),
        calls: calls.len(),
        refused,
        tokens,
        final_text,
    }
}

/// `GET /compare`: the form, or with `?a=RUN&b=RUN` the two runs side by side (SPEC A4).
pub async fn compare_page(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Query(query): Query<CompareQuery>,
) -> Response {
    let mut columns = Vec::new();
    let mut task = String::new();
    for id in [query.a, query.b].into_iter().flatten() {
        match runs::trace(&state, &session.owner_id, &id).await {
            Ok((view, events, _)) => {
                if let Some(r) = &view.record {
                    task = r.task.clone();
                }
                columns.push(column(&view, &events));
            }
            Err(e) => return error_page(&session, &e),
        }
    }
    let providers = if columns.is_empty() { state.launcher.providers().await } else { Vec::new() };
    let default_workspace = state.options.workspaces.first().map(|w| w.display().to_string()).unwrap_or_default();
    render(
        StatusCode::OK,
        "compare.html",
        context! { csrf => &session.csrf, owner => &session.owner_id, runs => ser(&columns), task => task,
        providers => ser(&providers), default_workspace => default_workspace },
    )
}

/// The side-by-side form.
#[derive(Deserialize)]
pub struct CompareForm {
    csrf: String,
    task: String,
    #[serde(default)]
    workspace: Option<String>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    model: Option<String>,
}

/// `POST /compare` (form): starts the task with the classic and with the model planner.
pub async fn compare(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Form(form): Form<CompareForm>,
) -> Response {
    let csrf = form.csrf.clone();
    let act = async {
        let classic = StartRun {
            task: form.task.clone(),
            workspace: non_empty(form.workspace.clone()),
            planner: Some("classic".into()),
            ..StartRun::default()
        };
        let model = StartRun {
            task: form.task,
            workspace: non_empty(form.workspace),
            planner: Some("model".into()),
            provider: non_empty(form.provider),
            model: non_empty(form.model),
            mode: None,
        };
        // Prepare the model run first: a missing provider is refused before anything starts.
        let b = runs::start(&state, &session.owner_id, model).await?;
        let a = runs::start(&state, &session.owner_id, classic).await?;
        Ok(format!("/compare?a={}&b={}", a.id, b.id))
    };
    form_post(&state, &session, &csrf, act).await
}

/// `GET /conversations`: the owner's conversations and a form to start one.
pub async fn conversations_page(State(state): State<AppState>, Extension(session): Extension<Session>) -> Response {
    let all = match crate::conversations::list(&state, &session.owner_id).await {
        Ok(all) => all,
        Err(e) => return error_page(&session, &e),
    };
    let rows: Vec<_> = all
        .iter()
        .map(|c| {
            context! { id => &c.id, first_message => c.turns.first().map(|t| t.message.clone()).unwrap_or_default(),
            turns => ser(&c.turns), ended_at => c.ended_at.map(|t| t.to_rfc3339()) }
        })
        .collect();
    let providers = state.launcher.providers().await;
    render(
        StatusCode::OK,
        "conversations.html",
        context! { csrf => &session.csrf, owner => &session.owner_id, conversations => rows,
        providers => ser(&providers), idle_minutes => state.options.conversation_idle.as_secs().div_ceil(60),
        default_workspace => state.options.workspaces.first().map(|w| w.display().to_string()).unwrap_or_default() },
    )
}

/// The new-conversation form.
#[derive(Deserialize)]
pub struct ConversationForm {
    csrf: String,
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

/// `POST /conversations` (form).
pub async fn create_conversation(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Form(form): Form<ConversationForm>,
) -> Response {
    let csrf = form.csrf.clone();
    let act = async {
        let new = crate::conversations::NewConversation {
            workspace: non_empty(form.workspace),
            planner: non_empty(form.planner),
            provider: non_empty(form.provider),
            model: non_empty(form.model),
            mode: non_empty(form.mode),
        };
        Ok(format!("/conversations/{}", crate::conversations::create(&state, &session.owner_id, new).await?.id))
    };
    form_post(&state, &session, &csrf, act).await
}

async fn conversation_view(
    state: &AppState,
    session: &Session,
    id: &str,
    draft: &str,
    error: Option<&ApiError>,
) -> Response {
    let view = async {
        let record = crate::conversations::owned(state, &session.owner_id, id).await?;
        crate::conversations::view(state, &record).await
    }
    .await;
    match view {
        Ok(view) => render(
            error.map(|e| e.status).unwrap_or(StatusCode::OK),
            "conversation.html",
            context! { csrf => &session.csrf, owner => &session.owner_id, c => ser(&view), draft => draft,
            error => error.map(|e| e.to_string()) },
        ),
        Err(e) => error_page(session, &e),
    }
}

/// `GET /conversations/{id}`.
pub async fn conversation_page(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
) -> Response {
    conversation_view(&state, &session, &id, "", None).await
}

/// The message form.
#[derive(Deserialize)]
pub struct MessageForm {
    csrf: String,
    text: String,
}

/// `POST /conversations/{id}/messages` (form): a refused message comes back in the text box
/// with the reason, so nothing typed is lost.
pub async fn send_message(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<MessageForm>,
) -> Response {
    if let Err(e) = check_csrf(&state, &session, &form.csrf) {
        return error_page(&session, &e);
    }
    match crate::conversations::send(&state, &session.owner_id, &id, &form.text).await {
        Ok(_) => Redirect::to(&format!("/conversations/{id}")).into_response(),
        Err(e) if e.class == "not_owner" || e.class == "not_found" => error_page(&session, &e),
        Err(e) => conversation_view(&state, &session, &id, &form.text, Some(&e)).await,
    }
}

/// `POST /conversations/{id}/end` (form).
pub async fn end_conversation(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let act = async {
        crate::conversations::end(&state, &session.owner_id, &id).await.map(|()| format!("/conversations/{id}"))
    };
    form_post(&state, &session, &form.csrf, act).await
}

/// A countdown as `MM:SS` (`29:59`); negative counts as `00:00`. The same format as
/// `static/app.js` and the terminal prompt.
fn minutes_seconds(seconds: i64) -> String {
    let seconds = seconds.max(0);
    format!("{:02}:{:02}", seconds / 60, seconds % 60)
}
