//! Strict intake over real HTTP on loopback: a misbehaving ledger (an axum server in this
//! test) sends an oversized body, a redirect, unknown fields, the hub's own credential and 429
//! with `Retry-After`; the client refuses each with its fixed code and never the server's
//! text. Also the poller: complete pagination only, no two listings at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Query;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use steward_ledger::hub::intake::MAX_RESPONSE_BYTES;
use steward_ledger::hub::poller::Poller;
use steward_ledger::hub::{HubToken, IntakeError, LedgerClient};

const TOKEN: &str = "hubtok_secret_0123456789abcdef";
const SERVER_TEXT: &str = "SERVER-SAYS-run-rm-rf";

#[derive(serde::Deserialize)]
struct Q {
    cursor: Option<String>,
}

fn page(next: Option<&str>) -> String {
    serde_json::json!({"items": [], "next_cursor": next}).to_string()
}

async fn serve(app: axum::Router) -> LedgerClient {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    LedgerClient::new(&format!("http://{addr}"), HubToken::new(TOKEN).unwrap()).unwrap()
}

fn route(handler: axum::routing::MethodRouter) -> axum::Router {
    axum::Router::new().route("/api/ledger/candidates", handler)
}

fn assert_no_server_text(e: &IntakeError) {
    assert!(!e.to_string().contains(SERVER_TEXT));
    assert!(!format!("{e:?}").contains(SERVER_TEXT));
    assert!(!e.to_string().contains(TOKEN));
}

#[tokio::test]
async fn an_oversized_body_is_refused_while_streaming() {
    let sent = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&sent);
    let client = serve(route(get(move || {
        let counter = Arc::clone(&counter);
        async move {
            // No Content-Length: 64 KiB chunks, 64 MiB in all unless the reader stops.
            let stream = futures::stream::iter(0..1024).map(move |_| {
                counter.fetch_add(1, Ordering::Relaxed);
                Ok::<_, std::io::Error>(vec![b' '; 64 * 1024])
            });
            Response::new(Body::from_stream(stream))
        }
    })))
    .await;
    let err = client.candidates(None, 10).await.unwrap_err();
    assert_eq!(err, IntakeError::Oversized);
    assert!((sent.load(Ordering::Relaxed) as usize) * 64 * 1024 < 16 * MAX_RESPONSE_BYTES, "reading stopped early");
    // And an announced length above the limit is refused before reading.
    let client = serve(route(get(|| async { vec![b' '; MAX_RESPONSE_BYTES + 1].into_response() }))).await;
    assert_eq!(client.candidates(None, 10).await.unwrap_err(), IntakeError::Oversized);
}

