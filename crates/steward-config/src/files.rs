//! Reading configuration files: finding them, parsing and checking each against the schema
//! (errors name the file and line), and noting where each entry came from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{ConfigError, RawConfig, RawLimits};

/// The `*.toml` files of `dir`, sorted; none when `dir` does not exist.
pub(super) fn toml_files(dir: &Path) -> Result<Vec<PathBuf>, ConfigError> {
    let mut files = Vec::new();
    collect_toml(dir, 0, &mut files)?;
    files.sort();
    Ok(files)
}

/// The `*.toml` files below `dir` (`**/*.toml`), not following symbolic links, at most 8
/// folders deep.
fn collect_toml(dir: &Path, depth: usize, files: &mut Vec<PathBuf>) -> Result<(), ConfigError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && depth == 0 => return Ok(()),
        Err(e) => return Err(ConfigError::Io { path: dir.to_path_buf(), message: e.to_string() }),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() && depth < 8 {
            collect_toml(&path, depth + 1, files)?;
        } else if kind.is_file() && path.extension().is_some_and(|x| x == "toml") {
            files.push(path);
        }
    }
    Ok(())
}

/// Records which file each entry of `table` came from: `section.key` for plain settings,
/// `providers.NAME`, and `tool.NAME` / `hook.NAME` / `tool_call_chain.NAME` /
/// `policy.rule.NAME` for named entries. Later files overwrite earlier ones.
pub(super) fn note_sources(sources: &mut BTreeMap<String, PathBuf>, path: &Path, table: &toml::Table) {
    for (section, value) in table {
        match value {
            toml::Value::Table(inner) => {
                for (key, item) in inner {
                    if section == "policy" && key == "rule" {
                        for rule in item.as_array().into_iter().flatten() {
                            if let Some(name) = rule.get("name").and_then(|n| n.as_str()) {
                                sources.insert(format!("policy.rule.{name}"), path.to_path_buf());
                            }
                        }
                    } else {
                        sources.insert(format!("{section}.{key}"), path.to_path_buf());
                    }
                }
            }
            toml::Value::Array(items) => {
                for item in items {
                    if let Some(name) = item.get("name").and_then(|n| n.as_str()) {
                        sources.insert(format!("{section}.{name}"), path.to_path_buf());
                    }
                }
            }
            _ => {
                sources.insert(section.clone(), path.to_path_buf());
            }
        }
    }
}

/// A file's table and the names of its `[[tool]]`s with their lines.
pub(super) fn read_file(path: &Path) -> Result<(toml::Table, Vec<(String, usize)>), ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::Io { path: path.to_path_buf(), message: e.to_string() })?;
    let table = parse_file(path, &text)?;
    let names = spans(&text).tool.into_iter().map(|t| (t.name.get_ref().clone(), line_of(&text, t.name.span().start)));
    Ok((table, names.collect()))
}

/// Records the `[[tool]]` names of `path`; a name already defined (in any file that counts)
/// is an error naming this file and line and the first definition.
pub(super) fn claim_tool_names(
    seen: &mut BTreeMap<String, (PathBuf, usize)>,
    path: &Path,
    names: Vec<(String, usize)>,
) -> Result<(), ConfigError> {
    for (name, line) in names {
        if let Some((first, first_line)) = seen.get(&name) {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                line,
                message: format!("duplicate tool name `{name}` (first defined at {}:{first_line})", first.display()),
            });
        }
        seen.insert(name, (path.to_path_buf(), line));
    }
    Ok(())
}
/// Parses one file and checks it against the schema, naming the line of the first error.
fn parse_file(path: &Path, text: &str) -> Result<toml::Table, ConfigError> {
    let invalid = |e: toml::de::Error| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: e.span().map(|s| line_of(text, s.start)).unwrap_or(0),
        message: e.message().trim().to_string(),
    };
    let table: toml::Table = toml::from_str(text).map_err(invalid)?;
    let checked: RawConfig = toml::from_str(text).map_err(invalid)?;
    if let Some(limits) = &checked.limits
        && let Err((key, message)) = check_limits(limits)
    {
        let line = text.find(key).map(|at| line_of(text, at)).unwrap_or(0);
        return Err(ConfigError::Invalid { path: path.to_path_buf(), line, message });
    }
    if let Some(roles) = &checked.roles
        && let Err((key, message)) = roles.check()
    {
        let line = role_key_line(text, &key).unwrap_or(0);
        return Err(ConfigError::Invalid { path: path.to_path_buf(), line, message });
    }
    check_tools_and_filters(path, text, &checked)?;
    Ok(table)
}

