//! The integration tests of `steward-server`, in one test binary (one link instead of one per
//! file). Every file under `tests/` is a module here (checked by the `steward-cli` tests).

mod common;

mod api;
mod api_runs;
mod ledger_api;
mod mcp_http;
mod openapi;
mod pages;
