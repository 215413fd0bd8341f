//! The language-server tools (SPEC T11): `lsp_definition`, `lsp_references`, `lsp_hover`,
//! `lsp_symbols` and `lsp_diagnostics`, offered when an `[[lsp]]` server serves files of the
//! workspace ([`crate::lsp::client`]).
//!
//! They only read, like `read`: every path the model names passes the same workspace checks
//! (secret, ignored and denied paths are refused), the documents the server is given are read
//! through them, and a location the server answers with is shown with a snippet only when
//! `read` could show that file (otherwise its path and line alone, or only the file name for
//! a place outside the workspace). Positions are 1-based lines and columns counted in
//! characters, or a symbol name the tool finds in the file.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lsp_types::request::{DocumentSymbolRequest, GotoDefinition, HoverRequest, References, WorkspaceSymbolRequest};
use lsp_types::{
    DocumentSymbolParams, GotoDefinitionParams, GotoDefinitionResponse, HoverParams, Location, PartialResultParams,
    Position, ReferenceContext, ReferenceParams, TextDocumentIdentifier, TextDocumentPositionParams, Url,
    WorkDoneProgressParams, WorkspaceSymbolParams,
};
use serde_json::{Value, json};
use steward_policy::{Access, WorkspacePath};
use steward_protocol::{RiskLevel, ToolSpec};

use super::shared::{MAX_FILE_BYTES, invalid, opt_bool, opt_str, opt_u64, read_regular_file, spec, str_arg};
use super::{Tool, ToolContext, ToolError, ToolOutput};
use crate::lsp::client::text::{find_word, from_lsp, to_lsp};
use crate::lsp::client::{Connection, LspError, LspManager};

pub mod client;
mod render;

/// Most locations or symbols listed in one result.
pub const MAX_LSP_ITEMS: usize = 100;
/// Longest snippet line, in characters.
const MAX_SNIPPET_CHARS: usize = 160;
/// Quiet time after a server's last diagnostics for a file before they count as complete.
const DIAGNOSTICS_SETTLE: Duration = Duration::from_millis(1_000);
/// Longest wait for diagnostics.
const MAX_DIAGNOSTICS_WAIT: Duration = Duration::from_secs(20);

/// What one tool asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Definition,
    References,
    Hover,
    Symbols,
    Diagnostics,
}

/// One `lsp_*` tool over the run's language servers.
pub struct LspTool {
    spec: ToolSpec,
    kind: Kind,
    manager: Arc<LspManager>,
}

/// The five tools over `manager`'s servers.
pub fn tools(manager: Arc<LspManager>) -> Vec<Arc<dyn Tool>> {
    let served: Vec<String> = manager
        .servers()
        .map(|s| {
            let exts: Vec<String> = s.extensions.iter().map(|e| format!(".{e}")).collect();
            format!("{} files ({})", s.language_id, exts.join(", "))
        })
        .collect();
    let served = served.join("; ");
    let position = |extra: Value| {
        let mut props = json!({
            "path": {"type": "string", "description": "Workspace-relative path of the file."},
            "line": {"type": ["integer", "null"], "description": "1-based line of the position (with `column`), or the line to look for `symbol` on."},
            "column": {"type": ["integer", "null"], "description": "1-based column, counted in characters."},
            "symbol": {"type": ["string", "null"], "description": "A name in the file (`helper`, `Class.method`) instead of a column: its declaration in the file, or its first use on `line`."}
        });
        if let (Some(props), Some(extra)) = (props.as_object_mut(), extra.as_object()) {
            props.extend(extra.clone());
        }
        props
    };
    let make = |name: &str, kind: Kind, description: String, properties: Value, required: &[&str]| -> Arc<dyn Tool> {
        Arc::new(LspTool {
            spec: spec(name, &description, properties, required, RiskLevel::Low, false, &["path"]),
            kind,
            manager: manager.clone(),
        })
    };
    vec![
        make(
            "lsp_definition",
            Kind::Definition,
            format!(
                "Where a symbol is defined, from the language server ({served}): give a file and a line and column, or a symbol name. Answers paths with line:column and the line's text."
            ),
            position(json!({})),
            &["path"],
        ),
        make(
            "lsp_references",
            Kind::References,
            format!(
                "Every use of a symbol across the workspace, from the language server ({served}): give a file and a line and column, or a symbol name."
            ),
            position(
                json!({"include_declaration": {"type": ["boolean", "null"], "description": "List the declaration too (default true)."}}),
            ),
            &["path"],
        ),
        make(
            "lsp_hover",
            Kind::Hover,
            format!("The type and documentation of a symbol, from the language server ({served})."),
            position(json!({})),
            &["path"],
        ),
        make(
            "lsp_symbols",
            Kind::Symbols,
            format!(
                "Symbols from the language server ({served}): the outline of a file (`path`), or the workspace's symbols matching `query`."
            ),
            json!({
                "path": {"type": ["string", "null"], "description": "Workspace-relative file whose symbols to list."},
                "query": {"type": ["string", "null"], "description": "Part of a symbol name to look for (in the file when `path` is given, else in the whole workspace)."}
            }),
            &[],
        ),
        make(
            "lsp_diagnostics",
            Kind::Diagnostics,
            format!("The errors and warnings the language server ({served}) reports for a file, as it is on disk now."),
            json!({"path": {"type": "string", "description": "Workspace-relative path of the file."}}),
            &["path"],
        ),
    ]
}

