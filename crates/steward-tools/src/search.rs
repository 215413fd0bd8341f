//! The read-only workspace tools (SPEC T2): `list`, `read` and `search`.
//!
//! Directory listings and searches walk the workspace with
//! [`steward_policy::Workspace::walk`], which honours `.gitignore`/`.stewardignore`, never
//! yields secret paths, `.git` or `deny_path` matches, and does not follow symbolic links. So
//! an ignored or secret file is never listed and its content never searched, whichever
//! directory is named (case B09).

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use steward_policy::{Access, WorkspacePath};
use steward_protocol::{ErrorClass, RiskLevel, ToolSpec};

pub use super::shared::MAX_FILE_BYTES;
use super::shared::{opt_bool, opt_str, opt_u64, read_regular_file, spec, str_arg};
use super::{Tool, ToolContext, ToolError, ToolOutput};

/// Most entries a `list` call returns.
pub const MAX_LIST_ENTRIES: usize = 2_000;
/// Most matches a `search` call returns.
pub const MAX_SEARCH_MATCHES: usize = 200;
/// Longest line, in characters, shown for one search match.
const MAX_MATCH_LINE_CHARS: usize = 300;
/// Bytes at the start of a file checked for a NUL byte to decide it is binary.
const BINARY_PROBE_BYTES: usize = 8 * 1024;

/// The read-only tools: `list`, `read`, `search`.
pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(ListTool::default()), Arc::new(ReadTool::default()), Arc::new(SearchTool::default())]
}

fn cancelled() -> ToolError {
    ToolError { class: ErrorClass::Cancelled, message: "cancelled".into(), rule: None }
}

/// The workspace-relative, `/`-separated form of a walked path.
fn rel_of(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

/// Runs blocking filesystem work off the async runtime.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| ToolError::failed(format!("the tool's worker failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::super::shared::holds_private_key;

    #[test]
    fn private_key_blocks_are_recognised_only_as_real_blocks() {
        assert!(holds_private_key(b"notes\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n"));
        assert!(holds_private_key(b"  -----BEGIN OPENSSH PRIVATE KEY-----\r\nb3Bl\n"));
        assert!(!holds_private_key(b"let k = \"-----BEGIN PRIVATE KEY-----\\nX\";\n"));
        assert!(!holds_private_key(b"-----BEGIN CERTIFICATE-----\nMIIB\n"));
    }
}

// ----- list ---------------------------------------------------------------------------------

/// `list {path?, recursive?}`: the entries of a workspace directory, directories with a
/// trailing `/`, sorted, workspace-relative.
pub struct ListTool {
    spec: ToolSpec,
}

impl Default for ListTool {
    /// The tool with its spec (risk `safe`).
    fn default() -> Self {
        let spec = spec(
            "list",
            "List the files and folders of a workspace directory (folders end with `/`). Ignored and secret files are not shown.",
            json!({
                "path": {"type": ["string", "null"], "description": "Workspace-relative directory; `.` is the workspace root (so is empty or omitted)."},
                "recursive": {"type": ["boolean", "null"], "description": "List everything below the directory (at most 2000 entries) instead of one level."}
            }),
            &[],
            RiskLevel::Safe,
            false,
            &["path"],
        );
        ListTool { spec }
    }
}

#[async_trait]
impl Tool for ListTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn pure_read(&self) -> bool {
        true
    }

    /// With no `path`, the whole workspace.
    fn default_read_paths(&self, args: &Value) -> Vec<String> {
        if args.get("path").is_none_or(Value::is_null) { vec![".".into()] } else { Vec::new() }
    }

    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let dir =
            ctx.workspace.resolve(opt_str(args, "path")?.filter(|p| !p.is_empty()).unwrap_or("."), Access::Read)?;
        let recursive = opt_bool(args, "recursive")?.unwrap_or(false);
        if !dir.abs.is_dir() {
            return Err(ToolError::failed(format!("`{}` is not a directory; use read for files", display(&dir))));
        }
        let (workspace, cancel) = (ctx.workspace.clone(), ctx.cancel.clone());
        blocking(move || {
            let root = workspace.root();
            let mut entries = Vec::new();
            let mut cut = false;
            for entry in workspace.walk(&dir) {
                if cancel.is_cancelled() {
                    return Err(cancelled());
                }
                let Ok(entry) = entry else { continue };
                if entry.depth() == 0 || (!recursive && entry.depth() > 1) {
                    continue;
                }
                if entries.len() == MAX_LIST_ENTRIES {
                    cut = true;
                    break;
                }
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                let rel = rel_of(root, entry.path());
                entries.push(if is_dir { format!("{rel}/") } else { rel });
            }
            entries.sort();
            let mut content =
                if entries.is_empty() { format!("{} is empty", display(&dir)) } else { entries.join("\n") };
            if cut {
                content.push_str(&format!(
                    "\n[listing stopped at {MAX_LIST_ENTRIES} entries; list a subdirectory to see more]"
                ));
            }
            Ok(ToolOutput { content, ..ToolOutput::default() })
        })
        .await
    }
}

