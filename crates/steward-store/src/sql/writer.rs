//! The single writer task of a store: group commit of queued writes.
//!
//! On SQLite the task runs on a thread of its own ([`super::dialect::Dialect::WRITER_THREAD`]):
//! its statements and disk syncs block that thread, which then hands nothing over to another
//! (a task of a multi-threaded runtime that blocks first gives its worker's queue to a new
//! thread, and on a busy machine every such hand-over waits for a core).
//!
//! Writes arrive over a bounded channel. The task takes the first one, drains whatever else is
//! already queued (up to [`MAX_BATCH`]) and, while nobody waits for any write of the batch
//! (queued events and audit records), lets the writes that follow join it for up to
//! [`LINGER`]: a burst of queued writes then commits in one transaction, not one each, and a
//! write with a waiter ends the wait at once ([`Shared::urgent`]). While it waits, the writes
//! nobody waits for do not wake it one by one: each wake-up is a hand-over between threads,
//! which on a busy machine waits for a core. It applies them all in ONE transaction on its own
//! connection ([`Dialect::BEGIN`]: `BEGIN IMMEDIATE` on SQLite, which takes the file's write
//! lock; `READ COMMITTED` on PostgreSQL, which then takes the locks the batch needs, see
//! [`Dialect::lock_batch`]), commits once and then answers every waiter, so concurrent runs share
//! one fsync. When one write of a batch fails, the batch is rolled back and each write is retried
//! in its own transaction, so a bad write fails alone.
//!
//! With the write lock (SQLite) or the audit chain lock (PostgreSQL) held, the chain head read
//! inside the transaction stays the head until the commit, so two writers never compute the same
//! `seq`.
//!
//! Disk syncs: a batch that somebody waits for (the audit record that lets an action run, a
//! run's end, a [`Work::Barrier`] that must be durable) is committed as durable as the store is
//! configured; a batch of queued writes only (events, outcome records) or of writes that need
//! not be on disk yet (a new run's record, a conversation, see [`needs_disk`]) may be committed
//! without forcing it to disk ([`Dialect::prepare_commit`]), as the next durable commit or a durable
//! barrier ([`crate::Store::flush`]) forces it too. The audit anchor follows the newest audit
//! record known durable, without a disk sync of its own but at a durable barrier and every
//! [`crate::anchor::SYNC_INTERVAL`] (see [`crate::anchor`] for why that still reveals a cut
//! tail).

use std::sync::Arc;
use std::time::Instant;

use sqlx::pool::PoolConnection;
use sqlx::{Connection, Pool};
use steward_protocol::{AuditEntry, Event};
use tokio::sync::mpsc;

use super::apply::{append_audits, apply, insert_events};
use super::dialect::Dialect;
use super::on_this_thread;
use super::work::{Applied, BatchError, Chained, DocumentTable, Pending, Reply, Shared, Work};
use crate::{OnDisk, StoreError};

/// Most writes committed in one transaction.
pub const MAX_BATCH: usize = 256;

/// Capacity of the write queue (writes); senders wait when it is full.
pub const QUEUE_CAPACITY: usize = 1024;

/// Longest time a batch of writes that nobody waits for is held open for more writes to join
/// it. A write with a waiter ends the wait at once, so it is never delayed by this.
pub const LINGER: std::time::Duration = std::time::Duration::from_millis(1);

/// What the writer knows about what has reached the disk.
#[derive(Default)]
struct Durability {
    /// A commit since the last forced one was relaxed (not forced to disk yet).
    unsynced: bool,
    /// The newest audit record this writer committed: `(seq, hash)`.
    newest: Option<(u64, String)>,
    /// A committed record that the anchor has not taken yet is the chain's first.
    starts_chain: bool,
    /// The `seq` this writer last moved the anchor to (or found it at).
    anchored: u64,
    /// The anchor was written since it was last forced to disk.
    anchor_dirty: bool,
    /// When the anchor was last forced to disk.
    anchor_synced: Option<Instant>,
}

