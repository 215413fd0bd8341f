//! `[[tool]]` entries as written (SPEC T5; the format is in `steward-tools`'s `command` module) and
//! their checks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use steward_protocol::RiskLevel;

use super::Callable;
use super::{ArgItem, Compensate, EnvValue, InputConfig, Network};

/// One `[[tool]]` entry as written (see the module documentation for the format).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CommandToolConfig {
    /// Tool name offered to the model.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The argv template.
    pub command: Vec<ArgItem>,
    /// Working directory, workspace-relative (default: the workspace root).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Environment: explicit values, or `true` to pass an allowed variable through.
    #[serde(default)]
    pub env: BTreeMap<String, EnvValue>,
    /// Time limit per call in ms (default: `[limits] tool_timeout_ms`).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Risk level (default: see the module documentation).
    #[serde(default)]
    pub risk: Option<RiskLevel>,
    /// `false` (default): no network; `true`: all of it; a host list: those hosts only,
    /// through the egress proxy.
    #[serde(default)]
    pub network: Network,
    /// Let the command create Unix sockets (default false: the sandbox's seccomp filter
    /// refuses `socket(AF_UNIX, …)`).
    #[serde(default)]
    pub unix_sockets: bool,
    /// Globs of workspace paths the command may write.
    #[serde(default)]
    pub writes: Vec<String>,
    /// `always` (default) or `chain_only`.
    #[serde(default)]
    pub callable: Callable,
    /// `"none"` or an argv template that undoes the call, run by `steward rollback`.
    #[serde(default)]
    pub compensate: Option<Compensate>,
    /// `[[tool.input]]` entries.
    #[serde(default, rename = "input")]
    pub inputs: Vec<InputConfig>,
    /// Seconds an approval request for a call of this tool stays open, instead of
    /// `[policy] approval_timeout_seconds` (per-action expiry; at least 1). A
    /// `[[policy.rule]]` matching the call with a shorter one wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_ttl_seconds: Option<u64>,
}

/// A definition error: what is wrong and, when it concerns one input, its index (so the
/// configuration loader can name the line of that `[[tool.input]]`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool `{tool}`: {message}")]
pub struct DefinitionError {
    /// The tool's name as written.
    pub tool: String,
    /// Index of the offending `[[tool.input]]`, if one.
    pub input: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl CommandToolConfig {
    /// Checks the definition on its own: name syntax, non-empty description and command, a
    /// literal program name, placeholders naming declared inputs (each input used at most
    /// once per template, arrays only where they may expand), input names unique and
    /// well-formed, `items` only for arrays (scalar item types), `min_items`/`max_items` only
    /// for arrays and ordered, `pattern` a valid regex for string values, `enum` values of
    /// the input's type, `path` only for strings, `cwd` relative, `writes` valid globs,
    /// `timeout_ms` at least 1, `env` names valid and not `BASH_ENV`/`ENV`, `network` hosts valid.
    ///
    /// Errors: the first problem found, as a [`DefinitionError`].
    pub fn validate(&self) -> Result<(), DefinitionError> {
        let err = |input: Option<usize>, message: String| DefinitionError { tool: self.name.clone(), input, message };
        if !valid_name(&self.name) {
            return Err(err(None, "the name must be 1 to 64 letters, digits, `_` or `-`".into()));
        }
        if self.description.trim().is_empty() {
            return Err(err(None, "the description is empty".into()));
        }
        for (index, input) in self.inputs.iter().enumerate() {
            if self.inputs[..index].iter().any(|i| i.name == input.name) {
                return Err(err(Some(index), format!("input `{}` is declared twice", input.name)));
            }
            input.validate().map_err(|message| err(Some(index), format!("input `{}`: {message}", input.name)))?;
        }
        check_template("command", &self.command, &self.inputs).map_err(|m| err(None, m.to_string()))?;
        if let Some(Compensate::Command(argv)) = &self.compensate {
            check_template("compensate", argv, &self.inputs).map_err(|m| err(None, m.to_string()))?;
        }
        if let Some(cwd) = &self.cwd
            && (cwd.is_empty() || cwd.starts_with('/'))
        {
            return Err(err(None, format!("cwd `{cwd}` must be a workspace-relative directory")));
        }
        for glob in &self.writes {
            globset::Glob::new(glob).map_err(|e| err(None, format!("writes: bad glob `{glob}`: {}", e.kind())))?;
            super::writable_folder(&literal_prefix(glob)).map_err(|m| err(None, format!("writes `{glob}`: {m}")))?;
        }
        if self.timeout_ms == Some(0) {
            return Err(err(None, "timeout_ms must be at least 1".into()));
        }
        if self.approval_ttl_seconds == Some(0) {
            return Err(err(None, "approval_ttl_seconds must be at least 1".into()));
        }
        self.network.validate().map_err(|e| err(None, format!("network: {e}")))?;
        for name in self.env.keys() {
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(err(None, format!("env: `{name}` is not a variable name")));
            }
            if steward_sandbox::ENV_NEVER_PASSED.contains(&name.as_str()) {
                return Err(err(None, format!("env: `{name}` makes shells run a file and is never passed")));
            }
        }
        Ok(())
    }

