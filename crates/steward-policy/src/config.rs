//! The `[policy]` configuration section (SPEC C1), as read from TOML.

use serde::{Deserialize, Serialize};
use steward_protocol::DecisionKind;

/// The `[policy]` table. Every field is optional; unknown fields are refused.
///
/// ```toml
/// [policy]
/// default = "ask"                      # optional; otherwise by risk level
/// allowed_actions = ["read", "git_*"]  # tool-name globs allowed without asking
/// blocked_actions = ["delete"]         # tool-name globs always denied
/// deny_path = ["secrets/", "**/*.sqlite"]  # gitignore-style, workspace-relative
/// max_tool_calls_per_run = 50
/// token_ttl_seconds = 1800             # lifetime of approval decisions and grants, s
/// approval_timeout_seconds = 1800      # how long an approval request stays open, s
///
/// [[policy.rule]]
/// name = "docs-edit"
/// tool = "edit"
/// path = ["docs/**"]
/// decision = "allow"
/// ```
#[derive(Deserialize, Serialize, Default, Clone, Debug, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Decision when no rule and no allow-list entry matches; `None` means by risk level
    /// (safe/low → allow, medium and above → ask).
    pub default: Option<DecisionKind>,
    /// Tool-name globs allowed without asking (after `blocked_actions` and rules).
    pub allowed_actions: Vec<String>,
    /// Tool-name globs that are always denied.
    pub blocked_actions: Vec<String>,
    /// Gitignore-style globs over workspace-relative paths that no tool may touch.
    pub deny_path: Vec<String>,
    /// Most tool calls one run may propose; `None` for the built-in default.
    pub max_tool_calls_per_run: Option<u32>,
    /// Lifetime of approval decisions and grants, in seconds.
    pub token_ttl_seconds: Option<u64>,
    /// How long an approval request waits for the owner, in seconds.
    pub approval_timeout_seconds: Option<u64>,
    /// `[[policy.rule]]` entries.
    #[serde(rename = "rule")]
    pub rules: Vec<RuleConfig>,
}

/// One `[[policy.rule]]`: a decision for calls of matching tools (and paths).
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// Rule name, reported as the deciding rule.
    pub name: String,
    /// Tool registry name or glob (`git_*`, `*`).
    pub tool: String,
    /// Globs over the workspace-relative paths of the call's path inputs (globset syntax,
    /// `/` only matched literally: `src/*.rs` is one level, `src/**` any depth). When given,
    /// the call must have at least one path input and every one must match some glob.
    #[serde(default)]
    pub path: Vec<String>,
    /// The decision.
    pub decision: DecisionKind,
}
