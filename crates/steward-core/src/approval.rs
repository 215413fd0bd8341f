//! The human-in-the-loop gate (SPEC C4): approval requests bound to the run's owner, an
//! HMAC decision token, and expiry.
//!
//! The orchestrator creates an [`ApprovalRequest`], signs it with [`ApprovalKey::token`], opens
//! it in the runtime's [`DecisionQueue`] and hands both to the run's [`Approver`] (a terminal
//! prompt, an eval case, nobody); the first valid decision — the approver's answer, or one
//! submitted to the queue by the web UI or through the store — is the one judged. An approval only
//! counts when it comes back before `expires_at`, from the run's owner, carrying the token
//! that [`ApprovalKey::verify`] accepts for exactly this tool, arguments, approval id, call
//! id, owner and expiry.

use async_trait::async_trait;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use steward_protocol::ApprovalRequest;

pub use crate::decisions::{ApprovalAnswer, ApprovalScope, call_hash};
use crate::decisions::{DecisionQueue, Via, Waiting};
use crate::elicitation::{ElicitationPrompt, ElicitationReply};
use crate::interrupt::{Interrupt, Interruptible};

/// Longest approval or grant lifetime accepted, in seconds (larger settings are clamped).
pub(crate) const TEN_YEARS_S: u64 = 10 * 365 * 24 * 3600;

/// The reason recorded when nobody can answer an approval request here (no terminal, no UI).
pub(crate) const NO_APPROVER: &str = "no_approver";

/// Someone who can answer approval requests, and the questions an MCP server asks the run's
/// owner during a tool call.
#[async_trait]
pub trait Approver: Send + Sync {
    /// Asks about `request`; `token` is the decision token to present when approving. The
    /// answer is submitted to the runtime's [`DecisionQueue`] for the approver; the orchestrator
    /// drops this future at `expires_at`, or once another front end's decision came first.
    async fn ask(&self, request: &ApprovalRequest, token: &str) -> ApprovalAnswer;

    /// Shows an MCP server's request for input to the run's owner and returns the answer
    /// (accepted values come from [`ElicitationPrompt::answer`]). Submitted to the runtime's
    /// [`DecisionQueue`] like an approval's answer; the orchestrator drops this future at
    /// `expires_at`, or once another front end answered first. By default nobody can answer: the
    /// server gets `decline`.
    async fn elicit(&self, _prompt: &ElicitationPrompt) -> ElicitationReply {
        ElicitationReply::NoApprover
    }
}

/// An approver for runs nobody watches: every request is denied with `no_approver`.
pub struct NoApprover;

#[async_trait]
impl Approver for NoApprover {
    async fn ask(&self, _request: &ApprovalRequest, _token: &str) -> ApprovalAnswer {
        ApprovalAnswer::NoApprover
    }
}

/// An approver that shows nothing and answers nothing itself: the request waits in the
/// runtime's [`DecisionQueue`] for a front end elsewhere to decide — this server's web UI, or
/// another process through the store ([`DecisionQueue::follow_store`]) — until it expires.
/// MCP servers' requests for input wait the same way.
pub struct QueueApprover;

#[async_trait]
impl Approver for QueueApprover {
    async fn ask(&self, _request: &ApprovalRequest, _token: &str) -> ApprovalAnswer {
        std::future::pending().await
    }

    async fn elicit(&self, _prompt: &ElicitationPrompt) -> ElicitationReply {
        std::future::pending().await
    }
}

/// Waits for the first valid decision on `request` for at most `wait` (tokio time): the answer
/// of `approver` (submitted to `queue` on its behalf) or a decision another front end submits
/// to `queue` through `waiting` (opened with [`DecisionQueue::open_approval`]), whichever
/// comes first.
///
/// Returns `Ok(None)` when the request expired: proactively (nobody answered within `wait`)
/// or reactively (an answer arrived, but only after the deadline, or after `expires_at` by the
/// queue's clock). An answer from someone other than the owner is returned as it is (the
/// orchestrator records it as refused). `Err` when the run was cancelled or timed out
/// meanwhile.
pub async fn wait_for_answer(
    interrupt: &Interruptible,
    approver: &dyn Approver,
    queue: &DecisionQueue,
    waiting: &mut Waiting<'_, ApprovalAnswer>,
    request: &ApprovalRequest,
    token: &str,
    wait: std::time::Duration,
) -> Result<Option<ApprovalAnswer>, Interrupt> {
    let deadline = tokio::time::Instant::now() + wait;
    let own = approver.ask(request, token);
    let first = waiting.first(own, |answer| queue.submit_approval(&request.id, answer, Via::Here));
    match interrupt.run(tokio::time::timeout_at(deadline, first)).await? {
        Err(_) | Ok(None) => Ok(None),
        Ok(Some(_)) if tokio::time::Instant::now() >= deadline => Ok(None),
        Ok(Some(answer)) => Ok(Some(answer)),
    }
}

