//! steward-mcp against servers that misbehave (our own `tests/fixtures/fault_server.py`, run
//! with `python3`) and against the real MCP reference servers (`peer_mcp_*`: run
//! `eval "$(bash .ci/peers.sh)"` first to install them and export their paths).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use steward_mcp::{Backoff, McpError, McpManager, McpServerConfig, NO_OUTPUT, ServerState, ValueSource};
use steward_protocol::ErrorClass;
use tokio_util::sync::CancellationToken;

fn fixture() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fault_server.py").display().to_string()
}

/// The Python interpreter itself (not a version-manager shim, which would add its own
/// variables to the environment the server sees).
fn python() -> String {
    static PYTHON: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let out = std::process::Command::new("python3")
                .args(["-c", "import sys; print(sys.executable)"])
                .output()
                .expect("python3 runs");
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        })
        .clone()
}

/// The fault server in `mode`, with short limits.
fn fault(mode: &str) -> McpServerConfig {
    let mut config = McpServerConfig::stdio([python(), fixture(), mode.to_string()]);
    config.startup_timeout_ms = 3_000;
    config.call_timeout_ms = 3_000;
    config
}

fn manager(servers: &[(&str, McpServerConfig)]) -> McpManager {
    let configs: BTreeMap<String, McpServerConfig> =
        servers.iter().map(|(name, config)| (name.to_string(), config.clone())).collect();
    McpManager::new(&configs).unwrap()
}

async fn call(manager: &McpManager, name: &str, args: Value) -> Result<steward_mcp::McpCallOutput, McpError> {
    manager.call(name, args, CancellationToken::new()).await
}

#[tokio::test]
async fn b22_server_dies_mid_call_is_reported_fast_not_retried_and_restarted_later() {
    let mut config = fault("crash");
    config.call_timeout_ms = 60_000;
    // Backoff windows of seconds, so a loaded machine cannot outlast one between two calls.
    let manager = manager(&[("crashy", config)])
        .with_backoff(Backoff { initial: Duration::from_secs(3), max: Duration::from_secs(30) });
    let listed = manager.tools().await;
    assert!(listed.failures.is_empty(), "{:?}", listed.failures);
    assert!(listed.tools.iter().any(|t| t.spec.name == "crashy__echo"));

    let started = Instant::now();
    let err = call(&manager, "crashy__echo", json!({})).await.unwrap_err();
    // Reported when the server dies, not after the 60 s call timeout.
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    assert_eq!(err.class(), ErrorClass::McpUnavailable);
    let text = err.to_string();
    assert!(text.contains("`crashy`"), "{text}");
    assert!(text.contains("exit status: 3"), "{text}");
    assert!(text.contains("not retried"), "{text}");
    assert!(matches!(&manager.status().await[0].1, ServerState::Failed { .. }));

    // Within the backoff: fails without starting anything.
    let err = call(&manager, "crashy__echo", json!({})).await.unwrap_err();
    assert_eq!(err.class(), ErrorClass::McpUnavailable);
    assert!(err.to_string().contains("restart in"), "{err}");

    // After the backoff: restarted (initialize succeeds again), and this call dies the same way.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let err = call(&manager, "crashy__echo", json!({})).await.unwrap_err();
        if err.to_string().contains("exit status: 3") {
            break;
        }
        assert!(err.to_string().contains("restart in"), "{err}");
        assert!(Instant::now() < deadline, "never restarted: {err}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The backoff doubled to 6 s: the next call, right away, fails without a restart.
    let err = call(&manager, "crashy__echo", json!({})).await.unwrap_err();
    assert!(err.to_string().contains("restart in"), "{err}");
}

#[tokio::test]
async fn b22_crashed_call_runs_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let mut config = fault("crash");
    config.env.insert("FAULT_LOG".into(), ValueSource::Literal(log.display().to_string()));
    let manager = manager(&[("crashy", config)])
        .with_backoff(Backoff { initial: Duration::from_millis(200), max: Duration::from_millis(200) });
    assert!(call(&manager, "crashy__echo", json!({"n": 1})).await.is_err());
    // Counted by the server (every process appends to the log) after many backoff windows and
    // after the server has been started again: neither a retry nor the restart replays the call.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _ = manager.tools().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls.lines().count(), 1, "{calls}");
}

