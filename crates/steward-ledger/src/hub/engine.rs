//! The hub loop (SPEC H2–H4): discover candidates, journal the intent, claim, check the forge,
//! confirm the authority is still live, launch once, record evidence, report, acknowledge —
//! each step journaled before it is taken.
//!
//! A claim answer is taken as this attempt's authority when it is `issued` to this attempt, or
//! `spent` naming this attempt (an earlier, deferred claim of the same attempt took it); the
//! latter must also pass the hub's own checks of the journaled pins and the expiry. Right
//! before launching, the hub sends the same claim again (same attempt id, every pin): only an
//! answer naming this attempt's authority lets the job start; `denied` (the owner revoked the
//! request, or the approval expired, after the authority was issued) starts nothing.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use steward_store::{JournalRecord, JournalState, JournalStore, StoreError, new_id};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::crash::{CrashPoint, crash_at};
use super::forge::{self, PrView, Worktree};
use super::intake::{IntakeError, LedgerClient};
use super::launch::{Job, LaunchError, RunLauncher};
use super::poller::{Backoff, PollFailure, Poller};
use crate::wire::{
    AttemptOutcome, AuthorityOutcome, Candidate, Check, CheckOutcome, ClaimRequest, Evidence, ResultReport, WorkScope,
};

/// Reason codes the hub copies from a claim answer; anything else is recorded as `other`.
const CLAIM_REASONS: &[&str] = &[
    "revoked",
    "expired",
    "stale_revision",
    "stale_epoch",
    "head_mismatch",
    "not_approved",
    "already_claimed",
    "unknown_approval",
];

/// Longest request text handed to a job, in characters (the ledger accepts at most 4,000).
pub const MAX_REQUEST_TEXT_CHARS: usize = 4_000;

/// Longest summary put in the evidence, in characters (the rest is cut).
pub const MAX_SUMMARY_CHARS: usize = 16_000;

/// What the hub is configured with.
#[derive(Debug, Clone)]
pub struct HubSettings {
    /// This hub's stable id (`hub:<host>` by default).
    pub hub_id: String,
    /// Repository name (as the ledger names it) → local git repository.
    pub repos: BTreeMap<String, PathBuf>,
    /// Wait between complete listings.
    pub poll_interval: Duration,
    /// First backoff delay after a failed listing.
    pub backoff_base: Duration,
    /// Longest backoff delay (a ledger's `Retry-After` may ask for more, up to an hour).
    pub backoff_max: Duration,
    /// Candidates per page (1 ..= 100).
    pub page_limit: u32,
    /// Where the last failed listing is recorded (see [`PollFailure`]); `None`: nowhere.
    pub status_file: Option<PathBuf>,
}

/// Errors that stop the hub: its journal cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// The journal failed; nothing further is attempted.
    #[error("journal: {0}")]
    Journal(#[from] StoreError),
}

/// How one candidate was handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// Already in the journal (in `state`): not attempted again.
    AlreadyJournaled(JournalState),
    /// Not for this hub (its repository is not configured) or not valid (expired, bad pins):
    /// nothing was journaled.
    Ignored(&'static str),
    /// The claim was refused before processing (overload, no connection): the `intent` row
    /// stays and the same attempt id claims again on a later pass.
    Deferred,
    /// The claim was denied or the authority spent: nothing ran (reason code).
    Denied(String),
    /// Held for a human (reason code): `claim_unknown`, `head_moved`, `journal_conflict` …
    Held(String),
    /// The attempt reached `finished` with this outcome; `acknowledged` tells whether the
    /// ledger took the report.
    Finished {
        /// How it ended.
        outcome: AttemptOutcome,
        /// The ledger acknowledged the report (the row is `acknowledged`).
        acknowledged: bool,
    },
}

/// What a restart did (SPEC H3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovery {
    /// `finished` rows whose report was sent again and acknowledged.
    pub acknowledged: Vec<String>,
    /// Rows found in flight and now `held`.
    pub held: Vec<String>,
}

/// One pass over the candidates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pass {
    /// Candidates seen.
    pub seen: usize,
    /// `false` when the listing stopped before its last page (see [`super::poller::Listing`]).
    pub complete: bool,
    /// The listing's failure code, if any.
    pub failure: Option<&'static str>,
    /// The failure's `Retry-After`, if any.
    pub retry_after: Option<Duration>,
    /// Each candidate attempted or skipped: approval id → what happened.
    pub handled: Vec<(String, Handled)>,
}

