//! OpenAPI: the ledger's tag and its `bearer_token` security scheme (its operations come with
//! [`super::routes`]; their schemas are those of `steward_ledger::wire`).

use super::*;

/// The ledger's part of the OpenAPI document besides its operations: the tag and the
/// `bearer_token` security scheme.
#[derive(OpenApi)]
#[openapi(
    modifiers(&BearerSecurity),
    tags((name = "ledger", description = "The work ledger: requests, pinned approvals, one-time claims, results"))
)]
pub struct LedgerApi;

/// Adds the `bearer_token` security scheme.
struct BearerSecurity;

impl Modify for BearerSecurity {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let mut scheme = Http::new(HttpAuthScheme::Bearer);
        scheme.description = Some(
            "A token made with `steward mcp token create --scope …` or on the Tokens page (`stw_…`). The \
             `submit` scope files work requests, `read` reads them, `hub` lists candidates, claims and reports \
             results. A token never approves or revokes."
                .into(),
        );
        components.add_security_scheme("bearer_token", SecurityScheme::Http(scheme));
    }
}
