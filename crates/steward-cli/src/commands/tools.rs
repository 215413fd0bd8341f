//! `steward tools [--workspace DIR] [--json]`: the tools a model would be offered in a
//! workspace (SPEC N). `--json` prints exactly the `tools` array sent to an OpenAI-compatible
//! server (`steward_provider::tool_definitions`).

use std::path::Path;

use anyhow::Result;
use steward_protocol::ToolSpec;

use crate::commands::{load_config, registry};

/// Prints the tools a model is offered at the start of a run, sorted by name: built-in,
/// `[[tool]]`, MCP and `shell_command` tools, and each toolchain as one tool; tools marked
/// `callable = "chain_only"` are left out (they are offered only inside their chain).
pub async fn tools(workspace: &Path, json: bool) -> Result<u8> {
    let config = load_config(workspace)?;
    let registry = registry(&config, workspace).await?;
    let chains = steward_core::chains::Chains::new(&config.chains, &registry)?;
    let (mut specs, _) = chains.offered(steward_core::chains::ChainState::Idle, &registry);
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
