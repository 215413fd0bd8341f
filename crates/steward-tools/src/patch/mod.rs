//! Transactional multi-file patches (SPEC X1–X3; cases B15, B16, B18, B19): `propose_patch`
//! shows a change without writing, `apply_patch` writes all of its files or none.
//!
//! Both take either `patch` (a unified diff, see [`parse`]) or `changes`
//! (`[{path, before, after}]`, whole-file texts; `before: null` creates, `after: null`
//! deletes). Everything is validated in `preview` (before approval) and again in `run`:
//! - every path resolves through [`Workspace::resolve`](steward_policy::Workspace::resolve)
//!   with write access (inside the workspace, not secret, not ignored or denied, no symbolic
//!   link as the final component) — the gate only sees top-level path arguments, so the tool
//!   checks each path in the patch itself, with the same rule names;
//! - at most [`MAX_FILES`] files, each at most [`MAX_FILE_BYTES`] bytes before and after;
//! - no binary content: a file or new content holding a NUL byte is refused (rule
//!   `binary_file`), in both forms — binary files are out of scope for patches;
//! - no hard-linked target (`nlink > 1`, rule `hard_link`): writing it would change the
//!   other names too;
//! - new files only with an extension in [`NEW_FILE_EXTENSIONS`] or a name in
//!   [`NEW_FILE_NAMES`] (rule `new_file_extension`);
//! - deletions are allowed (the policy asks before any write) and shown as `+++ /dev/null`
//!   diffs; a diff deleting a file must remove all of its lines;
//! - `changes[].before` must equal the current text (BOM aside, CRLF/LF-insensitively), else
//!   rule `stale` with a diff from `before` to the current content and its SHA-256; such
//!   whole-file changes need UTF-8 files (else rule `not_utf8`, naming the first bad byte
//!   and its offset), while diff hunks apply byte-faithfully to any encoding ([`apply`]);
//! - `apply_patch`'s optional `expected_sha256` (from `propose_patch`) must equal each named
//!   file's current SHA-256, else rule `stale` with the fresh hashes and the diff the patch
//!   would make now — the model can re-propose once; the tool never retries by itself.
//!
//! Writing is atomic across files ([`commit`]) and registers a
//! [`Compensation::RestorePatch`].

mod apply;
mod commit;
mod diff;
mod parse;

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use steward_policy::{Access, WorkspacePath};
use steward_protocol::{RiskLevel, ToolSpec};

use super::shared::{io_error, opt_str, read_regular_file, spec};
use super::{Tool, ToolContext, ToolError, ToolOutput};
use crate::rollback::{Compensation, sha256_hex};
use diff::{diff_text, render_diff};

/// Largest file a patch reads or writes, in bytes (10 MiB).
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Most files one patch may touch.
pub const MAX_FILES: usize = 64;

/// Extensions (lowercase, without the dot) a patch may create new files with: source code,
/// markup, configuration and plain text. Anything else (executables, archives, images,
/// `.so`, `.pem` …) must be created some other way.
pub const NEW_FILE_EXTENSIONS: &[&str] = &[
    "c", "cc", "cfg", "cjs", "clj", "cmake", "conf", "cpp", "cs", "css", "csv", "cxx", "dart", "ex", "exs", "go",
    "gradle", "graphql", "h", "hpp", "hs", "html", "ini", "java", "jl", "js", "json", "jsx", "kt", "kts", "lua", "md",
    "mjs", "ml", "mli", "php", "pl", "proto", "py", "pyi", "r", "rb", "rs", "rst", "sass", "scala", "scss", "sh",
    "sql", "svelte", "swift", "tex", "toml", "ts", "tsx", "txt", "vue", "xml", "yaml", "yml", "zig",
];

/// Extension-less file names a patch may create.
pub const NEW_FILE_NAMES: &[&str] = &["Dockerfile", "Makefile", "Justfile", "LICENSE", "README", "CHANGELOG"];

/// The patch tools: `propose_patch` and `apply_patch`.
pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(PatchTool::propose()), Arc::new(PatchTool::apply())]
}

/// One validated file change.
pub(super) struct Target {
    /// The resolved path.
    pub path: WorkspacePath,
    /// Current content; `None` when the file does not exist (the change creates it).
    pub before: Option<Vec<u8>>,
    /// New content; `None` when the change deletes the file.
    pub after: Option<Vec<u8>>,
}

/// `propose_patch` (`writes == false`) or `apply_patch` (`writes == true`).
pub struct PatchTool {
    spec: ToolSpec,
}

