//! Errors of the API: an HTTP status, a short class and a sentence for the user.
//!
//! Every JSON error body has the shape `{"error": {"class": "...", "message": "..."}}`.
//! Classes: `not_owner` (403), `csrf` (403), `not_found` (404), `invalid` (400), `expired`
//! and `not_pending` (409), `busy` (429), `storage` and `internal` (500).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An API error.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Short snake_case class (see the module docs).
    pub class: &'static str,
    /// What happened, for a person; never holds a secret (messages are redacted at the source).
    pub message: String,
}

impl ApiError {
    /// 403 `not_owner`: the run or approval belongs to another owner (SPEC C7).
    pub fn not_owner(what: &str) -> Self {
        ApiError {
            status: StatusCode::FORBIDDEN,
            class: "not_owner",
            message: format!("{what} belongs to another owner"),
        }
    }

    /// 404 `not_found`.
    pub fn not_found(what: impl Into<String>) -> Self {
        ApiError { status: StatusCode::NOT_FOUND, class: "not_found", message: what.into() }
    }

    /// 400 `invalid`.
    pub fn invalid(message: impl Into<String>) -> Self {
        ApiError { status: StatusCode::BAD_REQUEST, class: "invalid", message: message.into() }
    }

    /// 403 `csrf`: a state-changing request without the session's CSRF token.
    pub fn csrf() -> Self {
        ApiError {
            status: StatusCode::FORBIDDEN,
            class: "csrf",
            message: "missing or wrong CSRF token: reload the page and try again".into(),
        }
    }

    /// 409 with `class` (`expired`, `not_pending`).
    pub fn conflict(class: &'static str, message: impl Into<String>) -> Self {
        ApiError { status: StatusCode::CONFLICT, class, message: message.into() }
    }

    /// 500 `storage`.
    pub fn storage(e: impl std::fmt::Display) -> Self {
        ApiError { status: StatusCode::INTERNAL_SERVER_ERROR, class: "storage", message: format!("storage: {e}") }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.class, self.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({"error": {"class": self.class, "message": self.message}}))).into_response()
    }
}
