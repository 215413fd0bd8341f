//! The OpenAPI 3.1 document of the JSON API (`/api/…`), generated from the handlers'
//! `#[utoipa::path]` annotations and the request and response types themselves (records of
//! other crates derive their schemas behind those crates' `openapi` features). Every `/api`
//! route is registered by [`routes()`], which documents it as it routes it, so the document
//! names exactly the operations served. It is served at `GET /api/openapi.json` and committed
//! as `docs/openapi.json` (printed by `steward reference openapi`, written by `scripts/reference.sh`);
//! a test keeps the two equal.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api;
use crate::error::ApiError;
use crate::session::OWNER_COOKIE;
use crate::state::AppState;

/// The API's OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Steward API",
        version = env!("CARGO_PKG_VERSION"),
        description = "The JSON API of `steward serve`: start, watch and cancel runs, decide their approval \
            requests, manage remembered approvals and facts, list providers and tools.\n\n\
            Every request acts for the owner named by the signed `steward_owner` cookie; a request \
            without a valid one gets a new owner and the cookie with the response. POST and DELETE \
            requests also need the owner's CSRF token in `X-CSRF-Token` (the `csrf-token` meta tag \
            of any page) and, when they send `Origin`, one naming this server. Errors answer with \
            `{\"error\": {\"class\", \"message\"}}`.",
        license(name = "MIT OR Apache-2.0")
    ),
    modifiers(&Security),
    tags(
        (name = "runs", description = "Start, read, watch and cancel runs"),
        (name = "approvals", description = "Decide the approval requests of risky tool calls"),
        (name = "grants", description = "Remembered approvals"),
        (name = "memory", description = "Facts remembered for every run of the owner"),
        (name = "conversations", description = "Long-lived conversations: one task at a time, with the last turns as context"),
        (name = "tools", description = "Providers and tools a run can use"),
        (name = "meta", description = "This document"),
    )
)]
pub struct ApiDoc;

/// Every route of the JSON API (`/api/…`, the work ledger's included), each registered with
/// the `#[utoipa::path]` of its handler, and the document they make.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(api::list_runs, api::start_run))
        .routes(routes!(api::get_run))
        .routes(routes!(api::cancel_run))
        .routes(routes!(api::run_events))
        .routes(routes!(api::decide))
        .routes(routes!(api::list_grants))
        .routes(routes!(api::revoke_grant))
        .routes(routes!(api::list_facts, api::remember))
        .routes(routes!(api::fact_events))
        .routes(routes!(api::forget))
        .routes(routes!(api::list_conversations, api::create_conversation))
        .routes(routes!(api::get_conversation))
        .routes(routes!(api::send_message))
        .routes(routes!(api::end_conversation))
        .routes(routes!(api::conversation_events))
        .routes(routes!(api::providers))
        .routes(routes!(api::tools))
        .routes(routes!(openapi_json))
        .merge(crate::ledger::routes())
}

/// The document, as served.
pub fn document() -> utoipa::openapi::OpenApi {
    routes().into_openapi()
}

/// The path templates the document names (`/api/runs/{id}` …, axum's syntax too).
#[derive(Debug)]
struct DocumentedPaths(BTreeSet<String>);

/// `router` with a check in front of each of its routes: a request routed to an `/api/…` path
/// template the document does not name answers 404 (`not_found`) instead of reaching the
/// handler. So a JSON API route registered outside [`routes()`] — a hand-added
/// `.route("/api/…")`, undocumented — never serves; methods of documented paths are checked by
/// the router itself (405). Apply it after every route is added: routes added later are not
/// covered.
pub fn documented_api_only<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    let paths = Arc::new(DocumentedPaths(document().paths.paths.into_keys().collect()));
    router.route_layer(axum::middleware::from_fn_with_state(paths, refuse_undocumented))
}

/// The check of [`documented_api_only`]: the template the router matched
/// ([`MatchedPath`]) must be documented when it lies under `/api`.
async fn refuse_undocumented(State(paths): State<Arc<DocumentedPaths>>, request: Request, next: Next) -> Response {
    let template = request.extensions().get::<MatchedPath>().map(MatchedPath::as_str).unwrap_or_default();
    let api = template == "/api" || template.starts_with("/api/");
    if api && !paths.0.contains(template) {
        tracing::error!(%template, "an /api route is not in the OpenAPI document; register it in openapi::routes");
        return ApiError::not_found("no such API endpoint").into_response();
    }
    next.run(request).await
}

/// The document as committed in `docs/openapi.json`: pretty-printed JSON ending in a newline
/// (`steward reference openapi` prints it; `scripts/reference.sh` writes the file).
pub fn document_json() -> String {
    // Serialising a document of plain maps, strings and numbers cannot fail; should it ever,
    // the text says so and the test comparing the committed file fails.
    let mut text = serde_json::to_string_pretty(&document()).unwrap_or_else(|e| format!("unserialisable: {e}"));
    text.push('\n');
    text
}

/// This OpenAPI document.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "meta",
    operation_id = "get_openapi",
    security(()),
    responses((status = 200, description = "The OpenAPI 3.1 document of this API", body = Object))
)]
pub async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(document())
}

/// Adds the two security schemes: the owner cookie and the CSRF header.
struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "owner_cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                OWNER_COOKIE,
                "The signed owner cookie. Optional: a request without a valid one acts for a new \
                 owner, whose cookie comes with the response.",
            ))),
        );
        components.add_security_scheme(
            "csrf_token",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-CSRF-Token",
                "The owner's CSRF token (the `csrf-token` meta tag of any page), required on POST \
                 and DELETE; without it they answer 403 `csrf`.",
            ))),
        );
    }
}