impl PatchTool {
    /// `propose_patch`: risk `low`, writes nothing; returns the diff and each existing
    /// target's SHA-256 (`expected_sha256: {path: hex}`).
    pub fn propose() -> Self {
        let spec = spec(
            "propose_patch",
            "Show what a patch would change, without writing anything. Give either `patch` (a unified diff, one or more files) or `changes` (whole-file before/after texts). Returns the diff and the SHA-256 of each file's current content, to pass to `apply_patch` as `expected_sha256`.",
            input_properties(false),
            &[],
            RiskLevel::Low,
            false,
            &[],
        );
        PatchTool { spec }
    }

    /// `apply_patch`: risk `medium`, writes all files or none, compensable.
    pub fn apply() -> Self {
        let spec = spec(
            "apply_patch",
            "Apply a patch to one or more workspace files, all or nothing. Give either `patch` (a unified diff: `--- a/PATH`, `+++ b/PATH`, `@@ -L,N +L,N @@` hunks; `/dev/null` to create or delete; `@@ some line` inserts after that line) or `changes` (whole-file texts; `before` must equal the current file). Hunks must match the file exactly (line endings aside).",
            input_properties(true),
            &[],
            RiskLevel::Medium,
            true,
            &[],
        );
        PatchTool { spec }
    }

    fn writes(&self) -> bool {
        self.spec.writes
    }
}

fn input_properties(with_expected: bool) -> Value {
    let mut properties = json!({
        "patch": {
            "type": ["string", "null"],
            "description": "A unified diff. File headers `--- a/PATH` and `+++ b/PATH` (`/dev/null` for a new or deleted file); hunks `@@ -OLD_LINE,COUNT +NEW_LINE,COUNT @@` with ` ` context, `-` removed and `+` added lines. A hunk headed `@@ TEXT` instead inserts its `+` lines right after the one line reading TEXT. Null when `changes` is given."
        },
        "changes": {
            "type": ["array", "null"],
            "maxItems": MAX_FILES,
            "description": "Whole-file changes, instead of `patch`. Null when `patch` is given.",
            "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Workspace-relative path."},
                    "before": {"type": ["string", "null"], "description": "The file's current text (must match it exactly, line endings aside); null to create a new file."},
                    "after": {"type": ["string", "null"], "description": "The new text; null to delete the file."}
                },
                "required": ["path", "before", "after"],
                "additionalProperties": false
            }
        }
    });
    if with_expected {
        properties["expected_sha256"] = json!({
            "type": ["object", "null"],
            "description": "Optional: {path: SHA-256 hex} from `propose_patch`; a file whose content changed since is refused as stale.",
            "additionalProperties": {"type": "string", "pattern": "^[0-9a-f]{64}$"}
        });
    }
    properties
}

#[async_trait]
impl Tool for PatchTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn pure_read(&self) -> bool {
        !self.writes()
    }

    /// The files of a `changes` list or of the diff's headers.
    fn target_paths(&self, args: &Value, _workspace: &steward_policy::Workspace) -> Vec<String> {
        if let Some(changes) = args.get("changes").and_then(Value::as_array) {
            return changes.iter().filter_map(|c| c.get("path").and_then(Value::as_str).map(str::to_string)).collect();
        }
        match args.get("patch").and_then(Value::as_str).map(parse::parse) {
            Some(Ok(files)) => files.iter().map(|f| f.path().to_string()).collect(),
            _ => Vec::new(),
        }
    }

    /// `delete` when a change removes a file, `create` when one adds a file, `edit` otherwise.
    fn implied_actions(&self, args: &Value) -> Vec<String> {
        let mut actions = std::collections::BTreeSet::new();
        if let Some(changes) = args.get("changes").and_then(Value::as_array) {
            for change in changes {
                let before = change.get("before").is_some_and(|v| !v.is_null());
                let after = change.get("after").is_some_and(|v| !v.is_null());
                actions.insert(match (before, after) {
                    (true, false) => "delete",
                    (false, true) => "create",
                    _ => "edit",
                });
            }
        } else if let Some(Ok(files)) = args.get("patch").and_then(Value::as_str).map(parse::parse) {
            for file in files {
                actions.insert(match (&file.old, &file.new) {
                    (Some(_), None) => "delete",
                    (None, Some(_)) => "create",
                    _ => "edit",
                });
            }
        }
        actions.into_iter().map(str::to_string).collect()
    }

    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Result<Option<(String, String)>, ToolError> {
        let targets = self.validate(args, ctx)?;
        Ok(Some((first_path(&targets), render_diff(&targets))))
    }

    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let targets = self.validate(args, ctx)?;
        let diff = render_diff(&targets);
        if !self.writes() {
            let hashes: BTreeMap<&str, String> = targets
                .iter()
                .filter_map(|t| t.before.as_deref().map(|b| (t.path.rel.as_str(), sha256_hex(b))))
                .collect();
            let hashes = serde_json::to_string(&hashes).unwrap_or_default();
            return Ok(ToolOutput {
                content: format!("proposed (nothing written)\n{diff}\nexpected_sha256: {hashes}"),
                ..ToolOutput::default()
            });
        }
        let files = commit::commit(&targets, ctx)?;
        let summary: Vec<String> = targets
            .iter()
            .map(|t| {
                let kind = match (&t.before, &t.after) {
                    (None, _) => "created",
                    (_, None) => "deleted",
                    _ => "changed",
                };
                format!("`{}` ({kind})", t.path.rel)
            })
            .collect();
        Ok(ToolOutput {
            content: format!("applied patch: {}\n{diff}", summary.join(", ")),
            changes: targets.iter().map(|t| (t.path.rel.clone(), render_diff(std::slice::from_ref(t)))).collect(),
            sandbox: String::new(),
            full_content: None,
            compensation: Some(Compensation::RestorePatch { files }),
            quoted_paths: Vec::new(),
        })
    }

    fn compensable(&self) -> bool {
        self.writes()
    }
}

