//! What becomes of a call's output: whether it taints the run, and capping it for the model
//! (the complete output saved beside the run).

use std::path::Path;

use steward_protocol::{ToolCall, head_tail_chars};

use super::CallContext;

/// True when the call's tool returns text from outside the user's control, or reads a
/// workspace path under `[policy] untrusted_paths`.
pub(super) fn tool_output_taints(cx: &CallContext<'_>, call: &ToolCall) -> bool {
    cx.tools.registry.get(&call.name).is_some_and(|t| {
        t.spec().untrusted_output
            || crate::data_flow::reads_untrusted(cx.run.policy, cx.run.workspace, t.as_ref(), &call.arguments)
    })
}

/// Caps a (redacted) output to `max_output_chars`, keeping head and tail; the full output is
/// saved under `outputs_dir/RUN_ID/CALL_ID.txt` and the marker says so.
/// `complete` is the whole output when the tool already cut `full` itself (an MCP server's
/// byte cap); it is what gets saved then.
pub(super) fn cap_output(cx: &CallContext<'_>, call: &ToolCall, full: &str, complete: Option<&str>) -> String {
    let max = cx.tools.max_output_chars;
    let too_long = full.chars().count() > max;
    if !too_long && complete.is_none() {
        return full.to_string();
    }
    let dir = cx.tools.outputs_dir.join(cx.run.run_id);
    let file = dir.join(format!("{}.txt", safe_file_name(&call.id)));
    let saved = save_private(&dir, &file, complete.unwrap_or(full));
    if !too_long {
        return match saved {
            Ok(()) => format!("{full}\n[the complete output is saved to {}]", file.display()),
            Err(_) => full.to_string(),
        };
    }
    let note = match saved {
        Ok(()) => format!("full output saved to {}", file.display()),
        Err(e) => format!("full output could not be saved: {e}"),
    };
    head_tail_chars(full, max, &note).0
}

/// Writes `text` to `file` (mode 0600) in `dir` (created with mode 0700).
fn save_private(dir: &Path, file: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mut out = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(file)?;
    out.write_all(text.as_bytes())
}

/// `id` as a file name: ASCII letters, digits, `_` and `-` kept, anything else `_`, at most
/// 80 characters.
fn safe_file_name(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).take(80).collect()
}