/// Reads the workspace file `path` as `read` would (same checks, at most 2 MiB) as UTF-8 text.
pub(crate) fn read_text(ctx: &ToolContext, path: &str) -> Result<(WorkspacePath, String), ToolError> {
    let resolved = ctx.workspace.resolve(path, Access::Read)?;
    let bytes = read_regular_file(&resolved.abs, &resolved.rel, MAX_FILE_BYTES)?;
    let text =
        String::from_utf8(bytes).map_err(|_| ToolError::failed(format!("`{}` is not UTF-8 text", resolved.rel)))?;
    Ok((resolved, text))
}

fn uri_of(resolved: &WorkspacePath) -> Result<Url, ToolError> {
    Url::from_file_path(&resolved.abs).map_err(|()| ToolError::failed(format!("`{}` has no file URL", resolved.rel)))
}

/// A request's outcome: an answer marks the server healthy, a death is noted for the backoff
/// and told to the model with what happens next.
async fn settle<T>(manager: &LspManager, server: &str, result: Result<T, LspError>) -> Result<T, ToolError> {
    match result {
        Ok(answer) => {
            manager.answered(server).await;
            Ok(answer)
        }
        Err(err) => Err(fail(manager, server, err).await),
    }
}

/// The error for the model: a death is noted for the backoff and told with what happens next.
async fn fail(manager: &LspManager, server: &str, err: LspError) -> ToolError {
    match err {
        LspError::Died { .. } => ToolError::failed(manager.died(server, &err).await),
        err => err.into(),
    }
}

/// A file given to its server, ready for a request.
struct Opened {
    server: String,
    connection: Arc<Connection>,
    resolved: WorkspacePath,
    text: String,
    uri: Url,
    /// The diagnostics sequence number and version of the change just sent, if one was.
    sent: Option<(u64, i32)>,
}

impl LspTool {
    fn budget(ctx: &ToolContext) -> Duration {
        Duration::from_millis(ctx.timeout_ms.max(1_000))
    }

    /// The server of `path` and its running connection, with every document it has open
    /// brought up to date with the disk and `path` given to it.
    async fn open(&self, ctx: &ToolContext, path: &str) -> Result<Opened, ToolError> {
        // The path passes `read`'s checks before anything else is said about it.
        let (resolved, text) = read_text(ctx, path)?;
        let Some(server) = self.manager.server_for(&resolved.rel).map(|s| s.name.clone()) else {
            let served: Vec<String> =
                self.manager.servers().flat_map(|s| s.extensions.iter().map(|e| format!(".{e}"))).collect();
            return Err(invalid(format!(
                "no language server serves `{path}`; the configured ones serve {}",
                served.join(", ")
            )));
        };
        let uri = uri_of(&resolved)?;
        let connection = self.manager.connection(&server, ctx, Self::budget(ctx)).await?;
        refresh(&connection, ctx).await;
        let sent = match connection.sync(&uri, &text).await {
            Ok(sent) => sent,
            Err(err) => return Err(fail(&self.manager, &server, err).await),
        };
        Ok(Opened { server, connection, resolved, text, uri, sent })
    }

