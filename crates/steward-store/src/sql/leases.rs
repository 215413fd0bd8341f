//! Leases of running runs on PostgreSQL (table `run_leases`, migration 0009).
//!
//! A run gets a lease for its node when it is inserted ([`PgDialect::insert_lease`], lifetime:
//! the last TTL given to [`PgDialect::renew`], 15 s until then). The process executing it renews
//! it ([`PgDialect::renew`]); a lease whose `expires_at` (database clock) has passed while its
//! run is still `running` marks a node that stopped, and [`PgDialect::take_over_expired`] hands such
//! runs to exactly one other node for recovery: the lease rows are locked with `FOR UPDATE SKIP
//! LOCKED` and moved to the recovering node in one statement, so a second node running the
//! same statement concurrently skips them, and one running it afterwards finds them no longer
//! expired.

use std::sync::atomic::Ordering;
use std::time::Duration;

use sqlx::{PgConnection, PgPool};

use super::postgres::PgDialect;
use super::rows::{RUN_COLUMNS, run_from_row};
use crate::{RunRecord, RunStatus, StoreError};

/// Seconds of `ttl` for `make_interval(secs => …)`, at least 1 ms.
fn seconds(ttl: Duration) -> f64 {
    ttl.as_secs_f64().max(0.001)
}

impl PgDialect {
    /// Gives run `run_id`, just inserted by this node, its first lease (inside the insert's
    /// transaction).
    pub(super) async fn insert_lease(
        &self,
        conn: &mut PgConnection,
        path: &str,
        run_id: &str,
    ) -> Result<(), StoreError> {
        let ttl = Duration::from_millis(self.lease_ttl_ms.load(Ordering::Relaxed));
        sqlx::query(
            "INSERT INTO run_leases (run_id, node, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3)) \
             ON CONFLICT (run_id) DO NOTHING",
        )
        .bind(run_id)
        .bind(&self.node)
        .bind(seconds(ttl))
        .execute(&mut *conn)
        .await
        .map_err(|source| StoreError::Database { path: path.to_string(), source })?;
        Ok(())
    }

    /// Extends to now + `ttl` the leases of the `running` runs of this node executed by process
    /// `pid`, creating missing ones; a lease another node has taken over is left alone. Returns
    /// how many leases were renewed. `ttl` also becomes the lifetime of the leases of runs
    /// inserted from now on.
    pub(super) async fn renew(&self, pool: &PgPool, path: &str, pid: u32, ttl: Duration) -> Result<u64, StoreError> {
        let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        self.lease_ttl_ms.store(millis, Ordering::Relaxed);
        let done = sqlx::query(
            "INSERT INTO run_leases (run_id, node, expires_at) \
             SELECT id, node, now() + make_interval(secs => $3) FROM runs \
             WHERE status = $4 AND node = $1 AND pid = $2 \
             ON CONFLICT (run_id) DO UPDATE SET expires_at = excluded.expires_at \
             WHERE run_leases.node = excluded.node",
        )
        .bind(&self.node)
        .bind(i64::from(pid))
        .bind(seconds(ttl))
        .bind(RunStatus::Running.as_str())
        .execute(pool)
        .await
        .map_err(|source| StoreError::Database { path: path.to_string(), source })?;
        Ok(done.rows_affected())
    }

    /// Of `run_ids`, those no longer `running` or whose lease another node holds.
    pub(super) async fn lost(&self, pool: &PgPool, path: &str, run_ids: &[String]) -> Result<Vec<String>, StoreError> {
        if run_ids.is_empty() {
            return Ok(Vec::new());
        }
        let lost: Vec<(String,)> = sqlx::query_as(
            "SELECT r.id FROM runs r LEFT JOIN run_leases l ON l.run_id = r.id \
             WHERE r.id = ANY($1) AND (r.status <> $2 OR (l.node IS NOT NULL AND l.node <> $3)) ORDER BY r.id",
        )
        .bind(run_ids)
        .bind(RunStatus::Running.as_str())
        .bind(&self.node)
        .fetch_all(pool)
        .await
        .map_err(|source| StoreError::Database { path: path.to_string(), source })?;
        Ok(lost.into_iter().map(|(id,)| id).collect())
    }

    /// Takes over at most `limit` `running` runs of other nodes whose lease has expired: their
    /// leases move to this node for `ttl` (long enough to recover them; should this node stop
    /// meanwhile, another one takes them over in turn). Returns the runs, oldest lease first.
    pub(super) async fn take_over_expired(
        &self,
        pool: &PgPool,
        path: &str,
        ttl: Duration,
        limit: u32,
    ) -> Result<Vec<RunRecord>, StoreError> {
        let db = |source| StoreError::Database { path: path.to_string(), source };
        let taken: Vec<(String,)> = sqlx::query_as(
            "WITH expired AS ( \
               SELECT l.run_id FROM run_leases l JOIN runs r ON r.id = l.run_id \
               WHERE r.status = $4 AND l.expires_at < now() AND l.node <> $1 \
               ORDER BY l.expires_at, l.run_id LIMIT $3 \
               FOR UPDATE OF l SKIP LOCKED) \
             UPDATE run_leases SET node = $1, expires_at = now() + make_interval(secs => $2) \
             FROM expired WHERE run_leases.run_id = expired.run_id \
             RETURNING run_leases.run_id",
        )
        .bind(&self.node)
        .bind(seconds(ttl))
        .bind(i64::from(limit))
        .bind(RunStatus::Running.as_str())
        .fetch_all(pool)
        .await
        .map_err(db)?;
        if taken.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = taken.into_iter().map(|(id,)| id).collect();
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ANY($1) ORDER BY created_at, id");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(&ids).fetch_all(pool).await.map_err(db)?;
        rows.iter().map(|row| run_from_row(path, row)).collect()
    }
}
