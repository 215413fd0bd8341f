//! The work ledger and its hub (SPEC §12, H1–H6).
//!
//! The ledger (inside `steward serve`) is the authority: it holds work requests and the
//! owner's approvals of them, each pinned to exactly what was approved. A hub (the local
//! execution owner) discovers approved candidates, claims one with a one-time authority,
//! journals its intent before launching, runs the job as an ordinary Steward run and reports
//! evidence under an attempt id. [`wire`] holds the JSON shapes both sides exchange over HTTP;
//! [`hub`] is the hub itself (strict client, poller, journal-first loop, restart rule).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod hub;
pub mod requests;
pub mod wire;