/// The first element of the array a decision token signs: names the set of bound fields, so a
/// token minted over another set can never verify.
const TOKEN_VERSION: &str = "steward-approval-v2";

/// The secret key for decision tokens (SPEC S4: from the environment or generated at first
/// start into `$STEWARD_HOME` with owner-only permissions; never in source).
#[derive(Clone)]
pub struct ApprovalKey(Vec<u8>);

impl std::fmt::Debug for ApprovalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApprovalKey([REDACTED])")
    }
}

impl ApprovalKey {
    /// A key from raw bytes (at least 16).
    pub fn new(bytes: Vec<u8>) -> Option<Self> {
        (bytes.len() >= 16).then_some(ApprovalKey(bytes))
    }

    /// A fresh random 32-byte key.
    pub fn generate() -> Self {
        ApprovalKey(rand::random::<[u8; 32]>().to_vec())
    }

    /// The key as lowercase hex, for storing.
    pub fn to_hex(&self) -> String {
        hex::encode(&self.0)
    }

    /// Decision token: lowercase hex HMAC-SHA256 over the JSON array
    /// `["steward-approval-v2", tool, arguments, approval id, call id, run id, owner id,
    /// expires_at (RFC 3339, microseconds)]`. Changing any one of these fields makes the token
    /// fail to verify. Tokens minted before the run id was bound (without the leading version
    /// tag) no longer verify: an approval pending across that upgrade fails closed (the call
    /// does not run).
    pub fn token(&self, request: &ApprovalRequest) -> String {
        hex::encode(self.mac(request).finalize().into_bytes())
    }

    /// True when `token` is the decision token of `request` (constant-time comparison).
    pub fn verify(&self, request: &ApprovalRequest, token: &str) -> bool {
        match hex::decode(token) {
            Ok(bytes) => self.mac(request).verify_slice(&bytes).is_ok(),
            Err(_) => false,
        }
    }