/// Runs until every sender is gone, then returns after answering what was queued.
pub async fn run<D: Dialect>(pool: Pool<D::DB>, shared: Arc<Shared<D>>, mut queue: mpsc::Receiver<Pending>) {
    // The interval of anchor syncs starts now: a store that is opened, appends and is flushed
    // within it forces the anchor once, at the flush.
    let mut state = Durability { anchor_synced: Some(Instant::now()), ..Durability::default() };
    // Whoever waits for the disk from now on hears that nothing more will reach it, also when
    // this task ends by a panic.
    let _stopped = Stopped(&shared);
    shared.dialect.writer_starts();
    while let Some(first) = queue.recv().await {
        // Room for what is queued and then some: a burst of queued writes grows it a few times,
        // not once per doubling from one.
        let mut batch = Vec::with_capacity((queue.len() + 1).clamp(16, MAX_BATCH));
        batch.push(first);
        drain(&mut queue, &mut batch);
        // Nobody waits for these writes yet: give the ones that follow them a moment to join
        // the transaction, so a burst of queued writes commits once instead of once each.
        let deadline = tokio::time::Instant::now() + LINGER;
        while batch.len() < MAX_BATCH && batch.iter().all(|p| matches!(p.reply, Reply::Nobody)) {
            // Woken by a write with a waiter (or by one already taken, which left its notice:
            // the wait then goes on), else at the deadline; either way what is queued joins.
            let urgent = tokio::select! {
                biased;
                () = shared.urgent.notified() => true,
                () = tokio::time::sleep_until(deadline) => false,
            };
            drain(&mut queue, &mut batch);
            if !urgent {
                break;
            }
        }
        process(&pool, &shared, &mut state, batch).await;
    }
    // Queued writes that nobody waited for are forced to disk before the writer stops.
    if !state.unsynced || sync_now(&shared, &mut state).is_ok() {
        advance_anchor(&shared, &mut state, true);
    }
    pool.close().await;
}

/// Says, when dropped, that the writer stopped: waits for the disk ([`Shared::on_disk`]) then
/// end with an error instead of waiting for ever, and the dialect lets go of what the writer
/// held ([`Dialect::writer_stops`]).
struct Stopped<'a, D: Dialect>(&'a Shared<D>);

impl<D: Dialect> Drop for Stopped<'_, D> {
    fn drop(&mut self) {
        self.0.dialect.writer_stops();
        self.0.on_disk.send_modify(|synced| synced.fail("the store's writer stopped".into()));
    }
}

/// Moves the writes already queued into `batch`, up to [`MAX_BATCH`].
fn drain(queue: &mut mpsc::Receiver<Pending>, batch: &mut Vec<Pending>) {
    while batch.len() < MAX_BATCH {
        match queue.try_recv() {
            Ok(next) => batch.push(next),
            Err(_) => break,
        }
    }
}

/// Whether a write must be on disk when its waiter is answered.
///
/// A new run's record and a conversation's document need not be: they are written before
/// anything of the run takes effect, and commits reach the disk in the order they were made
/// (SQLite appends them to one WAL file; PostgreSQL flushes its WAL up to a commit), so the
/// first durable commit after them (the audit record that lets the run's first action run,
/// the run's end, a durable barrier) forces them too. Until then only a crash of the machine
/// itself, not of the process, can lose them, and with them a run that has done nothing yet.
/// A run's start then pays no disk sync before its first model request.
fn needs_disk(pending: &Pending) -> bool {
    match &pending.work {
        Work::Barrier { durable } => *durable,
        Work::InsertRun(_) => false,
        Work::Document(doc) if matches!(doc.table, DocumentTable::Conversations) => false,
        Work::GuardedAudit(_, OnDisk::Soon) => false,
        _ => !matches!(pending.reply, Reply::Nobody),
    }
}

async fn process<D: Dialect>(pool: &Pool<D::DB>, shared: &Shared<D>, state: &mut Durability, batch: Vec<Pending>) {
    let soon = batch.iter().any(|p| matches!(p.work, Work::GuardedAudit(_, OnDisk::Soon)));
    apply_and_answer(pool, shared, state, batch).await;
    // What was committed for a waiter who was answered before it reached the disk goes there
    // now, while that waiter goes on (off this worker thread's queue: see `on_this_thread`).
    if soon && state.unsynced && on_this_thread(|| sync_now(shared, state)).is_ok() {
        advance_anchor(shared, state, false);
    }
}

