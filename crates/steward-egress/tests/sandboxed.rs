//! A real sandboxed child (`curl`, `bash`) whose only way out is the proxy: the listed host
//! works through CONNECT and plain HTTP, anything else is refused and recorded, and nothing
//! bypasses the proxy. The "allowed" host is `allowed.test`, pinned to a server of the test on
//! loopback (the only non-public address a test can pin, see `TestHosts`).

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::Server;
use steward_egress::{EgressProxy, HostList, ProxyConfig, TestHosts, Verdict};
use steward_sandbox::{ExecOutput, ExecRequest};
use tokio_util::sync::CancellationToken;

fn proxy_for(hosts: &[String], server: &Server) -> EgressProxy {
    let mut config = ProxyConfig::new(HostList::parse(hosts).unwrap());
    config.test_hosts = TestHosts::parse(&format!("allowed.test={}", server.addr.ip())).unwrap();
    EgressProxy::start(config).unwrap()
}

async fn run(argv: &[&str], proxy: Option<&EgressProxy>) -> ExecOutput {
    let req = ExecRequest {
        egress_proxy: proxy.map(|p| p.socket_path().to_path_buf()),
        timeout: Duration::from_secs(20),
        ..ExecRequest::new(argv.iter().map(|a| a.to_string()).collect(), PathBuf::from("/"))
    };
    steward_sandbox::run(req, CancellationToken::new()).await.unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn listed_host_is_reached_through_connect_and_plain_http_from_a_sandboxed_child() {
    let server = Server::start();
    let port = server.addr.port();
    let proxy = proxy_for(&[format!("allowed.test:{port}")], &server);
    let plain = format!("http://allowed.test:{port}/plain");
    let out = run(&["curl", "-sS", "-f", "--max-time", "10", &plain], Some(&proxy)).await;
    assert_eq!(out.exit_code, Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hello from /plain");
    assert!(out.profile.contains("egress-proxy"), "{}", out.profile);
    // `-p` makes curl open a CONNECT tunnel even for http.
    let tunnel = format!("http://allowed.test:{port}/tunnel");
    let out = run(&["curl", "-sS", "-f", "-p", "--max-time", "10", &tunnel], Some(&proxy)).await;
    assert_eq!(out.exit_code, Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hello from /tunnel");

    // Another client that honours the proxy variables: Python's urllib.
    let script = format!(
        "import urllib.request; print(urllib.request.urlopen('http://allowed.test:{port}/py').read().decode())"
    );
    let out = run(&["python3", "-c", &script], Some(&proxy)).await;
    assert_eq!(out.exit_code, Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hello from /py\n");

    let records = proxy.finish().await;
    assert_eq!(records.len(), 3, "{records:?}");
    assert_eq!((records[0].method.as_str(), records[1].method.as_str()), ("GET", "CONNECT"));
    for record in &records {
        assert_eq!(record.verdict, Verdict::Allowed, "{record:?}");
        assert_eq!((record.host.as_str(), record.port, record.address), ("allowed.test", port, Some(server.addr)));
        assert!(record.bytes_sent > 20 && record.bytes_received > 20, "{record:?}");
    }
    let seen = server.requests();
    assert!(
        seen[0].starts_with("GET /plain HTTP/1.1\r\n") && seen[1].starts_with("GET /tunnel HTTP/1.1\r\n"),
        "{seen:?}"
    );
}

#[tokio::test]
async fn unlisted_host_gets_403_from_the_proxy_and_is_recorded() {
    let server = Server::start();
    let port = server.addr.port();
    let proxy = proxy_for(&[format!("allowed.test:{port}")], &server);
    let other = format!("http://other.test:{port}/");
    let out = run(&["curl", "-sS", "-f", "--max-time", "10", &other], Some(&proxy)).await;
    assert_eq!(out.exit_code, Some(22), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("403"), "{}", text(&out.stderr));
    let out =
        run(&["curl", "-sS", "-p", "--max-time", "10", &format!("https://other.test:{port}/")], Some(&proxy)).await;
    assert_ne!(out.exit_code, Some(0));
    assert!(text(&out.stderr).contains("403"), "{}", text(&out.stderr));
    // Listed name, unlisted port.
    let wrong_port = format!("http://allowed.test:{}/", port.wrapping_add(1).max(1));
    let out = run(&["curl", "-sS", "-f", "--max-time", "10", &wrong_port], Some(&proxy)).await;
    assert_eq!(out.exit_code, Some(22), "{}", text(&out.stderr));

    let records = proxy.finish().await;
    assert_eq!(records.len(), 3, "{records:?}");
    for record in &records {
        assert_eq!(record.verdict, Verdict::Refused, "{record:?}");
        assert!(record.reason.contains("not on the tool's network list"), "{record:?}");
        assert_eq!((record.bytes_sent, record.bytes_received, record.address), (0, 0, None));
    }
    assert_eq!(records[0].host, "other.test");
    assert_eq!(records[1].method, "CONNECT");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn connections_that_bypass_the_proxy_have_no_route_out_of_the_namespace() {
    let server = Server::start();
    let port = server.addr.port();
    let proxy = proxy_for(&[format!("allowed.test:{port}")], &server);
    let direct = format!("http://127.0.0.1:{port}/direct");
    // Ignoring the proxy variables: loopback in the namespace is not the host's loopback.
    let out = run(&["curl", "-sS", "--noproxy", "*", "--max-time", "5", &direct], Some(&proxy)).await;
    assert_ne!(out.exit_code, Some(0), "{}", text(&out.stdout));
    // Another address: no interface but `lo`, so no route.
    let out = run(&["curl", "-sS", "--noproxy", "*", "--max-time", "5", "http://192.0.2.1/"], Some(&proxy)).await;
    assert_ne!(out.exit_code, Some(0));
    // A raw TCP connection, without curl.
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let out = run(&["bash", "-c", &script], Some(&proxy)).await;
    assert_ne!(out.exit_code, Some(0));
    assert!(!text(&out.stdout).contains("connected"));
    // Name resolution inside: there is no DNS server to ask, so a name fails without the proxy.
    let out = run(
        &["curl", "-sS", "--noproxy", "*", "--max-time", "5", &format!("http://allowed.test:{port}/")],
        Some(&proxy),
    )
    .await;
    assert_ne!(out.exit_code, Some(0));

    assert!(server.requests().is_empty(), "a connection bypassed the proxy: {:?}", server.requests());
    assert!(proxy.finish().await.is_empty(), "nothing went through the proxy");
}

#[tokio::test]
async fn the_proxy_environment_overrides_the_requests_and_no_proxy_is_empty() {
    let server = Server::start();
    let proxy = proxy_for(&[format!("allowed.test:{}", server.addr.port())], &server);
    let req = ExecRequest {
        egress_proxy: Some(proxy.socket_path().to_path_buf()),
        env_set: vec![("HTTP_PROXY".into(), "http://evil.example:1".into()), ("NO_PROXY".into(), "*".into())],
        ..ExecRequest::new(vec!["env".into()], PathBuf::from("/"))
    };
    let out = steward_sandbox::run(req, CancellationToken::new()).await.unwrap();
    let env = text(&out.stdout);
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"] {
        assert!(env.lines().any(|l| l == format!("{name}={}", steward_sandbox::PROXY_URL)), "{name} in {env}");
    }
    assert!(env.lines().any(|l| l == "NO_PROXY=") && env.lines().any(|l| l == "no_proxy="), "{env}");
    assert!(!env.contains("evil.example"), "{env}");

    // A proxy together with the whole network is a contradiction, refused before running.
    let both = ExecRequest {
        network: true,
        egress_proxy: Some(proxy.socket_path().to_path_buf()),
        ..ExecRequest::new(vec!["true".into()], PathBuf::from("/"))
    };
    let err = steward_sandbox::run(both, CancellationToken::new()).await.unwrap_err();
    assert!(err.to_string().contains("exclude each other"), "{err}");
}
