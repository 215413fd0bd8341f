//! The proxy server: HTTP/1.1 on a Unix socket in a private directory, answering `CONNECT
//! host:port` (a byte tunnel) and absolute-form plain HTTP requests (`GET http://host/…`,
//! forwarded in origin form with `Host` set from the URL); anything else gets `400`.
//!
//! For every request the host is checked against the list, a name is resolved once and every
//! answer checked ([`crate::address`]), and the connection goes to exactly a checked address:
//! the name is never resolved again for that request, so an answer that changes between the
//! check and the connection (DNS rebinding) cannot redirect it.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::address::{never_reachable, non_public};
use crate::hosts::{Host, HostList};
use crate::record::{EgressRecord, Entry, Verdict};
use crate::resolve::{Connect, DirectConnector, Resolve, SystemResolver, TestHosts};

/// Most connections served at once; more wait for a free place.
const MAX_CONCURRENT: usize = 64;
/// Most connections recorded one by one per proxy; past it one summary record counts the rest.
pub const MAX_RECORDS: usize = 1_000;

/// What a proxy allows and how it reaches hosts.
#[derive(Clone)]
pub struct ProxyConfig {
    /// The hosts (and ports) it allows.
    pub hosts: HostList,
    /// Resolves names ([`SystemResolver`] by default).
    pub resolver: Arc<dyn Resolve>,
    /// Opens connections ([`DirectConnector`] by default).
    pub connector: Arc<dyn Connect>,
    /// Names pinned to addresses that may be non-public (tests only; empty by default).
    pub test_hosts: TestHosts,
}

impl ProxyConfig {
    /// The system resolver, direct connections with a 10 s limit per address, nothing pinned.
    pub fn new(hosts: HostList) -> ProxyConfig {
        ProxyConfig {
            hosts,
            resolver: Arc::new(SystemResolver),
            connector: Arc::new(DirectConnector::default()),
            test_hosts: TestHosts::default(),
        }
    }
}

/// Why the proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    /// Making the private directory or binding the socket failed.
    #[error("cannot start the egress proxy: {0}")]
    Io(#[from] std::io::Error),
}

struct Shared {
    config: ProxyConfig,
    entries: Mutex<(Vec<Arc<Entry>>, u64)>,
    stop: CancellationToken,
    places: Arc<Semaphore>,
}

impl Shared {
    fn record(&self, record: EgressRecord) -> Arc<Entry> {
        let entry = Arc::new(Entry::new(record));
        let mut guard = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if guard.0.len() < MAX_RECORDS {
            guard.0.push(Arc::clone(&entry));
        } else {
            guard.1 += 1;
        }
        entry
    }
}

/// A running proxy. Dropping it stops it (and forgets its records); [`EgressProxy::finish`]
/// stops it and returns them.
pub struct EgressProxy {
    socket: PathBuf,
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl EgressProxy {
    /// Binds a Unix socket `proxy.sock` in a new private directory (mode 0700, under the
    /// system's temporary directory) and serves it. Needs a tokio runtime.
    pub fn start(config: ProxyConfig) -> Result<EgressProxy, EgressError> {
        let dir = tempfile::Builder::new().prefix("steward-egress-").tempdir()?;
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        let socket = dir.path().join("proxy.sock");
        let listener = UnixListener::bind(&socket)?;
        let shared = Arc::new(Shared {
            config,
            entries: Mutex::default(),
            stop: CancellationToken::new(),
            places: Arc::new(Semaphore::new(MAX_CONCURRENT)),
        });
        let task = tokio::spawn(serve(listener, Arc::clone(&shared)));
        Ok(EgressProxy { socket, shared, task: Some(task), _dir: dir })
    }

    /// The Unix socket to hand to the sandbox.
    pub fn socket_path(&self) -> &Path {
        &self.socket
    }

    /// Stops serving (open tunnels and requests are cut) and returns every record, in the
    /// order the requests arrived, with the bytes counted until then. Past [`MAX_RECORDS`],
    /// one last record (method and host `*`, verdict [`Verdict::Failed`]) says in its
    /// `reason` how many connections were not recorded one by one.
    pub async fn finish(mut self) -> Vec<EgressRecord> {
        self.shared.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        self.records()
    }

    /// The records so far, with the bytes counted until now, without stopping (for a caller
    /// that is itself being cancelled and cannot wait for [`EgressProxy::finish`]).
    pub fn records(&self) -> Vec<EgressRecord> {
        let guard = self.shared.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let mut records: Vec<EgressRecord> = guard.0.iter().map(|e| e.snapshot()).collect();
        if guard.1 > 0 {
            records.push(EgressRecord {
                method: "*".into(),
                host: "*".into(),
                port: 0,
                address: None,
                verdict: Verdict::Failed,
                reason: format!("{} more connections were not recorded one by one", guard.1),
                bytes_sent: 0,
                bytes_received: 0,
            });
        }
        records
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        self.shared.stop.cancel();
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

async fn serve(listener: UnixListener, shared: Arc<Shared>) {
    let mut open = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            _ = shared.stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            // Out of file descriptors or similar: wait a little rather than spin.
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            continue;
        };
        let shared = Arc::clone(&shared);
        open.spawn(async move {
            let Ok(_place) = Arc::clone(&shared.places).acquire_owned().await else { return };
            let stop = shared.stop.clone();
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = serve_connection(stream, shared) => {}
            }
        });
        while open.try_join_next().is_some() {}
    }
    // Dropping `open` aborts the connections still being served.
}

