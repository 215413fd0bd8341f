//! `steward tools [--workspace DIR] [--json]`: the tools a model would be offered in a
//! workspace (SPEC N). `--json` prints exactly the `tools` array sent to an OpenAI-compatible
//! server (`steward_provider::tool_definitions`). `steward tools test-compensation NAME`: the
//! test that lets a `[[tool]]`'s compensation count (SPEC C5).

use std::path::Path;

use anyhow::Result;
use steward_protocol::{AuditEntry, AuditOutcome, ToolSpec};
use steward_store::StoreOptions;

use crate::commands::{load_config, redactor, registry, usage_error, user_config_dir};
use crate::home::{Home, local_owner};

/// Prints the tools a model is offered at the start of a run, sorted by name: built-in,
/// `[[tool]]`, MCP and `shell_command` tools, and each toolchain as one tool; tools marked
/// `callable = "chain_only"` are left out (they are offered only inside their chain).
pub async fn tools(workspace: &Path, json: bool) -> Result<u8> {
    let config = load_config(workspace)?;
    let registry = registry(&config, workspace).await?;
    let chains = steward_core::Chains::new(&config.chains, &registry)?;
    let (mut specs, _) = chains.offered(steward_core::ChainState::Idle, &registry);
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    let specs: Vec<ToolSpec> = specs;
    if json {
        println!("{}", serde_json::to_string_pretty(&steward_provider::tool_definitions(&specs))?);
        return Ok(0);
    }
    let width = specs.iter().map(|s| s.name.len()).max().unwrap_or(0);
    for spec in &specs {
        let kind = if spec.writes { "writes" } else { "reads" };
        println!("{:width$}  {:9} {:6}  {}", spec.name, spec.risk.as_str(), kind, spec.description);
    }
    Ok(0)
}

/// The file of the user's configuration that `steward tools test-compensation` records passed
/// tests in (`[tested_compensations]`, read with the rest of the user's configuration).
const TESTED_FILE: &str = "tested-compensations.toml";

/// `steward tools test-compensation NAME --args JSON`: runs the tool once in `workspace`, then
/// its compensation, and records the compensation as tested for the tool's current definition
/// when everything under its `writes` is as before. Every attempt is an audit record. Exit 0
/// tested, 1 not (what the command changed may be left in the workspace, and is named), 2
/// usage or configuration error.
pub async fn test_compensation(workspace: &Path, name: &str, args: &str) -> Result<u8> {
    use steward_core::{CompensateError, CompensationRunner};
    let workspace =
        std::fs::canonicalize(workspace).map_err(|e| usage_error(&format!("{}: {e}", workspace.display())))?;
    let arguments: serde_json::Value =
        serde_json::from_str(args).map_err(|e| usage_error(&format!("--args is not JSON: {e}")))?;
    if !arguments.is_object() {
        return Err(usage_error("--args must be a JSON object"));
    }
    let config = load_config(&workspace)?;
    let home = Home::locate()?;
    let store = home.open_store(StoreOptions::default()).await?;
    let snapshots = steward_tools::rollback::Snapshots::new(&home.dir.join("snapshots"), "test-compensation");
    let runner = CompensationRunner::new(config, &workspace, snapshots).map_err(|e| usage_error(&e.to_string()))?;
    let result = runner.test(name, &arguments).await;
    let redactor = redactor();
    let (outcome, detail) = match &result {
        Ok(test) => (AuditOutcome::Completed, format!("compensation restored {}", test.changed.join(", "))),
        Err(e) => (AuditOutcome::Failed, redactor.redact(&e.to_string())),
    };
    let digest = match &result {
        Ok(test) => test.definition_sha256.clone(),
        Err(_) => String::new(),
    };
    store
        .append_audit(AuditEntry {
            outcome,
            ..AuditEntry::owner_action(
                &local_owner(),
                "test_compensation",
                serde_json::json!({"tool": name, "definition_sha256": digest, "arguments": redactor.redact_value(&arguments)}),
                detail.clone(),
            )
        })
        .await?;
    store.flush().await?;
    let test = match result {
        Ok(test) => test,
        Err(
            e @ (CompensateError::UnknownTool(_)
            | CompensateError::NotDeclared(_)
            | CompensateError::NoWrites(_)
            | CompensateError::Config(_)
            | CompensateError::Policy(_)
            | CompensateError::Definition(_)),
        ) => return Err(usage_error(&e.to_string())),
        Err(e) => {
            eprintln!("steward: the compensation of `{name}` is NOT tested: {}", redactor.redact(&e.to_string()));
            if matches!(e, CompensateError::NotRestored(_) | CompensateError::Failed(_)) {
                eprintln!("steward: what the command changed is left in {}", workspace.display());
            }
            return Ok(1);
        }
    };
    let file = record_tested(name, &test.definition_sha256)?;
    println!(
        "the compensation of `{name}` restored {}: recorded as tested for this definition in {} (calls of `{name}` are now decided like the built-in writers'; any change to the tool needs a new test)",
        test.changed.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", "),
        file.display()
    );
    Ok(0)
}

/// Writes `[tested_compensations] NAME = DIGEST` into the user's configuration.
fn record_tested(name: &str, digest: &str) -> Result<std::path::PathBuf> {
    let dir = user_config_dir().ok_or_else(|| usage_error("neither XDG_CONFIG_HOME nor HOME is set"))?;
    std::fs::create_dir_all(&dir)?;
    let file = dir.join(TESTED_FILE);
    let mut table: toml::Table = match std::fs::read_to_string(&file) {
        Ok(text) => toml::from_str(&text).map_err(|e| usage_error(&format!("{}: {}", file.display(), e.message())))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => toml::Table::new(),
        Err(e) => return Err(e.into()),
    };
    let tested = table.entry("tested_compensations").or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let Some(tested) = tested.as_table_mut() else {
        return Err(usage_error(&format!("{}: [tested_compensations] is not a table", file.display())));
    };
    tested.insert(name.to_string(), toml::Value::String(digest.to_string()));
    std::fs::write(&file, toml::to_string_pretty(&table)?)?;
    Ok(file)
}
