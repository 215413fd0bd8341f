//! A `[[tool]]`'s `compensate` command as an undo step (SPEC C5): what `steward rollback`
//! runs for a call of a user-defined writing tool, and the test that lets such a tool be
//! treated like the built-in writers (`steward tools test-compensation`).
//!
//! The command is expanded from the call's recorded arguments exactly as the tool's own
//! `command` is (one argv item per value, never through a shell, paths and option injection
//! checked again) and runs in the same sandbox (`cwd`, `env`, `writes`, `network`,
//! `timeout_ms`). It runs only while the tool's definition is the one the call ran with.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use steward_policy::{Access, Policy, Workspace};
use steward_protocol::{DecisionKind, ToolCall};
use tokio_util::sync::CancellationToken;

use steward_config::{Compensate, Config, literal_prefix};
use steward_tools::CommandTool;
use steward_tools::{Tool, ToolContext, ToolError, ToolRegistry};
use steward_tools::{rollback::Snapshots, rollback::sha256_hex};

/// Why a compensation did not run, or did not undo the change.
#[derive(Debug, thiserror::Error)]
pub enum CompensateError {
    /// The run's workspace configuration could not be read.
    #[error("the configuration of the run's workspace cannot be read: {0}")]
    Config(String),
    /// The policy of that configuration does not compile.
    #[error(transparent)]
    Policy(#[from] steward_policy::PolicyError),
    /// No `[[tool]]` of that name is configured (any more).
    #[error("no `[[tool]]` named `{0}` is configured in the workspace; its compensation cannot run")]
    UnknownTool(String),
    /// The tool declares no `compensate` command.
    #[error("`{0}` declares no `compensate` command")]
    NotDeclared(String),
    /// The tool's definition changed since the call ran: its compensation is not trusted.
    #[error(
        "the definition of `{0}` changed since the call ran; its compensation is not run (undo the change by hand)"
    )]
    Changed(String),
    /// The definition is invalid.
    #[error(transparent)]
    Definition(#[from] steward_config::DefinitionError),
    /// The compensating command was refused or failed (its output is in the message).
    #[error("{0}")]
    Failed(String),
    /// `test-compensation` only: the tool writes nothing, so there is nothing to undo.
    #[error("`{0}` has no `writes`, so it changes nothing a compensation could undo")]
    NoWrites(String),
    /// `test-compensation` only: the policy denies the call.
    #[error("the policy denies this call of `{tool}` (rule `{rule}`): {reason}")]
    Denied {
        /// The tool.
        tool: String,
        /// The rule that denied it.
        rule: String,
        /// Why.
        reason: String,
    },
    /// `test-compensation` only: the tool's own command failed (nothing was compensated).
    #[error("the command itself failed, so the compensation was not tried: {0}")]
    CommandFailed(String),
    /// `test-compensation` only: the command changed nothing it may write, so the test
    /// proves nothing.
    #[error("the command changed nothing under its `writes`, so the test proves nothing; try other arguments")]
    NothingChanged,
    /// `test-compensation` only: after the compensation, these paths differ from before the
    /// command ran.
    #[error("the compensation ran but did not restore {}", .0.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", "))]
    NotRestored(Vec<String>),
    /// Reading the workspace to compare it failed.
    #[error("cannot read `{path}` to compare it: {source}")]
    Read {
        /// The path.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Runs the compensations of one workspace's `[[tool]]`s.
pub struct CompensationRunner {
    config: Config,
    context: ToolContext,
    policy: Policy,
}

/// A compensating command that ran and exited 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompensationRun {
    /// `[exit status 0]`, stdout, and stderr when there is any (not redacted).
    pub output: String,
    /// The sandbox profile it ran under.
    pub sandbox: String,
}

/// What a passed compensation test showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompensationTest {
    /// The tool's definition digest the test holds for.
    pub definition_sha256: String,
    /// Workspace-relative paths the command changed (and the compensation restored).
    pub changed: Vec<String>,
}

