//! The real worker process (`steward-tool-worker`) under the real sandbox: a generated tool
//! computes, and hostile code is refused or stopped with a clear reason.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use steward_generated::protocol::FailureKind;
use steward_generated::{HostEnv, StepError, StepLimits, StepMode, StepReport, WorkerCommand, run_step};
use tokio_util::sync::CancellationToken;

fn worker() -> WorkerCommand {
    WorkerCommand { program: env!("CARGO_BIN_EXE_steward-tool-worker").into(), args: Vec::new() }
}

/// Protections this machine cannot enforce, as the test environment says
/// (`STEWARD_TEST_ACCEPT_WEAKER`, comma-separated; unset on a machine that enforces all).
fn accept_weaker() -> Vec<steward_sandbox::Protection> {
    std::env::var("STEWARD_TEST_ACCEPT_WEAKER")
        .unwrap_or_default()
        .split(',')
        .filter_map(|n| steward_sandbox::Protection::parse(n.trim()))
        .collect()
}

async fn call(source: &str, input: Value, limits: StepLimits) -> (StepReport, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let host = HostEnv::live(dir.path().join("tool"), accept_weaker());
    let report = run_step(&worker(), StepMode::Call, source, &input, limits, &host, &CancellationToken::new()).await;
    (report, dir)
}

fn short(seconds: u64) -> StepLimits {
    StepLimits { time: Duration::from_secs(seconds), ..StepLimits::default() }
}

fn failure(report: &StepReport) -> (FailureKind, String) {
    match &report.outcome {
        Err(StepError::Failed { kind, message }) => (*kind, message.clone()),
        other => panic!("expected an interpreter failure, got {other:?}"),
    }
}

#[tokio::test]
async fn a_generated_tool_computes_its_result() {
    let source = "function run(input) { return { celsius: Math.round((input.fahrenheit - 32) * 5 / 9 * 10) / 10 }; }";
    let (report, _dir) = call(source, json!({"fahrenheit": 100}), StepLimits::default()).await;
    assert_eq!(report.outcome, Ok(json!({"celsius": 37.8})), "profile {}", report.profile);
    assert!(report.profile.contains("netns") || report.profile.contains("net"), "{}", report.profile);
}

