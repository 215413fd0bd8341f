//! The OpenAPI 3.1 document of the JSON API (`/api/…`), generated from the handlers'
//! `#[utoipa::path]` annotations and the request and response types. It is served at
//! `GET /api/openapi.json` and committed as `docs/openapi.json`; a test keeps the two equal.
//!
//! Records of other crates (runs, events, approvals, tools, facts) are described here by
//! schema-only mirrors (`…Doc`, named as the record in the document); a test checks each
//! mirror against the record's real JSON.

use axum::Json;
use chrono::{DateTime, Utc};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

use crate::api;
use crate::session::OWNER_COOKIE;

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
    paths(
        api::list_runs,
        api::start_run,
        api::get_run,
        api::cancel_run,
        api::run_events,
        api::decide,
        api::list_grants,
        api::revoke_grant,
        api::list_facts,
        api::remember,
        api::fact_events,
        api::forget,
        api::providers,
        api::tools,
        api::list_conversations,
        api::create_conversation,
        api::get_conversation,
        api::send_message,
        api::end_conversation,
        api::conversation_events,
        openapi_json,
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

/// The document, as served and committed.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.merge(crate::ledger::LedgerApi::openapi());
    doc
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

/// Schema of `steward_store::RunRecord`: one run as persisted.
#[derive(ToSchema)]
#[schema(as = RunRecord)]
pub struct RunRecordDoc {
    /// `run_…`.
    pub id: String,
    /// Owner id (`local:<user>` for the CLI).
    pub owner_id: String,
    /// The task text, redacted.
    pub task: String,
    /// `classic` or `model`.
    pub planner: String,
    /// Provider name, empty for the classic planner.
    pub provider: String,
    /// Model id, empty for the classic planner.
    pub model: String,
    /// Canonical workspace path.
    pub workspace: String,
    /// Current status.
    #[schema(schema_with = run_status_schema)]
    pub status: String,
    /// Why it stopped, once it has.
    #[schema(schema_with = stop_reason_schema, required = true)]
    pub stop_reason: Option<String>,
    /// The final answer, redacted.
    #[schema(required = true)]
    pub final_text: Option<String>,
    /// Error class of a failed run (`provider_unreachable`, `timeout`, …).
    #[schema(required = true)]
    pub error_class: Option<String>,
    /// Redacted error message of a failed run.
    #[schema(required = true)]
    pub error: Option<String>,
    /// When it started (UTC).
    pub created_at: DateTime<Utc>,
    /// When it ended.
    #[schema(required = true)]
    pub finished_at: Option<DateTime<Utc>>,
    /// Planner rounds so far.
    pub rounds: u32,
    /// Tool calls proposed so far.
    pub tool_calls: u32,
    /// Input tokens used so far.
    pub input_tokens: u64,
    /// Output tokens used so far.
    pub output_tokens: u64,
    /// Id of the process that executes it.
    pub pid: u32,
}

fn run_status_schema() -> utoipa::openapi::Object {
    string_enum(&["running", "completed", "failed", "cancelled", "interrupted"], "The stored status.")
}

fn stop_reason_schema() -> utoipa::openapi::Object {
    let mut schema = string_enum(
        &["answered", "max_rounds", "max_tool_calls", "timeout", "stuck", "cancelled", "failed"],
        "Why it stopped, once it has.",
    );
    schema.schema_type = utoipa::openapi::schema::SchemaType::from_iter([
        utoipa::openapi::schema::Type::String,
        utoipa::openapi::schema::Type::Null,
    ]);
    if let Some(values) = schema.enum_values.as_mut() {
        values.push(serde_json::Value::Null);
    }
    schema
}

/// Schema of `steward_protocol::Event`: one event of a run.
///
/// Besides these fields each event carries the fields of its kind: `run_started` has `task`,
/// `planner`, `provider`, `model` and `workspace`; `stage_chunk` has `stage` and `text`;
/// `tool_approval_required` has `approval_id`, `call_id`, `tool`, `arguments`, `preview` and
/// `expires_at`; `mcp_elicitation_requested` (an MCP server asks the owner for input during a
/// call) has `elicitation_id`, `call_id`, `tool`, `server`, `message`, `fields` and
/// `expires_at`, and `mcp_elicitation_answered` has `elicitation_id`, `call_id`, `action`
/// (`accept`, `decline` or `cancel`), `decided_by` and `reason`; `run_completed` has `final`,
/// `stop_reason`, `usage` and `duration_ms`; and so on for `stage_started`,
/// `stage_completed`, `stage_failed`, `tool_requested`, `tool_denied`, `tool_approved`,
/// `tool_rejected`, `tool_approval_expired`, `tool_started`, `tool_completed`, `tool_failed`,
/// `tool_call_repeated` (a repeat that was not run: `earlier_call_id`, `earlier_outcome`,
/// `rule`, `answered_from_record`, `repeats`, `message`), `patch_proposed`, `patch_applied`,
/// `run_failed` and `run_cancelled`.
#[derive(ToSchema)]
#[schema(as = Event)]
pub struct EventDoc {
    /// The event name (`run_started`, `stage_chunk`, `tool_requested`, `run_completed`, …).
    pub event: String,
    /// The run.
    pub run_id: String,
    /// 1-based sequence number within the run; strictly increasing.
    pub seq: u64,
    /// When it happened (UTC).
    pub at: DateTime<Utc>,
}

/// Schema of `steward_protocol::ApprovalRequest`: a request for the owner's decision on one
/// tool call.
#[derive(ToSchema)]
#[schema(as = ApprovalRequest)]
pub struct ApprovalRequestDoc {
    /// `apr_…`.
    pub id: String,
    /// The run the call belongs to.
    pub run_id: String,
    /// Only this owner may decide.
    pub owner_id: String,
    /// The tool call awaiting a decision.
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// Arguments, redacted.
    #[schema(value_type = Object)]
    pub arguments: serde_json::Value,
    /// Why the gate asks.
    pub reason: String,
    /// The deciding rule.
    pub rule: String,
    /// Risk score in `[0, 1]`.
    pub risk: f64,
    /// A preview of the effect (for example a diff), redacted; empty when none.
    pub preview: String,
    /// When the request was made.
    pub created_at: DateTime<Utc>,
    /// After this instant the request can no longer be approved.
    pub expires_at: DateTime<Utc>,
    /// Current status.
    #[schema(schema_with = approval_status_schema)]
    pub status: String,
}

fn approval_status_schema() -> utoipa::openapi::Object {
    string_enum(&["pending", "approved", "denied", "expired"], "Current status.")
}

/// Schema of `steward_protocol::ToolSpec`: a tool a run is offered.
#[derive(ToSchema)]
#[schema(as = ToolSpec)]
pub struct ToolSpecDoc {
    /// Registry name, e.g. `read`.
    pub name: String,
    /// One or two sentences for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    #[schema(value_type = Object)]
    pub input_schema: serde_json::Value,
    /// Risk level; decides the default policy (reads allow, writes ask).
    #[schema(schema_with = risk_schema)]
    pub risk: String,
    /// True when the tool changes files or state.
    pub writes: bool,
    /// Names of arguments that are workspace paths (absent when none).
    #[schema(required = false)]
    pub path_inputs: Vec<String>,
    /// True when the tool's output may carry text from outside the user's control (absent when
    /// false).
    #[schema(required = false)]
    pub untrusted_output: bool,
}

/// A provider as the start page shows it.
#[derive(ToSchema)]
#[schema(as = ProviderStatus)]
pub struct ProviderStatusDoc {
    /// Provider name.
    pub name: String,
    /// True when it answered its model list.
    pub reachable: bool,
    /// Models it offers (empty when unreachable).
    pub models: Vec<String>,
    /// Why it is unreachable (redacted), empty otherwise.
    pub error: String,
}

fn risk_schema() -> utoipa::openapi::Object {
    string_enum(&["safe", "low", "medium", "high", "dangerous"], "Risk level.")
}

/// Schema of `steward_store::FactRecord`: a fact the owner asked to remember.
#[derive(ToSchema)]
#[schema(as = FactRecord)]
pub struct FactRecordDoc {
    /// `fct_…`.
    pub id: String,
    /// Whose fact it is.
    pub owner_id: String,
    /// The fact, redacted.
    pub text: String,
    /// When it was remembered (UTC); facts are listed in this order.
    pub created_at: DateTime<Utc>,
}
