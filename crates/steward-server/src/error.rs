//! Errors of the API: an HTTP status, a short class and a sentence for the user.
//!
//! Every JSON error body has the shape `{"error": {"class": "...", "message": "..."}}`
//! ([`ErrorBody`]). Classes: `not_owner` (403), `csrf` (403), `not_found` (404), `invalid`
//! (400; 413 for a body that is too large, 415 for one that is not JSON), `expired` and
//! `not_pending` (409), `busy` (409 when a conversation's task is still running, 429 when a
//! limit is reached), `ended` (409: the conversation has ended), `storage` and `internal` (500),
//! `unauthorized` (401: a bearer token sent to a route of the browser session; on the work
//! ledger's routes, a missing, unknown or revoked bearer token); the work ledger adds
//! `forbidden` (403: a token without the scope, or a token where only the owner may act) and
//! `conflict` (409: the request changed or ended).

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// Every class an error body can carry (see the module docs).
pub const CLASSES: [&str; 13] = [
    "not_owner",
    "csrf",
    "not_found",
    "invalid",
    "expired",
    "not_pending",
    "busy",
    "ended",
    "storage",
    "internal",
    "unauthorized",
    "forbidden",
    "conflict",
];

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

    /// 409 with `class` (`expired`, `not_pending`, `busy`, `ended`).
    pub fn conflict(class: &'static str, message: impl Into<String>) -> Self {
        ApiError { status: StatusCode::CONFLICT, class, message: message.into() }
    }

    /// 500 `storage`.
    pub fn storage(e: impl std::fmt::Display) -> Self {
        ApiError { status: StatusCode::INTERNAL_SERVER_ERROR, class: "storage", message: format!("storage: {e}") }
    }

    /// A request the extractors refused (a body that is not JSON or does not fit, a bad query
    /// string or path): `invalid` with the extractor's status, except that a body of the wrong
    /// shape is 400 like every other invalid request rather than 422; a server-side extractor
    /// mistake is 500 `internal`.
    fn rejected(status: StatusCode, message: String) -> Self {
        let status = if status == StatusCode::UNPROCESSABLE_ENTITY { StatusCode::BAD_REQUEST } else { status };
        let class = if status.is_server_error() { "internal" } else { "invalid" };
        ApiError { status, class, message }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        ApiError::rejected(rejection.status(), rejection.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        ApiError::rejected(rejection.status(), rejection.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        ApiError::rejected(rejection.status(), rejection.body_text())
    }
}

/// The body of every error answer of the JSON API.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(examples(json!({"error": {"class": "not_found", "message": "no run `run_x`"}})))]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// The error of an [`ErrorBody`].
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Short snake_case class, stable for programs to branch on.
    #[schema(schema_with = class_schema)]
    pub class: &'static str,
    /// What happened, for a person.
    pub message: String,
}

fn class_schema() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(CLASSES))
        .description(Some("Short snake_case class, stable for programs to branch on."))
        .build()
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.class, self.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody { error: ErrorDetail { class: self.class, message: self.message } };
        (self.status, Json(body)).into_response()
    }
}
