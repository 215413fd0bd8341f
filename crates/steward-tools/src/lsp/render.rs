//! What the `lsp_*` tools show the model: places as workspace-relative `path:line:column`
//! with the line's text (only where `read` could show the file), hover text, outlines and
//! diagnostics, each list capped at [`MAX_LSP_ITEMS`].

use std::collections::HashMap;

use lsp_types::{
    Diagnostic, DiagnosticSeverity, DocumentSymbol, DocumentSymbolResponse, HoverContents, MarkedString, OneOf,
    Position, SymbolKind, Url, WorkspaceSymbolResponse,
};

use super::{MAX_LSP_ITEMS, MAX_SNIPPET_CHARS, read_text};
use crate::ToolContext;
use crate::lsp::client::text::{from_lsp, line_snippet};

/// Longest hover text shown, in characters.
const MAX_HOVER_CHARS: usize = 4_000;

/// Renders places, reading each workspace file once.
pub(super) struct Snippets<'a> {
    ctx: &'a ToolContext,
    /// Workspace-relative path → its text, or why it is not shown.
    cache: HashMap<String, Result<String, String>>,
}

impl<'a> Snippets<'a> {
    pub(super) fn new(ctx: &'a ToolContext) -> Self {
        Snippets { ctx, cache: HashMap::new() }
    }

    /// `path:line:column: text` for a place in the workspace; `path:line (not shown: why)`
    /// when `read` would refuse the file; only the file's name for a place outside.
    fn place(&mut self, uri: &Url, pos: Position) -> (String, u32, u32, String) {
        let Ok(abs) = uri.to_file_path() else {
            return (String::new(), pos.line + 1, 0, format!("{} (not a file)", uri.scheme()));
        };
        let root = self.ctx.workspace.root();
        let Ok(rel) = abs.strip_prefix(root) else {
            let name = abs.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            return (format!("~{name}"), pos.line + 1, 0, format!("outside the workspace: {name}:{}", pos.line + 1));
        };
        let rel = rel.to_string_lossy().to_string();
        let ctx = self.ctx;
        let text = self
            .cache
            .entry(rel.clone())
            .or_insert_with(|| read_text(ctx, &rel).map(|(_, text)| text).map_err(|e| e.rule.unwrap_or(e.message)));
        match text {
            Ok(text) => {
                let (line, column) = from_lsp(text, pos);
                let snippet = line_snippet(text, line, MAX_SNIPPET_CHARS).unwrap_or_default();
                (rel.clone(), line, column, format!("{rel}:{line}:{column}: {snippet}"))
            }
            Err(why) => {
                let line = pos.line + 1;
                (rel.clone(), line, 0, format!("{rel}:{line} (not shown: {why})"))
            }
        }
    }

    /// `N <noun>s <of>` (`4 references to `helper` at app.py:6:13`) and one place a line
    /// (sorted, duplicates dropped).
    pub(super) fn list(&mut self, places: &[(Url, Position)], noun: &str, of: &str, server: &str) -> String {
        let mut rows: Vec<(String, u32, u32, String)> = places.iter().map(|(uri, pos)| self.place(uri, *pos)).collect();
        rows.sort();
        rows.dedup();
        if rows.is_empty() {
            return format!("no {noun} {of} found by `{server}`");
        }
        let total = rows.len();
        let plural = if total == 1 { "" } else { "s" };
        let mut out = format!("{total} {noun}{plural} {of} ({server}):");
        for (_, _, _, row) in rows.iter().take(MAX_LSP_ITEMS) {
            out.push('\n');
            out.push_str(row);
        }
        if total > MAX_LSP_ITEMS {
            out.push_str(&format!("\n[{} more not shown]", total - MAX_LSP_ITEMS));
        }
        out
    }