    async fn position_call(&self, args: &Value, ctx: &ToolContext) -> Result<(String, String), ToolError> {
        let path = str_arg(args, "path")?;
        let opened = self.open(ctx, path).await?;
        let (position, label) = self.position(args, ctx, &opened).await?;
        let (server, connection) = (&opened.server, &opened.connection);
        let profile = connection.profile.clone();
        let at =
            TextDocumentPositionParams { text_document: TextDocumentIdentifier { uri: opened.uri.clone() }, position };
        let budget = Self::budget(ctx);
        let mut snippets = render::Snippets::new(ctx);
        match self.kind {
            Kind::Definition => {
                let params = GotoDefinitionParams {
                    text_document_position_params: at,
                    work_done_progress_params: WorkDoneProgressParams::default(),
                    partial_result_params: PartialResultParams::default(),
                };
                let answer = connection.request::<GotoDefinition>(params, budget, &ctx.cancel).await;
                let answer = settle(&self.manager, server, answer).await?;
                let places: Vec<(Url, Position)> = match answer {
                    None => Vec::new(),
                    Some(GotoDefinitionResponse::Scalar(l)) => vec![(l.uri, l.range.start)],
                    Some(GotoDefinitionResponse::Array(ls)) => ls.into_iter().map(|l| (l.uri, l.range.start)).collect(),
                    Some(GotoDefinitionResponse::Link(links)) => {
                        links.into_iter().map(|l| (l.target_uri, l.target_selection_range.start)).collect()
                    }
                };
                Ok((snippets.list(&places, "definition", &format!("of {label}"), server), profile))
            }
            Kind::References => {
                let params = ReferenceParams {
                    text_document_position: at,
                    work_done_progress_params: WorkDoneProgressParams::default(),
                    partial_result_params: PartialResultParams::default(),
                    context: ReferenceContext {
                        include_declaration: opt_bool(args, "include_declaration")?.unwrap_or(true),
                    },
                };
                let answer = connection.request::<References>(params, budget, &ctx.cancel).await;
                let answer = settle(&self.manager, server, answer).await?;
                let places: Vec<(Url, Position)> =
                    answer.unwrap_or_default().into_iter().map(|l: Location| (l.uri, l.range.start)).collect();
                Ok((snippets.list(&places, "reference", &format!("to {label}"), server), profile))
            }
            Kind::Hover => {
                let params = HoverParams {
                    text_document_position_params: at,
                    work_done_progress_params: WorkDoneProgressParams::default(),
                };
                let answer = connection.request::<HoverRequest>(params, budget, &ctx.cancel).await;
                let answer = settle(&self.manager, server, answer).await?;
                let text = match answer {
                    Some(hover) => format!("{label} ({server}):\n{}", render::hover_text(&hover.contents)),
                    None => format!("{label}: the language server `{server}` has nothing to show there"),
                };
                Ok((text, profile))
            }
            Kind::Symbols | Kind::Diagnostics => Err(ToolError::failed("not a position tool")),
        }
    }

