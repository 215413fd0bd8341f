//! One running language server: its sandboxed process, the async-lsp main loop over its
//! pipes, the documents it was given and the diagnostics it published.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_lsp::MainLoop;
use async_lsp::router::Router;
use lsp_types::notification::{
    DidChangeConfiguration, DidChangeTextDocument, DidChangeWatchedFiles, DidOpenTextDocument, Exit, Initialized,
    PublishDiagnostics,
};
use lsp_types::request::{
    ApplyWorkspaceEdit, Initialize, RegisterCapability, Request, ShowMessageRequest, Shutdown, UnregisterCapability,
    WorkDoneProgressCreate, WorkspaceConfiguration, WorkspaceFoldersRequest,
};
use lsp_types::{
    ApplyWorkspaceEditResponse, ClientCapabilities, Diagnostic, DidChangeConfigurationParams,
    DidChangeTextDocumentParams, DidChangeWatchedFilesParams, DidOpenTextDocumentParams, FileChangeType, FileEvent,
    InitializeParams, InitializedParams, ServerCapabilities, TextDocumentContentChangeEvent, TextDocumentItem, Url,
    VersionedTextDocumentIdentifier, WorkspaceFolder,
};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
use tokio_util::sync::CancellationToken;

use super::LspError;
use super::capped::CappedReader;
use crate::ToolContext;
use steward_config::LspServerConfig;

/// Data limit of a language server (8 GiB, as for MCP servers): Node-based servers reserve
/// far more than a tool's command.
const LSP_MEMORY_BYTES: u64 = 8 * 1024 * 1024 * 1024;

/// Characters of a server's standard error kept (the end of it), for the error that says it
/// died.
const STDERR_TAIL_CHARS: usize = 2_000;

/// A document the server was given, as it was last sent.
struct Doc {
    version: i32,
    text: String,
}

/// What a server published, by document.
#[derive(Default)]
pub(crate) struct Diagnostics {
    inner: Mutex<DiagState>,
}

#[derive(Default)]
struct DiagState {
    /// Counts every publication, so a wait can ask for one newer than a change it made.
    seq: u64,
    by_uri: HashMap<Url, Published>,
}

#[derive(Clone)]
struct Published {
    seq: u64,
    version: Option<i32>,
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    fn seq(&self) -> u64 {
        self.inner.lock().map(|s| s.seq).unwrap_or(0)
    }

    fn publish(&self, uri: Url, version: Option<i32>, items: Vec<Diagnostic>) {
        if let Ok(mut state) = self.inner.lock() {
            state.seq += 1;
            let seq = state.seq;
            state.by_uri.insert(uri, Published { seq, version, items });
        }
    }

    fn get(&self, uri: &Url) -> Option<Published> {
        self.inner.lock().ok().and_then(|s| s.by_uri.get(uri).cloned())
    }
}

/// The client side's state inside the main loop.
struct ClientState {
    diagnostics: Arc<Diagnostics>,
    settings: Value,
    folder: Url,
}

/// The value of the dotted `section` of `settings` (`null` when absent; the whole settings
/// for no section).
fn section(settings: &Value, section: Option<&str>) -> Value {
    let mut value = settings;
    for part in section.unwrap_or("").split('.').filter(|p| !p.is_empty()) {
        match value.get(part) {
            Some(inner) => value = inner,
            None => return Value::Null,
        }
    }
    value.clone()
}

