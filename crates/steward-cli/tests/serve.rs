//! `steward serve` as a user runs it: the one-time login link makes the browser the local
//! owner, so a run started with `steward run` in a terminal shows up in the web UI and its
//! approval can be given there; the terminal prompt takes the answer and the call runs.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{Env, scenario};
use serde_json::{Value, json};
use steward_peers::free_port;

/// Kills a child process when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `steward serve` and returns it with its base URL and login link.
fn serve(env: &Env) -> (Killed, String, String) {
    let port = free_port();
    let mut child = env
        .command(&["serve", "--bind", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start steward serve");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(at) = line.find("http://").filter(|_| line.contains("/login?token=")) {
                let _ = tx.send(line[at..].split_whitespace().next().unwrap_or_default().to_string());
            }
        }
    });
    let login = rx.recv_timeout(Duration::from_secs(30)).expect("the login link is printed");
    (Killed(child), format!("http://127.0.0.1:{port}"), login)
}

/// Signs in with the login link; returns the owner cookie and the CSRF token.
async fn sign_in(http: &reqwest::Client, base: &str, login: &str) -> (String, String) {
    let response = http.get(login).send().await.unwrap();
    assert_eq!(response.status(), 303);
    let cookie = response.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    let page = http.get(format!("{base}/")).header("cookie", &cookie).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("<code id=\"owner\">local:tester</code>"), "signed in as the local owner");
    let at = page.find("name=\"csrf-token\" content=\"").unwrap() + "name=\"csrf-token\" content=\"".len();
    (cookie, page[at..at + 64].to_string())
}

#[tokio::test]
async fn a_terminal_run_is_approved_in_the_browser() {
    let env = Env::new();
    env.write("note.txt", "old\n");
    let script = scenario(
        &env,
        r#"
[[round]]
text = "Editing."
[[round.tool_call]]
name = "edit"
arguments = { path = "note.txt", old = "old", new = "new" }
[[round]]
text = "Changed."
"#,
    );
    let (_server, base, login) = serve(&env);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let (cookie, csrf) = sign_in(&http, &base, &login).await;

    // `script` gives the run a terminal, so it prompts and waits instead of failing closed.
    let steward = env!("CARGO_BIN_EXE_steward");
    let line = format!("{steward} run 'change the note' --provider fake --scenario {script}");
    let command = env.command(&[]);
    let run = std::process::Command::new("script")
        .args(["-qfec", &line, "/dev/null"])
        .current_dir(env.ws())
        .env_clear()
        .envs(command.get_envs().filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start script");
    let mut run = Killed(run);

    let deadline = Instant::now() + Duration::from_secs(30);
    let approval = loop {
        assert!(Instant::now() < deadline, "the terminal run never showed a pending approval in the web UI");
        let runs: Value =
            http.get(format!("{base}/api/runs")).header("cookie", &cookie).send().await.unwrap().json().await.unwrap();
        if let Some(id) = runs["runs"].as_array().and_then(|r| r.first()).and_then(|r| r["id"].as_str()) {
            let trace: Value = http
                .get(format!("{base}/api/runs/{id}"))
                .header("cookie", &cookie)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if let Some(a) = trace["approvals"].as_array().and_then(|a| a.iter().find(|a| a["status"] == "pending")) {
                break a["id"].as_str().unwrap().to_string();
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let decided = http
        .post(format!("{base}/api/approvals/{approval}"))
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .json(&json!({"decision": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(decided.status(), 200, "{}", decided.text().await.unwrap());

    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = run.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the terminal run did not finish after the approval");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut out = String::new();
    std::io::Read::read_to_string(run.0.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(status.success(), "steward run failed: {out}");
    assert!(out.contains("approved in the web UI by local:tester"), "{out}");
    assert_eq!(env.read("note.txt"), "new\n");

    // A second decision on the same approval is refused.
    let again = http
        .post(format!("{base}/api/approvals/{approval}"))
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .json(&json!({"decision": "deny"}))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 409);
}