    /// The position `args` name in the file: `line` and `column`, or `symbol` (on `line` when
    /// given, else its declaration among the file's symbols, else its first use), with a label
    /// for the result.
    async fn position(
        &self,
        args: &Value,
        ctx: &ToolContext,
        opened: &Opened,
    ) -> Result<(Position, String), ToolError> {
        let number = |name: &str| -> Result<Option<u32>, ToolError> {
            opt_u64(args, name)?
                .map(|n| u32::try_from(n).map_err(|_| invalid(format!("`{name}` is too large"))))
                .transpose()
        };
        let (line, column, symbol) = (number("line")?, number("column")?, opt_str(args, "symbol")?);
        let (rel, text) = (&opened.resolved.rel, opened.text.as_str());
        let lines = text.split('\n').count();
        if let (Some(line), Some(column)) = (line, column) {
            let position = to_lsp(text, line, column)
                .ok_or_else(|| invalid(format!("line {line}, column {column} is not in `{rel}` ({lines} lines)")))?;
            let label = match symbol {
                Some(name) => format!("`{name}` at {rel}:{line}:{column}"),
                None => format!("{rel}:{line}:{column}"),
            };
            return Ok((position, label));
        }
        let Some(name) = symbol.filter(|s| !s.trim().is_empty()) else {
            return Err(invalid("give `line` and `column`, or `symbol` (a name in the file)".into()));
        };
        let last = name.rsplit('.').next().unwrap_or(name);
        let found = match line {
            Some(_) => None,
            None => self.declared(ctx, opened, name).await?,
        };
        let position = match found {
            Some(position) => position,
            None => {
                let (l, c) = find_word(text, last, line).ok_or_else(|| {
                    let place = line.map_or_else(String::new, |l| format!(" on line {l}"));
                    invalid(format!("`{name}` is not in `{rel}`{place}; give `line` and `column`"))
                })?;
                to_lsp(text, l, c).ok_or_else(|| invalid(format!("`{name}` is not in `{rel}`")))?
            }
        };
        let (l, c) = from_lsp(text, position);
        Ok((position, format!("`{name}` at {rel}:{l}:{c}")))
    }

    /// Where the file's symbols (document symbols) declare `name` (`Class.method` follows
    /// the nesting); `None` when the server has no such symbol or no document symbols.
    async fn declared(&self, ctx: &ToolContext, opened: &Opened, name: &str) -> Result<Option<Position>, ToolError> {
        let connection = &opened.connection;
        if connection.capabilities.document_symbol_provider.is_none() {
            return Ok(None);
        }
        let params = document_symbols(&opened.uri);
        let answer = connection.request::<DocumentSymbolRequest>(params, Self::budget(ctx), &ctx.cancel).await;
        let answer = settle(&self.manager, &opened.server, answer).await?;
        Ok(answer.and_then(|symbols| render::find_symbol(&symbols, name)))
    }

    async fn symbols(&self, args: &Value, ctx: &ToolContext) -> Result<(String, String), ToolError> {
        let query = opt_str(args, "query")?.unwrap_or("").trim().to_string();
        let budget = Self::budget(ctx);
        if let Some(path) = opt_str(args, "path")?.filter(|p| !p.is_empty()) {
            let o = self.open(ctx, path).await?;
            let params = document_symbols(&o.uri);
            let answer = o.connection.request::<DocumentSymbolRequest>(params, budget, &ctx.cancel).await;
            let answer = settle(&self.manager, &o.server, answer).await?;
            let text = render::outline(&o.resolved.rel, &o.text, answer, &query, &o.server);
            return Ok((text, o.connection.profile.clone()));
        }
        if query.is_empty() {
            return Err(invalid("give `path` (a file's outline) or `query` (symbols of the workspace)".into()));
        }
        let mut snippets = render::Snippets::new(ctx);
        let mut out = Vec::new();
        let mut profile = String::new();
        let servers: Vec<(String, Vec<String>)> =
            self.manager.servers().map(|s| (s.name.clone(), s.extensions.clone())).collect();
        for (server, extensions) in servers {
            let connection = self.manager.connection(&server, ctx, budget).await?;
            profile = connection.profile.clone();
            refresh(&connection, ctx).await;
            // Some servers (tsserver) answer only for a project they have a file of.
            if connection.open_documents().await.is_empty()
                && let Some(path) = first_file(ctx, &extensions)
                && let Ok((resolved, text)) = read_text(ctx, &path)
            {
                let uri = uri_of(&resolved)?;
                if let Err(err) = connection.sync(&uri, &text).await {
                    return Err(fail(&self.manager, &server, err).await);
                }
            }
            let params = WorkspaceSymbolParams {
                query: query.clone(),
                work_done_progress_params: WorkDoneProgressParams::default(),
                partial_result_params: PartialResultParams::default(),
            };
            let answer = connection.request::<WorkspaceSymbolRequest>(params, budget, &ctx.cancel).await;
            let answer = settle(&self.manager, &server, answer).await?;
            out.push(snippets.workspace_symbols(answer, &query, &server));
        }
        Ok((out.join("\n\n"), profile))
    }