/// The hub: ledger client, journal and launcher.
pub struct Hub {
    settings: HubSettings,
    client: LedgerClient,
    poller: Poller,
    journal: Arc<dyn JournalStore>,
    launcher: Arc<RunLauncher>,
    crash: Option<CrashPoint>,
}

impl Hub {
    /// A hub. `crash` is the test hook of [`super::crash`] (`None` in normal use).
    pub fn new(
        settings: HubSettings,
        client: LedgerClient,
        journal: Arc<dyn JournalStore>,
        launcher: Arc<RunLauncher>,
        crash: Option<CrashPoint>,
    ) -> Hub {
        let poller = Poller::new(client.clone(), settings.page_limit);
        Hub { settings, client, poller, journal, launcher, crash }
    }

    /// The current time by the runtime's clock.
    fn now(&self) -> steward_protocol::Timestamp {
        self.launcher.runtime.clock.now()
    }

    /// The executor named in evidence: `<hub id> steward/<version>`.
    pub fn executor(&self) -> String {
        format!("{} steward/{}", self.settings.hub_id, env!("CARGO_PKG_VERSION"))
    }

    /// At start (SPEC H3): `finished` rows of this hub send their (idempotent) report again
    /// and become `acknowledged` when the ledger takes it; every other row left in `intent`,
    /// `claimed`, `launching`, `started` or `finished` becomes `held`. Nothing is re-claimed
    /// or re-launched.
    pub async fn recover(&self) -> Result<Recovery, HubError> {
        let mut recovery = Recovery::default();
        for row in self.journal.journal_list(&[JournalState::Finished]).await? {
            if row.hub_id == self.settings.hub_id && self.send_report(&row).await?.is_some() {
                recovery.acknowledged.push(row.attempt_id.clone());
            }
        }
        recovery.held = self.journal.journal_hold(&self.settings.hub_id, &JournalState::IN_FLIGHT, self.now()).await?;
        Ok(recovery)
    }

    /// One complete pass: retries unacknowledged reports, lists every page of candidates and
    /// handles each in order. Stops claiming as soon as `claiming` is cancelled; an attempt
    /// already claimed runs to its end first.
    pub async fn pass(&self, claiming: &CancellationToken) -> Result<Pass, HubError> {
        for row in self.journal.journal_list(&[JournalState::Finished]).await? {
            if row.hub_id == self.settings.hub_id {
                self.send_report(&row).await?;
            }
        }
        let mut pass = Pass::default();
        let listing = match self.poller.poll().await {
            Ok(listing) => listing,
            Err(_) => {
                pass.failure = Some("busy");
                return Ok(pass);
            }
        };
        pass.seen = listing.items.len();
        pass.complete = listing.complete();
        pass.failure = listing.incomplete.as_ref().map(IntakeError::code);
        pass.retry_after = listing.incomplete.as_ref().and_then(IntakeError::retry_after);
        for candidate in &listing.items {
            if claiming.is_cancelled() {
                break;
            }
            let handled = self.handle(candidate).await?;
            pass.handled.push((candidate.approval.id.clone(), handled));
        }
        Ok(pass)
    }

    /// Passes until `claiming` is cancelled: `poll_interval` between complete passes, backoff
    /// with jitter after a failed listing (at least the ledger's `Retry-After`). `on_handled`
    /// hears of every candidate handled (approval id, what happened), `on_poll_failure` of
    /// every failed listing (after it is logged and recorded, see [`Hub::note_poll`]).
    pub async fn run(
        &self,
        claiming: CancellationToken,
        on_handled: &(dyn Fn(&str, &Handled) + Send + Sync),
        on_poll_failure: &(dyn Fn(&PollFailure) + Send + Sync),
    ) -> Result<(), HubError> {
        let mut backoff = Backoff::new(self.settings.backoff_base, self.settings.backoff_max);
        while !claiming.is_cancelled() {
            let pass = self.pass(&claiming).await?;
            for (approval_id, handled) in &pass.handled {
                on_handled(approval_id, handled);
            }
            let wait = if pass.complete {
                backoff.reset();
                self.note_poll(None);
                self.settings.poll_interval
            } else {
                let delay = backoff.next_delay(pass.retry_after);
                let next = chrono::Duration::from_std(delay).ok().map(|d| self.now() + d);
                let failure = self.poll_failure(&pass, backoff.failures(), next);
                self.note_poll(Some(&failure));
                on_poll_failure(&failure);
                delay
            };
            tokio::select! {
                _ = claiming.cancelled() => break,
                _ = tokio::time::sleep(wait) => {}
            }
        }
        Ok(())
    }

