//! The audit hash chain: the canonical form that is hashed, and verification of a chain.
//!
//! Two schemes link the records. The first, an unkeyed SHA-256 ([`audit_hash`]), lets anyone
//! with write access to the database append records that verify. The second, keyed
//! ([`audit_hmac`], HMAC-SHA256 under an [`AuditKey`] kept outside the database), is what a
//! store opened with a key writes: a record forged without the key fails verification. A
//! chain may start with unkeyed records (written before keys) and go on keyed; a record that
//! verifies only under the unkeyed hash after a keyed one is refused (`unkeyed after keyed`).

use chrono::SecondsFormat;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::{Digest, Sha256};
use steward_protocol::{AuditRecord, Timestamp};

use crate::AuditVerification;

/// `prev_hash` of the first record: 64 zeros.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The one text form of a timestamp used for storage and hashing: RFC 3339 in UTC with exactly
/// nine fractional digits and a `Z` (`2026-01-02T03:04:05.000000000Z`). Fixed width, so text
/// order is time order, and lossless for chrono's nanosecond precision.
pub fn timestamp_text(at: &Timestamp) -> String {
    at.to_rfc3339_opts(SecondsFormat::Nanos, true)
}

/// The key of the audit chain's HMAC: at least 16 bytes, kept outside the database (the
/// `steward` binary keeps it in `audit.key` beside `approval.key`).
#[derive(Clone)]
pub struct AuditKey {
    bytes: Vec<u8>,
    /// The HMAC keyed with `bytes` before any message: its inner and outer pads are hashed
    /// once here instead of for every record (two SHA-256 blocks of each record's eight or so).
    keyed: Hmac<Sha256>,
}

impl AuditKey {
    /// The key of `bytes`, or `None` when shorter than 16 bytes.
    pub fn new(bytes: Vec<u8>) -> Option<AuditKey> {
        if bytes.len() < 16 {
            return None;
        }
        // HMAC accepts a key of any length.
        let keyed = <Hmac<Sha256> as Mac>::new_from_slice(&bytes).ok()?;
        Some(AuditKey { bytes, keyed })
    }

    /// A new random key of 32 bytes.
    pub fn generate() -> AuditKey {
        AuditKey::new(rand::random::<[u8; 32]>().to_vec()).expect("32 bytes are a long enough key")
    }

    /// The key as lowercase hex (how it is kept in a file).
    pub fn to_hex(&self) -> String {
        hex::encode(&self.bytes)
    }
}

impl PartialEq for AuditKey {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for AuditKey {}

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditKey(…)")
    }
}

/// The keyed hash of an audit record: lowercase hex of HMAC-SHA256 under `key` over the same
/// bytes [`audit_hash`] hashes (`prev_hash` followed by the canonical array of the fields).
pub fn audit_hmac(key: &AuditKey, prev_hash: &str, record_without_hash: &AuditRecord) -> String {
    let at = timestamp_text(&record_without_hash.at);
    let input = canonical_json(&record_without_hash.entry.input);
    let fields = StoredFields::of(record_without_hash, &at, &input);
    let hex = fields.keyed_hash(key, prev_hash, &mut String::with_capacity(512));
    String::from_utf8_lossy(&hex).into_owned()
}

/// The hash of an audit record, as lowercase hex of SHA-256 (FIPS 180-4).
///
/// The `hash` field of `record` is ignored. The hashed bytes are the UTF-8 of `prev_hash`
/// (64 hex chars) immediately followed by a compact JSON array (RFC 8259) of the other fields
/// in this fixed order:
///
/// `[seq, id, at, agent, run_id, call_id, action, input, policy, risk, outcome, latency_ms,
///   sandbox, approval_id, rollback_token, detail]`
///
/// where `seq` and `latency_ms` are JSON integers, `at` is the string of [`timestamp_text`],
/// `input` is the JSON value with object keys sorted by their UTF-8 bytes at every depth and no
/// whitespace, `risk` is serde_json's shortest round-trip form of the `f64` (`null` when not
/// finite; the store refuses those), `outcome` is its wire name, and the rest are JSON strings.
/// The record's own `prev_hash` field is not part of the array: the `prev_hash` argument is.
pub fn audit_hash(prev_hash: &str, record_without_hash: &AuditRecord) -> String {
    let at = timestamp_text(&record_without_hash.at);
    let input = canonical_json(&record_without_hash.entry.input);
    let fields = StoredFields::of(record_without_hash, &at, &input);
    let hex = fields.hash(prev_hash, &mut String::with_capacity(512));
    // Lowercase hex digits are ASCII.
    String::from_utf8_lossy(&hex).into_owned()
}

