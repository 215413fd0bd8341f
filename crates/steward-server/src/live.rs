//! Runs executing (or queued) in this server process: their live event streams, cancel
//! tokens, pending approvals and the queue behind the concurrency limit (SPEC R4).
//!
//! Everything here is in memory; the store holds the durable record of each run. A run
//! started by another process (`steward run` in a terminal) is not live here: the server
//! shows it from the store.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use steward_core::approval::{ApprovalAnswer, Approver};
use steward_core::clock::Clock;
use steward_core::elicitation::{ElicitationPrompt, ElicitationReply};
use steward_core::events::EventObserver;
use steward_protocol::{ApprovalRequest, Event};
use steward_store::ApprovalDecisionRecord;
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;

/// Events buffered per watched run for slow subscribers; one that falls further behind
/// reloads the missed events from the store.
const EVENT_BUFFER: usize = 1024;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One run of this process.
pub struct LiveRun {
    /// `run_…`.
    pub id: String,
    /// Its owner.
    pub owner_id: String,
    /// Cancelling it cancels the run, queued or running (SPEC A7).
    pub cancel: CancellationToken,
    /// The live stream of its events while someone watches: created by the first subscriber,
    /// dropped once the last has gone, so a run nobody watches (one parked on an approval)
    /// holds no buffer.
    events: Mutex<Option<broadcast::Sender<Arc<LiveEvent>>>>,
    pending: Mutex<HashMap<String, Pending>>,
    /// MCP servers' requests for input waiting for the owner (kept in memory only: they are
    /// answered here or expire).
    elicitations: Mutex<HashMap<String, PendingElicitation>>,
    /// The task and when it was submitted, shown while the run waits in the queue (before it
    /// has a stored record).
    submitted: Mutex<Option<(String, chrono::DateTime<chrono::Utc>)>>,
}

/// An event as the live stream hands it to every subscriber: shared, and turned into JSON
/// once rather than once per subscriber.
#[derive(Debug)]
pub struct LiveEvent {
    /// The event.
    pub event: Event,
    /// The event as JSON.
    pub json: String,
}

impl LiveEvent {
    /// `event` with its JSON.
    pub fn new(event: Event) -> Self {
        let json = serde_json::to_string(&event).unwrap_or_else(|_| "{}".to_string());
        LiveEvent { event, json }
    }
}

struct Pending {
    request: ApprovalRequest,
    token: String,
    answer: oneshot::Sender<ApprovalAnswer>,
}

struct PendingElicitation {
    prompt: ElicitationPrompt,
    answer: oneshot::Sender<ElicitationReply>,
}

impl LiveRun {
    /// Subscribes to the events published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<LiveEvent>> {
        lock(&self.events).get_or_insert_with(|| broadcast::channel(EVENT_BUFFER).0).subscribe()
    }

    /// Records the task and submission time shown while the run is queued.
    pub fn set_submitted(&self, task: &str, at: chrono::DateTime<chrono::Utc>) {
        *lock(&self.submitted) = Some((task.to_string(), at));
    }

    /// The task as submitted, if recorded.
    pub fn submitted_task(&self) -> Option<String> {
        lock(&self.submitted).as_ref().map(|(task, _)| task.clone())
    }

    /// The approval requests waiting for an answer.
    pub fn pending_approvals(&self) -> Vec<ApprovalRequest> {
        lock(&self.pending).values().map(|p| p.request.clone()).collect()
    }

    /// The MCP servers' requests for input waiting for an answer, oldest first.
    pub fn pending_elicitations(&self) -> Vec<ElicitationPrompt> {
        let mut prompts: Vec<ElicitationPrompt> = lock(&self.elicitations).values().map(|p| p.prompt.clone()).collect();
        prompts.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
        prompts
    }
}

/// Why a decision could not be delivered.
#[derive(Debug)]
pub enum DecideError {
    /// No live run of this process waits on this approval (decided, expired, the run ended,
    /// or it runs elsewhere); the decision is handed back.
    NotPending(Decision),
    /// The approval belongs to another owner.
    NotOwner,
    /// Its `expires_at` has passed.
    Expired,
}

/// The owner's answer to an MCP server's request for input, from the run page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElicitationAction {
    /// Send the filled-in form: `(field name, text)`, an empty text omitting the field.
    Accept(Vec<(String, String)>),
    /// Decline.
    Decline,
    /// Cancel (dismiss).
    Cancel,
}