#[tokio::test]
async fn an_infinite_loop_is_stopped_at_the_time_limit() {
    let started = Instant::now();
    let (report, _dir) = call("function run() { while (true) {} }", json!({}), short(1)).await;
    let (kind, message) = failure(&report);
    assert_eq!(kind, FailureKind::Timeout, "{message}");
    assert!(message.contains("time limit"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}

#[tokio::test]
async fn an_allocation_bomb_hits_the_memory_limit() {
    let source = "function run() { const all = []; while (true) { all.push(new Array(1000000).fill(1.5)); } }";
    let (report, _dir) = call(source, json!({}), short(30)).await;
    let (kind, message) = failure(&report);
    assert_eq!(kind, FailureKind::Memory, "{message}");
    assert!(message.contains("memory limit"), "{message}");
}

#[tokio::test]
async fn runaway_recursion_hits_the_stack_limit() {
    let (report, _dir) =
        call("function f(n) { return f(n + 1) + 1; } function run() { return f(0); }", json!({}), short(30)).await;
    let (kind, message) = failure(&report);
    assert_eq!(kind, FailureKind::Stack, "{message}");
}

#[tokio::test]
async fn no_module_system_process_clock_or_randomness_exists() {
    for (expr, want) in [
        ("require('fs')", "require is not defined"),
        ("process.env", "process is not defined"),
        ("Deno.readTextFileSync('/etc/passwd')", "Deno is not defined"),
        ("std.loadFile('/etc/passwd')", "std is not defined"),
        ("os.exec(['id'])", "os is not defined"),
        ("Date.now()", "Date is not defined"),
        ("performance.now()", "performance is not defined"),
        ("setTimeout(function () {}, 1)", "setTimeout is not defined"),
        ("Math.random()", "Math.random is not available"),
    ] {
        let source = format!("function run() {{ return {expr}; }}");
        let (report, _dir) = call(&source, json!({}), short(10)).await;
        let (kind, message) = failure(&report);
        assert_eq!(kind, FailureKind::Exception, "{expr}: {message}");
        assert!(message.contains(want), "{expr}: {message}");
    }
    // A static import is not even a script, and a dynamic one has no loader.
    let (report, _dir) = call("import fs from 'fs'; function run() { return 1; }", json!({}), short(10)).await;
    assert_eq!(failure(&report).0, FailureKind::Compile);
    let (report, _dir) = call("function run() { return import('fs'); }", json!({}), short(10)).await;
    assert!(report.outcome.is_err(), "{:?}", report.outcome);
}

#[tokio::test]
async fn http_get_to_private_addresses_is_refused_by_the_parent() {
    for url in [
        "http://127.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://localhost:8080/",
        "http://10.0.0.1/",
        "file:///etc/passwd",
    ] {
        let source = format!(
            "function run() {{ try {{ http_get({url:?}); return 'fetched'; }} catch (e) {{ return String(e); }} }}"
        );
        let (report, _dir) = call(&source, json!({}), short(15)).await;
        let text = report.outcome.clone().expect("the script catches the refusal");
        let text = text.as_str().unwrap_or_default().to_string();
        assert!(text.contains("refused") || text.contains("cannot resolve"), "{url}: {text}");
        assert!(report.fetched);
        assert!(
            report.host_calls.iter().any(|c| c.contains("refused") || c.contains("resolve")),
            "{:?}",
            report.host_calls
        );
    }
}

#[tokio::test]
async fn sandbox_write_stays_in_the_tools_folder() {
    let source = "function run() { sandbox_write('out.txt', 'hello'); \
                  try { sandbox_write('../escape.txt', 'x'); return 'escaped'; } catch (e) { return String(e); } }";
    let (report, dir) = call(source, json!({}), short(10)).await;
    let text = report.outcome.clone().unwrap();
    assert!(text.as_str().unwrap().contains("refused"), "{text}");
    assert_eq!(std::fs::read_to_string(dir.path().join("tool/out.txt")).unwrap(), "hello");
    assert!(!dir.path().join("escape.txt").exists());
}

#[tokio::test]
async fn the_worker_cannot_read_files_itself() {
    // Even a script that had a file API would find an empty filesystem view; here the
    // interpreter has none, so the only way is a host function, and there is none for reading.
    let source = "function run() { return typeof readFile + typeof open + typeof fetch + typeof XMLHttpRequest; }";
    let (report, _dir) = call(source, json!({}), short(10)).await;
    assert_eq!(report.outcome, Ok(json!("undefinedundefinedundefinedundefined")));
}

/// A loopback HTTP server that counts its connections and answers each with `hi`.
async fn counting_server() -> (std::net::SocketAddr, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf).await;
            let _ = socket.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nhi").await;
            let _ = socket.shutdown().await;
        }
    });
    (addr, count)
}

#[tokio::test]
async fn a_stubbed_http_get_reaches_nothing_and_keeps_the_url_while_a_live_one_is_an_egress_record() {
    let (addr, count) = counting_server().await;
    let source = "function run(input) { return http_get(input.url + '?d=' + input.data).status; }";
    let input = json!({ "url": format!("http://{addr}/c"), "data": "xyz" });
    let dir = tempfile::tempdir().unwrap();
    let mut host = HostEnv::live(dir.path().join("tool"), accept_weaker());
    host.fetch.test_allow = vec![addr];
    host.http = steward_generated::HttpMode::Stub;
    let cancel = CancellationToken::new();
    let stub = run_step(&worker(), StepMode::Call, source, &input, short(15), &host, &cancel).await;
    assert_eq!(stub.outcome, Ok(json!(200)));
    assert_eq!(stub.stubbed_urls, vec![format!("http://{addr}/c?d=xyz")]);
    assert!(!stub.fetched && stub.egress.is_empty(), "{stub:?}");
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 0, "the stub connected");

    host.http = steward_generated::HttpMode::Live;
    let live = run_step(&worker(), StepMode::Call, source, &input, short(15), &host, &cancel).await;
    assert_eq!(live.outcome, Ok(json!(200)));
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(live.egress.len(), 1, "{live:?}");
    let record = &live.egress[0];
    assert_eq!((record.host.as_str(), record.port, record.address), ("127.0.0.1", addr.port(), Some(addr)));
    assert_eq!(record.verdict, steward_egress::Verdict::Allowed);
    assert!(record.reason.contains("status 200"), "{}", record.reason);
    assert_eq!(record.bytes_received, 2);
    assert!(!record.reason.contains("xyz"), "the query is not recorded: {}", record.reason);
}
