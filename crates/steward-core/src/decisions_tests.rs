//! The decision queue on its own: first decision wins, owner only, expiry by the runtime's
//! clock, waking without polling, and decisions recorded in the store by another process.

use std::sync::Arc;
use steward_store::ApprovalStore;

use steward_protocol::ApprovalStatus;
use steward_store::SqliteStore;

use super::*;
use crate::clock::ManualClock;

fn start() -> Timestamp {
    chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap().to_utc()
}

fn request(id: &str) -> ApprovalRequest {
    ApprovalRequest {
        id: id.into(),
        run_id: "run_1".into(),
        owner_id: "web:a".into(),
        call_id: "call_1".into(),
        tool: "edit".into(),
        arguments: serde_json::json!({"path": "a.txt"}),
        reason: "writes ask".into(),
        rule: "default:medium".into(),
        risk: 0.5,
        preview: String::new(),
        created_at: start(),
        expires_at: start() + chrono::Duration::seconds(60),
        status: ApprovalStatus::Pending,
    }
}

fn queue() -> (DecisionQueue, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(start()));
    (DecisionQueue::new(clock.clone()), clock)
}

fn approved_by(who: &str, token: &str, scope: ApprovalScope) -> ApprovalAnswer {
    let call_hash = super::call_hash(&request("any"));
    ApprovalAnswer::Approve { token: token.into(), decided_by: who.into(), scope, call_hash }
}

#[tokio::test]
async fn the_first_decision_wins_and_later_ones_are_refused_as_already_decided() {
    let (queue, _) = queue();
    let mut waiting = queue.open_approval(&request("apr_1"), "tok");
    assert_eq!(queue.pending_approvals("run_1").len(), 1);
    queue.decide("apr_1", "web:a", Verdict::Approve(ApprovalScope::Run, None), Via::Here).unwrap();
    assert_eq!(
        queue.decide("apr_1", "web:a", Verdict::Deny("no".into()), Via::Here),
        Err(SubmitError::AlreadyDecided("apr_1".into()))
    );
    let late = ApprovalAnswer::Reject { reason: "no".into(), decided_by: "web:a".into() };
    assert_eq!(queue.submit_approval("apr_1", late, Via::Store), Err(SubmitError::AlreadyDecided("apr_1".into())));
    // The decision presents the token the orchestrator signed, not one the front end held.
    let decided = waiting.decided().await;
    assert_eq!(decided, Decided { answer: approved_by("web:a", "tok", ApprovalScope::Run), via: Via::Here });
    assert!(queue.pending_approvals("run_1").is_empty(), "a decided request is no longer listed");
    assert_eq!(queue.approval_owner("apr_1"), None);
    // Once the waiter has moved on, the request is gone.
    drop(waiting);
    assert_eq!(
        queue.decide("apr_1", "web:a", Verdict::Deny("no".into()), Via::Here),
        Err(SubmitError::NotPending("apr_1".into()))
    );
    assert_eq!(
        queue.decide("apr_never", "web:a", Verdict::Approve(ApprovalScope::Once, None), Via::Here),
        Err(SubmitError::NotPending("apr_never".into()))
    );
}

#[tokio::test]
async fn only_the_runs_owner_may_decide() {
    let (queue, _) = queue();
    let mut waiting = queue.open_approval(&request("apr_1"), "tok");
    assert_eq!(
        queue.decide("apr_1", "web:b", Verdict::Approve(ApprovalScope::Once, None), Via::Here),
        Err(SubmitError::NotOwner("apr_1".into()))
    );
    let forged = approved_by("web:b", "tok", ApprovalScope::Once);
    assert_eq!(queue.submit_approval("apr_1", forged, Via::Here), Err(SubmitError::NotOwner("apr_1".into())));
    assert_eq!(queue.approval_owner("apr_1").as_deref(), Some("web:a"), "still waiting for the owner");
    queue.decide("apr_1", "web:a", Verdict::Deny("not today".into()), Via::Here).unwrap();
    let answer = ApprovalAnswer::Reject { reason: "not today".into(), decided_by: "web:a".into() };
    assert_eq!(waiting.decided().await.answer, answer);
}

#[tokio::test]
async fn an_expired_request_refuses_late_decisions_by_the_runtimes_clock() {
    let (queue, clock) = queue();
    let _waiting = queue.open_approval(&request("apr_1"), "tok");
    clock.advance(chrono::Duration::seconds(59));
    assert!(queue.pending_approval("apr_1").is_some());
    clock.advance(chrono::Duration::seconds(1));
    assert_eq!(
        queue.decide("apr_1", "web:a", Verdict::Approve(ApprovalScope::Once, None), Via::Here),
        Err(SubmitError::Expired("apr_1".into()))
    );
    let own = approved_by("web:a", "tok", ApprovalScope::Once);
    assert_eq!(queue.submit_approval("apr_1", own, Via::Here), Err(SubmitError::Expired("apr_1".into())));
    assert!(queue.pending_approval("apr_1").is_some(), "nothing was decided");
}

