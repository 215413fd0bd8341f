//! Toolchains (SPEC T6): a named sequence of tools. Calling the chain (with the first tool's
//! arguments) enters chain mode, in which only the chain's next tool is offered, step by step;
//! a failing step ends the chain and says so. Tools marked `callable = "chain_only"` are
//! offered only inside their chain.

use serde::{Deserialize, Serialize};

/// One `[[tool_call_chain]]`.
///
/// ```toml
/// [[tool_call_chain]]
/// name = "format_and_test"
/// description = "Format the crate, then run its tests."
/// tools = ["cargo_fmt", "cargo_test"]
/// ```
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
