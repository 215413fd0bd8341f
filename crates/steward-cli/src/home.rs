//! Where Steward keeps its state: `$STEWARD_HOME` (default `~/.steward`), created with
//! owner-only permissions.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::str::FromStr;
use std::time::Duration;

use anyhow::{Context, Result};
use steward_core::ApprovalKey;
use steward_core::LeaseTiming;
use steward_core::Runtime;
use steward_policy::Redactor;
use steward_store::{AuditKey, JournalStore, PgStore, SqliteStore, Store, StoreOptions};
use tokio_util::sync::CancellationToken;

/// The environment variable that puts the state in PostgreSQL instead of `steward.db`.
pub const DATABASE_URL_VAR: &str = "STEWARD_DATABASE_URL";

/// The environment variable naming this node on a shared PostgreSQL database (default: the
/// host name). Every process executing runs at the same time needs its own node name when
/// several of them share one machine (`steward serve` twice on one host).
pub const NODE_VAR: &str = "STEWARD_NODE";

/// The variable holding the audit chain's key as hex (see [`Home::audit_key`]).
pub const AUDIT_KEY_VAR: &str = "STEWARD_AUDIT_KEY";

/// Lifetime of a run's lease in seconds (default 15; decimals allowed).
pub const LEASE_TTL_VAR: &str = "STEWARD_LEASE_TTL_SECONDS";

/// Seconds between two lease renewals (default 5; less than the lifetime).
pub const LEASE_RENEW_VAR: &str = "STEWARD_LEASE_RENEW_SECONDS";

/// Seconds between two looks at the store by an event stream of `steward serve` following a
/// run of another node, in case a change notice was lost (default 3; decimals allowed).
pub const NOTICE_POLL_VAR: &str = "STEWARD_NOTICE_POLL_SECONDS";

/// The state directory and what lives in it.
#[derive(Clone)]
pub struct Home {
    pub dir: PathBuf,
}

