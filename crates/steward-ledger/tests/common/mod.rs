//! Shared test helpers.
pub mod fake_ledger;