/// The hashed fields of an audit record in their text forms: `at` as [`timestamp_text`],
/// `input` as canonical JSON ([`canonical_json`]), `outcome` as its wire name. These are the
/// forms the store writes, so a stored row is hashed straight from its columns.
pub(crate) struct StoredFields<'a> {
    /// Position in the chain.
    pub seq: u64,
    /// Record id.
    pub id: &'a str,
    /// Time, as [`timestamp_text`].
    pub at: &'a str,
    /// Agent.
    pub agent: &'a str,
    /// Run id.
    pub run_id: &'a str,
    /// Call id.
    pub call_id: &'a str,
    /// Action.
    pub action: &'a str,
    /// The input as canonical JSON text.
    pub input: &'a str,
    /// Deciding policy.
    pub policy: &'a str,
    /// Risk score.
    pub risk: f64,
    /// Outcome's wire name.
    pub outcome: &'a str,
    /// Latency in milliseconds.
    pub latency_ms: u64,
    /// Sandbox.
    pub sandbox: &'a str,
    /// Approval id.
    pub approval_id: &'a str,
    /// Rollback token.
    pub rollback_token: &'a str,
    /// Detail.
    pub detail: &'a str,
}

impl<'a> StoredFields<'a> {
    /// The fields of `r`, with `at` and `input` already in their text forms.
    fn of(r: &'a AuditRecord, at: &'a str, input: &'a str) -> StoredFields<'a> {
        let e = &r.entry;
        StoredFields {
            seq: r.seq,
            id: &r.id,
            at,
            agent: &e.agent,
            run_id: &e.run_id,
            call_id: &e.call_id,
            action: &e.action,
            input,
            policy: &e.policy,
            risk: e.risk,
            outcome: e.outcome.as_str(),
            latency_ms: e.latency_ms,
            sandbox: &e.sandbox,
            approval_id: &e.approval_id,
            rollback_token: &e.rollback_token,
            detail: &e.detail,
        }
    }

    /// The record's hash under `key` ([`StoredFields::keyed_hash`]) or, without a key, the
    /// unkeyed one ([`StoredFields::hash`]).
    pub fn hash_with(&self, key: Option<&AuditKey>, prev_hash: &str, buf: &mut String) -> [u8; 64] {
        match key {
            Some(key) => self.keyed_hash(key, prev_hash, buf),
            None => self.hash(prev_hash, buf),
        }
    }

    /// The record's keyed hash (see [`audit_hmac`]) as 64 lowercase hex digits.
    pub fn keyed_hash(&self, key: &AuditKey, prev_hash: &str, buf: &mut String) -> [u8; 64] {
        self.canonical(buf);
        let mut mac = key.keyed.clone();
        mac.update(prev_hash.as_bytes());
        mac.update(buf.as_bytes());
        let mut hex = [0u8; 64];
        let _ = hex::encode_to_slice(mac.finalize().into_bytes(), &mut hex);
        hex
    }

    /// The record's hash (see [`audit_hash`]) as 64 lowercase hex digits; `buf` is scratch
    /// space, reused between calls.
    pub fn hash(&self, prev_hash: &str, buf: &mut String) -> [u8; 64] {
        self.canonical(buf);
        let mut hasher = Sha256::new();
        hasher.update(prev_hash.as_bytes());
        hasher.update(buf.as_bytes());
        let mut hex = [0u8; 64];
        // 32 bytes always fit 64 hex digits.
        let _ = hex::encode_to_slice(hasher.finalize(), &mut hex);
        hex
    }

    /// Writes the canonical array of the fields into `buf` (cleared first).
    fn canonical(&self, buf: &mut String) {
        // The canonical array is written field by field straight into the buffer that is
        // hashed; the bytes are exactly those of `write_canonical_json` over the array of the fields.
        buf.clear();
        buf.push('[');
        write_canonical_json(&Value::from(self.seq), buf);
        for text in [self.id, self.at, self.agent, self.run_id, self.call_id, self.action] {
            buf.push(',');
            push_string(buf, text);
        }
        buf.push(',');
        buf.push_str(self.input);
        buf.push(',');
        push_string(buf, self.policy);
        buf.push(',');
        // serde_json makes a finite f64 its `Number` and any other `null`.
        write_canonical_json(&Value::from(self.risk), buf);
        buf.push(',');
        push_string(buf, self.outcome);
        buf.push(',');
        write_canonical_json(&Value::from(self.latency_ms), buf);
        for text in [self.sandbox, self.approval_id, self.rollback_token, self.detail] {
            buf.push(',');
            push_string(buf, text);
        }
        buf.push(']');
    }
}

/// `value` as canonical JSON: compact, object keys sorted by their UTF-8 bytes at every depth
/// (the form hashed for a record's `input`, and the form the store writes).
pub(crate) fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical_json(value, &mut out);
    out
}

