//! Strict intake (SPEC H5): the hub's HTTP client of the ledger API.
//!
//! Every response is distrusted until it has passed, in order: no redirect (a 3xx is an
//! error, never followed), a status the endpoint may answer, a body of at most
//! [`MAX_RESPONSE_BYTES`] (read as a stream, reading stops past the limit), no copy of the
//! hub's own bearer credential anywhere in the body (neither in its bytes nor in any string or
//! key once JSON escapes are decoded), and typed parsing into the [`crate::wire`] types, which
//! refuse unknown fields. No proxy is used (environment proxy
//! settings are ignored). Errors are fixed codes ([`IntakeError`]); the server's own text is
//! never copied into an error or a log line.

use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::wire::{CandidatePage, ClaimRequest, ClaimResponse, ResultAck, ResultReport};

/// Largest response body accepted: 4 MiB.
pub const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// Longest wait for a whole request (connect, send, read), 30 s.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest wait for a connection, 5 s.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The hub's bearer credential. Its value never appears in `Debug` output, errors or logs.
#[derive(Clone)]
pub struct HubToken(String);

impl HubToken {
    /// Wraps a token (surrounding whitespace removed); `None` when it is empty or holds a
    /// character that cannot be sent in an HTTP header (controls, non-ASCII).
    pub fn new(token: &str) -> Option<HubToken> {
        let token = token.trim();
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return None;
        }
        Some(HubToken(token.to_string()))
    }

    fn expose(&self) -> &str {
        &self.0
    }

    /// `base` with this token added to its known secret values, so that the token is replaced by
    /// `[REDACTED]` wherever that redactor is applied (a job's task, its events, its answer).
    pub fn redacting(&self, base: &steward_policy::Redactor) -> steward_policy::Redactor {
        base.clone().with_values([self.0.clone()])
    }
}

impl std::fmt::Debug for HubToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HubToken(<hidden>)")
    }
}

/// Why a ledger response was refused: fixed codes, never the server's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntakeError {
    /// The body was larger than [`MAX_RESPONSE_BYTES`] (announced or read).
    #[error("oversized: the ledger's response is larger than 4 MiB")]
    Oversized,
    /// The ledger answered with a redirect (3xx); redirects are never followed.
    #[error("redirect: the ledger answered with a redirect, which is never followed")]
    Redirect,
    /// The body holds a field this version does not know.
    #[error("unknown_field: the ledger's response holds a field this hub does not know")]
    UnknownField,
    /// The body is not the JSON shape expected.
    #[error("malformed: the ledger's response is not the expected JSON")]
    Malformed,
    /// The body contains the hub's own bearer credential.
    #[error("credential_echo: the ledger's response contains the hub's credential")]
    CredentialEcho,
    /// 429: the ledger is overloaded; wait at least `retry_after` when given.
    #[error("overloaded: the ledger asked to slow down (429)")]
    Overloaded {
        /// The `Retry-After` delay, when the response had a valid one.
        retry_after: Option<Duration>,
    },
    /// 503, or no connection at all: try again later (`retry_after` from a 503's header).
    #[error("unavailable: the ledger cannot be reached or is unavailable")]
    Unavailable {
        /// The `Retry-After` delay, when a 503 had a valid one.
        retry_after: Option<Duration>,
    },
    /// 401 or 403: the hub's credential was refused.
    #[error("unauthorized: the ledger refused the hub's credential")]
    Unauthorized,
    /// 404: the ledger does not know the object (or has no ledger API).
    #[error("not_found: the ledger does not know it")]
    NotFound,
    /// 409 or 422: the ledger refused the request as conflicting or invalid.
    #[error("rejected: the ledger refused the request (status {status})")]
    Rejected {
        /// The HTTP status.
        status: u16,
    },
    /// Any other status (a 5xx other than 503, an unexpected 1xx/2xx/4xx).
    #[error("bad_status: the ledger answered with status {status}")]
    BadStatus {
        /// The HTTP status.
        status: u16,
    },
    /// The request timed out or the connection broke after it may have been sent.
    #[error("timeout: no complete answer from the ledger in time")]
    Timeout,
    /// The URL or the client could not be built.
    #[error("invalid: {0}")]
    Invalid(&'static str),
}

