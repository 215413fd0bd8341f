//! A ledger API in the test process, following the wire contract of `steward_ledger::wire`:
//! candidates pages, one-time claims, idempotent result reports. Knobs make it misbehave the
//! ways the hub must survive (a lost claim answer, a lost report acknowledgement, a revocation
//! between listing and claim, duplicated candidates).
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use steward_ledger::wire::*;

/// The bearer token the fake ledger accepts.
pub const TOKEN: &str = "hubtok_0123456789abcdef0123456789abcdef";

/// One approved request as the fake ledger keeps it.
#[derive(Debug, Clone)]
pub struct Entry {
    pub approval: WorkApproval,
    pub text: String,
    pub revoked: bool,
    /// `(authority id, attempt id)` once issued.
    pub authority: Option<(String, String)>,
    /// Every result report received, in order.
    pub reports: Vec<ResultReport>,
    /// How many times a report was recorded as the first (a completion).
    pub completions: u32,
}

/// Knobs and counters.
#[derive(Debug, Default)]
pub struct Ledger {
    pub entries: Vec<Entry>,
    /// Candidates per page (the hub's `limit` is ignored when set).
    pub page_size: Option<usize>,
    /// Every candidate is listed twice.
    pub duplicate_candidates: bool,
    /// Revoke every approval right after a listing was served.
    pub revoke_after_listing: bool,
    /// Process claims, then answer 502 (the answer is lost).
    pub lose_claim_answers: bool,
    /// Process the next N reports, then answer 502.
    pub lose_report_acks: u32,
    /// Wait this long before answering a claim.
    pub claim_delay: Option<std::time::Duration>,
    /// Answer the next N claims with 503 before looking at them.
    pub unavailable_claims: u32,
    /// Process the next N claims, then answer 503 (as a proxy in front of the ledger might).
    pub unavailable_after_claims: u32,
    /// Revoke an approval right after its authority was issued.
    pub revoke_after_issue: bool,
    /// Every claim's attempt id, in order.
    pub claim_attempts: Vec<String>,
    /// Answer the next N listings with 429 and `Retry-After: 1`.
    pub overloaded: u32,
    /// When each listing request arrived.
    pub listed_at: Vec<std::time::Instant>,
    /// Requests seen, by kind.
    pub listings: u32,
    pub claims: u32,
    pub report_posts: u32,
}

pub type Shared = Arc<Mutex<Ledger>>;

impl Ledger {
    /// Adds an approved request for PR `pr` of `repository` at `head_sha`; returns the approval id.
    pub fn approve(&mut self, repository: &str, pr: u64, head_sha: &str, text: &str) -> String {
        let n = self.entries.len() + 1;
        let now = chrono::Utc::now();
        let approval = WorkApproval {
            id: format!("wap_{n:016x}"),
            request_id: format!("wrq_{n:016x}"),
            revision: 1,
            epoch: 1,
            repository: repository.to_string(),
            pr_number: pr,
            head_sha: head_sha.to_string(),
            scope: WorkScope::Read,
            approved_by: "local:owner".into(),
            approved_at: now,
            expires_at: now + chrono::Duration::hours(1),
        };
        let id = approval.id.clone();
        self.entries.push(Entry {
            approval,
            text: text.to_string(),
            revoked: false,
            authority: None,
            reports: Vec::new(),
            completions: 0,
        });
        id
    }

    pub fn entry(&self, approval_id: &str) -> &Entry {
        self.entries.iter().find(|e| e.approval.id == approval_id).expect("known approval")
    }
}

fn authorized(headers: &HeaderMap) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"))
}

fn status(code: StatusCode) -> Response {
    (code, Json(serde_json::json!({"error": {"class": "x", "message": "x"}}))).into_response()
}

#[derive(serde::Deserialize)]
struct PageQuery {
    cursor: Option<String>,
    limit: Option<usize>,
}

async fn candidates(State(s): State<Shared>, headers: HeaderMap, Query(q): Query<PageQuery>) -> Response {
    if !authorized(&headers) {
        return status(StatusCode::UNAUTHORIZED);
    }
    let mut l = s.lock().unwrap();
    l.listings += 1;
    l.listed_at.push(std::time::Instant::now());
    if l.overloaded > 0 {
        l.overloaded -= 1;
        return (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "1")], "slow down").into_response();
    }
    let now = chrono::Utc::now();
    let mut all: Vec<Candidate> = l
        .entries
        .iter()
        .filter(|e| !e.revoked && e.authority.is_none() && e.approval.expires_at > now)
        .map(|e| Candidate { approval: e.approval.clone(), text: e.text.clone() })
        .collect();
    if l.duplicate_candidates {
        all = all.into_iter().flat_map(|c| [c.clone(), c]).collect();
    }
    let size = l.page_size.or(q.limit).unwrap_or(50).max(1);
    let start: usize = q.cursor.as_deref().and_then(|c| c.parse().ok()).unwrap_or(0);
    let items: Vec<Candidate> = all.iter().skip(start).take(size).cloned().collect();
    let next = start + items.len();
    let next_cursor = (next < all.len()).then(|| next.to_string());
    if next_cursor.is_none() && l.revoke_after_listing {
        for e in &mut l.entries {
            e.revoked = true;
        }
    }
    Json(CandidatePage { items, next_cursor }).into_response()
}

