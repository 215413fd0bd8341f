//! Secret handling shared by Steward's control layer and its model providers (SPEC S1–S3).
//!
//! - [`is_secret_path`]: the one shared secret-path predicate (S1), and
//!   [`secret_file_values`], the contents of a workspace's secret files as known values.
//! - [`name_looks_secret`]: which variable, field and header names hold secrets.
//! - [`scan_value`]: the scanner that says where secrets are in a JSON value (S2).
//! - [`Redactor`]: the redactor applied at every boundary that leaves the process or reaches a
//!   model (S3, case B13); [`warm_up`] builds its keyword automaton ahead of the first use.
//!
//! Everything here is synchronous and has no side effects; only [`secret_file_values`] reads
//! the filesystem.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod gate;
mod names;
mod patterns;
mod redact;
mod scan;
mod secrets;

pub use gate::warm_up;
pub use names::name_looks_secret;
pub use patterns::REDACTED;
pub use redact::Redactor;
pub use scan::{Finding, scan_value};
pub use secrets::{is_secret_path, secret_file_values};
