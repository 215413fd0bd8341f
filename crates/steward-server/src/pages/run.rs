//! The run page (its timeline, with approval forms in place, and the forms of requests for
//! input), the timeline fragment, rollback from the page, and the trace page.

use super::*;

/// A run's view, events and timeline, for its owner only (`not_owner`, `not_found`).
pub(super) async fn timeline_of(
    state: &AppState,
    owner_id: &str,
    id: &str,
) -> Result<(runs::RunView, Vec<Event>, timeline::Timeline), ApiError> {
    let (view, events, approvals) = runs::trace(state, owner_id, id).await?;
    let mut decisions = std::collections::HashMap::new();
    for a in approvals.iter().filter(|a| a.status != ApprovalStatus::Pending) {
        if let Some(d) = state.runtime.store.approval_decision(&a.id).await.map_err(ApiError::storage)? {
            decisions.insert(a.id.clone(), d);
        }
    }
    let now = state.now();
    let mut t = timeline::build(&timeline::Sources {
        view: &view,
        events: &events,
        approvals: &approvals,
        decisions: &decisions,
        now,
    });
    if t.ended && !t.files_changed.is_empty() {
        let records = state.runtime.store.rollbacks(id).await.map_err(ApiError::storage)?;
        t.rolled_back =
            !records.is_empty() && records.iter().all(|r| r.status == steward_store::RollbackStatus::Undone);
    }
    Ok((view, events, t))
}

/// `GET /runs/{id}/timeline`: the run's timeline alone (the part of the run page that
/// `app.js` refetches as the run goes on).
pub async fn timeline_fragment(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
) -> Response {
    match timeline_of(&state, &session.owner_id, &id).await {
        Ok((_, _, t)) => render(StatusCode::OK, "timeline.html", context! { csrf => &session.csrf, t => ser(&t) }),
        Err(e) => (e.status, e.to_string()).into_response(),
    }
}

/// The rollback form: the CSRF token and the box that confirms it (`confirm=yes`).
#[derive(Deserialize)]
pub struct RollbackForm {
    csrf: String,
    #[serde(default)]
    confirm: Option<String>,
}

/// `POST /runs/{id}/rollback` (form): undoes the files the run changed, newest first, as
/// `steward rollback RUN` does for the built-in file tools. A `[[tool]]`'s compensating
/// command is not run from the browser: the step stops the rollback with a message naming
/// `steward rollback`.
pub async fn rollback(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<RollbackForm>,
) -> Response {
    let act = async {
        if form.confirm.as_deref() != Some("yes") {
            return Err(ApiError::invalid("tick the box that says to undo the changes, then roll back"));
        }
        let view = runs::owned(&state, &session.owner_id, &id).await?;
        let Some(record) = view.record.filter(|_| !view.live) else {
            return Err(ApiError::conflict(
                ErrorClass::Conflict,
                "the run has not ended; cancel it before rolling it back",
            ));
        };
        let store = state.runtime.store.as_ref();
        let records = store.rollbacks(&record.id).await.map_err(ApiError::storage)?;
        let refusal = steward_core::CompensateError::Config(format!(
            "a [[tool]] compensation is undone with `steward rollback {}` in a terminal",
            record.id
        ));
        let done = steward_core::roll_back(
            store,
            state.runtime.clock.as_ref(),
            &record,
            records,
            None,
            &session.owner_id,
            &state.runtime.redactor,
            Err(&refusal),
            &mut |_: &steward_core::StepUndo| {},
        )
        .await
        .map_err(|e| ApiError::invalid(e.to_string()))?;
        if done.failed > 0 {
            return Err(ApiError::invalid(format!(
                "the rollback stopped at a step it could not undo (`steward rollback {} --list` shows each step)",
                record.id
            )));
        }
        Ok(format!("/runs/{id}"))
    };
    form_post(&state, &session, &form.csrf, act).await
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
    let now = state.now();
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
    let (view, events, t) = match timeline_of(state, &session.owner_id, id).await {
        Ok(t) => t,
        Err(e) => return error_page(session, &e),
    };
    let task = steward_protocol::reveal_invisible(&view.task).into_owned();
    let last_seq = events.last().map(|e| e.seq).unwrap_or(0);
    let elicitations = elicitation_views(state, id, retry.as_ref());
    let status = if retry.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    render(
        status,
        "run.html",
        context! {
            csrf => &session.csrf, owner => &session.owner_id, run => ser(&view), task_short => short(&task, 60),
            task => task, ended => t.ended, last_seq => last_seq, elicitations => elicitations,
            roles => ser(&steward_core::trace::roles(&events)), t => ser(&t), current_page => "start",
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
        Err(e) if e.class == ErrorClass::Invalid && is_run => {
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
            TraceStep::StageCompleted { stage, round, duration_ms, usage, tool_calls, constrained } => Some(row(
                "planner call",
                format!(
                    "{stage}, round {round}, {tool_calls} tool call(s){}",
                    if constrained { ", reply constrained" } else { "" }
                ),
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
            TraceStep::Context { error: Some(error), .. } => {
                Some(row("workspace context", error, 0, 0, 0, "unavailable"))
            }
            TraceStep::Context { passages, duration_ms, ranking, embedding_error, .. } => {
                let outcome = if passages.is_empty() { "none matched" } else { "given" };
                let mut detail = format!("{} ({ranking})", passages.join(", "));
                if let Some(why) = embedding_error {
                    detail.push_str(&format!("; ranked by keywords only: {why}"));
                }
                Some(row("workspace context", detail, duration_ms, 0, 0, outcome))
            }
            TraceStep::PromptFitted { round, summary } => {
                Some(row("prompt fitted", format!("round {round}: {summary}"), 0, 0, 0, "shrunk"))
            }
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
        context! {
            csrf => &session.csrf, owner => &session.owner_id, run => ser(&view), steps => ser(&steps), totals => totals,
            roles => ser(&steward_core::trace::roles(&events)),
        },
    )
}

/// `text` cut to `max` characters with `…`.
pub(super) fn short(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// A countdown as `MM:SS` (`29:59`); negative counts as `00:00`. The same format as
/// `static/app.js` and the terminal prompt.
pub(super) fn minutes_seconds(seconds: i64) -> String {
    let seconds = seconds.max(0);
    format!("{:02}:{:02}", seconds / 60, seconds % 60)
}
