//! The one queue of pending decisions (SPEC C4, M1): every approval request and every MCP
//! server's request for input that a run of this process waits on, and the decisions on them.
//!
//! The orchestrator opens an entry when it asks the run's owner ([`DecisionQueue::open_approval`],
//! [`DecisionQueue::open_elicitation`]) and waits on it ([`Waiting::decided`]); every front end
//! that can answer submits to it: the run's own [`Approver`](crate::approval::Approver) (the
//! terminal prompt, an eval case, a scripted owner — its answer is submitted for it), the web
//! UI of `steward serve` ([`DecisionQueue::decide`], [`DecisionQueue::answer_elicitation`]) and,
//! for a decision recorded in the store by another process (the web UI of another node, a
//! second `steward` process), [`DecisionQueue::follow_store`], woken by the store's change
//! notices where it sends them (PostgreSQL `LISTEN/NOTIFY`) and polling the store otherwise,
//! only while something waits here.
//!
//! The first valid decision wins: a submission is refused ([`SubmitError`]) when nothing with
//! that id waits here, when it comes from someone other than the run's owner, when another
//! decision came first, or when the request has expired by the runtime's [`Clock`]. The waiter
//! wakes when the decision is submitted (a [`tokio::sync::watch`] channel), never by polling.
//! The queue only carries decisions: the orchestrator still checks the decider, the decision
//! token and the expiry, and records the decision in the store and the audit chain.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use steward_mcp::elicitation::AnswerError;
use steward_protocol::{ApprovalRequest, Timestamp};
use steward_store::{ApprovalDecisionRecord, Change, Store};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;

use crate::clock::Clock;
use crate::elicitation::{ElicitationPrompt, ElicitationReply};

mod remote;
pub use remote::{DecisionError, OwnerDecision, pending, record};

/// The hash of the call an approval request shows: lowercase hex SHA-256 of the compact JSON
/// array `["steward-call-v1", tool, arguments]`, the arguments (as the request holds them,
/// redacted) with object keys sorted at every depth. A front end that decides an approval
/// sends the hash of the call it showed; the run compares it with the hash of the call it is
/// about to run and refuses on a mismatch (the stored request was changed in between).
pub fn call_hash(request: &ApprovalRequest) -> String {
    use sha2::{Digest, Sha256};
    let mut text = String::from("[\"steward-call-v1\",");
    text.push_str(&serde_json::Value::from(request.tool.as_str()).to_string());
    text.push(',');
    steward_store::write_canonical_json(&request.arguments, &mut text);
    text.push(']');
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// How far an approval reaches (SPEC C4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApprovalScope {
    /// This call only.
    #[default]
    Once,
    /// Later calls of the same tool in this run are allowed too (a remembered grant).
    Run,
    /// Later calls of the same tool in this workspace, by the same owner, are allowed too.
    Workspace,
}

/// What an approver answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Approved by `decided_by`, presenting the decision token it was given.
    Approve {
        /// Decision token from [`Approver::ask`](crate::approval::Approver::ask).
        token: String,
        /// Owner id of whoever decided.
        decided_by: String,
        /// Once, or remembered for the run or the workspace.
        scope: ApprovalScope,
        /// [`call_hash`] of the request as the approver was shown
        /// it; the run refuses the approval when it is not the hash of the call it would run.
        call_hash: String,
    },
    /// Rejected by `decided_by`.
    Reject {
        /// Why, shown to the model.
        reason: String,
        /// Owner id of whoever decided.
        decided_by: String,
    },
    /// Nobody can answer (no terminal, no UI): fail closed with reason `no_approver`.
    NoApprover,
}

/// How often [`DecisionQueue::follow_store`] looks at the store when it also gets change
/// notices: only in case a notice was lost.
pub const NOTICED_POLL: Duration = Duration::from_secs(5);

/// Where a decision came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// A front end of this process: the run's approver, this server's web UI or API.
    Here,
    /// Recorded in the store by another process (the web UI of `steward serve` deciding a run
    /// that executes in a terminal or on another node).
    Store,
}

/// A decision taken from the queue: the answer and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided<A> {
    /// The answer ([`ApprovalAnswer`] or [`ElicitationReply`]).
    pub answer: A,
    /// Where it came from.
    pub via: Via,
}

/// A decision on an approval request as a front end gives it (the decision token is the one
/// the queue holds for the request).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Approve once, or remember it for the run or the workspace; with the
    /// [`call_hash`] of the call the approver was shown, or `None`
    /// for a front end of this process that showed the request as this queue holds it.
    Approve(ApprovalScope, Option<String>),
    /// Deny, with a reason shown to the model.
    Deny(String),
}

