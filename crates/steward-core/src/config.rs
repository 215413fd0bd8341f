//! Layered TOML configuration (SPEC N).
//!
//! Files are read in this order, later ones overriding earlier ones key by key:
//! 1. `$XDG_CONFIG_HOME/steward/*.toml` (default `~/.config/steward/`), sorted by file name;
//! 2. the workspace's `.steward/*.toml`, sorted by file name.
//!
//! Every file shares one schema ([`RawConfig`], unknown keys refused) and is checked on its
//! own first, so an error names the file and line. The merged tables are then resolved once
//! into a [`Config`]; the rest of the program never reads TOML.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use steward_policy::PolicyConfig;
use steward_provider::ProviderConfig;

/// A configuration error naming the file and, where known, the line (1-based).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        message: String,
    },
    /// A file is not valid TOML or does not fit the schema.
    #[error("{path}:{line}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the offending key or value (0 when unknown).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The merged configuration is inconsistent (for example a bad policy glob).
    #[error("configuration: {0}")]
    Resolve(String),
}

/// Agent-loop limits (SPEC A1, A2). All optional in files; defaults in [`Limits::default`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    /// Rounds with tool calls before the run stops with `max_rounds` (default 5).
    pub max_rounds: Option<u32>,
    /// Tool calls per run before it stops with `max_tool_calls` (default 20).
    pub max_tool_calls_per_run: Option<u32>,
    /// Wall time of a run in ms before it stops with `timeout` (default 1,200,000 = 20 min).
    pub max_total_runtime_ms: Option<u64>,
    /// Characters of one tool output shown to the model (default 8,000).
    pub max_tool_output_chars: Option<usize>,
    /// Characters of assembled context before older tool results are compacted (default 120,000).
    pub max_context_chars: Option<usize>,
    /// Per-call subprocess timeout in ms (default 30,000).
    pub tool_timeout_ms: Option<u64>,
}

/// Defaults for `steward run` (the CLI flags override them).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawRun {
    /// `classic` or `model`.
    pub planner: Option<String>,
    /// Provider name: a preset or a `[providers.NAME]` entry. Setting it selects the model planner.
    pub provider: Option<String>,
    /// Model id.
    pub model: Option<String>,
}

/// Sandbox settings (SPEC C3).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawSandbox {
    /// Extra environment variable names subprocesses may receive.
    #[serde(default)]
    pub env_allow: Vec<String>,
}

/// One configuration file, as written. Every `.steward/*.toml` file uses this schema.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// `[run]`
    pub run: Option<RawRun>,
    /// `[providers.NAME]`
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `[policy]`
    pub policy: Option<PolicyConfig>,
    /// `[limits]`
    pub limits: Option<RawLimits>,
    /// `[sandbox]`
    pub sandbox: Option<RawSandbox>,
}

/// Resolved limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// See [`RawLimits::max_rounds`].
    pub max_rounds: u32,
    /// See [`RawLimits::max_tool_calls_per_run`].
    pub max_tool_calls_per_run: u32,
    /// See [`RawLimits::max_total_runtime_ms`].
    pub max_total_runtime_ms: u64,
    /// See [`RawLimits::max_tool_output_chars`].
    pub max_tool_output_chars: usize,
    /// See [`RawLimits::max_context_chars`].
    pub max_context_chars: usize,
    /// See [`RawLimits::tool_timeout_ms`].
    pub tool_timeout_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_rounds: 5,
            max_tool_calls_per_run: 20,
            max_total_runtime_ms: 20 * 60 * 1000,
            max_tool_output_chars: 8_000,
            max_context_chars: 120_000,
            tool_timeout_ms: 30_000,
        }
    }
}

/// The resolved configuration.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// `[run]` defaults.
    pub run: RawRun,
    /// Providers declared in files (presets are added by the caller when named).
    pub providers: BTreeMap<String, ProviderConfig>,
    /// The policy manifest.
    pub policy: PolicyConfig,
    /// Limits.
    pub limits: Limits,
    /// Sandbox settings.
    pub sandbox: RawSandbox,
    /// Instructions from the workspace's `AGENTS.md`, if present (at most 20,000 chars).
    pub instructions: Option<String>,
    /// Files that were read, in order.
    pub sources: Vec<PathBuf>,
}

