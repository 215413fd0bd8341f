//! The hub's journal (SPEC H2, H3): one durable row per attempt, written BEFORE each step the
//! hub takes, so that a crash at any point leaves a row saying how far the attempt got.
//!
//! States, in order: `intent` (the attempt id is chosen, nothing sent yet) → `claimed` (the
//! claim's answer is recorded) → `launching` (the job is about to start) → `started` (the run
//! id is known) → `finished` (outcome and evidence recorded) → `acknowledged` (the ledger took
//! the result report). Side exits: `denied` (the authority was refused or spent: nothing ran),
//! `held` (waiting for a human: an unknown claim outcome, a moved head, or a row found in
//! flight at restart) and `resolved` (a human decided a held row). A row is never moved back to
//! an earlier state and nothing is ever re-run from the journal automatically.
//!
//! Rows are keyed by attempt id (`att_` + 16 hex); the approval id is unique, so one approval
//! is attempted at most once per journal, also by several hubs sharing one database.

use async_trait::async_trait;
use steward_protocol::Timestamp;

use crate::StoreError;

/// Where an attempt stands in the hub's journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JournalState {
    /// The attempt id was chosen and the pins recorded; the claim has not been sent.
    Intent,
    /// The claim's outcome is recorded (`issued`; other outcomes go to `denied` or `held`).
    Claimed,
    /// The job is about to be launched.
    Launching,
    /// The job runs as Steward run `run_id`.
    Started,
    /// The job ended; outcome and evidence recorded, the result report not acknowledged yet.
    Finished,
    /// The ledger acknowledged the result report.
    Acknowledged,
    /// The claim was refused (`denied`) or the authority was already spent; nothing ran.
    Denied,
    /// Waiting for a human (`steward ledger resolve`); never resumed automatically.
    Held,
    /// A human decided a held row (`completed`, `failed` or `retry`).
    Resolved,
}

impl JournalState {
    /// Every state, in the order above.
    pub const ALL: [JournalState; 9] = [
        JournalState::Intent,
        JournalState::Claimed,
        JournalState::Launching,
        JournalState::Started,
        JournalState::Finished,
        JournalState::Acknowledged,
        JournalState::Denied,
        JournalState::Held,
        JournalState::Resolved,
    ];

    /// The states a crash can leave an attempt in: at restart they become `held`.
    pub const IN_FLIGHT: [JournalState; 5] = [
        JournalState::Intent,
        JournalState::Claimed,
        JournalState::Launching,
        JournalState::Started,
        JournalState::Finished,
    ];