/// Where the `[[tool]]` and `[[output_filter]]` entries of one file are (for error lines).
#[derive(Deserialize, Default)]
struct Spans {
    #[serde(default)]
    tool: Vec<ToolSpan>,
    #[serde(default)]
    output_filter: Vec<FilterSpan>,
}

#[derive(Deserialize)]
struct ToolSpan {
    name: toml::Spanned<String>,
    #[serde(default)]
    input: Vec<InputSpan>,
}

#[derive(Deserialize)]
struct InputSpan {
    name: toml::Spanned<String>,
}

#[derive(Deserialize)]
struct FilterSpan {
    #[serde(default)]
    tool: Option<toml::Spanned<String>>,
    pattern: toml::Spanned<String>,
}

fn spans(text: &str) -> Spans {
    toml::from_str(text).unwrap_or_default()
}

/// Validates each `[[tool]]` and `[[output_filter]]` of one file; an error names the line of
/// the tool's (or the offending input's) `name`, or of the filter's `pattern`/`tool`.
fn check_tools_and_filters(path: &Path, text: &str, checked: &RawConfig) -> Result<(), ConfigError> {
    let spans = spans(text);
    let invalid = |span: Option<std::ops::Range<usize>>, message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: span.map(|s| line_of(text, s.start)).unwrap_or(0),
        message,
    };
    for (index, tool) in checked.tools.iter().enumerate() {
        if let Err(err) = tool.validate() {
            let at = spans.tool.get(index);
            let span = match (at, err.input) {
                (Some(t), Some(i)) => t.input.get(i).map(|i| i.name.span()).or(Some(t.name.span())),
                (Some(t), None) => Some(t.name.span()),
                (None, _) => None,
            };
            return Err(invalid(span, err.to_string()));
        }
    }
    for (index, filter) in checked.output_filters.iter().enumerate() {
        if let Err((key, message)) = filter.validate() {
            let at = spans.output_filter.get(index);
            let span = match key {
                "tool" => at.and_then(|f| f.tool.as_ref()).map(|t| t.span()),
                _ => at.map(|f| f.pattern.span()),
            };
            return Err(invalid(span, message));
        }
    }
    Ok(())
}

/// The line of the `roles.ROLE.KEY` value in `text` (`key` is that dotted name).
fn role_key_line(text: &str, key: &str) -> Option<usize> {
    #[derive(Deserialize)]
    struct File {
        roles: BTreeMap<String, BTreeMap<String, toml::Spanned<toml::Value>>>,
    }
    let mut parts = key.split('.').skip(1);
    let (role, field) = (parts.next()?, parts.next()?);
    let file: File = toml::from_str(text).ok()?;
    let span = file.roles.get(role)?.get(field)?.span();
    Some(line_of(text, span.start))
}

/// Lower bounds of the limits: `(key, message)` of the first one broken.
pub(super) fn check_limits(l: &RawLimits) -> Result<(), (&'static str, String)> {
    if l.max_rounds == Some(0) {
        return Err(("max_rounds", "limits.max_rounds must be at least 1".into()));
    }
    if l.max_tool_output_chars.is_some_and(|n| n < 400) {
        return Err(("max_tool_output_chars", "limits.max_tool_output_chars must be at least 400 characters".into()));
    }
    if l.max_repeated_calls == Some(0) {
        return Err(("max_repeated_calls", "limits.max_repeated_calls must be at least 1".into()));
    }
    if l.max_tool_calls_per_run == Some(0) {
        return Err(("max_tool_calls_per_run", "limits.max_tool_calls_per_run must be at least 1".into()));
    }
    if let Some((role, _)) = l.max_tool_calls_per_role.iter().find(|(_, n)| **n == 0) {
        return Err((
            "max_tool_calls_per_role",
            format!("limits.max_tool_calls_per_role.{} must be at least 1", role.as_str()),
        ));
    }
    Ok(())
}

fn line_of(text: &str, byte: usize) -> usize {
    text.get(..byte).map(|head| head.matches('\n').count() + 1).unwrap_or(0)
}
