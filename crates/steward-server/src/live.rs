//! Runs executing (or queued) in this server process: their live event streams, cancel
//! tokens, pending approvals (kept in the runtime's decision queue, which the web UI submits
//! decisions to) and the queue behind the concurrency limit (SPEC R4).
//!
//! Everything here is in memory; the store holds the durable record of each run. A run
//! started by another process (`steward run` in a terminal) is not live here: the server
//! shows it from the store.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use steward_core::EventObserver;
use steward_core::Runtime;
use steward_core::{DecisionQueue, SubmitError, Verdict, Via};
use steward_core::{ElicitationPrompt, ElicitationReply};
use steward_mcp::elicitation::AnswerError;
use steward_protocol::{ApprovalRequest, Event};
use tokio::sync::broadcast;
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
    /// The runtime's decision queue: the run's pending approvals and MCP servers' requests
    /// for input (kept in memory only: they are answered here or through the store, or expire).
    decisions: Arc<DecisionQueue>,
    /// The task and when it was submitted, shown while the run waits in the queue (before it
    /// has a stored record).
    submitted: Mutex<Option<(String, chrono::DateTime<chrono::Utc>)>>,
}

/// An event as the live stream hands it to every subscriber: shared, and turned into its
/// Server-Sent Events frame once rather than once per subscriber.
#[derive(Debug)]
pub struct LiveEvent {
    /// The event.
    pub event: Event,
    /// The event as an SSE frame: `id: SEQ`, `event: KIND`, `data: JSON` and a blank line
    /// (compact JSON has no line break, so one `data:` line holds it).
    pub frame: bytes::Bytes,
}

impl LiveEvent {
    /// `event` with its frame.
    pub fn new(event: Event) -> Self {
        let json = serde_json::to_string(&event).unwrap_or_else(|_| "{}".to_string());
        let frame = format!("id: {}\nevent: {}\ndata: {json}\n\n", event.seq, event.kind.name());
        LiveEvent { event, frame: frame.into() }
    }
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

    /// The approval requests waiting for an answer, oldest first.
    pub fn pending_approvals(&self) -> Vec<ApprovalRequest> {
        self.decisions.pending_approvals(&self.id)
    }

