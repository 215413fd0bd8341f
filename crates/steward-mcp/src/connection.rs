//! One live connection to a server: a child process on stdio or a streamable HTTP session,
//! after a completed `initialize`.
//!
//! A stdio child gets a cleared environment (the sandbox allow-list plus the configured
//! `env`), runs in its own process group, has its stderr drained to `debug` logs, and is
//! watched: its exit is observed as soon as it happens so that a pending call fails at once
//! (case B22) instead of waiting for its timeout. Dropping the connection kills the group.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, CustomRequest, CustomResult, ElicitRequestParams, ElicitResult,
    ElicitationCapability, ErrorCode, FormElicitationCapability, Implementation, ProtocolVersion,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceError};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::McpError;
use crate::config::{McpServerConfig, Transport};
use crate::elicitation::ActiveCalls;

/// How long to wait for a child's exit status after its stdout closed, to name the exit code.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// Steward's side of a connection: its `initialize` parameters, and elicitations routed to
/// the tool call that is running (see [`ActiveCalls`]).
pub(crate) struct Handler {
    server: String,
    info: ClientConfig,
    calls: Arc<ActiveCalls>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        Ok(self.calls.elicit(&self.server, request, context.ct).await)
    }

    /// A request the SDK could not read as one it knows. An `elicitation/create` lands here
    /// when its schema is beyond the MCP spec's (a list, a nested object): it is answered
    /// like any form request, so it is declined with a reason, audited and shown, rather
    /// than refused as an unknown method. Other methods: method not found.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleClient>,
    ) -> Result<CustomResult, rmcp::ErrorData> {
        if request.method != "elicitation/create" {
            return Err(rmcp::ErrorData::new(ErrorCode::METHOD_NOT_FOUND, request.method, None));
        }
        let params = request.params.unwrap_or(serde_json::Value::Null);
        let result = self.calls.elicit_unread(&self.server, params, context.ct).await;
        serde_json::to_value(result)
            .map(CustomResult::new)
            .map_err(|e| rmcp::ErrorData::internal_error(format!("elicitation result: {e}"), None))
    }
}

/// A started, initialised server.
pub(crate) struct Connection {
    service: RunningService<RoleClient, Handler>,
    /// Stdio only: `Some(description)` once the child has exited (`exit status: 1`, …).
    exit: Option<watch::Receiver<Option<String>>>,
    /// Used on drop: kills the child's process group.
    kill: GroupKill,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.kill.kill();
    }
}

/// Kills a stdio child's process group. The signal is sent at once, not by the task that
/// watches the child, so a Steward process that exits right after a failed start (`steward mcp
/// list`) leaves no server behind; the watching task then reaps the child.
#[derive(Default)]
struct GroupKill {
    /// The child's process group id (its pid, from `process_group(0)`); `None` for HTTP.
    pgid: Option<libc::pid_t>,
    /// The child's exit as seen by the watcher: once set, the pid may belong to another
    /// process and is not signalled.
    exit: Option<watch::Receiver<Option<String>>>,
    /// Tells the watcher to kill and reap the child.
    reap: CancellationToken,
}

impl GroupKill {
    #[allow(unsafe_code, reason = "killpg(2): the standard library signals a child, not its process group")]
    fn kill(&self) {
        let reaped = self.exit.as_ref().is_some_and(|exit| exit.borrow().is_some());
        if let Some(pgid) = self.pgid
            && !reaped
        {
            // SAFETY: signals the process group this child leads (`process_group(0)`); the
            // child is not reaped yet, so the group id is still its own.
            unsafe { libc::killpg(pgid, libc::SIGKILL) };
        }
        self.reap.cancel();
    }
}

