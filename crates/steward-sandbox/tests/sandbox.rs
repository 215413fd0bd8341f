//! Integration tests of steward-sandbox: env scrub (B12), no network, timeouts, cancel, caps.

use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use steward_sandbox::{ExecOutput, ExecRequest, SandboxError, run};
use tokio_util::sync::CancellationToken;

fn req(argv: &[&str]) -> ExecRequest {
    ExecRequest {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        cwd: PathBuf::from("/"),
        env_allow: Vec::new(),
        env_set: Vec::new(),
        timeout: Duration::from_secs(10),
        network: false,
        max_output_bytes: 64 * 1024,
        memory_bytes: None,
    }
}

async fn exec(r: ExecRequest) -> ExecOutput {
    run(r, CancellationToken::new()).await.unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn b12_child_env_has_only_allowed_names() {
    // SAFETY: this test binary sets these variables once, before reading them; no other test
    // reads or writes them.
    unsafe {
        std::env::set_var("OPENAI_API_KEY", "sk-PLACEHOLDER");
        std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-PLACEHOLDER");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "PLACEHOLDER");
        std::env::set_var("GITHUB_TOKEN", "ghp_PLACEHOLDER");
        std::env::set_var("MY_FLAG", "1");
        std::env::set_var("LANG", "C.UTF-8");
        std::env::set_var("HOME", "/home/user");
    }
    let mut r = req(&["env"]);
    r.env_allow = vec!["MY_FLAG".into()];
    r.env_set = vec![("STEWARD_CALL".into(), "tc_1".into())];
    let out = exec(r).await;
    assert_eq!(out.exit_code, Some(0), "{}", text(&out.stderr));
    let env = text(&out.stdout);
    let allowed =
        ["PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "TZ", "TMPDIR", "SHELL", "MY_FLAG", "STEWARD_CALL"];
    for line in env.lines() {
        let name = line.split('=').next().unwrap_or_default();
        assert!(allowed.contains(&name) || name.starts_with("LC_"), "unexpected variable {name}");
    }
    for must in ["PATH=", "HOME=/home/user", "LANG=C.UTF-8", "MY_FLAG=1", "STEWARD_CALL=tc_1"] {
        assert!(env.lines().any(|l| l.starts_with(must)), "missing {must} in {env}");
    }
    assert!(!env.contains("PLACEHOLDER") && !env.contains("_KEY") && !env.contains("_TOKEN"), "{env}");
}

/// Tries to connect to `port` on loopback with bash's /dev/tcp; prints `connected` or `refused`.
fn connect_argv(port: u16) -> Vec<String> {
    let script = format!("if exec 3<>/dev/tcp/127.0.0.1/{port}; then echo connected; else echo refused; fi");
    vec!["bash".into(), "--noprofile".into(), "--norc".into(), "-c".into(), script]
}

#[tokio::test]
async fn network_is_unavailable_by_default() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut r = req(&[]);
    r.argv = connect_argv(port);
    let out = exec(r.clone()).await;
    assert_eq!(text(&out.stdout).trim(), "refused", "{}", text(&out.stderr));
    assert!(out.profile.contains("netns"), "{}", out.profile);

    // The same command with the network allowed reaches the listener: the check can fail.
    r.network = true;
    let out = exec(r).await;
    assert_eq!(text(&out.stdout).trim(), "connected", "{}", text(&out.stderr));
    assert!(out.profile.contains("net=allowed"), "{}", out.profile);
}

#[tokio::test]
async fn only_loopback_interface_exists() {
    let out = exec(req(&["cat", "/proc/net/dev"])).await;
    let interfaces: Vec<String> =
        text(&out.stdout).lines().skip(2).filter_map(|l| l.split(':').next().map(|s| s.trim().to_string())).collect();
    assert_eq!(interfaces, ["lo"]);
}

fn alive(pid: i32) -> bool {
    // A zombie still answers kill(0); look at the state in /proc instead.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
        Err(_) => false,
    }
}

