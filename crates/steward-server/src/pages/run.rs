//! The run page (live stages, tool calls, approval and elicitation forms) and the trace page.

use super::*;

/// One stage's text as the run page shows it.
#[derive(Serialize, Default)]
pub(super) struct StageView {
    stage: String,
    text: String,
}

/// One tool call as the run page shows it.
#[derive(Serialize)]
pub(super) struct CallView {
    call_id: String,
    tool: String,
    arguments: String,
    decision: String,
    rule: String,
    detail: String,
}

/// Stages and tool calls replayed from a run's events (the same rules as `app.js`).
pub(super) fn replay(events: &[Event]) -> (Vec<StageView>, Vec<CallView>, String) {
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
                call_hash => steward_core::approval::call_hash(a),
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
            elicitations => elicitations, roles => ser(&steward_core::trace::roles(&events)),
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

/// A countdown as `MM:SS` (`29:59`); negative counts as `00:00`. The same format as
/// `static/app.js` and the terminal prompt.
fn minutes_seconds(seconds: i64) -> String {
    let seconds = seconds.max(0);
    format!("{:02}:{:02}", seconds / 60, seconds % 60)
}
