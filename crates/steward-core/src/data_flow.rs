//! The run's side of argument-level data flow (SPEC C2): which calls are sinks, which reads
//! taint the run by path (`[policy] untrusted_paths`), and the per-run store of what earlier
//! outputs contained ([`steward_policy::Fingerprints`], checked by the gate).

use serde_json::Value;
use steward_policy::{Access, Policy, SHELL_TOOL, Workspace};

use steward_tools::Tool;

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
/// that does not resolve is not read. A file with several names (hard links) is read under each
/// of its workspace names: one under `untrusted_paths` counts.
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
        Ok(path) => {
            policy.reads_untrusted(&path.rel, path.abs.is_dir())
                || other_names(workspace, &path.abs).iter().any(|rel| match rel.as_str() {
                    // Not all names could be looked at: as if it were named anywhere.
                    "" => policy.reads_untrusted("", true),
                    rel => policy.reads_untrusted(rel, false),
                })
        }
        Err(_) => false,
    })
}

/// Most entries [`other_names`] looks at; past it the names found so far are returned with the
/// workspace's root (`""`), which reads as untrusted when any untrusted path is configured: a
/// large workspace errs on the strict side.
const MAX_LINK_WALK: usize = 200_000;

/// The other workspace-relative names of the regular file at `abs` when it has several (hard
/// links), found by walking the workspace (without following links or entering `.git`); empty
/// for a file with one name.
fn other_names(workspace: &Workspace, abs: &std::path::Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(abs) else { return Vec::new() };
    if !meta.is_file() || meta.nlink() < 2 {
        return Vec::new();
    }
    let id = (meta.dev(), meta.ino());
    let root = workspace.root().to_path_buf();
    let mut names = Vec::new();
    let mut pending = vec![root.clone()];
    let mut seen = 0usize;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_LINK_WALK {
                // Too many to look through: every path may hold another name (the root, `""`).
                names.push(String::new());
                return names;
            }
            let Ok(kind) = entry.file_type() else { continue };
            let path = entry.path();
            if kind.is_dir() && entry.file_name() != ".git" {
                pending.push(path);
            } else if kind.is_file()
                && path != abs
                && let Ok(other) = entry.metadata()
                && (other.dev(), other.ino()) == id
                && let Ok(rel) = path.strip_prefix(&root)
            {
                names.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    names
}

/// Most workspace files whose content [`payload`] adds, and most bytes read of each.
const MAX_PAYLOAD_FILES: usize = 32;
const MAX_PAYLOAD_FILE_BYTES: u64 = 1 << 20;

/// What a sink's call carries out, as the data-flow check reads it (SPEC C2): its arguments;
/// for `shell_command`, each command's words as the shell passes them — quotes removed and
/// the pieces joined, so `'ZEBRA-QUAR''TZ'` reads `ZEBRA-QUARTZ` —; and the content of every
/// regular workspace file the call names (`curl --data-binary @notes/plan.txt`, `< file`,
/// `cat file | curl --data-binary @-`, a `[[tool]]` path input): a program sends what the file
/// holds, and a file the run wrote holds what was written into it. Extra parts are keys of the
/// returned object in parentheses (`(file notes/plan.txt)`); at most 32 files, 1 MiB of each;
/// secret and denied files are not read (the sandbox does not show them either).
pub fn payload(tool: &dyn Tool, args: &Value, workspace: &Workspace) -> Value {
    let mut out = match args {
        Value::Object(map) => map.clone(),
        other => serde_json::Map::from_iter([("(arguments)".to_string(), other.clone())]),
    };
    let mut words: Vec<String> = Vec::new();
    collect_strings(args, &mut words);
    if tool.spec().name == SHELL_TOOL
        && let Some(line) = args.get("command").and_then(Value::as_str)
        && let Ok(commands) = steward_policy::shell::split(line)
    {
        let joined: Vec<String> = commands.iter().map(|c| c.argv.join(" ")).collect();
        out.insert("(words as the shell passes them)".into(), Value::String(joined.join("\n")));
        for command in &commands {
            words.extend(command.argv.iter().chain(&command.inputs).cloned());
        }
    }
    let mut files: Vec<String> = Vec::new();
    for word in &words {
        for named in workspace.paths_named_by(word, "") {
            let Ok(path) = workspace.resolve(&named, steward_policy::Access::Read) else { continue };
            if files.len() >= MAX_PAYLOAD_FILES || files.contains(&path.rel) {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&path.abs) else { continue };
            if !meta.is_file() {
                continue;
            }
            let mut text = Vec::new();
            let read = std::fs::File::open(&path.abs).and_then(|f| {
                std::io::Read::read_to_end(&mut std::io::Read::take(f, MAX_PAYLOAD_FILE_BYTES), &mut text)
            });
            if read.is_ok() {
                out.insert(format!("(file {})", path.rel), Value::String(String::from_utf8_lossy(&text).into_owned()));
                files.push(path.rel);
            }
        }
    }
    Value::Object(out)
}

/// Every string in `value` (object keys left out), depth first.
fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use steward_policy::PolicyConfig;
    use steward_tools::{Network, ShellTool};

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
