//! The JSON API and pages in-process (tower `oneshot`), beyond owners and approvals: both
//! planners and roles mode, conversations and their idle end, cleanup of finished runs,
//! requests refused by path, token, host or body type, the cap on open event streams, and
//! requests for input from a tool.

use crate::common;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::*;
use serde_json::{Value, json};
use steward_server::ServerOptions;
use tower::ServiceExt;

#[tokio::test]
async fn the_same_task_runs_with_both_planners_side_by_side() {
    let s =
        server("[[round]]\ntext = \"The model's answer.\"\nusage = { input_tokens = 7, output_tokens = 3 }\n").await;
    let a = s.browser().await;
    let request = Request::post("/compare")
        .header(header::COOKIE, &a.cookie)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!("csrf={}&task=list+files&workspace=&provider=&model=", a.csrf)))
        .unwrap();
    let response = s.app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let location = response.headers()[header::LOCATION].to_str().unwrap().to_string();
    assert!(location.starts_with("/compare?a=run_") && location.contains("&b=run_"), "{location}");
    let ids: Vec<String> = location.split(['=', '&']).filter(|p| p.starts_with("run_")).map(str::to_string).collect();
    for id in &ids {
        s.wait_status(&a, id, "completed").await;
    }
    let (status, html) = s.page(&a, &location).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("Classic planner") && html.contains("Model planner (fake&#x2f;fake)"), "{html}");
    assert!(html.contains("The model&#x27;s answer.") || html.contains("The model's answer."), "{html}");
    assert!(html.contains("<span class=\"tokens\">10</span>"), "model tokens counted: {html}");
    let mallory = s.browser().await;
    let (status, _) = s.page(&mallory, &location).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "another owner cannot see the comparison");
}

