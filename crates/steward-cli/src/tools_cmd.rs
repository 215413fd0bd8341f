//! `steward tools [--workspace DIR] [--json]`: the tools a model would be offered in a
//! workspace (SPEC N). `--json` prints exactly the `tools` array sent to an OpenAI-compatible
//! server (`steward_provider::tool_definitions`).

use std::path::Path;

use anyhow::Result;
use steward_protocol::ToolSpec;

use crate::commands::{load_config, registry};

/// Prints the tools offered outside any chain, sorted by name. Tools marked
/// `callable = "chain_only"` are left out (they are offered only inside their chain; how a
/// chain itself is listed is decided with the toolchain code).
pub fn tools(workspace: &Path, json: bool) -> Result<u8> {
    let config = load_config(workspace)?;
    let registry = registry(&config, workspace)?;
    let specs: Vec<ToolSpec> = registry
        .specs()
        .into_iter()
        .filter(|spec| registry.get(&spec.name).is_some_and(|tool| !tool.chain_only()))
        .collect();
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