    /// The record of the failed listing of `pass`, the `failures`-th in a row, with the next
    /// attempt at `next` (`None`: no further attempt).
    pub fn poll_failure(&self, pass: &Pass, failures: u32, next: Option<chrono::DateTime<Utc>>) -> PollFailure {
        PollFailure {
            class: pass.failure.unwrap_or("incomplete").to_string(),
            failures,
            at: self.now(),
            next_attempt_at: next,
        }
    }

    /// Logs a failed listing (class, failures in a row, next attempt) and records it in
    /// [`HubSettings::status_file`]; `None` (a complete listing) clears the record. A status
    /// file that cannot be written is logged, never fatal.
    pub fn note_poll(&self, failure: Option<&PollFailure>) {
        if let Some(f) = failure {
            let next = f.next_attempt_at.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
            tracing::warn!(
                class = f.class.as_str(),
                failures = f.failures,
                next_attempt_at = next.as_deref().unwrap_or("none"),
                "listing the ledger's candidates failed; backing off"
            );
        }
        if let Some(path) = &self.settings.status_file
            && let Err(e) = PollFailure::record(path, failure)
        {
            tracing::warn!(path = %path.display(), error = %e, "cannot record the hub's poll status");
        }
    }

    /// Handles one candidate from intent to acknowledgement.
    pub async fn handle(&self, candidate: &Candidate) -> Result<Handled, HubError> {
        let approval = &candidate.approval;
        let mut row = match self.journal.journal_by_approval(&approval.id).await? {
            Some(row) if row.state == JournalState::Intent && row.note.as_deref() == Some("claim_deferred") => {
                if row.hub_id != self.settings.hub_id {
                    return Ok(Handled::AlreadyJournaled(row.state));
                }
                row
            }
            Some(row) => return Ok(Handled::AlreadyJournaled(row.state)),
            None => {
                let Some(_) = self.settings.repos.get(&approval.repository) else {
                    return Ok(Handled::Ignored("repository_not_configured"));
                };
                if !forge::is_sha(&approval.head_sha) || approval.pr_number == 0 {
                    return Ok(Handled::Ignored("invalid_pins"));
                }
                if approval.expires_at <= self.now() {
                    return Ok(Handled::Ignored("expired"));
                }
                let now = self.now();
                let row = JournalRecord {
                    attempt_id: new_id("att_"),
                    hub_id: self.settings.hub_id.clone(),
                    approval_id: approval.id.clone(),
                    request_id: approval.request_id.clone(),
                    revision: approval.revision,
                    epoch: approval.epoch,
                    repository: approval.repository.clone(),
                    pr_number: approval.pr_number,
                    head_sha: approval.head_sha.clone(),
                    scope: match approval.scope {
                        WorkScope::Read => "read".to_string(),
                    },
                    expires_at: approval.expires_at,
                    state: JournalState::Intent,
                    held_from: None,
                    authority: None,
                    authority_id: None,
                    run_id: None,
                    outcome: None,
                    evidence: None,
                    note: None,
                    resolution: None,
                    created_at: now,
                    updated_at: now,
                };
                if !self.journal.journal_insert(&row).await? {
                    return Ok(Handled::AlreadyJournaled(JournalState::Intent));
                }
                crash_at(self.crash, CrashPoint::AfterIntent);
                row
            }
        };

        // Claim, with every pin repeated.
        crash_at(self.crash, CrashPoint::BeforeClaim);
        let claim = ClaimRequest {
            approval_id: row.approval_id.clone(),
            request_id: row.request_id.clone(),
            revision: row.revision,
            epoch: row.epoch,
            head_sha: row.head_sha.clone(),
            hub_id: self.settings.hub_id.clone(),
            attempt_id: row.attempt_id.clone(),
        };
        let answer = self.client.claim(&claim).await;
        let (outcome, authority_id, reason) = match &answer {
            Ok(resp) => {
                let ours = resp.attempt_id.as_deref().is_none_or(|a| a == row.attempt_id);
                let reason = resp
                    .reason
                    .as_deref()
                    .map(|r| if CLAIM_REASONS.contains(&r) { r.to_string() } else { "other".to_string() });
                match resp.outcome {
                    AuthorityOutcome::Issued if ours && resp.authority_id.is_some() => {
                        (AuthorityOutcome::Issued, resp.authority_id.clone(), reason)
                    }
                    // Our own earlier (deferred) claim already took the authority: taken as ours only
                    // when the journaled pins still hold and the approval has not expired.
                    AuthorityOutcome::Spent
                        if resp.attempt_id.as_deref() == Some(row.attempt_id.as_str())
                            && resp.authority_id.is_some() =>
                    {
                        match self.unusable(&row) {
                            None => (AuthorityOutcome::Issued, resp.authority_id.clone(), reason),
                            Some(why) => (AuthorityOutcome::Denied, None, Some(why.to_string())),
                        }
                    }
                    AuthorityOutcome::Spent => (AuthorityOutcome::Spent, None, reason),
                    AuthorityOutcome::Denied => (AuthorityOutcome::Denied, None, reason),
                    _ => (AuthorityOutcome::Unknown, None, Some("claim_unknown".to_string())),
                }
            }
            Err(e) if e.not_processed() => {
                let mut next = row.clone();
                next.note = Some("claim_deferred".into());
                next.updated_at = self.now();
                if !self.journal.journal_update(&next, JournalState::Intent).await? {
                    return Ok(Handled::Held("journal_conflict".into()));
                }
                tracing::warn!(attempt = %row.attempt_id, failure = e.code(), "claim not processed; deferred");
                return Ok(Handled::Deferred);
            }
            Err(e) => {
                tracing::warn!(attempt = %row.attempt_id, failure = e.code(), "claim outcome unknown; held");
                (AuthorityOutcome::Unknown, None, Some("claim_unknown".to_string()))
            }
        };
        crash_at(self.crash, CrashPoint::AfterClaim);
        let mut next = row.clone();
        next.authority = Some(authority_word(outcome).to_string());
        next.authority_id = authority_id;
        next.note = reason.clone();
        next.updated_at = self.now();
        match outcome {
            AuthorityOutcome::Issued => next.state = JournalState::Claimed,
            AuthorityOutcome::Spent | AuthorityOutcome::Denied => next.state = JournalState::Denied,
            AuthorityOutcome::Unknown => {
                next.state = JournalState::Held;
                next.held_from = Some(JournalState::Intent);
                next.note = Some("claim_unknown".into());
            }
        }
        if !self.journal.journal_update(&next, JournalState::Intent).await? {
            return Ok(Handled::Held("journal_conflict".into()));
        }
        row = next;
        match outcome {
            AuthorityOutcome::Issued => {}
            AuthorityOutcome::Spent | AuthorityOutcome::Denied => {
                return Ok(Handled::Denied(reason.unwrap_or_else(|| authority_word(outcome).to_string())));
            }
            AuthorityOutcome::Unknown => return Ok(Handled::Held("claim_unknown".into())),
        }

        self.execute(row, candidate).await
    }