async fn claim(State(s): State<Shared>, headers: HeaderMap, Json(c): Json<ClaimRequest>) -> Response {
    if !authorized(&headers) {
        return status(StatusCode::UNAUTHORIZED);
    }
    let delay = s.lock().unwrap().claim_delay;
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    let mut l = s.lock().unwrap();
    l.claims += 1;
    l.claim_attempts.push(c.attempt_id.clone());
    if l.unavailable_claims > 0 {
        l.unavailable_claims -= 1;
        return status(StatusCode::SERVICE_UNAVAILABLE);
    }
    let lose = l.lose_claim_answers;
    let unavailable_after = l.unavailable_after_claims > 0;
    if unavailable_after {
        l.unavailable_after_claims -= 1;
    }
    let revoke_after_issue = l.revoke_after_issue;
    let Some(e) = l.entries.iter_mut().find(|e| e.approval.id == c.approval_id) else {
        return Json(ClaimResponse {
            outcome: AuthorityOutcome::Denied,
            authority_id: None,
            attempt_id: None,
            reason: Some("unknown_approval".into()),
        })
        .into_response();
    };
    let denied = |reason: &str| ClaimResponse {
        outcome: AuthorityOutcome::Denied,
        authority_id: None,
        attempt_id: None,
        reason: Some(reason.into()),
    };
    let answer = if e.revoked {
        denied("revoked")
    } else if e.approval.expires_at <= chrono::Utc::now() {
        denied("expired")
    } else if c.head_sha != e.approval.head_sha
        || c.revision != e.approval.revision
        || c.epoch != e.approval.epoch
        || c.request_id != e.approval.request_id
    {
        denied("head_mismatch")
    } else if let Some((ath, att)) = &e.authority {
        ClaimResponse {
            outcome: AuthorityOutcome::Spent,
            authority_id: Some(ath.clone()),
            attempt_id: Some(att.clone()),
            reason: Some("already_claimed".into()),
        }
    } else {
        let ath = format!("ath_{:016x}", rand_u64());
        e.authority = Some((ath.clone(), c.attempt_id.clone()));
        e.revoked = revoke_after_issue;
        ClaimResponse {
            outcome: AuthorityOutcome::Issued,
            authority_id: Some(ath),
            attempt_id: Some(c.attempt_id.clone()),
            reason: None,
        }
    };
    if lose {
        return status(StatusCode::BAD_GATEWAY);
    }
    if unavailable_after {
        return status(StatusCode::SERVICE_UNAVAILABLE);
    }
    Json(answer).into_response()
}

async fn result(
    State(s): State<Shared>,
    headers: HeaderMap,
    Path(ath): Path<String>,
    Json(r): Json<ResultReport>,
) -> Response {
    if !authorized(&headers) {
        return status(StatusCode::UNAUTHORIZED);
    }
    let mut l = s.lock().unwrap();
    l.report_posts += 1;
    let lose = if l.lose_report_acks > 0 {
        l.lose_report_acks -= 1;
        true
    } else {
        false
    };
    let Some(e) = l.entries.iter_mut().find(|e| e.authority.as_ref().is_some_and(|(a, _)| *a == ath)) else {
        return status(StatusCode::NOT_FOUND);
    };
    if e.authority.as_ref().is_some_and(|(_, att)| *att != r.attempt_id) {
        return status(StatusCode::CONFLICT);
    }
    let first = e.reports.is_empty();
    let outcome = e.reports.first().map_or(r.outcome, |f| f.outcome);
    if first {
        e.completions += 1;
    }
    e.reports.push(r.clone());
    if lose {
        return status(StatusCode::BAD_GATEWAY);
    }
    Json(ResultAck { attempt_id: r.attempt_id, first, outcome }).into_response()
}

fn rand_u64() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0x5eed);
    let n = N.fetch_add(1, Ordering::Relaxed);
    n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ std::process::id() as u64
}

/// Serves the fake ledger on 127.0.0.1 (a free port); returns its base URL and state.
pub async fn serve() -> (String, Shared) {
    let shared: Shared = Arc::new(Mutex::new(Ledger::default()));
    let app = axum::Router::new()
        .route("/api/ledger/candidates", get(candidates))
        .route("/api/ledger/claims", post(claim))
        .route("/api/ledger/authorities/{id}/result", post(result))
        .with_state(Arc::clone(&shared));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (format!("http://{addr}"), shared)
}

/// A git repository with `main` and PR 1 (`refs/pull/1/head`) whose head commit message is
/// `pr_body`. Returns the head SHA.
pub fn git_repo(dir: &std::path::Path, pr_body: &str) -> String {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .env_remove("GIT_DIR")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_WORK_TREE")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("README.md"), "demo\n").unwrap();
    git(&["add", "README.md"]);
    git(&["commit", "-q", "-m", "initial"]);
    std::fs::write(dir.join("feature.txt"), "a feature\n").unwrap();
    git(&["add", "feature.txt"]);
    git(&["commit", "-q", "-m", pr_body]);
    let head = git(&["rev-parse", "HEAD"]);
    git(&["update-ref", "refs/pull/1/head", &head]);
    git(&["reset", "-q", "--hard", "HEAD~1"]);
    head
}

/// Moves PR `pr`'s head to a new commit on top of the old one; returns the new SHA.
pub fn move_head(dir: &std::path::Path, pr: u64) -> String {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .env_remove("GIT_DIR")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_WORK_TREE")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let reference = format!("refs/pull/{pr}/head");
    let old = git(&["rev-parse", &reference]);
    let tree = git(&["rev-parse", &format!("{old}^{{tree}}")]);
    let new = git(&["commit-tree", &tree, "-p", &old, "-m", "force-pushed"]);
    git(&["update-ref", &reference, &new]);
    new
}
