//! The web UI in a real headless Chromium (Debian's, driven by playwright-core): sign in with
//! the one-time link, watch a run stream, approve one call, deny another, let a third expire,
//! cancel a run, be refused as another owner, and keep remembered facts live across two tabs.
//! The steps live in `tests/browser/flow.mjs`; screenshots of the run and approval views are
//! kept in `$CARGO_TARGET_TMPDIR/browser-artifacts`.

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Env;
use steward_peers::{free_port, required_env};

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn peer_browser_run_approvals_cancel_owners_and_memory() {
    let chromium = required_env("STEWARD_TEST_CHROMIUM");
    let playwright = required_env("STEWARD_TEST_PLAYWRIGHT");
    let env = Env::new();
    // A few seconds, so that the third approval can be waited out.
    env.user_config("[policy]\napproval_timeout_seconds = 6\n");
    let port = free_port();
    let scenario = repo_root().join("tests/browser/scenario.toml");
    let mut command = env.command(&[
        "serve",
        "--bind",
        &format!("127.0.0.1:{port}"),
        "--workspace",
        env.ws().to_str().unwrap(),
        "--scenario",
        scenario.to_str().unwrap(),
    ]);
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("start steward serve");
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(at) = line.find("http://").filter(|_| line.contains("/login?token=")) {
                let url = line[at..].split_whitespace().next().unwrap_or_default().to_string();
                let _ = tx.send(url);
            }
        }
    });
    let login = rx.recv_timeout(Duration::from_secs(30)).expect("steward serve printed its login link");
    let artifacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser-artifacts");
    let started = Instant::now();
    let out = Command::new("node")
        .arg(repo_root().join("tests/browser/flow.mjs"))
        .env("STEWARD_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("STEWARD_LOGIN_URL", &login)
        .env("STEWARD_ARTIFACTS", &artifacts)
        .env("STEWARD_TEST_CHROMIUM", &chromium)
        .env("STEWARD_TEST_PLAYWRIGHT", &playwright)
        .output()
        .expect("run node");
    drop(server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(out.status.success(), "browser flow failed after {:?}: {stderr}", started.elapsed());
    for shot in ["run-view.png", "approval.png"] {
        assert!(artifacts.join(shot).is_file(), "screenshot {shot} kept in {}", artifacts.display());
    }
}