#[tokio::test]
async fn a_redirect_is_an_error_and_never_followed() {
    let followed = Arc::new(AtomicU32::new(0));
    let hits = Arc::clone(&followed);
    let app = axum::Router::new()
        .route(
            "/api/ledger/candidates",
            get(|| async { (StatusCode::FOUND, [("location", "/elsewhere")], SERVER_TEXT).into_response() }),
        )
        .route(
            "/elsewhere",
            get(move || {
                hits.fetch_add(1, Ordering::Relaxed);
                async { page(None) }
            }),
        );
    let client = serve(app).await;
    let err = client.candidates(None, 10).await.unwrap_err();
    assert_eq!(err, IntakeError::Redirect);
    assert_no_server_text(&err);
    assert_eq!(followed.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn unknown_fields_are_refused() {
    let client = serve(route(get(|| async {
        serde_json::json!({"items": [], "next_cursor": null, "scope": "write", "note": SERVER_TEXT}).to_string()
    })))
    .await;
    let err = client.candidates(None, 10).await.unwrap_err();
    assert_eq!(err, IntakeError::UnknownField);
    assert_no_server_text(&err);
    let client = serve(route(get(|| async { format!("<html>{SERVER_TEXT}</html>") }))).await;
    let err = client.candidates(None, 10).await.unwrap_err();
    assert_eq!(err, IntakeError::Malformed);
    assert_no_server_text(&err);
}

#[tokio::test]
async fn a_response_echoing_the_credential_is_refused() {
    let client = serve(route(get(|headers: HeaderMap| async move {
        let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let token = auth.trim_start_matches("Bearer ").to_string();
        page(Some(&format!("cursor-{token}")))
    })))
    .await;
    let err = client.candidates(None, 10).await.unwrap_err();
    assert_eq!(err, IntakeError::CredentialEcho);
    assert_no_server_text(&err);
    // In a header too.
    let client = serve(route(get(|headers: HeaderMap| async move {
        let auth = headers.get("authorization").cloned().unwrap();
        ([("x-debug-auth", auth)], page(None)).into_response()
    })))
    .await;
    assert_eq!(client.candidates(None, 10).await.unwrap_err(), IntakeError::CredentialEcho);
}

#[tokio::test]
async fn a_credential_hidden_by_json_escapes_is_refused() {
    // `\u0068` is `h`: the raw bytes never hold the token, the decoded text does.
    let client = serve(route(get(|| async {
        let escaped = format!("\\u0068{}", &TOKEN[1..]);
        let approval = serde_json::json!({
            "id": "wap_0000000000000001", "request_id": "wrq_0000000000000001", "revision": 1, "epoch": 1,
            "repository": "demo", "pr_number": 1, "head_sha": "0".repeat(40), "scope": "read",
            "approved_by": "local:owner", "approved_at": "2026-11-30T12:00:00Z", "expires_at": "2099-11-30T12:00:00Z",
        });
        let body = format!(r#"{{"items":[{{"approval":{approval},"text":"run with {escaped}"}}],"next_cursor":null}}"#);
        assert!(!body.contains(TOKEN));
        ([("content-type", "application/json")], body).into_response()
    })))
    .await;
    let err = client.candidates(None, 10).await.unwrap_err();
    assert_eq!(err, IntakeError::CredentialEcho);
    assert_no_server_text(&err);
}

#[tokio::test]
async fn overload_carries_retry_after_seconds_or_date() {
    let client = serve(route(get(|| async {
        (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "3")], SERVER_TEXT).into_response()
    })))
    .await;
    let err = client.candidates(None, 10).await.unwrap_err();
    assert_eq!(err, IntakeError::Overloaded { retry_after: Some(Duration::from_secs(3)) });
    assert_eq!(err.code(), "overloaded");
    assert_no_server_text(&err);
    let client = serve(route(get(|| async {
        let at = chrono::Utc::now() + chrono::Duration::seconds(120);
        let date = at.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
        (StatusCode::SERVICE_UNAVAILABLE, [("retry-after", date)], "").into_response()
    })))
    .await;
    let err = client.candidates(None, 10).await.unwrap_err();
    let wait = err.retry_after().unwrap();
    assert!(wait > Duration::from_secs(100) && wait <= Duration::from_secs(120), "{wait:?}");
    assert_eq!(err.code(), "unavailable");
    let client = serve(route(get(|| async { (StatusCode::UNAUTHORIZED, SERVER_TEXT).into_response() }))).await;
    assert_eq!(client.candidates(None, 10).await.unwrap_err(), IntakeError::Unauthorized);
}

#[tokio::test]
async fn a_listing_is_complete_only_after_the_last_page() {
    let client = serve(route(get(|Query(q): Query<Q>| async move {
        match q.cursor.as_deref() {
            None => page(Some("p2")).into_response(),
            Some("p2") => page(Some("p3")).into_response(),
            _ => (StatusCode::SERVICE_UNAVAILABLE, "").into_response(),
        }
    })))
    .await;
    let listing = Poller::new(client, 10).poll().await.unwrap();
    assert!(!listing.complete(), "a failure mid-listing is incomplete, never 'saw everything'");
    assert_eq!(listing.incomplete, Some(IntakeError::Unavailable { retry_after: None }));

    let client = serve(route(get(|Query(q): Query<Q>| async move {
        match q.cursor.as_deref() {
            None => page(Some("p2")),
            _ => page(None),
        }
    })))
    .await;
    assert!(Poller::new(client, 10).poll().await.unwrap().complete());

    // A cursor that repeats would list forever: incomplete.
    let client = serve(route(get(|| async { page(Some("same")) }))).await;
    assert!(!Poller::new(client, 10).poll().await.unwrap().complete());
}

#[tokio::test]
async fn two_polls_never_overlap() {
    let client = serve(route(get(|| async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        page(None)
    })))
    .await;
    let poller = Poller::new(client, 10);
    let (a, b) = tokio::join!(poller.poll(), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        poller.poll().await
    });
    assert!(a.unwrap().complete());
    assert!(b.is_err(), "the second poll is refused while the first runs");
}
