//! The JSON API and pages in-process (tower `oneshot`) and the event stream over a real
//! socket: owners and CSRF, approvals decided by the owner only, expiry, cancel, the queue,
//! memory, and escaping.

use crate::common;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::*;
use serde_json::json;
use tower::ServiceExt;

#[tokio::test]
async fn state_changes_need_the_csrf_token_and_same_origin() {
    let s = server(EDIT).await;
    let a = s.browser().await;
    let no_token = Request::post("/api/runs")
        .header(header::COOKIE, &a.cookie)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(json!({"task": "x"}).to_string()))
        .unwrap();
    let response = s.app.clone().oneshot(no_token).await.unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(body_text(response).await.contains("\"csrf\""));
    let b = s.browser().await;
    let (status, body) = s
        .call(
            &Client { cookie: a.cookie.clone(), csrf: b.csrf.clone() },
            "POST",
            "/api/runs",
            Some(json!({"task": "x"})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["class"].as_str()),
        (StatusCode::FORBIDDEN, Some("csrf")),
        "another owner's token"
    );
    let cross = Request::post("/api/runs")
        .header(header::COOKIE, &a.cookie)
        .header("x-csrf-token", &a.csrf)
        .header(header::HOST, "127.0.0.1:7878")
        .header(header::ORIGIN, "http://evil.example")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(json!({"task": "x"}).to_string()))
        .unwrap();
    assert_eq!(s.app.clone().oneshot(cross).await.unwrap().status(), StatusCode::FORBIDDEN);
    // A forged cookie is not an owner: the request gets a fresh one.
    let forged = Client { cookie: "steward_owner=local:alice".into(), csrf: a.csrf.clone() };
    let (status, _) = s.call(&forged, "GET", "/api/runs", None).await;
    assert_eq!(status, StatusCode::OK);
    let request = Request::get("/").header(header::COOKIE, "steward_owner=local:alice").body(Body::empty()).unwrap();
    let response = s.app.clone().oneshot(request).await.unwrap();
    assert!(set_cookie(&response).is_some(), "an unsigned cookie is replaced");
    assert!(!body_text(response).await.contains("local:alice"));
}