impl IntakeError {
    /// The fixed code: `oversized`, `redirect`, `unknown_field`, `malformed`,
    /// `credential_echo`, `overloaded`, `unavailable`, `unauthorized`, `not_found`,
    /// `rejected`, `bad_status`, `timeout`, `invalid`.
    pub fn code(&self) -> &'static str {
        match self {
            IntakeError::Oversized => "oversized",
            IntakeError::Redirect => "redirect",
            IntakeError::UnknownField => "unknown_field",
            IntakeError::Malformed => "malformed",
            IntakeError::CredentialEcho => "credential_echo",
            IntakeError::Overloaded { .. } => "overloaded",
            IntakeError::Unavailable { .. } => "unavailable",
            IntakeError::Unauthorized => "unauthorized",
            IntakeError::NotFound => "not_found",
            IntakeError::Rejected { .. } => "rejected",
            IntakeError::BadStatus { .. } => "bad_status",
            IntakeError::Timeout => "timeout",
            IntakeError::Invalid(_) => "invalid",
        }
    }

    /// The delay the ledger asked for (`Retry-After` of a 429 or 503).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            IntakeError::Overloaded { retry_after } | IntakeError::Unavailable { retry_after } => *retry_after,
            _ => None,
        }
    }

    /// True when the ledger certainly did not act on the request: it was never sent (no
    /// connection), or refused before processing (429, 503, 401/403). A claim that failed
    /// otherwise has an unknown outcome.
    pub fn not_processed(&self) -> bool {
        matches!(
            self,
            IntakeError::Overloaded { .. }
                | IntakeError::Unavailable { .. }
                | IntakeError::Unauthorized
                | IntakeError::Invalid(_)
        )
    }
}

/// The ledger API client of one hub: base URL (`http://127.0.0.1:PORT`) and bearer token.
#[derive(Clone, Debug)]
pub struct LedgerClient {
    http: reqwest::Client,
    base: reqwest::Url,
    token: HubToken,
}

impl LedgerClient {
    /// A client of the ledger at `base_url` (`http` or `https`, no user info, no query).
    /// Redirects are never followed, proxies never used, each request waits at most
    /// [`REQUEST_TIMEOUT`]. Errors: [`IntakeError::Invalid`].
    pub fn new(base_url: &str, token: HubToken) -> Result<LedgerClient, IntakeError> {
        let base = reqwest::Url::parse(base_url).map_err(|_| IntakeError::Invalid("the ledger URL does not parse"))?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(IntakeError::Invalid("the ledger URL must be http:// or https://"));
        }
        if !base.username().is_empty() || base.password().is_some() || base.query().is_some() {
            return Err(IntakeError::Invalid("the ledger URL must not hold user info or a query"));
        }
        // The system's root certificates are loaded only when an `https://` ledger is checked.
        let http = steward_http::client_builder()
            .map_err(|_| IntakeError::Invalid("cannot set up TLS"))?
            .user_agent(concat!("steward-hub/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|_| IntakeError::Invalid("cannot build the HTTP client"))?;
        Ok(LedgerClient { http, base, token })
    }

    fn url(&self, path: &str) -> Result<reqwest::Url, IntakeError> {
        let base = self.base.as_str().trim_end_matches('/');
        reqwest::Url::parse(&format!("{base}{path}")).map_err(|_| IntakeError::Invalid("cannot build a ledger URL"))
    }

    /// `GET /api/ledger/candidates?limit=L[&cursor=C]`: one page of approved candidates.
    pub async fn candidates(&self, cursor: Option<&str>, limit: u32) -> Result<CandidatePage, IntakeError> {
        let mut url = self.url("/api/ledger/candidates")?;
        {
            let mut query = url.query_pairs_mut();
            query.append_pair("limit", &limit.to_string());
            if let Some(cursor) = cursor {
                query.append_pair("cursor", cursor);
            }
        }
        self.send(self.http.get(url), &[StatusCode::OK]).await
    }

    /// `POST /api/ledger/claims`: asks for the one-time authority of an approval.
    pub async fn claim(&self, claim: &ClaimRequest) -> Result<ClaimResponse, IntakeError> {
        let url = self.url("/api/ledger/claims")?;
        self.send_json(url, claim, &[StatusCode::OK, StatusCode::CREATED]).await
    }

    /// `POST /api/ledger/authorities/{authority_id}/result`: reports an attempt's result.
    /// Idempotent per attempt: a duplicate answers `first: false`.
    pub async fn report(&self, authority_id: &str, report: &ResultReport) -> Result<ResultAck, IntakeError> {
        if authority_id.is_empty() || !authority_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(IntakeError::Invalid("the authority id is not an id"));
        }
        let url = self.url(&format!("/api/ledger/authorities/{authority_id}/result"))?;
        self.send_json(url, report, &[StatusCode::OK, StatusCode::CREATED]).await
    }

