//! The OpenAPI 3.1 document of the JSON API (`/api/…`), generated from the handlers'
//! `#[utoipa::path]` annotations and the request and response types themselves (records of
//! other crates derive their schemas behind those crates' `openapi` features). Every `/api`
//! route is registered by [`routes()`], which documents it as it routes it, so the document
//! names exactly the operations served. It is served at `GET /api/openapi.json` and committed
//! as `docs/openapi.json` (printed by `steward reference openapi`, written by `scripts/reference.sh`);
//! a test keeps the two equal.

use axum::Json;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api;
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

/// A string schema allowing exactly `values`.
pub(crate) fn string_enum(values: &[&str], description: &str) -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(values.iter().copied()))
        .description(Some(description))
        .build()
}