#[tokio::test]
async fn b22_no_initialize_reply_times_out_and_other_servers_still_work() {
    let mut silent = fault("no_init");
    silent.startup_timeout_ms = 1_000;
    let manager = manager(&[("silent", silent), ("good", fault("normal"))]);
    let started = Instant::now();
    let listed = manager.tools().await;
    assert!(started.elapsed() < Duration::from_secs(4), "took {:?}", started.elapsed());
    assert_eq!(listed.failures.len(), 1);
    let failure = &listed.failures[0];
    assert_eq!(failure.class(), ErrorClass::Timeout);
    assert!(failure.to_string().contains("`silent`") && failure.to_string().contains("initialize"), "{failure}");
    assert!(listed.tools.iter().all(|t| t.server == "good"));
    let out = call(&manager, "good__echo", json!({"x": 1})).await.unwrap();
    assert_eq!(out.text, r#"{"args": {"x": 1}, "tool": "echo"}"#);
}

#[tokio::test]
async fn b22_garbage_before_initialize_reply_is_skipped() {
    let manager = manager(&[("noisy", fault("garbage"))]);
    let listed = manager.tools().await;
    assert!(listed.failures.is_empty(), "{:?}", listed.failures);
    let out = call(&manager, "noisy__echo", json!({})).await.unwrap();
    assert!(out.text.contains("\"tool\": \"echo\""), "{}", out.text);
}

#[tokio::test]
async fn b22_server_that_stops_answering_times_out_and_is_marked_failed() {
    let mut config = fault("stall");
    config.call_timeout_ms = 1_000;
    let manager = manager(&[("stuck", config)]);
    assert!(manager.tools().await.failures.is_empty());
    let started = Instant::now();
    let err = call(&manager, "stuck__echo", json!({})).await.unwrap_err();
    // 1 s call limit plus at most 2 s for the ping that finds it dead.
    assert!(started.elapsed() < Duration::from_secs(4), "took {:?}", started.elapsed());
    assert_eq!(err.class(), ErrorClass::Timeout);
    assert!(err.to_string().contains("`stuck`") && err.to_string().contains("1000 ms"), "{err}");
    match &manager.status().await[0].1 {
        ServerState::Failed { reason, .. } => assert!(reason.contains("stopped answering"), "{reason}"),
        other => panic!("expected failed, got {other:?}"),
    }
}

#[tokio::test]
async fn slow_call_times_out_but_a_live_server_keeps_serving() {
    let mut config = fault("normal");
    config.call_timeout_ms = 800;
    let manager = manager(&[("slow", config)]);
    let err = call(&manager, "slow__hang", json!({})).await.unwrap_err();
    assert_eq!(err.class(), ErrorClass::Timeout);
    assert_eq!(manager.status().await[0].1, ServerState::Running);
    assert!(call(&manager, "slow__echo", json!({})).await.is_ok());
}

#[tokio::test]
async fn cancelled_call_returns_promptly() {
    let manager = manager(&[("slow", fault("normal"))]);
    manager.tools().await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let err = manager.call("slow__hang", json!({}), cancel).await.unwrap_err();
    assert_eq!(err.class(), ErrorClass::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn b23_every_result_shape_becomes_a_tool_result() {
    let manager = manager(&[("gitlab", fault("normal"))]);
    // (a) JSON-RPC error: an error with the code and the message.
    let err = call(&manager, "gitlab__rpc_error", json!({"file_path": "src/missing.rs"})).await.unwrap_err();
    assert_eq!(err.class(), ErrorClass::ToolFailed);
    let text = err.to_string();
    assert!(text.contains("-32603") && text.contains("File not found: src/missing.rs"), "{text}");
    // (b) both parts in order.
    let out = call(&manager, "gitlab__two_parts", json!({})).await.unwrap();
    assert_eq!((out.text.as_str(), out.is_error), ("part 1\npart 2", false));
    // (c) isError.
    let out = call(&manager, "gitlab__is_error", json!({})).await.unwrap();
    assert_eq!((out.text.as_str(), out.is_error), ("denied by server", true));
    // (d) empty content: a non-empty placeholder.
    let out = call(&manager, "gitlab__empty", json!({})).await.unwrap();
    assert_eq!(out.text, NO_OUTPUT);
    // (e) text kept, image replaced by a note.
    let out = call(&manager, "gitlab__image", json!({})).await.unwrap();
    assert_eq!(out.text, "see image\n[image: image/png, 8 bytes]");
    // The server is still fine after all of these.
    assert_eq!(manager.status().await[0].1, ServerState::Running);
}

#[tokio::test]
async fn b25_two_megabyte_results_are_capped_without_splitting_utf8() {
    let manager = manager(&[("big", fault("normal"))]);
    for (tool, ending) in [("big__big_ascii", ""), ("big__big_multibyte", "é漢")] {
        let out = call(&manager, tool, json!({})).await.unwrap();
        assert!(out.text.len() <= 32 * 1024, "{tool}: {} bytes", out.text.len());
        assert!(out.text.starts_with("LINE 0000000 xxxx"), "{tool}");
        let last = format!("LINE 0039999 {}{ending}\n", "x".repeat(40));
        assert!(out.text.ends_with(&last), "{tool}");
        assert!(out.text.contains(&format!("[… {} bytes (", out.omitted_bytes)), "{tool}");
        let full = out.full_text.as_deref().unwrap();
        assert!(full.len() > 2_000_000);
        assert_eq!(full.len() - out.omitted_bytes, out.text.len() - marker_len(&out.text));
    }
}

/// Length of the omission marker inside a capped text.
fn marker_len(text: &str) -> usize {
    let start = text.find("\n[… ").unwrap();
    let end = text[start..].find("…]\n").unwrap() + start + "…]\n".len();
    end - start
}

#[tokio::test]
async fn names_with_dots_and_spaces_are_renamed_and_mapped_back() {
    let manager = manager(&[("t", fault("normal"))]);
    let listed = manager.tools().await;
    let names: Vec<&str> = listed.tools.iter().map(|t| t.spec.name.as_str()).collect();
    assert!(names.iter().all(|n| steward_mcp::names::is_valid_tool_name(n)), "{names:?}");
    assert!(names.contains(&"t__files_read"));
    // `list all` sorts before `list_all`, so it keeps the plain name; `list_all` gets a hash.
    let renamed: Vec<(&str, &str)> = listed
        .tools
        .iter()
        .filter(|t| t.tool.starts_with("list"))
        .map(|t| (t.tool.as_str(), t.spec.name.as_str()))
        .collect();
    assert_eq!(renamed.len(), 2);
    assert!(renamed.contains(&("list all", "t__list_all")));
    let hashed = renamed.iter().find(|(tool, _)| *tool == "list_all").unwrap().1;
    assert!(hashed.starts_with("t__list_all_") && hashed.len() == "t__list_all_".len() + 8, "{hashed}");
    for (registry, real) in [("t__files_read", "files.read"), ("t__list_all", "list all"), (hashed, "list_all")] {
        let out = call(&manager, registry, json!({})).await.unwrap();
        assert!(out.text.contains(&format!("\"tool\": \"{real}\"")), "{registry}: {}", out.text);
    }
}

#[tokio::test]
async fn specs_carry_risk_writes_and_taint() {
    let mut config = fault("normal");
    config.risk = steward_protocol::RiskLevel::Low;
    config.read_only_tools = vec!["is_*".into()];
    let manager = manager(&[("s", config)]);
    let listed = manager.tools().await;
    let spec = |name: &str| listed.tools.iter().find(|t| t.spec.name == name).unwrap().spec.clone();
    // Read-only by the user's `read_only_tools`, never by the server's `readOnlyHint`.
    assert!(spec("s__echo").writes, "echo's readOnlyHint is only the server's claim");
    assert!(!spec("s__is_error").writes);
    assert!(listed.tools.iter().all(|t| t.spec.untrusted_output && t.spec.risk == steward_protocol::RiskLevel::Low));
    assert_eq!(spec("s__echo").description, "Returns its arguments as JSON");
    assert_eq!(spec("s__echo").input_schema, json!({"type": "object", "properties": {}}));
}

#[tokio::test]
async fn allow_deny_and_disabled_servers_limit_what_is_offered() {
    let mut config = fault("normal");
    config.tool_deny = vec!["big_*".into()];
    let mut off = fault("normal");
    off.enabled = false;
    let manager = manager(&[("s", config), ("off", off)]);
    let listed = manager.tools().await;
    assert!(listed.tools.iter().all(|t| !t.tool.starts_with("big_") && t.server == "s"));
    let err = call(&manager, "s__big_ascii", json!({})).await.unwrap_err();
    assert_eq!(err, McpError::UnknownTool("s__big_ascii".into()));
    assert!(manager.status().await.contains(&("off".to_string(), ServerState::Disabled)));
    let err = call(&manager, "s__echo", json!([1])).await.unwrap_err();
    assert_eq!(err.class(), ErrorClass::InvalidToolCall);
}

#[tokio::test]
async fn child_gets_only_the_allow_list_and_configured_env() {
    let mut config = fault("normal");
    config.env.insert("MCP_FLAG".into(), ValueSource::Literal("1".into()));
    let manager = manager(&[("s", config)]);
    let out = call(&manager, "s__env_names", json!({})).await.unwrap();
    for name in out.text.split(' ') {
        let allowed =
            steward_sandbox::DEFAULT_ENV_ALLOW.contains(&name) || name.starts_with("LC_") || name == "MCP_FLAG";
        assert!(allowed, "`{name}` leaked into the child: {}", out.text);
    }
    assert!(out.text.split(' ').any(|n| n == "MCP_FLAG"));
}

#[tokio::test]
async fn missing_program_is_unavailable_not_a_panic() {
    let manager = manager(&[("ghost", McpServerConfig::stdio(["/nonexistent/mcp-server"]))]);
    let listed = manager.tools().await;
    assert_eq!(listed.failures.len(), 1);
    assert_eq!(listed.failures[0].class(), ErrorClass::McpUnavailable);
    assert!(listed.failures[0].to_string().contains("cannot start"), "{}", listed.failures[0]);
}

#[tokio::test]
async fn server_exiting_at_startup_names_its_exit_code() {
    let config = McpServerConfig::stdio([python(), "-c".to_string(), "import sys; sys.exit(7)".to_string()]);
    let manager = manager(&[("broken", config)]);
    let started = Instant::now();
    let listed = manager.tools().await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(listed.failures.len(), 1);
    let text = listed.failures[0].to_string();
    assert!(text.contains("`broken`") && text.contains("exit status: 7"), "{text}");
}

// --- real reference servers ------------------------------------------------------------------

fn peer_bin(var: &str) -> String {
    std::env::var(var)
        .unwrap_or_else(|_| panic!("{var} is not set: run `eval \"$(bash .ci/peers.sh)\"` to install the MCP servers"))
}

async fn check_everything(manager: &McpManager, server: &str) {
    let listed = manager.tools().await;
    assert!(listed.failures.is_empty(), "{:?}", listed.failures);
    let echo = listed.tools.iter().find(|t| t.spec.name == format!("{server}__echo")).unwrap();
    assert!(echo.spec.writes, "echo's readOnlyHint does not make it read-only");
    assert!(echo.spec.input_schema["properties"]["message"].is_object());
    assert!(listed.tools.iter().any(|t| t.spec.name == format!("{server}__get-sum")));
    let out = call(manager, &format!("{server}__echo"), json!({"message": "hello from steward"})).await.unwrap();
    assert_eq!((out.text.as_str(), out.is_error), ("Echo: hello from steward", false));
    let out = call(manager, &format!("{server}__get-sum"), json!({"a": 2, "b": 40})).await.unwrap();
    assert!(out.text.contains("42"), "{}", out.text);
    let out = call(manager, &format!("{server}__get-tiny-image"), json!({})).await.unwrap();
    assert!(out.text.contains("[image: image/png, "), "{}", out.text);
}

#[tokio::test]
async fn peer_mcp_everything_stdio() {
    let bin = peer_bin("STEWARD_TEST_MCP_EVERYTHING");
    let manager = manager(&[("everything", McpServerConfig::stdio([bin, "stdio".to_string()]))]);
    check_everything(&manager, "everything").await;
    // The real server sees a scrubbed environment too.
    let out = call(&manager, "everything__get-env", json!({})).await.unwrap();
    assert!(!out.text.contains("CARGO_PKG_NAME"), "{}", out.text);
}

/// `mcp-server-everything streamableHttp` on a free port; killed when dropped.
struct HttpEverything {
    _child: tokio::process::Child,
}

impl HttpEverything {
    async fn start() -> (HttpEverything, u16) {
        let bin = peer_bin("STEWARD_TEST_MCP_EVERYTHING");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = tokio::process::Command::new(bin)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(15);
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            assert!(Instant::now() < deadline, "server-everything did not listen on {port}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        (HttpEverything { _child: child }, port)
    }
}

#[tokio::test]
async fn peer_mcp_everything_streamable_http() {
    let (_server, port) = HttpEverything::start().await;
    let mut config = McpServerConfig::http(format!("http://127.0.0.1:{port}/mcp"));
    config.headers.insert("X-Steward-Test".into(), ValueSource::Literal("1".into()));
    let manager = manager(&[("web", config)]);
    check_everything(&manager, "web").await;
}

#[tokio::test]
async fn peer_mcp_http_server_gone_is_unavailable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut config = McpServerConfig::http(format!("http://127.0.0.1:{port}/mcp"));
    config.startup_timeout_ms = 2_000;
    let manager = manager(&[("down", config)]);
    let started = Instant::now();
    let listed = manager.tools().await;
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(listed.failures.len(), 1);
    assert!(
        matches!(listed.failures[0].class(), ErrorClass::McpUnavailable | ErrorClass::Timeout),
        "{:?}",
        listed.failures[0]
    );
}

#[tokio::test]
async fn peer_mcp_filesystem_refuses_paths_outside_its_root() {
    let bin = peer_bin("STEWARD_TEST_MCP_FILESYSTEM");
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    std::fs::write(root_path.join("inside.txt"), "inside text").unwrap();
    let outside = tempfile::tempdir().unwrap();
    let outside_file = outside.path().canonicalize().unwrap().join("outside.txt");
    std::fs::write(&outside_file, "outside text").unwrap();
    let config = McpServerConfig {
        read_only_tools: vec!["read_*".into()],
        ..McpServerConfig::stdio([bin, root_path.display().to_string()])
    };
    let manager = manager(&[("fs", config)]);
    let listed = manager.tools().await;
    assert!(listed.failures.is_empty(), "{:?}", listed.failures);
    let read = listed.tools.iter().find(|t| t.spec.name == "fs__read_text_file").unwrap();
    assert!(!read.spec.writes, "declared read-only by the configuration");
    let write = listed.tools.iter().find(|t| t.spec.name == "fs__write_file").unwrap();
    assert!(write.spec.writes);

    let inside = root_path.join("inside.txt").display().to_string();
    let out = call(&manager, "fs__read_text_file", json!({"path": inside})).await.unwrap();
    assert_eq!((out.text.as_str(), out.is_error), ("inside text", false));
    let out = call(&manager, "fs__read_text_file", json!({"path": outside_file.display().to_string()})).await.unwrap();
    assert!(out.is_error, "{}", out.text);
    assert!(!out.text.contains("outside text"));
    assert!(out.text.to_lowercase().contains("access denied"), "{}", out.text);
}

/// Answers every elicitation the way a test says, recording what it was asked.
struct Scripted {
    answer: Box<dyn Fn(&steward_mcp::ElicitationRequest) -> steward_mcp::ElicitationAnswer + Send + Sync>,
    delay: Duration,
    asked: std::sync::Mutex<Vec<steward_mcp::ElicitationRequest>>,
}

#[async_trait::async_trait]
impl steward_mcp::Elicitor for Scripted {
    async fn elicit(&self, request: steward_mcp::ElicitationRequest) -> steward_mcp::ElicitationAnswer {
        self.asked.lock().unwrap().push(request.clone());
        tokio::time::sleep(self.delay).await;
        (self.answer)(&request)
    }
}

fn scripted(
    delay: Duration,
    answer: impl Fn(&steward_mcp::ElicitationRequest) -> steward_mcp::ElicitationAnswer + Send + Sync + 'static,
) -> std::sync::Arc<Scripted> {
    std::sync::Arc::new(Scripted { answer: Box::new(answer), delay, asked: Default::default() })
}

async fn call_eliciting(
    manager: &McpManager,
    name: &str,
    elicitor: Option<std::sync::Arc<Scripted>>,
) -> Result<Value, McpError> {
    let elicitor = elicitor.map(|e| e as std::sync::Arc<dyn steward_mcp::Elicitor>);
    let out = manager.call_eliciting(name, json!({}), CancellationToken::new(), elicitor).await?;
    Ok(serde_json::from_str(&out.text).unwrap_or(Value::String(out.text)))
}

/// A server's question during a call reaches the call's elicitor with the server's order of
/// fields; the pre-filled form plus one typed value goes back validated, and waiting for the
/// answer does not count against the call's timeout.
#[tokio::test]
async fn an_elicitation_during_a_call_reaches_its_elicitor_and_the_answer_the_server() {
    let mut config = fault("normal");
    config.call_timeout_ms = 1_000;
    let manager = manager(&[("asks", config)]);
    let owner = scripted(Duration::from_millis(1_500), |request| {
        let fields = steward_mcp::elicitation::form_fields(&request.schema, &request.order).unwrap();
        let mut inputs = steward_mcp::elicitation::prefilled_inputs(&fields);
        inputs.iter_mut().find(|(name, _)| name == "email").unwrap().1 = "ada@example.org".into();
        steward_mcp::ElicitationAnswer::Accept(
            steward_mcp::elicitation::answer_form(&request.schema, &fields, &inputs).unwrap(),
        )
    });
    let answer = call_eliciting(&manager, "asks__elicit", Some(owner.clone())).await.unwrap();
    assert_eq!(
        answer,
        json!({"action": "accept", "content": {
            "name": "Ada", "email": "ada@example.org", "age": 36, "score": 9.5, "color": "green", "agree": true
        }}),
        "defaults applied, the typed value kept"
    );
    let asked = owner.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].server, "asks");
    assert!(asked[0].message.contains("<b>who</b>"), "the message as sent: {:?}", asked[0].message);
    assert_eq!(asked[0].order, ["name", "email", "age", "score", "color", "agree"]);

    // Two questions in one call, answered decline then cancel.
    let count = std::sync::atomic::AtomicUsize::new(0);
    let owner = scripted(Duration::ZERO, move |_| {
        if count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            steward_mcp::ElicitationAnswer::Decline
        } else {
            steward_mcp::ElicitationAnswer::Cancel
        }
    });
    let answer = call_eliciting(&manager, "asks__elicit_twice", Some(owner)).await.unwrap();
    assert_eq!(answer, json!([{"action": "decline"}, {"action": "cancel"}]));
}