fn display(path: &WorkspacePath) -> String {
    if path.rel.is_empty() { "the workspace root".to_string() } else { format!("`{}`", path.rel) }
}

// ----- read ---------------------------------------------------------------------------------

/// `read {path, start_line?, max_lines?}`: the text of a UTF-8 file (without a BOM), whole or
/// a range of lines. Refuses binary files (a NUL byte), text that is not UTF-8, and files over
/// [`MAX_FILE_BYTES`].
pub struct ReadTool {
    spec: ToolSpec,
}

impl Default for ReadTool {
    /// The tool with its spec (risk `low`).
    fn default() -> Self {
        let spec = spec(
            "read",
            "Read a UTF-8 text file of the workspace, whole or a range of lines.",
            json!({
                "path": {"type": "string", "description": "Workspace-relative path of the file."},
                "start_line": {"type": ["integer", "null"], "minimum": 1, "description": "First line to return (1-based); default 1."},
                "max_lines": {"type": ["integer", "null"], "minimum": 1, "description": "Most lines to return; default all."}
            }),
            &["path"],
            RiskLevel::Low,
            false,
            &["path"],
        );
        ReadTool { spec }
    }
}

#[async_trait]
impl Tool for ReadTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn pure_read(&self) -> bool {
        true
    }

    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let path = ctx.workspace.resolve(str_arg(args, "path")?, Access::Read)?;
        let start_line = opt_u64(args, "start_line")?.unwrap_or(1).max(1) as usize;
        let max_lines = opt_u64(args, "max_lines")?.map(|n| n as usize);
        let bytes = read_regular_file(&path.abs, &path.rel, MAX_FILE_BYTES)?;
        if let Some(offset) = bytes.iter().position(|b| *b == 0) {
            return Err(ToolError::refused(
                "binary_file",
                format!("`{}` is a binary file (NUL byte at offset {offset}); it is not read as text", path.rel),
            ));
        }
        let text = std::str::from_utf8(&bytes).map_err(|e| {
            let offset = e.valid_up_to();
            ToolError::refused(
                "not_utf8",
                format!(
                    "`{}` is not valid UTF-8 (byte 0x{:02X} at offset {offset}); it is not read as text",
                    path.rel, bytes[offset]
                ),
            )
        })?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if start_line == 1 && max_lines.is_none() {
            return Ok(ToolOutput { content: text.to_string(), ..ToolOutput::default() });
        }
        let total = text.split_inclusive('\n').count();
        if start_line > total.max(1) {
            return Err(ToolError::failed(format!(
                "start_line {start_line} is past the end of `{}` ({total} lines)",
                path.rel
            )));
        }
        let content: String =
            text.split_inclusive('\n').skip(start_line - 1).take(max_lines.unwrap_or(usize::MAX)).collect();
        Ok(ToolOutput { content, ..ToolOutput::default() })
    }
}

// ----- search -------------------------------------------------------------------------------

/// `search {query, path?, regex?, case_sensitive?}`: matching lines across the workspace as
/// `rel/path:line: text`, at most [`MAX_SEARCH_MATCHES`]. Binary files (a NUL byte in the
/// first 8 KiB) and files over [`MAX_FILE_BYTES`] are skipped and counted.
pub struct SearchTool {
    spec: ToolSpec,
}

impl Default for SearchTool {
    /// The tool with its spec (risk `low`).
    fn default() -> Self {
        let spec = spec(
            "search",
            "Search the text of workspace files for a string or regular expression; returns `path:line: text` lines. Ignored and secret files are not searched.",
            json!({
                "query": {"type": "string", "description": "Text to find (a regular expression when `regex` is true)."},
                "path": {"type": ["string", "null"], "description": "Workspace-relative file or directory to search; default the whole workspace."},
                "regex": {"type": ["boolean", "null"], "description": "Treat `query` as a regular expression (Rust `regex` syntax); default false."},
                "case_sensitive": {"type": ["boolean", "null"], "description": "Match case exactly; default false."}
            }),
            &["query"],
            RiskLevel::Low,
            false,
            &["path"],
        );
        SearchTool { spec }
    }
}