    /// SHA-256 (lowercase hex) of the whole definition as Steward reads it: what a passed
    /// `steward tools test-compensation` is recorded for, and what a rollback record names,
    /// so a changed entry is never trusted on an old test nor undone with a changed command.
    pub fn definition_sha256(&self) -> String {
        use sha2::{Digest, Sha256};
        // Serialising plain data (strings, maps, numbers) cannot fail; the empty fallback
        // would only make the digest match nothing recorded.
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        hex::encode(Sha256::digest(&bytes))
    }

    /// The risk level: as configured, else `high` with `writes`, `medium` with network,
    /// else `low`.
    pub fn risk_level(&self) -> RiskLevel {
        self.risk.unwrap_or(if !self.writes.is_empty() {
            RiskLevel::High
        } else if self.network.enabled() {
            RiskLevel::Medium
        } else {
            RiskLevel::Low
        })
    }
}

/// `^[a-zA-Z0-9_-]{1,64}$`
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// What is wrong with an argv template (`command` or `compensate`, named by `field`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum TemplateError {
    /// The template has no items.
    #[error("{field} is empty")]
    Empty { field: &'static str },
    /// The first item is a placeholder.
    #[error("{field}: the program (first item) must be a literal")]
    ProgramNotLiteral { field: &'static str },
    /// The first item is an empty string.
    #[error("{field}: the program is empty")]
    EmptyProgram { field: &'static str },
    /// A placeholder names no `[[tool.input]]`.
    #[error("{field}: placeholder `{input}` names no declared input")]
    UnknownInput { field: &'static str, input: String },
}

fn check_template(field: &'static str, argv: &[ArgItem], inputs: &[InputConfig]) -> Result<(), TemplateError> {
    match argv.first() {
        None => return Err(TemplateError::Empty { field }),
        Some(ArgItem::Input { .. }) => return Err(TemplateError::ProgramNotLiteral { field }),
        Some(ArgItem::Literal(program)) if program.is_empty() => return Err(TemplateError::EmptyProgram { field }),
        Some(ArgItem::Literal(_)) => {}
    }
    for item in argv {
        if let ArgItem::Input { input } = item
            && !inputs.iter().any(|i| &i.name == input)
        {
            return Err(TemplateError::UnknownInput { field, input: input.clone() });
        }
    }
    Ok(())
}

/// The part of a glob before its first component holding a glob character, `/`-joined.
pub fn literal_prefix(glob: &str) -> String {
    glob.split('/')
        .take_while(|part| !part.contains(['*', '?', '[', '{', '\\']))
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("/")
}
