//! The ACP methods: sessions as conversations, each prompt a run of the one composition point.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol as acp;
use steward_core::EventObserver;
use steward_core::{RunOptions, Runtime, Task};
use steward_mcp::{McpServerConfig, ValueSource};
use steward_protocol::Event;
use steward_store::new_id;
use tokio_util::sync::CancellationToken;

use super::AcpArgs;
use super::approver::EditorApprover;
use super::bridge::Bridge;
use super::updates::{Mapper, stop_reason};
use crate::commands::resume::{Joined, Thread, add_turn, join};
use crate::commands::{PlannerOverrides, load_config, prepare_run, redactor_for};

/// Prefix of the names of the MCP servers an editor passes (their tools are `editor-NAME__TOOL`).
pub const EDITOR_MCP_PREFIX: &str = "editor-";

/// How long runs still going when the editor disconnects get to record their cancellation.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

/// One session: a conversation in a workspace, with the editor's MCP servers.
struct Session {
    /// The workspace (canonical).
    workspace: PathBuf,
    /// The conversation; not yet stored while it has no turn.
    conversation: Joined,
    /// Whether the conversation is in the store.
    stored: bool,
    /// The editor's MCP servers, as `[mcp_servers]` entries.
    mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Values the editor passed to its servers (environment, headers): redacted like secrets.
    secrets: Vec<String>,
    /// The running prompt's cancellation, while one runs.
    running: Option<CancellationToken>,
}

/// What the next turn of a session starts from.
struct NextTurn {
    workspace: PathBuf,
    /// The stored conversation to join again (its history), `None` for its first turn.
    thread: Option<Thread>,
    joined: Joined,
    mcp_servers: BTreeMap<String, McpServerConfig>,
    secrets: Vec<String>,
    cancel: CancellationToken,
    /// The editor's text resources quoted in the task, accounted for like files the run read.
    attachments: Vec<steward_core::Attachment>,
}

/// Steward as an ACP agent, for the local user.
pub struct StewardAgent {
    runtime: Runtime,
    owner_id: String,
    args: AcpArgs,
    bridge: Bridge,
    sessions: RefCell<HashMap<String, Session>>,
    /// Runs started and not yet ended.
    active: Arc<AtomicUsize>,
}

