//! `[[hook]]` entries (SPEC T9; what they do is in `steward-core`'s `hooks` module).

use serde::{Deserialize, Serialize};

/// One `[[hook]]`.
///
/// ```toml
/// [[hook]]
/// name = "rustfmt"
/// events = ["create", "edit"]
/// path_pattern = "**/*.rs"            # glob over the workspace-relative path
/// commands = [["rustfmt", "--check", "{path}"]]   # argv arrays; `{path}` is the file
/// writes = ["target"]                 # folders its commands may write besides the file
/// timeout_ms = 30000
/// ```
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    /// Name, reported with the hook's output.
    pub name: String,
    /// Events that fire it: `create`, `edit`, `delete`, `move`, or custom names.
    pub events: Vec<String>,
    /// Glob over the workspace-relative path of the event (`**` crosses folders).
    #[serde(default = "any_path")]
    pub path_pattern: String,
    /// Commands to run in order, each an argv array; `{path}` is replaced by the path.
    pub commands: Vec<Vec<String>>,
    /// Time limit per command in ms (default 30,000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Workspace folders the commands may write besides the changed file itself (never the
    /// workspace root, `.git` or `.steward`).
    #[serde(default)]
    pub writes: Vec<String>,
}

fn any_path() -> String {
    "**".to_string()
}