/// Forces every relaxed commit so far to disk ([`Dialect::sync_relaxed`]) and publishes what
/// is on disk; a failure is logged and published too ([`super::work::Synced::fail`]).
fn sync_now<D: Dialect>(shared: &Shared<D>, state: &mut Durability) -> std::io::Result<()> {
    let synced = shared.dialect.sync_relaxed();
    match &synced {
        Ok(()) => on_disk(shared, state),
        Err(error) => {
            tracing::warn!(path = %shared.path, %error, "committed writes could not be forced to disk");
            shared.on_disk.send_modify(|on_disk| on_disk.fail(error.to_string()));
        }
    }
    synced
}

/// Applies `batch` and answers its waiters.
async fn apply_and_answer<D: Dialect>(
    pool: &Pool<D::DB>,
    shared: &Shared<D>,
    state: &mut Durability,
    batch: Vec<Pending>,
) {
    let durable = batch.iter().any(needs_disk);
    if batch.iter().all(|p| matches!(p.work, Work::Barrier { .. })) {
        let mut result = Ok(());
        if durable && state.unsynced {
            result = sync_now(shared, state).map_err(|source| StoreError::Io { path: shared.path.clone(), source });
        }
        if result.is_ok() {
            advance_anchor(shared, state, durable);
        }
        for pending in batch {
            let answer_with = match (&result, &pending.work) {
                (Err(error), Work::Barrier { durable: true }) => {
                    Err(StoreError::Write { path: shared.path.clone(), message: error.to_string() })
                }
                _ => Ok(Applied::Nothing),
            };
            answer(shared, pending, answer_with);
        }
        return;
    }
    // A durable barrier (a flush) forces the anchor to disk too.
    let flush = batch.iter().any(|p| matches!(p.work, Work::Barrier { durable: true }));
    let works: Vec<&Work> = batch.iter().map(|p| &p.work).collect();
    // Inserts only (a run's record, documents, events, audit records): on the writer's own
    // connection, else in one call on the pool's where the database can. The pool's connection
    // is taken only when needed: it may not be open yet (see `SqliteStore::open`).
    let mut pooled = None;
    let (outcome, forced) = match shared.dialect.apply_unpooled(shared, &works, durable) {
        Some(done) => done,
        None => {
            let conn = match take_connection(pool, shared, &mut pooled).await {
                Ok(conn) => conn,
                Err(message) => {
                    fail_all(shared, batch, &message);
                    return;
                }
            };
            match shared.dialect.apply_inserts(conn, shared, &works, durable).await {
                Some(done) => done,
                None => {
                    let forced = match shared.dialect.prepare_commit(conn, &shared.path, durable).await {
                        Ok(forced) => forced,
                        Err(error) => {
                            fail_all(shared, batch, &error.to_string());
                            return;
                        }
                    };
                    (apply_batch(conn, shared, &works).await, forced)
                }
            }
        }
    };
    match outcome {
        Ok(results) => {
            committed(shared, state, &works, &results, forced, flush);
            for (pending, result) in batch.into_iter().zip(results) {
                answer(shared, pending, Ok(result));
            }
        }
        Err(BatchError::Transaction(error)) => fail_all(shared, batch, &error.to_string()),
        Err(BatchError::Write(error)) if batch.len() == 1 => {
            if let Some(pending) = batch.into_iter().next() {
                answer(shared, pending, Err(error));
            }
        }
        Err(BatchError::Write(_)) => {
            let conn = match take_connection(pool, shared, &mut pooled).await {
                Ok(conn) => conn,
                Err(message) => {
                    fail_all(shared, batch, &message);
                    return;
                }
            };
            // The retry commits on the pool's connection, which may not be the one the batch
            // failed on (SQLite's writer inserts on a connection of its own): as durable as
            // this one is set for.
            let forced = match shared.dialect.prepare_commit(conn, &shared.path, durable).await {
                Ok(forced) => forced,
                Err(error) => {
                    fail_all(shared, batch, &error.to_string());
                    return;
                }
            };
            retry_one_by_one(conn, shared, state, batch, forced, flush).await
        }
    }
}