/// Why an answer to an elicitation was not delivered.
#[derive(Debug, PartialEq, Eq)]
pub enum ElicitError {
    /// No live run of this process waits on it (answered, expired, the run ended).
    NotPending,
    /// It belongs to another owner's run.
    NotOwner,
    /// Its `expires_at` has passed.
    Expired,
    /// The values do not fit the requested schema (the message says why); it still waits.
    Invalid(String),
}

/// A decision on one approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Approve once or remember for the run or workspace.
    Approve(steward_core::approval::ApprovalScope),
    /// Deny with a reason for the model.
    Deny(String),
}

/// The live runs of this process and the queue for run slots.
pub struct LiveRuns {
    runs: Mutex<HashMap<String, Arc<LiveRun>>>,
    queue: Mutex<VecDeque<String>>,
    slots: Arc<tokio::sync::Semaphore>,
    max_running: usize,
    /// The runtime's clock: approvals and elicitations expire by it.
    clock: Arc<dyn Clock>,
}

impl LiveRuns {
    /// At most `max_running` runs execute at once (at least 1); the rest wait in order.
    /// Expiry of approvals and elicitations is judged by `clock` (the runtime's).
    pub fn new(max_running: usize, clock: Arc<dyn Clock>) -> Self {
        let max_running = max_running.max(1);
        LiveRuns {
            runs: Mutex::new(HashMap::new()),
            queue: Mutex::new(VecDeque::new()),
            slots: Arc::new(tokio::sync::Semaphore::new(max_running)),
            max_running,
            clock,
        }
    }

    /// The concurrency limit.
    pub fn max_running(&self) -> usize {
        self.max_running
    }

    /// Registers a new run and puts it at the end of the queue.
    pub fn register(&self, id: &str, owner_id: &str, cancel: CancellationToken) -> Arc<LiveRun> {
        let run = Arc::new(LiveRun {
            id: id.to_string(),
            owner_id: owner_id.to_string(),
            cancel,
            events: Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
            elicitations: Mutex::new(HashMap::new()),
            submitted: Mutex::new(None),
        });
        lock(&self.runs).insert(id.to_string(), run.clone());
        lock(&self.queue).push_back(id.to_string());
        run
    }

    /// Live runs of `owner_id` that wait in the queue: `(id, task, submitted at)`, in queue
    /// order.
    pub fn queued_of(&self, owner_id: &str) -> Vec<(String, String, chrono::DateTime<chrono::Utc>)> {
        let queue: Vec<String> = lock(&self.queue).iter().cloned().collect();
        let runs = lock(&self.runs);
        queue
            .iter()
            .filter_map(|id| runs.get(id))
            .filter(|run| run.owner_id == owner_id)
            .filter_map(|run| lock(&run.submitted).clone().map(|(task, at)| (run.id.clone(), task, at)))
            .collect()
    }