impl PatchTool {
    /// Every check of the module docs, against the files as they are now.
    fn validate(&self, args: &Value, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
        let expected = if self.writes() { expected_hashes(args, ctx)? } else { Vec::new() };
        let planned = plan(args, ctx);
        let stale: Vec<&Expected> = expected.iter().filter(|e| e.current != Some(e.wanted.clone())).collect();
        if !stale.is_empty() {
            return Err(stale_error(&stale, &planned));
        }
        let targets = planned?;
        if let Some(extra) = expected.iter().find(|e| !targets.iter().any(|t| t.path.rel == e.rel)) {
            return Err(invalid(format!("`expected_sha256` names `{}`, which the patch does not touch", extra.rel)));
        }
        Ok(targets)
    }
}

fn invalid(message: String) -> ToolError {
    ToolError::refused("invalid_arguments", message)
}

/// The refusal for a hard-linked target.
pub(super) fn hard_linked(rel: &str) -> ToolError {
    ToolError::refused(
        "hard_link",
        format!("`{rel}` has other hard links; writing it would change those files too, so it is not patched"),
    )
}

fn first_path(targets: &[Target]) -> String {
    targets.first().map(|t| t.path.rel.clone()).unwrap_or_default()
}

/// One `expected_sha256` entry and the file's current hash (`None`: no such file).
struct Expected {
    rel: String,
    wanted: String,
    current: Option<String>,
}

fn expected_hashes(args: &Value, ctx: &ToolContext) -> Result<Vec<Expected>, ToolError> {
    let map = match args.get("expected_sha256") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(invalid("`expected_sha256` must be an object {path: sha256}".into())),
    };
    let mut out = Vec::with_capacity(map.len());
    for (path, hash) in map {
        let wanted = hash
            .as_str()
            .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| invalid(format!("`expected_sha256` of `{path}` must be 64 hex digits")))?;
        let resolved = ctx.workspace.resolve(path, Access::Write)?;
        let current = read_existing(&resolved)?.map(|bytes| sha256_hex(&bytes));
        out.push(Expected { rel: resolved.rel, wanted: wanted.to_ascii_lowercase(), current });
    }
    Ok(out)
}

fn stale_error(stale: &[&Expected], planned: &Result<Vec<Target>, ToolError>) -> ToolError {
    let mut message = String::from("stale: changed since the proposal, nothing was written:");
    for e in stale {
        let now = e.current.as_deref().unwrap_or("(no such file)");
        message.push_str(&format!("\n- `{}`: sha256 was {}, now {now}", e.rel, e.wanted));
    }
    match planned {
        Ok(targets) => message.push_str(&format!(
            "\nAgainst the current content the patch would make this diff (pass the new hashes as `expected_sha256` to apply it as it is now, or send a new patch):\n{}",
            render_diff(targets)
        )),
        Err(err) => message.push_str(&format!("\nThe patch no longer applies to the current content: {}", err.message)),
    }
    ToolError::refused("stale", message)
}