/// The write pool's connection for the rest of a batch: the one in `pooled`, else one taken
/// from `pool` now and kept there.
///
/// Errors: the message of the pool's failure to give one (it could not open it, or it closed).
async fn take_connection<'a, D: Dialect>(
    pool: &Pool<D::DB>,
    shared: &Shared<D>,
    pooled: &'a mut Option<PoolConnection<D::DB>>,
) -> Result<&'a mut PoolConnection<D::DB>, String> {
    if let Some(conn) = pooled.take() {
        return Ok(pooled.insert(conn));
    }
    let conn = pool
        .acquire()
        .await
        .map_err(|source| StoreError::Database { path: shared.path.clone(), source }.to_string())?;
    Ok(pooled.insert(conn))
}

/// Notes a committed batch (`works`, which gave `results`): its newest audit record, whether
/// the disk has everything, and moves the anchor when the newest record is durable. `forced`:
/// the commit was made to reach the disk; `flush`: the batch held a durable barrier, so the
/// anchor is forced to disk too.
///
/// A forced commit that changed nothing writes nothing (SQLite appends no frame to its log,
/// so it syncs nothing): relaxed commits before it are then forced to disk here.
fn committed<D: Dialect>(
    shared: &Shared<D>,
    state: &mut Durability,
    works: &[&Work],
    results: &[Applied],
    forced: bool,
    flush: bool,
) {
    for result in results {
        if let Applied::Audit(record) = result {
            if state.newest.as_ref().is_none_or(|(seq, _)| record.seq > *seq) {
                state.newest = Some((record.seq, record.hash.clone()));
            }
            state.starts_chain |= record.seq == 1;
        }
    }
    let wrote = works.iter().zip(results).any(|(work, result)| match result {
        Applied::Audit(_) => true,
        Applied::Flag(changed) => *changed,
        Applied::Nothing => !matches!(work, Work::Barrier { .. }),
    });
    if !forced {
        state.unsynced = true;
        // Only the chain's first record creates the anchor, and its waiter may be answered
        // before the commit is forced: it is forced now, so that a process killed before the
        // next forced commit does not leave a chain whose anchor was never made.
        if state.starts_chain && sync_now(shared, state).is_ok() {
            advance_anchor(shared, state, flush);
        }
    } else if wrote || !state.unsynced {
        on_disk(shared, state);
        advance_anchor(shared, state, flush);
    } else if sync_now(shared, state).is_ok() {
        advance_anchor(shared, state, flush);
    }
}

/// Notes that everything committed so far is on disk, and publishes the newest audit record's
/// `seq` to [`Shared::on_disk`].
fn on_disk<D>(shared: &Shared<D>, state: &mut Durability) {
    state.unsynced = false;
    let newest = state.newest.as_ref().map_or(0, |(seq, _)| *seq);
    shared.on_disk.send_if_modified(|synced| {
        let newer = newest > synced.audit_seq;
        synced.audit_seq = synced.audit_seq.max(newest);
        newer
    });
}

/// Moves the anchor to the newest audit record, which the caller knows is durable, without a
/// disk sync; forces the anchor to disk when `sync` or when it was last forced
/// [`crate::anchor::SYNC_INTERVAL`] ago. A failure is logged: the records are committed either
/// way, and `verify_audit` reports an anchor that lags (or, when the file was removed, one that
/// is missing: only the chain's first record creates it).
fn advance_anchor<D>(shared: &Shared<D>, state: &mut Durability, sync: bool) {
    let Some(path) = &shared.anchor else { return };
    if let Some((seq, hash)) = &state.newest
        && *seq > state.anchored
    {
        match crate::anchor::advance(path, *seq, hash, state.starts_chain) {
            Ok(written) => {
                state.starts_chain = false;
                state.anchored = *seq;
                state.anchor_dirty |= written;
            }
            Err(error) => tracing::warn!(anchor = %path.display(), %error, "the audit anchor could not be updated"),
        }
    }
    let due = state.anchor_synced.is_none_or(|at| at.elapsed() >= crate::anchor::SYNC_INTERVAL);
    if state.anchor_dirty && (sync || due) {
        match crate::anchor::sync(path) {
            Ok(()) => {
                state.anchor_dirty = false;
                state.anchor_synced = Some(Instant::now());
            }
            Err(error) => tracing::warn!(anchor = %path.display(), %error, "the audit anchor could not be synced"),
        }
    }
}