impl Verdict {
    /// The verdict of a decision recorded in the store: scope `run`, `workspace` or else
    /// `once`; a denial without a reason says "denied by the owner".
    pub fn of_record(record: &ApprovalDecisionRecord) -> Verdict {
        if !record.approve {
            let reason = if record.reason.is_empty() { "denied by the owner" } else { record.reason.as_str() };
            return Verdict::Deny(reason.to_string());
        }
        let scope = match record.scope.as_str() {
            "run" => ApprovalScope::Run,
            "workspace" => ApprovalScope::Workspace,
            _ => ApprovalScope::Once,
        };
        // A record without a hash (written before decisions carried one) matches no call.
        Verdict::Approve(scope, Some(record.call_hash.clone()))
    }
}

/// Why a submission was refused; nothing changed, and the request (if any) still waits for a
/// valid decision or its expiry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// Nothing with this id waits for a decision in this process (it was never asked here,
    /// it was decided and its waiter has moved on, it expired, or its run ended).
    #[error("`{0}` is not waiting for a decision here")]
    NotPending(String),
    /// Someone other than the run's owner tried to decide.
    #[error("not_owner: only the run's owner may decide `{0}`")]
    NotOwner(String),
    /// Another decision came first; the first valid decision wins.
    #[error("`{0}` has already been decided")]
    AlreadyDecided(String),
    /// The request's `expires_at` has passed (by the runtime's clock).
    #[error("`{0}` has expired; it can no longer be decided")]
    Expired(String),
    /// The values given do not fit the request for input (the message says why); it still
    /// waits.
    #[error("{0}")]
    Invalid(String),
}

/// One pending request: what was asked, whose it is, until when, and where its decision goes.
struct Entry<Q, A> {
    asked: Q,
    run_id: String,
    owner_id: String,
    expires_at: Timestamp,
    decided: watch::Sender<Option<Decided<A>>>,
}

/// An approval request with the decision token the orchestrator signed for it.
struct AskedApproval {
    request: ApprovalRequest,
    token: String,
}

type Book<Q, A> = Mutex<HashMap<String, Entry<Q, A>>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The queue of pending decisions of one process, owned by the [`Runtime`](crate::Runtime)
/// (`Runtime::decisions`) and shared by its runs and front ends.
pub struct DecisionQueue {
    clock: Arc<dyn Clock>,
    approvals: Book<AskedApproval, ApprovalAnswer>,
    elicitations: Book<ElicitationPrompt, ElicitationReply>,
    /// The number of approvals pending here, for [`DecisionQueue::follow_store`] to sleep on
    /// while there are none.
    open: watch::Sender<usize>,
}

impl std::fmt::Debug for DecisionQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecisionQueue")
            .field("approvals", &lock(&self.approvals).len())
            .field("elicitations", &lock(&self.elicitations).len())
            .finish()
    }
}

/// The orchestrator's wait for the decision on one request; the request leaves the queue when
/// this is dropped (decided, expired, or the run cancelled), and later submissions are refused
/// as [`SubmitError::NotPending`].
pub struct Waiting<'q, A> {
    decided: watch::Receiver<Option<Decided<A>>>,
    leave: Option<Box<dyn FnOnce() + Send + Sync + 'q>>,
}

impl<A: Clone> Waiting<'_, A> {
    /// The first valid decision, once one is submitted. Wakes on the submission itself (no
    /// polling); never returns when nobody decides: race it against the expiry.
    pub async fn decided(&mut self) -> Decided<A> {
        loop {
            if let Some(decided) = self.decided.borrow_and_update().clone() {
                return decided;
            }
            if self.decided.changed().await.is_err() {
                // The queue entry is gone without a decision: nothing more can come.
                std::future::pending::<()>().await;
            }
        }
    }
}