/// What a search found.
#[derive(Default)]
struct Findings {
    lines: Vec<String>,
    more: bool,
    skipped_binary: usize,
    skipped_large: usize,
    skipped_secret: usize,
}

#[async_trait]
impl Tool for SearchTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn pure_read(&self) -> bool {
        true
    }

    /// With no `path`, the whole workspace.
    fn default_read_paths(&self, args: &Value) -> Vec<String> {
        if args.get("path").is_none_or(Value::is_null) { vec![".".into()] } else { Vec::new() }
    }

    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let query = str_arg(args, "query")?.to_string();
        if query.is_empty() {
            return Err(ToolError::refused("invalid_arguments", "`query` must not be empty"));
        }
        let pattern = if opt_bool(args, "regex")?.unwrap_or(false) { query.clone() } else { regex::escape(&query) };
        let matcher = regex::bytes::RegexBuilder::new(&pattern)
            .case_insensitive(!opt_bool(args, "case_sensitive")?.unwrap_or(false))
            .size_limit(1 << 20)
            .build()
            .map_err(|e| ToolError::refused("invalid_arguments", format!("invalid regular expression: {e}")))?;
        let start =
            ctx.workspace.resolve(opt_str(args, "path")?.filter(|p| !p.is_empty()).unwrap_or("."), Access::Read)?;
        let (workspace, cancel) = (ctx.workspace.clone(), ctx.cancel.clone());
        let found = blocking(move || {
            let root = workspace.root();
            let mut found = Findings::default();
            for entry in workspace.walk(&start) {
                if cancel.is_cancelled() {
                    return Err(cancelled());
                }
                let Ok(entry) = entry else { continue };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    continue;
                }
                let rel = rel_of(root, entry.path());
                let bytes = match read_regular_file(entry.path(), &rel, MAX_FILE_BYTES) {
                    Ok(bytes) => bytes,
                    Err(e) if e.rule.as_deref() == Some("secret_content") => {
                        found.skipped_secret += 1;
                        continue;
                    }
                    Err(_) => {
                        found.skipped_large += 1;
                        continue;
                    }
                };
                if bytes[..bytes.len().min(BINARY_PROBE_BYTES)].contains(&0) {
                    found.skipped_binary += 1;
                    continue;
                }
                if search_file(&matcher, &rel, &bytes, &mut found) {
                    break;
                }
            }
            Ok(found)
        })
        .await?;
        Ok(ToolOutput { content: render(&query, found), ..ToolOutput::default() })
    }
}

/// Adds the matching lines of one file; true when the match limit was passed.
fn search_file(matcher: &regex::bytes::Regex, rel: &str, bytes: &[u8], found: &mut Findings) -> bool {
    for (index, line) in bytes.split(|b| *b == b'\n').enumerate() {
        if !matcher.is_match(line) {
            continue;
        }
        if found.lines.len() == MAX_SEARCH_MATCHES {
            found.more = true;
            return true;
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let text = String::from_utf8_lossy(line);
        let shown: String = text.chars().take(MAX_MATCH_LINE_CHARS).collect();
        let ellipsis = if shown.len() < text.len() { " …" } else { "" };
        found.lines.push(format!("{rel}:{}: {shown}{ellipsis}", index + 1));
    }
    false
}

fn render(query: &str, found: Findings) -> String {
    let mut out = if found.lines.is_empty() { format!("no matches for `{query}`") } else { found.lines.join("\n") };
    if found.more {
        out.push_str(&format!(
            "\n[only the first {MAX_SEARCH_MATCHES} matches are shown; more were cut — narrow the query or the path]"
        ));
    }
    if found.skipped_secret > 0 {
        out.push_str(&format!("\n[skipped {} file(s) holding a private key]", found.skipped_secret));
    }
    if found.skipped_binary + found.skipped_large > 0 {
        out.push_str(&format!(
            "\n[skipped {} binary file(s) and {} unreadable or larger than {MAX_FILE_BYTES} bytes]",
            found.skipped_binary, found.skipped_large
        ));
    }
    out
}