async fn retry_one_by_one<D: Dialect>(
    conn: &mut PoolConnection<D::DB>,
    shared: &Shared<D>,
    state: &mut Durability,
    batch: Vec<Pending>,
    forced: bool,
    flush: bool,
) {
    for pending in batch {
        let result = match apply_batch(conn, shared, &[&pending.work]).await {
            Ok(results) => {
                committed(shared, state, &[&pending.work], &results, forced, flush);
                let mut results = results;
                Ok(results.pop().unwrap_or(Applied::Nothing))
            }
            Err(BatchError::Transaction(error) | BatchError::Write(error)) => Err(error),
        };
        answer(shared, pending, result);
    }
}

fn fail_all<D>(shared: &Shared<D>, batch: Vec<Pending>, message: &str) {
    for pending in batch {
        let error = StoreError::Write { path: shared.path.clone(), message: message.to_string() };
        answer(shared, pending, Err(error));
    }
}

fn answer<D>(shared: &Shared<D>, pending: Pending, result: Result<Applied, StoreError>) {
    let Pending { work, reply } = pending;
    // The record of an appended entry, the entry moved out of its write.
    let record = |chained: Chained| match work {
        Work::Audit(entry) | Work::GuardedAudit(entry, _) => Ok(chained.into_record(*entry)),
        _ => Err(StoreError::Write {
            path: shared.path.clone(),
            message: "an audit record answered a write that is not an audit entry".into(),
        }),
    };
    // A waiter that went away (its future was dropped) no longer needs an answer.
    match reply {
        Reply::Nobody => {
            if let Err(error) = result {
                tracing::warn!(path = %shared.path, error = %error, "a queued write could not be stored");
                if let Ok(mut slot) = shared.deferred.lock() {
                    slot.get_or_insert_with(|| error.to_string());
                }
            }
        }
        Reply::Done(tx) => {
            let _ = tx.send(result.map(|_| ()));
        }
        Reply::Audit(tx) => {
            let _ = tx.send(result.and_then(|applied| match applied {
                Applied::Audit(chained) => record(chained),
                Applied::Nothing | Applied::Flag(_) => Err(StoreError::Write {
                    path: shared.path.clone(),
                    message: "the audit write produced no record".into(),
                }),
            }));
        }
        Reply::Flag(tx) => {
            let _ = tx.send(result.and_then(|applied| match applied {
                Applied::Flag(changed) => Ok(changed),
                Applied::Nothing | Applied::Audit(_) => Err(StoreError::Write {
                    path: shared.path.clone(),
                    message: "the conditional write produced no result".into(),
                }),
            }));
        }
        Reply::GuardedAudit(tx) => {
            let _ = tx.send(result.and_then(|applied| match applied {
                Applied::Audit(chained) => record(chained).map(Some),
                Applied::Flag(false) => Ok(None),
                Applied::Nothing | Applied::Flag(true) => Err(StoreError::Write {
                    path: shared.path.clone(),
                    message: "the audit write produced no record".into(),
                }),
            }));
        }
    }
}