/// Answers the server's own requests: its settings, progress tokens and registrations are
/// accepted, edits it asks to apply are refused (the tools only read), notifications other
/// than diagnostics are dropped.
fn router(state: ClientState) -> Router<ClientState> {
    let mut router = Router::new(state);
    router
        .notification::<PublishDiagnostics>(|st, params| {
            st.diagnostics.publish(params.uri, params.version, params.diagnostics);
            ControlFlow::Continue(())
        })
        .request::<WorkspaceConfiguration, _>(|st, params| {
            let answers = params.items.iter().map(|item| section(&st.settings, item.section.as_deref())).collect();
            std::future::ready(Ok(answers))
        })
        .request::<WorkDoneProgressCreate, _>(|_, _| std::future::ready(Ok(())))
        .request::<RegisterCapability, _>(|_, _| std::future::ready(Ok(())))
        .request::<UnregisterCapability, _>(|_, _| std::future::ready(Ok(())))
        .request::<ShowMessageRequest, _>(|_, _| std::future::ready(Ok(None)))
        .request::<WorkspaceFoldersRequest, _>(|st, _| {
            let folder = WorkspaceFolder { uri: st.folder.clone(), name: "workspace".into() };
            std::future::ready(Ok(Some(vec![folder])))
        })
        .request::<ApplyWorkspaceEdit, _>(|_, _| {
            std::future::ready(Ok(ApplyWorkspaceEditResponse {
                applied: false,
                failure_reason: Some("Steward's language-server tools only read".into()),
                failed_change: None,
            }))
        })
        .unhandled_notification(|_, _| ControlFlow::Continue(()));
    router
}

/// A running language server.
pub(crate) struct Connection {
    name: String,
    language_id: String,
    socket: async_lsp::ServerSocket,
    docs: tokio::sync::Mutex<HashMap<Url, Doc>>,
    diagnostics: Arc<Diagnostics>,
    /// `Some(how)` once the process ended.
    ended: watch::Receiver<Option<String>>,
    stop: CancellationToken,
    stderr: Arc<Mutex<String>>,
    /// True once the server's standard error is closed (everything it wrote was read).
    stderr_done: watch::Receiver<bool>,
    /// The diagnostics sequence number when files last changed on disk: diagnostics of a
    /// document not changed itself count only when published after it.
    changed_at: std::sync::atomic::AtomicU64,
    /// What the server said it can do.
    pub capabilities: ServerCapabilities,
    /// The sandbox profile it runs under.
    pub profile: String,
    /// Its private temporary folder (removed when the connection is dropped).
    tmp: PathBuf,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.stop.cancel();
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}

/// The folders directly beneath `$HOME` that hold the program or a file an argument names
/// (as spelled and as resolved through links): a server installed beneath the home stays
/// visible, read-only, when the sandbox hides the rest of it.
fn home_folders(argv: &[String]) -> Vec<PathBuf> {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from).and_then(|h| h.canonicalize().ok()) else {
        return Vec::new();
    };
    let mut candidates: Vec<PathBuf> = Vec::new();
    for (index, arg) in argv.iter().enumerate() {
        if arg.starts_with('/') {
            candidates.push(PathBuf::from(arg));
        } else if index == 0 && !arg.contains('/') {
            let found = std::env::var_os("PATH")
                .map(|path| std::env::split_paths(&path).map(|dir| dir.join(arg)).collect::<Vec<_>>())
                .unwrap_or_default()
                .into_iter()
                .find(|candidate| candidate.is_file());
            candidates.extend(found);
        }
    }
    let mut folders = Vec::new();
    for path in candidates {
        for path in [Some(path.clone()), path.canonicalize().ok()].into_iter().flatten() {
            if let Ok(rel) = path.strip_prefix(&home)
                && let Some(top) = rel.components().next()
                && rel.components().count() > 1
            {
                let folder = home.join(top);
                if !folders.contains(&folder) {
                    folders.push(folder);
                }
            }
        }
    }
    folders
}

/// A fresh private folder for the server's temporary files.
fn temp_folder(name: &str) -> Result<PathBuf, LspError> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = std::env::temp_dir().join(format!("steward-lsp-{name}-{:016x}", rand::random::<u64>()));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| LspError::NotStarted(format!("no temporary folder for `{name}`: {e}")))?;
    Ok(dir)
}

fn describe_status(status: std::io::Result<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => format!("exit status {code}"),
            (None, Some(signal)) => format!("killed by signal {signal}"),
            (None, None) => "ended".into(),
        },
        Err(e) => format!("could not be waited for: {e}"),
    }
}

