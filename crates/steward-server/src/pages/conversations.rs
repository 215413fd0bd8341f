//! The conversation pages and their form posts.

use super::*;

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
        providers => ser(&providers), current_page => "conversations", idle_minutes => state.options.conversation_idle.as_secs().div_ceil(60),
        workspaces => state.options.workspaces.iter().map(|w| w.display().to_string()).collect::<Vec<_>>() },
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

/// Each turn of `view` with its run's timeline (the newest [`TIMELINE_TURNS`] turns; older
/// ones show their answer only).
async fn turns_with_timelines(
    state: &AppState,
    owner_id: &str,
    view: &crate::conversations::ConversationView,
) -> Vec<Value> {
    let skip = view.turns.len().saturating_sub(TIMELINE_TURNS);
    let mut turns = Vec::with_capacity(view.turns.len());
    for (i, turn) in view.turns.iter().enumerate() {
        let timeline = match turn.run_id.is_empty() || i < skip {
            true => None,
            false => super::run::timeline_of(state, owner_id, &turn.run_id).await.ok().map(|(_, _, t)| t),
        };
        let shown = |text: &str| steward_protocol::reveal_invisible(text).into_owned();
        turns.push(context! { key => format!("turn-{i}"), message => shown(&turn.message), run_id => &turn.run_id,
        status => &turn.status, reply => shown(&turn.reply), t => timeline.as_ref().map(ser) });
    }
    turns
}

/// Turns of a conversation shown with their whole timeline; older ones show their answer.
const TIMELINE_TURNS: usize = 20;

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
        Ok(view) => {
            let turns = turns_with_timelines(state, &session.owner_id, &view).await;
            render(
                error.map(|e| e.status).unwrap_or(StatusCode::OK),
                "conversation.html",
                context! { csrf => &session.csrf, owner => &session.owner_id, c => ser(&view), turns => turns,
                draft => draft, error => error.map(|e| e.to_string()), current_page => "conversations" },
            )
        }
        Err(e) => error_page(session, &e),
    }
}

/// `GET /conversations/{id}/turns`: the turns alone, refetched by `app.js` as the
/// conversation goes on.
pub async fn turns_fragment(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
) -> Response {
    let view = async {
        let record = crate::conversations::owned(&state, &session.owner_id, &id).await?;
        crate::conversations::view(&state, &record).await
    }
    .await;
    match view {
        Ok(view) => {
            let turns = turns_with_timelines(&state, &session.owner_id, &view).await;
            render(StatusCode::OK, "turns.html", context! { csrf => &session.csrf, turns => turns })
        }
        Err(e) => (e.status, e.to_string()).into_response(),
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
        Err(e) if e.class == ErrorClass::NotOwner || e.class == ErrorClass::NotFound => error_page(&session, &e),
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
