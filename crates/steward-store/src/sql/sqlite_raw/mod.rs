//! Raw SQLite: the crate's only calls of SQLite's C API (`libsqlite3-sys`, the library sqlx
//! links), on a connection sqlx hands over or on the writer's own ([`OwnConnection`]). Through
//! sqlx each row is copied out and each step is a hand-over to its worker thread; the audit
//! check reads columns in place, many rows are inserted with one prepared statement, and a
//! batch of inserts runs in one call.
//!
//! Every `unsafe` block here says why it is sound (`SAFETY:`); nothing outside this module
//! may use `unsafe` (the crate denies it).

mod audit;
mod batch;
mod insert;
mod own;
mod statement;

pub use audit::check_audit_rows;
pub use batch::{apply_inserts, apply_own, inserts_only};
pub use insert::insert_rows;
pub use own::OwnConnection;