impl Connection {
    /// Starts `name` and completes `initialize` within the server's `startup_timeout_ms`.
    /// Errors: [`McpError::Unavailable`] (cannot spawn/connect, exited, refused
    /// `initialize`), [`McpError::Timeout`] (no `initialize` reply in time).
    pub(crate) async fn start(
        name: &str,
        config: &McpServerConfig,
        calls: Arc<ActiveCalls>,
        hidden: Option<&HiddenPaths>,
        logins: Option<&crate::oauth::TokenPlace>,
    ) -> Result<Self, McpError> {
        let handler = Handler { server: name.to_string(), info: client_config(), calls };
        let limit = Duration::from_millis(config.startup_timeout_ms);
        let timeout = || McpError::Timeout {
            server: name.to_string(),
            what: "initialize".into(),
            after_ms: config.startup_timeout_ms,
        };
        match config.transport(name)? {
            Transport::Stdio { program, args } => {
                let (child, exit, kill) = spawn(name, &program, &args, config, hidden)?;
                let mut exit_rx = exit.clone();
                let serve = rmcp::serve_client(handler, child);
                tokio::select! {
                    served = serve => match served {
                        Ok(service) => Ok(Connection { service, exit: Some(exit), kill }),
                        Err(e) => {
                            // A child that exits at start-up closes its pipe first: wait
                            // briefly for its status so the error can name the exit code.
                            let status = tokio::time::timeout(EXIT_GRACE, wait_exit(&mut exit_rx)).await;
                            kill.kill();
                            Err(McpError::unavailable(name, match status {
                                Ok(status) => format!("exited during initialize ({status})"),
                                Err(_) => format!("initialize failed: {e}"),
                            }))
                        }
                    },
                    status = wait_exit(&mut exit_rx) => {
                        kill.kill();
                        Err(McpError::unavailable(name, format!("exited during initialize ({status})")))
                    }
                    _ = tokio::time::sleep(limit) => {
                        kill.kill();
                        Err(timeout())
                    }
                }
            }
            Transport::Http { url } => {
                let manager = match logins {
                    Some(place) => crate::oauth::authorized_manager(name, url.as_str(), config, place).await?,
                    None => None,
                };
                let logged_in = manager.is_some();
                let (client, transport_config) = http_client(name, url, config)?;
                let served = match manager {
                    Some(manager) => {
                        let client = rmcp::transport::AuthClient::new(client, manager);
                        let transport = StreamableHttpClientTransport::with_client(client, transport_config);
                        tokio::time::timeout(limit, rmcp::serve_client(handler, transport)).await
                    }
                    None => {
                        let transport = StreamableHttpClientTransport::with_client(client, transport_config);
                        tokio::time::timeout(limit, rmcp::serve_client(handler, transport)).await
                    }
                }
                .map_err(|_| timeout())?;
                let service = served.map_err(|e| match e.auth_challenge() {
                    Some(challenge) => {
                        let reason = if logged_in {
                            crate::oauth::refusal(Some(challenge), "initialize")
                        } else {
                            "no login is stored for this owner".to_string()
                        };
                        McpError::login_required(name, reason, Some(challenge.to_string()))
                    }
                    None => McpError::unavailable(name, format!("initialize failed: {e}")),
                })?;
                Ok(Connection { service, exit: None, kill: GroupKill::default() })
            }
        }
    }

    /// True once a stdio child has exited or the SDK's service loop has ended.
    pub(crate) fn has_exited(&self) -> bool {
        self.exit.as_ref().is_some_and(|exit| exit.borrow().is_some()) || self.service.is_closed()
    }

    /// The peer to send requests to.
    pub(crate) fn peer(&self) -> &rmcp::Peer<RoleClient> {
        self.service.peer()
    }

    /// Resolves with the exit status when a stdio child has exited; never for HTTP (a lost
    /// session surfaces as a request error).
    pub(crate) async fn closed(&self) -> String {
        match &self.exit {
            Some(exit) => wait_exit(&mut exit.clone()).await,
            // HTTP: a lost session surfaces as a request error; nothing to watch.
            None => std::future::pending().await,
        }
    }

    /// Describes why a request failed with `err`: the exit status when the child exited
    /// (waiting up to 500 ms for it after the pipe closed), else the SDK's message.
    pub(crate) async fn describe_failure(&self, err: &ServiceError) -> String {
        if let Some(exit) = &self.exit
            && matches!(err, ServiceError::TransportClosed | ServiceError::TransportSend(_))
        {
            let mut rx = exit.clone();
            if let Ok(status) = tokio::time::timeout(EXIT_GRACE, wait_exit(&mut rx)).await {
                return format!("process exited ({status})");
            }
        }
        format!("connection failed: {err}")
    }
}