    /// From `claimed`: check the forge, launch once, record and report.
    async fn execute(&self, row: JournalRecord, candidate: &Candidate) -> Result<Handled, HubError> {
        let repo = match self.settings.repos.get(&row.repository) {
            Some(repo) => repo.clone(),
            None => return self.hold(row, JournalState::Claimed, "repository_not_configured").await,
        };
        let mut evidence = Evidence {
            tested_sha: None,
            executor: self.executor(),
            environment: BTreeMap::from([
                ("os".to_string(), std::env::consts::OS.to_string()),
                ("repository".to_string(), row.repository.clone()),
                ("pr".to_string(), row.pr_number.to_string()),
                ("scope".to_string(), row.scope.clone()),
            ]),
            checks: Vec::new(),
            not_checked: Vec::new(),
            run_id: None,
            summary: None,
        };
        let (view, lookup) = forge::pr_head(&repo, row.pr_number).await;
        match view {
            PrView::NotVisible => {
                evidence.checks.push(Check { outcome: CheckOutcome::Failed, ..lookup.check() });
                evidence.not_checked = vec!["pr_content".into(), "build".into(), "tests".into()];
                return self.finish(row, JournalState::Claimed, AttemptOutcome::NotVisible, evidence).await;
            }
            PrView::Head(sha) if sha != row.head_sha => {
                // Never follow a moved head: hold for the owner and say so.
                let mut check = lookup.check();
                check.outcome = CheckOutcome::Failed;
                evidence.checks.push(check);
                evidence.environment.insert("observed_head".into(), sha);
                evidence.not_checked = vec!["pr_content".into(), "build".into(), "tests".into()];
                let mut next = row.clone();
                next.state = JournalState::Held;
                next.held_from = Some(JournalState::Claimed);
                next.note = Some("head_moved".into());
                next.outcome = Some(outcome_word(AttemptOutcome::HeadMoved).into());
                next.evidence = serde_json::to_string(&evidence).ok();
                next.updated_at = self.now();
                if !self.journal.journal_update(&next, JournalState::Claimed).await? {
                    return Ok(Handled::Held("journal_conflict".into()));
                }
                let report =
                    ResultReport { attempt_id: next.attempt_id.clone(), outcome: AttemptOutcome::HeadMoved, evidence };
                if let Some(authority) = &next.authority_id
                    && let Err(e) = self.client.report(authority, &report).await
                {
                    tracing::warn!(attempt = %next.attempt_id, failure = e.code(), "head_moved report not delivered");
                }
                return Ok(Handled::Held("head_moved".into()));
            }
            PrView::Head(_) => evidence.checks.push(lookup.check()),
        }

        let (worktree, added) = match Worktree::create(&repo, &row.head_sha).await {
            Ok(pair) => pair,
            Err(run) => {
                evidence.checks.push(run.check());
                evidence.not_checked = vec!["pr_content".into(), "build".into(), "tests".into()];
                return self.finish(row, JournalState::Claimed, AttemptOutcome::Failed, evidence).await;
            }
        };
        evidence.checks.push(added.check());
        let head = forge::git(worktree.path(), &["rev-parse", "HEAD"]).await;
        let mut head_check = head.check();
        if head.stdout.trim() != row.head_sha {
            head_check.outcome = CheckOutcome::Failed;
        } else {
            evidence.tested_sha = Some(row.head_sha.clone());
        }
        evidence.checks.push(head_check);
        if evidence.tested_sha.is_none() {
            evidence.not_checked = vec!["pr_content".into(), "build".into(), "tests".into()];
            return self.finish(row, JournalState::Claimed, AttemptOutcome::Failed, evidence).await;
        }

        // Nothing starts under an approval that expired meanwhile (the authority does not
        // outlive it): held for the owner, nothing ran.
        if row.expires_at <= self.now() {
            return self.hold(row, JournalState::Claimed, "expired_before_launch").await;
        }

        // The authority may have died since it was issued (the owner revoked the request, the
        // approval expired by the ledger's clock): the same claim, sent again, must still name
        // this attempt's authority. Anything else starts nothing.
        if let Some(handled) = self.confirm(&row).await? {
            return Ok(handled);
        }

        // Journal `launching` (with the run id chosen now) before anything starts.
        let run_id = new_id("run_");
        let mut launching = row.clone();
        launching.state = JournalState::Launching;
        launching.run_id = Some(run_id.clone());
        launching.updated_at = self.now();
        if !self.journal.journal_update(&launching, JournalState::Claimed).await? {
            return Ok(Handled::Held("journal_conflict".into()));
        }
        let job = Job {
            attempt_id: row.attempt_id.clone(),
            run_id: run_id.clone(),
            repository: row.repository.clone(),
            pr_number: row.pr_number,
            head_sha: row.head_sha.clone(),
            request_text: candidate.text.chars().take(MAX_REQUEST_TEXT_CHARS).collect(),
            pr_description: forge::description(&repo, &row.head_sha).await,
            workspace: worktree.path().to_path_buf(),
        };
        let (started_tx, started_rx) = oneshot::channel();
        let launcher = Arc::clone(&self.launcher);
        let task = tokio::spawn(async move { launcher.launch(job, started_tx).await });
        let mut state = JournalState::Launching;
        let mut current = launching;
        if started_rx.await.is_ok() {
            let mut started = current.clone();
            started.state = JournalState::Started;
            started.updated_at = self.now();
            if !self.journal.journal_update(&started, JournalState::Launching).await? {
                return Ok(Handled::Held("journal_conflict".into()));
            }
            crash_at(self.crash, CrashPoint::AfterLaunch);
            state = JournalState::Started;
            current = started;
        }
        let ended = task.await.unwrap_or(Err(LaunchError::Panicked));
        drop(worktree);
        evidence.run_id = Some(run_id.clone());
        // The job itself as a check: passed only when its run completed; its log is the run.
        evidence.checks.push(Check {
            command: vec!["steward".into(), "show".into(), run_id.clone()],
            outcome: match &ended {
                Ok(end) if end.status == steward_store::RunStatus::Completed => CheckOutcome::Passed,
                Ok(_) => CheckOutcome::Failed,
                Err(_) => CheckOutcome::Error,
            },
            exit_code: None,
            log_ref: Some(format!("run:{run_id}")),
        });
        evidence.not_checked =
            vec!["build".into(), "tests".into(), "commit_signatures".into(), "summary_accuracy".into()];
        let outcome = match ended {
            Ok(end) => {
                evidence.environment.extend(end.environment);
                evidence.summary = end.summary.map(|t| t.chars().take(MAX_SUMMARY_CHARS).collect());
                if end.status == steward_store::RunStatus::Completed {
                    AttemptOutcome::Completed
                } else {
                    AttemptOutcome::Failed
                }
            }
            Err(_) => AttemptOutcome::Failed,
        };
        self.finish(current, state, outcome, evidence).await
    }

