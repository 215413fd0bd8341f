//! Verifying the audit chain in one pass over the stored rows.
//!
//! The rows are streamed by one query in `seq` order and each is hashed straight from its
//! columns ([`StoredFields`]: the store writes `at`, `input` and `outcome` in the forms the hash
//! covers), checking on the way that `seq` follows and `prev_hash` names the previous record,
//! with one reused buffer and no record built. Only the previous hash is kept, so memory does
//! not grow with the chain.
//!
//! This pass only ever concludes that the chain is intact: at the first row that does not
//! check out (its hash, `seq` or `prev_hash`, a column that does not decode, a text not in its
//! stored form, or the anchor), it gives up and the caller runs the full verification
//! ([`crate::verify_chain`] over decoded records), which names the first bad record and its
//! problem exactly as before.

use futures::TryStreamExt;
use steward_protocol::AuditOutcome;

use super::SqlStore;
use super::dialect::{Dialect, ReadRow};
use super::rows::AUDIT_COLUMNS;
use crate::chain::{GENESIS_HASH, StoredFields, timestamp_text};
use crate::{AuditVerification, StoreError};

/// The anchor as read before the chain: `None` without an anchor file configured,
/// `Some(None)` when it is configured but missing or garbled.
pub type AnchorRead = Option<Option<(u64, String)>>;

impl<D: Dialect> SqlStore<D> {
    /// `Valid` when every record checks out, and the anchor (read before the chain, so records
    /// appended meanwhile only lengthen the chain) names one of them with its hash; `None` when
    /// anything does not, for the full verification to report it.
    pub(super) async fn verify_streaming(&self, anchor: &AnchorRead) -> Result<Option<AuditVerification>, StoreError> {
        let db = |source| StoreError::Database { path: self.path().to_string(), source };
        let mut conn = self.read.acquire().await.map_err(db)?;
        let sql = format!("SELECT {AUDIT_COLUMNS} FROM audit ORDER BY seq");
        let mut rows = D::fetch(&mut conn, &sql);
        let mut buf = Vec::with_capacity(1024);
        let mut prev_seq = 0u64;
        let mut prev_hash = [0u8; 64];
        prev_hash.copy_from_slice(GENESIS_HASH.as_bytes());
        let anchored = anchor.as_ref().and_then(|a| a.as_ref());
        let mut count = 0u64;
        while let Some(row) = rows.try_next().await.map_err(db)? {
            let Some(hash) = check_row(&row, prev_seq, &prev_hash, &mut buf) else { return Ok(None) };
            prev_seq += 1;
            if let Some((seq, anchor_hash)) = anchored
                && *seq == prev_seq
                && anchor_hash.as_bytes() != hash
            {
                return Ok(None);
            }
            prev_hash = hash;
            count += 1;
        }
        let anchor_holds = match anchor {
            None => true,
            Some(None) => count == 0,
            Some(Some((seq, _))) => *seq <= prev_seq,
        };
        Ok(anchor_holds.then_some(AuditVerification::Valid { records: count }))
    }
}

/// The row's stored hash when the row is record `prev_seq + 1`, links to `prev_hash` and its
/// hash recomputes from its columns; `None` otherwise.
fn check_row<R: ReadRow>(row: &R, prev_seq: u64, prev_hash: &[u8; 64], buf: &mut Vec<u8>) -> Option<[u8; 64]> {
    // Columns in AUDIT_COLUMNS order.
    let seq = u64::try_from(row.int_at(0).ok()?).ok()?;
    if seq != prev_seq.checked_add(1)? || row.text_at(16).ok()?.as_bytes() != prev_hash {
        return None;
    }
    let at = row.text_at(2).ok()?;
    let outcome = row.text_at(10).ok()?;
    // Only the forms the store writes: another spelling of the same time or outcome hashes
    // differently, and the full verification judges it.
    if !is_timestamp_text(at) || AuditOutcome::parse(outcome)?.as_str() != outcome {
        return None;
    }
    let fields = StoredFields {
        seq,
        id: row.text_at(1).ok()?,
        at,
        agent: row.text_at(3).ok()?,
        run_id: row.text_at(4).ok()?,
        call_id: row.text_at(5).ok()?,
        action: row.text_at(6).ok()?,
        input: row.text_at(7).ok()?,
        policy: row.text_at(8).ok()?,
        risk: row.real_at(9).ok()?,
        outcome,
        latency_ms: u64::try_from(row.int_at(11).ok()?).ok()?,
        sandbox: row.text_at(12).ok()?,
        approval_id: row.text_at(13).ok()?,
        rollback_token: row.text_at(14).ok()?,
        detail: row.text_at(15).ok()?,
    };
    // The previous hash is 64 ASCII hex digits (compared above with a stored one).
    let prev = std::str::from_utf8(prev_hash).ok()?;
    let hash = fields.hash(prev, buf);
    (row.text_at(17).ok()?.as_bytes() == hash).then_some(hash)
}

/// Whether `text` is exactly [`timestamp_text`] of the time it names.
fn is_timestamp_text(text: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(text).is_ok_and(|at| timestamp_text(&at.with_timezone(&chrono::Utc)) == text)
}