/// Applies `works` in one transaction ([`Dialect::BEGIN`]) and commits.
async fn apply_batch<D: Dialect>(
    conn: &mut PoolConnection<D::DB>,
    shared: &Shared<D>,
    works: &[&Work],
) -> Result<Vec<Applied>, BatchError> {
    let path = shared.path.as_str();
    let db = |source| StoreError::Database { path: path.to_string(), source };
    let mut tx = (**conn).begin_with(D::BEGIN).await.map_err(|e| BatchError::Transaction(db(e)))?;
    shared.dialect.lock_batch(&mut *tx, path, works).await.map_err(BatchError::Write)?;
    // Head of the chain, read inside this transaction (under the write or chain lock) on the
    // first audit write.
    let mut head: Option<(u64, String)> = None;
    let mut results = Vec::with_capacity(works.len());
    // Consecutive events and consecutive audit records go in one insert each
    // (`Dialect::insert_rows`: multi-row, or on SQLite one prepared row statement stepped on
    // the locked connection): every statement through sqlx is a round trip (to SQLite's worker
    // thread, or to the server).
    let mut i = 0;
    while i < works.len() {
        let same_kind = |w: &&&Work| std::mem::discriminant(**w) == std::mem::discriminant(works[i]);
        let end = i + works[i..].iter().take_while(same_kind).count();
        match works[i] {
            Work::Event(_) => {
                let events: Vec<&Event> = works[i..end]
                    .iter()
                    .filter_map(|w| if let Work::Event(e) = w { Some(&**e) } else { None })
                    .collect();
                insert_events::<D>(&mut *tx, path, &events).await.map_err(BatchError::Write)?;
                results.extend(events.iter().map(|_| Applied::Nothing));
            }
            Work::Audit(_) => {
                let entries: Vec<&AuditEntry> = works[i..end]
                    .iter()
                    .filter_map(|w| if let Work::Audit(e) = w { Some(&**e) } else { None })
                    .collect();
                let records =
                    append_audits::<D>(&mut *tx, shared, &entries, &mut head).await.map_err(BatchError::Write)?;
                results.extend(records.into_iter().map(Applied::Audit));
            }
            _ => {
                for work in &works[i..end] {
                    results.push(apply(&mut *tx, shared, work, &mut head).await.map_err(BatchError::Write)?);
                }
            }
        }
        i = end;
    }
    // Delivered to every listening node when (and only if) the transaction commits.
    shared.dialect.notify(&mut *tx, path, works, &results).await.map_err(BatchError::Write)?;
    tx.commit().await.map_err(|e| BatchError::Transaction(db(e)))?;
    Ok(results)
}

#[cfg(test)]
mod tests {
    use tokio::sync::oneshot;

    use super::*;
    use crate::sql::work::Document;
    use crate::{RunRecord, RunStatus};

    fn waited(work: Work) -> Pending {
        let (tx, _rx) = oneshot::channel();
        Pending { work, reply: Reply::Done(tx) }
    }

    fn run() -> RunRecord {
        RunRecord {
            id: "run_a".into(),
            owner_id: "local:alice".into(),
            task: "t".into(),
            planner: "model".into(),
            provider: "p".into(),
            model: "m".into(),
            workspace: "/ws".into(),
            status: RunStatus::Running,
            stop_reason: None,
            final_text: None,
            error_class: None,
            error: None,
            created_at: chrono::Utc::now(),
            finished_at: None,
            rounds: 0,
            tool_calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            pid: 1,
        }
    }

    fn document(table: DocumentTable) -> Work {
        Work::Document(Box::new(Document {
            table,
            id: "d".into(),
            key: "k".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            body: "{}".into(),
        }))
    }

    /// A run's start forces nothing to disk; what lets an action run, a run's end and the
    /// records that must survive a crash of the machine still do.
    #[test]
    fn only_writes_before_a_run_takes_effect_skip_the_disk_sync() {
        assert!(!needs_disk(&waited(Work::InsertRun(Box::new(run())))));
        assert!(!needs_disk(&waited(document(DocumentTable::Conversations))));
        assert!(needs_disk(&waited(document(DocumentTable::Rollbacks))));
        assert!(needs_disk(&waited(document(DocumentTable::Grants))));
        assert!(needs_disk(&waited(Work::UpdateRun(Box::new(run())))));
        assert!(needs_disk(&waited(Work::FinishRun(Box::new(run())))));
        assert!(needs_disk(&waited(Work::DeleteRun("run_a".into()))));
        assert!(needs_disk(&waited(Work::Barrier { durable: true })));
        assert!(!needs_disk(&waited(Work::Barrier { durable: false })));
        let queued = Pending { work: Work::UpdateRun(Box::new(run())), reply: Reply::Nobody };
        assert!(!needs_disk(&queued));
    }
}