    /// Journals `finished` with outcome and evidence, reports, and journals `acknowledged`.
    async fn finish(
        &self,
        row: JournalRecord,
        from: JournalState,
        outcome: AttemptOutcome,
        evidence: Evidence,
    ) -> Result<Handled, HubError> {
        let mut next = row;
        next.state = JournalState::Finished;
        next.outcome = Some(outcome_word(outcome).into());
        next.evidence = serde_json::to_string(&evidence).ok();
        next.updated_at = self.now();
        if !self.journal.journal_update(&next, from).await? {
            return Ok(Handled::Held("journal_conflict".into()));
        }
        let acknowledged = self.send_report(&next).await?.is_some();
        Ok(Handled::Finished { outcome, acknowledged })
    }

    /// Sends the report of a `finished` row; on acknowledgement journals `acknowledged` and
    /// returns the new row. A failed delivery leaves the row `finished` (reports are
    /// idempotent and may be sent again).
    async fn send_report(&self, row: &JournalRecord) -> Result<Option<JournalRecord>, HubError> {
        let (Some(authority), Some(outcome), Some(evidence)) = (&row.authority_id, &row.outcome, &row.evidence) else {
            return Ok(None);
        };
        let (Some(outcome), Ok(evidence)) = (parse_outcome(outcome), serde_json::from_str::<Evidence>(evidence)) else {
            return Ok(None);
        };
        let report = ResultReport { attempt_id: row.attempt_id.clone(), outcome, evidence };
        match self.client.report(authority, &report).await {
            Ok(ack) if ack.attempt_id == row.attempt_id => {
                crash_at(self.crash, CrashPoint::AfterResult);
                let mut next = row.clone();
                next.state = JournalState::Acknowledged;
                next.updated_at = self.now();
                if !ack.first && ack.outcome != outcome {
                    next.note = Some("ledger_kept_other_outcome".into());
                }
                Ok(self.journal.journal_update(&next, JournalState::Finished).await?.then_some(next))
            }
            Ok(_) => {
                tracing::warn!(attempt = %row.attempt_id, "the ledger acknowledged another attempt; report kept");
                Ok(None)
            }
            Err(e) => {
                tracing::warn!(attempt = %row.attempt_id, failure = e.code(), "result report not delivered yet");
                Ok(None)
            }
        }
    }

