//! The proxy's decisions, driven over its Unix socket with resolvers and connectors the tests
//! control (no outside address is ever connected to).

mod common;

use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::{Server, status_line};
use steward_egress::{Connect, EgressProxy, HostList, ProxyConfig, Resolve, TestHosts, Verdict};
use tokio::net::TcpStream;

/// Answers each lookup with the next prepared answer (the last one repeats) and counts lookups.
struct ScriptedResolver {
    answers: Mutex<VecDeque<Vec<IpAddr>>>,
    lookups: Mutex<Vec<String>>,
}

impl ScriptedResolver {
    fn new(answers: &[&[&str]]) -> Arc<ScriptedResolver> {
        let answers = answers.iter().map(|a| a.iter().map(|ip| ip.parse().unwrap()).collect()).collect();
        Arc::new(ScriptedResolver { answers: Mutex::new(answers), lookups: Mutex::default() })
    }
}

#[async_trait]
impl Resolve for ScriptedResolver {
    async fn resolve(&self, name: &str) -> io::Result<Vec<IpAddr>> {
        self.lookups.lock().unwrap().push(name.to_string());
        let mut answers = self.answers.lock().unwrap();
        let answer = if answers.len() > 1 { answers.pop_front() } else { answers.front().cloned() };
        Ok(answer.unwrap_or_default())
    }
}

/// Records every address it is asked to connect to; connects only to loopback (the tests'
/// own server), refuses everything else without touching the network.
#[derive(Default)]
struct RecordingConnector {
    asked: Mutex<Vec<SocketAddr>>,
}

#[async_trait]
impl Connect for RecordingConnector {
    async fn connect(&self, addr: SocketAddr) -> io::Result<TcpStream> {
        self.asked.lock().unwrap().push(addr);
        if addr.ip().is_loopback() {
            TcpStream::connect(addr).await
        } else {
            Err(io::Error::new(io::ErrorKind::ConnectionRefused, "the test connects to nothing outside"))
        }
    }
}

fn config(hosts: &[&str], resolver: Arc<ScriptedResolver>, connector: Arc<RecordingConnector>) -> ProxyConfig {
    let mut config = ProxyConfig::new(HostList::parse(hosts).unwrap());
    config.resolver = resolver;
    config.connector = connector;
    config
}

fn connect_request(target: &str) -> String {
    format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n")
}

#[tokio::test]
async fn names_resolving_to_loopback_link_local_metadata_or_private_addresses_are_refused() {
    for answer in
        ["127.0.0.1", "::1", "169.254.169.254", "fd00:ec2::254", "100.100.100.200", "10.0.0.8", "::ffff:127.0.0.1"]
    {
        let resolver = ScriptedResolver::new(&[&[answer]]);
        let connector = Arc::new(RecordingConnector::default());
        let proxy = EgressProxy::start(config(&["inside.example"], resolver, Arc::clone(&connector))).unwrap();
        let line = status_line(proxy.socket_path(), &connect_request("inside.example:443")).await;
        assert!(line.contains(" 403 "), "{answer}: {line}");
        let plain =
            status_line(proxy.socket_path(), "GET http://inside.example/ HTTP/1.1\r\nHost: inside.example\r\n\r\n")
                .await;
        assert!(plain.contains(" 403 "), "{answer}: {plain}");
        assert!(connector.asked.lock().unwrap().is_empty(), "{answer}: the proxy connected");
        let records = proxy.finish().await;
        assert_eq!(records.len(), 2);
        for record in records {
            assert_eq!(record.verdict, Verdict::Refused, "{record:?}");
            assert!(
                record.reason.contains(&format!("resolves to {}", answer.parse::<IpAddr>().unwrap())),
                "{record:?}"
            );
        }
    }
}

#[tokio::test]
async fn dns_rebinding_cannot_redirect_a_checked_connection_to_a_private_address() {
    // First answer public, every later one loopback (where a server of the test listens).
    let server = Server::start();
    let resolver = ScriptedResolver::new(&[&["93.184.216.34"], &["127.0.0.1"]]);
    let connector = Arc::new(RecordingConnector::default());
    let target = format!("rebind.example:{}", server.addr.port());
    let proxy = EgressProxy::start(config(&[&target], Arc::clone(&resolver), Arc::clone(&connector))).unwrap();

    // The checked public address is the one connected to; the name is looked up once.
    let first = status_line(proxy.socket_path(), &connect_request(&target)).await;
    assert!(first.contains(" 502 "), "{first}");
    assert_eq!(
        *connector.asked.lock().unwrap(),
        [SocketAddr::new("93.184.216.34".parse().unwrap(), server.addr.port())]
    );
    assert_eq!(resolver.lookups.lock().unwrap().len(), 1);

    // The next lookup answers loopback: refused before any connection.
    let second = status_line(proxy.socket_path(), &connect_request(&target)).await;
    assert!(second.contains(" 403 "), "{second}");
    assert_eq!(connector.asked.lock().unwrap().len(), 1);
    assert!(server.requests().is_empty());

    // An answer mixing public and private addresses is refused whole.
    let mixed = ScriptedResolver::new(&[&["93.184.216.34", "127.0.0.1"]]);
    let connector = Arc::new(RecordingConnector::default());
    let other = EgressProxy::start(config(&[&target], mixed, Arc::clone(&connector))).unwrap();
    assert!(status_line(other.socket_path(), &connect_request(&target)).await.contains(" 403 "));
    assert!(connector.asked.lock().unwrap().is_empty());

    let records = proxy.finish().await;
    assert_eq!(records.iter().map(|r| r.verdict).collect::<Vec<_>>(), [Verdict::Failed, Verdict::Refused]);
}