impl Home {
    /// `$STEWARD_HOME`, else `$HOME/.steward`.
    pub fn locate() -> Result<Home> {
        let dir = match std::env::var_os("STEWARD_HOME").filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => {
                let home = std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .context("neither STEWARD_HOME nor HOME is set")?;
                PathBuf::from(home).join(".steward")
            }
        };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        // The state holds run content: owner-only, also when the directory already existed.
        let mode = std::fs::metadata(&dir)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
                .with_context(|| format!("cannot make {} private (mode {mode:o})", dir.display()))?;
        }
        // No sandboxed program sees the state, wherever it lies.
        steward_config::state_paths::register(&dir);
        Ok(Home { dir })
    }

    pub fn db_path(&self) -> PathBuf {
        self.dir.join(steward_store::STATE_DB_FILE)
    }

    /// Opens the database and marks runs of dead processes as interrupted.
    ///
    /// The database is `steward.db` in the state directory, or the PostgreSQL database named by
    /// `$STEWARD_DATABASE_URL` (`postgres://` or `postgresql://`; anything else is a usage
    /// error). With PostgreSQL several nodes share the runs: only runs started on this machine
    /// (same host name) are checked for a dead process, so another node's live runs are never
    /// marked interrupted. The audit anchor is kept per database (`audit.anchor` for the file,
    /// `audit-<hash of the URL without password>.anchor` for PostgreSQL).
    pub async fn open_store(&self, options: StoreOptions) -> Result<Arc<dyn Store>> {
        Ok(self.open_store_with_journal(options).await?.0)
    }

    /// [`Home::open_store`], also returning the same database as the hub's journal.
    pub async fn open_store_with_journal(
        &self,
        mut options: StoreOptions,
    ) -> Result<(Arc<dyn Store>, Arc<dyn JournalStore>)> {
        if options.audit_key.is_none() {
            options.audit_key = Some(self.audit_key()?);
        }
        let (store, journal): (Arc<dyn Store>, Arc<dyn JournalStore>) = match database_url()? {
            Some(url) => {
                options.audit_anchor.get_or_insert_with(|| self.dir.join(pg_anchor_name(&url)));
                let connect = steward_store::PgConnectOptions::from_str(&url).map_err(|e| {
                    crate::usage::usage_error(&format!(
                        "{DATABASE_URL_VAR} is not a usable PostgreSQL URL ({})",
                        steward_store::redact_database_url(&e.to_string())
                    ))
                })?;
                let store = PgStore::open_with(connect, options, &node_name()?)
                    .await
                    .with_context(|| format!("cannot open the database named by {DATABASE_URL_VAR}"))?;
                let store = Arc::new(store);
                (store.clone(), store)
            }
            None => {
                let store = SqliteStore::open_state_dir(&self.dir, options)
                    .await
                    .with_context(|| format!("cannot open {}", self.db_path().display()))?;
                let store = Arc::new(store);
                (store.clone(), store)
            }
        };
        let recovered = steward_core::recover_interrupted(store.as_ref(), &process_alive).await?;
        for run in &recovered.runs {
            eprintln!("steward: run {run} was interrupted by a crash; marked `interrupted` (not resumed)");
        }
        for (run, call) in &recovered.unknown_calls {
            eprintln!("steward: tool call {call} of run {run} has an unknown outcome (recorded in the audit log)");
        }
        Ok((store, journal))
    }

    /// What every run of this process shares ([`Runtime::new`]): the store opened by
    /// [`Home::open_store`], `redactor` (the command's: [`crate::commands::redactor_for`] its
    /// configuration when it loaded one), the approval key, and the outputs and snapshots
    /// folders of this state directory.
    pub async fn runtime(&self, redactor: Redactor) -> Result<Runtime> {
        let store = self.open_store(StoreOptions::default()).await?;
        self.runtime_on(store, redactor)
    }

    /// [`Home::runtime`] on a store already opened; generated tools' steps run in this binary
    /// ([`own_tool_worker`]).
    pub fn runtime_on(&self, store: Arc<dyn Store>, redactor: Redactor) -> Result<Runtime> {
        let runtime = Runtime::new(&self.dir, store, redactor, self.approval_key()?);
        Ok(match own_tool_worker() {
            Some(worker) => runtime.with_tool_worker(worker),
            None => runtime,
        })
    }

    /// The approval key: `$STEWARD_APPROVAL_KEY` (hex, at least 16 bytes), else
    /// `approval.key` in the state directory, generated with mode 0600 at first use.
    pub fn approval_key(&self) -> Result<ApprovalKey> {
        if let Ok(hex_key) = std::env::var("STEWARD_APPROVAL_KEY") {
            let bytes = hex_decode(hex_key.trim())
                .ok_or_else(|| crate::usage::usage_error("STEWARD_APPROVAL_KEY is not hex"))?;
            return ApprovalKey::new(bytes).ok_or_else(|| {
                crate::usage::usage_error("STEWARD_APPROVAL_KEY must be at least 16 bytes (32 hex characters)")
            });
        }
        let path = self.dir.join("approval.key");
        let text = key_file(&path, || ApprovalKey::generate().to_hex())?;
        let bytes = hex_decode(text.trim()).with_context(|| format!("{} is not hex", path.display()))?;
        ApprovalKey::new(bytes).with_context(|| format!("{} holds a key shorter than 16 bytes", path.display()))
    }

    /// The key of the audit chain's HMAC: `$STEWARD_AUDIT_KEY` (hex, at least 16 bytes; the
    /// same on every node sharing a PostgreSQL database), else `audit.key` in the state
    /// directory, generated with mode 0600 at first use. It is never kept in the database, so
    /// a record appended there by someone without it fails `steward audit verify`.
    pub fn audit_key(&self) -> Result<AuditKey> {
        if let Ok(hex_key) = std::env::var(AUDIT_KEY_VAR) {
            let bytes = hex_decode(hex_key.trim())
                .ok_or_else(|| crate::usage::usage_error(&format!("{AUDIT_KEY_VAR} is not hex")))?;
            return AuditKey::new(bytes).ok_or_else(|| {
                crate::usage::usage_error(&format!("{AUDIT_KEY_VAR} must be at least 16 bytes (32 hex characters)"))
            });
        }
        let path = self.dir.join("audit.key");
        let text = key_file(&path, || AuditKey::generate().to_hex())?;
        let bytes = hex_decode(text.trim()).with_context(|| format!("{} is not hex", path.display()))?;
        AuditKey::new(bytes).with_context(|| format!("{} holds a key shorter than 16 bytes", path.display()))
    }

    /// The web session key (64 random bytes): `session.key` in the state directory, generated
    /// with mode 0600 at first use. It signs owner cookies and derives CSRF tokens.
    pub fn session_key(&self) -> Result<Vec<u8>> {
        let path = self.dir.join("session.key");
        key_file(&path, || hex::encode(rand::random::<[u8; 64]>()))?;
        read_session_key(&path)
    }
}

