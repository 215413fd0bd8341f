//! schemathesis (PyPI) against a live `steward serve`: it loads the served OpenAPI document
//! (`/api/openapi.json`) and sends generated valid and invalid requests to every JSON operation
//! except the two endless event streams, checking that nothing answers 5xx and that every
//! status, content type and body is the documented one. The run is bounded and repeatable: a
//! fixed seed, at most 100 examples per operation, one worker, no example database.
//!
//! schemathesis is told that the owner cookie and the CSRF header are the document's security
//! schemes (`[auth.openapi.*]` in its configuration), so that it sends them as credentials and
//! does not count requests it made without them as schema violations; the work ledger's
//! bearer scheme gets a token with every scope (`read,submit,hub`).

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Env, Killed};
use serde_json::Value;
use steward_peers::required_env;

/// The fake provider's script: one round that answers without calling a tool.
const SCENARIO: &str = r#"
[[round]]
chunks = ["Nothing ", "to do here."]
usage = { input_tokens = 12, output_tokens = 4 }
"#;

/// schemathesis's configuration: the credentials, by security scheme of the document.
const CONFIG: &str = r#"
[auth.openapi.owner_cookie]
api_key = "${STEWARD_OWNER_COOKIE}"

[auth.openapi.csrf_token]
api_key = "${STEWARD_CSRF_TOKEN}"

[auth.openapi.bearer_token]
bearer = "${STEWARD_BEARER_TOKEN}"
"#;

/// Longest the schemathesis run may take: generous, since about 140 s were seen on a loaded
/// 2-core machine (the runner's own limit for peer tests is 600 s).
const ST_TIMEOUT: Duration = Duration::from_secs(540);

/// One HTTP/1.0 exchange (the server closes the connection after the body, unchunked):
/// status, header block, body.
fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to steward serve");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut request = format!("{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("a status code");
    (status, head.to_string(), body.to_string())
}

#[test]
fn peer_schemathesis_api() {
    let st = required_env("STEWARD_TEST_SCHEMATHESIS");
    let env = Env::new();
    let made = env.steward(&["mcp", "token", "create", "--scope", "read,submit,hub"]);
    assert!(made.status.success(), "{}", common::stderr(&made));
    let bearer = common::stdout(&made).trim().to_string();
    let scenario = common::scenario(&env, SCENARIO);
    let server = env.serve(&["--workspace", env.ws().to_str().unwrap(), "--scenario", &scenario]);
    let port = server.port();

    // A new browser: the first page gives it an owner cookie and that owner's CSRF token.
    let (status, head, html) = http(port, "GET", "/", &[], "");
    assert_eq!(status, 200, "{html}");
    let cookie = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(name, _)| name.trim().eq_ignore_ascii_case("set-cookie"))
        .find_map(|(_, value)| value.trim().strip_prefix("steward_owner="))
        .and_then(|rest| rest.split(';').next())
        .expect("an owner cookie")
        .to_string();
    let marker = "name=\"csrf-token\" content=\"";
    let at = html.find(marker).expect("the page's CSRF token") + marker.len();
    let csrf = html[at..].split('"').next().unwrap().to_string();
    let owner = format!("steward_owner={cookie}");

    // The scripted provider answers a run started through the API.
    let (status, _, body) = http(
        port,
        "POST",
        "/api/runs",
        &[("Cookie", &owner), ("X-CSRF-Token", &csrf), ("Content-Type", "application/json")],
        r#"{"task": "Say what there is to do.", "provider": "fake"}"#,
    );
    assert_eq!(status, 201, "{body}");
    let id = serde_json::from_str::<Value>(&body).unwrap()["id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    let run = loop {
        let (status, _, body) = http(port, "GET", &format!("/api/runs/{id}"), &[("Cookie", &owner)], "");
        assert_eq!(status, 200, "{body}");
        let trace: Value = serde_json::from_str(&body).unwrap();
        if trace["run"]["status"] != "queued" && trace["run"]["status"] != "running" {
            break trace;
        }
        assert!(Instant::now() < deadline, "the run did not end: {trace}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(run["run"]["status"], "completed", "{run}");
    assert_eq!(run["run"]["record"]["final_text"], "Nothing to do here.", "{run}");

    let config = env.dir.path().join("schemathesis.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let started = Instant::now();
    let mut st_command = Command::new(&st);
    st_command
        .arg("--config-file")
        .arg(&config)
        .args(["run", &format!("{}/api/openapi.json", server.base)])
        .args(["--exclude-path", "/api/runs/{id}/events", "--exclude-path", "/api/memory/events"])
        .args(["--exclude-path", "/api/conversations/{id}/events"])
        .args(["--checks", "all", "--exclude-checks", "positive_data_acceptance"])
        .args(["--seed", "20260101", "--max-examples", "100", "--workers", "1"])
        .args(["--generation-database", "none", "--request-timeout", "10", "--no-color"])
        .current_dir(env.dir.path())
        .env("STEWARD_OWNER_COOKIE", &cookie)
        .env("STEWARD_CSRF_TOKEN", &csrf)
        .env("STEWARD_BEARER_TOKEN", &bearer)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut st_child = st_command.spawn().expect("run schemathesis");
    let mut out = st_child.stdout.take().unwrap();
    let mut err = st_child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = out.read_to_string(&mut text);
        let mut errors = String::new();
        let _ = err.read_to_string(&mut errors);
        (text, errors)
    });
    let mut st_child = Killed(st_child);
    let status = loop {
        if let Some(status) = st_child.0.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > ST_TIMEOUT {
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    drop(st_child);
    let (stdout, stderr) = reader.join().unwrap();
    println!("{stdout}");
    eprintln!("{stderr}");
    let status = status.unwrap_or_else(|| panic!("schemathesis did not finish within {ST_TIMEOUT:?}"));
    assert!(status.success(), "schemathesis found problems after {:?} (see its report above)", started.elapsed());
    assert!(stdout.contains("Test cases:"), "schemathesis ran no test: {stdout}");
}