/// Reads the file at `path` if there is one: `Ok(None)` when nothing is there. Refuses
/// hard links, files over the limit, binary content and (via the shared reader) symbolic
/// links, non-regular files and private keys.
fn read_existing(path: &WorkspacePath) -> Result<Option<Vec<u8>>, ToolError> {
    let meta = match fs::symlink_metadata(&path.abs) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error("inspect", &path.rel, &e)),
    };
    if meta.is_file() && meta.nlink() > 1 {
        return Err(hard_linked(&path.rel));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large(&path.rel, meta.len()));
    }
    let bytes = read_regular_file(&path.abs, &path.rel, MAX_FILE_BYTES)?;
    refuse_binary(&path.rel, &bytes)?;
    Ok(Some(bytes))
}

fn too_large(rel: &str, len: u64) -> ToolError {
    ToolError::refused(
        "too_large",
        format!("`{rel}` would be {len} bytes; patches handle files up to {MAX_FILE_BYTES} bytes"),
    )
}

fn refuse_binary(rel: &str, bytes: &[u8]) -> Result<(), ToolError> {
    // `contains` on bytes is memchr-fast; the offset is looked up only for the message.
    if !bytes.contains(&0) {
        return Ok(());
    }
    match bytes.iter().position(|b| *b == 0) {
        Some(offset) => Err(ToolError::refused(
            "binary_file",
            format!("`{rel}` is binary (NUL byte at offset {offset}); patches change text files only"),
        )),
        None => Ok(()),
    }
}

/// Refuses a new file whose name is not on the allow-lists.
fn check_new_name(rel: &str) -> Result<(), ToolError> {
    let name = Path::new(rel).file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let allowed = match Path::new(name).extension().and_then(|e| e.to_str()) {
        Some(ext) => NEW_FILE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()),
        None => NEW_FILE_NAMES.contains(&name),
    };
    if allowed {
        Ok(())
    } else {
        Err(ToolError::refused(
            "new_file_extension",
            format!(
                "`{rel}`: patches create only source and text files (allowed extensions: {})",
                NEW_FILE_EXTENSIONS.join(", ")
            ),
        ))
    }
}

/// Parses the arguments and computes every target's new content against the current files.
fn plan(args: &Value, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
    let patch = opt_str(args, "patch")?;
    let changes = match args.get("changes") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(items),
        Some(_) => return Err(invalid("`changes` must be an array".into())),
    };
    let targets = match (patch, changes) {
        (Some(patch), None) => plan_patch(patch, ctx)?,
        (None, Some(items)) => plan_changes(items, ctx)?,
        _ => return Err(invalid("give exactly one of `patch` and `changes`".into())),
    };
    for target in &targets {
        if let Some(after) = &target.after {
            if after.len() as u64 > MAX_FILE_BYTES {
                return Err(too_large(&target.path.rel, after.len() as u64));
            }
            refuse_binary(&target.path.rel, after)?;
        }
    }
    Ok(targets)
}

/// Resolves `path`, refuses duplicates and over-long patches, reads the current content.
fn open_target(
    path: &str,
    seen: &mut Vec<WorkspacePath>,
    ctx: &ToolContext,
) -> Result<(WorkspacePath, Option<Vec<u8>>), ToolError> {
    if seen.len() >= MAX_FILES {
        return Err(ToolError::refused("too_large", format!("a patch may touch at most {MAX_FILES} files")));
    }
    let resolved = ctx.workspace.resolve(path, Access::Write)?;
    if resolved.rel.is_empty() || seen.iter().any(|p| p.abs == resolved.abs) {
        return Err(invalid(format!("`{path}` is not a file path, or appears twice in the patch")));
    }
    seen.push(resolved.clone());
    let before = read_existing(&resolved)?;
    Ok((resolved, before))
}