#[tokio::test]
async fn a_run_in_roles_mode_streams_every_role() {
    let s = server("[[round]]\ntext = \"Findings.\"\n").await;
    let a = s.browser().await;
    let (status, body) = s.call(&a, "POST", "/api/runs", Some(json!({"task": "explain", "mode": "roles"}))).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let run = body["id"].as_str().unwrap().to_string();
    let done = s.wait_status(&a, &run, "completed").await;
    let stages: Vec<&str> = done["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "stage_started")
        .map(|e| e["stage"].as_str().unwrap())
        .collect();
    for role in ["planner", "local_drafter", "cloud_drafter", "critic", "reviewer", "synthesizer"] {
        assert!(stages.contains(&role), "{role} in {stages:?}");
    }
    let (status, body) = s.call(&a, "POST", "/api/runs", Some(json!({"task": "x", "mode": "swarm"}))).await;
    assert_eq!((status, body["error"]["class"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid")));
}

#[tokio::test]
async fn a_conversation_gives_each_task_the_earlier_turns_and_runs_one_task_at_a_time() {
    let s = server(EDIT).await;
    let alice = s.browser().await;
    let (status, conversation) = s.call(&alice, "POST", "/api/conversations", Some(json!({}))).await;
    assert_eq!(status, StatusCode::CREATED, "{conversation}");
    let id = conversation["id"].as_str().unwrap().to_string();
    let messages = format!("/api/conversations/{id}/messages");

    let (status, sent) = s.call(&alice, "POST", &messages, Some(json!({"text": "change the note"}))).await;
    assert_eq!(status, StatusCode::CREATED, "{sent}");
    let first = sent["run_id"].as_str().unwrap().to_string();
    let approval = s.pending_approval(&alice, &first).await;
    // One task at a time: refused with a reason, nothing queued.
    let (status, busy) = s.call(&alice, "POST", &messages, Some(json!({"text": "and another thing"}))).await;
    assert_eq!((status, busy["error"]["class"].as_str()), (StatusCode::CONFLICT, Some("busy")), "{busy}");
    let form = Request::post(format!("/conversations/{id}/messages"))
        .header(header::COOKIE, &alice.cookie)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!("csrf={}&text=keep+this+text", alice.csrf)))
        .unwrap();
    let response = s.app.clone().oneshot(form).await.unwrap();
    assert_eq!(response.status(), StatusCode::CONFLICT);
    let page = body_text(response).await;
    assert!(page.contains(">keep this text</textarea>") && page.contains("busy:"), "the draft is kept: {page}");

    // An open page hears when the task ends.
    let events = Request::get(format!("/api/conversations/{id}/events"))
        .header(header::COOKIE, &alice.cookie)
        .body(Body::empty())
        .unwrap();
    let mut stream = s.app.clone().oneshot(events).await.unwrap().into_body().into_data_stream();
    s.call(&alice, "POST", &format!("/api/approvals/{approval}"), Some(json!({"decision": "approve"}))).await;
    s.wait_status(&alice, &first, "completed").await;
    let mut seen = String::new();
    let heard = tokio::time::timeout(Duration::from_secs(10), async {
        use futures::StreamExt;
        while let Some(Ok(chunk)) = stream.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("\"busy\":false") && seen.contains("\"status\":\"completed\"") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(heard, Ok(true), "the conversation stream reports the finished task: {seen}");
    drop(stream);
    // A memory command is answered without a run.
    let (status, sent) =
        s.call(&alice, "POST", &messages, Some(json!({"text": "remember that the note matters"}))).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!((sent["run_id"].as_str(), sent["reply"].as_str()), (Some(""), Some("Remembered: the note matters")));

    std::fs::write(s.ws.join("note.txt"), "old\n").unwrap();
    let (_, sent) = s.call(&alice, "POST", &messages, Some(json!({"text": "what did you change?"}))).await;
    let second = sent["run_id"].as_str().unwrap().to_string();
    s.pending_approval(&alice, &second).await;
    let requests = s.launcher.last.lock().unwrap().clone().unwrap().requests();
    let system = &requests[0].messages[0].content;
    assert!(system.contains("Earlier in this conversation"), "{system}");
    assert!(system.contains("1. Task: change the note\n   Answer: Finished."), "{system}");
    assert!(system.contains("2. Task: remember that the note matters\n   Answer: Remembered: the note matters"));
    assert!(system.contains("Remembered facts:\n1. the note matters"), "{system}");

    let (_, view) = s.call(&alice, "GET", &format!("/api/conversations/{id}"), None).await;
    assert_eq!(view["turns"].as_array().unwrap().len(), 3);
    assert_eq!(view["busy"], true);
    let mallory = s.browser().await;
    let (status, _) = s.call(&mallory, "POST", &messages, Some(json!({"text": "hi"}))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = s.call(&alice, "POST", &format!("/api/conversations/{id}/end"), None).await;
    assert_eq!(status, StatusCode::OK);
    s.wait_status(&alice, &second, "cancelled").await;
    let (status, ended) = s.call(&alice, "POST", &messages, Some(json!({"text": "hello?"}))).await;
    assert_eq!((status, ended["error"]["class"].as_str()), (StatusCode::CONFLICT, Some("ended")));
}

#[tokio::test]
async fn a_conversation_without_a_viewer_ends_after_the_idle_time() {
    let idle = Duration::from_millis(300);
    let s = server_opts(EDIT, None, ServerOptions { conversation_idle: idle, ..ServerOptions::default() }).await;
    let alice = s.browser().await;
    let (_, watched) = s.call(&alice, "POST", "/api/conversations", Some(json!({}))).await;
    let (_, unwatched) = s.call(&alice, "POST", "/api/conversations", Some(json!({}))).await;
    let watched = watched["id"].as_str().unwrap().to_string();
    let unwatched = unwatched["id"].as_str().unwrap().to_string();
    let viewer = steward_server::conversations::join(&s.state, &watched);
    tokio::time::sleep(idle * 3).await;
    let (_, view) = s.call(&alice, "GET", &format!("/api/conversations/{unwatched}"), None).await;
    assert_eq!(view["ended"], true, "nobody watched it");
    let (_, view) = s.call(&alice, "GET", &format!("/api/conversations/{watched}"), None).await;
    assert_eq!(view["ended"], false, "a viewer keeps it open");
    drop(viewer);
    tokio::time::sleep(idle * 3).await;
    let (_, view) = s.call(&alice, "GET", &format!("/api/conversations/{watched}"), None).await;
    assert_eq!(view["ended"], true, "it ends once the last viewer has been gone for the idle time");
}

#[tokio::test]
async fn cleanup_deletes_old_and_surplus_finished_runs_only() {
    let s =
        server_opts("[[round]]\ntext = \"done\"\n", None, ServerOptions { keep_runs: 2, ..ServerOptions::default() })
            .await;
    let alice = s.browser().await;
    let mut ids = Vec::new();
    for i in 0..4 {
        let id = s.start(&alice, &format!("task {i}")).await;
        s.wait_status(&alice, &id, "completed").await;
        ids.push(id);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut old = s.state.runtime.store.get_run(&ids[3]).await.unwrap().unwrap();
    old.created_at -= chrono::Duration::days(400);
    s.state.runtime.store.update_run(&old).await.unwrap();
    assert_eq!(steward_server::runs::cleanup(&s.state).await.unwrap(), 2);
    let kept: Vec<String> = s.state.runtime.store.list_runs(10).await.unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(kept.len(), 2);
    assert!(!kept.contains(&ids[3]), "the run older than the limit is gone");
    assert!(!kept.contains(&ids[0]), "the oldest beyond the count is gone");
    assert!(matches!(
        s.state.runtime.store.verify_audit().await.unwrap(),
        steward_store::AuditVerification::Valid { .. }
    ));
}

#[tokio::test]
async fn unknown_paths_are_404_not_a_token_demand() {
    let s = server(EDIT).await;
    let a = s.browser().await;
    for path in ["/favicon.png", "/nonexistent", "/api/nope", "/static/nope.css", "/mcpx"] {
        let request = Request::get(path).header(header::COOKIE, &a.cookie).body(Body::empty()).unwrap();
        assert_eq!(s.app.clone().oneshot(request).await.unwrap().status(), StatusCode::NOT_FOUND, "{path}");
    }
}

/// A bearer token sent to a route of the browser session is refused, never taken for a new
/// anonymous browser (no owner cookie); with a cookie too, the token is not ignored.
#[tokio::test]
async fn a_bearer_token_outside_mcp_and_the_ledger_is_refused() {
    let s = server(EDIT).await;
    let a = s.browser().await;
    for (path, cookie) in [("/api/runs", None), ("/api/runs", Some(&a.cookie)), ("/", None), ("/api/memory", None)] {
        let mut request = Request::get(path).header(header::AUTHORIZATION, format!("Bearer stw_{}", "0a".repeat(32)));
        if let Some(cookie) = cookie {
            request = request.header(header::COOKIE, cookie);
        }
        let response = s.app.clone().oneshot(request.body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path}");
        assert!(set_cookie(&response).is_none(), "{path}: no owner is made for a token");
        let body: Value = serde_json::from_str(&body_text(response).await).unwrap();
        assert_eq!(body["error"]["class"], "unauthorized", "{path}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("/mcp") && message.contains("/api/ledger"), "{message}");
    }
    // Another scheme (a proxy's basic auth) is no bearer token: the browser is served.
    let basic = Request::get("/api/runs")
        .header(header::COOKIE, &a.cookie)
        .header(header::AUTHORIZATION, "Basic dXNlcjpwdw==")
        .body(Body::empty())
        .unwrap();
    assert_eq!(s.app.clone().oneshot(basic).await.unwrap().status(), StatusCode::OK);
}

#[tokio::test]
async fn a_rebound_host_name_and_a_form_body_on_the_api_are_refused() {
    let s = server(EDIT).await;
    let a = s.browser().await;
    let rebound = Request::get("/").header(header::HOST, "rebind.attacker.example:7878").body(Body::empty()).unwrap();
    assert_eq!(s.app.clone().oneshot(rebound).await.unwrap().status(), StatusCode::MISDIRECTED_REQUEST);
    let local = Request::get("/").header(header::HOST, "localhost:7878").body(Body::empty()).unwrap();
    assert_eq!(s.app.clone().oneshot(local).await.unwrap().status(), StatusCode::OK);
    let run = s.start(&a, "change the note").await;
    s.pending_approval(&a, &run).await;
    // A form body with `Origin: null` and no token cannot cancel through the JSON API.
    let forged = Request::post(format!("/api/runs/{run}/cancel"))
        .header(header::COOKIE, &a.cookie)
        .header(header::ORIGIN, "null")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::empty())
        .unwrap();
    assert_eq!(s.app.clone().oneshot(forged).await.unwrap().status(), StatusCode::FORBIDDEN);
    let (_, view) = s.call(&a, "GET", &format!("/api/runs/{run}"), None).await;
    assert_eq!(view["run"]["status"], "running");
}

#[tokio::test]
async fn event_streams_are_capped_and_give_their_place_back() {
    use std::sync::atomic::Ordering;
    let s = server("[[round]]\ntext = \"done\"\n").await;
    let a = s.browser().await;
    let run = s.start(&a, "hello").await;
    s.wait_status(&a, &run, "completed").await;
    let open = |path: String| Request::get(path).header(header::COOKIE, &a.cookie).body(Body::empty()).unwrap();
    s.state.open_streams.store(steward_server::sse::MAX_OPEN_STREAMS, Ordering::SeqCst);
    for path in [format!("/api/runs/{run}/events"), "/api/memory/events".to_string()] {
        let response = s.app.clone().oneshot(open(path.clone())).await.unwrap();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS, "{path}");
    }
    assert_eq!(s.state.open_streams.load(Ordering::SeqCst), steward_server::sse::MAX_OPEN_STREAMS);
    s.state.open_streams.store(0, Ordering::SeqCst);
    let response = s.app.clone().oneshot(open(format!("/api/runs/{run}/events"))).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(s.state.open_streams.load(Ordering::SeqCst), 1);
    drop(response);
    assert_eq!(s.state.open_streams.load(Ordering::SeqCst), 0, "a closed stream gives its place back");
}

const ASK: &str = r#"
[[round]]
[[round.tool_call]]
id = "ask1"
name = "ask_owner"
arguments = {}
[[round]]
text = "Finished."
"#;

#[tokio::test]
async fn a_request_for_input_is_a_form_on_the_run_page_that_only_its_owner_answers() {
    let s = server(ASK).await;
    let alice = s.browser().await;
    let mallory = s.browser().await;
    let run = s.start(&alice, "ask me").await;
    let id = s.pending_elicitation(&run).await;

    // The run page shows the server's words as text (escaped, redacted) and the form,
    // pre-filled with the schema's defaults.
    let (status, html) = s.page(&alice, &format!("/runs/{run}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(&format!("action=\"/elicitations/{id}\"")), "{html}");
    assert!(
        html.contains("Who &lt;b&gt;are&lt;&#x2f;b&gt; you?") || html.contains("Who &lt;b&gt;are&lt;/b&gt; you?"),
        "{html}"
    );
    assert!(!html.contains("<b>are</b>") && !html.contains("abcdefghijklmnopqrstuvwxyz0123456789"), "{html}");
    assert!(html.contains("name=\"value.name\"") && html.contains("value=\"Ada\""), "{html}");
    assert!(html.contains("type=\"email\"") && html.contains("type=\"number\""), "{html}");
    assert!(html.contains("<option value=\"green\" selected>"), "{html}");
    assert!(html.contains("<option value=\"true\" selected>yes</option>"), "{html}");

    let accept = |csrf: &str, email: &str| {
        format!(
            "csrf={csrf}&run={run}&action=accept&value.name=Ada&value.email={email}&value.age=&value.color=red&value.agree=false"
        )
    };
    // Another owner: neither the page nor an answer.
    let (status, _) = s.page(&mallory, &format!("/runs/{run}")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, page, _) =
        s.post_form(&mallory, &format!("/elicitations/{id}"), &accept(&mallory.csrf, "m%40evil.example")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(page.contains("not_owner"), "{page}");
    // The owner needs her CSRF token.
    let (status, page, _) =
        s.post_form(&alice, &format!("/elicitations/{id}"), &accept("0000", "ada%40example.org")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(page.contains("csrf"), "{page}");
    // Values that do not fit are refused with the reason; the form keeps what was typed.
    let (status, page, _) = s.post_form(&alice, &format!("/elicitations/{id}"), &accept(&alice.csrf, "nope")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(page.contains("class=\"elicitation-error\"") && page.contains("`email`"), "{page}");
    assert!(page.contains("value=\"nope\""), "{page}");
    assert_eq!(s.pending_elicitation(&run).await, id, "still waiting");

    let (status, _, location) =
        s.post_form(&alice, &format!("/elicitations/{id}"), &accept(&alice.csrf, "ada%40example.org")).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location.as_deref(), Some(format!("/runs/{run}").as_str()));
    let done = s.wait_status(&alice, &run, "completed").await;
    let events = done["events"].as_array().unwrap();
    let output = events.iter().find(|e| e["event"] == "tool_completed").unwrap()["output"].as_str().unwrap();
    let sent: Value = serde_json::from_str(output.strip_prefix("accept ").unwrap()).unwrap();
    assert_eq!(sent, json!({"name": "Ada", "email": "ada@example.org", "age": 36, "color": "red", "agree": false}));
    let answered = events.iter().find(|e| e["event"] == "mcp_elicitation_answered").unwrap();
    assert_eq!(answered["action"], "accept");
    assert_eq!(answered["decided_by"], done["run"]["owner_id"], "{done}");
    assert!(answered["decided_by"].as_str().unwrap().starts_with("web:"));
    let (status, page, _) =
        s.post_form(&alice, &format!("/elicitations/{id}"), &accept(&alice.csrf, "a%40b.org")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "answered once: {page}");
    let audit = s.state.runtime.store.audit_records(Some(&run)).await.unwrap();
    let outcomes: Vec<&str> =
        audit.iter().filter(|r| r.entry.action == "mcp_elicitation").map(|r| r.entry.outcome.as_str()).collect();
    assert_eq!(outcomes, ["escalated", "approved"]);
    assert!(!serde_json::to_string(&audit).unwrap().contains("ada@example.org"), "values are not audited");
}

#[tokio::test]
async fn a_request_for_input_declined_or_left_to_expire() {
    let s = server(ASK).await;
    let alice = s.browser().await;
    let run = s.start(&alice, "ask me").await;
    let id = s.pending_elicitation(&run).await;
    let (status, _, _) = s
        .post_form(&alice, &format!("/elicitations/{id}"), &format!("csrf={}&run={run}&action=decline", alice.csrf))
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let done = s.wait_status(&alice, &run, "completed").await;
    let output = done["events"].as_array().unwrap().iter().find(|e| e["event"] == "tool_completed").unwrap();
    assert_eq!(output["output"], "decline");

    let s = server_with(ASK, Some(1), 4).await;
    let alice = s.browser().await;
    let run = s.start(&alice, "ask me").await;
    let id = s.pending_elicitation(&run).await;
    let done = s.wait_status(&alice, &run, "completed").await;
    let events = done["events"].as_array().unwrap();
    assert_eq!(events.iter().find(|e| e["event"] == "tool_completed").unwrap()["output"], "cancel");
    let answered = events.iter().find(|e| e["event"] == "mcp_elicitation_answered").unwrap();
    assert!(answered["reason"].as_str().unwrap().contains("expired"), "{answered}");
    let (status, _, _) = s
        .post_form(&alice, &format!("/elicitations/{id}"), &format!("csrf={}&run={run}&action=accept", alice.csrf))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "too late");
}