/// A session key kept in `path` (given with `steward serve --session-key-file`, shared by
/// several nodes so that each accepts the owner cookies of the others): at least 64 bytes as
/// hex, readable by its owner only. Unlike `session.key` it is never generated.
pub fn read_session_key(path: &Path) -> Result<Vec<u8>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        anyhow::bail!("{} is readable by others (mode {mode:o}); run chmod 600 on it", path.display());
    }
    let bytes = hex_decode(text.trim()).with_context(|| format!("{} is not hex", path.display()))?;
    if bytes.len() < 64 {
        anyhow::bail!("{} holds a key shorter than 64 bytes (128 hex digits)", path.display());
    }
    Ok(bytes)
}

/// The node name: `$STEWARD_NODE`, else the host name ([`steward_store::host_node`]). At most
/// 200 characters, without control characters.
pub fn node_name() -> Result<String> {
    match std::env::var(NODE_VAR) {
        Ok(node) if !node.trim().is_empty() => {
            let node = node.trim().to_string();
            if node.chars().count() > 200 || node.chars().any(char::is_control) {
                return Err(crate::usage::usage_error(&format!(
                    "{NODE_VAR} must be at most 200 characters without control characters"
                )));
            }
            Ok(node)
        }
        Ok(_) => Ok(steward_store::host_node()),
        Err(std::env::VarError::NotPresent) => Ok(steward_store::host_node()),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(crate::usage::usage_error(&format!("{NODE_VAR} is not valid UTF-8")))
        }
    }
}

/// The duration `$var` gives in seconds (above 0, at most a day, decimals allowed), else
/// `default` when it is unset or blank; a usage error naming the variable otherwise.
fn seconds_var(var: &str, default: Duration) -> Result<Duration> {
    let Some(value) = std::env::var(var).ok().filter(|v| !v.trim().is_empty()) else { return Ok(default) };
    match value.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 => Ok(Duration::from_secs_f64(secs)),
        _ => Err(crate::usage::usage_error(&format!("{var} must be a number of seconds above 0, at most 86400"))),
    }
}

/// Lease timing from `$STEWARD_LEASE_TTL_SECONDS` and `$STEWARD_LEASE_RENEW_SECONDS`
/// (defaults 15 and 5): positive numbers of seconds, the renewal interval below the lifetime.
pub fn lease_timing() -> Result<LeaseTiming> {
    let defaults = LeaseTiming::default();
    let timing = LeaseTiming {
        ttl: seconds_var(LEASE_TTL_VAR, defaults.ttl)?,
        renew_every: seconds_var(LEASE_RENEW_VAR, defaults.renew_every)?,
    };
    if timing.renew_every >= timing.ttl {
        return Err(crate::usage::usage_error(&format!(
            "{LEASE_RENEW_VAR} must be less than {LEASE_TTL_VAR}, or a lease expires before it is renewed"
        )));
    }
    Ok(timing)
}