/// Steward's `initialize` parameters: one client capability, elicitation in form mode (no
/// URL mode, no sampling or roots), and the newest protocol version that still has an
/// `initialize` handshake (the SDK's default, its newest version, has none).
fn client_config() -> ClientConfig {
    let mut capabilities = ClientCapabilities::default();
    capabilities.elicitation = Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
    ClientConfig::new(capabilities, Implementation::new("steward", env!("CARGO_PKG_VERSION")))
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

async fn wait_exit(rx: &mut watch::Receiver<Option<String>>) -> String {
    match rx.wait_for(Option::is_some).await {
        Ok(status) => status.clone().unwrap_or_default(),
        // The watcher task ended without a status (runtime shutting down).
        Err(_) => "process gone".to_string(),
    }
}

/// What a sandboxed stdio server must not see, asked each time one starts: given its working
/// directory, the absolute paths its sandbox covers with an empty file or folder (the
/// workspace's secret and `deny_path` files, Steward's own state), or why they cannot be
/// known (then the server is not started).
pub type HiddenPaths = Arc<dyn Fn(&std::path::Path) -> Result<Vec<std::path::PathBuf>, String> + Send + Sync>;

type ChildPipes = (tokio::process::ChildStdout, tokio::process::ChildStdin);

/// Spawns the stdio server: cleared environment, own process group, piped stdio; in the
/// sandbox (unless `sandbox = false`), with `hidden`'s paths covered.
fn spawn(
    name: &str,
    program: &str,
    args: &[String],
    config: &McpServerConfig,
    hidden: Option<&HiddenPaths>,
) -> Result<(ChildPipes, watch::Receiver<Option<String>>, GroupKill), McpError> {
    let env = child_env(name, config, std::env::vars_os(), &|var| std::env::var(var).ok())?;
    let mut child = if config.sandbox {
        let request = sandboxed_request(name, program, args, config, env, hidden)?;
        let mut confined =
            steward_sandbox::command(request).map_err(|e| McpError::unavailable(name, format!("not started: {e}")))?;
        confined.command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        tracing::debug!(server = %name, profile = %confined.profile.join(","), "starting a sandboxed MCP server");
        confined.spawn().map_err(|e| McpError::unavailable(name, format!("cannot start `{program}`: {e}")))?
    } else {
        tracing::warn!(server = %name, "starting an MCP server outside the sandbox (sandbox = false)");
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .env_clear()
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        if let Some(cwd) = &config.cwd {
            command.current_dir(cwd);
        }
        command.spawn().map_err(|e| McpError::unavailable(name, format!("cannot start `{program}`: {e}")))?
    };
    let (Some(stdin), Some(stdout), stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
        return Err(McpError::unavailable(name, "child has no stdio pipes"));
    };
    if let Some(stderr) = stderr {
        let server = name.to_string();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(server = %server, "mcp server stderr: {line}");
            }
        });
    }
    let (tx, rx) = watch::channel(None);
    let kill = GroupKill {
        pgid: child.id().and_then(|p| libc::pid_t::try_from(p).ok()),
        exit: Some(rx.clone()),
        reap: CancellationToken::new(),
    };
    let reap = kill.reap.clone();
    let lifetime = config.sandbox.then_some(steward_sandbox::MAX_LIFETIME);
    let server = name.to_string();
    tokio::spawn(async move {
        let text = watch_child(&server, child, reap, lifetime).await;
        let _ = tx.send(Some(text));
    });
    Ok(((stdout, stdin), rx, kill))
}