    async fn diagnostics(&self, args: &Value, ctx: &ToolContext) -> Result<(String, String), ToolError> {
        let path = str_arg(args, "path")?;
        let Opened { server, connection, resolved, text, uri, sent } = self.open(ctx, path).await?;
        let wait = Self::budget(ctx).min(MAX_DIAGNOSTICS_WAIT);
        let found = connection.diagnostics(&uri, sent, DIAGNOSTICS_SETTLE, wait, &ctx.cancel).await;
        let found = settle(&self.manager, &server, found).await?;
        let content = match found {
            Some((items, true)) => render::diagnostics(&resolved.rel, &text, items, &server),
            Some((items, false)) => format!(
                "{}\n[`{server}` published nothing newer within {} ms; these may be from before the last change]",
                render::diagnostics(&resolved.rel, &text, items, &server),
                wait.as_millis()
            ),
            None => format!(
                "the language server `{server}` published no diagnostics for `{}` within {} ms (it may still be analysing the workspace; ask again)",
                resolved.rel,
                wait.as_millis()
            ),
        };
        Ok((content, connection.profile.clone()))
    }
}

fn document_symbols(uri: &Url) -> DocumentSymbolParams {
    DocumentSymbolParams {
        text_document: TextDocumentIdentifier { uri: uri.clone() },
        work_done_progress_params: WorkDoneProgressParams::default(),
        partial_result_params: PartialResultParams::default(),
    }
}

/// Gives the server the current text of every document it has open (a file changed on disk
/// by a tool or a program since); a file that is gone or refused now is left as it was.
async fn refresh(connection: &Connection, ctx: &ToolContext) {
    let root = ctx.workspace.root().to_path_buf();
    for uri in connection.open_documents().await {
        let Ok(abs) = uri.to_file_path() else { continue };
        let Ok(rel) = abs.strip_prefix(&root) else { continue };
        let Ok((_, text)) = read_text(ctx, &rel.to_string_lossy()) else { continue };
        let _ = connection.sync(&uri, &text).await;
    }
}

/// The first file of the workspace (as `list` walks it) with one of `extensions`.
fn first_file(ctx: &ToolContext, extensions: &[String]) -> Option<String> {
    let root = ctx.workspace.resolve(".", Access::Read).ok()?;
    ctx.workspace.walk(&root).take(50_000).flatten().find_map(|entry| {
        let is_file = entry.file_type().is_some_and(|t| t.is_file());
        let ext = entry.path().extension()?.to_str()?.to_string();
        if !is_file || !extensions.iter().any(|e| e.eq_ignore_ascii_case(&ext)) {
            return None;
        }
        entry.path().strip_prefix(ctx.workspace.root()).ok().map(|p| p.to_string_lossy().to_string())
    })
}

#[async_trait]
impl Tool for LspTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// A language server reads the whole project, whichever file is named.
    fn default_read_paths(&self, _args: &Value) -> Vec<String> {
        vec![".".into()]
    }

    async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (content, profile) = match self.kind {
            Kind::Definition | Kind::References | Kind::Hover => self.position_call(args, ctx).await?,
            Kind::Symbols => self.symbols(args, ctx).await?,
            Kind::Diagnostics => self.diagnostics(args, ctx).await?,
        };
        Ok(ToolOutput { content, sandbox: format!("lsp:{profile}"), ..Default::default() })
    }
}
