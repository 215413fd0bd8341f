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
        // The words each program gets, as the shell splits them (the shared splitter, command
        // substitutions included), plus the files it reads by redirection; each word also in
        // the parts a program splits itself (`if=vendor/x`). A line the splitter cannot read
        // may read anything.
        let Ok(commands) = steward_policy::shell::split(line) else { return true };
        for command in &commands {
            for word in command.argv.iter().chain(&command.inputs) {
                texts.extend(workspace.paths_named_by(word, ""));
            }
        }
    }
    texts.iter().any(|text| match workspace.resolve(text, Access::Read) {
        Ok(path) => policy.reads_untrusted(&path.rel, path.abs.is_dir()),
        Err(_) => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{network::Network, shell::ShellTool};
    use steward_policy::PolicyConfig;

    #[test]
    fn shell_words_naming_untrusted_paths_taint_as_the_shell_splits_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("vendor/lib")).unwrap();
        std::fs::write(dir.path().join("vendor/lib/notes.txt"), "x").unwrap();
        std::fs::write(dir.path().join("main.rs"), "x").unwrap();
        let workspace = Workspace::open(dir.path(), &[]).unwrap();
        let policy =
            Policy::new(&PolicyConfig { untrusted_paths: vec!["vendor".into()], ..PolicyConfig::default() }).unwrap();
        let shell = ShellTool::new(Vec::new(), Network::default(), None, false);
        let reads = |line: &str| reads_untrusted(&policy, &workspace, &shell, &serde_json::json!({ "command": line }));
        for line in [
            "cat vendor/lib/notes.txt",
            "cat 'vendor/lib/notes.txt'",
            "cat ven\\dor/lib/notes.txt",
            "wc -l < vendor/lib/notes.txt",
            "cat $(ls vendor)",
            "dd if=vendor/lib/notes.txt",
            "grep -r x vendor",
            "echo unbalanced 'quote",
        ] {
            assert!(reads(line), "{line}");
        }
        for line in ["cat main.rs", "echo vendorx", "ls"] {
            assert!(!reads(line), "{line}");
        }
    }
}
