//! `http_get` as the parent performs it, against a loopback test server reachable only through
//! the test-only allowance (`FetchPolicy::test_allow`): what is served is returned, and a
//! redirect to a private address or a body over the limit is refused.

use std::net::SocketAddr;

use steward_generated::fetch::{FetchError, FetchPolicy, MAX_BODY_BYTES, http_get};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A loopback HTTP server answering every request with `response` (bounded: it stops after
/// `requests` connections).
async fn server(response: Vec<u8>, requests: usize) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        for _ in 0..requests {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf).await;
            let _ = socket.write_all(&response).await;
            let _ = socket.shutdown().await;
        }
    });
    addr
}

fn allowing(addr: SocketAddr) -> FetchPolicy {
    FetchPolicy { test_allow: vec![addr], ..FetchPolicy::default() }
}

#[tokio::test]
async fn a_served_body_is_returned_when_the_address_is_allowed() {
    let addr = server(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello".to_vec(), 2).await;
    let got = http_get(&format!("http://{addr}/x"), &allowing(addr)).await.unwrap();
    assert_eq!((got.status, got.body.as_str()), (200, "hello"));
    // Without the allowance the same loopback server is refused.
    let refused = http_get(&format!("http://{addr}/x"), &FetchPolicy::default()).await;
    assert!(matches!(refused, Err(FetchError::PrivateAddress { .. })), "{refused:?}");
}

#[tokio::test]
async fn a_redirect_to_a_private_address_is_refused() {
    for target in ["http://169.254.169.254/latest/meta-data/", "http://[::1]:9/", "http://127.0.0.1:9/"] {
        let response =
            format!("HTTP/1.1 302 Found\r\nlocation: {target}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        let addr = server(response.into_bytes(), 1).await;
        let got = http_get(&format!("http://{addr}/start"), &allowing(addr)).await;
        match got {
            Err(FetchError::PrivateAddress { .. }) => {}
            other => panic!("{target}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_body_over_two_megabytes_is_refused() {
    let body = vec![b'a'; 3 * 1024 * 1024];
    // Announced length over the limit.
    let mut announced =
        format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len()).into_bytes();
    announced.extend_from_slice(&body);
    let addr = server(announced, 1).await;
    let got = http_get(&format!("http://{addr}/big"), &allowing(addr)).await;
    assert_eq!(got, Err(FetchError::TooLarge { limit: MAX_BODY_BYTES }));
    // No length announced: cut while streaming.
    let mut streamed = b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n".to_vec();
    streamed.extend_from_slice(&body);
    let addr = server(streamed, 1).await;
    let got = http_get(&format!("http://{addr}/big"), &allowing(addr)).await;
    assert_eq!(got, Err(FetchError::TooLarge { limit: MAX_BODY_BYTES }));
}

#[tokio::test]
async fn literal_private_and_metadata_addresses_are_refused_before_connecting() {
    for url in [
        "http://127.0.0.1/",
        "http://169.254.169.254/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://0.0.0.0/",
    ] {
        let got = http_get(url, &FetchPolicy::default()).await;
        assert!(matches!(got, Err(FetchError::PrivateAddress { .. })), "{url}: {got:?}");
    }
    for url in ["ftp://example.com/", "http://user:pw@example.com/", "not a url"] {
        let got = http_get(url, &FetchPolicy::default()).await;
        assert!(matches!(got, Err(FetchError::BadUrl { .. })), "{url}: {got:?}");
    }
}

#[tokio::test]
async fn a_pinned_test_name_reaches_loopback_but_never_a_metadata_address() {
    let addr = server(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok".to_vec(), 1).await;
    let mut policy = FetchPolicy::default();
    policy.test_hosts.pin("sink.test", vec![addr.ip()]).unwrap();
    let got = http_get(&format!("http://sink.test:{}/x", addr.port()), &policy).await.unwrap();
    assert_eq!((got.status, got.body.as_str(), got.address), (200, "ok", Some(addr)));
    let mut metadata = FetchPolicy::default();
    metadata.test_hosts.pin("meta.test", vec!["169.254.169.254".parse().unwrap()]).unwrap();
    let refused = http_get("http://meta.test/latest/", &metadata).await;
    assert!(matches!(refused, Err(FetchError::PrivateAddress { .. })), "{refused:?}");
}