impl Config {
    /// Loads `user_dir/*.toml` then `workspace/.steward/*.toml` and `workspace/AGENTS.md`.
    /// Missing directories are fine; unreadable or invalid files are errors.
    pub fn load(user_dir: Option<&Path>, workspace: &Path) -> Result<Config, ConfigError> {
        let mut files = Vec::new();
        if let Some(dir) = user_dir {
            files.extend(toml_files(dir)?);
        }
        files.extend(toml_files(&workspace.join(".steward"))?);
        let mut merged = toml::Table::new();
        for path in &files {
            let text = std::fs::read_to_string(path)
                .map_err(|e| ConfigError::Io { path: path.clone(), message: e.to_string() })?;
            let table = parse_file(path, &text)?;
            merge(&mut merged, table);
        }
        let raw: RawConfig = toml::Value::Table(merged)
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Resolve(e.message().to_string()))?;
        let mut config = Config::resolve(raw)?;
        config.sources = files;
        let agents = workspace.join("AGENTS.md");
        if let Ok(text) = std::fs::read_to_string(&agents) {
            config.instructions = Some(steward_protocol::truncate_chars(&text, 20_000).to_string());
        }
        Ok(config)
    }

    /// Resolves one raw configuration (already merged) with defaults.
    pub fn resolve(raw: RawConfig) -> Result<Config, ConfigError> {
        let l = raw.limits.clone().unwrap_or_default();
        let d = Limits::default();
        let limits = Limits {
            max_rounds: l.max_rounds.unwrap_or(d.max_rounds),
            max_tool_calls_per_run: raw
                .policy
                .as_ref()
                .and_then(|p| p.max_tool_calls_per_run)
                .or(l.max_tool_calls_per_run)
                .unwrap_or(d.max_tool_calls_per_run),
            max_total_runtime_ms: l.max_total_runtime_ms.unwrap_or(d.max_total_runtime_ms),
            max_tool_output_chars: l.max_tool_output_chars.unwrap_or(d.max_tool_output_chars),
            max_context_chars: l.max_context_chars.unwrap_or(d.max_context_chars),
            tool_timeout_ms: l.tool_timeout_ms.unwrap_or(d.tool_timeout_ms),
        };
        if let Err((_, message)) = check_limits(&l) {
            return Err(ConfigError::Resolve(message));
        }
        Ok(Config {
            run: raw.run.unwrap_or_default(),
            providers: raw.providers,
            policy: raw.policy.unwrap_or_default(),
            limits,
            sandbox: raw.sandbox.unwrap_or_default(),
            instructions: None,
            sources: Vec::new(),
        })
    }
}

/// The `*.toml` files of `dir`, sorted; none when `dir` does not exist.
fn toml_files(dir: &Path) -> Result<Vec<PathBuf>, ConfigError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ConfigError::Io { path: dir.to_path_buf(), message: e.to_string() }),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// Parses one file and checks it against the schema, naming the line of the first error.
fn parse_file(path: &Path, text: &str) -> Result<toml::Table, ConfigError> {
    let invalid = |e: toml::de::Error| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: e.span().map(|s| line_of(text, s.start)).unwrap_or(0),
        message: e.message().trim().to_string(),
    };
    let table: toml::Table = toml::from_str(text).map_err(invalid)?;
    let checked: RawConfig = toml::from_str(text).map_err(invalid)?;
    if let Some(limits) = &checked.limits
        && let Err((key, message)) = check_limits(limits)
    {
        let line = text.find(key).map(|at| line_of(text, at)).unwrap_or(0);
        return Err(ConfigError::Invalid { path: path.to_path_buf(), line, message });
    }
    Ok(table)
}

/// Lower bounds of the limits: `(key, message)` of the first one broken.
fn check_limits(l: &RawLimits) -> Result<(), (&'static str, String)> {
    if l.max_rounds == Some(0) {
        return Err(("max_rounds", "limits.max_rounds must be at least 1".into()));
    }
    if l.max_tool_output_chars.is_some_and(|n| n < 400) {
        return Err(("max_tool_output_chars", "limits.max_tool_output_chars must be at least 400 characters".into()));
    }
    if l.max_tool_calls_per_run == Some(0) {
        return Err(("max_tool_calls_per_run", "limits.max_tool_calls_per_run must be at least 1".into()));
    }
    Ok(())
}

fn line_of(text: &str, byte: usize) -> usize {
    text.get(..byte).map(|head| head.matches('\n').count() + 1).unwrap_or(0)
}

/// Deep-merges `over` into `base`: tables merge key by key, anything else is replaced.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_files_override_and_errors_name_file_and_line() {
        let user = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(user.path().join("a.toml"), "[limits]\nmax_rounds = 7\nmax_tool_output_chars = 900\n").unwrap();
        std::fs::create_dir(ws.path().join(".steward")).unwrap();
        std::fs::write(ws.path().join(".steward/policy.toml"), "[limits]\nmax_rounds = 2\n").unwrap();
        let c = Config::load(Some(user.path()), ws.path()).unwrap();
        assert_eq!(c.limits.max_rounds, 2);
        assert_eq!(c.limits.max_tool_output_chars, 900);
        assert_eq!(c.sources.len(), 2);

        std::fs::write(ws.path().join(".steward/zz.toml"), "[limits]\n\nmax_roundz = 3\n").unwrap();
        let err = Config::load(Some(user.path()), ws.path()).unwrap_err().to_string();
        assert!(err.contains("zz.toml:3:"), "{err}");
        assert!(err.contains("max_roundz"), "{err}");
    }
}