    /// The workspace's symbols matching `query`: `kind name — place`.
    pub(super) fn workspace_symbols(
        &mut self,
        answer: Option<WorkspaceSymbolResponse>,
        query: &str,
        server: &str,
    ) -> String {
        let found: Vec<(String, SymbolKind, Url, Position)> = match answer {
            None => Vec::new(),
            Some(WorkspaceSymbolResponse::Flat(items)) => {
                items.into_iter().map(|s| (s.name, s.kind, s.location.uri, s.location.range.start)).collect()
            }
            Some(WorkspaceSymbolResponse::Nested(items)) => items
                .into_iter()
                .map(|s| match s.location {
                    OneOf::Left(location) => (s.name, s.kind, location.uri, location.range.start),
                    OneOf::Right(place) => (s.name, s.kind, place.uri, Position::new(0, 0)),
                })
                .collect(),
        };
        let mut rows: Vec<(String, u32, u32, String)> = found
            .into_iter()
            .map(|(name, kind, uri, pos)| {
                let (path, line, column, place) = self.place(&uri, pos);
                (path, line, column, format!("{} {name} — {place}", kind_name(kind)))
            })
            .collect();
        rows.sort();
        rows.dedup();
        if rows.is_empty() {
            return format!("no symbol matching `{query}` found by `{server}`");
        }
        let total = rows.len();
        let mut out = format!("{total} symbol(s) matching `{query}` ({server}):");
        for (_, _, _, row) in rows.iter().take(MAX_LSP_ITEMS) {
            out.push('\n');
            out.push_str(row);
        }
        if total > MAX_LSP_ITEMS {
            out.push_str(&format!("\n[{} more not shown]", total - MAX_LSP_ITEMS));
        }
        out
    }
}

/// A symbol kind in lower case (`function`, `class`, …).
fn kind_name(kind: SymbolKind) -> String {
    format!("{kind:?}").to_lowercase()
}

/// The hover's text (code blocks fenced), cut at 4,000 characters.
pub(super) fn hover_text(contents: &HoverContents) -> String {
    let marked = |m: &MarkedString| match m {
        MarkedString::String(text) => text.clone(),
        MarkedString::LanguageString(code) => format!("```{}\n{}\n```", code.language, code.value),
    };
    let text = match contents {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(items) => items.iter().map(marked).collect::<Vec<_>>().join("\n\n"),
        HoverContents::Markup(markup) => markup.value.clone(),
    };
    let text = text.trim().to_string();
    if text.chars().count() > MAX_HOVER_CHARS {
        format!(
            "{}\n[hover text cut at {MAX_HOVER_CHARS} characters]",
            text.chars().take(MAX_HOVER_CHARS).collect::<String>()
        )
    } else {
        text
    }
}

/// Where `name` (`Class.method` follows the nesting; a plain name matches at any depth) is
/// declared among a file's symbols.
pub(super) fn find_symbol(symbols: &DocumentSymbolResponse, name: &str) -> Option<Position> {
    let parts: Vec<&str> = name.split('.').collect();
    let last = parts.last().copied().unwrap_or(name);
    match symbols {
        DocumentSymbolResponse::Flat(items) => {
            let container = parts.len().checked_sub(2).map(|i| parts[i]);
            items
                .iter()
                .find(|s| s.name == last && container.is_none_or(|c| s.container_name.as_deref() == Some(c)))
                .map(|s| s.location.range.start)
        }
        DocumentSymbolResponse::Nested(items) => {
            fn walk(items: &[DocumentSymbol], parts: &[&str], anywhere: bool) -> Option<Position> {
                for item in items {
                    if item.name == parts[0] {
                        if parts.len() == 1 {
                            return Some(item.selection_range.start);
                        }
                        if let Some(found) = walk(item.children.as_deref().unwrap_or(&[]), &parts[1..], false) {
                            return Some(found);
                        }
                    }
                    if anywhere && let Some(found) = walk(item.children.as_deref().unwrap_or(&[]), parts, true) {
                        return Some(found);
                    }
                }
                None
            }
            walk(items, &parts, true)
        }
    }
}

