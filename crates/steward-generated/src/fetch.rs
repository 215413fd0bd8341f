//! `http_get(url)` as the parent performs it for a generated tool: GET only, public addresses
//! only (checked after DNS resolution, and the connection pinned to the checked addresses),
//! every redirect checked the same way, a time and a size limit.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde::Serialize;

/// Time limit of one `http_get`, redirects included (SPEC G: 10 s).
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest body `http_get` returns (SPEC G: 2 MB).
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// Redirects followed (each one checked like the first URL).
pub const MAX_REDIRECTS: usize = 3;

/// What `http_get` may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPolicy {
    /// Time limit, redirects included.
    pub timeout: Duration,
    /// Largest body returned.
    pub max_body_bytes: usize,
    /// Test-only allowance: socket addresses (a loopback test server) reachable although they
    /// are not public. Empty in every policy Steward builds; never read from configuration.
    pub test_allow: Vec<SocketAddr>,
    /// Test-only: names under `.test` pinned to addresses that may be non-public (the egress
    /// proxy's test hook, honoured by debug builds only); a pinned address may still not be
    /// a metadata, unspecified or multicast address. Empty unless the embedding program sets it.
    pub test_hosts: steward_egress::TestHosts,
}

impl Default for FetchPolicy {
    fn default() -> Self {
        FetchPolicy {
            timeout: FETCH_TIMEOUT,
            max_body_bytes: MAX_BODY_BYTES,
            test_allow: Vec::new(),
            test_hosts: steward_egress::TestHosts::default(),
        }
    }
}

/// What the script gets back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FetchResult {
    /// HTTP status.
    pub status: u16,
    /// The body as text (invalid UTF-8 replaced).
    pub body: String,
    /// The URL that answered (after redirects).
    pub url: String,
    /// The address that answered (for the audit log; not shown to the script).
    #[serde(skip)]
    pub address: Option<SocketAddr>,
}

/// Why `http_get` refused or failed; the script sees the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// Not an absolute `http` or `https` URL, or one with a user name or password.
    #[error("http_get refused `{url}`: {why}")]
    BadUrl {
        /// The URL.
        url: String,
        /// Why.
        why: String,
    },
    /// The host is, or resolves to, an address that is not public.
    #[error("http_get refused `{host}`: {addr} is {why}")]
    PrivateAddress {
        /// The host as written.
        host: String,
        /// The offending address.
        addr: IpAddr,
        /// What kind of address it is.
        why: &'static str,
    },
    /// The name did not resolve.
    #[error("http_get: cannot resolve `{host}`: {message}")]
    Resolve {
        /// The host.
        host: String,
        /// The resolver's message.
        message: String,
    },
    /// More than [`MAX_REDIRECTS`] redirects.
    #[error("http_get: more than {MAX_REDIRECTS} redirects")]
    TooManyRedirects,
    /// The body is larger than the limit.
    #[error("http_get: the body is larger than {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The time limit was reached.
    #[error("http_get: no complete answer within {0:?}")]
    Timeout(Duration),
    /// The request failed.
    #[error("http_get: {0}")]
    Http(String),
}

/// GETs `url` under `policy`, following at most [`MAX_REDIRECTS`] redirects, each checked.
pub async fn http_get(url: &str, policy: &FetchPolicy) -> Result<FetchResult, FetchError> {
    let deadline = Instant::now() + policy.timeout;
    let work = async {
        let mut current = parse(url)?;
        for _ in 0..=MAX_REDIRECTS {
            let addrs = checked_addrs(&current, policy).await?;
            let response = get_pinned(&current, &addrs, deadline).await?;
            let status = response.status();
            if status.is_redirection()
                && let Some(location) = response.headers().get(reqwest::header::LOCATION)
            {
                let location = location.to_str().map_err(|_| FetchError::BadUrl {
                    url: current.to_string(),
                    why: "a redirect whose Location is not text".into(),
                })?;
                let next = current
                    .join(location)
                    .map_err(|e| FetchError::BadUrl { url: location.to_string(), why: e.to_string() })?;
                current = parse(next.as_str())?;
                continue;
            }
            let address = response.remote_addr();
            let body = capped_body(response, policy.max_body_bytes).await?;
            return Ok(FetchResult { status: status.as_u16(), body, url: current.to_string(), address });
        }
        Err(FetchError::TooManyRedirects)
    };
    match tokio::time::timeout_at(deadline.into(), work).await {
        Ok(result) => result,
        Err(_) => Err(FetchError::Timeout(policy.timeout)),
    }
}

fn parse(url: &str) -> Result<reqwest::Url, FetchError> {
    let bad = |why: &str| FetchError::BadUrl { url: url.chars().take(200).collect(), why: why.to_string() };
    let parsed = reqwest::Url::parse(url).map_err(|e| bad(&e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("only http and https URLs"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(bad("a URL with a user name or password"));
    }
    if parsed.host().is_none() {
        return Err(bad("no host"));
    }
    Ok(parsed)
}

/// The addresses `url`'s host resolves to, every one public (or a test allowance).
async fn checked_addrs(url: &reqwest::Url, policy: &FetchPolicy) -> Result<Vec<SocketAddr>, FetchError> {
    let port = url.port_or_known_default().unwrap_or(80);
    let host = url.host_str().unwrap_or_default().to_string();
    let literal = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().ok();
    if let Some(pinned) = policy.test_hosts.get(&host.to_ascii_lowercase()) {
        let addrs: Vec<SocketAddr> = pinned.iter().map(|ip| SocketAddr::new(*ip, port)).collect();
        for addr in &addrs {
            if let Some(why) = steward_egress::address::never_reachable(addr.ip()) {
                return Err(FetchError::PrivateAddress { host, addr: addr.ip(), why });
            }
        }
        return Ok(addrs);
    }
    let addrs: Vec<SocketAddr> = match literal {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|e| FetchError::Resolve { host: host.clone(), message: e.to_string() })?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(FetchError::Resolve { host, message: "no address".into() });
    }
    for addr in &addrs {
        if policy.test_allow.contains(addr) {
            continue;
        }
        if let Some(why) = steward_egress::address::non_public(addr.ip()) {
            return Err(FetchError::PrivateAddress { host, addr: addr.ip(), why });
        }
    }
    Ok(addrs)
}

/// One GET without redirects, connecting only to `addrs`.
async fn get_pinned(
    url: &reqwest::Url,
    addrs: &[SocketAddr],
    deadline: Instant,
) -> Result<reqwest::Response, FetchError> {
    let http = |e: &dyn std::fmt::Display| FetchError::Http(e.to_string());
    let mut builder = steward_http::client_builder()
        .map_err(|e| http(&e))?
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(deadline.saturating_duration_since(Instant::now()));
    if let Some(domain) = url.domain() {
        builder = builder.resolve_to_addrs(domain, addrs);
    }
    let client = builder.build().map_err(|e| http(&e))?;
    client.get(url.clone()).send().await.map_err(|e| http(&e))
}

async fn capped_body(response: reqwest::Response, limit: usize) -> Result<String, FetchError> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(FetchError::TooLarge { limit });
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| FetchError::Http(e.to_string()))?;
        if body.len() + chunk.len() > limit {
            return Err(FetchError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}
