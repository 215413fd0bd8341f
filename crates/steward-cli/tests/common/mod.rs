//! Helpers shared by the CLI's integration tests: a temp workspace and state directory, and
//! a way to run the real `steward` binary with a clean environment.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Env {
        let env = Env { dir: tempfile::tempdir().unwrap() };
        std::fs::create_dir_all(env.ws()).unwrap();
        std::fs::create_dir_all(env.dir.path().join("xdg")).unwrap();
        env
    }

    pub fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn write(&self, rel: &str, text: &str) {
        let path = self.ws().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Writes the user's own configuration (`$XDG_CONFIG_HOME/steward/config.toml`), which is
    /// trusted, unlike the workspace's `.steward/`.
    pub fn user_config(&self, text: &str) {
        let dir = self.dir.path().join("xdg/steward");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), text).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.ws().join(rel)).unwrap()
    }

    /// `git init` plus one commit of everything present.
    pub fn git_init(&self) {
        for args in [
            vec!["init", "-q", "-b", "main"],
            vec!["add", "-A"],
            vec!["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first", "--allow-empty"],
        ] {
            let ok = Command::new("git")
                .env_remove("GIT_DIR")
                .env_remove("GIT_INDEX_FILE")
                .env_remove("GIT_WORK_TREE")
                .args(&args)
                .current_dir(self.ws())
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_steward"));
        cmd.args(args)
            .current_dir(self.ws())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("USER", "tester")
            .env("STEWARD_HOME", self.home())
            .env("XDG_CONFIG_HOME", self.dir.path().join("xdg"))
            .stdin(Stdio::null());
        cmd
    }

    pub fn steward(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Parses `--json` output: every stdout line must be one JSON object.
pub fn events(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

pub fn names(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| e["event"].as_str().unwrap_or("").to_string()).collect()
}

pub fn find<'a>(events: &'a [Value], name: &str) -> &'a Value {
    events.iter().find(|e| e["event"] == name).unwrap_or_else(|| panic!("no {name} event in {:?}", names(events)))
}

pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

pub fn scenario(env: &Env, toml: &str) -> String {
    let path = env.dir.path().join("scenario.toml");
    std::fs::write(&path, toml).unwrap();
    path.display().to_string()
}

pub fn audit(env: &Env, run_id: &str) -> Vec<Value> {
    let out = env.steward(&["audit", "list", "--run", run_id]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

pub fn db(env: &Env) -> PathBuf {
    env.home().join("steward.db")
}

pub fn contains_bytes(path: &Path, needle: &str) -> bool {
    let hay = std::fs::read(path).unwrap_or_default();
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}
