//! The integration tests of the `steward` binary, in one test binary (one link instead of one
//! per file). Every file under `tests/` is a module here; a test checks that none is left out.

mod common;

mod approvals_wait;
mod architecture;
mod b21;
mod browser;
mod ci_scripts;
mod claims;
mod cli;
mod compare;
mod compensate;
mod data_flow;
mod docs_examples;
mod egress;
mod generated_tools;
mod hub;
mod index;
mod instructions;
mod ledger;
mod link_order;
mod local_models;
mod mcp;
mod mcp_conformance;
mod mcp_http;
mod mcp_import;
mod mcp_json;
mod mcp_serve;
mod named_effects;
mod nodes;
mod peers;
mod policy_cli;
mod postgres;
mod provider_env;
mod repeats;
mod resume;
mod roles;
mod sandbox;
mod schemathesis;
mod secrets;
mod serve;
mod shell_git;
mod telemetry;
mod terminal_output;
mod text_formats;
mod tour;