#[tokio::test]
async fn the_login_link_makes_a_browser_the_local_owner_once() {
    let s = server(EDIT).await;
    let request = Request::get(format!("/login?token={}", s.login)).body(Body::empty()).unwrap();
    let response = s.app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let cookie = response
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .find(|c| c.contains("local%3Aalice") || c.contains("local:alice"))
        .expect("cookie naming the local owner");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    let owner_cookies = response.headers().get_all(header::SET_COOKIE).iter().count();
    assert_eq!(owner_cookies, 1, "a browser without a cookie is not also given a random owner");
    let client = Client { cookie: cookie.split(';').next().unwrap().to_string(), csrf: String::new() };
    let (_, html) = s.page(&client, "/").await;
    assert!(html.contains("<code id=\"owner\">local:alice</code>"), "{html}");
    let again = Request::get(format!("/login?token={}", s.login)).body(Body::empty()).unwrap();
    assert_eq!(s.app.clone().oneshot(again).await.unwrap().status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn only_the_owner_sees_cancels_and_decides_and_approval_runs_the_call() {
    let s = server(EDIT).await;
    let alice = s.browser().await;
    let mallory = s.browser().await;
    let run = s.start(&alice, "change the note").await;
    let approval = s.pending_approval(&alice, &run).await;

    let (status, body) = s.call(&mallory, "GET", &format!("/api/runs/{run}"), None).await;
    assert_eq!((status, body["error"]["class"].as_str()), (StatusCode::FORBIDDEN, Some("not_owner")));
    let (status, html) = s.page(&mallory, &format!("/runs/{run}")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(html.contains("not_owner"));
    for (method, path, body) in [
        ("POST", format!("/api/approvals/{approval}"), Some(json!({"decision": "approve"}))),
        ("POST", format!("/api/approvals/{approval}"), Some(json!({"decision": "deny"}))),
        ("POST", format!("/api/runs/{run}/cancel"), None),
    ] {
        let (status, body) = s.call(&mallory, method, &path, body).await;
        assert_eq!((status, body["error"]["class"].as_str()), (StatusCode::FORBIDDEN, Some("not_owner")), "{path}");
    }
    let (_, listed) = s.call(&mallory, "GET", "/api/runs", None).await;
    assert_eq!(listed["runs"].as_array().unwrap().len(), 0, "another owner's runs are not listed");

    // The run page shows the full arguments, the diff and a countdown.
    let (status, html) = s.page(&alice, &format!("/runs/{run}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(&format!("data-approval-id=\"{approval}\"")));
    assert!(html.contains("class=\"countdown\""));
    // The countdown reads as minutes and seconds (`29:59 left`), not a count of seconds.
    let shown = html.split("class=\"countdown\" aria-live=\"off\">").nth(1).unwrap_or_default();
    let time = shown.split('<').next().unwrap_or_default();
    assert!(time.len() == 5 && time.as_bytes()[2] == b':' && shown.contains("</span> left"), "{shown:.80}");
    assert!(!html.contains(" s left"), "{html}");
    assert!(html.contains("-old") && html.contains("+new"), "diff preview shown");

    let (status, body) =
        s.call(&alice, "POST", &format!("/api/approvals/{approval}"), Some(json!({"decision": "approve"}))).await;
    assert_eq!((status, body["status"].as_str()), (StatusCode::OK, Some("approved")), "{body}");
    let done = s.wait_status(&alice, &run, "completed").await;
    assert_eq!(std::fs::read_to_string(s.ws.join("note.txt")).unwrap(), "new\n");
    let names: Vec<&str> = done["events"].as_array().unwrap().iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert!(names.contains(&"tool_approved") && names.contains(&"tool_completed"), "{names:?}");
    // A decided approval shows no countdown any more.
    let (_, html) = s.page(&alice, &format!("/runs/{run}")).await;
    assert!(html.contains(&format!("data-approval-id=\"{approval}\"")), "{html}");
    assert!(!html.contains("class=\"countdown\""), "{html}");
    let (status, body) =
        s.call(&alice, "POST", &format!("/api/approvals/{approval}"), Some(json!({"decision": "approve"}))).await;
    assert_eq!((status, body["error"]["class"].as_str()), (StatusCode::CONFLICT, Some("not_pending")));
    let (status, body) = s.call(&alice, "POST", &format!("/api/runs/{run}/cancel"), None).await;
    assert_eq!((status, body["error"]["class"].as_str()), (StatusCode::CONFLICT, Some("not_pending")));
}

#[tokio::test]
async fn a_denied_call_never_runs_and_the_model_is_told() {
    let s = server(EDIT).await;
    let alice = s.browser().await;
    let run = s.start(&alice, "change the note").await;
    let approval = s.pending_approval(&alice, &run).await;
    let (status, _) = s
        .call(
            &alice,
            "POST",
            &format!("/api/approvals/{approval}"),
            Some(json!({"decision": "deny", "reason": "not now"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let done = s.wait_status(&alice, &run, "completed").await;
    assert_eq!(std::fs::read_to_string(s.ws.join("note.txt")).unwrap(), "old\n");
    assert!(done["events"].as_array().unwrap().iter().any(|e| e["event"] == "tool_rejected"));
    assert_eq!(done["approvals"][0]["status"], "denied");
}

#[tokio::test]
async fn an_expired_approval_cannot_be_approved() {
    let s = server_with(EDIT, Some(1), 4).await;
    let alice = s.browser().await;
    let run = s.start(&alice, "change the note").await;
    let approval = s.pending_approval(&alice, &run).await;
    let done = s.wait_status(&alice, &run, "completed").await;
    assert_eq!(done["approvals"][0]["status"], "expired");
    let (status, body) =
        s.call(&alice, "POST", &format!("/api/approvals/{approval}"), Some(json!({"decision": "approve"}))).await;
    assert_eq!((status, body["error"]["class"].as_str()), (StatusCode::CONFLICT, Some("expired")));
    assert_eq!(std::fs::read_to_string(s.ws.join("note.txt")).unwrap(), "old\n");
}

#[tokio::test]
async fn runs_beyond_the_limit_queue_and_cancel_reaches_queued_and_waiting_runs() {
    let s = server_with(EDIT, None, 1).await;
    let alice = s.browser().await;
    let first = s.start(&alice, "first").await;
    s.pending_approval(&alice, &first).await;
    let (status, body) = s.call(&alice, "POST", "/api/runs", Some(json!({"task": "second"}))).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!((body["status"].as_str(), body["queue_position"].as_u64()), (Some("queued"), Some(1)));
    let second = body["id"].as_str().unwrap().to_string();
    let (_, view) = s.call(&alice, "GET", &format!("/api/runs/{second}"), None).await;
    assert_eq!(view["run"]["status"], "queued");
    assert_eq!(view["run"]["task"], "second", "a queued run shows its task");
    let (_, listed) = s.call(&alice, "GET", "/api/runs", None).await;
    assert_eq!(listed["runs"][0]["id"], second.as_str(), "queued runs are listed first: {listed}");
    assert_eq!(listed["runs"][0]["status"], "queued");

    let (status, _) = s.call(&alice, "POST", &format!("/api/runs/{second}/cancel"), None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    s.wait_status(&alice, &second, "cancelled").await;
    let (status, _) = s.call(&alice, "POST", &format!("/api/runs/{first}/cancel"), None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let done = s.wait_status(&alice, &first, "cancelled").await;
    assert_eq!(done["approvals"][0]["status"], "expired", "cancelling expires the pending approval");
    assert_eq!(std::fs::read_to_string(s.ws.join("note.txt")).unwrap(), "old\n");
}

#[tokio::test]
async fn bad_starts_are_refused_with_reasons() {
    let s = server(EDIT).await;
    let alice = s.browser().await;
    for (body, needle) in [
        (json!({"task": "  "}), "empty"),
        (json!({"task": "x", "mode": "swarm"}), "unknown mode"),
        (json!({"task": "x", "workspace": "/"}), "not one this server serves"),
        (json!({"task": "x", "workspace": "/no/such/dir"}), "/no/such/dir"),
    ] {
        let (status, answer) = s.call(&alice, "POST", "/api/runs", Some(body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(answer["error"]["message"].as_str().unwrap().contains(needle), "{answer}");
    }
    let exact = s.ws.display().to_string();
    let (status, _) = s.call(&alice, "POST", "/api/runs", Some(json!({"task": "x", "workspace": exact}))).await;
    assert_eq!(status, StatusCode::CREATED, "a served workspace by its path");
    // A folder inside a served workspace would escape the rules of the repository it is in.
    for inside in [".git", ".steward", "sub"] {
        std::fs::create_dir_all(s.ws.join(inside)).unwrap();
        let path = s.ws.join(inside).display().to_string();
        let (status, answer) = s.call(&alice, "POST", "/api/runs", Some(json!({"task": "x", "workspace": path}))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{inside}: {answer}");
    }
    // The same answer whether the path exists or not.
    let (_, missing) =
        s.call(&alice, "POST", "/api/runs", Some(json!({"task": "x", "workspace": "/no/such/dir"}))).await;
    let (_, file) = s.call(&alice, "POST", "/api/runs", Some(json!({"task": "x", "workspace": "/etc/hostname"}))).await;
    assert!(missing["error"]["message"].as_str().unwrap().contains("is not one this server serves"));
    assert!(file["error"]["message"].as_str().unwrap().contains("is not one this server serves"));
}

#[tokio::test]
async fn text_from_runs_is_escaped_in_pages() {
    let s = server("[[round]]\ntext = \"<img src=x onerror=alert(1)>\"\n").await;
    let alice = s.browser().await;
    let run = s.start(&alice, "<script>alert('task')</script>").await;
    s.wait_status(&alice, &run, "completed").await;
    let (_, html) = s.page(&alice, &format!("/runs/{run}")).await;
    assert!(!html.contains("<script>alert") && html.contains("&lt;script&gt;"), "task escaped");
    assert!(!html.contains("<img src=x") && html.contains("&lt;img"), "model text escaped");
    let (_, index) = s.page(&alice, "/").await;
    assert!(!index.contains("<script>alert"));
}

#[tokio::test]
async fn memory_is_per_owner() {
    let s = server(EDIT).await;
    let alice = s.browser().await;
    let bob = s.browser().await;
    let (status, fact) = s.call(&alice, "POST", "/api/memory", Some(json!({"text": "the build uses cargo"}))).await;
    assert_eq!(status, StatusCode::CREATED, "{fact}");
    let id = fact["id"].as_str().unwrap().to_string();
    let (_, listed) = s.call(&bob, "GET", "/api/memory", None).await;
    assert_eq!(listed["facts"].as_array().unwrap().len(), 0);
    let (status, _) = s.call(&bob, "DELETE", &format!("/api/memory/{id}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = s.call(&alice, "POST", "/api/memory", Some(json!({"text": "x".repeat(301)}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _) = s.call(&alice, "DELETE", &format!("/api/memory/{id}"), None).await;
    assert_eq!(status, StatusCode::OK);
    let (_, listed) = s.call(&alice, "GET", "/api/memory", None).await;
    assert_eq!(listed["facts"].as_array().unwrap().len(), 0);
}

/// Reads an SSE body until `until` returns true; returns the `(id, event)` pairs seen.
async fn read_sse(response: reqwest::Response, until: impl Fn(&str) -> bool) -> Vec<(u64, String)> {
    use futures::StreamExt;
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while let Ok(Some(chunk)) = tokio::time::timeout_at(deadline, stream.next()).await {
        buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let id = block.lines().find_map(|l| l.strip_prefix("id:")).map(|v| v.trim().parse().unwrap());
            let name = block.lines().find_map(|l| l.strip_prefix("event:")).map(|v| v.trim().to_string());
            if let (Some(id), Some(name)) = (id, name) {
                let stop = until(&name);
                seen.push((id, name));
                if stop {
                    return seen;
                }
            }
        }
    }
    seen
}

#[tokio::test]
async fn the_event_stream_is_live_and_resumes_after_last_event_id() {
    let s = server(EDIT).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    let served = tokio::spawn(steward_server::serve(s.state.clone(), listener, stop.clone()));
    let alice = s.browser().await;
    let run = s.start(&alice, "change the note").await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let url = format!("http://{addr}/api/runs/{run}/events");
    let response = http.get(&url).header(header::COOKIE, &alice.cookie).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()[header::CONTENT_TYPE].to_str().unwrap().starts_with("text/event-stream"));
    // Live: the approval request arrives while the run waits on it; approve it meanwhile.
    let approval = s.pending_approval(&alice, &run).await;
    let (status, _) =
        s.call(&alice, "POST", &format!("/api/approvals/{approval}"), Some(json!({"decision": "approve"}))).await;
    assert_eq!(status, StatusCode::OK);
    let all = read_sse(response, |name| name == "run_completed").await;
    let ids: Vec<u64> = all.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>(), "every event once, in order");
    assert!(all.iter().any(|(_, n)| n == "tool_approval_required"));
    assert_eq!(all.last().unwrap().1, "run_completed");

    let resumed =
        http.get(&url).header(header::COOKIE, &alice.cookie).header("Last-Event-ID", "3").send().await.unwrap();
    let rest = read_sse(resumed, |name| name == "run_completed").await;
    assert_eq!(rest.first().map(|(id, _)| *id), Some(4), "resumes after Last-Event-ID");
    assert_eq!(rest.len(), all.len() - 3);

    let mallory = s.browser().await;
    let denied = http.get(&url).header(header::COOKIE, &mallory.cookie).send().await.unwrap();
    assert_eq!(denied.status(), 403);
    stop.cancel();
    served.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_form_post_with_origin_null_still_needs_its_csrf_field() {
    let s = server("[[round]]\ntext = \"done\"\n").await;
    let a = s.browser().await;
    let form = |csrf: &str| {
        Request::post("/runs")
            .header(header::COOKIE, &a.cookie)
            .header(header::ORIGIN, "null")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(format!("csrf={csrf}&task=hello&workspace=&mode=loop")))
            .unwrap()
    };
    let response = s.app.clone().oneshot(form(&a.csrf)).await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let response = s.app.clone().oneshot(form("0000")).await.unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let html = body_text(response).await;
    assert!(html.contains("<div id=\"error\" role=\"alert\">csrf:"), "a refused form gets a page: {html}");
    let json = Request::post("/api/runs")
        .header(header::COOKIE, &a.cookie)
        .header("x-csrf-token", &a.csrf)
        .header(header::ORIGIN, "null")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(json!({"task": "x"}).to_string()))
        .unwrap();
    assert_eq!(s.app.clone().oneshot(json).await.unwrap().status(), StatusCode::FORBIDDEN);
}

/// The owner id a page says the browser is signed in as.
fn owner_of(html: &str) -> String {
    let at = html.find("<code id=\"owner\">").unwrap() + "<code id=\"owner\">".len();
    html[at..].split('<').next().unwrap().to_string()
}

#[tokio::test]
async fn generated_tools_are_shown_with_versions_source_and_history_to_their_owner_only() {
    let s = server(EDIT).await;
    let alice = s.browser().await;
    let bob = s.browser().await;
    let (_, home) = s.page(&alice, "/").await;
    let owner = owner_of(&home);
    let store = s.state.runtime.store.clone();
    let registry = store.generated_registry().expect("the SQLite store keeps generated tools");
    let source = "function run(input) { return \"</code><script>alert('src')</script>\" + (input.c + 273.15); }";
    let record = |version: u32, source: &str| steward_store::GeneratedToolRecord {
        owner_id: owner.clone(),
        name: "celsius_to_kelvin".into(),
        version,
        description: "Converts <b>Celsius</b> to Kelvin".into(),
        input_schema: json!({"type": "object", "properties": {"c": {"type": "number"}}}),
        source: source.into(),
        source_hash: format!("{:064x}", version),
        approved_by: Some(owner.clone()),
        approval_id: Some(format!("apr_{version}")),
        run_id: "run_gen".into(),
        created_at: chrono::Utc::now(),
        removed_at: None,
        removed_by: None,
    };
    registry.insert_generated_tool(&record(1, "function run(input) { return input.c + 273; }")).await.unwrap();
    registry.insert_generated_tool(&record(2, source)).await.unwrap();
    let audit = |outcome, detail: &str| steward_protocol::AuditEntry {
        agent: "steward".into(),
        run_id: "run_gen".into(),
        call_id: "c1".into(),
        action: "celsius_to_kelvin".into(),
        input: json!({"c": 20}),
        policy: "generated_tool".into(),
        risk: 0.5,
        outcome,
        latency_ms: 0,
        sandbox: String::new(),
        approval_id: String::new(),
        rollback_token: String::new(),
        detail: detail.into(),
    };
    let failed = "celsius_to_kelvin@v2 attempt 1: static check: <img src=x onerror=alert(1)> uses require";
    store.append_audit(audit(steward_protocol::AuditOutcome::Failed, failed)).await.unwrap();
    let approved = "registered celsius_to_kelvin@v2 (source sha256 2), approved by the owner";
    store.append_audit(audit(steward_protocol::AuditOutcome::Approved, approved)).await.unwrap();

    // The list: both versions, which one is offered, who approved each.
    let (status, tools) = s.page(&alice, "/tools").await;
    assert_eq!(status, StatusCode::OK);
    for want in
        ["data-generated=\"celsius_to_kelvin@v1\"", "data-generated=\"celsius_to_kelvin@v2\"", "offered", "older"]
    {
        assert!(tools.contains(want), "{want}\n{tools}");
    }
    assert_eq!(tools.matches(&format!("<code>{owner}</code>")).count(), 2, "approver of each version\n{tools}");
    // One tool: the full source escaped, the hash, the approver, the history.
    let (status, page) = s.page(&alice, "/tools/generated/celsius_to_kelvin").await;
    assert_eq!(status, StatusCode::OK);
    assert!(!page.contains("<script>alert") && page.contains("&lt;script&gt;alert("), "source escaped\n{page}");
    assert!(!page.contains("</code><script>"), "{page}");
    assert!(page.contains("input.c + 273.15") && page.contains("return input.c + 273;"), "every version's source");
    assert!(!page.contains("<b>Celsius") && page.contains("&lt;b&gt;Celsius"), "description escaped");
    assert!(page.contains(&format!("{:064x}", 2)) && page.contains("apr_2"), "{page}");
    assert!(!page.contains("<img src=x") && page.contains("rejected") && page.contains("approved and registered"));
    assert!(page.find("rejected").unwrap() < page.find("approved and registered").unwrap(), "oldest first");

    // Another owner sees none of it and cannot remove it.
    let (_, theirs) = s.page(&bob, "/tools").await;
    assert!(!theirs.contains("celsius_to_kelvin") && theirs.contains("id=\"no-generated-tools\""));
    let (status, _) = s.page(&bob, "/tools/generated/celsius_to_kelvin").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) =
        s.post_form(&bob, "/tools/generated/celsius_to_kelvin/remove", &format!("csrf={}", bob.csrf)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = s.post_form(&alice, "/tools/generated/celsius_to_kelvin/remove", "csrf=wrong").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(registry.generated_tools(&owner).await.unwrap().iter().all(|r| r.removed_at.is_none()));

    // The owner removes v2: v1 is offered again, the removal is in the history and audited.
    let form = format!("csrf={}&version=2", alice.csrf);
    let (status, _, location) = s.post_form(&alice, "/tools/generated/celsius_to_kelvin/remove", &form).await;
    assert_eq!((status, location.as_deref()), (StatusCode::SEE_OTHER, Some("/tools/generated/celsius_to_kelvin")));
    let (_, page) = s.page(&alice, "/tools/generated/celsius_to_kelvin").await;
    assert!(page.contains("are offered <code>celsius_to_kelvin@v1</code>"), "{page}");
    assert!(page.contains(&format!("{owner} removed celsius_to_kelvin@v2")), "{page}");
    let removal =
        store.audit_records(None).await.unwrap().into_iter().find(|r| r.entry.action == "generated_tool_remove");
    assert_eq!(removal.map(|r| r.entry.agent), Some(owner.clone()));
    let (status, _, _) = s.post_form(&alice, "/tools/generated/celsius_to_kelvin/remove", &form).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "nothing left to remove of v2");
}