    /// The MCP servers' requests for input waiting for an answer, oldest first.
    pub fn pending_elicitations(&self) -> Vec<ElicitationPrompt> {
        self.decisions.pending_elicitations(&self.id)
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
    /// Another decision came first.
    AlreadyDecided,
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
    Approve(steward_core::ApprovalScope),
    /// Deny with a reason for the model.
    Deny(String),
}

/// The live runs of this process and the queue for run slots.
pub struct LiveRuns {
    runs: Mutex<HashMap<String, Arc<LiveRun>>>,
    queue: Mutex<VecDeque<String>>,
    slots: Arc<tokio::sync::Semaphore>,
    max_running: usize,
    /// The runtime's decision queue, where the runs' approvals and requests for input wait
    /// (expiring by the runtime's clock).
    decisions: Arc<DecisionQueue>,
}

impl LiveRuns {
    /// At most `max_running` runs execute at once (at least 1); the rest wait in order.
    /// Decisions on their approvals and requests for input go to `decisions` (the runtime's).
    pub fn new(max_running: usize, decisions: Arc<DecisionQueue>) -> Self {
        let max_running = max_running.max(1);
        LiveRuns {
            runs: Mutex::new(HashMap::new()),
            queue: Mutex::new(VecDeque::new()),
            slots: Arc::new(tokio::sync::Semaphore::new(max_running)),
            max_running,
            decisions,
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
            decisions: self.decisions.clone(),
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

    /// The approvals waiting for `owner_id` in this process: `(run id, approval)`, oldest
    /// first.
    pub fn waiting_of(&self, owner_id: &str) -> Vec<(String, ApprovalRequest)> {
        let runs: Vec<Arc<LiveRun>> = lock(&self.runs).values().filter(|r| r.owner_id == owner_id).cloned().collect();
        let mut waiting: Vec<(String, ApprovalRequest)> =
            runs.iter().flat_map(|r| r.pending_approvals().into_iter().map(|a| (r.id.clone(), a))).collect();
        waiting.sort_by_key(|(_, a)| a.created_at);
        waiting
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

    /// Submits `owner_id`'s decision on approval `approval_id` to the runtime's decision
    /// queue. The token handed to the run is the one the orchestrator signed; the orchestrator
    /// verifies it, the owner and the expiry again before anything runs (SPEC C4).
    /// `call_hash` is the hash of the call the approver was shown; `None`: the request as the
    /// queue holds it.
    pub fn decide(
        &self,
        approval_id: &str,
        owner_id: &str,
        decision: Decision,
        call_hash: Option<String>,
    ) -> Result<(), DecideError> {
        let verdict = match &decision {
            Decision::Approve(scope) => Verdict::Approve(*scope, call_hash),
            Decision::Deny(reason) => Verdict::Deny(reason.clone()),
        };
        self.decisions.decide(approval_id, owner_id, verdict, Via::Here).map_err(|e| match e {
            SubmitError::NotOwner(_) => DecideError::NotOwner,
            SubmitError::AlreadyDecided(_) => DecideError::AlreadyDecided,
            SubmitError::Expired(_) => DecideError::Expired,
            SubmitError::NotPending(_) | SubmitError::Invalid(_) => DecideError::NotPending(decision),
        })
    }

    /// Submits `owner_id`'s answer to elicitation `id` to the runtime's decision queue.
    /// Accepted values are parsed, completed with the schema's defaults and validated first;
    /// values that do not fit are refused ([`ElicitError::Invalid`]) and the request keeps
    /// waiting.
    pub fn answer_elicitation(&self, id: &str, owner_id: &str, action: ElicitationAction) -> Result<(), ElicitError> {
        let decided_by = owner_id.to_string();
        let reply = |prompt: &ElicitationPrompt| -> Result<ElicitationReply, AnswerError> {
            Ok(match action {
                ElicitationAction::Accept(inputs) => {
                    ElicitationReply::Accept { values: prompt.answer(&inputs)?, decided_by }
                }
                ElicitationAction::Decline => ElicitationReply::Decline { decided_by },
                ElicitationAction::Cancel => ElicitationReply::Cancel { decided_by },
            })
        };
        self.decisions.answer_elicitation(id, owner_id, Via::Here, reply).map_err(|e| match e {
            SubmitError::NotOwner(_) => ElicitError::NotOwner,
            SubmitError::Expired(_) => ElicitError::Expired,
            SubmitError::Invalid(problem) => ElicitError::Invalid(problem),
            SubmitError::NotPending(_) | SubmitError::AlreadyDecided(_) => ElicitError::NotPending,
        })
    }

    /// Ids of the approvals pending here.
    pub fn pending_approval_ids(&self) -> Vec<String> {
        self.decisions.pending_approval_ids()
    }

    /// The approval request `approval_id`, if it is pending here.
    pub fn pending_approval(&self, approval_id: &str) -> Option<ApprovalRequest> {
        self.decisions.pending_approval(approval_id)
    }

    /// The owner of a pending approval, if one is pending here.
    pub fn approval_owner(&self, approval_id: &str) -> Option<String> {
        self.decisions.approval_owner(approval_id)
    }
}

/// Until the server shuts down: feeds the runtime's decision queue with the decisions recorded
/// in the store through other nodes (a browser on node A approving a run of node B), as soon
/// as the store notices them ([`steward_store::Change::Decision`]); a store without notices
/// (SQLite) is looked at every `poll` (the server's `notice_poll`) while approvals wait here
/// (see [`DecisionQueue::follow_store`]).
pub async fn follow_recorded_decisions(runtime: Arc<Runtime>, poll: Duration, shutdown: CancellationToken) {
    tokio::select! {
        _ = runtime.decisions.follow_store(runtime.store.as_ref(), poll) => {}
        _ = shutdown.cancelled() => {}
    }
}

/// Publishes a live run's events to its subscribers.
pub struct Broadcast(pub Arc<LiveRun>);

impl EventObserver for Broadcast {
    fn on_event(&self, event: &Event) {
        // No subscriber is fine: the store has every event. The frame is made outside the
        // lock, once for all subscribers.
        let sender = {
            let mut events = lock(&self.0.events);
            let Some(sender) = events.as_ref() else { return };
            if sender.receiver_count() == 0 {
                *events = None;
                return;
            }
            sender.clone()
        };
        let _ = sender.send(Arc::new(LiveEvent::new(event.clone())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_event_is_one_sse_frame_with_its_json_on_one_data_line() {
        let event = Event {
            run_id: "run_1".into(),
            seq: 7,
            at: chrono::Utc::now(),
            kind: steward_protocol::EventKind::StageChunk { stage: "planner".into(), text: "two\nlines".into() },
        };
        let live = LiveEvent::new(event.clone());
        let frame = std::str::from_utf8(&live.frame).unwrap();
        let json = serde_json::to_string(&event).unwrap();
        assert_eq!(frame, format!("id: 7\nevent: stage_chunk\ndata: {json}\n\n"));
        assert_eq!(frame.matches('\n').count(), 4, "the JSON holds no line break: {frame}");
    }
    use steward_core::SystemClock;
    use steward_core::{ApprovalAnswer, ApprovalScope};
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

    fn live(max_running: usize) -> (LiveRuns, Arc<DecisionQueue>) {
        let decisions = Arc::new(DecisionQueue::new(Arc::new(SystemClock)));
        (LiveRuns::new(max_running, decisions.clone()), decisions)
    }

    #[tokio::test]
    async fn only_the_owner_decides_and_only_once() {
        let (live, decisions) = live(2);
        let run = live.register("run_1", "web:a", CancellationToken::new());
        let mut waiting = decisions.open_approval(&request("apr_1", "web:a", 60), "tok");
        assert_eq!(run.pending_approvals().len(), 1);
        assert!(matches!(
            live.decide("apr_1", "web:b", Decision::Approve(ApprovalScope::Once), None),
            Err(DecideError::NotOwner)
        ));
        assert!(live.decide("apr_1", "web:a", Decision::Approve(ApprovalScope::Once), None).is_ok());
        assert_eq!(
            waiting.decided().await.answer,
            ApprovalAnswer::Approve {
                token: "tok".into(),
                decided_by: "web:a".into(),
                scope: ApprovalScope::Once,
                call_hash: steward_core::call_hash(&request("apr_1", "web:a", 60)),
            }
        );
        assert!(matches!(
            live.decide("apr_1", "web:a", Decision::Deny("x".into()), None),
            Err(DecideError::AlreadyDecided)
        ));
        assert!(run.pending_approvals().is_empty());
        drop(waiting);
        assert!(matches!(
            live.decide("apr_1", "web:a", Decision::Deny("x".into()), None),
            Err(DecideError::NotPending(_))
        ));
    }

    #[tokio::test]
    async fn an_expired_approval_cannot_be_decided() {
        let (live, decisions) = live(1);
        let _run = live.register("run_1", "web:a", CancellationToken::new());
        let _waiting = decisions.open_approval(&request("apr_2", "web:a", -1), "tok");
        assert!(matches!(
            live.decide("apr_2", "web:a", Decision::Approve(ApprovalScope::Once), None),
            Err(DecideError::Expired)
        ));
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
        let (live, decisions) = live(1);
        let run = live.register("run_1", "web:a", CancellationToken::new());
        let mut waiting = decisions.open_elicitation(&prompt("eli_1", "web:a", 60));
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
        assert_eq!(waiting.decided().await.answer, ElicitationReply::Accept { values, decided_by: "web:a".into() });
        assert_eq!(live.answer_elicitation("eli_1", "web:a", ElicitationAction::Cancel), Err(ElicitError::NotPending));
        assert!(run.pending_elicitations().is_empty());
        drop(waiting);

        let _late = decisions.open_elicitation(&prompt("eli_2", "web:a", -1));
        assert_eq!(run.pending_elicitations().len(), 1);
        assert_eq!(live.answer_elicitation("eli_2", "web:a", ElicitationAction::Decline), Err(ElicitError::Expired));
    }

    #[tokio::test]
    async fn the_queue_keeps_order_and_reports_positions() {
        let live = Arc::new(live(1).0);
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
        let live = live(1).0;
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
        let frame = std::str::from_utf8(&got.frame).unwrap();
        let json = frame.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
        assert_eq!(serde_json::from_str::<Event>(json).unwrap(), got.event);
        drop(rx);
        observer.on_event(&event(3));
        assert!(lock(&run.events).is_none(), "the last subscriber left: the buffer is dropped");
        let mut again = run.subscribe();
        observer.on_event(&event(4));
        assert_eq!(again.try_recv().unwrap().event.seq, 4);
    }
}
