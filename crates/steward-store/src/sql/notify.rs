//! Change notices between nodes over PostgreSQL `LISTEN/NOTIFY`.
//!
//! Every batch the writer commits sends, inside its transaction, one notice per run whose
//! events were stored (with the highest sequence number), per approval request stored, per
//! approval decision recorded and per run inserted or updated ([`send`]); PostgreSQL delivers
//! them when, and only if, the transaction commits. The payload is a [`Change`] as JSON:
//! identifiers only, never content.
//!
//! The channel is `steward_` followed by the MD5 of the current schema (`current_schema()`),
//! so that stores on different schemas of one database (tests, or several installations) do
//! not wake each other.
//!
//! [`Hub::subscribe`] starts, on first use, one listening task per store ([`PgListener`] on a
//! connection of its own) that hands every notice to the subscribers through a broadcast
//! channel. When that connection is lost and re-established, notices of the gap are lost:
//! subscribers then get [`Change::Resync`] and re-read what they follow.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use sqlx::PgConnection;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use tokio::sync::{broadcast, oneshot};

use super::work::{Applied, Work};
use crate::StoreError;
use crate::change::{CHANGE_BUFFER, Change};

/// How long opening waits for a connection before failing (10 s).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The channel name, computed by the database itself so that the writer and the listener
/// agree whatever the search path.
const CHANNEL_SQL: &str = "SELECT 'steward_' || md5(current_schema())";

/// How long the listener waits before connecting again after a failure.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// Sends the notices of a batch (`works` and what applying them gave, in the same order) on
/// the transaction `conn`; nothing is sent for a batch without events, approvals, decisions or
/// run records.
pub async fn send(conn: &mut PgConnection, path: &str, works: &[&Work], results: &[Applied]) -> Result<(), StoreError> {
    let payloads = payloads(works, results);
    if payloads.is_empty() {
        return Ok(());
    }
    sqlx::query("SELECT pg_notify('steward_' || md5(current_schema()), p) FROM unnest($1::text[]) AS p")
        .bind(payloads)
        .execute(&mut *conn)
        .await
        .map_err(|source| StoreError::Database { path: path.to_string(), source })?;
    Ok(())
}

/// The payloads of a batch: events folded to one notice per run (its highest `seq`).
fn payloads(works: &[&Work], results: &[Applied]) -> Vec<String> {
    let mut events: BTreeMap<&str, u64> = BTreeMap::new();
    let mut changes = Vec::new();
    for (work, result) in works.iter().zip(results) {
        match work {
            Work::Event(event) => {
                let seq = events.entry(event.run_id.as_str()).or_insert(event.seq);
                *seq = (*seq).max(event.seq);
            }
            Work::Approval(a) => {
                changes.push(Change::Approval { run_id: a.run_id.clone(), approval_id: a.id.clone() });
            }
            Work::InsertDecision { approval_id, run_id, .. } if matches!(result, Applied::Flag(true)) => {
                changes.push(Change::Decision { run_id: run_id.clone(), approval_id: approval_id.clone() });
            }
            Work::InsertRun(run) | Work::UpdateRun(run) => changes.push(Change::Run { run_id: run.id.clone() }),
            Work::FinishRun(run) if matches!(result, Applied::Flag(true)) => {
                changes.push(Change::Run { run_id: run.id.clone() });
            }
            _ => {}
        }
    }
    let events = events.into_iter().map(|(run_id, seq)| Change::Event { run_id: run_id.to_string(), seq });
    events.chain(changes).map(|c| c.to_payload()).collect()
}

/// The subscribers of one store and its listening task.
#[derive(Debug)]
pub struct Hub {
    connect: PgConnectOptions,
    path: String,
    started: OnceLock<Started>,
}

#[derive(Debug)]
struct Started {
    sender: broadcast::Sender<Change>,
    /// Dropped with the hub: stops the listening task.
    _stop: Mutex<Option<oneshot::Sender<()>>>,
}

impl Hub {
    /// A hub listening with `connect` (the store's read connection options) once subscribed.
    pub fn new(connect: PgConnectOptions, path: String) -> Self {
        Hub { connect, path, started: OnceLock::new() }
    }

    /// A receiver of every notice from now on; starts the listening task on first use (must be
    /// called inside a Tokio runtime). The task stops when the hub is dropped.
    pub fn subscribe(self: &Arc<Self>) -> broadcast::Receiver<Change> {
        let mut start = None;
        let started = self.started.get_or_init(|| {
            let (stop_tx, stop_rx) = oneshot::channel();
            start = Some(stop_rx);
            Started { sender: broadcast::channel(CHANGE_BUFFER).0, _stop: Mutex::new(Some(stop_tx)) }
        });
        let receiver = started.sender.subscribe();
        if let Some(stop) = start {
            tokio::spawn(listen(Arc::downgrade(self), self.connect.clone(), self.path.clone(), stop));
        }
        receiver
    }
}

/// Publishes `change` to the hub's subscribers; false when the hub is gone.
fn publish(hub: &Weak<Hub>, change: Change) -> bool {
    let Some(hub) = hub.upgrade() else { return false };
    if let Some(started) = hub.started.get() {
        let _ = started.sender.send(change);
    }
    true
}

/// Listens until `stop` fires (the hub was dropped), reconnecting after failures.
async fn listen(hub: Weak<Hub>, connect: PgConnectOptions, path: String, mut stop: oneshot::Receiver<()>) {
    loop {
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_lazy_with(connect.clone());
        let connected = async {
            let (channel,): (String,) = sqlx::query_as(CHANNEL_SQL).fetch_one(&pool).await?;
            let mut listener = PgListener::connect_with(&pool).await?;
            listener.ignore_pool_close_event(true);
            listener.listen(&channel).await?;
            Ok::<_, sqlx::Error>(listener)
        };
        let connected = tokio::select! {
            connected = connected => connected,
            _ = &mut stop => return,
        };
        match connected {
            Ok(mut listener) => {
                // Whatever happened before this connection listened is not known here.
                if !publish(&hub, Change::Resync) {
                    return;
                }
                loop {
                    let received = tokio::select! {
                        received = listener.try_recv() => received,
                        _ = &mut stop => return,
                    };
                    let delivered = match received {
                        Ok(Some(notice)) => match Change::from_payload(notice.payload()) {
                            Some(change) => publish(&hub, change),
                            None => true,
                        },
                        // The connection was lost and re-established: notices may be missing.
                        Ok(None) => publish(&hub, Change::Resync),
                        Err(error) => {
                            tracing::warn!(database = %path, %error, "change notices: the listening connection failed");
                            break;
                        }
                    };
                    if !delivered {
                        return;
                    }
                }
            }
            Err(error) => {
                tracing::warn!(database = %path, %error, "change notices: cannot listen; retrying");
            }
        }
        pool.close().await;
        tokio::select! {
            _ = tokio::time::sleep(RECONNECT_AFTER) => {}
            _ = &mut stop => return,
        }
    }
}