    async fn send_json<B: Serialize, T: DeserializeOwned>(
        &self,
        url: reqwest::Url,
        body: &B,
        ok: &[StatusCode],
    ) -> Result<T, IntakeError> {
        let bytes = serde_json::to_vec(body).map_err(|_| IntakeError::Invalid("cannot encode the request"))?;
        let request = self.http.post(url).header(reqwest::header::CONTENT_TYPE, "application/json").body(bytes);
        self.send(request, ok).await
    }

    async fn send<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
        ok: &[StatusCode],
    ) -> Result<T, IntakeError> {
        let response = request
            .bearer_auth(self.token.expose())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| {
                if e.is_connect() { IntakeError::Unavailable { retry_after: None } } else { IntakeError::Timeout }
            })?;
        let credential = self.token.expose().as_bytes();
        if response.headers().values().any(|v| contains(v.as_bytes(), credential)) {
            return Err(IntakeError::CredentialEcho);
        }
        let status = response.status();
        if status.is_redirection() {
            return Err(IntakeError::Redirect);
        }
        let retry_after = retry_after(response.headers(), chrono::Utc::now());
        match status {
            StatusCode::TOO_MANY_REQUESTS => return Err(IntakeError::Overloaded { retry_after }),
            StatusCode::SERVICE_UNAVAILABLE => return Err(IntakeError::Unavailable { retry_after }),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => return Err(IntakeError::Unauthorized),
            StatusCode::NOT_FOUND => return Err(IntakeError::NotFound),
            StatusCode::CONFLICT | StatusCode::UNPROCESSABLE_ENTITY | StatusCode::BAD_REQUEST => {
                return Err(IntakeError::Rejected { status: status.as_u16() });
            }
            s if !ok.contains(&s) => return Err(IntakeError::BadStatus { status: s.as_u16() }),
            _ => {}
        }
        let body = read_limited(response).await?;
        check_body::<T>(&body, self.token.expose())
    }
}

/// Reads the body as a stream and stops as soon as it passes [`MAX_RESPONSE_BYTES`]; a
/// `Content-Length` above the limit is refused before reading.
async fn read_limited(response: reqwest::Response) -> Result<Vec<u8>, IntakeError> {
    if response.content_length().is_some_and(|n| n > MAX_RESPONSE_BYTES as u64) {
        return Err(IntakeError::Oversized);
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| IntakeError::Timeout)?;
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(IntakeError::Oversized);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The checks on a complete body: no echo of `credential` in its bytes, nor in any string or
/// object key of the JSON once decoded (a JSON escape such as `\u0073` cannot hide it), then
/// typed parsing. Errors: [`IntakeError::CredentialEcho`], [`IntakeError::UnknownField`],
/// [`IntakeError::Malformed`].
pub fn check_body<T: DeserializeOwned>(body: &[u8], credential: &str) -> Result<T, IntakeError> {
    if !credential.is_empty() && contains(body, credential.as_bytes()) {
        return Err(IntakeError::CredentialEcho);
    }
    if !credential.is_empty() {
        // A body that is not JSON at all is refused by the typed parse below.
        if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body)
            && holds(&value, credential)
        {
            return Err(IntakeError::CredentialEcho);
        }
    }
    serde_json::from_slice(body).map_err(|e| {
        // serde's own message (never the server's text) tells an unknown field apart.
        if e.is_data() && e.to_string().starts_with("unknown field") {
            IntakeError::UnknownField
        } else {
            IntakeError::Malformed
        }
    })
}