/// How often an event stream following a run of another node looks at the store in case a
/// change notice was lost: `$STEWARD_NOTICE_POLL_SECONDS`, default
/// [`steward_server::DEFAULT_NOTICE_POLL`] (3 s); a usage error when it is not a number of
/// seconds above 0 and at most a day.
pub fn notice_poll() -> Result<Duration> {
    seconds_var(NOTICE_POLL_VAR, steward_server::DEFAULT_NOTICE_POLL)
}

/// Starts keeping the leases of the runs `runtime` executes and recovering the runs of stopped
/// nodes (see `steward_core::keep_leases`) until `stop` is cancelled. Every process
/// that executes runs on a shared database calls it; on SQLite it does nothing useful.
pub fn spawn_lease_keeper(runtime: &Runtime, stop: CancellationToken) -> Result<()> {
    let timing = lease_timing()?;
    let report = |recovered: &steward_core::Recovered| {
        for run in &recovered.runs {
            eprintln!(
                "steward: run {run} of a node that stopped renewing its lease was marked `interrupted` (not resumed)"
            );
        }
        for (run, call) in &recovered.unknown_calls {
            eprintln!("steward: tool call {call} of run {run} has an unknown outcome (recorded in the audit log)");
        }
    };
    tokio::spawn(steward_core::keep_leases(
        runtime.store.clone(),
        runtime.executing.clone(),
        std::process::id(),
        timing,
        report,
        stop,
    ));
    Ok(())
}

/// How often a process whose store sends no change notices (SQLite) looks in the store for
/// decisions made elsewhere (the web UI of `steward serve`) while one of its runs waits for one.
pub const STORE_DECISION_POLL: Duration = Duration::from_millis(250);

/// Starts feeding the runtime's decision queue with the decisions other processes record in
/// the store (the web UI deciding a run of this process), until the process ends: woken by the
/// store's change notices (PostgreSQL), else looking every [`STORE_DECISION_POLL`], and only
/// while a run of this process waits for a decision (see
/// `steward_core::DecisionQueue::follow_store`).
pub fn spawn_decision_follower(runtime: &Runtime) {
    let decisions = runtime.decisions.clone();
    let store = runtime.store.clone();
    tokio::spawn(async move { decisions.follow_store(store.as_ref(), STORE_DECISION_POLL).await });
}

/// `$STEWARD_DATABASE_URL` when it is set and not empty. A value that is not a PostgreSQL URL
/// is a usage error; the message never repeats the value (it may hold a password).
pub fn database_url() -> Result<Option<String>> {
    let Some(value) = std::env::var_os(DATABASE_URL_VAR).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let url = value
        .into_string()
        .map_err(|_| crate::usage::usage_error(&format!("{DATABASE_URL_VAR} is not valid UTF-8")))?;
    if !steward_store::is_postgres_url(&url) {
        return Err(crate::usage::usage_error(&format!(
            "{DATABASE_URL_VAR} must be a postgres:// or postgresql:// URL; unset it to use steward.db in the \
             state directory"
        )));
    }
    Ok(Some(url))
}

/// The anchor file of a PostgreSQL database: named after a hash of its URL without the password
/// (the user info's password and any `password=` parameter are left out), so that each database
/// has its own anchor and none is mistaken for the SQLite file's.
fn pg_anchor_name(url: &str) -> String {
    use sha2::{Digest, Sha256};
    let query = url.split_once('?').map_or("", |(_, query)| query.split('#').next().unwrap_or(""));
    let kept: Vec<&str> = query.split('&').filter(|pair| !pair.to_ascii_lowercase().starts_with("password=")).collect();
    let key = format!("{}?{}", steward_store::redact_database_url(url), kept.join("&"));
    let digest = hex::encode(Sha256::digest(key.as_bytes()));
    format!("audit-{}.anchor", &digest[..16])
}

fn hex_decode(text: &str) -> Option<Vec<u8>> {
    hex::decode(text).ok()
}

