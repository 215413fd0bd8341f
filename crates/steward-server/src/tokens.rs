//! The Tokens page of `/mcp` bearer tokens: listing, the create and revoke forms, and a token
//! just made shown once. What a token is, how it is made, checked and revoked lives in
//! [`steward_core::mcp_tokens`] (re-exported here).

use std::collections::HashMap;

use axum::Extension;
use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use minijinja::context;
use serde::Deserialize;
pub use steward_core::mcp_tokens::*;
use steward_mcp::mcp_server::Scope;

use crate::error::ApiError;
use crate::pages::{error_page, form_post, render};
use crate::session::Session;
use crate::state::AppState;
pub use crate::state::JustMade;

impl From<TokenError> for ApiError {
    fn from(e: TokenError) -> Self {
        match e {
            TokenError::Invalid(m) => ApiError::invalid(m),
            TokenError::NotFound(m) => ApiError::not_found(m),
            TokenError::Storage(e) => ApiError::storage(e),
        }
    }
}

/// The URL of `/mcp` as a client on this request's side would reach it.
fn mcp_url(headers: &HeaderMap) -> String {
    format!("{}/mcp", base_url(headers))
}

/// `http://HOST` as a client on this request's side would reach this server.
fn base_url(headers: &HeaderMap) -> String {
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("127.0.0.1:7878");
    format!("http://{host}")
}

/// The Tokens page: the owner's tokens, the form, and a token just made (shown this once).
async fn page(state: &AppState, session: &Session, headers: &HeaderMap, new: Option<&NewToken>) -> Response {
    let tokens = match state.runtime.store.mcp_tokens(&session.owner_id).await {
        Ok(t) => t,
        Err(e) => return error_page(session, &ApiError::storage(e)),
    };
    let when = |t: &Option<steward_protocol::Timestamp>| t.map(|t| t.to_rfc3339()).unwrap_or_default();
    let rows: Vec<_> = tokens
        .iter()
        .rev()
        .map(|t| {
            context! { id => &t.id, name => &t.name, scopes => t.scopes.join(", "),
            created_at => t.created_at.to_rfc3339(), last_used_at => when(&t.last_used_at),
            state => token_state(t), active => t.revoked_at.is_none() }
        })
        .collect();
    let mut response = render(
        StatusCode::OK,
        "tokens.html",
        context! {
            csrf => &session.csrf, owner => &session.owner_id, tokens => rows, mcp_url => mcp_url(headers),
            max_name => MAX_NAME_CHARS, current_page => "tokens", new_token => new.map(|n| n.secret.expose()),
            new_id => new.map(|n| n.record.id.as_str()), new_scopes => new.map(|n| n.record.scopes.join(", ")),
            new_where => new.map(|n| where_sent(&n.record.scopes, &base_url(headers))),
        },
    );
    // A page that shows a secret is not kept by the browser or a proxy.
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn lock(m: &JustMade) -> std::sync::MutexGuard<'_, HashMap<String, (NewToken, std::time::Instant)>> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How long a token just made waits to be shown.
const SHOW_WITHIN: std::time::Duration = std::time::Duration::from_secs(60);

/// `GET /tokens`: shows a token just made by this owner, once.
pub async fn tokens_page(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    headers: HeaderMap,
) -> Response {
    let new = lock(&state.tokens_just_made)
        .remove(&session.owner_id)
        .filter(|(_, at)| at.elapsed() < SHOW_WITHIN)
        .map(|(new, _)| new);
    page(&state, &session, &headers, new.as_ref()).await
}

/// The create form: a name and one checkbox per scope.
#[derive(Deserialize)]
pub struct CreateForm {
    csrf: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    scope_read: Option<String>,
    #[serde(default)]
    scope_submit: Option<String>,
    #[serde(default)]
    scope_hub: Option<String>,
}

/// `POST /tokens` (form): makes a token and redirects to the Tokens page, which shows it this
/// once (the secret is in no URL; a reload shows it no more and makes no second token).
pub async fn create_token(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Form(form): Form<CreateForm>,
) -> Response {
    let mut scopes = Vec::new();
    if form.scope_read.is_some() {
        scopes.push(Scope::Read);
    }
    if form.scope_submit.is_some() {
        scopes.push(Scope::Submit);
    }
    if form.scope_hub.is_some() {
        scopes.push(Scope::Hub);
    }
    let act = async {
        let new =
            create(state.runtime.store.as_ref(), state.runtime.clock.as_ref(), &session.owner_id, &form.name, &scopes)
                .await?;
        lock(&state.tokens_just_made).insert(session.owner_id.clone(), (new, std::time::Instant::now()));
        Ok("/tokens".to_string())
    };
    form_post(&state, &session, &form.csrf, act).await
}

/// A form carrying only the CSRF token.
#[derive(Deserialize)]
pub struct RevokeForm {
    csrf: String,
}

/// `POST /tokens/{id}/revoke` (form).
pub async fn revoke_token(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<RevokeForm>,
) -> Response {
    let act = async {
        revoke(state.runtime.store.as_ref(), state.runtime.clock.as_ref(), &session.owner_id, &id)
            .await
            .map(|_| "/tokens".into())
            .map_err(ApiError::from)
    };
    form_post(&state, &session, &form.csrf, act).await
}
