//! The integration tests of `steward-store`, in one test binary (one link instead of one per
//! file). Every file under `tests/` is a module here (checked by the `steward-cli` tests).

#[macro_use]
mod common;

mod audit_chain;
mod durability;
mod journal;
mod ledger;
mod mcp_tokens;
mod nodes;
mod store;