/// Values that do not fit the schema are never sent (the server gets `cancel`); URL mode is
/// not offered; a call without an elicitor and a listing are declined without asking anyone.
#[tokio::test]
async fn elicitations_nobody_may_answer_are_declined_and_bad_values_never_sent() {
    let manager = manager(&[("asks", fault("normal"))]);
    let sloppy = scripted(Duration::ZERO, |_| {
        let mut values = serde_json::Map::new();
        values.insert("name".into(), json!("Ada"));
        values.insert("email".into(), json!("not an address"));
        steward_mcp::ElicitationAnswer::Accept(values)
    });
    assert_eq!(call_eliciting(&manager, "asks__elicit", Some(sloppy)).await.unwrap(), json!({"action": "cancel"}));

    let never = scripted(Duration::ZERO, |_| panic!("URL mode must not reach anyone"));
    assert_eq!(call_eliciting(&manager, "asks__elicit_url", Some(never)).await.unwrap(), json!({"action": "decline"}));
    assert_eq!(call_eliciting(&manager, "asks__elicit", None).await.unwrap(), json!({"action": "decline"}));

    // A schema beyond the spec's (which the SDK cannot read) still reaches the elicitor, as
    // sent, for it to decline; it is never refused as an unknown method.
    let refuses = scripted(Duration::ZERO, |request| {
        assert!(steward_mcp::elicitation::form_fields(&request.schema, &request.order).is_err());
        steward_mcp::ElicitationAnswer::Decline
    });
    let answer = call_eliciting(&manager, "asks__elicit_unsupported", Some(refuses.clone())).await.unwrap();
    assert_eq!(answer, json!({"action": "decline"}));
    let asked = refuses.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].message, "Tags and address, please");
    assert_eq!(asked[0].schema["properties"]["tags"], json!({"type": "array"}));
    let sloppy = scripted(Duration::ZERO, |_| steward_mcp::ElicitationAnswer::Accept(serde_json::Map::new()));
    assert_eq!(
        call_eliciting(&manager, "asks__elicit_unsupported", Some(sloppy)).await.unwrap(),
        json!({"action": "cancel"}),
        "nothing is accepted against a schema Steward cannot check"
    );
    assert_eq!(call_eliciting(&manager, "asks__elicit_unsupported", None).await.unwrap(), json!({"action": "decline"}));

    let listing = self::manager(&[("lists", fault("elicit_on_list"))]);
    let listed = listing.tools().await;
    assert!(listed.failures.is_empty(), "{:?}", listed.failures);
    let tool = listed.tools.iter().find(|t| t.tool == "listed").unwrap();
    assert!(tool.spec.description.contains(r#"{"action": "decline"}"#), "{}", tool.spec.description);
    assert_eq!(listed.declined_elicitations.len(), 1, "{:?}", listed.declined_elicitations);
    let reason = &listed.declined_elicitations[0];
    assert!(reason.contains("`lists`") && reason.contains("no tool call of a run"), "{reason}");
}
