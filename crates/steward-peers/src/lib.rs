//! Test support: the real third-party servers Steward's tests talk to (model servers, aimock,
//! an OTLP receiver), each started on a
//! loopback port that it is then seen to hold itself, and killed when dropped. Their programs
//! come from `.ci/peers.sh` through environment variables (`scripts/test.sh` sets them); a test that needs one and finds it
//! unset fails with a message saying so. PostgreSQL tests get a fresh schema of the local test
//! database ([`fresh_postgres_schema`]). [`needs`] decides, in one place, whether a missing
//! need (PostgreSQL, Landlock, network namespaces) fails a test or was opted out of.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod needs;

pub use needs::Need;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The value of `name`, or a panic naming it (test support: failing loudly is the point).
pub fn required_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run the tests through scripts/test.sh"))
}

/// How many ports [`Peer::start`] tries before it gives up.
const START_ATTEMPTS: u32 = 5;

/// A child process serving on `port`, killed and reaped when dropped.
pub struct Peer {
    child: Child,
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    _dir: Option<tempfile::TempDir>,
}

impl Peer {
    /// Starts the program `command(port)` makes, on a port no socket used a moment before, and
    /// waits up to `within` until the child (or a process it started) listens on that port on
    /// 127.0.0.1, as the kernel's socket table (`/proc/net/tcp`) and the child's open files
    /// show; a connection that reaches another program on that port never counts. These
    /// programs cannot be told to pick a port themselves and say which, so another process can
    /// take the port between the choice and the child's bind: when the child exits before it
    /// listens, it is started again on another port, `START_ATTEMPTS` times at most. Panics
    /// (naming `what`) when it cannot be started or never listens.
    pub fn start(
        command: impl Fn(u16) -> Command,
        within: Duration,
        what: &str,
        dir: Option<tempfile::TempDir>,
    ) -> Peer {
        let mut exits = Vec::new();
        for _ in 0..START_ATTEMPTS {
            let port = unused_port();
            let child = command(port)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
            let mut peer = Peer { child, port, _dir: None };
            let deadline = Instant::now() + within;
            loop {
                if let Some(status) = peer.child.try_wait().unwrap_or_else(|e| panic!("{what}: {e}")) {
                    exits.push(format!("port {port}: {status}"));
                    break;
                }
                if listens_on(peer.child.id(), port) {
                    peer._dir = dir;
                    return peer;
                }
                assert!(Instant::now() < deadline, "{what} did not listen on port {port} within {within:?}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        panic!("{what} exited before it listened, {START_ATTEMPTS} times: {}", exits.join("; "))
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP port of 127.0.0.1 that no socket used when asked (the kernel's choice for port 0).
/// Nothing keeps it free afterwards: only for [`Peer::start`], which checks who binds it.
fn unused_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no unused port: {e}"))
}

/// Whether process `root` or one of its descendants has a socket listening on 127.0.0.1:`port`
/// or on every IPv4 address at that port.
fn listens_on(root: u32, port: u16) -> bool {
    let inodes = listening_inodes(port);
    !inodes.is_empty() && process_tree(root).into_iter().any(|pid| holds_socket(pid, &inodes))
}

/// The inodes of the IPv4 sockets listening on `port` at 127.0.0.1 or 0.0.0.0
/// (`/proc/net/tcp`: `local_address` is `HEXADDR:HEXPORT`, state `0A` is LISTEN, the inode
/// is the tenth column).
fn listening_inodes(port: u16) -> Vec<String> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_else(|e| panic!("cannot read /proc/net/tcp: {e}"));
    let wanted = [format!("0100007F:{port:04X}"), format!("00000000:{port:04X}")];
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let columns: Vec<&str> = line.split_whitespace().collect();
            let listening = columns.get(3) == Some(&"0A");
            let here = columns.get(1).is_some_and(|local| wanted.iter().any(|w| w == local));
            (listening && here).then(|| columns.get(9).map(|inode| inode.to_string())).flatten()
        })
        .collect()
}

/// `root` and every process descending from it (`/proc/PID/stat`: the parent id is the second
/// field after the parenthesised command name).
fn process_tree(root: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let parent = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if let Some(parent) = parent {
            parents.push((pid, parent));
        }
    }
    let mut tree = vec![root];
    let mut at = 0;
    while at < tree.len() {
        let of = tree[at];
        tree.extend(parents.iter().filter(|(_, parent)| *parent == of).map(|(pid, _)| *pid));
        at += 1;
    }
    tree
}

/// Whether process `pid` has one of the sockets `inodes` open (`/proc/PID/fd/*` links read
/// `socket:[INODE]`).
fn holds_socket(pid: u32, inodes: &[String]) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    fds.flatten().filter_map(|fd| std::fs::read_link(fd.path()).ok()).any(|target| {
        let target = target.to_string_lossy();
        target.strip_prefix("socket:[").and_then(|t| t.strip_suffix(']')).is_some_and(|i| inodes.iter().any(|n| n == i))
    })
}

