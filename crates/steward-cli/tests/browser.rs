//! The web UI in a real headless Chromium (Debian's, driven by playwright-core): sign in with
//! the one-time link, watch a run's timeline stream, see "waiting for you" on the run, in the
//! tab title, the navigation and the runs list, approve with the keyboard, deny, let a call
//! expire, answer a conversation's approvals in place, cancel a run, be refused as another
//! owner, keep remembered facts live across two tabs, and pass axe-core on every page. The
//! steps live in `tests/browser/flow.mjs`; screenshots at 1280x800 and 390x844 are kept in
//! `$CARGO_TARGET_TMPDIR/browser-artifacts`.

use crate::common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use common::Env;
use steward_peers::required_env;

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
    let scenario = repo_root().join("tests/browser/scenario.toml");
    let server = env.serve(&["--workspace", env.ws().to_str().unwrap(), "--scenario", scenario.to_str().unwrap()]);
    let artifacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser-artifacts");
    let started = Instant::now();
    let out = Command::new("node")
        .arg(repo_root().join("tests/browser/flow.mjs"))
        .env("STEWARD_BASE_URL", &server.base)
        .env("STEWARD_LOGIN_URL", &server.login)
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
    for shot in ["run-desktop.png", "run-phone.png", "start-phone.png", "approval.png", "conversation.png"] {
        assert!(artifacts.join(shot).is_file(), "screenshot {shot} kept in {}", artifacts.display());
    }
}