    fn mac(&self, request: &ApprovalRequest) -> Hmac<Sha256> {
        let bound = serde_json::json!([
            TOKEN_VERSION,
            request.tool,
            request.arguments,
            request.id,
            request.call_id,
            request.run_id,
            request.owner_id,
            request.expires_at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        ]);
        // HMAC accepts keys of any length, so this cannot fail.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        mac.update(bound.to_string().as_bytes());
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use steward_protocol::ApprovalStatus;

    fn request() -> ApprovalRequest {
        let now = chrono::Utc::now();
        ApprovalRequest {
            id: "apr_1".into(),
            run_id: "run_1".into(),
            owner_id: "local:alice".into(),
            call_id: "call_1".into(),
            tool: "edit".into(),
            arguments: serde_json::json!({"path": "a.txt", "old": "x", "new": "y"}),
            reason: "writes ask".into(),
            rule: "default:medium".into(),
            risk: 0.6,
            preview: String::new(),
            created_at: now,
            expires_at: now + chrono::Duration::minutes(30),
            status: ApprovalStatus::Pending,
        }
    }

    struct Slow(std::time::Duration);

    #[async_trait]
    impl Approver for Slow {
        async fn ask(&self, request: &ApprovalRequest, token: &str) -> ApprovalAnswer {
            tokio::time::sleep(self.0).await;
            ApprovalAnswer::Approve {
                token: token.to_string(),
                decided_by: "local:alice".into(),
                scope: ApprovalScope::Once,
                call_hash: call_hash(request),
            }
        }
    }

    /// Waits on a fresh queue (system clock) for `approver`'s answer to [`request`].
    async fn answer_of(
        interrupt: &Interruptible,
        approver: &dyn Approver,
        wait: std::time::Duration,
    ) -> Result<Option<ApprovalAnswer>, Interrupt> {
        let queue = DecisionQueue::new(std::sync::Arc::new(crate::clock::SystemClock));
        let request = request();
        let mut waiting = queue.open_approval(&request, "t");
        wait_for_answer(interrupt, approver, &queue, &mut waiting, &request, "t", wait).await
    }

    fn interruptible() -> Interruptible {
        Interruptible {
            cancel: tokio_util::sync::CancellationToken::new(),
            deadline: tokio::time::Instant::now() + std::time::Duration::from_secs(24 * 3600),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_in_time_counts() {
        let minute = std::time::Duration::from_secs(60);
        let got = answer_of(&interruptible(), &Slow(29 * minute), 30 * minute).await;
        assert!(matches!(got, Ok(Some(ApprovalAnswer::Approve { .. }))));
    }

    #[tokio::test(start_paused = true)]
    async fn nobody_answering_expires_at_the_deadline() {
        let minute = std::time::Duration::from_secs(60);
        let start = tokio::time::Instant::now();
        let got = answer_of(&interruptible(), &Slow(10 * 60 * minute), 30 * minute).await;
        assert_eq!(got, Ok(None));
        assert_eq!(start.elapsed(), 30 * minute);
    }

    #[tokio::test(start_paused = true)]
    async fn cancelling_the_run_ends_the_wait() {
        let minute = std::time::Duration::from_secs(60);
        let interrupt = interruptible();
        let cancel = interrupt.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(minute).await;
            cancel.cancel();
        });
        let got = answer_of(&interrupt, &Slow(10 * minute), 30 * minute).await;
        assert_eq!(got, Err(Interrupt::Cancelled));
    }

    #[test]
    fn the_call_hash_is_bound_to_the_tool_and_arguments_not_their_key_order() {
        let req = request();
        let same = ApprovalRequest {
            arguments: serde_json::json!({"new": "y", "old": "x", "path": "a.txt"}),
            id: "apr_other".into(),
            ..req.clone()
        };
        assert_eq!(call_hash(&req), call_hash(&same));
        let changed =
            ApprovalRequest { arguments: serde_json::json!({"path": "b.txt", "old": "x", "new": "y"}), ..req.clone() };
        assert_ne!(call_hash(&req), call_hash(&changed));
        let other_tool = ApprovalRequest { tool: "write".into(), ..req.clone() };
        assert_ne!(call_hash(&req), call_hash(&other_tool));
        assert_eq!(call_hash(&req).len(), 64);
    }

    #[test]
    fn token_is_bound_to_every_field() {
        let key = ApprovalKey::generate();
        let req = request();
        let token = key.token(&req);
        assert!(key.verify(&req, &token));
        type Change = fn(&mut ApprovalRequest);
        let changes: [(&str, Change); 9] = [
            ("tool", |r| r.tool = "write".into()),
            ("arguments", |r| r.arguments = serde_json::json!({"path": "b.txt", "old": "x", "new": "y"})),
            ("an argument's type", |r| r.arguments["new"] = serde_json::json!(["y"])),
            ("approval id", |r| r.id = "apr_2".into()),
            ("call id", |r| r.call_id = "call_2".into()),
            ("run id", |r| r.run_id = "run_2".into()),
            ("owner", |r| r.owner_id = "local:mallory".into()),
            ("expiry", |r| r.expires_at += chrono::Duration::seconds(1)),
            ("expiry by a microsecond", |r| r.expires_at += chrono::Duration::microseconds(1)),
        ];
        for (field, change) in changes {
            let mut other = req.clone();
            change(&mut other);
            assert_ne!(other, req, "{field}: the change changed nothing");
            assert!(!key.verify(&other, &token), "the token still verifies with another {field}");
            assert!(key.verify(&other, &key.token(&other)), "{field}: a token of the changed request verifies");
        }
        assert!(!ApprovalKey::generate().verify(&req, &token));
        assert!(!key.verify(&req, "not hex"));
    }

    /// A token over the fields bound before the run id and the version tag (a token minted by an
    /// older Steward) does not verify: a pending approval across the upgrade fails closed.
    #[test]
    fn a_token_over_the_earlier_field_set_does_not_verify() {
        let key = ApprovalKey::generate();
        let req = request();
        let earlier = serde_json::json!([
            req.tool,
            req.arguments,
            req.id,
            req.call_id,
            req.owner_id,
            req.expires_at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        ]);
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&key.0).unwrap();
        mac.update(earlier.to_string().as_bytes());
        let old_token = hex::encode(mac.finalize().into_bytes());
        assert!(!key.verify(&req, &old_token));
        assert_ne!(old_token, key.token(&req));
    }
}