/// Appends to `out` the compact JSON of `value` with object keys sorted by their bytes at every
/// depth, whatever map order serde_json uses: the canonical form that audit hashes and call
/// hashes are computed over. Strings are escaped as serde_json escapes them and numbers written
/// as its `Number` writes them, straight into `out`.
pub fn write_canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        // Writing into a `String` cannot fail.
        Value::Number(number) => {
            let _ = std::fmt::Write::write_fmt(out, format_args!("{number}"));
        }
        Value::String(text) => push_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            // serde_json's default map keeps its keys in this order already (a `BTreeMap` of
            // `String`s); one that keeps insertion order is sorted here.
            let sorted = map.keys().zip(map.keys().skip(1)).all(|(a, b)| a.as_bytes() <= b.as_bytes());
            let mut write = |i: usize, key: &str, item: &Value| {
                if i > 0 {
                    out.push(',');
                }
                push_string(out, key);
                out.push(':');
                write_canonical_json(item, out);
            };
            if sorted {
                map.iter().enumerate().for_each(|(i, (key, item))| write(i, key, item));
            } else {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                entries.into_iter().enumerate().for_each(|(i, (key, item))| write(i, key, item));
            }
            out.push('}');
        }
    }
}

/// Appends `text` to `out` as a JSON string, escaped as serde_json escapes it. Text without a
/// quote, a backslash or a control character, the common case, is copied as is: serde_json
/// escapes only those.
fn push_string(out: &mut String, text: &str) {
    if needs_escape(text) {
        // Writing into a `String` cannot fail; the escaping is serde_json's own.
        let _ = std::fmt::Write::write_fmt(out, format_args!("{}", Value::from(text)));
        return;
    }
    out.reserve(text.len() + 2);
    out.push('"');
    out.push_str(text);
    out.push('"');
}

/// Whether serde_json escapes anything in `text`: a quote, a backslash or a control character.
fn needs_escape(text: &str) -> bool {
    // Every byte is looked at (no early exit), which the compiler turns into wide compares.
    text.bytes().fold(false, |found, b| found | (b == b'"') | (b == b'\\') | (b < 0x20))
}

/// Checks a chain of unkeyed records ([`verify_chain_keyed`] without a key).
pub fn verify_chain(records: &[AuditRecord]) -> AuditVerification {
    verify_chain_keyed(records, None)
}