impl CompensationRunner {
    /// A runner for `config` (loaded for `workspace`, canonical); `snapshots` is where the
    /// sandboxed commands' context keeps snapshots (unused by command tools, required by the
    /// context). Errors: the workspace cannot be opened, the policy does not compile.
    pub fn new(config: Config, workspace: &Path, snapshots: Snapshots) -> Result<Self, CompensateError> {
        let policy = Policy::new(&config.policy)?;
        let ws = Workspace::open(workspace, &config.policy.deny_path)
            .map_err(|e| CompensateError::Config(format!("{}: {e}", workspace.display())))?;
        let context = ToolContext {
            workspace: Arc::new(ws),
            cancel: CancellationToken::new(),
            env_allow: config.sandbox.env_allow.clone(),
            timeout_ms: config.limits.tool_timeout_ms,
            snapshots,
            accept_weaker: config
                .sandbox
                .accept_weaker
                .iter()
                .filter_map(|n| steward_sandbox::Protection::parse(n))
                .collect(),
            credentials: config
                .tools
                .iter()
                .map(|t| (t.name.clone(), policy.credential_scope(&t.name)))
                .filter(|(_, names)| !names.is_empty())
                .collect(),
            sandbox: config.sandbox.settings(),
            elicitor: None,
            egress: None,
        };
        Ok(CompensationRunner { config, context, policy })
    }

    /// The configured tool `name` with a `compensate` command.
    fn tool(&self, name: &str) -> Result<CommandTool, CompensateError> {
        let definition = self
            .config
            .tools
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| CompensateError::UnknownTool(name.to_string()))?;
        if !matches!(definition.compensate, Some(Compensate::Command(_))) {
            return Err(CompensateError::NotDeclared(name.to_string()));
        }
        Ok(CommandTool::new(definition.clone())?)
    }

    /// Runs the compensation of a call of `tool` made with `arguments` while the tool's
    /// definition digest was `definition_sha256`. `Ok` carries the command's output (not
    /// redacted) and sandbox profile; `Err` says why it did not run or failed.
    pub async fn undo(
        &self,
        tool: &str,
        definition_sha256: &str,
        arguments: &Value,
    ) -> Result<CompensationRun, CompensateError> {
        let command = self.tool(tool)?;
        if command.config().definition_sha256() != definition_sha256 {
            return Err(CompensateError::Changed(tool.to_string()));
        }
        let output =
            command.compensate(arguments, &self.context).await.map_err(|e| CompensateError::Failed(e.message))?;
        Ok(CompensationRun { output: output.content, sandbox: output.sandbox })
    }

    /// `steward tools test-compensation`: runs `tool` with `arguments` in the workspace (the
    /// policy must not deny it), then its compensation, and checks that every file under the
    /// tool's `writes` is exactly as before (content, kind, permissions). The command must
    /// change something, or the test proves nothing. Nothing is recorded here.
    pub async fn test(&self, tool: &str, arguments: &Value) -> Result<CompensationTest, CompensateError> {
        let command = self.tool(tool)?;
        if command.config().writes.is_empty() {
            return Err(CompensateError::NoWrites(tool.to_string()));
        }
        let registry = ToolRegistry::for_config_with_policy(&self.config, &self.context.workspace, &self.policy)
            .map_err(|e| CompensateError::Config(e.to_string()))?;
        let call = ToolCall { id: "test-compensation".into(), name: tool.to_string(), arguments: arguments.clone() };
        let decision = crate::decide::decide(&self.policy, &registry, &call, &self.context.workspace, false, None);
        if decision.decision == DecisionKind::Deny {
            return Err(CompensateError::Denied {
                tool: tool.to_string(),
                rule: decision.rule,
                reason: decision.reasons.join("; "),
            });
        }
        let roots = self.write_roots(&command)?;
        let before = tree_state(&roots)?;
        command
            .run(arguments, &self.context)
            .await
            .map_err(|e: ToolError| CompensateError::CommandFailed(e.message))?;
        let after = tree_state(&roots)?;
        let changed = differences(&before, &after);
        if changed.is_empty() {
            return Err(CompensateError::NothingChanged);
        }
        command.compensate(arguments, &self.context).await.map_err(|e| CompensateError::Failed(e.message))?;
        let restored = tree_state(&roots)?;
        let left = differences(&before, &restored);
        if !left.is_empty() {
            return Err(CompensateError::NotRestored(left));
        }
        Ok(CompensationTest { definition_sha256: command.config().definition_sha256(), changed })
    }

    /// The folders (or files) the tool's `writes` grant, absolute, with their
    /// workspace-relative names.
    fn write_roots(&self, command: &CommandTool) -> Result<Vec<(PathBuf, String)>, CompensateError> {
        let ws = &self.context.workspace;
        let mut roots = Vec::new();
        for glob in &command.config().writes {
            let prefix = literal_prefix(glob);
            let resolved = ws
                .resolve(&prefix, Access::Write)
                .map_err(|e| CompensateError::Failed(format!("writes `{glob}`: {e}")))?;
            roots.push((resolved.abs, resolved.rel));
        }
        Ok(roots)
    }
}

