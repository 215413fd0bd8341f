//! The side-by-side view of two runs of one task.

use super::*;

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
    /// The run's timeline, approvals answerable in place.
    t: timeline::Timeline,
}

/// Counts of one run's events for the side-by-side view (the rules of
/// [`steward_core::compare`], which `steward compare` prints).
fn column(view: &runs::RunView, events: &[Event], t: timeline::Timeline, queued_label: &str) -> CompareColumn {
    let calls = events.iter().filter(|e| matches!(e.kind, EventKind::ToolRequested { .. })).count();
    let label = match &view.record {
        Some(r) => steward_core::compare::label(r),
        // `POST /compare` starts the classic run as `a` and the model run as `b`.
        None => queued_label.to_string(),
    };
    CompareColumn {
        id: view.id.clone(),
        label,
        status: view.status.clone(),
        ended: !matches!(view.status.as_str(), "queued" | "running"),
        last_seq: events.last().map(|e| e.seq).unwrap_or(0),
        calls,
        refused: steward_core::compare::refused(events),
        tokens: steward_core::compare::tokens(events),
        t,
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
    let sides = [(query.a, "Classic planner (queued)"), (query.b, "Model planner (queued)")];
    for (id, queued_label) in sides.into_iter().filter_map(|(id, label)| Some((id?, label))) {
        match super::run::timeline_of(&state, &session.owner_id, &id).await {
            Ok((view, events, t)) => {
                if let Some(r) = &view.record {
                    task = r.task.clone();
                }
                columns.push(column(&view, &events, t, queued_label));
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
        providers => ser(&providers), default_workspace => default_workspace, current_page => "compare",
        workspaces => state.options.workspaces.iter().map(|w| w.display().to_string()).collect::<Vec<_>>() },
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