async fn serve_connection(stream: UnixStream, shared: Arc<Shared>) {
    let service = hyper::service::service_fn(move |req| {
        let shared = Arc::clone(&shared);
        async move { Ok::<_, Infallible>(handle(req, shared).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
}

type ProxyBody = BoxBody<Bytes, hyper::Error>;

fn reply(status: StatusCode, text: String) -> Response<ProxyBody> {
    let mut response = Response::new(Full::new(Bytes::from(text)).map_err(|never| match never {}).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

async fn handle(req: Request<Incoming>, shared: Arc<Shared>) -> Response<ProxyBody> {
    if req.method() == Method::CONNECT { connect(req, shared).await } else { forward(req, shared).await }
}

/// A refusal or failure before any connection: recorded, and the status for the client.
struct Stop {
    status: StatusCode,
    verdict: Verdict,
    reason: String,
}

impl Stop {
    fn refused(status: StatusCode, reason: String) -> Stop {
        Stop { status, verdict: Verdict::Refused, reason }
    }
}

/// Checks `host:port`, resolves it once, checks every address and connects to one of them.
/// Records the outcome either way.
async fn open(
    shared: &Shared,
    method: &str,
    host_text: &str,
    port: u16,
) -> Result<(Arc<Entry>, TcpStream), Response<ProxyBody>> {
    let shown: String = host_text.chars().take(255).collect();
    let base = |host: String, verdict, reason: String, address| EgressRecord {
        method: method.chars().take(32).collect(),
        host,
        port,
        address,
        verdict,
        reason,
        bytes_sent: 0,
        bytes_received: 0,
    };
    let (host, outcome) = match Host::parse(host_text) {
        Err(e) => (shown, Err(Stop::refused(StatusCode::BAD_REQUEST, e.to_string()))),
        Ok(host) => {
            let outcome = check_and_connect(&shared.config, &host, port).await;
            (host.to_string(), outcome)
        }
    };
    match outcome {
        Ok((stream, address, reason)) => {
            let entry = shared.record(base(host, Verdict::Allowed, reason, Some(address)));
            Ok((entry, stream))
        }
        Err(stop) => {
            shared.record(base(host.clone(), stop.verdict, stop.reason.clone(), None));
            tracing::info!(%host, port, reason = %stop.reason, "egress proxy refused a connection");
            Err(reply(stop.status, format!("steward egress proxy: {}\n", stop.reason)))
        }
    }
}

async fn check_and_connect(
    config: &ProxyConfig,
    host: &Host,
    port: u16,
) -> Result<(TcpStream, SocketAddr, String), Stop> {
    let forbidden = |reason: String| Stop::refused(StatusCode::FORBIDDEN, reason);
    let Some(rule) = config.hosts.permits(host, port) else {
        return Err(forbidden(format!("`{host}:{port}` is not on the tool's network list")));
    };
    let allowed_by = format!("listed as `{}`", rule.written);
    let addresses: Vec<IpAddr> = match host {
        Host::Ip(ip) => {
            if let Some(why) = never_reachable(*ip) {
                return Err(forbidden(format!("{ip} is {why}")));
            }
            vec![*ip]
        }
        Host::Name(name) => match config.test_hosts.get(name) {
            Some(pinned) => {
                if let Some((ip, why)) = pinned.iter().find_map(|ip| never_reachable(*ip).map(|w| (ip, w))) {
                    return Err(forbidden(format!("`{name}` is pinned to {ip}, {why}")));
                }
                pinned.to_vec()
            }
            None => {
                let answer = config.resolver.resolve(name).await.map_err(|e| Stop {
                    status: StatusCode::BAD_GATEWAY,
                    verdict: Verdict::Failed,
                    reason: format!("cannot resolve `{name}`: {e}"),
                })?;
                if answer.is_empty() {
                    return Err(Stop {
                        status: StatusCode::BAD_GATEWAY,
                        verdict: Verdict::Failed,
                        reason: format!("`{name}` has no address"),
                    });
                }
                // One non-public answer refuses the name: a public name has no business
                // pointing into the local network.
                if let Some((ip, why)) = answer.iter().find_map(|ip| non_public(*ip).map(|w| (ip, w))) {
                    return Err(forbidden(format!("`{name}` resolves to {ip}, {why}")));
                }
                answer
            }
        },
    };
    let mut last_error = String::new();
    for ip in addresses {
        let address = SocketAddr::new(ip, port);
        match config.connector.connect(address).await {
            Ok(stream) => return Ok((stream, address, allowed_by)),
            Err(e) => last_error = format!("cannot connect to {address}: {e}"),
        }
    }
    Err(Stop { status: StatusCode::BAD_GATEWAY, verdict: Verdict::Failed, reason: last_error })
}

/// `CONNECT host:port`: `200` and a byte tunnel, or the refusal.
async fn connect(mut req: Request<Incoming>, shared: Arc<Shared>) -> Response<ProxyBody> {
    let target = req.uri().authority().and_then(|a| Some((a.host().to_string(), a.port_u16()?)));
    let Some((host, port)) = target else {
        let written = req.uri().to_string();
        return refuse_request(&shared, "CONNECT", &written, 0, "CONNECT needs host:port");
    };
    let (entry, stream) = match open(&shared, "CONNECT", &host, port).await {
        Ok(opened) => opened,
        Err(response) => return response,
    };
    let upgrade = hyper::upgrade::on(&mut req);
    let stop = shared.stop.clone();
    tokio::spawn(async move {
        let tunnel = async move {
            let client = upgrade.await?;
            let mut client = TokioIo::new(client);
            let mut remote = Counted { inner: stream, entry };
            tokio::io::copy_bidirectional(&mut client, &mut remote).await?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        };
        tokio::select! {
            _ = stop.cancelled() => {}
            _ = tunnel => {}
        }
    });
    Response::new(http_body_util::Empty::new().map_err(|never| match never {}).boxed())
}

/// Records a malformed request as refused and answers `400`.
fn refuse_request(shared: &Shared, method: &str, host: &str, port: u16, reason: &str) -> Response<ProxyBody> {
    shared.record(EgressRecord {
        method: method.chars().take(32).collect(),
        host: host.chars().take(255).collect(),
        port,
        address: None,
        verdict: Verdict::Refused,
        reason: reason.to_string(),
        bytes_sent: 0,
        bytes_received: 0,
    });
    reply(StatusCode::BAD_REQUEST, format!("steward egress proxy: {reason}\n"))
}

/// Headers that belong to one hop (RFC 9110 section 7.6.1) and the proxy's own.
const HOP_HEADERS: [&str; 9] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

fn strip_hop_headers(headers: &mut HeaderMap) {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(',').map(|s| s.trim().to_ascii_lowercase()))
        .collect();
    for name in HOP_HEADERS.iter().copied().chain(named.iter().map(String::as_str)) {
        headers.remove(name);
    }
}

/// An absolute-form `http://` request: forwarded to the checked address in origin form.
async fn forward(req: Request<Incoming>, shared: Arc<Shared>) -> Response<ProxyBody> {
    let uri = req.uri().clone();
    let method = req.method().to_string();
    let refuse =
        |reason: &str| refuse_request(&shared, &method, uri.host().unwrap_or(""), uri.port_u16().unwrap_or(0), reason);
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => return refuse("an https URL goes through CONNECT, not a plain request"),
        Some(_) => return refuse("only http URLs and CONNECT are proxied"),
        None => return refuse("not a proxy request: the request line needs an absolute http:// URL"),
    }
    let Some(host) = uri.host() else { return refuse("the URL has no host") };
    let port = uri.port_u16().unwrap_or(80);
    let (entry, stream) = match open(&shared, &method, host, port).await {
        Ok(opened) => opened,
        Err(response) => return response,
    };
    let (mut sender, connection) =
        match hyper::client::conn::http1::handshake(TokioIo::new(Counted { inner: stream, entry })).await {
            Ok(pair) => pair,
            Err(e) => return reply(StatusCode::BAD_GATEWAY, format!("steward egress proxy: {e}\n")),
        };
    let stop = shared.stop.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = stop.cancelled() => {}
            _ = connection => {}
        }
    });
    let (mut parts, body) = req.into_parts();
    strip_hop_headers(&mut parts.headers);
    // The host the request goes to is the one the URL names, and the one that was checked.
    let host_header = match uri.port_u16() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    };
    match HeaderValue::from_str(&host_header) {
        Ok(value) => {
            parts.headers.insert(header::HOST, value);
        }
        Err(_) => return reply(StatusCode::BAD_REQUEST, "steward egress proxy: bad host\n".into()),
    }
    let origin = uri.path_and_query().map_or("/", |pq| pq.as_str());
    parts.uri = match origin.parse() {
        Ok(uri) => uri,
        Err(_) => return reply(StatusCode::BAD_REQUEST, "steward egress proxy: bad path\n".into()),
    };
    match sender.send_request(Request::from_parts(parts, body)).await {
        Ok(response) => {
            let (mut parts, body) = response.into_parts();
            strip_hop_headers(&mut parts.headers);
            Response::from_parts(parts, body.boxed())
        }
        Err(e) => reply(StatusCode::BAD_GATEWAY, format!("steward egress proxy: {e}\n")),
    }
}

/// A connection to a remote host that counts the bytes each way into its record.
struct Counted {
    inner: TcpStream,
    entry: Arc<Entry>,
}

impl AsyncRead for Counted {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let n = (buf.filled().len() - before) as u64;
            self.entry.received.fetch_add(n, Ordering::Relaxed);
        }
        polled
    }
}

impl AsyncWrite for Counted {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, data);
        if let Poll::Ready(Ok(n)) = polled {
            self.entry.sent.fetch_add(n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