/// Checks a chain given in stored order (ascending `seq`); reports the first bad record.
///
/// A record's hash verifies under `key` ([`audit_hmac`]) or, as long as no record before it
/// did, under the unkeyed [`audit_hash`] (a chain written before keys); an unkeyed record after
/// a keyed one is `unkeyed after keyed` (forged by someone without the key).
///
/// For each record, in this order: its hash must recompute (else `reordered` when it would
/// verify under another `seq`, `removed (gap after seq N)` when it verifies under a later `seq`
/// and its predecessor is missing, otherwise `changed`); its `seq` must follow the previous one
/// (else `removed (gap after seq N)`, or `reordered` when the missing `seq` is further on); its `prev_hash` must be the previous record's hash (64
/// zeros for the first) — else `reordered` when it names another record of the chain, otherwise
/// `prev_hash mismatch`. Removing the newest records leaves a valid shorter chain; that needs an
/// external anchor (the last hash) to detect.
pub fn verify_chain_keyed(records: &[AuditRecord], key: Option<&AuditKey>) -> AuditVerification {
    let max_seq = records.iter().map(|r| r.seq).max().unwrap_or(0);
    let known_hash = |hash: &str| records.iter().any(|r| r.hash == hash);
    let keyed_ok = |r: &AuditRecord| key.is_some_and(|k| audit_hmac(k, &r.prev_hash, r) == r.hash);
    let mut keyed_seen = false;
    let mut prev_seq = 0u64;
    let mut prev_hash = GENESIS_HASH.to_string();
    for record in records {
        let broken = |problem: String| AuditVerification::Broken { seq: record.seq, id: record.id.clone(), problem };
        let gap = format!("removed (gap after seq {prev_seq})");
        let keyed = keyed_ok(record);
        let plain = !keyed && audit_hash(&record.prev_hash, record) == record.hash;
        if plain && keyed_seen {
            return broken("unkeyed after keyed".to_string());
        }
        if !keyed && !plain {
            let true_seq = (1..=max_seq.saturating_add(1)).find(|&s| {
                s != record.seq && {
                    let moved = AuditRecord { seq: s, ..record.clone() };
                    keyed_ok(&moved) || (!keyed_seen && audit_hash(&record.prev_hash, &moved) == record.hash)
                }
            });
            return broken(match true_seq {
                Some(s) if s > prev_seq + 1 && record.prev_hash != prev_hash && !known_hash(&record.prev_hash) => gap,
                Some(_) => "reordered".to_string(),
                None => "changed".to_string(),
            });
        }
        keyed_seen |= keyed;
        if record.seq != prev_seq + 1 {
            let missing_is_elsewhere = records.iter().any(|r| r.seq == prev_seq + 1);
            return broken(if record.seq > prev_seq + 1 && !missing_is_elsewhere {
                gap
            } else {
                "reordered".to_string()
            });
        }
        if record.prev_hash != prev_hash {
            let problem = if known_hash(&record.prev_hash) { "reordered" } else { "prev_hash mismatch" };
            return broken(problem.to_string());
        }
        prev_seq = record.seq;
        prev_hash = record.hash.clone();
    }
    AuditVerification::Valid { records: records.len() as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use steward_protocol::{AuditEntry, AuditOutcome};

    /// The documented canonical form, built the slow way: `write_canonical_json` over the JSON array
    /// of the fields. `audit_hash` must produce exactly these bytes.
    fn reference_hash(prev_hash: &str, r: &AuditRecord) -> String {
        let e = &r.entry;
        let fields = Value::Array(vec![
            Value::from(r.seq),
            Value::from(r.id.as_str()),
            Value::from(timestamp_text(&r.at)),
            Value::from(e.agent.as_str()),
            Value::from(e.run_id.as_str()),
            Value::from(e.call_id.as_str()),
            Value::from(e.action.as_str()),
            e.input.clone(),
            Value::from(e.policy.as_str()),
            serde_json::Number::from_f64(e.risk).map_or(Value::Null, Value::Number),
            Value::from(e.outcome.as_str()),
            Value::from(e.latency_ms),
            Value::from(e.sandbox.as_str()),
            Value::from(e.approval_id.as_str()),
            Value::from(e.rollback_token.as_str()),
            Value::from(e.detail.as_str()),
        ]);
        let mut canonical = String::new();
        write_canonical_json(&fields, &mut canonical);
        let mut hasher = Sha256::new();
        hasher.update(prev_hash.as_bytes());
        hasher.update(canonical.as_bytes());
        hex::encode(hasher.finalize())
    }

    #[test]
    fn strings_are_escaped_exactly_as_serde_json_does() {
        for text in ["", "plain", "é漢 ok", "quote \" in", "back\\slash", "line\nbreak", "\u{1}\u{1f}\u{7f}", "tab\t"]
        {
            let mut fast = String::new();
            push_string(&mut fast, text);
            assert_eq!(fast, serde_json::to_string(text).unwrap(), "{text:?}");
        }
    }

    /// The canonical form is serde_json's compact form with object keys in byte order: every
    /// kind of value, keys and strings that need escaping, numbers of each kind.
    #[test]
    fn canonical_json_is_serde_jsons_compact_form_with_keys_in_byte_order() {
        let value = json!({
            "z": [1, -2, 2.5, 1e-7, u64::MAX, i64::MIN, null, true, false, [], {}],
            "a": {"y": "é漢", "b": "quote \" back\\ \u{1}\n", "B": 0.1},
            "é": "x", "Z": null, "aa": [{"k": {"j": [0.0]}}], "quote\"key": 1, "\u{7}": -0.0,
        });
        let mut canonical = String::new();
        write_canonical_json(&value, &mut canonical);
        assert_eq!(canonical, serde_json::to_string(&value).unwrap());
        let keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
        let mut in_byte_order = keys.clone();
        in_byte_order.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        assert_eq!(keys, in_byte_order, "serde_json's map iterates in byte order");
        assert!(canonical.starts_with(r#"{"\u0007":-0.0,"Z":null,"a":{"B":0.1,"b":"#), "{canonical}");
    }

    #[test]
    fn the_fast_hash_equals_the_documented_canonical_form() {
        let mut e = entry(7);
        e.detail = "quote \" backslash \\ newline \n unicode é漢 \u{1}".into();
        e.input = json!({"z": [1, 2.5, null], "a": {"y": "é", "b": true}});
        e.risk = 0.35;
        let r = AuditRecord {
            seq: 42,
            id: "aud_1".into(),
            at: chrono::Utc::now(),
            entry: e,
            prev_hash: GENESIS_HASH.into(),
            hash: String::new(),
        };
        assert_eq!(audit_hash(GENESIS_HASH, &r), reference_hash(GENESIS_HASH, &r));
        for risk in
            [f64::NAN, f64::INFINITY, -0.0, 0.0, 1.0, 1e-7, 0.1 + 0.2, 123456789.125, f64::MAX, f64::MIN_POSITIVE]
        {
            let mut other = r.clone();
            other.entry.risk = risk;
            assert_eq!(audit_hash("x", &other), reference_hash("x", &other), "{risk}");
        }
    }

    fn entry(n: u64) -> AuditEntry {
        AuditEntry {
            agent: "steward".into(),
            run_id: "run_a".into(),
            call_id: format!("call_{n}"),
            action: "read".into(),
            input: json!({"path": "src/lib.rs", "n": n}),
            policy: "default:low".into(),
            risk: 0.2,
            outcome: AuditOutcome::Completed,
            latency_ms: n,
            sandbox: String::new(),
            approval_id: String::new(),
            rollback_token: String::new(),
            detail: String::new(),
        }
    }

    fn chain(n: u64) -> Vec<AuditRecord> {
        let at = chrono::DateTime::parse_from_rfc3339("2026-01-02T03:04:05.123456789Z").unwrap().into();
        let mut prev = GENESIS_HASH.to_string();
        (1..=n)
            .map(|seq| {
                let mut r = AuditRecord {
                    seq,
                    id: format!("aud_{seq}"),
                    at,
                    entry: entry(seq),
                    prev_hash: prev.clone(),
                    hash: String::new(),
                };
                r.hash = audit_hash(&prev, &r);
                prev = r.hash.clone();
                r
            })
            .collect()
    }

    fn problem(v: AuditVerification) -> (u64, String) {
        match v {
            AuditVerification::Broken { seq, problem, .. } => (seq, problem),
            AuditVerification::Valid { records } => panic!("expected broken, got valid {records}"),
        }
    }

    #[test]
    fn timestamp_text_is_fixed_width_utc() {
        let at: Timestamp = chrono::DateTime::parse_from_rfc3339("2026-01-02T04:04:05+01:00").unwrap().into();
        assert_eq!(timestamp_text(&at), "2026-01-02T03:04:05.000000000Z");
    }

    #[test]
    fn hash_is_sha256_hex_and_ignores_key_order_and_hash_field() {
        let mut a = chain(1).remove(0);
        assert_eq!(a.hash.len(), 64);
        assert!(a.hash.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        let mut b = a.clone();
        b.entry.input = serde_json::from_str(r#"{"n":1,"path":"src/lib.rs"}"#).unwrap();
        b.hash = "ignored".into();
        assert_eq!(audit_hash(GENESIS_HASH, &b), a.hash);
        a.entry.detail = "x".into();
        assert_ne!(audit_hash(GENESIS_HASH, &a), b.hash);
        assert_ne!(audit_hash(&"1".repeat(64), &b), audit_hash(GENESIS_HASH, &b));
    }

    #[test]
    fn hash_of_a_known_record_is_stable() {
        // Pins the documented canonical form: changing it breaks every stored chain.
        let r = chain(1).remove(0);
        let canonical = r#"[1,"aud_1","2026-01-02T03:04:05.123456789Z","steward","run_a","call_1","read",{"n":1,"path":"src/lib.rs"},"default:low",0.2,"completed",1,"","","",""]"#;
        let mut hasher = Sha256::new();
        hasher.update(GENESIS_HASH.as_bytes());
        hasher.update(canonical.as_bytes());
        assert_eq!(r.hash, hex::encode(hasher.finalize()));
    }

    #[test]
    fn intact_and_empty_chains_are_valid() {
        assert_eq!(verify_chain(&chain(5)), AuditVerification::Valid { records: 5 });
        assert_eq!(verify_chain(&[]), AuditVerification::Valid { records: 0 });
    }

    #[test]
    fn changed_field_is_detected() {
        let mut c = chain(5);
        c[2].entry.outcome = AuditOutcome::Blocked;
        assert_eq!(problem(verify_chain(&c)), (3, "changed".into()));
        let mut c = chain(5);
        c[0].entry.risk = 0.1;
        assert_eq!(problem(verify_chain(&c)), (1, "changed".into()));
    }

    #[test]
    fn removed_record_is_detected() {
        let mut c = chain(5);
        c.remove(2);
        assert_eq!(problem(verify_chain(&c)), (4, "removed (gap after seq 2)".into()));
        let mut c = chain(5);
        c.remove(0);
        assert_eq!(problem(verify_chain(&c)), (2, "removed (gap after seq 0)".into()));
        // Removed and the later records renumbered to hide the gap.
        let mut c = chain(5);
        c.remove(2);
        for r in &mut c[2..] {
            r.seq -= 1;
        }
        assert_eq!(problem(verify_chain(&c)), (3, "removed (gap after seq 2)".into()));
    }

    #[test]
    fn reordered_records_are_detected() {
        // Seqs swapped, so the stored order changes.
        let mut c = chain(5);
        c.swap(1, 2);
        c[1].seq = 2;
        c[2].seq = 3;
        let v = verify_chain(&c);
        assert_eq!(problem(v.clone()), (2, "reordered".into()));
        assert!(matches!(v, AuditVerification::Broken { id, .. } if id == "aud_3"));
        // Rows swapped whole (seq kept with the content).
        let mut c = chain(5);
        c.swap(1, 2);
        assert_eq!(problem(verify_chain(&c)), (3, "reordered".into()));
    }

    #[test]
    fn forged_link_is_a_prev_hash_mismatch() {
        let mut c = chain(4);
        // Record 3 replaced by a self-consistent forgery: record 4 no longer links to it.
        c[2].entry.detail = "forged".into();
        c[2].hash = audit_hash(&c[2].prev_hash, &c[2]);
        assert_eq!(problem(verify_chain(&c)), (4, "prev_hash mismatch".into()));
    }
}
