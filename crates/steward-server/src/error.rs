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

/// The class of an API error: short, snake_case on the wire, stable for programs to branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, ToSchema)]
#[schema(as = ApiErrorClass)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// 403: the run, approval, conversation or work request belongs to another owner.
    NotOwner,
    /// 403: a state-changing request without the session's CSRF token, or with an `Origin`
    /// naming another site.
    Csrf,
    /// 404: no such thing (or no such route).
    NotFound,
    /// 400 (413 for a body that is too large, 415 for one that is not JSON, 421 for a host name
    /// the server does not answer to): the request is malformed or breaks a rule.
    Invalid,
    /// 409: the approval or request for input has expired.
    Expired,
    /// 409: the approval was already decided, or the run already ended.
    NotPending,
    /// 409: the conversation's task is still running; 429: a limit is reached.
    Busy,
    /// 409: the conversation has ended.
    Ended,
    /// 500: the store could not be read or written.
    Storage,
    /// 500: a mistake on the server's side.
    Internal,
    /// 401: a missing, unknown or revoked bearer token, or one sent to a route of the browser
    /// session.
    Unauthorized,
    /// 403: a token without the scope, or a token where only the owner may act.
    Forbidden,
    /// 409: the work request changed or ended.
    Conflict,
}

impl ErrorClass {
    /// Every class, in the order of the module docs.
    pub const ALL: [ErrorClass; 13] = [
        ErrorClass::NotOwner,
        ErrorClass::Csrf,
        ErrorClass::NotFound,
        ErrorClass::Invalid,
        ErrorClass::Expired,
        ErrorClass::NotPending,
        ErrorClass::Busy,
        ErrorClass::Ended,
        ErrorClass::Storage,
        ErrorClass::Internal,
        ErrorClass::Unauthorized,
        ErrorClass::Forbidden,
        ErrorClass::Conflict,
    ];

    /// The wire name (`not_owner`, `csrf`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::NotOwner => "not_owner",
            ErrorClass::Csrf => "csrf",
            ErrorClass::NotFound => "not_found",
            ErrorClass::Invalid => "invalid",
            ErrorClass::Expired => "expired",
            ErrorClass::NotPending => "not_pending",
            ErrorClass::Busy => "busy",
            ErrorClass::Ended => "ended",
            ErrorClass::Storage => "storage",
            ErrorClass::Internal => "internal",
            ErrorClass::Unauthorized => "unauthorized",
            ErrorClass::Forbidden => "forbidden",
            ErrorClass::Conflict => "conflict",
        }
    }
}

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An API error.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// The class (see the module docs).
    pub class: ErrorClass,
    /// What happened, for a person; never holds a secret (messages are redacted at the source).
    pub message: String,
}

impl ApiError {
    /// 403 `not_owner`: the run or approval belongs to another owner (SPEC C7).
    pub fn not_owner(what: &str) -> Self {
        ApiError {
            status: StatusCode::FORBIDDEN,
            class: ErrorClass::NotOwner,
            message: format!("{what} belongs to another owner"),
        }
    }

    /// 404 `not_found`.
    pub fn not_found(what: impl Into<String>) -> Self {
        ApiError { status: StatusCode::NOT_FOUND, class: ErrorClass::NotFound, message: what.into() }
    }

    /// 400 `invalid`.
    pub fn invalid(message: impl Into<String>) -> Self {
        ApiError { status: StatusCode::BAD_REQUEST, class: ErrorClass::Invalid, message: message.into() }
    }

    /// 403 `csrf`: a state-changing request without the session's CSRF token.
    pub fn csrf() -> Self {
        ApiError {
            status: StatusCode::FORBIDDEN,
            class: ErrorClass::Csrf,
            message: "missing or wrong CSRF token: reload the page and try again".into(),
        }
    }

    /// 409 with `class` (`expired`, `not_pending`, `busy`, `ended`, `conflict`).
    pub fn conflict(class: ErrorClass, message: impl Into<String>) -> Self {
        ApiError { status: StatusCode::CONFLICT, class, message: message.into() }
    }

    /// 500 `storage`.
    pub fn storage(e: impl std::fmt::Display) -> Self {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            class: ErrorClass::Storage,
            message: format!("storage: {e}"),
        }
    }

    /// A request the extractors refused (a body that is not JSON or does not fit, a bad query
    /// string or path): `invalid` with the extractor's status, except that a body of the wrong
    /// shape is 400 like every other invalid request rather than 422; a server-side extractor
    /// mistake is 500 `internal`.
    fn rejected(status: StatusCode, message: String) -> Self {
        let status = if status == StatusCode::UNPROCESSABLE_ENTITY { StatusCode::BAD_REQUEST } else { status };
        let class = if status.is_server_error() { ErrorClass::Internal } else { ErrorClass::Invalid };
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
    pub class: ErrorClass,
    /// What happened, for a person.
    pub message: String,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_are_the_serialised_names() {
        for class in ErrorClass::ALL {
            assert_eq!(serde_json::to_value(class).unwrap(), serde_json::json!(class.as_str()), "{class:?}");
        }
    }

    #[test]
    fn error_body_names_the_class() {
        let response = ApiError::conflict(ErrorClass::NotPending, "decided").into_response();
        assert_eq!(response.status(), StatusCode::CONFLICT);
        let body = ErrorBody { error: ErrorDetail { class: ErrorClass::NotPending, message: "decided".into() } };
        assert_eq!(
            serde_json::to_value(body).unwrap(),
            serde_json::json!({"error": {"class": "not_pending", "message": "decided"}})
        );
    }
}