/// llama-cpp-python's OpenAI-compatible server (`STEWARD_TEST_LLAMA_PYTHON`) serving the
/// TinyStories model (`STEWARD_TEST_MODEL`) under the model id `stories260k`. Its base URL for
/// Steward is `url() + "/v1"`.
pub fn llama_server() -> Peer {
    let python = required_env("STEWARD_TEST_LLAMA_PYTHON");
    let model = required_env("STEWARD_TEST_MODEL");
    let command = |port: u16| {
        let mut command = Command::new(&python);
        command
            .args(["-m", "llama_cpp.server", "--model", &model, "--model_alias", "stories260k", "--host", "127.0.0.1"])
            .args(["--port", &port.to_string(), "--n_ctx", "2048", "--n_threads", "2"]);
        command
    };
    Peer::start(command, Duration::from_secs(60), "llama_cpp.server", None)
}

/// The model id [`embedding_server`] serves its model under.
pub const EMBEDDING_MODEL_ID: &str = "all-minilm-l6-v2";

/// llama-cpp-python's OpenAI-compatible server (`STEWARD_TEST_LLAMA_PYTHON`) serving the
/// sentence-embedding model all-MiniLM-L6-v2 as GGUF (`STEWARD_TEST_EMBEDDING_MODEL`, made by
/// `.ci/peers.sh`) at `/v1/embeddings` under the model id [`EMBEDDING_MODEL_ID`]. A context of
/// 512 tokens (the model's positions), decoded in one batch, so a whole chunk fits; longer
/// inputs are cut there. Its base URL for Steward is `url() + "/v1"`.
pub fn embedding_server() -> Peer {
    let python = required_env("STEWARD_TEST_LLAMA_PYTHON");
    let model = required_env("STEWARD_TEST_EMBEDDING_MODEL");
    let command = |port: u16| {
        let mut command = Command::new(&python);
        command
            .args(["-m", "llama_cpp.server", "--model", &model, "--model_alias", EMBEDDING_MODEL_ID])
            .args(["--embedding", "true", "--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--n_ctx", "512", "--n_batch", "512", "--n_ubatch", "512", "--n_threads", "2"]);
        command
    };
    Peer::start(command, Duration::from_secs(60), "llama_cpp.server (embeddings)", None)
}

