//! The integration tests of `steward-core`, in one test binary (one link instead of one per
//! file). Every file under `tests/` is a module here (checked by the `steward-cli` tests).

mod common;

mod approval_hidden_parts;
mod approvals;
mod chains_hooks;
mod classic;
mod command_tools;
mod fuzz_core;
mod lease_recovery;
mod lsp;
mod mcp_elicitation;
mod mcp_secret_arguments;
mod memory_context;
mod patches;
mod repeats;
mod replies;
mod roles;
mod shell_direct;
mod tools;
mod workspace_embeddings;
mod workspace_search;