    /// Why a journaled row must not be acted on by this hub's own checks (the same ones a new
    /// candidate passes): `repository_not_configured`, `invalid_pins` or `expired`; `None`
    /// when it may.
    fn unusable(&self, row: &JournalRecord) -> Option<&'static str> {
        if !self.settings.repos.contains_key(&row.repository) {
            return Some("repository_not_configured");
        }
        if !forge::is_sha(&row.head_sha) || row.pr_number == 0 {
            return Some("invalid_pins");
        }
        if row.expires_at <= self.now() {
            return Some("expired");
        }
        None
    }

    /// Sends the claim of a `claimed` row again (same attempt id, every pin) right before
    /// launching. `None` when the ledger still names this attempt's authority; otherwise what
    /// became of the row: `denied` with the ledger's reason (journaled `denied`, nothing runs),
    /// or held `authority_unconfirmed` when there is no usable answer.
    async fn confirm(&self, row: &JournalRecord) -> Result<Option<Handled>, HubError> {
        let claim = ClaimRequest {
            approval_id: row.approval_id.clone(),
            request_id: row.request_id.clone(),
            revision: row.revision,
            epoch: row.epoch,
            head_sha: row.head_sha.clone(),
            hub_id: self.settings.hub_id.clone(),
            attempt_id: row.attempt_id.clone(),
        };
        let reason = match self.client.claim(&claim).await {
            Ok(resp)
                if matches!(resp.outcome, AuthorityOutcome::Spent | AuthorityOutcome::Issued)
                    && resp.attempt_id.as_deref() == Some(row.attempt_id.as_str())
                    && resp.authority_id.is_some()
                    && resp.authority_id == row.authority_id =>
            {
                return Ok(None);
            }
            Ok(resp) if resp.outcome == AuthorityOutcome::Denied => resp
                .reason
                .as_deref()
                .map(|r| if CLAIM_REASONS.contains(&r) { r.to_string() } else { "other".to_string() })
                .unwrap_or_else(|| "denied".to_string()),
            Ok(_) => return self.hold(row.clone(), JournalState::Claimed, "authority_unconfirmed").await.map(Some),
            Err(e) => {
                tracing::warn!(attempt = %row.attempt_id, failure = e.code(), "authority not confirmed; held");
                return self.hold(row.clone(), JournalState::Claimed, "authority_unconfirmed").await.map(Some);
            }
        };
        let mut next = row.clone();
        next.state = JournalState::Denied;
        next.note = Some(reason.clone());
        next.updated_at = self.now();
        if !self.journal.journal_update(&next, JournalState::Claimed).await? {
            return Ok(Some(Handled::Held("journal_conflict".into())));
        }
        Ok(Some(Handled::Denied(reason)))
    }

    async fn hold(&self, row: JournalRecord, from: JournalState, reason: &str) -> Result<Handled, HubError> {
        let mut next = row;
        next.state = JournalState::Held;
        next.held_from = Some(from);
        next.note = Some(reason.to_string());
        next.updated_at = self.now();
        self.journal.journal_update(&next, from).await?;
        Ok(Handled::Held(reason.to_string()))
    }
}

/// `issued`, `spent`, `denied`, `unknown`.
pub fn authority_word(outcome: AuthorityOutcome) -> &'static str {
    match outcome {
        AuthorityOutcome::Issued => "issued",
        AuthorityOutcome::Spent => "spent",
        AuthorityOutcome::Denied => "denied",
        AuthorityOutcome::Unknown => "unknown",
    }
}

/// `completed`, `failed`, `not_visible`, `head_moved`.
pub fn outcome_word(outcome: AttemptOutcome) -> &'static str {
    match outcome {
        AttemptOutcome::Completed => "completed",
        AttemptOutcome::Failed => "failed",
        AttemptOutcome::NotVisible => "not_visible",
        AttemptOutcome::HeadMoved => "head_moved",
    }
}

fn parse_outcome(word: &str) -> Option<AttemptOutcome> {
    [AttemptOutcome::Completed, AttemptOutcome::Failed, AttemptOutcome::NotVisible, AttemptOutcome::HeadMoved]
        .into_iter()
        .find(|o| outcome_word(*o) == word)
}
