//! The remembered facts of `/api/memory`.

use super::*;

/// Lists the caller's remembered facts, oldest first.
#[utoipa::path(
    get,
    path = "/api/memory",
    tag = "memory",
    operation_id = "list_facts",
    security((), ("owner_cookie" = [])),
    responses(
        (status = 200, description = "The caller's facts", body = FactList),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn list_facts(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
) -> Result<Json<FactList>, ApiError> {
    let facts = crate::memory::list(&state, &session.owner_id).await?;
    Ok(Json(FactList { facts }))
}

/// Body of `POST /api/memory`.
#[derive(Deserialize, ToSchema)]
pub struct FactBody {
    /// The fact (not blank, at most 300 characters; secrets are redacted).
    #[schema(min_length = 1)]
    text: String,
}

/// Remembers a fact for the caller; it is shown to the model of every run of the caller.
#[utoipa::path(
    post,
    path = "/api/memory",
    tag = "memory",
    operation_id = "remember_fact",
    request_body = FactBody,
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 201, description = "Remembered", body = FactRecord),
        (status = 400, body = ErrorBody, description = "`invalid`: an empty, too long or duplicate fact, too many \
            facts, or a body that does not fit"),
        (status = 403, description = "`csrf`: a missing or wrong CSRF token", body = ErrorBody),
        (status = 413, description = "`invalid`: the body is too large", body = ErrorBody),
        (status = 415, description = "`invalid`: the body is not `application/json`", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn remember(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiJson(body): ApiJson<FactBody>,
) -> Result<Response, ApiError> {
    let fact = crate::memory::remember(&state, &session.owner_id, &body.text).await?;
    Ok((StatusCode::CREATED, Json(fact)).into_response())
}

/// Forgets one of the caller's facts.
#[utoipa::path(
    delete,
    path = "/api/memory/{id}",
    tag = "memory",
    operation_id = "forget_fact",
    params(("id" = String, Path, description = "Fact id (`fct_…`)")),
    security(("owner_cookie" = [], "csrf_token" = [])),
    responses(
        (status = 200, description = "Forgotten: `{\"status\": \"forgotten\"}`", body = StatusReply),
        (status = 403, description = "`csrf`: a missing or wrong CSRF token", body = ErrorBody),
        (status = 404, description = "`not_found`: the caller has no such fact", body = ErrorBody),
        (status = 500, description = "`storage`", body = ErrorBody),
    )
)]
pub async fn forget(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<StatusReply>, ApiError> {
    crate::memory::forget(&state, &session.owner_id, &id).await?;
    Ok(Json(StatusReply { status: "forgotten" }))
}

/// Streams the caller's remembered facts as Server-Sent Events.
///
/// Each `facts` event carries the whole list as `{"facts": [...]}` (as `GET /api/memory`),
/// first at once and then after every change.
#[utoipa::path(
    get,
    path = "/api/memory/events",
    tag = "memory",
    security((), ("owner_cookie" = [])),
    responses(
        (status = 200, description = "The event stream", content_type = "text/event-stream", body = String),
        (status = 429, description = "`busy`: too many event streams are open", body = ErrorBody),
    )
)]
pub async fn fact_events(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let slot = sse::open_stream(&state)?;
    let owner = session.owner_id;
    let rx = state.facts_changed.subscribe();
    let stream =
        futures::stream::unfold((state, owner, rx, true, slot), |(state, owner, mut rx, first, slot)| async move {
            if !first {
                loop {
                    match rx.recv().await {
                        Ok(changed) if changed == owner => break,
                        Ok(_) => continue,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => break,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                    }
                }
            }
            let facts = crate::memory::list(&state, &owner).await.unwrap_or_default();
            let event = SseEvent::default().event("facts").data(json!({ "facts": facts }).to_string());
            Some((Ok(event), (state, owner, rx, false, slot)))
        });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