/// Time is paused: a waiter that slept between looks would move it on. It does not move: the
/// waiter wakes on the submission itself.
#[tokio::test(start_paused = true)]
async fn a_waiter_wakes_on_the_submission_without_polling() {
    let (queue, _) = queue();
    let queue = Arc::new(queue);
    let began = tokio::time::Instant::now();
    let (opened, is_open) = tokio::sync::oneshot::channel();
    let waiter = {
        let queue = queue.clone();
        tokio::spawn(async move {
            let mut waiting = queue.open_approval(&request("apr_1"), "tok");
            let _ = opened.send(());
            waiting.decided().await
        })
    };
    is_open.await.unwrap();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!waiter.is_finished(), "nothing decided yet");
    queue.decide("apr_1", "web:a", Verdict::Approve(ApprovalScope::Once, None), Via::Store).unwrap();
    let decided = waiter.await.unwrap();
    assert_eq!(decided.via, Via::Store);
    assert_eq!(tokio::time::Instant::now(), began, "no timer ran while waiting");
}

#[tokio::test]
async fn the_approvers_own_answer_competes_with_the_queue() {
    let (queue, _) = queue();
    // Another front end decided first: the approver's later answer loses.
    let mut waiting = queue.open_approval(&request("apr_1"), "tok");
    queue.decide("apr_1", "web:a", Verdict::Deny("from the web".into()), Via::Store).unwrap();
    let own = async { approved_by("web:a", "tok", ApprovalScope::Once) };
    let got = waiting.first(own, |a| queue.submit_approval("apr_1", a, Via::Here)).await;
    assert_eq!(got, Some(ApprovalAnswer::Reject { reason: "from the web".into(), decided_by: "web:a".into() }));
    drop(waiting);

    // The approver answers first: its answer is the decision.
    let mut waiting = queue.open_approval(&request("apr_2"), "tok");
    let own = async { approved_by("web:a", "own-token", ApprovalScope::Once) };
    let got = waiting.first(own, |a| queue.submit_approval("apr_2", a, Via::Here)).await;
    assert_eq!(got, Some(approved_by("web:a", "own-token", ApprovalScope::Once)));
    assert!(matches!(
        queue.decide("apr_2", "web:a", Verdict::Deny("x".into()), Via::Here),
        Err(SubmitError::AlreadyDecided(_))
    ));
    drop(waiting);

    // An answer from someone else comes back as it is, for the orchestrator to refuse.
    let mut waiting = queue.open_approval(&request("apr_3"), "tok");
    let own = async { approved_by("web:b", "tok", ApprovalScope::Once) };
    let got = waiting.first(own, |a| queue.submit_approval("apr_3", a, Via::Here)).await;
    assert_eq!(got, Some(approved_by("web:b", "tok", ApprovalScope::Once)));
}

#[tokio::test]
async fn nobody_can_answer_here_needs_no_owner() {
    let (queue, _) = queue();
    let mut waiting = queue.open_approval(&request("apr_1"), "tok");
    let got =
        waiting.first(async { ApprovalAnswer::NoApprover }, |a| queue.submit_approval("apr_1", a, Via::Here)).await;
    assert_eq!(got, Some(ApprovalAnswer::NoApprover));
}

