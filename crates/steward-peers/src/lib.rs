//! Test support: the real third-party servers Steward's tests talk to, each started on a free
//! loopback port and killed when dropped. Their programs come from `.ci/peers.sh` through
//! environment variables (`scripts/test.sh` sets them); a test that needs one and finds it
//! unset fails with a message saying so. PostgreSQL tests get a fresh schema of the local test
//! database ([`fresh_postgres_schema`]). [`needs`] decides, in one place, whether a missing
//! need (PostgreSQL, Landlock, network namespaces) fails a test or was opted out of.
#![deny(missing_docs)]

pub mod needs;

pub use needs::Need;

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The value of `name`, or a panic naming it (test support: failing loudly is the point).
pub fn required_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run the tests through scripts/test.sh"))
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

/// A child process serving on `port`, killed and reaped when dropped.
pub struct Peer {
    child: Child,
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    _dir: Option<tempfile::TempDir>,
}

impl Peer {
    /// Starts `command` and waits up to `within` for it to accept connections on `port`.
    pub fn start(
        mut command: Command,
        port: u16,
        within: Duration,
        what: &str,
        dir: Option<tempfile::TempDir>,
    ) -> Peer {
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let peer = Peer { child, port, _dir: dir };
        let deadline = Instant::now() + within;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "{what} did not listen on port {port} within {within:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
        peer
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

/// llama-cpp-python's OpenAI-compatible server (`STEWARD_TEST_LLAMA_PYTHON`) serving the
/// TinyStories model (`STEWARD_TEST_MODEL`) under the model id `stories260k`. Its base URL for
/// Steward is `url() + "/v1"`.
pub fn llama_server() -> Peer {
    let python = required_env("STEWARD_TEST_LLAMA_PYTHON");
    let model = required_env("STEWARD_TEST_MODEL");
    let port = free_port();
    let mut command = Command::new(python);
    command
        .args(["-m", "llama_cpp.server", "--model", &model, "--model_alias", "stories260k", "--host", "127.0.0.1"])
        .args(["--port", &port.to_string(), "--n_ctx", "2048", "--n_threads", "2"]);
    Peer::start(command, port, Duration::from_secs(60), "llama_cpp.server", None)
}

/// aimock (`STEWARD_TEST_AIMOCK`) serving `fixtures` (its JSON fixture list). With `api_key`
/// set it answers 401 unless a request carries exactly that key.
pub fn aimock(fixtures: serde_json::Value, api_key: Option<&str>) -> Peer {
    let bin = required_env("STEWARD_TEST_AIMOCK");
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("no temp dir: {e}"));
    let path = dir.path().join("fixtures.json");
    write_json(&path, &serde_json::json!({ "fixtures": fixtures }));
    let port = free_port();
    let mut command = Command::new(&bin);
    command.args(["-p", &port.to_string(), "-h", "127.0.0.1", "-f"]).arg(&path).args(["--log-level", "warn"]);
    if let Some(key) = api_key {
        command.env("AIMOCK_API_KEYS", key);
    }
    Peer::start(command, port, Duration::from_secs(20), "aimock", Some(dir))
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