impl<A: Clone> Waiting<'_, A> {
    /// The first valid decision: `own` (the run's approver's answer, submitted with `submit`)
    /// or one another front end submitted to the queue meanwhile, whichever is taken first.
    /// An own answer the queue refuses as not the owner's is returned as it is (the
    /// orchestrator records the refusal, as for any answer from someone else); `None` when it
    /// was refused as expired.
    pub async fn first(
        &mut self,
        own: impl Future<Output = A>,
        submit: impl Fn(A) -> Result<(), SubmitError>,
    ) -> Option<A> {
        // Outside tokio's cooperative budget: a front end that already sees another's decision
        // must be able to say so when polled first, not be told to yield while the queue's
        // branch (which needs no budget) takes the decision past it.
        let own = tokio::task::unconstrained(own);
        tokio::pin!(own);
        let mut asking = true;
        loop {
            tokio::select! {
                // The own answer first: a front end that saw another's decision (the terminal
                // prompt noticing the web UI's) ends its prompt before the decision is taken.
                biased;
                answer = &mut own, if asking => {
                    asking = false;
                    match submit(answer.clone()) {
                        // Taken from the queue below: the first valid decision wins.
                        Ok(()) | Err(SubmitError::AlreadyDecided(_)) => {}
                        Err(SubmitError::NotOwner(_)) => return Some(answer),
                        Err(_) => return None,
                    }
                }
                decided = self.decided() => {
                    if asking {
                        // Let a front end that is still asking see the decision and say so
                        // (the terminal prompt prints who decided elsewhere) before it is
                        // dropped; its own answer now comes too late to count.
                        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                        let _ = own.as_mut().poll(&mut cx);
                    }
                    return Some(decided.answer);
                }
            }
        }
    }
}

impl<A> Drop for Waiting<'_, A> {
    fn drop(&mut self) {
        if let Some(leave) = self.leave.take() {
            leave();
        }
    }
}

/// The decision `decided` receives, once there is one; `None` when its sender is dropped
/// without one. Every poll looks at the value itself, not only at the change notice: a
/// submission sets the value before it wakes the receivers, so a waiter polled in between —
/// the run's front end, which [`Waiting::first`] polls once more right after it took the
/// decision — would otherwise miss a decision that is already there.
async fn settled<A: Clone>(decided: watch::Receiver<Option<Decided<A>>>) -> Option<Decided<A>> {
    let peek = decided.clone();
    let mut woken = std::pin::pin!(async move {
        let mut decided = decided;
        decided.wait_for(Option::is_some).await.ok().and_then(|d| d.clone())
    });
    std::future::poll_fn(|cx| match peek.borrow().clone() {
        Some(decision) => std::task::Poll::Ready(Some(decision)),
        None => woken.as_mut().poll(cx),
    })
    .await
}

/// Who decided, for the owner check; `None` for "nobody can answer here", which is no one's
/// decision and needs no owner.
trait Decider {
    fn decided_by(&self) -> Option<&str>;
}

impl Decider for ApprovalAnswer {
    fn decided_by(&self) -> Option<&str> {
        match self {
            ApprovalAnswer::Approve { decided_by, .. } | ApprovalAnswer::Reject { decided_by, .. } => Some(decided_by),
            ApprovalAnswer::NoApprover => None,
        }
    }
}

impl Decider for ElicitationReply {
    fn decided_by(&self) -> Option<&str> {
        match self {
            ElicitationReply::Accept { decided_by, .. }
            | ElicitationReply::Decline { decided_by }
            | ElicitationReply::Cancel { decided_by } => Some(decided_by),
            ElicitationReply::NoApprover => None,
        }
    }
}

/// Checks a submission on the entry `id` of `book` and hands it to the waiter: `answer` builds
/// the answer from what was asked once the owner and expiry checks passed.
fn submit<Q, A: Decider>(
    book: &Book<Q, A>,
    clock: &dyn Clock,
    id: &str,
    decided_by: Option<&str>,
    via: Via,
    answer: impl FnOnce(&Q) -> Result<A, SubmitError>,
) -> Result<(), SubmitError> {
    let book = lock(book);
    let Some(entry) = book.get(id) else { return Err(SubmitError::NotPending(id.to_string())) };
    if decided_by.is_some_and(|who| who != entry.owner_id) {
        return Err(SubmitError::NotOwner(id.to_string()));
    }
    if entry.decided.borrow().is_some() {
        return Err(SubmitError::AlreadyDecided(id.to_string()));
    }
    if clock.now() >= entry.expires_at {
        return Err(SubmitError::Expired(id.to_string()));
    }
    let answer = answer(&entry.asked)?;
    entry.decided.send_replace(Some(Decided { answer, via }));
    Ok(())
}

impl DecisionQueue {
    /// The time by the clock this queue judges expiry by (the runtime's).
    pub fn now(&self) -> steward_protocol::Timestamp {
        self.clock.now()
    }