/// Waits for the server process to end, killing it when `reap` fires or, for a sandboxed
/// server, when the sandbox lifetime (`lifetime`, SPEC C3's 60 minutes) runs out; a later
/// use starts it again. Returns its exit status as text.
async fn watch_child(
    server: &str,
    mut child: tokio::process::Child,
    reap: CancellationToken,
    lifetime: Option<Duration>,
) -> String {
    let expired = async {
        match lifetime {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    let status = tokio::select! {
        status = child.wait() => status,
        _ = reap.cancelled() => {
            let _ = child.start_kill();
            child.wait().await
        }
        _ = expired => {
            tracing::warn!(server = %server, "the MCP server reached the sandbox lifetime and was stopped");
            let _ = child.start_kill();
            child.wait().await
        }
    };
    match status {
        Ok(status) => status.to_string(),
        Err(e) => format!("wait failed: {e}"),
    }
}

/// Data limit of a sandboxed MCP server (8 GiB): Node and language servers need more than
/// a tool's command.
const MCP_MEMORY_BYTES: u64 = 8 * 1024 * 1024 * 1024;

/// The sandboxed request of a stdio server (see [`McpServerConfig::sandbox`]): network and
/// writes as an unsandboxed server has them, everything else confined, and the paths `hidden`
/// names for its working directory covered. Errors: [`McpError::Unavailable`] when the
/// request cannot be made (no working directory, a variable that is not UTF-8, the hidden
/// paths cannot be known).
fn sandboxed_request(
    name: &str,
    program: &str,
    args: &[String],
    config: &McpServerConfig,
    env: Vec<(OsString, OsString)>,
    hidden: Option<&HiddenPaths>,
) -> Result<steward_sandbox::ExecRequest, McpError> {
    let env_set = env
        .into_iter()
        .map(|(k, v)| match (k.into_string(), v.into_string()) {
            (Ok(k), Ok(v)) => Ok((k, v)),
            _ => Err(McpError::unavailable(name, "an environment variable is not UTF-8")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let cwd = match &config.cwd {
        Some(cwd) => cwd.clone(),
        None => {
            std::env::current_dir().map_err(|e| McpError::unavailable(name, format!("no working directory: {e}")))?
        }
    };
    let mask = match hidden {
        Some(hidden) => hidden(&cwd).map_err(|e| McpError::unavailable(name, format!("not started: {e}")))?,
        None => Vec::new(),
    };
    let mut argv = vec![program.to_string()];
    argv.extend(args.iter().cloned());
    Ok(steward_sandbox::ExecRequest {
        env_set,
        timeout: steward_sandbox::MAX_LIFETIME,
        network: true,
        memory_bytes: Some(MCP_MEMORY_BYTES),
        writable: vec![PathBuf::from("/")],
        home_keep: program_home_folder(program),
        mask,
        unix_sockets: config.unix_sockets,
        ..steward_sandbox::ExecRequest::new(argv, cwd)
    })
}

/// [`sandboxed_request`] made into a command ready to spawn.
#[cfg(test)]
fn sandboxed_command(
    name: &str,
    program: &str,
    args: &[String],
    config: &McpServerConfig,
    env: Vec<(OsString, OsString)>,
) -> Result<steward_sandbox::ConfinedCommand, McpError> {
    let request = sandboxed_request(name, program, args, config, env, None)?;
    steward_sandbox::command(request).map_err(|e| McpError::unavailable(name, format!("not started: {e}")))
}

/// The folder directly beneath `$HOME` that holds `program` (looked up in `PATH` when it has
/// no `/`), as spelled and as resolved through links: a server installed with a version
/// manager (`~/.nvm`, `~/.pyenv`) needs its whole tree. Empty when it lies elsewhere.
fn program_home_folder(program: &str) -> Vec<PathBuf> {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from).and_then(|h| h.canonicalize().ok()) else {
        return Vec::new();
    };
    let found = if program.contains('/') {
        Some(PathBuf::from(program))
    } else {
        std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).map(|dir| dir.join(program)).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .find(|candidate| candidate.is_file())
    };
    let Some(found) = found else { return Vec::new() };
    let mut folders = Vec::new();
    for path in [Some(found.clone()), found.canonicalize().ok()].into_iter().flatten() {
        let path =
            if path.is_absolute() { path } else { std::env::current_dir().map(|d| d.join(&path)).unwrap_or(path) };
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
    folders
}

/// The child's environment: allow-listed names from `parent` (the sandbox's
/// [`steward_sandbox::DEFAULT_ENV_ALLOW`] and `LC_*`, never
/// [`steward_sandbox::ENV_NEVER_PASSED`]), then the configured `env` values.
pub(crate) fn child_env(
    name: &str,
    config: &McpServerConfig,
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(OsString, OsString)>, McpError> {
    let allowed = |var: &str| {
        !steward_sandbox::ENV_NEVER_PASSED.contains(&var)
            && (steward_sandbox::DEFAULT_ENV_ALLOW.contains(&var) || var.starts_with("LC_"))
            && !config.env.contains_key(var)
    };
    let mut env: Vec<(OsString, OsString)> =
        parent.into_iter().filter(|(var, _)| var.to_str().is_some_and(allowed)).collect();
    for (var, source) in &config.env {
        let value = source.resolve(lookup).map_err(|e| McpError::config(name, format!("env.{var}: {e}")))?;
        env.push((OsString::from(var), OsString::from(value)));
    }
    Ok(env)
}

/// The reqwest client of the streamable HTTP transport, which never follows redirects, and
/// the transport's configuration with the configured headers (marked sensitive so they never
/// appear in logs).
fn http_client(
    name: &str,
    url: reqwest::Url,
    config: &McpServerConfig,
) -> Result<(reqwest::Client, StreamableHttpClientTransportConfig), McpError> {
    // The system's root certificates are loaded only when an `https://` server is checked.
    let client = steward_http::client_builder()
        .map_err(|e| McpError::unavailable(name, format!("http client: {e}")))?
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_millis(config.startup_timeout_ms))
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| McpError::unavailable(name, format!("http client: {e}")))?;
    let mut headers = HashMap::new();
    for (key, source) in &config.headers {
        let value = source
            .resolve(&|var| std::env::var(var).ok())
            .map_err(|e| McpError::config(name, format!("headers.{key}: {e}")))?;
        let header = reqwest::header::HeaderName::from_bytes(key.as_bytes())
            .map_err(|_| McpError::config(name, format!("invalid header name {key:?}")))?;
        let mut value = reqwest::header::HeaderValue::from_str(&value)
            .map_err(|_| McpError::config(name, format!("headers.{key}: value is not a valid header value")))?;
        value.set_sensitive(true);
        headers.insert(header, value);
    }
    Ok((client, StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{EnvValue, ValueSource};

    /// A stdio server starts in the sandbox: PID 2 of its own PID namespace, the seccomp
    /// filter refusing namespaces, the MCP data limit.
    #[tokio::test]
    async fn stdio_servers_start_in_the_sandbox() {
        let script =
            "echo pid=$$; unshare --user true 2>/dev/null && echo unshare=ok || echo unshare=refused; ulimit -d";
        let args = ["-c".to_string(), script.to_string()];
        let config = McpServerConfig::stdio(["sh"]);
        let env = child_env("t", &config, std::env::vars_os(), &|_| None).unwrap();
        let mut confined = sandboxed_command("t", "sh", &args, &config, env).unwrap();
        assert!(confined.profile.iter().any(|p| p.starts_with("mntns(")), "{:?}", confined.profile);
        assert!(confined.profile.iter().any(|p| p == "seccomp(unix=denied)"), "{:?}", confined.profile);
        confined.command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
        let out = confined.spawn().unwrap().wait_with_output().await.unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text, format!("pid=2\nunshare=refused\n{}\n", MCP_MEMORY_BYTES / 1024), "{text}");
    }

    /// The paths the hidden-paths function names for the server's working directory are
    /// covered in its sandbox: the server reads an empty file and an empty folder there.
    #[tokio::test]
    async fn stdio_servers_do_not_see_hidden_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("denied.txt"), "hidden-content").unwrap();
        std::fs::create_dir_all(root.join("state")).unwrap();
        std::fs::write(root.join("state/approval.key"), "hidden-key").unwrap();
        let config = McpServerConfig { cwd: Some(root.clone()), ..McpServerConfig::stdio(["sh"]) };
        let asked = Arc::new(std::sync::Mutex::new(None));
        let seen = asked.clone();
        let masked = root.clone();
        let hidden: HiddenPaths = Arc::new(move |cwd: &std::path::Path| {
            *seen.lock().unwrap() = Some(cwd.to_path_buf());
            Ok(vec![masked.join("denied.txt"), masked.join("state")])
        });
        let script = "cat denied.txt; cat state/approval.key 2>/dev/null || echo state-hidden";
        let args = ["-c".to_string(), script.to_string()];
        let env = child_env("t", &config, std::env::vars_os(), &|_| None).unwrap();
        let request = sandboxed_request("t", "sh", &args, &config, env, Some(&hidden)).unwrap();
        assert_eq!(request.mask, [root.join("denied.txt"), root.join("state")]);
        assert_eq!(asked.lock().unwrap().as_deref(), Some(root.as_path()));
        let mut confined = steward_sandbox::command(request).unwrap();
        assert!(confined.profile.iter().any(|p| p.starts_with("mntns(mask=2")), "{:?}", confined.profile);
        confined.command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
        let out = confined.spawn().unwrap().wait_with_output().await.unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "state-hidden\n");
        // When they cannot be known, the server is not started.
        let failing: HiddenPaths = Arc::new(|_: &std::path::Path| Err("too many entries".to_string()));
        let env = child_env("t", &config, std::env::vars_os(), &|_| None).unwrap();
        let err = sandboxed_request("t", "sh", &args, &config, env, Some(&failing)).unwrap_err();
        assert!(err.to_string().contains("too many entries"), "{err}");
    }

    /// A sandboxed server is stopped when the sandbox lifetime runs out (the clock is paused
    /// and jumps ahead while the server sleeps).
    #[tokio::test(start_paused = true)]
    async fn a_sandboxed_server_is_stopped_at_the_sandbox_lifetime() {
        let config = McpServerConfig::stdio(["sleep"]);
        let env = child_env("t", &config, std::env::vars_os(), &|_| None).unwrap();
        let mut confined = sandboxed_command("t", "sleep", &["7200".to_string()], &config, env).unwrap();
        confined.command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        let child = confined.spawn().unwrap();
        let started = tokio::time::Instant::now();
        let status = watch_child("t", child, CancellationToken::new(), Some(steward_sandbox::MAX_LIFETIME)).await;
        assert!(status.contains("signal: 9"), "{status}");
        assert!(started.elapsed() >= steward_sandbox::MAX_LIFETIME);
    }

    #[test]
    fn initialize_offers_a_version_that_has_an_initialize_handshake() {
        let config = client_config();
        assert!(config.protocol_version.has_initialize(), "{}", config.protocol_version);
        assert_eq!(config.protocol_version, ProtocolVersion::V_2025_11_25);
        assert_eq!(
            serde_json::to_value(&config.capabilities).unwrap(),
            serde_json::json!({"elicitation": {"form": {}}}),
            "form elicitation only"
        );
    }

    #[test]
    fn child_env_is_allow_list_plus_explicit_values() {
        let mut config = McpServerConfig::stdio(["srv"]);
        config.env.insert("LOG".into(), ValueSource::Literal("1".into()));
        config.env.insert("TOKEN".into(), ValueSource::Env(EnvValue { env: "GH".into(), prefix: String::new() }));
        config.env.insert("HOME".into(), ValueSource::Literal("/tmp/h".into()));
        let parent = [
            ("PATH", "/bin"),
            ("HOME", "/home/u"),
            ("LC_CTYPE", "C"),
            ("OPENAI_API_KEY", "sk-x"),
            ("GH", "secret-gh"),
            ("BASH_ENV", "/x"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env = child_env("s", &config, parent, &|v| (v == "GH").then(|| "tok".to_string())).unwrap();
        let mut pairs: Vec<(String, String)> =
            env.iter().map(|(k, v)| (k.to_string_lossy().into(), v.to_string_lossy().into())).collect();
        pairs.sort();
        let expected = [("HOME", "/tmp/h"), ("LC_CTYPE", "C"), ("LOG", "1"), ("PATH", "/bin"), ("TOKEN", "tok")]
            .map(|(k, v)| (k.to_string(), v.to_string()));
        assert_eq!(pairs, expected);
        let missing = child_env("s", &config, Vec::new(), &|_| None).unwrap_err();
        assert!(missing.to_string().contains("GH"));
    }
}