/// The text of the key file `path`, readable by its owner only; when there is none, `new()`
/// is written there first (mode 0600). Processes starting together in one state directory get
/// one key: the file appears whole (written and synced under a temporary name, then linked into
/// place), so a process reading meanwhile finds no file or the whole key, never a part of it;
/// when another process links its key first, that key is returned. Errors: the file cannot be
/// read or created, or others may read it.
fn key_file(path: &Path, new: impl FnOnce() -> String) -> Result<String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let text = new();
            match create_whole(path, text.as_bytes()) {
                Ok(()) => return Ok(text),
                // Another process created it first: use that one.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?
                }
                Err(e) => return Err(e).with_context(|| format!("cannot create {}", path.display())),
            }
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        anyhow::bail!("{} is readable by others (mode {mode:o}); run chmod 600 on it", path.display());
    }
    Ok(text)
}

/// Creates `path` (mode 0600) holding `bytes`, all at once: written and synced under a
/// temporary name in the same folder, then hard-linked to `path`, which fails with
/// `AlreadyExists` when `path` exists (another process won); the folder is synced so the new
/// name survives a crash. On a file system without hard links the file is created in place.
fn create_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.{:016x}.tmp", std::process::id(), rand::random::<u64>()));
    let write = |at: &Path| -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(at)?;
        file.write_all(bytes)?;
        file.sync_all()
    };
    write(&tmp)?;
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(e),
        // No hard links here (some FUSE or FAT file systems): create the file in place.
        Err(_) => write(path)?,
    }
    // The key is whole either way; a file system that cannot sync a folder keeps it too.
    if let Ok(folder) = std::fs::File::open(dir) {
        let _ = folder.sync_all();
    }
    Ok(())
}

/// The hidden argument that makes `steward` serve one step of a generated tool.
pub const TOOL_WORKER_ARG: &str = "__tool-worker";

/// This binary as the worker of generated tools (`steward __tool-worker`); `None` when the
/// system cannot say where the binary is.
pub fn own_tool_worker() -> Option<steward_generated::WorkerCommand> {
    let program = std::env::current_exe().ok()?;
    Some(steward_generated::WorkerCommand { program, args: vec![TOOL_WORKER_ARG.to_string()] })
}

/// True when a process with this id exists (signal 0 succeeds or is merely not permitted).
#[allow(unsafe_code, reason = "kill(2) with signal 0: std signals only its own children")]
pub fn process_alive(pid: u32) -> bool {
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence and permission; it sends nothing.
    let rc = unsafe { libc::kill(pid as i32, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The CLI's owner id: `local:<user name>`.
#[allow(unsafe_code, reason = "getuid(2): std has no user id")]
pub fn local_owner() -> String {
    let user = std::env::var("USER").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| {
        // SAFETY: getuid has no preconditions.
        format!("uid{}", unsafe { libc::getuid() })
    });
    format!("local:{user}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Processes starting together in a new state directory each read or create the key at the
    /// same moment: every one gets the same whole key, and no temporary file is left.
    #[test]
    fn a_key_created_by_many_at_once_is_one_whole_key() {
        for round in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("audit.key");
            let barrier = std::sync::Barrier::new(8);
            let keys: Vec<String> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..8)
                    .map(|i| {
                        let (path, barrier) = (&path, &barrier);
                        scope.spawn(move || {
                            barrier.wait();
                            key_file(path, || format!("{i:0>64}")).unwrap()
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert!(keys.iter().all(|k| k.len() == 64 && *k == keys[0]), "round {round}: {keys:?}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), keys[0]);
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
            let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert_eq!(names, ["audit.key"], "round {round}");
        }
    }

    #[test]
    fn a_key_file_others_may_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("approval.key");
        std::fs::write(&path, "00".repeat(16)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = key_file(&path, || unreachable!("the key exists")).unwrap_err();
        assert!(err.to_string().contains("readable by others"), "{err}");
    }
}