    /// Waits for a run slot in queue order; the permit frees the slot when dropped. Returns
    /// `None` when the run was cancelled while it waited.
    pub async fn wait_for_slot(&self, run: &LiveRun) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let permit = tokio::select! {
            permit = self.slots.clone().acquire_owned() => permit.ok(),
            _ = run.cancel.cancelled() => None,
        };
        lock(&self.queue).retain(|id| id != &run.id);
        permit
    }

    /// Position in the queue (1 = next to start), or `None` when not queued.
    pub fn queue_position(&self, id: &str) -> Option<usize> {
        lock(&self.queue).iter().position(|q| q == id).map(|i| i + 1)
    }

    /// The live run `id`.
    pub fn get(&self, id: &str) -> Option<Arc<LiveRun>> {
        lock(&self.runs).get(id).cloned()
    }

    /// Forgets a run that has ended.
    pub fn remove(&self, id: &str) {
        lock(&self.runs).remove(id);
        lock(&self.queue).retain(|q| q != id);
    }

    /// Number of live runs (queued and running).
    pub fn len(&self) -> usize {
        lock(&self.runs).len()
    }

    /// True when no run is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Delivers `owner_id`'s decision on approval `approval_id`. The token handed to the
    /// run is the one the orchestrator signed; the orchestrator verifies it, the owner and
    /// the expiry again before anything runs (SPEC C4).
    pub fn decide(&self, approval_id: &str, owner_id: &str, decision: Decision) -> Result<(), DecideError> {
        let runs: Vec<Arc<LiveRun>> = lock(&self.runs).values().cloned().collect();
        for run in runs {
            let mut pending = lock(&run.pending);
            let Some(entry) = pending.get(approval_id) else { continue };
            if entry.request.owner_id != owner_id {
                return Err(DecideError::NotOwner);
            }
            if self.clock.now() >= entry.request.expires_at {
                return Err(DecideError::Expired);
            }
            let Some(entry) = pending.remove(approval_id) else { continue };
            let answer = match decision {
                Decision::Approve(scope) => {
                    ApprovalAnswer::Approve { token: entry.token, decided_by: owner_id.to_string(), scope }
                }
                Decision::Deny(reason) => ApprovalAnswer::Reject { reason, decided_by: owner_id.to_string() },
            };
            return entry.answer.send(answer).map_err(|answer| {
                DecideError::NotPending(match answer {
                    ApprovalAnswer::Approve { scope, .. } => Decision::Approve(scope),
                    ApprovalAnswer::Reject { reason, .. } => Decision::Deny(reason),
                    ApprovalAnswer::NoApprover => Decision::Deny(String::new()),
                })
            });
        }
        Err(DecideError::NotPending(decision))
    }

    /// Delivers `owner_id`'s answer to elicitation `id`. Accepted values are parsed, completed
    /// with the schema's defaults and validated first; values that do not fit are refused
    /// ([`ElicitError::Invalid`]) and the request keeps waiting.
    pub fn answer_elicitation(&self, id: &str, owner_id: &str, action: ElicitationAction) -> Result<(), ElicitError> {
        let runs: Vec<Arc<LiveRun>> = lock(&self.runs).values().cloned().collect();
        for run in runs {
            let mut pending = lock(&run.elicitations);
            let Some(entry) = pending.get(id) else { continue };
            if entry.prompt.owner_id != owner_id {
                return Err(ElicitError::NotOwner);
            }
            if self.clock.now() >= entry.prompt.expires_at {
                return Err(ElicitError::Expired);
            }
            let decided_by = owner_id.to_string();
            let reply = match &action {
                ElicitationAction::Accept(inputs) => {
                    let values = entry.prompt.answer(inputs).map_err(ElicitError::Invalid)?;
                    ElicitationReply::Accept { values, decided_by }
                }
                ElicitationAction::Decline => ElicitationReply::Decline { decided_by },
                ElicitationAction::Cancel => ElicitationReply::Cancel { decided_by },
            };
            let Some(entry) = pending.remove(id) else { continue };
            return entry.answer.send(reply).map_err(|_| ElicitError::NotPending);
        }
        Err(ElicitError::NotPending)
    }

    /// Ids of the approvals pending here.
    pub fn pending_approval_ids(&self) -> Vec<String> {
        let runs: Vec<Arc<LiveRun>> = lock(&self.runs).values().cloned().collect();
        runs.iter().flat_map(|run| lock(&run.pending).keys().cloned().collect::<Vec<_>>()).collect()
    }

    /// Hands a decision recorded in the store (through another node) to the run waiting on
    /// it here, with this process's own decision token; the orchestrator checks the decider
    /// and the expiry as for any answer. True when a run here was waiting on it.
    pub fn deliver_recorded(&self, record: ApprovalDecisionRecord) -> bool {
        let runs: Vec<Arc<LiveRun>> = lock(&self.runs).values().cloned().collect();
        for run in runs {
            let Some(entry) = lock(&run.pending).remove(&record.approval_id) else { continue };
            let answer = steward_core::approval::recorded_answer(record, &entry.token);
            return entry.answer.send(answer).is_ok();
        }
        false
    }

    /// The owner of a pending approval, if one is pending here.
    pub fn approval_owner(&self, approval_id: &str) -> Option<String> {
        let runs: Vec<Arc<LiveRun>> = lock(&self.runs).values().cloned().collect();
        runs.iter().find_map(|run| lock(&run.pending).get(approval_id).map(|p| p.request.owner_id.clone()))
    }
}