fn plan_patch(patch: &str, ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
    let mut seen = Vec::new();
    let mut targets = Vec::new();
    for file in parse::parse(patch)? {
        let (path, before) = open_target(file.path(), &mut seen, ctx)?;
        let rel = path.rel.clone();
        let (before, after) = match (file.old.is_some(), file.new.is_some(), before) {
            (false, _, Some(_)) => {
                return Err(ToolError::refused(
                    "file_exists",
                    format!("`{rel}` already exists; the patch would create it"),
                ));
            }
            (false, _, None) => {
                check_new_name(&rel)?;
                let after =
                    if file.hunks.is_empty() { Vec::new() } else { apply::apply_hunks(b"", &file.hunks, &rel)? };
                (None, Some(after))
            }
            (true, _, None) => return Err(ToolError::failed(format!("`{rel}` does not exist; nothing to patch"))),
            (true, new, Some(current)) => {
                if file.hunks.is_empty() && (new || !current.is_empty()) {
                    return Err(ToolError::refused("invalid_patch", format!("the patch has no hunks for `{rel}`")));
                }
                let after = apply::apply_hunks(&current, &file.hunks, &rel)?;
                if !new && !after.is_empty() {
                    return Err(ToolError::refused(
                        "invalid_patch",
                        format!("the patch deletes `{rel}` but its hunks do not remove every line of it"),
                    ));
                }
                (Some(current), new.then_some(after))
            }
        };
        targets.push(Target { path, before, after });
    }
    Ok(targets)
}

fn plan_changes(items: &[Value], ctx: &ToolContext) -> Result<Vec<Target>, ToolError> {
    if items.is_empty() {
        return Err(invalid("`changes` is empty".into()));
    }
    let mut seen = Vec::new();
    let mut targets = Vec::new();
    for item in items {
        let path = item
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("each change needs a string `path`".into()))?;
        let text = |key: &str| match item.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(invalid(format!("`{key}` of `{path}` must be a string or null"))),
        };
        let (want_before, want_after) = (text("before")?, text("after")?);
        let (path, current) = open_target(path, &mut seen, ctx)?;
        let rel = path.rel.clone();
        let target = match (want_before, want_after, current) {
            (None, None, _) => return Err(invalid(format!("`{rel}`: `before` and `after` cannot both be null"))),
            (None, Some(_), Some(_)) => {
                return Err(ToolError::refused(
                    "file_exists",
                    format!("`{rel}` already exists; give its current text as `before`"),
                ));
            }
            (None, Some(after), None) => {
                check_new_name(&rel)?;
                Target { path, before: None, after: Some(after.as_bytes().to_vec()) }
            }
            (Some(_), _, None) => {
                return Err(ToolError::refused("stale", format!("stale: `{rel}` does not exist (any more)")));
            }
            (Some(before), after, Some(current)) => {
                let new = whole_file(&rel, &current, before, after.unwrap_or_default())?;
                Target { path, before: Some(current), after: after.map(|_| new) }
            }
        };
        targets.push(target);
    }
    Ok(targets)
}

/// The new bytes of a whole-file change, after checking `before` against `current`: equal
/// as given, or equal once CRLF is read as LF — then `after` takes the file's dominant line
/// ending. A BOM stays. Errors: `not_utf8`, `stale`.
fn whole_file(rel: &str, current: &[u8], before: &str, after: &str) -> Result<Vec<u8>, ToolError> {
    const BOM: &str = "\u{feff}";
    let has_bom = current.starts_with(BOM.as_bytes());
    let body = if has_bom { &current[BOM.len()..] } else { current };
    let text = std::str::from_utf8(body).map_err(|e| {
        let offset = e.valid_up_to() + if has_bom { BOM.len() } else { 0 };
        ToolError::refused(
            "not_utf8",
            format!(
                "`{rel}`: file is not valid UTF-8 (byte 0x{:02X} at offset {offset}); whole-file `changes` need UTF-8 text — send a unified diff instead, which keeps every other byte as it is",
                current[offset]
            ),
        )
    })?;
    let (before, after) = (before.strip_prefix(BOM).unwrap_or(before), after.strip_prefix(BOM).unwrap_or(after));
    let new_text = if before == text {
        after.to_string()
    } else if before.replace("\r\n", "\n") == text.replace("\r\n", "\n") {
        let lf = after.replace("\r\n", "\n");
        let crlf_lines = text.matches("\r\n").count();
        if crlf_lines * 2 > text.matches('\n').count() { lf.replace('\n', "\r\n") } else { lf }
    } else {
        return Err(ToolError::refused(
            "stale",
            format!(
                "stale: `{rel}` no longer holds the `before` text (current sha256 {}); nothing was written. Diff from your `before` to the current content:\n{}",
                sha256_hex(current),
                diff_text(&format!("a/{rel}"), &format!("b/{rel}"), before.as_bytes(), text.as_bytes())
            ),
        ));
    };
    let mut bytes = Vec::with_capacity(new_text.len() + 3);
    if has_bom {
        bytes.extend_from_slice(BOM.as_bytes());
    }
    bytes.extend_from_slice(new_text.as_bytes());
    Ok(bytes)
}