#[tokio::test]
async fn a_request_for_input_takes_only_the_owners_answer_with_values_that_fit() {
    let (queue, clock) = queue();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"n": {"type": "integer", "maximum": 9}},
        "required": ["n"]
    });
    let prompt = ElicitationPrompt {
        id: "eli_1".into(),
        run_id: "run_1".into(),
        owner_id: "web:a".into(),
        call_id: "call_1".into(),
        tool: "srv__ask".into(),
        server: "srv".into(),
        message: "how many?".into(),
        fields: steward_mcp::elicitation::form_fields(&schema, &[]).unwrap(),
        schema,
        created_at: start(),
        expires_at: start() + chrono::Duration::seconds(60),
    };
    let mut waiting = queue.open_elicitation(&prompt);
    assert_eq!(queue.pending_elicitations("run_1").len(), 1);
    let fill = |n: &str| {
        let inputs = vec![("n".to_string(), n.to_string())];
        move |p: &ElicitationPrompt| {
            p.answer(&inputs).map(|values| ElicitationReply::Accept { values, decided_by: "web:a".into() })
        }
    };
    assert_eq!(
        queue.answer_elicitation("eli_1", "web:b", Via::Here, fill("3")),
        Err(SubmitError::NotOwner("eli_1".into()))
    );
    assert!(matches!(queue.answer_elicitation("eli_1", "web:a", Via::Here, fill("10")), Err(SubmitError::Invalid(_))));
    queue.answer_elicitation("eli_1", "web:a", Via::Here, fill("3")).unwrap();
    let Decided { answer: ElicitationReply::Accept { values, .. }, .. } = waiting.decided().await else {
        panic!("accepted")
    };
    assert_eq!(values["n"], serde_json::json!(3));
    let decline = ElicitationReply::Decline { decided_by: "web:a".into() };
    assert_eq!(
        queue.submit_elicitation("eli_1", decline.clone(), Via::Here),
        Err(SubmitError::AlreadyDecided("eli_1".into()))
    );
    drop(waiting);

    let _waiting = queue.open_elicitation(&ElicitationPrompt { id: "eli_2".into(), ..prompt });
    clock.advance(chrono::Duration::seconds(60));
    assert_eq!(queue.submit_elicitation("eli_2", decline, Via::Here), Err(SubmitError::Expired("eli_2".into())));
}

/// A decision another process recorded in the store (here: without change notices, so the
/// follower looks while something waits) reaches the waiter with this process's token.
#[tokio::test]
async fn a_decision_recorded_in_the_store_by_another_process_reaches_the_waiter() {
    let queue = DecisionQueue::new(Arc::new(crate::clock::SystemClock));
    let store = SqliteStore::open_in_memory().await.unwrap();
    let mut request = request("apr_1");
    request.expires_at = chrono::Utc::now() + chrono::Duration::minutes(5);
    let follow = queue.follow_store(&store, Duration::from_millis(10));
    tokio::pin!(follow);
    let mut waiting = queue.open_approval(&request, "local-token");
    let record = ApprovalDecisionRecord {
        approval_id: "apr_1".into(),
        run_id: "run_1".into(),
        decided_by: "web:a".into(),
        approve: true,
        scope: "workspace".into(),
        reason: String::new(),
        created_at: chrono::Utc::now(),
        call_hash: super::call_hash(&request),
    };
    assert!(store.insert_approval_decision(&record).await.unwrap());
    let decided = tokio::select! {
        decided = waiting.decided() => decided,
        _ = &mut follow => panic!("the follower stopped"),
        _ = tokio::time::sleep(Duration::from_secs(10)) => panic!("the recorded decision never arrived"),
    };
    assert_eq!(
        decided,
        Decided { answer: approved_by("web:a", "local-token", ApprovalScope::Workspace), via: Via::Store }
    );
}

#[test]
fn a_recorded_denial_without_a_reason_says_who_denied() {
    let record = ApprovalDecisionRecord {
        approval_id: "apr_1".into(),
        run_id: "run_1".into(),
        decided_by: "web:a".into(),
        approve: false,
        scope: "once".into(),
        reason: String::new(),
        created_at: start(),
        call_hash: String::new(),
    };
    assert_eq!(Verdict::of_record(&record), Verdict::Deny("denied by the owner".into()));
}

/// A front end polled right after the run took a decision (as [`Waiting::first`] polls the
/// run's own approver) sees that decision, also when the submission has set it but not yet
/// woken anyone: the terminal prompt then says who decided instead of vanishing silently.
#[test]
fn a_front_end_polled_as_soon_as_a_decision_is_visible_sees_it() {
    use std::task::{Context, Waker};
    for round in 0..2000 {
        let (queue, _) = queue();
        let queue = Arc::new(queue);
        let waiting = queue.open_approval(&request("apr_1"), "tok");
        let seen_by_the_run = waiting.decided.clone();
        let mut front = Box::pin(queue.approval_decided("apr_1"));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(front.as_mut().poll(&mut cx).is_pending());
        let submitter = {
            let queue = queue.clone();
            std::thread::spawn(move || {
                queue.decide("apr_1", "web:a", Verdict::Approve(ApprovalScope::Once, None), Via::Store)
            })
        };
        while seen_by_the_run.borrow().is_none() {
            std::hint::spin_loop();
        }
        let polled = front.as_mut().poll(&mut cx);
        assert!(matches!(&polled, std::task::Poll::Ready(Some(d)) if d.via == Via::Store), "round {round}: {polled:?}");
        submitter.join().unwrap().unwrap();
        drop(front);
        drop(waiting);
    }
}