/// Until the server shuts down: delivers to this server's waiting runs the decisions recorded
/// in the store through other nodes (a browser on node A approving a run of node B), as soon
/// as the store notices them ([`steward_store::Change::Decision`]). When notices may have been
/// lost ([`steward_store::Change::Resync`], or this receiver lagged) every approval pending
/// here is looked up once. Returns at once when the store sends no notices (SQLite): a run of
/// a server is then decided through that server only.
pub async fn follow_recorded_decisions(state: crate::state::AppState) {
    let store = state.runtime.store.clone();
    let Some(mut changes) = store.subscribe_changes() else { return };
    loop {
        let received = tokio::select! {
            received = changes.recv() => received,
            _ = state.shutdown.cancelled() => return,
        };
        let ids = match received {
            Ok(steward_store::Change::Decision { approval_id, .. }) => vec![approval_id],
            Ok(steward_store::Change::Resync) | Err(broadcast::error::RecvError::Lagged(_)) => {
                state.live.pending_approval_ids()
            }
            Ok(_) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        for id in ids {
            if state.live.approval_owner(&id).is_none() {
                continue;
            }
            match store.approval_decision(&id).await {
                Ok(Some(record)) => {
                    state.live.deliver_recorded(record);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!("reading the decision on approval {id}: {e}"),
            }
        }
    }
}

/// Publishes a live run's events to its subscribers.
pub struct Broadcast(pub Arc<LiveRun>);

impl EventObserver for Broadcast {
    fn on_event(&self, event: &Event) {
        // No subscriber is fine: the store has every event.
        let mut events = lock(&self.0.events);
        let Some(sender) = events.as_ref() else { return };
        if sender.receiver_count() == 0 {
            *events = None;
        } else {
            let _ = sender.send(Arc::new(LiveEvent::new(event.clone())));
        }
    }
}

/// Answers a live run's approval requests with decisions made in the browser or API of this
/// server, or recorded in the store through another node ([`follow_recorded_decisions`]).
pub struct WebApprover(pub Arc<LiveRun>);

/// Removes a pending approval when its wait ends (answered, expired, or cancelled).
struct PendingGuard<'a> {
    run: &'a LiveRun,
    id: String,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(&self.run.pending).remove(&self.id);
    }
}

/// Removes a pending elicitation when its wait ends.
struct ElicitationGuard<'a> {
    run: &'a LiveRun,
    id: String,
}

impl Drop for ElicitationGuard<'_> {
    fn drop(&mut self) {
        lock(&self.run.elicitations).remove(&self.id);
    }
}

#[async_trait]
impl Approver for WebApprover {
    async fn ask(&self, request: &ApprovalRequest, token: &str) -> ApprovalAnswer {
        let (tx, rx) = oneshot::channel();
        lock(&self.0.pending)
            .insert(request.id.clone(), Pending { request: request.clone(), token: token.to_string(), answer: tx });
        let _guard = PendingGuard { run: &self.0, id: request.id.clone() };
        match rx.await {
            Ok(answer) => answer,
            // The sender went away without an answer: fail closed.
            Err(_) => ApprovalAnswer::NoApprover,
        }
    }

