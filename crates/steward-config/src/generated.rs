//! `[generated_tools]`: tools the agent writes for itself (SPEC G). Off by default.

use serde::{Deserialize, Serialize};

/// `[generated_tools]`: when the planner names a tool that does not exist, a generator model
/// writes it (JavaScript run in a confined interpreter with no ambient authority), and after
/// the checks, a probe call and the owner's approval it is registered and offered from the
/// next round on. Off by default: an unknown tool is then denied (`unknown_tool`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct GeneratedToolsConfig {
    /// Generate tools the planner names that do not exist.
    #[serde(default)]
    pub enabled: bool,
    /// The generator's provider: a preset or a `[providers.NAME]`; default: the planner's.
    #[serde(default)]
    pub provider: Option<String>,
    /// The generator's model; default: the provider's default model (or the planner's
    /// model when the planner's provider is used).
    #[serde(default)]
    pub model: Option<String>,
    /// Ask the run's owner to approve each generated tool, showing its full source
    /// (default true; the request expires after 10 minutes).
    #[serde(default = "yes")]
    pub require_approval: bool,
    /// The most bytes one generated tool's `sandbox_write` folder may hold (default 1 MiB);
    /// a write past it is refused and reported.
    #[serde(default = "quota_bytes")]
    pub write_quota_bytes: u64,
    /// The most files one generated tool's `sandbox_write` folder may hold (default 100).
    #[serde(default = "quota_files")]
    pub write_quota_files: u64,
}

fn yes() -> bool {
    true
}

fn quota_bytes() -> u64 {
    steward_generated::host::DEFAULT_QUOTA_BYTES
}

fn quota_files() -> u64 {
    steward_generated::host::DEFAULT_QUOTA_FILES
}

impl Default for GeneratedToolsConfig {
    fn default() -> Self {
        GeneratedToolsConfig {
            enabled: false,
            provider: None,
            model: None,
            require_approval: true,
            write_quota_bytes: quota_bytes(),
            write_quota_files: quota_files(),
        }
    }
}
