//! Helpers shared by the CLI's integration tests: a temp workspace and state directory, a way
//! to run the real `steward` binary with a clean environment, and `steward serve` started on a
//! port it picks itself.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

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

    /// The real `steward` binary with `args`, run in the workspace with a clean environment
    /// ([`Env::clean_env`]) and no stdin.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_steward"));
        self.clean_env(&mut cmd);
        cmd.args(args).stdin(Stdio::null());
        cmd
    }

    /// Runs `cmd` in the workspace with only `PATH` of the test's environment, this temp
    /// directory as `HOME`, user `tester`, and the state and user configuration kept here.
    pub fn clean_env(&self, cmd: &mut Command) {
        cmd.current_dir(self.ws())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("USER", "tester")
            .env("STEWARD_HOME", self.home())
            .env("XDG_CONFIG_HOME", self.dir.path().join("xdg"));
    }

    /// `steward serve --bind 127.0.0.1:0` followed by `args`, for [`Served::start`].
    pub fn serve_command(&self, args: &[&str]) -> Command {
        self.command(&[&["serve", "--bind", ANY_PORT], args].concat())
    }

    /// [`Env::serve_command`] started ([`Served::start`]).
    pub fn serve(&self, args: &[&str]) -> Served {
        Served::start(self.serve_command(args))
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

/// Kills a child process when the test ends, however it ends.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `--bind` value that lets `steward serve` take any free loopback port; the port it got is
/// read back from what it prints ([`Served::start`]), so no other process can take it between
/// choosing and binding.
pub const ANY_PORT: &str = "127.0.0.1:0";

/// A running `steward serve`, killed and reaped when dropped.
pub struct Served {
    pub process: Killed,
    /// `http://127.0.0.1:PORT`, the address it printed after binding.
    pub base: String,
    /// The one-time login link it printed.
    pub login: String,
}

impl Served {
    /// Starts `command` (`steward serve --bind 127.0.0.1:0 …`, see [`Env::serve_command`]) and
    /// waits up to 60 s for the address it listens on and its login link, both read from its
    /// stdout. Its stderr goes to the test's.
    pub fn start(mut command: Command) -> Served {
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("start steward serve");
        let stdout = child.stdout.take().unwrap();
        let process = Killed(child);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut base = None;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let Some(at) = line.find("http://") else { continue };
                let url = line[at..].split_whitespace().next().unwrap_or_default().to_string();
                if line.starts_with("steward: serving on ") {
                    base = Some(url);
                } else if url.contains("/login?token=") {
                    let _ = tx.send((base.take(), url));
                }
            }
        });
        let (base, login) = rx.recv_timeout(Duration::from_secs(60)).expect("steward serve printed its login link");
        let base = base.expect("steward serve printed the address it listens on before its login link");
        assert!(base.starts_with("http://127.0.0.1:") && !base.ends_with(":0"), "a bound loopback address: {base}");
        assert!(login.starts_with(&format!("{base}/login?token=")), "the login link is on {base}: {login}");
        Served { process, base, login }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.base.rsplit(':').next().and_then(|p| p.parse().ok()).expect("a port in the base URL")
    }
}

/// What the terminal approval prompt shows while it waits.
pub const APPROVAL_PROMPT: &str = "approve? [y/r/w/N]";

/// A `steward` command line run on a pseudo-terminal (`script`), its screen read as it comes;
/// killed and reaped when dropped.
pub struct Terminal {
    child: Child,
    stdin: ChildStdin,
    output: Receiver<String>,
    /// Everything shown so far.
    pub screen: String,
}

impl Terminal {
    /// Starts `steward ARGS` (`args` as one shell line) on a terminal, with the environment
    /// of [`Env::command`] and `TERM=dumb`.
    pub fn start(env: &Env, args: &str) -> Terminal {
        let steward = env!("CARGO_BIN_EXE_steward");
        let mut command = Command::new("script");
        env.clean_env(&mut command);
        let mut child = command
            // `exec`: the program is the terminal's foreground process itself, not a child of a
            // shell that a Ctrl-C would end too.
            .args(["-qfec", &format!("exec {steward} {args}"), "/dev/null"])
            .env("TERM", "dumb")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (tx, output) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 || tx.send(String::from_utf8_lossy(&buf[..n]).into_owned()).is_err() {
                    break;
                }
            }
        });
        Terminal { child, stdin, output, screen: String::new() }
    }

    /// Types `text`.
    pub fn send(&mut self, text: &str) {
        self.stdin.write_all(text.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Reads the screen until it shows `text` (60 s at most).
    pub fn wait_for(&mut self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.screen.contains(text) {
            match self.output.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(more) => self.screen.push_str(&more),
                Err(_) => panic!("never saw {text:?}:\n{}", self.screen),
            }
        }
    }

    /// Reads the screen until it shows `text` at least `times` times (60 s at most).
    pub fn wait_for_count(&mut self, text: &str, times: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.screen.matches(text).count() < times {
            match self.output.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(more) => self.screen.push_str(&more),
                Err(_) => panic!("never saw {text:?} {times} times:\n{}", self.screen),
            }
        }
    }

    /// Waits for the program to end (60 s at most); returns whether it succeeded, and the whole
    /// screen.
    pub fn finish(mut self) -> (bool, String) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "still running:\n{}", self.screen);
            std::thread::sleep(Duration::from_millis(50));
        };
        while let Ok(more) = self.output.recv_timeout(Duration::from_secs(2)) {
            self.screen.push_str(&more);
        }
        (status.success(), std::mem::take(&mut self.screen))
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