async fn wait_dead(pid: i32) -> bool {
    for _ in 0..40 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn timeout_kills_child_and_grandchild() {
    let mut r = req(&["sh", "-c", "sleep 30 & echo $!; sleep 30"]);
    r.timeout = Duration::from_millis(500);
    let started = Instant::now();
    let out = exec(r).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(out.timed_out);
    assert_eq!(out.signal, Some(libc::SIGKILL));
    assert_eq!(out.exit_code, None);
    let grandchild: i32 = text(&out.stdout).trim().parse().unwrap();
    assert!(wait_dead(grandchild).await, "grandchild {grandchild} survived");
    assert!(out.profile.ends_with("timeout=500ms"), "{}", out.profile);
}

#[tokio::test]
async fn background_children_do_not_outlive_a_finished_call() {
    let out = exec(req(&["sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!"])).await;
    assert_eq!(out.exit_code, Some(0));
    assert!(!out.timed_out);
    let pid: i32 = text(&out.stdout).trim().parse().unwrap();
    assert!(wait_dead(pid).await, "background child {pid} survived");
}

#[tokio::test]
async fn cancel_kills_the_group() {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let watched = pid_file.clone();
    tokio::spawn(async move {
        // Cancel once the grandchild exists (its pid was written).
        while !std::fs::read_to_string(&watched).is_ok_and(|s| s.ends_with('\n')) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        trigger.cancel();
    });
    let script = format!("sleep 30 & echo $! > {}; sleep 30", pid_file.display());
    let started = Instant::now();
    let err = run(req(&["sh", "-c", &script]), cancel).await.unwrap_err();
    assert!(matches!(err, SandboxError::Cancelled), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    assert!(wait_dead(pid).await, "grandchild {pid} survived cancel");
}

#[tokio::test]
async fn output_is_capped_per_stream() {
    let mut r = req(&["sh", "-c", "head -c 100000 /dev/zero; echo err >&2"]);
    r.max_output_bytes = 1000;
    let out = exec(r).await;
    assert_eq!(out.stdout.len(), 1000);
    assert_eq!(text(&out.stderr), "err\n");
    assert!(out.truncated);
    assert_eq!(out.exit_code, Some(0));
}

#[tokio::test]
async fn rlimits_are_set() {
    let mut r = req(&["sh", "-c", "ulimit -c; ulimit -t; ulimit -v"]);
    r.timeout = Duration::from_millis(2500);
    r.memory_bytes = Some(512 * 1024 * 1024);
    let out = exec(r).await;
    assert_eq!(text(&out.stdout), "0\n4\n524288\n", "{}", text(&out.stderr));
    assert!(out.profile.contains("rlimits"));
}

#[tokio::test]
async fn exit_codes_signals_stdin_and_cwd() {
    let out = exec(req(&["sh", "-c", "exit 3"])).await;
    assert_eq!((out.exit_code, out.signal), (Some(3), None));
    let out = exec(req(&["sh", "-c", "kill -TERM $$"])).await;
    assert_eq!((out.exit_code, out.signal), (None, Some(libc::SIGTERM)));
    let out = exec(req(&["cat"])).await;
    assert_eq!((out.exit_code, out.stdout.len()), (Some(0), 0));
    let dir = tempfile::tempdir().unwrap();
    let mut r = req(&["pwd"]);
    r.cwd = dir.path().to_path_buf();
    let out = exec(r).await;
    assert_eq!(PathBuf::from(text(&out.stdout).trim()), dir.path().canonicalize().unwrap());
}

#[tokio::test]
async fn bad_requests_are_refused() {
    let err = run(req(&[]), CancellationToken::new()).await.unwrap_err();
    assert!(matches!(err, SandboxError::InvalidRequest(_)), "{err}");
    let mut r = req(&["true"]);
    r.cwd = PathBuf::from("/nonexistent/dir");
    assert!(matches!(run(r, CancellationToken::new()).await.unwrap_err(), SandboxError::InvalidRequest(_)));
    let err = run(req(&["/nonexistent/program"]), CancellationToken::new()).await.unwrap_err();
    assert!(matches!(err, SandboxError::Spawn { .. }), "{err}");
}

#[tokio::test]
async fn a_process_that_leaves_the_group_cannot_hold_the_call_open() {
    let started = Instant::now();
    let out = exec(req(&["sh", "-c", "setsid sleep 5 & echo hi"])).await;
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert_eq!(text(&out.stdout), "hi\n");
    // Whether the escaped `sleep` still held the pipe when the group was killed depends on
    // scheduling, so `truncated` may be either; the call must not wait for it either way.
}