/// True when a decoded string or object key anywhere in `value` contains `needle`.
fn holds(value: &serde_json::Value, needle: &str) -> bool {
    use serde_json::Value;
    // Iterative, so that a deeply nested body cannot exhaust the stack.
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::String(s) if s.contains(needle) => return true,
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => {
                if map.keys().any(|k| k.contains(needle)) {
                    return true;
                }
                pending.extend(map.values());
            }
            _ => {}
        }
    }
    false
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// The `Retry-After` header as a delay from `now`: whole seconds (`120`) or an HTTP date
/// (`Wed, 21 Oct 2026 07:28:00 GMT`; a date in the past gives zero). `None` when absent or
/// unreadable; at most one hour is honoured.
pub fn retry_after(headers: &reqwest::header::HeaderMap, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    let delay = if let Ok(seconds) = value.parse::<u64>() {
        Duration::from_secs(seconds)
    } else {
        let at = chrono::DateTime::parse_from_rfc2822(value).ok()?.with_timezone(&chrono::Utc);
        (at - now).to_std().unwrap_or(Duration::ZERO)
    };
    Some(delay.min(Duration::from_secs(3600)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_hidden_from_debug() {
        let token = HubToken::new("sekrit-value-123").unwrap();
        assert!(!format!("{token:?}").contains("sekrit"));
        let client = LedgerClient::new("http://127.0.0.1:1", token).unwrap();
        assert!(!format!("{client:?}").contains("sekrit"));
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z").unwrap().with_timezone(&chrono::Utc);
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::RETRY_AFTER, "7".parse().unwrap());
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(7)));
        headers.insert(reqwest::header::RETRY_AFTER, "Mon, 30 Nov 2026 12:00:30 GMT".parse().unwrap());
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(30)));
        headers.insert(reqwest::header::RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers, now), None);
    }

    #[test]
    fn bodies_are_typed_and_strict() {
        let page = br#"{"items":[],"next_cursor":null}"#;
        assert!(check_body::<CandidatePage>(page, "tok").is_ok());
        let extra = br#"{"items":[],"next_cursor":null,"grant":"write"}"#;
        assert_eq!(check_body::<CandidatePage>(extra, "tok").unwrap_err(), IntakeError::UnknownField);
        assert_eq!(check_body::<CandidatePage>(b"<html>", "tok").unwrap_err(), IntakeError::Malformed);
        let echo = br#"{"items":[],"next_cursor":"tok"}"#;
        assert_eq!(check_body::<CandidatePage>(echo, "tok").unwrap_err(), IntakeError::CredentialEcho);
        // Escaped, in a value or in a key: decoded first, then refused.
        let escaped = br#"{"items":[],"next_cursor":"x-\u0073tw_secret1"}"#;
        assert_eq!(check_body::<CandidatePage>(escaped, "stw_secret1").unwrap_err(), IntakeError::CredentialEcho);
        let key = br#"{"items":[],"next_cursor":null,"\u0073tw_secret1":1}"#;
        assert_eq!(check_body::<CandidatePage>(key, "stw_secret1").unwrap_err(), IntakeError::CredentialEcho);
        let nested = br#"{"items":[{"approval":{},"text":["a","st\u0077_secret1"]}],"next_cursor":null}"#;
        assert_eq!(check_body::<CandidatePage>(nested, "stw_secret1").unwrap_err(), IntakeError::CredentialEcho);
    }

    #[test]
    fn the_token_is_redacted_by_a_jobs_redactor() {
        let token = HubToken::new("stw_0123456789abcdef0123").unwrap();
        let redactor = token.redacting(&steward_policy::Redactor::new(Vec::<String>::new()));
        let out = redactor.redact("summarise; the key is stw_0123456789abcdef0123 ok");
        assert!(!out.contains("stw_0123456789abcdef0123") && out.contains(steward_policy::REDACTED), "{out}");
    }
}