/// llama.cpp's `llama-server` (`STEWARD_TEST_LLAMA_SERVER`, built by `.ci/peers.sh` with the
/// CPU's vector units) serving Qwen2.5-Coder-0.5B-Instruct (`STEWARD_TEST_QWEN_MODEL`) under the
/// model id `qwen`: `--jinja` (the model's own chat template, so its `<tool_call>` blocks
/// become native tool calls), a context of `context` tokens (`-c`), 2 threads, greedy sampling
/// (`--temp 0`, `--seed 42`) and `/metrics`. Returned once `/health` answers 200 (the model is
/// loaded), within 120 s. Its base URL for Steward is `url() + "/v1"`.
pub fn qwen_llama_server(context: u32) -> Peer {
    let server = required_env("STEWARD_TEST_LLAMA_SERVER");
    let model = required_env("STEWARD_TEST_QWEN_MODEL");
    let command = |port: u16| {
        let mut command = Command::new(&server);
        command
            .args(["-m", &model, "-a", "qwen", "--jinja", "--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["-c", &context.to_string(), "-t", "2", "--temp", "0", "--seed", "42", "--metrics"])
            .args(["--no-webui"]);
        command
    };
    let peer = Peer::start(command, Duration::from_secs(60), "llama-server", None);
    wait_healthy(&peer, Duration::from_secs(120), "llama-server");
    peer
}

/// llama-cpp-python's server (`STEWARD_TEST_LLAMA_PYTHON`) serving the Qwen model
/// (`STEWARD_TEST_QWEN_MODEL`) as `qwen`, `n_ctx` 2048, 2 threads. Its chat path renders the
/// model's template without turning `<tool_call>` blocks into calls: they reach Steward as text.
pub fn qwen_llama_cpp_python() -> Peer {
    let python = required_env("STEWARD_TEST_LLAMA_PYTHON");
    let model = required_env("STEWARD_TEST_QWEN_MODEL");
    let command = |port: u16| {
        let mut command = Command::new(&python);
        command
            .args(["-m", "llama_cpp.server", "--model", &model, "--model_alias", "qwen", "--host", "127.0.0.1"])
            .args(["--port", &port.to_string(), "--n_ctx", "2048", "--n_threads", "2"]);
        command
    };
    Peer::start(command, Duration::from_secs(120), "llama_cpp.server (qwen)", None)
}

/// Waits until `GET /health` of `peer` answers 200, panicking (naming `what`) after `within`.
pub fn wait_healthy(peer: &Peer, within: Duration, what: &str) {
    use std::io::{Read, Write};
    let deadline = Instant::now() + within;
    loop {
        let answered = std::net::TcpStream::connect(("127.0.0.1", peer.port)).ok().and_then(|mut stream| {
            let request = format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n", peer.port);
            stream.write_all(request.as_bytes()).ok()?;
            let mut head = [0u8; 12];
            stream.read_exact(&mut head).ok()?;
            Some(head.starts_with(b"HTTP/1.1 200"))
        });
        if answered == Some(true) {
            return;
        }
        assert!(Instant::now() < deadline, "{what} was not healthy within {within:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// aimock (`STEWARD_TEST_AIMOCK`) serving `fixtures` (its JSON fixture list). With `api_key`
/// set it answers 401 unless a request carries exactly that key.
pub fn aimock(fixtures: serde_json::Value, api_key: Option<&str>) -> Peer {
    let bin = required_env("STEWARD_TEST_AIMOCK");
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("no temp dir: {e}"));
    let path = dir.path().join("fixtures.json");
    write_json(&path, &serde_json::json!({ "fixtures": fixtures }));
    let command = |port: u16| {
        let mut command = Command::new(&bin);
        command.args(["-p", &port.to_string(), "-h", "127.0.0.1", "-f"]).arg(&path).args(["--log-level", "warn"]);
        if let Some(key) = api_key {
            command.env("AIMOCK_API_KEYS", key);
        }
        command
    };
    Peer::start(command, Duration::from_secs(20), "aimock", Some(dir))
}

/// oteltap (PyPI `oteltap`, `STEWARD_TEST_OTLP_RECEIVER`): an OTLP/HTTP receiver (protobuf
/// bodies, `POST /v1/traces`) that prints every span it receives as one line of OTLP JSON
/// (hex `traceId`, `spanId` and `parentSpanId`, `name`, `attributes` as
/// `{"key": …, "value": {"stringValue" | "intValue" | "doubleValue" | "arrayValue": …}}`).
/// Its standard output goes to a file that [`OtlpReceiver::spans`] reads.
pub fn otlp_receiver() -> OtlpReceiver {
    let bin = required_env("STEWARD_TEST_OTLP_RECEIVER");
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("no temp dir: {e}"));
    let output = dir.path().join("spans.ndjson");
    let command = |port: u16| {
        let mut command = Command::new("sh");
        command
            .args(["-c", "exec \"$0\" --port \"$1\" > \"$2\""])
            .arg(&bin)
            .arg(port.to_string())
            .arg(&output)
            .env("PYTHONUNBUFFERED", "1");
        command
    };
    let peer = Peer::start(command, Duration::from_secs(30), "oteltap", Some(dir));
    OtlpReceiver { peer, output }
}

/// A running OTLP receiver ([`otlp_receiver`]).
pub struct OtlpReceiver {
    /// The receiver's process.
    pub peer: Peer,
    output: std::path::PathBuf,
}

impl OtlpReceiver {
    /// The base URL to export to (`OTEL_EXPORTER_OTLP_ENDPOINT`), `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        self.peer.url()
    }

    /// Every span received so far, in arrival order (OTLP JSON objects).
    pub fn spans(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(&self.output).unwrap_or_default();
        text.lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|v| v.get("spanId").is_some())
            .collect()
    }

    /// The spans received once `done` holds for them, waiting up to `within`; panics with
    /// what was received when it never does.
    pub fn spans_when(&self, within: Duration, done: impl Fn(&[serde_json::Value]) -> bool) -> Vec<serde_json::Value> {
        let deadline = Instant::now() + within;
        loop {
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            assert!(Instant::now() < deadline, "the OTLP receiver did not get the spans within {within:?}: {spans:#?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn write_json(path: &Path, value: &serde_json::Value) {
    let bytes = serde_json::to_vec(value).unwrap_or_else(|e| panic!("fixtures: {e}"));
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

/// The test database: `$STEWARD_TEST_DATABASE_URL`, else the local server
/// (`postgres://postgres@127.0.0.1:5432/test`, trust auth).
pub fn test_database_url() -> String {
    std::env::var("STEWARD_TEST_DATABASE_URL")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/test".to_string())
}

/// A fresh schema `t_<16 hex>` in the test database ([`test_database_url`]):
/// `(database url, schema name)`. The test fails when the user opted out of PostgreSQL
/// ([`needs::require`]) or when it cannot be reached within 5 s ([`needs::unavailable`]).
pub async fn fresh_postgres_schema() -> (String, String) {
    use sqlx::{ConnectOptions, Connection};
    needs::require(Need::Postgres);
    let base = test_database_url();
    let name = steward_store::new_id("t_");
    let created = async {
        let connect = base.parse::<sqlx::postgres::PgConnectOptions>().map_err(|e| e.to_string())?;
        let mut conn = tokio::time::timeout(
            Duration::from_secs(5),
            sqlx::postgres::PgConnection::connect_with(&connect.disable_statement_logging()),
        )
        .await
        .map_err(|_| "no answer within 5 s".to_string())?
        .map_err(|e| e.to_string())?;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {name}")))
            .execute(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        conn.close().await.map_err(|e| e.to_string())
    }
    .await;
    if let Err(why) = created {
        let shown = steward_store::redact_database_url(&base);
        needs::unavailable(Need::Postgres, format!("PostgreSQL at {shown} ({why})"));
    }
    (base, name)
}

/// `base` with `schema` first on the search path (`options[search_path]=…`, sqlx's URL form).
pub fn with_search_path(base: &str, schema: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}options[search_path]={schema}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python's own HTTP server on `port` (python3 is on every machine the tests run on).
    fn http_server(port: u16) -> Command {
        let mut command = Command::new("python3");
        command.args(["-m", "http.server", &port.to_string(), "--bind", "127.0.0.1"]);
        command
    }

    #[test]
    fn a_socket_counts_only_for_the_process_tree_that_holds_it() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(listens_on(std::process::id(), port));
        let mut other = Command::new("sleep").arg("30").spawn().unwrap();
        assert!(!listens_on(other.id(), port), "another process's socket is not the child's");
        let _ = other.kill();
        let _ = other.wait();
        drop(listener);
        assert!(!listens_on(std::process::id(), port), "a closed socket no longer counts");
    }

    #[test]
    fn a_child_that_exits_before_listening_is_started_again_on_another_port() {
        let tries = std::cell::Cell::new(0);
        let command = |port: u16| {
            tries.set(tries.get() + 1);
            if tries.get() == 1 { Command::new("false") } else { http_server(port) }
        };
        let peer = Peer::start(command, Duration::from_secs(30), "python3 -m http.server", None);
        assert_eq!(tries.get(), 2);
        assert!(listens_on(peer.child.id(), peer.port));
        assert!(std::net::TcpStream::connect(("127.0.0.1", peer.port)).is_ok());
    }

    #[test]
    #[should_panic(expected = "exited before it listened, 5 times")]
    fn a_child_that_never_listens_fails_the_test() {
        Peer::start(|_| Command::new("false"), Duration::from_secs(10), "false", None);
    }
}