/// A file's outline: one symbol a line, nested ones indented, `kind name line:column`; only
/// those whose name contains `query` (any case) when it is not empty.
pub(super) fn outline(
    rel: &str,
    text: &str,
    answer: Option<DocumentSymbolResponse>,
    query: &str,
    server: &str,
) -> String {
    let query = query.to_lowercase();
    let mut rows: Vec<String> = Vec::new();
    let keep = |name: &str| query.is_empty() || name.to_lowercase().contains(&query);
    match answer {
        None => {}
        Some(DocumentSymbolResponse::Flat(items)) => {
            for s in items.iter().filter(|s| keep(&s.name)) {
                let (line, column) = from_lsp(text, s.location.range.start);
                let container = s.container_name.as_deref().map(|c| format!(" (in {c})")).unwrap_or_default();
                rows.push(format!("{} {}{container} {line}:{column}", kind_name(s.kind), s.name));
            }
        }
        Some(DocumentSymbolResponse::Nested(items)) => {
            fn walk(
                items: &[DocumentSymbol],
                depth: usize,
                text: &str,
                keep: &dyn Fn(&str) -> bool,
                rows: &mut Vec<String>,
            ) {
                for s in items {
                    if keep(&s.name) {
                        let (line, column) = from_lsp(text, s.selection_range.start);
                        let detail =
                            s.detail.as_deref().filter(|d| !d.is_empty()).map(|d| format!(": {d}")).unwrap_or_default();
                        rows.push(format!(
                            "{}{} {}{detail} {line}:{column}",
                            "  ".repeat(depth),
                            kind_name(s.kind),
                            s.name
                        ));
                    }
                    walk(s.children.as_deref().unwrap_or(&[]), depth + 1, text, keep, rows);
                }
            }
            walk(&items, 0, text, &keep, &mut rows);
        }
    }
    if rows.is_empty() {
        let matching = if query.is_empty() { String::new() } else { format!(" matching `{query}`") };
        return format!("no symbols{matching} in `{rel}` ({server})");
    }
    let total = rows.len();
    let mut out = format!("{total} symbol(s) in `{rel}` ({server}):");
    for row in rows.iter().take(MAX_LSP_ITEMS) {
        out.push('\n');
        out.push_str(row);
    }
    if total > MAX_LSP_ITEMS {
        out.push_str(&format!("\n[{} more not shown]", total - MAX_LSP_ITEMS));
    }
    out
}

/// `N problem(s) in path (server):` and `path:line:column: severity: message [source code]`
/// lines, by position.
pub(super) fn diagnostics(rel: &str, text: &str, mut items: Vec<Diagnostic>, server: &str) -> String {
    if items.is_empty() {
        return format!("no problems reported in `{rel}` ({server})");
    }
    items.sort_by_key(|d| (d.range.start.line, d.range.start.character));
    let total = items.len();
    let mut out = format!("{total} problem(s) in `{rel}` ({server}):");
    for d in items.iter().take(MAX_LSP_ITEMS) {
        let (line, column) = from_lsp(text, d.range.start);
        let severity = match d.severity {
            Some(DiagnosticSeverity::ERROR) => "error",
            Some(DiagnosticSeverity::WARNING) => "warning",
            Some(DiagnosticSeverity::INFORMATION) => "information",
            Some(DiagnosticSeverity::HINT) => "hint",
            _ => "problem",
        };
        let code = match &d.code {
            Some(lsp_types::NumberOrString::Number(n)) => format!(" {n}"),
            Some(lsp_types::NumberOrString::String(s)) => format!(" {s}"),
            None => String::new(),
        };
        let source = d.source.as_deref().map(|s| format!(" [{s}{code}]")).unwrap_or_default();
        let message = d.message.replace('\n', " ");
        out.push_str(&format!("\n{rel}:{line}:{column}: {severity}: {message}{source}"));
    }
    if total > MAX_LSP_ITEMS {
        out.push_str(&format!("\n[{} more not shown]", total - MAX_LSP_ITEMS));
    }
    out
}
