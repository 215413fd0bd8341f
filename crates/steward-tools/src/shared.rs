//! The small argument, diff and filesystem helpers every built-in tool shares.

use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};
use steward_protocol::{RiskLevel, ToolSpec};

use super::ToolError;

/// Largest file, in bytes, that `read`, `edit` and `delete` (for its diff) load: 2 MiB.
pub const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// Builds a [`ToolSpec`] whose schema is a strict object: `additionalProperties: false`, every
/// property described, `required` listing the mandatory ones. Optional properties should be
/// declared nullable (`"type": ["string", "null"]`) so a strict-mode renderer (SPEC T10) may
/// list them all as required; the tools treat `null` like an absent argument.
pub(super) fn spec(
    name: &str,
    description: &str,
    properties: Value,
    required: &[&str],
    risk: RiskLevel,
    writes: bool,
    path_inputs: &[&str],
) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        input_schema: json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }),
        risk,
        writes,
        path_inputs: path_inputs.iter().map(|p| p.to_string()).collect(),
        untrusted_output: false,
    }
}

pub(super) fn invalid(message: String) -> ToolError {
    ToolError::refused("invalid_arguments", message)
}

/// A required string argument. Errors (rule `invalid_arguments`) when missing or not a string.
pub(super) fn str_arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    opt_str(args, name)?.ok_or_else(|| invalid(format!("missing required string argument `{name}`")))
}

/// An optional string argument; `null` counts as absent.
pub(super) fn opt_str<'a>(args: &'a Value, name: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(invalid(format!("argument `{name}` must be a string"))),
    }
}

/// An optional boolean argument; `null` counts as absent.
pub(super) fn opt_bool(args: &Value, name: &str) -> Result<Option<bool>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(invalid(format!("argument `{name}` must be true or false"))),
    }
}

/// An optional non-negative integer argument; `null` counts as absent.
pub(super) fn opt_u64(args: &Value, name: &str) -> Result<Option<u64>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            v.as_u64().map(Some).ok_or_else(|| invalid(format!("argument `{name}` must be a non-negative integer")))
        }
    }
}

/// An I/O failure on a workspace path, named by its relative path (never the content).
pub(super) fn io_error(action: &str, rel: &str, err: &io::Error) -> ToolError {
    ToolError::failed(format!("cannot {action} `{rel}`: {err}"))
}

/// A unified diff (3 lines of context) from `before` to `after`, headed `a/<rel>` and
/// `b/<rel>`. Bytes that are not UTF-8 are shown as U+FFFD in the diff only; files are never
/// written from this text.
pub(super) fn unified_diff(rel: &str, before: &[u8], after: &[u8]) -> String {
    let before = String::from_utf8_lossy(before);
    let after = String::from_utf8_lossy(after);
    similar::TextDiff::from_lines(before.as_ref(), after.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{rel}"), &format!("b/{rel}"))
        .to_string()
}

/// Creates the missing parent directories of `rel` below `root`, one component at a time,
/// refusing any existing component that is not a real directory (a symbolic link included).
/// Returns the directories it created, outermost first.
pub(super) fn make_parents(root: &Path, rel: &str) -> Result<Vec<PathBuf>, ToolError> {
    let mut dir = root.to_path_buf();
    let mut created = Vec::new();
    let Some(parent) = Path::new(rel).parent() else { return Ok(created) };
    for component in parent.components() {
        let Component::Normal(name) = component else {
            return Err(ToolError::refused("invalid_path", format!("`{rel}` is not a plain relative path")));
        };
        dir.push(name);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(ToolError::refused(
                    "not_regular_file",
                    format!("a parent of `{rel}` exists and is not a directory (or is a symbolic link)"),
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => match fs::create_dir(&dir) {
                Ok(()) => created.push(dir.clone()),
                Err(e)
                    if e.kind() == io::ErrorKind::AlreadyExists
                        && fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) => {}
                Err(e) => return Err(io_error("create a parent directory of", rel, &e)),
            },
            Err(e) => return Err(io_error("inspect a parent directory of", rel, &e)),
        }
    }
    Ok(created)
}

/// Reads a regular file of at most `limit` bytes without following a symbolic link at the
/// final component: the file is `lstat`ed, opened, and refused unless the opened file is the
/// same inode. Errors: a link or a non-regular file (`not_regular_file`), a file over `limit`
/// bytes, or an I/O error.
pub(super) fn read_regular_file(abs: &Path, rel: &str, limit: u64) -> Result<Vec<u8>, ToolError> {
    let seen = fs::symlink_metadata(abs).map_err(|e| io_error("read", rel, &e))?;
    if seen.file_type().is_symlink() {
        return Err(ToolError::refused("not_regular_file", format!("`{rel}` is a symbolic link")));
    }
    if seen.is_dir() {
        return Err(ToolError::refused("not_regular_file", format!("`{rel}` is a directory, not a file")));
    }
    if !seen.is_file() {
        return Err(ToolError::refused("not_regular_file", format!("`{rel}` is not a regular file")));
    }
    if seen.len() > limit {
        return Err(ToolError::failed(format!("`{rel}` is {} bytes; at most {limit} bytes are read", seen.len())));
    }
    let file = File::open(abs).map_err(|e| io_error("read", rel, &e))?;
    let opened = file.metadata().map_err(|e| io_error("read", rel, &e))?;
    if (opened.dev(), opened.ino()) != (seen.dev(), seen.ino()) {
        return Err(ToolError::refused("not_regular_file", format!("`{rel}` changed while it was opened")));
    }
    let mut bytes = Vec::with_capacity(opened.len() as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| io_error("read", rel, &e))?;
    if bytes.len() as u64 > limit {
        return Err(ToolError::failed(format!("`{rel}` grew past {limit} bytes while it was read")));
    }
    if holds_private_key(&bytes) {
        return Err(ToolError::refused(
            "secret_content",
            format!("`{rel}` contains a private key block; whatever its name, it is treated as a secret file"),
        ));
    }
    Ok(bytes)
}

/// True when a line of `bytes` starts (after indentation) with a PEM private-key header
/// (`-----BEGIN … PRIVATE KEY-----`: RSA, EC, OpenSSH, encrypted PKCS#8 …). Such a file is a
/// secret whatever its name: reading a range of its lines or searching it would show the key
/// body without the header a redactor needs. A header inside a string literal of source code
/// (not at the start of its line) does not count.
pub(super) fn holds_private_key(bytes: &[u8]) -> bool {
    bytes.split(|b| *b == b'\n').any(|line| {
        let line = line.trim_ascii_start();
        line.starts_with(b"-----BEGIN ") && line.trim_ascii_end().ends_with(b"PRIVATE KEY-----")
    })
}