    /// An empty queue judging expiry by `clock` (the runtime's).
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        DecisionQueue {
            clock,
            approvals: Mutex::new(HashMap::new()),
            elicitations: Mutex::new(HashMap::new()),
            open: watch::Sender::new(0),
        }
    }

    /// Opens `request` for decisions; `token` is the decision token an approval from a front
    /// end that holds none (the web UI, the store) presents. The request stays in the queue
    /// until the returned `Waiting` is dropped.
    pub fn open_approval(&self, request: &ApprovalRequest, token: &str) -> Waiting<'_, ApprovalAnswer> {
        let (decided, rx) = watch::channel(None);
        let entry = Entry {
            asked: AskedApproval { request: request.clone(), token: token.to_string() },
            run_id: request.run_id.clone(),
            owner_id: request.owner_id.clone(),
            expires_at: request.expires_at,
            decided,
        };
        let id = request.id.clone();
        let count = {
            let mut book = lock(&self.approvals);
            book.insert(id.clone(), entry);
            book.len()
        };
        self.open.send_replace(count);
        Waiting {
            decided: rx,
            leave: Some(Box::new(move || {
                let count = {
                    let mut book = lock(&self.approvals);
                    book.remove(&id);
                    book.len()
                };
                self.open.send_replace(count);
            })),
        }
    }

    /// Submits an answer to approval `id` as a front end gave it (with the token it presents,
    /// which the orchestrator checks). `ApprovalAnswer::NoApprover` needs no owner.
    pub fn submit_approval(&self, id: &str, answer: ApprovalAnswer, via: Via) -> Result<(), SubmitError> {
        let decided_by = answer.decided_by().map(str::to_string);
        submit(&self.approvals, self.clock.as_ref(), id, decided_by.as_deref(), via, |_| Ok(answer))
    }

    /// Submits `decided_by`'s `verdict` on approval `id`, presenting the decision token the
    /// orchestrator signed for it (the web UI, a decision recorded in the store).
    pub fn decide(&self, id: &str, decided_by: &str, verdict: Verdict, via: Via) -> Result<(), SubmitError> {
        submit(&self.approvals, self.clock.as_ref(), id, Some(decided_by), via, |asked| {
            let decided_by = decided_by.to_string();
            Ok(match verdict {
                Verdict::Approve(scope, shown) => ApprovalAnswer::Approve {
                    token: asked.token.clone(),
                    decided_by,
                    scope,
                    call_hash: shown.unwrap_or_else(|| call_hash(&asked.request)),
                },
                Verdict::Deny(reason) => ApprovalAnswer::Reject { reason, decided_by },
            })
        })
    }

    /// The decision on approval `id` once there is one, for a front end that shows the request
    /// and must stop asking once someone else decided (the terminal prompt); `None` when `id`
    /// is not pending here or leaves the queue undecided. Ready as soon as the decision is
    /// submitted, even when polled before the submission's wake-up arrives (see `settled`).
    pub async fn approval_decided(&self, id: &str) -> Option<Decided<ApprovalAnswer>> {
        let decided = lock(&self.approvals).get(id).map(|entry| entry.decided.subscribe())?;
        settled(decided).await
    }

    /// The approval requests of run `run_id` waiting for a decision, oldest first.
    pub fn pending_approvals(&self, run_id: &str) -> Vec<ApprovalRequest> {
        let mut pending: Vec<ApprovalRequest> = lock(&self.approvals)
            .values()
            .filter(|entry| entry.run_id == run_id && entry.decided.borrow().is_none())
            .map(|entry| entry.asked.request.clone())
            .collect();
        pending.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
        pending
    }

    /// The approval request `id`, while it waits for a decision here.
    pub fn pending_approval(&self, id: &str) -> Option<ApprovalRequest> {
        lock(&self.approvals).get(id).filter(|entry| entry.decided.borrow().is_none()).map(|e| e.asked.request.clone())
    }

    /// Ids of every approval waiting for a decision here.
    pub fn pending_approval_ids(&self) -> Vec<String> {
        lock(&self.approvals)
            .iter()
            .filter(|(_, entry)| entry.decided.borrow().is_none())
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The owner of approval `id`, while it waits for a decision here.
    pub fn approval_owner(&self, id: &str) -> Option<String> {
        lock(&self.approvals).get(id).filter(|entry| entry.decided.borrow().is_none()).map(|e| e.owner_id.clone())
    }

    /// Opens an MCP server's request for input for answers; it stays in the queue until the
    /// returned `Waiting` is dropped.
    pub fn open_elicitation(&self, prompt: &ElicitationPrompt) -> Waiting<'_, ElicitationReply> {
        let (decided, rx) = watch::channel(None);
        let entry = Entry {
            asked: prompt.clone(),
            run_id: prompt.run_id.clone(),
            owner_id: prompt.owner_id.clone(),
            expires_at: prompt.expires_at,
            decided,
        };
        let id = prompt.id.clone();
        lock(&self.elicitations).insert(id.clone(), entry);
        Waiting {
            decided: rx,
            leave: Some(Box::new(move || {
                lock(&self.elicitations).remove(&id);
            })),
        }
    }

    /// Submits a reply to elicitation `id` as a front end gave it (values already checked by
    /// [`ElicitationPrompt::answer`]). `ElicitationReply::NoApprover` needs no owner.
    pub fn submit_elicitation(&self, id: &str, reply: ElicitationReply, via: Via) -> Result<(), SubmitError> {
        let decided_by = reply.decided_by().map(str::to_string);
        submit(&self.elicitations, self.clock.as_ref(), id, decided_by.as_deref(), via, |_| Ok(reply))
    }

    /// Submits `decided_by`'s answer to elicitation `id`, made from the request as asked by
    /// `reply` (which parses and validates a filled-in form; `Err` says what is wrong, the
    /// request then keeps waiting: [`SubmitError::Invalid`]). The owner and expiry are checked
    /// first.
    pub fn answer_elicitation(
        &self,
        id: &str,
        decided_by: &str,
        via: Via,
        reply: impl FnOnce(&ElicitationPrompt) -> Result<ElicitationReply, AnswerError>,
    ) -> Result<(), SubmitError> {
        submit(&self.elicitations, self.clock.as_ref(), id, Some(decided_by), via, |prompt| {
            reply(prompt).map_err(|e| SubmitError::Invalid(e.to_string()))
        })
    }

    /// The requests for input of run `run_id` waiting for an answer, oldest first.
    pub fn pending_elicitations(&self, run_id: &str) -> Vec<ElicitationPrompt> {
        let mut prompts: Vec<ElicitationPrompt> = lock(&self.elicitations)
            .values()
            .filter(|entry| entry.run_id == run_id && entry.decided.borrow().is_none())
            .map(|entry| entry.asked.clone())
            .collect();
        prompts.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
        prompts
    }

    /// Feeds the queue with decisions recorded in `store` by other processes, until dropped:
    /// while approvals wait here, each is looked up once, then again when the store notices a
    /// decision on one of them ([`Change::Decision`]) or may have lost notices
    /// ([`Change::Resync`], a lagging receiver), and every `NOTICED_POLL` in case a notice
    /// was lost; a store without notices (SQLite) is looked at every `poll`. While nothing
    /// waits here, the store is not read at all.
    pub async fn follow_store(&self, store: &dyn Store, poll: Duration) {
        // Subscribe before the first look, so a decision recorded in between is noticed.
        let mut changes = store.subscribe_changes();
        let mut open = self.open.subscribe();
        loop {
            if open.wait_for(|n| *n > 0).await.is_err() {
                return;
            }
            for id in self.pending_approval_ids() {
                match store.approval_decision(&id).await {
                    Ok(Some(record)) => self.deliver(&record),
                    Ok(None) => {}
                    Err(e) => tracing::warn!("reading the decision on approval {id}: {e}"),
                }
            }
            let Some(rx) = changes.as_mut() else {
                tokio::time::sleep(poll).await;
                continue;
            };
            let noticed = async {
                loop {
                    match rx.recv().await {
                        Ok(Change::Decision { approval_id, .. }) if self.approval_owner(&approval_id).is_some() => {
                            return true;
                        }
                        Ok(Change::Resync) | Err(RecvError::Lagged(_)) => return true,
                        Ok(_) => {}
                        Err(RecvError::Closed) => return false,
                    }
                }
            };
            // The store's notices stopped: poll from now on.
            if let Ok(false) = tokio::time::timeout(NOTICED_POLL, noticed).await {
                changes = None;
            }
        }
    }

    /// Submits a decision recorded in the store; one refused (decided here first, expired,
    /// not the owner's) is left to the store's record.
    fn deliver(&self, record: &ApprovalDecisionRecord) {
        let verdict = Verdict::of_record(record);
        if let Err(e) = self.decide(&record.approval_id, &record.decided_by, verdict, Via::Store) {
            tracing::debug!("a decision recorded in the store was not taken: {e}");
        }
    }
}

#[cfg(test)]
#[path = "decisions_tests.rs"]
mod tests;
