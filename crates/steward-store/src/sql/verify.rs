//! Verifying the audit chain in one pass over the stored rows.
//!
//! The rows are read in `seq` order by one query and each is hashed straight from its columns
//! ([`StoredFields`]: the store writes `at`, `input` and `outcome` in the forms the hash
//! covers), checking on the way that `seq` follows and `prev_hash` names the previous record
//! ([`ChainState::check`]), with one reused buffer and no record built. Only the previous hash
//! is kept, so memory does not grow with the chain.
//!
//! How the rows are read is the database's ([`Dialect::check_audit_rows`]): PostgreSQL streams
//! them through sqlx ([`check_rows`]); SQLite steps its own statement through SQLite's C API
//! and hashes each row from the column values in place ([`super::sqlite_raw`]), as sqlx
//! would copy every value of every row and hand each row over from its worker thread.
//!
//! This pass only ever concludes that the chain is intact: at the first row that does not
//! check out (its hash, `seq` or `prev_hash`, a column of another type than the store writes
//! or that does not decode, a text not in its stored form, or the anchor), it gives up and the
//! caller runs the full verification ([`crate::verify_chain`] over decoded records), which
//! names the first bad record and its problem exactly as before.

use futures::TryStreamExt;

use super::SqlStore;
use super::chain_state::{ChainState, RowFields};
use super::dialect::{Conn, Dialect, ReadRow};
use super::rows::AUDIT_COLUMNS;
use crate::chain::StoredFields;
use crate::{AuditVerification, StoreError};

/// The anchor as read before the chain: `None` without an anchor file configured,
/// `Some(None)` when it is configured but missing or garbled.
pub type AnchorRead = Option<Option<(u64, String)>>;

/// The query whose rows the verification reads: every record, columns in
/// [`AUDIT_COLUMNS`] order, by `seq`.
pub fn chain_sql() -> String {
    format!("SELECT {AUDIT_COLUMNS} FROM audit ORDER BY seq")
}

impl<D: Dialect> SqlStore<D> {
    /// `Valid` when every record checks out, and the anchor (read before the chain, so records
    /// appended meanwhile only lengthen the chain) names one of them with its hash; `None` when
    /// anything does not, for the full verification to report it.
    pub(super) async fn verify_streaming(&self, anchor: &AnchorRead) -> Result<Option<AuditVerification>, StoreError> {
        let db = |source| StoreError::Database { path: self.path().to_string(), source };
        let mut conn = self.read.acquire().await.map_err(db)?;
        let mut chain =
            ChainState::new(anchor.as_ref().and_then(|a| a.as_ref()).cloned(), self.shared.audit_key.clone());
        if !D::check_audit_rows(&mut conn, &mut chain).await.map_err(db)? {
            return Ok(None);
        }
        let anchor_holds = match anchor {
            None => true,
            Some(None) => chain.seq == 0,
            Some(Some((seq, _))) => *seq <= chain.seq,
        };
        Ok(anchor_holds.then_some(AuditVerification::Valid { records: chain.seq }))
    }
}

/// Checks every row of [`chain_sql`] as streamed by sqlx: whether all of them check out.
pub async fn check_rows<D: Dialect>(conn: &mut Conn<D>, chain: &mut ChainState) -> Result<bool, sqlx::Error> {
    let sql = chain_sql();
    let mut rows = D::fetch(conn, &sql);
    while let Some(row) = rows.try_next().await? {
        let Some(fields) = row_fields(&row) else { return Ok(false) };
        if !chain.check(&fields) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The columns of a row of [`chain_sql`], when each has the type the store writes and `seq`
/// and `latency_ms` are not negative.
fn row_fields<R: ReadRow>(row: &R) -> Option<RowFields<'_>> {
    Some(RowFields {
        fields: StoredFields {
            seq: u64::try_from(row.int_at(0).ok()?).ok()?,
            id: row.text_at(1).ok()?,
            at: row.text_at(2).ok()?,
            agent: row.text_at(3).ok()?,
            run_id: row.text_at(4).ok()?,
            call_id: row.text_at(5).ok()?,
            action: row.text_at(6).ok()?,
            input: row.text_at(7).ok()?,
            policy: row.text_at(8).ok()?,
            risk: row.real_at(9).ok()?,
            outcome: row.text_at(10).ok()?,
            latency_ms: u64::try_from(row.int_at(11).ok()?).ok()?,
            sandbox: row.text_at(12).ok()?,
            approval_id: row.text_at(13).ok()?,
            rollback_token: row.text_at(14).ok()?,
            detail: row.text_at(15).ok()?,
        },
        prev_hash: row.text_at(16).ok()?,
        hash: row.text_at(17).ok()?,
    })
}