impl Connection {
    /// Starts `config`'s server in the sandbox for the workspace of `ctx` and initialises it
    /// (within `timeout`). Errors: the sandbox refused or the program could not start
    /// ([`LspError::NotStarted`]), it ended or did not answer `initialize`.
    pub(crate) async fn start(
        config: &LspServerConfig,
        ctx: &ToolContext,
        timeout: Duration,
    ) -> Result<Connection, LspError> {
        let root = ctx.workspace.root().to_path_buf();
        let tmp = temp_folder(&config.name)?;
        let request = steward_sandbox::ExecRequest {
            env_allow: ctx.env_allow.clone(),
            env_set: vec![("TMPDIR".into(), tmp.display().to_string())],
            timeout: steward_sandbox::MAX_LIFETIME,
            network: false,
            memory_bytes: Some(LSP_MEMORY_BYTES),
            writable: vec![tmp.clone()],
            unix_sockets: config.unix_sockets,
            accept_weaker: ctx.accept_weaker.clone(),
            ..steward_sandbox::ExecRequest::new(config.command.clone(), root.clone())
        };
        let started = Self::spawn(config, ctx, request);
        let (mut child, profile) = match started {
            Ok(started) => started,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&tmp);
                return Err(e);
            }
        };
        let (Some(stdout), Some(stdin), Some(mut stderr)) =
            (child.stdout.take(), child.stdin.take(), child.stderr.take())
        else {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(LspError::NotStarted(format!("`{}` has no pipes", config.name)));
        };
        let folder = Url::from_file_path(&root)
            .map_err(|()| LspError::NotStarted(format!("the workspace {} is not a file URL", root.display())))?;
        let diagnostics = Arc::new(Diagnostics::default());
        let state = ClientState {
            diagnostics: diagnostics.clone(),
            settings: config.settings.clone().unwrap_or(Value::Null),
            folder: folder.clone(),
        };
        let (main_loop, socket) = MainLoop::new_client(|_| router(state));
        let stop = CancellationToken::new();
        let loop_error = Arc::new(Mutex::new(None::<String>));
        {
            let (stop, loop_error) = (stop.clone(), loop_error.clone());
            tokio::spawn(async move {
                let result = main_loop.run_buffered(CappedReader::new(stdout).compat(), stdin.compat_write()).await;
                if let Err(e) = result
                    && !matches!(e, async_lsp::Error::Eof)
                    && let Ok(mut slot) = loop_error.lock()
                {
                    *slot = Some(e.to_string());
                }
                // The pipes are gone: the process has no use left.
                stop.cancel();
            });
        }
        let stderr_tail = Arc::new(Mutex::new(String::new()));
        let (stderr_done_tx, stderr_done) = watch::channel(false);
        {
            let tail = stderr_tail.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut tail) = tail.lock() {
                        tail.push_str(&String::from_utf8_lossy(&buf[..n]));
                        let count = tail.chars().count();
                        if count > STDERR_TAIL_CHARS {
                            *tail = tail.chars().skip(count - STDERR_TAIL_CHARS).collect();
                        }
                    }
                }
                let _ = stderr_done_tx.send(true);
            });
        }
        let (ended_tx, ended) = watch::channel(None);
        {
            let stop = stop.clone();
            tokio::spawn(async move {
                let how = tokio::select! {
                    status = child.wait() => describe_status(status),
                    _ = stop.cancelled() => {
                        // A process whose pipes closed gets a moment to end on its own.
                        let waited = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
                        match waited {
                            Ok(status) => describe_status(status),
                            Err(_) => {
                                let _ = child.start_kill();
                                let _ = child.wait().await;
                                "stopped".to_string()
                            }
                        }
                    }
                    _ = tokio::time::sleep(steward_sandbox::MAX_LIFETIME) => {
                        let _ = child.start_kill();
                        let _ = child.wait().await;
                        "stopped at the sandbox lifetime (60 min)".to_string()
                    }
                };
                let how = match loop_error.lock().ok().and_then(|e| e.clone()) {
                    Some(error) => format!("{how}; its messages could not be read: {error}"),
                    None => how,
                };
                let _ = ended_tx.send(Some(how));
            });
        }
        let mut connection = Connection {
            name: config.name.clone(),
            language_id: config.language_id.clone(),
            socket,
            docs: tokio::sync::Mutex::new(HashMap::new()),
            diagnostics,
            ended,
            stop,
            stderr: stderr_tail,
            stderr_done,
            changed_at: std::sync::atomic::AtomicU64::new(0),
            capabilities: ServerCapabilities::default(),
            profile,
            tmp,
        };
        let params = initialize_params(folder, config.initialization_options.clone());
        let never = CancellationToken::new();
        let result = connection.request::<Initialize>(params, timeout, &never).await?;
        connection.capabilities = result.capabilities;
        connection.notify::<Initialized>(InitializedParams {})?;
        if let Some(settings) = &config.settings {
            connection.notify::<DidChangeConfiguration>(DidChangeConfigurationParams { settings: settings.clone() })?;
        }
        Ok(connection)
    }

    fn spawn(
        config: &LspServerConfig,
        ctx: &ToolContext,
        request: steward_sandbox::ExecRequest,
    ) -> Result<(tokio::process::Child, String), LspError> {
        let not_started = |e: String| LspError::NotStarted(format!("`{}` was not started: {e}", config.name));
        // `confine` keeps `request.writable` (the temporary folder) visible.
        let mut request = crate::sandbox_paths::confine(request, ctx).map_err(|e| not_started(e.message))?;
        request.home_keep.extend(home_folders(&config.command));
        let mut confined = steward_sandbox::command(request).map_err(|e| not_started(e.to_string()))?;
        confined.command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let profile = confined.profile.join(",");
        let child = confined.spawn().map_err(|e| not_started(e.to_string()))?;
        Ok((child, profile))
    }

    /// True while the process runs and its messages are read.
    pub(crate) fn alive(&self) -> bool {
        self.ended.borrow().is_none() && !self.stop.is_cancelled()
    }

    /// How the process ended, with the end of what it wrote to standard error, waiting a
    /// moment for the process to be reaped.
    pub(crate) async fn end_text(&self) -> String {
        let mut ended = self.ended.clone();
        let wait = async move { ended.wait_for(Option::is_some).await.ok().and_then(|v| v.clone()) };
        let how = tokio::time::timeout(Duration::from_secs(2), wait)
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| "its messages stopped".into());
        let mut done = self.stderr_done.clone();
        let _ = tokio::time::timeout(Duration::from_millis(500), async move {
            let _ = done.wait_for(|d| *d).await;
        })
        .await;
        let tail = self.stderr.lock().map(|t| t.trim().to_string()).unwrap_or_default();
        let tail: String = {
            let lines: Vec<&str> = tail.lines().collect();
            lines[lines.len().saturating_sub(5)..].join("\n")
        };
        if tail.is_empty() { how } else { format!("{how}; its last error output: {tail}") }
    }

    /// Sends a notification. Errors: the main loop ended ([`LspError::Died`]).
    pub(crate) fn notify<N: lsp_types::notification::Notification>(&self, params: N::Params) -> Result<(), LspError> {
        self.socket
            .notify::<N>(params)
            .map_err(|_| LspError::Died { server: self.name.clone(), how: "its messages stopped".into() })
    }

    /// Sends a request and waits for the answer, at most `timeout`. Errors: the server's error
    /// answer, the process ended before answering, the time ran out, `cancel` fired.
    pub(crate) async fn request<R: Request>(
        &self,
        params: R::Params,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<R::Result, LspError> {
        let mut ended = self.ended.clone();
        let outcome = tokio::select! {
            result = self.socket.request::<R>(params) => result,
            _ = async move { let _ = ended.wait_for(Option::is_some).await; } => Err(async_lsp::Error::ServiceStopped),
            _ = tokio::time::sleep(timeout) => {
                return Err(LspError::Timeout { server: self.name.clone(), ms: timeout.as_millis() as u64 });
            }
            _ = cancel.cancelled() => return Err(LspError::Cancelled),
        };
        match outcome {
            Ok(answer) => Ok(answer),
            Err(async_lsp::Error::Response(e)) => {
                Err(LspError::Server { server: self.name.clone(), method: R::METHOD, message: e.message })
            }
            Err(async_lsp::Error::ServiceStopped | async_lsp::Error::Eof) => {
                self.stop.cancel();
                Err(LspError::Died { server: self.name.clone(), how: self.end_text().await })
            }
            Err(other) => Err(LspError::Protocol { server: self.name.clone(), message: other.to_string() }),
        }
    }

    /// Gives the server `text` as the content of `uri`: opened the first time, changed
    /// (whole text) when it differs from what was sent last. Returns the diagnostics sequence
    /// number before the send (a wait for diagnostics wants a newer one) and the document
    /// version, or `None` when nothing had to be sent.
    pub(crate) async fn sync(&self, uri: &Url, text: &str) -> Result<Option<(u64, i32)>, LspError> {
        let mut docs = self.docs.lock().await;
        let before = self.diagnostics.seq();
        match docs.get_mut(uri) {
            None => {
                self.notify::<DidOpenTextDocument>(DidOpenTextDocumentParams {
                    text_document: TextDocumentItem {
                        uri: uri.clone(),
                        language_id: self.language_id.clone(),
                        version: 1,
                        text: text.to_string(),
                    },
                })?;
                docs.insert(uri.clone(), Doc { version: 1, text: text.to_string() });
                Ok(Some((before, 1)))
            }
            Some(doc) if doc.text != text => {
                doc.version += 1;
                doc.text = text.to_string();
                self.notify::<DidChangeTextDocument>(DidChangeTextDocumentParams {
                    text_document: VersionedTextDocumentIdentifier { uri: uri.clone(), version: doc.version },
                    content_changes: vec![TextDocumentContentChangeEvent {
                        range: None,
                        range_length: None,
                        text: text.to_string(),
                    }],
                })?;
                Ok(Some((before, doc.version)))
            }
            Some(_) => Ok(None),
        }
    }

    /// The documents the server was given.
    pub(crate) async fn open_documents(&self) -> Vec<Url> {
        self.docs.lock().await.keys().cloned().collect()
    }

    /// Tells the server that files changed on disk.
    pub(crate) fn files_changed(&self, uris: Vec<Url>) -> Result<(), LspError> {
        if uris.is_empty() {
            return Ok(());
        }
        self.changed_at.store(self.diagnostics.seq(), std::sync::atomic::Ordering::SeqCst);
        let changes = uris.into_iter().map(|uri| FileEvent { uri, typ: FileChangeType::CHANGED }).collect();
        self.notify::<DidChangeWatchedFiles>(DidChangeWatchedFilesParams { changes })
    }

    /// The diagnostics of `uri` published after the diagnostics sequence number `after` (for
    /// `version` or later when the server says which), once no newer ones came for `settle`.
    /// Without `after` (the document was not changed), those published since files last
    /// changed on disk. When none come within `timeout`: the last ones published, marked as
    /// maybe out of date (`false`), or `None` when there are none.
    pub(crate) async fn diagnostics(
        &self,
        uri: &Url,
        after: Option<(u64, i32)>,
        settle: Duration,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Option<(Vec<Diagnostic>, bool)>, LspError> {
        let (after, version) = after.unwrap_or_else(|| (self.changed_at.load(std::sync::atomic::Ordering::SeqCst), 0));
        let deadline = tokio::time::Instant::now() + timeout;
        let mut seen: Option<(u64, tokio::time::Instant)> = None;
        loop {
            if cancel.is_cancelled() {
                return Err(LspError::Cancelled);
            }
            let now = tokio::time::Instant::now();
            let published = self.diagnostics.get(uri);
            match published {
                Some(published) if published.seq > after && published.version.is_none_or(|v| v >= version) => {
                    match seen {
                        Some((seq, _)) if seq == published.seq => {}
                        _ => seen = Some((published.seq, now)),
                    }
                    if seen.is_some_and(|(_, at)| now.duration_since(at) >= settle) || now >= deadline {
                        return Ok(Some((published.items, true)));
                    }
                }
                published if now >= deadline => return Ok(published.map(|p| (p.items, false))),
                _ => {}
            }
            if !self.alive() {
                return Err(LspError::Died { server: self.name.clone(), how: self.end_text().await });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Asks the server to shut down and exit (a second at most each), then ends the process.
    pub(crate) async fn shutdown(&self) {
        if self.alive() {
            let never = CancellationToken::new();
            let _ = self.request::<Shutdown>((), Duration::from_secs(1), &never).await;
            let _ = self.notify::<Exit>(());
            let mut ended = self.ended.clone();
            let wait = async move {
                let _ = ended.wait_for(Option::is_some).await;
            };
            let _ = tokio::time::timeout(Duration::from_secs(1), wait).await;
        }
        self.stop.cancel();
    }
}

/// The `initialize` request: the workspace as root and only folder, no process id (the
/// server lives in a PID namespace of its own, where the client's id means nothing).
#[allow(deprecated)]
fn initialize_params(folder: Url, options: Option<Value>) -> InitializeParams {
    InitializeParams {
        process_id: None,
        root_uri: Some(folder.clone()),
        initialization_options: options,
        capabilities: client_capabilities(),
        workspace_folders: Some(vec![WorkspaceFolder { uri: folder, name: "workspace".into() }]),
        ..InitializeParams::default()
    }
}

/// What the client supports: plain or Markdown hover text, definition links, hierarchical
/// document symbols, versioned diagnostics, settings and workspace folders.
fn client_capabilities() -> ClientCapabilities {
    serde_json::from_value(json!({
        "workspace": {
            "configuration": true,
            "workspaceFolders": true,
            "symbol": {},
            "didChangeWatchedFiles": { "dynamicRegistration": false }
        },
        "textDocument": {
            "synchronization": { "didSave": false },
            "hover": { "contentFormat": ["plaintext", "markdown"] },
            "definition": { "linkSupport": true },
            "references": {},
            "documentSymbol": { "hierarchicalDocumentSymbolSupport": true },
            "publishDiagnostics": { "versionSupport": true, "relatedInformation": false }
        },
        "general": { "positionEncodings": ["utf-16"] }
    }))
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_answer_dotted_sections() {
        let settings = json!({"python": {"analysis": {"mode": "basic"}}});
        assert_eq!(section(&settings, Some("python.analysis")), json!({"mode": "basic"}));
        assert_eq!(section(&settings, Some("python.missing")), Value::Null);
        assert_eq!(section(&settings, None), settings);
        assert!(client_capabilities().text_document.is_some(), "the capabilities parse");
    }

    /// A language server starts with what every sandboxed program of the run must not see
    /// covered (the shared computation of `sandbox_paths`): a `deny_path` file reads empty.
    #[tokio::test]
    async fn a_server_is_started_with_the_run_s_masks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("private")).unwrap();
        std::fs::write(root.join("private/plan.txt"), "lsp-hidden-plan").unwrap();
        std::fs::write(root.join(".env"), "TOKEN=lsp-hidden-token").unwrap();
        std::fs::write(root.join("main.py"), "x = 1").unwrap();
        let workspace = steward_policy::Workspace::open(&root, &["private/**".into()]).unwrap();
        let ctx = ToolContext {
            workspace: Arc::new(workspace),
            cancel: CancellationToken::new(),
            env_allow: Vec::new(),
            timeout_ms: 10_000,
            snapshots: crate::rollback::Snapshots::new(&root.join("snapshots"), "run_lsp"),
            accept_weaker: Vec::new(),
            credentials: Default::default(),
            sandbox: Default::default(),
            elicitor: None,
            egress: None,
        };
        let command = ["sh", "-c", "cat private/plan.txt .env main.py"].map(String::from).to_vec();
        let config = LspServerConfig {
            name: "fake".into(),
            command: command.clone(),
            extensions: vec!["py".into()],
            language_id: "python".into(),
            initialization_options: None,
            settings: None,
            unix_sockets: false,
        };
        let tmp = temp_folder("fake").unwrap();
        let request = steward_sandbox::ExecRequest {
            writable: vec![tmp.clone()],
            ..steward_sandbox::ExecRequest::new(command, root.clone())
        };
        let (child, profile) = Connection::spawn(&config, &ctx, request).unwrap();
        assert!(profile.contains("mntns(mask="), "{profile}");
        let out = child.wait_with_output().await.unwrap();
        let _ = std::fs::remove_dir_all(&tmp);
        assert_eq!(String::from_utf8_lossy(&out.stdout), "x = 1", "{profile}");
    }
}