/// What one path holds: its kind and permission bits, and the SHA-256 of its content (a
/// file) or target (a symbolic link).
type Entry = (char, u32, String);

/// Every path under `roots` (not following symbolic links), workspace-relative.
fn tree_state(roots: &[(PathBuf, String)]) -> Result<BTreeMap<String, Entry>, CompensateError> {
    let mut out = BTreeMap::new();
    for (abs, rel) in roots {
        walk(abs, rel, &mut out)?;
    }
    Ok(out)
}

fn walk(abs: &Path, rel: &str, out: &mut BTreeMap<String, Entry>) -> Result<(), CompensateError> {
    use std::os::unix::fs::PermissionsExt;
    let read = |source| CompensateError::Read { path: rel.to_string(), source };
    let meta = match std::fs::symlink_metadata(abs) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(read(e)),
    };
    let mode = meta.permissions().mode() & 0o7777;
    if meta.is_symlink() {
        let target = std::fs::read_link(abs).map_err(read)?;
        out.insert(rel.to_string(), ('l', mode, sha256_hex(target.as_os_str().as_encoded_bytes())));
    } else if meta.is_dir() {
        out.insert(rel.to_string(), ('d', mode, String::new()));
        let mut names: Vec<_> = std::fs::read_dir(abs)
            .map_err(read)?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .map_err(read)?;
        names.sort();
        for name in names {
            let name = name.to_string_lossy();
            let child = if rel.is_empty() { name.to_string() } else { format!("{rel}/{name}") };
            walk(&abs.join(name.as_ref()), &child, out)?;
        }
    } else {
        let bytes = std::fs::read(abs).map_err(read)?;
        out.insert(rel.to_string(), ('f', mode, sha256_hex(&bytes)));
    }
    Ok(())
}

/// Paths present in only one state, or different in both.
fn differences(a: &BTreeMap<String, Entry>, b: &BTreeMap<String, Entry>) -> Vec<String> {
    let mut paths: Vec<String> = a.keys().chain(b.keys()).filter(|k| a.get(*k) != b.get(*k)).cloned().collect();
    paths.sort();
    paths.dedup();
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runner(dir: &Path, tool: &str) -> CompensationRunner {
        let raw: steward_config::RawConfig = toml::from_str(tool).unwrap();
        let config = Config::resolve(raw).unwrap();
        CompensationRunner::new(config, dir, Snapshots::new(&dir.join(".snaps"), "run")).unwrap()
    }

    /// The test fails when the compensation leaves anything behind, passes when it restores
    /// everything, and refuses a changed definition at undo time.
    #[tokio::test]
    async fn a_test_passes_only_when_everything_is_restored() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("out")).unwrap();
        let tool = |compensate: &str| {
            format!(
                "[[tool]]\nname = \"mk\"\ndescription = \"d\"\ncommand = [\"touch\", {{ input = \"name\" }}]\n\
                 cwd = \"out\"\nwrites = [\"out/**\"]\nrisk = \"low\"\ncompensate = {compensate}\n\
                 [[tool.input]]\nname = \"name\"\ntype = \"string\"\nrequired = true\n"
            )
        };
        let args = serde_json::json!({"name": "made.txt"});
        let leaves = runner(dir.path(), &tool("[\"true\"]"));
        let err = leaves.test("mk", &args).await.unwrap_err();
        assert!(matches!(&err, CompensateError::NotRestored(paths) if paths == &["out/made.txt"]), "{err}");
        std::fs::remove_file(dir.path().join("out/made.txt")).unwrap();
        let removes = runner(dir.path(), &tool("[\"rm\", \"--\", { input = \"name\" }]"));
        let passed = removes.test("mk", &args).await.unwrap();
        assert_eq!(passed.changed, ["out/made.txt"]);
        assert!(!dir.path().join("out/made.txt").exists());
        let changed = removes.undo("mk", "not-the-digest", &args).await.unwrap_err();
        assert!(matches!(changed, CompensateError::Changed(_)), "{changed}");
    }
}
