//! The run's side of argument-level data flow (SPEC C2): which calls are sinks, which reads
//! taint the run by path (`[policy] untrusted_paths`), and the per-run store of what earlier
//! outputs contained ([`steward_policy::Fingerprints`], checked by the gate).

use serde_json::Value;
use steward_policy::{Access, Policy, SHELL_TOOL, Workspace};

use crate::tools::Tool;

/// True when `tool` can send data out of the machine: an MCP tool (its arguments reach a server
/// Steward does not control, whatever the tool claims to do or the user declared about its side
/// effects), a `[[tool]]` with `network = true`, or `shell_command` with `[shell] network =
/// true`. These are exactly the tools whose output may come from outside
/// ([`ToolSpec::untrusted_output`](steward_protocol::ToolSpec)): a tool that can receive from the
/// network can send to it.
pub fn is_sink(tool: &dyn Tool) -> bool {
    tool.spec().untrusted_output
}

/// True when a call of `tool` with `args` reads something under the policy's
/// `untrusted_paths`: a path input (or a path the call touches, which a writing tool shows back
/// in its diff) that matches, or a directory under which a match may lie (a listing or search of
/// it). For `shell_command`, any word of the command line that names such a path counts. A path
/// that does not resolve is not read.
pub fn reads_untrusted(policy: &Policy, workspace: &Workspace, tool: &dyn Tool, args: &Value) -> bool {
    let spec = tool.spec();
    let mut texts: Vec<String> = tool.target_paths(args, workspace);
    texts.extend(tool.default_read_paths(args));
    for name in &spec.path_inputs {
        match args.get(name) {
            Some(Value::String(text)) => texts.push(text.clone()),
            Some(Value::Array(items)) => texts.extend(items.iter().filter_map(Value::as_str).map(str::to_string)),
            _ => {}
        }
    }
    if spec.name == SHELL_TOOL
        && let Some(line) = args.get("command").and_then(Value::as_str)
    {
        texts.extend(
            line.split(|c: char| c.is_whitespace() || ";|&<>()=`".contains(c))
                .map(|w| w.trim_matches(['\'', '"']).to_string())
                .filter(|w| !w.is_empty() && !w.starts_with('-')),
        );
    }
    texts.iter().any(|text| match workspace.resolve(text, Access::Read) {
        Ok(path) => policy.reads_untrusted(&path.rel, path.abs.is_dir()),
        Err(_) => false,
    })
}
