//! `[[tool_call_chain]]` entries (SPEC T6; how chains run is in `steward-core`'s `chains` module).

use serde::{Deserialize, Serialize};

/// One `[[tool_call_chain]]`.
///
/// ```toml
/// [[tool_call_chain]]
/// name = "format_and_test"
/// description = "Format the crate, then run its tests."
/// tools = ["cargo_fmt", "cargo_test"]
/// ```
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChainConfig {
    /// Name offered to the model (must not clash with a tool name).
    pub name: String,
    /// What the chain does, for the model.
    pub description: String,
    /// Tool names in order (at least one).
    pub tools: Vec<String>,
}