impl StewardAgent {
    /// An agent serving `owner_id` on `runtime`, sending through `bridge`.
    pub fn new(runtime: Runtime, owner_id: String, args: AcpArgs, bridge: Bridge) -> StewardAgent {
        StewardAgent {
            runtime,
            owner_id,
            args,
            bridge,
            sessions: RefCell::new(HashMap::new()),
            active: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Cancels every running prompt and waits (at most [`CANCEL_GRACE`]) for the runs to record
    /// their end.
    pub async fn cancel_all(&self) {
        for session in self.sessions.borrow().values() {
            if let Some(cancel) = &session.running {
                cancel.cancel();
            }
        }
        let deadline = tokio::time::Instant::now() + CANCEL_GRACE;
        while self.active.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Opens a session in `cwd` with the editor's `servers`: `cwd` must be an existing directory.
    fn open(&self, cwd: &Path, servers: &[acp::McpServer], conversation: Joined, stored: bool) -> acp::Result<()> {
        let workspace = canonical_workspace(cwd)?;
        let (mcp_servers, secrets) = editor_servers(servers)?;
        let id = conversation.record.id.clone();
        let session = Session { workspace, conversation, stored, mcp_servers, secrets, running: None };
        self.sessions.borrow_mut().insert(id, session);
        Ok(())
    }

    /// The task text of a prompt: its text blocks, resource links named, embedded text
    /// resources of other kinds than files included. Refused (not advertised): images, audio,
    /// binary resources, and an embedded resource of a `file:` URI — a file's content reaches
    /// the model only through the `read` tool, where the path rules, taint and data flow judge
    /// it (the editor names the file with a resource link instead). Each text resource taken is
    /// also returned as an attachment, so that the run fingerprints it like a file it read.
    fn task_text(prompt: &[acp::ContentBlock]) -> acp::Result<(String, Vec<steward_core::Attachment>)> {
        let mut task = String::new();
        let mut attachments = Vec::new();
        for block in prompt {
            match block {
                acp::ContentBlock::Text(t) => task.push_str(&t.text),
                acp::ContentBlock::ResourceLink(link) => task.push_str(&format!("@{}", link.uri)),
                acp::ContentBlock::Resource(embedded) => match &embedded.resource {
                    acp::EmbeddedResourceResource::TextResourceContents(text)
                        if text.uri.trim_start().to_ascii_lowercase().starts_with("file:") =>
                    {
                        return Err(invalid(
                            "a file's content is not taken in a prompt: name it with a resource link, and Steward reads \
                             it through its path rules",
                        ));
                    }
                    acp::EmbeddedResourceResource::TextResourceContents(text) => {
                        task.push_str(&format!(
                            "\n\nContext from the editor, {}:\n```\n{}\n```\n",
                            text.uri, text.text
                        ));
                        attachments.push(steward_core::Attachment { path: text.uri.clone(), text: text.text.clone() });
                    }
                    _ => return Err(invalid("binary resources are not supported in a prompt")),
                },
                _ => return Err(invalid("only text, resource links and text resources are supported in a prompt")),
            }
        }
        if task.trim().is_empty() {
            return Err(invalid("the prompt is empty"));
        }
        Ok((task, attachments))
    }

    /// Runs `task` as the next turn of session `id`; the stop reason of its run.
    async fn run_prompt(
        &self,
        id: &str,
        task: String,
        attachments: Vec<steward_core::Attachment>,
    ) -> acp::Result<acp::StopReason> {
        let turn = {
            let mut sessions = self.sessions.borrow_mut();
            let session = sessions.get_mut(id).ok_or_else(|| invalid(format!("no session `{id}`")))?;
            if session.running.is_some() {
                return Err(invalid("a prompt of this session is still running; cancel it first"));
            }
            let cancel = CancellationToken::new();
            session.running = Some(cancel.clone());
            NextTurn {
                workspace: session.workspace.clone(),
                thread: session.stored.then(|| Thread::Of(id.to_string())),
                joined: Joined { record: session.conversation.record.clone(), history: Vec::new() },
                mcp_servers: session.mcp_servers.clone(),
                secrets: session.secrets.clone(),
                cancel,
                attachments,
            }
        };
        let result = self.run_turn(id, turn, task).await;
        if let Some(session) = self.sessions.borrow_mut().get_mut(id) {
            session.running = None;
        }
        // The run's updates go out before the prompt's response.
        self.bridge.flush().await;
        result
    }

    /// Prepares and runs the next turn of session `id`, as `steward run --continue` does.
    async fn run_turn(&self, id: &str, turn: NextTurn, task: String) -> acp::Result<acp::StopReason> {
        let NextTurn { workspace, thread, mut joined, mcp_servers, secrets, cancel, attachments } = turn;
        let workspace = workspace.as_path();
        let joined = &mut joined;
        let mut config = load_config(workspace).map_err(|e| invalid(format!("{e:#}")))?;
        config.mcp_servers.extend(mcp_servers);
        let redactor = redactor_for(&config).with_values(secrets);
        let options = RunOptions {
            planner: PlannerOverrides {
                provider: self.args.model.provider.provider.clone(),
                model: self.args.model.provider.model.clone(),
                base_url: self.args.model.provider.base_url.clone(),
                scenario: self.args.model.scenario.clone(),
                ..PlannerOverrides::default()
            },
            max_rounds: self.args.max_rounds,
            mcp_logins: crate::commands::local_logins(),
            ..RunOptions::default()
        };
        let prepared =
            prepare_run(config, workspace, &options).await.map_err(|e| invalid(redactor.redact(&format!("{e:#}"))))?;
        let store = self.runtime.store.clone();
        if let Some(thread) = thread {
            let found =
                join(store.as_ref(), &self.owner_id, "", &thread).await.map_err(|e| invalid(format!("{e:#}")))?;
            if let Some(found) = found {
                *joined = found;
            }
        }
        let run_id = new_id("run_");
        add_turn(store.as_ref(), joined, &task, &run_id).await.map_err(internal)?;
        if let Some(session) = self.sessions.borrow_mut().get_mut(id) {
            session.stored = true;
            session.conversation.record = joined.record.clone();
        }
        let session_id = acp::SessionId::new(id.to_string());
        let observer = Arc::new(EditorObserver {
            session_id: session_id.clone(),
            bridge: self.bridge.clone(),
            mapper: Mutex::new(Mapper::new(workspace)),
        });
        let approver = Arc::new(EditorApprover {
            session_id,
            owner_id: self.owner_id.clone(),
            bridge: self.bridge.clone(),
            workspace: workspace.to_path_buf(),
        });
        let ready = prepared.into_run(Task {
            task,
            owner_id: self.owner_id.clone(),
            approver,
            observer,
            cancel,
            run_id: Some(run_id),
            history: std::mem::take(&mut joined.history),
            attachments,
        });
        let runtime = self.runtime.with_redactor(redactor);
        let active = self.active.clone();
        active.fetch_add(1, Ordering::SeqCst);
        let handle = tokio::spawn(async move {
            let run = ready.run(&runtime).await;
            active.fetch_sub(1, Ordering::SeqCst);
            run
        });
        let run = handle
            .await
            .map_err(|e| internal(format!("the run stopped: {e}")))?
            .map_err(|e| internal(format!("{e}")))?;
        match stop_reason(run.status, run.stop_reason) {
            Some(reason) => Ok(reason),
            None => Err(acp::Error::internal_error().data(serde_json::json!(format!(
                "the run failed [{}]: {}",
                run.error_class.map(|c| c.as_str()).unwrap_or("failed"),
                run.error.unwrap_or_default()
            )))),
        }
    }

    /// Replays the turns of stored conversation `record` as updates of `session_id`.
    async fn replay(&self, session_id: &acp::SessionId, joined: &Joined, workspace: &Path) -> acp::Result<()> {
        let store = self.runtime.store.as_ref();
        for turn in &joined.record.turns {
            self.bridge.update(
                session_id,
                acp::SessionUpdate::UserMessageChunk(acp::ContentChunk::new(turn.message.clone().into())),
            );
            if turn.run_id.is_empty() {
                self.bridge.update(
                    session_id,
                    acp::SessionUpdate::AgentMessageChunk(acp::ContentChunk::new(turn.reply.clone().into())),
                );
                continue;
            }
            let mut mapper = Mapper::new(workspace);
            for event in store.events(&turn.run_id, 0).await.map_err(internal)? {
                for update in mapper.updates(&event) {
                    self.bridge.update(session_id, update);
                }
            }
        }
        self.bridge.flush().await;
        Ok(())
    }
}

#[async_trait::async_trait(?Send)]
impl acp::Agent for StewardAgent {
    async fn initialize(&self, _args: acp::InitializeRequest) -> acp::Result<acp::InitializeResponse> {
        let capabilities = acp::AgentCapabilities::new()
            .load_session(true)
            // No embedded context: files are named by resource links and read through the gate.
            .prompt_capabilities(acp::PromptCapabilities::new().embedded_context(false))
            .mcp_capabilities(acp::McpCapabilities::new().http(true));
        Ok(acp::InitializeResponse::new(acp::ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .agent_info(acp::Implementation::new("steward", env!("CARGO_PKG_VERSION")).title("Steward")))
    }

    async fn authenticate(&self, _args: acp::AuthenticateRequest) -> acp::Result<acp::AuthenticateResponse> {
        // No authentication methods are advertised: the editor runs Steward as its own user.
        Err(acp::Error::method_not_found())
    }

    async fn new_session(&self, args: acp::NewSessionRequest) -> acp::Result<acp::NewSessionResponse> {
        let workspace = canonical_workspace(&args.cwd)?;
        let joined = join(self.runtime.store.as_ref(), &self.owner_id, &workspace.display().to_string(), &Thread::New)
            .await
            .map_err(internal)?
            .ok_or_else(|| internal("no conversation was started"))?;
        let id = joined.record.id.clone();
        self.open(&workspace, &args.mcp_servers, joined, false)?;
        Ok(acp::NewSessionResponse::new(id))
    }

    async fn load_session(&self, args: acp::LoadSessionRequest) -> acp::Result<acp::LoadSessionResponse> {
        let id = args.session_id.0.to_string();
        if !id.starts_with("cnv_") {
            return Err(invalid(format!("no session `{id}`")));
        }
        let workspace = canonical_workspace(&args.cwd)?;
        let joined = join(self.runtime.store.as_ref(), &self.owner_id, "", &Thread::Of(id.clone()))
            .await
            .map_err(|e| invalid(format!("{e:#}")))?
            .ok_or_else(|| invalid(format!("no session `{id}`")))?;
        if joined.record.workspace != workspace.display().to_string() {
            return Err(invalid(format!(
                "session {id} works in {}, not {}",
                joined.record.workspace,
                workspace.display()
            )));
        }
        if self.sessions.borrow().get(&id).is_some_and(|s| s.running.is_some()) {
            return Err(invalid("a prompt of this session is still running"));
        }
        self.replay(&args.session_id, &joined, &workspace).await?;
        self.open(&workspace, &args.mcp_servers, joined, true)?;
        Ok(acp::LoadSessionResponse::new())
    }

    async fn prompt(&self, args: acp::PromptRequest) -> acp::Result<acp::PromptResponse> {
        let (task, attachments) = Self::task_text(&args.prompt)?;
        let reason = self.run_prompt(&args.session_id.0, task, attachments).await?;
        Ok(acp::PromptResponse::new(reason))
    }

    async fn cancel(&self, args: acp::CancelNotification) -> acp::Result<()> {
        if let Some(cancel) = self.sessions.borrow().get(&*args.session_id.0).and_then(|s| s.running.as_ref()) {
            cancel.cancel();
        }
        Ok(())
    }
}

/// Sends a run's events to the editor as session updates.
struct EditorObserver {
    session_id: acp::SessionId,
    bridge: Bridge,
    mapper: Mutex<Mapper>,
}

impl EventObserver for EditorObserver {
    fn on_event(&self, event: &Event) {
        let Ok(mut mapper) = self.mapper.lock() else { return };
        for update in mapper.updates(event) {
            self.bridge.update(&self.session_id, update);
        }
    }
}

/// `cwd` canonical; an error when it is not an existing directory.
fn canonical_workspace(cwd: &Path) -> acp::Result<PathBuf> {
    if !cwd.is_absolute() {
        return Err(invalid(format!("cwd {} is not an absolute path", cwd.display())));
    }
    let workspace = std::fs::canonicalize(cwd).map_err(|e| invalid(format!("cwd {}: {e}", cwd.display())))?;
    if !workspace.is_dir() {
        return Err(invalid(format!("cwd {} is not a directory", cwd.display())));
    }
    Ok(workspace)
}

/// The editor's MCP servers as `[mcp_servers]` entries named `editor-NAME` (checked like
/// configured ones), and the values given to them. SSE servers are refused (not advertised).
pub fn editor_servers(servers: &[acp::McpServer]) -> acp::Result<(BTreeMap<String, McpServerConfig>, Vec<String>)> {
    let mut configs = BTreeMap::new();
    let mut secrets = Vec::new();
    for server in servers {
        let (name, config) = match server {
            acp::McpServer::Stdio(stdio) => {
                let mut command = vec![stdio.command.display().to_string()];
                command.extend(stdio.args.iter().cloned());
                let mut config = McpServerConfig::stdio(command);
                for var in &stdio.env {
                    config.env.insert(var.name.clone(), ValueSource::Literal(var.value.clone()));
                    secrets.push(var.value.clone());
                }
                (&stdio.name, config)
            }
            acp::McpServer::Http(http) => {
                let mut config = McpServerConfig::http(http.url.clone());
                for header in &http.headers {
                    config.headers.insert(header.name.clone(), ValueSource::Literal(header.value.clone()));
                    secrets.push(header.value.clone());
                }
                (&http.name, config)
            }
            acp::McpServer::Sse(sse) => {
                return Err(invalid(format!(
                    "MCP server `{}`: SSE servers are not supported (use stdio or http)",
                    sse.name
                )));
            }
            _ => return Err(invalid("an MCP server of an unknown transport")),
        };
        let name = server_name(name, &configs);
        config.validate(&name).map_err(|e| invalid(e.to_string()))?;
        configs.insert(name, config);
    }
    // Short values (`1`, `true`) would redact every occurrence of them in output.
    secrets.retain(|v| v.len() >= 8);
    Ok((configs, secrets))
}

/// `editor-NAME` with NAME cut to the allowed characters and length, unique among `taken`.
fn server_name(name: &str, taken: &BTreeMap<String, McpServerConfig>) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .take(22)
        .collect();
    let base = format!("{EDITOR_MCP_PREFIX}{cleaned}");
    let mut candidate = base.clone();
    let mut n = 2;
    while taken.contains_key(&candidate) {
        candidate = format!("{base}-{n}");
        n += 1;
    }
    candidate
}

/// An `invalid_params` error saying `why`.
fn invalid(why: impl Into<String>) -> acp::Error {
    acp::Error::invalid_params().data(serde_json::Value::String(why.into()))
}

/// An internal error saying `why`.
fn internal(why: impl std::fmt::Display) -> acp::Error {
    acp::Error::internal_error().data(serde_json::Value::String(why.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_servers_are_named_editor_and_their_values_kept_as_secrets() {
        let stdio = acp::McpServer::Stdio(
            acp::McpServerStdio::new("my files!", "/usr/bin/srv")
                .args(vec!["stdio".into()])
                .env(vec![acp::EnvVariable::new("TOKEN", "tok-0123456789")]),
        );
        let http = acp::McpServer::Http(
            acp::McpServerHttp::new("my files!", "http://127.0.0.1:9/mcp")
                .headers(vec![acp::HttpHeader::new("Authorization", "Bearer abcdefgh")]),
        );
        let (configs, secrets) = editor_servers(&[stdio, http]).unwrap();
        let names: Vec<&str> = configs.keys().map(String::as_str).collect();
        assert_eq!(names, vec!["editor-my_files_", "editor-my_files_-2"]);
        assert_eq!(configs["editor-my_files_"].command, Some(vec!["/usr/bin/srv".to_string(), "stdio".to_string()]));
        assert_eq!(configs["editor-my_files_-2"].url.as_deref(), Some("http://127.0.0.1:9/mcp"));
        assert_eq!(secrets, vec!["tok-0123456789".to_string(), "Bearer abcdefgh".to_string()]);
    }

    #[test]
    fn sse_servers_and_bad_urls_are_refused() {
        let sse = acp::McpServer::Sse(acp::McpServerSse::new("old", "http://127.0.0.1:9/sse"));
        assert!(editor_servers(&[sse]).is_err());
        let bad = acp::McpServer::Http(acp::McpServerHttp::new("x", "ftp://example.org"));
        assert!(editor_servers(&[bad]).is_err());
    }

    #[test]
    fn a_prompt_is_its_text_with_links_named_and_text_resources_included() {
        let link = acp::ContentBlock::ResourceLink(acp::ResourceLink::new("a.rs", "file:///w/a.rs"));
        let (task, _) = StewardAgent::task_text(&["explain ".into(), link]).unwrap();
        assert_eq!(task, "explain @file:///w/a.rs");
        assert!(StewardAgent::task_text(&["  ".into()]).is_err());
        let image = acp::ContentBlock::Image(acp::ImageContent::new("AAAA", "image/png"));
        assert!(StewardAgent::task_text(&[image]).is_err());
        let file = acp::ContentBlock::Resource(acp::EmbeddedResource::new(
            acp::EmbeddedResourceResource::TextResourceContents(acp::TextResourceContents::new(
                "API_TOKEN=zebra",
                "FILE:///w/.env",
            )),
        ));
        assert!(StewardAgent::task_text(&["see ".into(), file]).is_err(), "a file's content was taken unjudged");
        let buffer = acp::ContentBlock::Resource(acp::EmbeddedResource::new(
            acp::EmbeddedResourceResource::TextResourceContents(acp::TextResourceContents::new(
                "terminal says: build failed at step 4",
                "zed://terminal/1",
            )),
        ));
        let (task, attachments) = StewardAgent::task_text(&["why? ".into(), buffer]).unwrap();
        assert!(task.contains("build failed at step 4"), "{task}");
        assert_eq!(attachments.len(), 1, "the editor's text is accounted for like a file read");
        assert_eq!(attachments[0].path, "zed://terminal/1");
        assert_eq!(attachments[0].text, "terminal says: build failed at step 4");
    }

    #[test]
    fn a_missing_or_relative_workspace_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(canonical_workspace(&dir.path().join("nope")).is_err());
        assert!(canonical_workspace(Path::new("relative/dir")).is_err());
        assert_eq!(canonical_workspace(dir.path()).unwrap(), std::fs::canonicalize(dir.path()).unwrap());
    }
}