    /// Waits for the owner's answer on the run's page (`POST /elicitations/{id}`).
    async fn elicit(&self, prompt: &ElicitationPrompt) -> ElicitationReply {
        let (tx, rx) = oneshot::channel();
        lock(&self.0.elicitations).insert(prompt.id.clone(), PendingElicitation { prompt: prompt.clone(), answer: tx });
        let _guard = ElicitationGuard { run: &self.0, id: prompt.id.clone() };
        rx.await.unwrap_or(ElicitationReply::NoApprover)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use steward_core::approval::ApprovalScope;
    use steward_core::clock::SystemClock;
    use steward_protocol::ApprovalStatus;

    fn request(id: &str, owner: &str, expires_in_s: i64) -> ApprovalRequest {
        let now = chrono::Utc::now();
        ApprovalRequest {
            id: id.into(),
            run_id: "run_1".into(),
            owner_id: owner.into(),
            call_id: "call_1".into(),
            tool: "write_file".into(),
            arguments: serde_json::json!({"path": "a.txt"}),
            reason: "writes".into(),
            rule: "default".into(),
            risk: 0.5,
            preview: String::new(),
            created_at: now,
            expires_at: now + chrono::Duration::seconds(expires_in_s),
            status: ApprovalStatus::Pending,
        }
    }

    #[tokio::test]
    async fn only_the_owner_decides_and_only_once() {
        let live = LiveRuns::new(2, Arc::new(SystemClock));
        let run = live.register("run_1", "web:a", CancellationToken::new());
        let approver = WebApprover(run.clone());
        let req = request("apr_1", "web:a", 60);
        let ask = tokio::spawn(async move { approver.ask(&req, "tok").await });
        while live.approval_owner("apr_1").is_none() {
            tokio::task::yield_now().await;
        }
        assert!(matches!(
            live.decide("apr_1", "web:b", Decision::Approve(ApprovalScope::Once)),
            Err(DecideError::NotOwner)
        ));
        assert!(live.decide("apr_1", "web:a", Decision::Approve(ApprovalScope::Once)).is_ok());
        assert_eq!(
            ask.await.unwrap(),
            ApprovalAnswer::Approve { token: "tok".into(), decided_by: "web:a".into(), scope: ApprovalScope::Once }
        );
        assert!(matches!(live.decide("apr_1", "web:a", Decision::Deny("x".into())), Err(DecideError::NotPending(_))));
        assert!(run.pending_approvals().is_empty());
    }

    #[tokio::test]
    async fn a_decision_recorded_through_another_node_reaches_the_waiting_run_with_this_token() {
        let live = LiveRuns::new(1, Arc::new(SystemClock));
        let run = live.register("run_1", "web:a", CancellationToken::new());
        let approver = WebApprover(run.clone());
        let req = request("apr_3", "web:a", 60);
        let ask = tokio::spawn(async move { approver.ask(&req, "local-token").await });
        while live.approval_owner("apr_3").is_none() {
            tokio::task::yield_now().await;
        }
        assert_eq!(live.pending_approval_ids(), vec!["apr_3".to_string()]);
        let record = |approval_id: &str| ApprovalDecisionRecord {
            approval_id: approval_id.into(),
            run_id: "run_1".into(),
            decided_by: "web:a".into(),
            approve: true,
            scope: "run".into(),
            reason: String::new(),
            created_at: chrono::Utc::now(),
        };
        assert!(!live.deliver_recorded(record("apr_other")), "not pending here");
        assert!(live.deliver_recorded(record("apr_3")));
        assert_eq!(
            ask.await.unwrap(),
            ApprovalAnswer::Approve {
                token: "local-token".into(),
                decided_by: "web:a".into(),
                scope: ApprovalScope::Run
            }
        );
        assert!(!live.deliver_recorded(record("apr_3")), "answered once");
        assert!(live.pending_approval_ids().is_empty());
    }

    #[tokio::test]
    async fn an_expired_approval_cannot_be_decided() {
        let live = LiveRuns::new(1, Arc::new(SystemClock));
        let run = live.register("run_1", "web:a", CancellationToken::new());
        let approver = WebApprover(run.clone());
        let req = request("apr_2", "web:a", -1);
        let ask = tokio::spawn(async move { approver.ask(&req, "tok").await });
        while live.approval_owner("apr_2").is_none() {
            tokio::task::yield_now().await;
        }
        assert!(matches!(
            live.decide("apr_2", "web:a", Decision::Approve(ApprovalScope::Once)),
            Err(DecideError::Expired)
        ));
        ask.abort();
    }

    fn prompt(id: &str, owner: &str, expires_in_s: i64) -> ElicitationPrompt {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"n": {"type": "integer", "maximum": 9, "default": 3}, "who": {"type": "string"}},
            "required": ["who"]
        });
        let now = chrono::Utc::now();
        ElicitationPrompt {
            id: id.into(),
            run_id: "run_1".into(),
            owner_id: owner.into(),
            call_id: "call_1".into(),
            tool: "srv__ask".into(),
            server: "srv".into(),
            message: "who?".into(),
            fields: steward_mcp::elicitation::form_fields(&schema, &[]).unwrap(),
            schema,
            created_at: now,
            expires_at: now + chrono::Duration::seconds(expires_in_s),
        }
    }

    #[tokio::test]
    async fn only_the_owner_answers_a_request_for_input_with_values_that_fit() {
        let live = LiveRuns::new(1, Arc::new(SystemClock));
        let run = live.register("run_1", "web:a", CancellationToken::new());
        let approver = WebApprover(run.clone());
        let asked = prompt("eli_1", "web:a", 60);
        let ask = tokio::spawn(async move { approver.elicit(&asked).await });
        while run.pending_elicitations().is_empty() {
            tokio::task::yield_now().await;
        }
        let accept = |pairs: &[(&str, &str)]| {
            ElicitationAction::Accept(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
        };
        assert_eq!(live.answer_elicitation("eli_1", "web:b", ElicitationAction::Decline), Err(ElicitError::NotOwner));
        let Err(ElicitError::Invalid(problem)) = live.answer_elicitation("eli_1", "web:a", accept(&[("n", "10")]))
        else {
            panic!("a value above the maximum and a missing required one are refused")
        };
        assert!(problem.contains("`n`") || problem.contains("who"), "{problem}");
        assert_eq!(run.pending_elicitations().len(), 1, "still waiting");
        assert_eq!(live.answer_elicitation("eli_1", "web:a", accept(&[("who", "Ada"), ("n", "")])), Ok(()));
        let mut values = serde_json::Map::new();
        values.insert("n".into(), serde_json::json!(3));
        values.insert("who".into(), serde_json::json!("Ada"));
        assert_eq!(ask.await.unwrap(), ElicitationReply::Accept { values, decided_by: "web:a".into() });
        assert_eq!(live.answer_elicitation("eli_1", "web:a", ElicitationAction::Cancel), Err(ElicitError::NotPending));
        assert!(run.pending_elicitations().is_empty());

        let approver = WebApprover(run.clone());
        let late = prompt("eli_2", "web:a", -1);
        let ask = tokio::spawn(async move { approver.elicit(&late).await });
        while run.pending_elicitations().is_empty() {
            tokio::task::yield_now().await;
        }
        assert_eq!(live.answer_elicitation("eli_2", "web:a", ElicitationAction::Decline), Err(ElicitError::Expired));
        ask.abort();
    }

    #[tokio::test]
    async fn the_queue_keeps_order_and_reports_positions() {
        let live = Arc::new(LiveRuns::new(1, Arc::new(SystemClock)));
        let a = live.register("run_a", "web:a", CancellationToken::new());
        let b = live.register("run_b", "web:a", CancellationToken::new());
        let c = live.register("run_c", "web:a", CancellationToken::new());
        let permit_a = live.wait_for_slot(&a).await.unwrap();
        assert_eq!(live.queue_position("run_a"), None);
        assert_eq!(live.queue_position("run_b"), Some(1));
        assert_eq!(live.queue_position("run_c"), Some(2));
        c.cancel.cancel();
        assert!(live.wait_for_slot(&c).await.is_none());
        assert_eq!(live.queue_position("run_c"), None);
        let waiting = {
            let live = live.clone();
            tokio::spawn(async move { live.wait_for_slot(&b).await.is_some() })
        };
        drop(permit_a);
        assert!(waiting.await.unwrap());
        assert_eq!(live.queue_position("run_b"), None);
    }

    #[test]
    fn the_event_stream_exists_only_while_someone_watches() {
        let live = LiveRuns::new(1, Arc::new(SystemClock));
        let run = live.register("run_1", "web:a", CancellationToken::new());
        let observer = Broadcast(run.clone());
        let event = |seq| Event {
            run_id: "run_1".into(),
            seq,
            at: chrono::Utc::now(),
            kind: steward_protocol::EventKind::StageStarted { stage: "planner".into(), round: 1 },
        };
        observer.on_event(&event(1));
        assert!(lock(&run.events).is_none(), "nobody watches: no buffer");
        let mut rx = run.subscribe();
        observer.on_event(&event(2));
        let got = rx.try_recv().unwrap();
        assert_eq!(got.event.seq, 2);
        assert_eq!(serde_json::from_str::<Event>(&got.json).unwrap(), got.event);
        drop(rx);
        observer.on_event(&event(3));
        assert!(lock(&run.events).is_none(), "the last subscriber left: the buffer is dropped");
        let mut again = run.subscribe();
        observer.on_event(&event(4));
        assert_eq!(again.try_recv().unwrap().event.seq, 4);
    }
}
