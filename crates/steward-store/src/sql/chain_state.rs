//! Where a verification pass of the audit chain is ([`ChainState`]), and the check of one row
//! as read ([`RowFields`]) against the record before it: the part of the verification that
//! does not depend on how the rows are read ([`super::verify`]).

use steward_protocol::AuditOutcome;

use crate::chain::{AuditKey, GENESIS_HASH, StoredFields};

/// The columns of one stored audit row, as read: the hashed fields and the stored links.
pub(crate) struct RowFields<'a> {
    /// The fields the hash covers, in their stored forms.
    pub(crate) fields: StoredFields<'a>,
    /// `prev_hash`.
    pub(crate) prev_hash: &'a str,
    /// `hash`.
    pub(crate) hash: &'a str,
}

/// Where a verification pass is in the chain.
pub struct ChainState {
    /// The last record checked (0 before the first).
    pub(crate) seq: u64,
    /// Its hash ([`GENESIS_HASH`] before the first).
    hash: [u8; 64],
    /// The anchor's record and hash, when there is one.
    anchor: Option<(u64, String)>,
    /// The chain's key, if any.
    key: Option<AuditKey>,
    /// A keyed record was checked: no unkeyed record may follow.
    keyed: bool,
    /// Scratch space of the hash.
    buf: String,
}

impl ChainState {
    /// Before the first record, with the anchor's record and hash when there is one, and the
    /// chain's key when it has one.
    pub(crate) fn new(anchor: Option<(u64, String)>, key: Option<AuditKey>) -> Self {
        let mut hash = [0u8; 64];
        hash.copy_from_slice(GENESIS_HASH.as_bytes());
        ChainState { seq: 0, hash, anchor, key, keyed: false, buf: String::with_capacity(1024) }
    }

    /// Checks `row` as record `seq + 1` of the last checked: it must be that record, link to
    /// its hash, have its own hash recompute from its columns and, when the anchor names it,
    /// have the anchor's hash. On success the row becomes the last checked.
    pub(crate) fn check(&mut self, row: &RowFields<'_>) -> bool {
        let Some(hash) = self.hash_row(row) else { return false };
        self.seq += 1;
        if let Some((seq, anchor_hash)) = &self.anchor
            && *seq == self.seq
            && anchor_hash.as_bytes() != hash
        {
            return false;
        }
        self.hash = hash;
        true
    }

    /// The row's stored hash when the row is record `self.seq + 1`, links to `self.hash` and
    /// its hash recomputes from its columns; `None` otherwise.
    fn hash_row(&mut self, row: &RowFields<'_>) -> Option<[u8; 64]> {
        let fields = &row.fields;
        if fields.seq != self.seq.checked_add(1)? || row.prev_hash.as_bytes() != self.hash {
            return None;
        }
        // Only the forms the store writes: another spelling of the same time or outcome hashes
        // differently, and the full verification judges it.
        if !is_timestamp_text(fields.at) || AuditOutcome::parse(fields.outcome)?.as_str() != fields.outcome {
            return None;
        }
        // Unkeyed records (written before keys) only until the first keyed one; one hash per
        // record, except for the first keyed record of a chain that began unkeyed.
        if !self.keyed {
            let computed = fields.hash(row.prev_hash, &mut self.buf);
            if row.hash.as_bytes() == computed {
                return Some(computed);
            }
        }
        let computed = fields.keyed_hash(self.key.as_ref()?, row.prev_hash, &mut self.buf);
        self.keyed = true;
        (row.hash.as_bytes() == computed).then_some(computed)
    }
}

/// Whether `text` is exactly [`crate::chain::timestamp_text`] of the time it names:
/// `YYYY-MM-DDTHH:MM:SS.NNNNNNNNNZ` of a real date and a time of day without a leap second
/// (a leap second is left to the full verification).
fn is_timestamp_text(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 30 {
        return false;
    }
    let digits = |range: std::ops::Range<usize>| {
        b[range].iter().try_fold(0u32, |n, &d| d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0')))
    };
    let separators = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':'), (19, b'.'), (29, b'Z')];
    if separators.iter().any(|&(i, c)| b[i] != c) || digits(20..29).is_none() {
        return false;
    }
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) =
        (digits(0..4), digits(5..7), digits(8..10), digits(11..13), digits(14..16), digits(17..19))
    else {
        return false;
    };
    let date = i32::try_from(year).ok().and_then(|y| chrono::NaiveDate::from_ymd_opt(y, month, day));
    date.is_some() && hour < 24 && minute < 60 && second < 60
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::timestamp_text;

    /// The definition the fast check must agree with: the text is what formatting its parse
    /// gives.
    fn round_trips(text: &str) -> bool {
        chrono::DateTime::parse_from_rfc3339(text)
            .is_ok_and(|at| timestamp_text(&at.with_timezone(&chrono::Utc)) == text)
    }

    #[test]
    fn the_timestamp_check_accepts_exactly_the_stored_form() {
        let texts = [
            "2026-01-02T03:04:05.123456789Z",
            "2024-02-29T23:59:59.999999999Z",
            "0001-01-01T00:00:00.000000000Z",
            "9999-12-31T23:59:59.000000000Z",
            "2025-02-29T00:00:00.000000000Z",
            "2026-13-01T00:00:00.000000000Z",
            "2026-04-31T00:00:00.000000000Z",
            "2026-01-00T00:00:00.000000000Z",
            "2026-01-02T24:00:00.000000000Z",
            "2026-01-02T03:60:05.000000000Z",
            "2026-01-02T03:04:60.000000000Z",
            "2026-01-02T03:04:05.12345678Z",
            "2026-01-02T03:04:05.1234567890Z",
            "2026-01-02t03:04:05.123456789Z",
            "2026-01-02T03:04:05.123456789z",
            "2026-01-02T03:04:05.123456789+00:00",
            "2026-01-02 03:04:05.123456789Z",
            "2026-01-02T03:04:05,123456789Z",
            "+026-01-02T03:04:05.123456789Z",
            "2026-01-02T03:04:05.12345678٩Z",
            "",
        ];
        for text in texts {
            // A leap second round trips in chrono; the fast check leaves it to the full one.
            let leap_second = text.get(17..19) == Some("60");
            assert_eq!(is_timestamp_text(text), round_trips(text) && !leap_second, "{text}");
        }
        assert!(is_timestamp_text(&timestamp_text(&chrono::Utc::now())));
    }
}