#[tokio::test]
async fn unlisted_hosts_ports_literals_and_non_proxy_requests_are_refused_and_recorded() {
    let server = Server::start();
    let port = server.addr.port();
    let resolver = ScriptedResolver::new(&[&["93.184.216.34"]]);
    let connector = Arc::new(RecordingConnector::default());
    let listed_literal = format!("127.0.0.1:{port}");
    let proxy = EgressProxy::start(config(&["crates.io", &listed_literal], resolver, Arc::clone(&connector))).unwrap();
    let socket = proxy.socket_path().to_path_buf();
    for (request, status) in [
        (connect_request("evil.example:443"), " 403 "),
        (connect_request("crates.io:22"), " 403 "),
        (connect_request("crates.io.evil.example:443"), " 403 "),
        (connect_request("127.0.0.2:443"), " 403 "),
        (connect_request(&format!("[::1]:{port}")), " 403 "),
        (connect_request("127.1:443"), " 400 "),
        ("GET / HTTP/1.1\r\nHost: crates.io\r\n\r\n".to_string(), " 400 "),
        ("GET https://crates.io/ HTTP/1.1\r\nHost: crates.io\r\n\r\n".to_string(), " 400 "),
        ("GET ftp://crates.io/ HTTP/1.1\r\nHost: crates.io\r\n\r\n".to_string(), " 400 "),
        ("GET http://evil.example/x?token=s3cret HTTP/1.1\r\nHost: crates.io\r\n\r\n".to_string(), " 403 "),
    ] {
        let line = status_line(&socket, &request).await;
        assert!(line.contains(status), "{request:?}: {line}");
    }
    assert!(connector.asked.lock().unwrap().is_empty());
    assert!(server.requests().is_empty());

    // A listed IP literal is the user's explicit choice: reachable even on loopback.
    let line = status_line(&socket, &connect_request(&listed_literal)).await;
    assert!(line.contains(" 200 "), "{line}");

    let records = proxy.finish().await;
    assert_eq!(records.len(), 11);
    assert!(records[..10].iter().all(|r| r.verdict == Verdict::Refused), "{records:?}");
    assert_eq!(records[0].host, "evil.example");
    assert!(records[0].reason.contains("not on the tool's network list"), "{:?}", records[0]);
    assert!(records.iter().all(|r| !r.reason.contains("s3cret") && !r.host.contains("s3cret")), "a query was recorded");
    assert_eq!(records[10].verdict, Verdict::Allowed);
    assert_eq!(records[10].address, Some(server.addr));
}

#[tokio::test]
async fn pinned_test_names_reach_loopback_but_never_a_metadata_address() {
    let server = Server::start();
    let port = server.addr.port();
    let mut hosts = TestHosts::parse("allowed.test=127.0.0.1;meta.test=169.254.169.254").unwrap();
    hosts.pin("v6meta.test", vec!["fd00:ec2::254".parse().unwrap()]).unwrap();
    let resolver = ScriptedResolver::new(&[&["127.0.0.1"]]);
    let connector = Arc::new(RecordingConnector::default());
    let list = [format!("allowed.test:{port}"), format!("meta.test:{port}"), format!("v6meta.test:{port}")];
    let mut cfg = config(&list.iter().map(String::as_str).collect::<Vec<_>>(), Arc::clone(&resolver), connector);
    cfg.test_hosts = hosts;
    let proxy = EgressProxy::start(cfg).unwrap();
    let get = |host: &str| format!("GET http://{host}:{port}/p HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n");
    assert!(status_line(proxy.socket_path(), &get("allowed.test")).await.contains(" 200 "));
    assert!(status_line(proxy.socket_path(), &get("meta.test")).await.contains(" 403 "));
    assert!(status_line(proxy.socket_path(), &get("v6meta.test")).await.contains(" 403 "));
    assert!(resolver.lookups.lock().unwrap().is_empty(), "a pinned name was looked up");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].starts_with("GET /p HTTP/1.1\r\n"), "{requests:?}");
    assert!(requests[0].to_ascii_lowercase().contains(&format!("host: allowed.test:{port}")), "{requests:?}");
}

#[tokio::test]
async fn every_request_on_a_kept_alive_connection_is_checked_on_its_own() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = Server::start();
    let port = server.addr.port();
    let mut cfg = config(
        &[&format!("allowed.test:{port}")],
        ScriptedResolver::new(&[&["93.184.216.34"]]),
        Arc::new(RecordingConnector::default()),
    );
    cfg.test_hosts = TestHosts::parse("allowed.test=127.0.0.1").unwrap();
    let proxy = EgressProxy::start(cfg).unwrap();
    let mut stream = tokio::net::UnixStream::connect(proxy.socket_path()).await.unwrap();
    // Two requests in one write: the second names a host that is not listed, and its Host
    // header names the listed one.
    let requests = format!(
        "GET http://allowed.test:{port}/one HTTP/1.1\r\nHost: allowed.test:{port}\r\nConnection: keep-alive, upgrade\r\nUpgrade: websocket\r\n\r\n\
         GET http://evil.example/two HTTP/1.1\r\nHost: allowed.test:{port}\r\n\r\n"
    );
    stream.write_all(requests.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&answer).contains("HTTP/1.1 403") {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&answer));
        answer.extend_from_slice(&buf[..n]);
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("hello from /one"), "{answer}");
    let seen = server.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(!seen[0].to_ascii_lowercase().contains("upgrade"), "hop-by-hop headers were forwarded: {seen:?}");
    let records = proxy.finish().await;
    assert_eq!(records.iter().map(|r| r.verdict).collect::<Vec<_>>(), [Verdict::Allowed, Verdict::Refused]);
    assert_eq!(records[1].host, "evil.example");
}
