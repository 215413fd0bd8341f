//! The conversations of `/api/conversations`.

use super::*;

/// A conversation in a list.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConversationSummary {
    /// `cnv_…`.
    pub id: String,
    /// Workspace of its runs.
    pub workspace: String,
    /// Number of turns.
    pub turns: usize,
    /// The first message, if any.
    pub first_message: String,
    /// True once it has ended.
    pub ended: bool,
    /// When it started (RFC 3339).
    pub created_at: String,
}

/// The caller's conversations.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConversationList {
    /// Newest first.
    pub conversations: Vec<ConversationSummary>,
}

/// Lists the caller's conversations, newest first.
#[utoipa::path(
    get,
    path = "/api/conversations",
    tag = "conversations",
    security((), ("owner_cookie" = [])),
    responses(
        (status = 200, description = "The caller's conversations", body = ConversationList),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn list_conversations(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
) -> Result<Json<ConversationList>, ApiError> {
    let all = conversations::list(&state, &session.owner_id).await?;
    Ok(Json(ConversationList {
        conversations: all
            .into_iter()
            .map(|c| ConversationSummary {
                first_message: c.turns.first().map(|t| t.message.clone()).unwrap_or_default(),
                turns: c.turns.len(),
                ended: c.ended_at.is_some(),
                created_at: c.created_at.to_rfc3339(),
                workspace: c.workspace,
                id: c.id,
            })
            .collect(),
    }))
}

/// Starts a conversation: one task at a time, the last 4 turns given as context, ended after
/// 15 minutes without a viewer.
#[utoipa::path(
    post,
    path = "/api/conversations",
    tag = "conversations",
    request_body = NewConversation,
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 201, description = "Started", body = ConversationView),
        (status = 400, body = ErrorBody, description = "`invalid`: a workspace this server does not serve, an \
            unknown mode, or a body that does not fit"),
        (status = 403, description = "`csrf`: a missing or wrong CSRF token", body = ErrorBody),
        (status = 413, description = "`invalid`: the body is too large", body = ErrorBody),
        (status = 415, description = "`invalid`: the body is not `application/json`", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn create_conversation(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiJson(body): ApiJson<serde_json::Value>,
) -> Result<Response, ApiError> {
    // Every field is optional, so insist on an object: serde would also read an array.
    if !body.is_object() {
        return Err(ApiError::invalid("the body must be a JSON object"));
    }
    let new: NewConversation =
        serde_json::from_value(body).map_err(|e| ApiError::invalid(format!("invalid body: {e}")))?;
    let record = conversations::create(&state, &session.owner_id, new).await?;
    let view = conversations::view(&state, &record).await?;
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

/// One of the caller's conversations with its turns.
#[utoipa::path(
    get,
    path = "/api/conversations/{id}",
    tag = "conversations",
    params(("id" = String, Path, description = "Conversation id (`cnv_…`)")),
    security((), ("owner_cookie" = [])),
    responses(
        (status = 200, description = "The conversation", body = ConversationView),
        (status = 403, description = "`not_owner`: another owner's conversation", body = ErrorBody),
        (status = 404, description = "`not_found`: no such conversation", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn get_conversation(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ConversationView>, ApiError> {
    let record = conversations::owned(&state, &session.owner_id, &id).await?;
    Ok(Json(conversations::view(&state, &record).await?))
}

/// Body of `POST /api/conversations/{id}/messages`.
#[derive(Deserialize, ToSchema)]
pub struct MessageBody {
    /// The message: a task, or a memory command ("remember that …", "forget fact N").
    #[schema(min_length = 1)]
    text: String,
}

/// Sends a message to one of the caller's conversations.
///
/// A memory command is answered at once (`reply`); anything else starts a run (`run_id`)
/// given the conversation's last 4 turns. Refused with `busy` while the previous task still
/// runs and with `ended` once the conversation has ended; nothing is queued.
#[utoipa::path(
    post,
    path = "/api/conversations/{id}/messages",
    tag = "conversations",
    params(("id" = String, Path, description = "Conversation id (`cnv_…`)")),
    request_body = MessageBody,
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 201, description = "Sent", body = Sent),
        (status = 400, body = ErrorBody, description = "`invalid`: an empty message, a run that could not be \
            prepared, or a body that does not fit"),
        (status = 403, description = "`not_owner` or `csrf`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such conversation", body = ErrorBody),
        (status = 409, description = "`busy`: its previous task still runs; `ended`: it has ended", body = ErrorBody),
        (status = 413, description = "`invalid`: the body is too large", body = ErrorBody),
        (status = 415, description = "`invalid`: the body is not `application/json`", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn send_message(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<MessageBody>,
) -> Result<Response, ApiError> {
    let sent = conversations::send(&state, &session.owner_id, &id, &body.text).await?;
    Ok((StatusCode::CREATED, Json(sent)).into_response())
}

/// Ends one of the caller's conversations now; its running task is cancelled.
#[utoipa::path(
    post,
    path = "/api/conversations/{id}/end",
    tag = "conversations",
    params(("id" = String, Path, description = "Conversation id (`cnv_…`)")),
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 200, description = "Ended", body = StatusReply),
        (status = 403, description = "`not_owner` or `csrf`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such conversation", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn end_conversation(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<StatusReply>, ApiError> {
    conversations::end(&state, &session.owner_id, &id).await?;
    Ok(Json(StatusReply { status: "ended" }))
}

/// Streams one of the caller's conversations as Server-Sent Events; an open stream counts as
/// a viewer (the conversation ends after 15 minutes without one).
///
/// Each `conversation` event carries the conversation as `GET /api/conversations/{id}` does,
/// first at once and then after every change.
#[utoipa::path(
    get,
    path = "/api/conversations/{id}/events",
    tag = "conversations",
    params(("id" = String, Path, description = "Conversation id (`cnv_…`)")),
    security((), ("owner_cookie" = [])),
    responses(
        (status = 200, description = "The event stream", content_type = "text/event-stream", body = String),
        (status = 403, description = "`not_owner`: another owner's conversation", body = ErrorBody),
        (status = 404, description = "`not_found`: no such conversation", body = ErrorBody),
        (status = 429, description = "`busy`: too many event streams are open", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn conversation_events(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiPath(id): ApiPath<String>,
) -> Result<Response, ApiError> {
    conversations::owned(&state, &session.owner_id, &id).await?;
    let slot = sse::open_stream(&state)?;
    let viewer = (conversations::join(&state, &id), slot);
    let changes = (state.conversations_changed.subscribe(), state.run_finished.subscribe());
    let stream = futures::stream::unfold(
        (state, id, changes, true, viewer),
        |(state, id, mut changes, first, viewer)| async move {
            use tokio::sync::broadcast::error::RecvError;
            // Wakes on a change of this conversation, or when a run of one of its turns ends.
            if !first {
                loop {
                    let (changed, run_ended) = tokio::select! {
                        c = changes.0.recv() => (Some(c), None),
                        r = changes.1.recv() => (None, Some(r)),
                    };
                    match (changed, run_ended) {
                        (Some(Ok(c)), _) if c == id => break,
                        (_, Some(Ok(run))) => {
                            let ours = matches!(state.runtime.store.conversation(&id).await, Ok(Some(c)) if c.turns.iter().any(|t| t.run_id == run));
                            if ours {
                                break;
                            }
                        }
                        (Some(Err(RecvError::Lagged(_))), _) | (_, Some(Err(RecvError::Lagged(_)))) => break,
                        (Some(Err(RecvError::Closed)), _) | (_, Some(Err(RecvError::Closed))) => return None,
                        _ => continue,
                    }
                }
            }
            let record = state.runtime.store.conversation(&id).await.ok().flatten()?;
            let view = conversations::view(&state, &record).await.ok()?;
            let event = SseEvent::default().event("conversation").data(serde_json::to_string(&view).ok()?);
            Some((Ok::<_, Infallible>(event), (state, id, changes, false, viewer)))
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response())
}
