//! The session layer (SPEC C7): every browser request gets its owner from the signed cookie
//! of [`crate::session`] (or a fresh one), and state-changing requests are checked for their
//! origin and CSRF token before a handler sees them.

use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum_extra::extract::cookie::SignedCookieJar;

use crate::error::{ApiError, ErrorClass};
use crate::pages::error_page;
use crate::session::{CSRF_HEADER, OWNER_COOKIE, Session, Sessions, same_origin, valid_owner_id};
use crate::state::AppState;

/// Middleware: finds or creates the request's owner, checks the origin and CSRF token of
/// state-changing requests, and sets the cookie of a new owner on the response.
///
/// A request with `Authorization: Bearer …` is refused with 401 `unauthorized` (bearer
/// tokens are for `/mcp` and the ledger's routes, answered before this layer), never served
/// as an anonymous browser.
///
/// A state-changing request (not GET/HEAD/OPTIONS) is refused with `csrf` (403) when it has an
/// `Origin` header naming another host, or when it carries neither a valid `X-CSRF-Token`
/// header nor is a form post (forms are checked by their handlers, field `csrf`).
pub async fn owner_layer(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    if has_bearer(request.headers()) {
        return bearer_refused();
    }
    let sessions = &state.sessions;
    let jar = sessions.jar(request.headers());
    let existing = jar.get(OWNER_COOKIE).map(|c| c.value().to_string()).filter(|v| valid_owner_id(v));
    let (owner_id, jar) = match existing {
        Some(owner) => (owner, None),
        None => {
            let owner = format!("web:{}", hex::encode(rand::random::<[u8; 8]>()));
            let jar = jar.add(Sessions::owner_cookie(owner.clone()));
            (owner, Some(jar))
        }
    };
    let csrf = sessions.csrf_token(&owner_id);
    let session = Session { owner_id, csrf };
    if !matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        let header_token = request.headers().get(CSRF_HEADER).and_then(|v| v.to_str().ok());
        // Form posts are checked by their handlers (field `csrf`); the JSON API has no form
        // handlers, so there a form body never stands in for the header.
        let is_form = !request.uri().path().starts_with("/api/")
            && request
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|ct| ct.starts_with("application/x-www-form-urlencoded"));
        // A browser that withholds the origin sends `Origin: null`; a form still has to carry
        // the session's token in its `csrf` field.
        let origin_ok = same_origin(request.headers()) || (is_form && origin_is_null(request.headers()));
        let ok = origin_ok
            && match header_token {
                Some(token) => sessions.csrf_ok(&session.owner_id, token),
                None => is_form,
            };
        if !ok {
            let error = if origin_ok {
                ApiError::csrf()
            } else {
                ApiError {
                    message: "the request came from another site (its Origin header names another host)".into(),
                    ..ApiError::csrf()
                }
            };
            let refused = if is_form { error_page(&session, &error) } else { error.into_response() };
            return with_cookie(jar, refused);
        }
    }
    request.extensions_mut().insert(session);
    let response = next.run(request).await;
    with_cookie(jar, response)
}

/// True when the request carries `Authorization: Bearer …` (scheme in any case).
fn has_bearer(headers: &axum::http::HeaderMap) -> bool {
    headers.get_all(header::AUTHORIZATION).iter().any(|v| {
        let v = v.as_bytes();
        v.len() >= 6 && v[..6].eq_ignore_ascii_case(b"bearer") && v.get(6).is_none_or(|c| *c == b' ')
    })
}

/// 401 `unauthorized` for a bearer token sent where only the browser session counts: it is
/// never taken for an anonymous browser (no owner cookie is made for it).
fn bearer_refused() -> Response {
    let error = ApiError {
        status: axum::http::StatusCode::UNAUTHORIZED,
        class: ErrorClass::Unauthorized,
        message: "bearer tokens are accepted only on /mcp and the work ledger's routes (/api/ledger/…); \
                  this endpoint is for the browser session (its owner cookie)"
            .into(),
    };
    let mut response = error.into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, axum::http::HeaderValue::from_static(r#"Bearer realm="steward""#));
    response
}

/// Adds a new owner's cookie to `response`, unless the handler set the owner cookie itself
/// (the login link does).
fn with_cookie(jar: Option<SignedCookieJar>, response: Response) -> Response {
    let sets_owner = response
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .any(|v| v.to_str().is_ok_and(|c| c.starts_with(&format!("{OWNER_COOKIE}="))));
    match jar {
        Some(jar) if !sets_owner => (jar, response).into_response(),
        _ => response,
    }
}

fn origin_is_null(headers: &axum::http::HeaderMap) -> bool {
    headers.get(header::ORIGIN).is_some_and(|v| v.as_bytes() == b"null")
}