    /// The stored name: `intent`, `claimed`, `launching`, `started`, `finished`,
    /// `acknowledged`, `denied`, `held`, `resolved`.
    pub fn as_str(self) -> &'static str {
        match self {
            JournalState::Intent => "intent",
            JournalState::Claimed => "claimed",
            JournalState::Launching => "launching",
            JournalState::Started => "started",
            JournalState::Finished => "finished",
            JournalState::Acknowledged => "acknowledged",
            JournalState::Denied => "denied",
            JournalState::Held => "held",
            JournalState::Resolved => "resolved",
        }
    }

    /// The state named `name` (as [`JournalState::as_str`] writes it), if any.
    pub fn parse(name: &str) -> Option<JournalState> {
        JournalState::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl std::fmt::Display for JournalState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One attempt in the hub's journal.
///
/// The store keeps the ledger's words as text (`authority`: `issued`, `spent`, `denied`,
/// `unknown`; `outcome`: `completed`, `failed`, `not_visible`, `head_moved`; `evidence`: the
/// evidence JSON); the hub that writes them checks their shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalRecord {
    /// `att_` + 16 hex; the primary key.
    pub attempt_id: String,
    /// The hub that made the attempt (`hub:<host>` or as configured).
    pub hub_id: String,
    /// The approval attempted (unique in the journal).
    pub approval_id: String,
    /// The approved request.
    pub request_id: String,
    /// Pinned request revision.
    pub revision: u32,
    /// Pinned authorization epoch.
    pub epoch: u64,
    /// Pinned repository name.
    pub repository: String,
    /// Pinned pull request number.
    pub pr_number: u64,
    /// Pinned head commit (40 hex).
    pub head_sha: String,
    /// Pinned scope (`read`).
    pub scope: String,
    /// When the approval expires.
    pub expires_at: Timestamp,
    /// Where the attempt stands.
    pub state: JournalState,
    /// For `held` rows: the state the row was in when it was held.
    pub held_from: Option<JournalState>,
    /// The claim's outcome as far as the hub knows (`issued`, `spent`, `denied`, `unknown`).
    pub authority: Option<String>,
    /// The authority id the ledger issued (`ath_…`).
    pub authority_id: Option<String>,
    /// The Steward run that executed the job.
    pub run_id: Option<String>,
    /// The attempt's outcome (`completed`, `failed`, `not_visible`, `head_moved`).
    pub outcome: Option<String>,
    /// The evidence as JSON text.
    pub evidence: Option<String>,
    /// A fixed reason code for `denied` and `held` rows (`claim_unknown`, `head_moved`,
    /// `restart`, a ledger reason such as `revoked` …); never text from a server or a PR.
    pub note: Option<String>,
    /// A human's decision on a held row (`completed`, `failed`, `retry`).
    pub resolution: Option<String>,
    /// When the row was written first.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// Durable storage of the hub's journal. Every write returns once it is committed (durable with
/// the store's configured durability), so a step that follows it may assume it survives a crash.
/// Implemented by [`crate::SqliteStore`] and [`crate::PgStore`] (table `hub_journal`,
/// migration 0008). Errors: [`StoreError`] of class `storage`.
#[async_trait]
pub trait JournalStore: Send + Sync {
    /// Writes a new row unless one exists for the same attempt id or approval id: `true` once
    /// it is committed, `false` (nothing written) when the approval is already in the journal.
    async fn journal_insert(&self, row: &JournalRecord) -> Result<bool, StoreError>;

    /// Replaces every mutable field of the row `row.attempt_id` (state, held_from, authority,
    /// authority_id, run_id, outcome, evidence, note, resolution, updated_at) only if its stored
    /// state is `expected`: `true` once committed, `false` when the row is missing or in another
    /// state (someone else moved it; the caller must not go on).
    async fn journal_update(&self, row: &JournalRecord, expected: JournalState) -> Result<bool, StoreError>;

    /// The row of this attempt.
    async fn journal_get(&self, attempt_id: &str) -> Result<Option<JournalRecord>, StoreError>;

    /// The row of this approval, if it was ever attempted.
    async fn journal_by_approval(&self, approval_id: &str) -> Result<Option<JournalRecord>, StoreError>;

    /// Rows in any of `states` (all rows when empty), oldest (`created_at`, then attempt id)
    /// first.
    async fn journal_list(&self, states: &[JournalState]) -> Result<Vec<JournalRecord>, StoreError>;

    /// At hub start: every row of `hub_id` in one of `states` becomes `held` (its state kept in
    /// `held_from`, `note` = `restart`, `updated_at` = `at`), in one statement. Returns the
    /// attempt ids held, oldest first.
    async fn journal_hold(
        &self,
        hub_id: &str,
        states: &[JournalState],
        at: Timestamp,
    ) -> Result<Vec<String>, StoreError>;
}

/// Columns of `hub_journal` in the order every `SELECT` of the backends reads them.
pub(crate) const JOURNAL_COLUMNS: &str = "attempt_id, hub_id, approval_id, request_id, revision, epoch, repository, \
     pr_number, head_sha, scope, expires_at, state, held_from, authority, authority_id, run_id, outcome, evidence, \
     note, resolution, created_at, updated_at";

/// The text form of a state list for `IN (…)`: `'intent','claimed'` (the names are fixed
/// identifiers, never user input).
pub(crate) fn state_list(states: &[JournalState]) -> String {
    states.iter().map(|s| format!("'{}'", s.as_str())).collect::<Vec<_>>().join(",")
}

/// Builds a record from the stored text and integer columns; `Corrupt` names what is wrong.
pub(crate) struct RawJournalRow {
    pub attempt_id: String,
    pub hub_id: String,
    pub approval_id: String,
    pub request_id: String,
    pub revision: i64,
    pub epoch: i64,
    pub repository: String,
    pub pr_number: i64,
    pub head_sha: String,
    pub scope: String,
    pub expires_at: String,
    pub state: String,
    pub held_from: Option<String>,
    pub authority: Option<String>,
    pub authority_id: Option<String>,
    pub run_id: Option<String>,
    pub outcome: Option<String>,
    pub evidence: Option<String>,
    pub note: Option<String>,
    pub resolution: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl RawJournalRow {
    pub(crate) fn into_record(self, path: &str) -> Result<JournalRecord, StoreError> {
        let corrupt = |what: String| StoreError::Corrupt { path: path.to_string(), what };
        let time = |text: &str, column: &str| {
            chrono::DateTime::parse_from_rfc3339(text)
                .map(|t| t.with_timezone(&chrono::Utc))
                .map_err(|_| corrupt(format!("hub_journal.{column} of {} is not RFC 3339", self.attempt_id)))
        };
        let state = |text: &str, column: &str| {
            JournalState::parse(text)
                .ok_or_else(|| corrupt(format!("hub_journal.{column} of {} is not a state", self.attempt_id)))
        };
        let number = |value: i64, column: &str| {
            u64::try_from(value)
                .map_err(|_| corrupt(format!("hub_journal.{column} of {} is negative", self.attempt_id)))
        };
        let revision = u32::try_from(self.revision)
            .map_err(|_| corrupt(format!("hub_journal.revision of {} is out of range", self.attempt_id)))?;
        Ok(JournalRecord {
            revision,
            epoch: number(self.epoch, "epoch")?,
            pr_number: number(self.pr_number, "pr_number")?,
            expires_at: time(&self.expires_at, "expires_at")?,
            state: state(&self.state, "state")?,
            held_from: self.held_from.as_deref().map(|s| state(s, "held_from")).transpose()?,
            created_at: time(&self.created_at, "created_at")?,
            updated_at: time(&self.updated_at, "updated_at")?,
            attempt_id: self.attempt_id,
            hub_id: self.hub_id,
            approval_id: self.approval_id,
            request_id: self.request_id,
            repository: self.repository,
            head_sha: self.head_sha,
            scope: self.scope,
            authority: self.authority,
            authority_id: self.authority_id,
            run_id: self.run_id,
            outcome: self.outcome,
            evidence: self.evidence,
            note: self.note,
            resolution: self.resolution,
        })
    }
}

/// `value` as a database integer; [`StoreError::Invalid`] above `i64::MAX`.
pub(crate) fn to_i64(path: &str, value: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(value)
        .map_err(|_| StoreError::Invalid { path: path.to_string(), what: format!("{what} is above i64::MAX") })
}
