//! HTTP plumbing shared by the OpenAI-compatible and Anthropic clients: the client, the key,
//! error classification, the retry loop and SSE reading.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use steward_protocol::{ChatRequest, ChatResponse, ErrorClass, StreamDelta};

use crate::retry::{self, MAX_RETRY_AFTER, RetryPolicy};
use crate::{DeltaSink, ProviderError};
use steward_secrets::Redactor;

/// Longest excerpt of an error body kept in a message, in chars.
const BODY_EXCERPT_CHARS: usize = 300;

/// An API key. Its `Debug` output never shows the value.
#[derive(Clone)]
pub(crate) struct ApiKey(String);

impl ApiKey {
    pub fn new(value: String) -> Self {
        ApiKey(value)
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([REDACTED])")
    }
}

/// What every HTTP provider holds: its name, endpoint, key and client.
#[derive(Clone)]
pub(crate) struct HttpCore {
    pub name: String,
    /// Base URL without a trailing `/`.
    pub base_url: String,
    pub key: Option<ApiKey>,
    /// Environment variable names the key came from (for messages).
    pub key_env: Vec<String>,
    pub default_model: String,
    pub retry: RetryPolicy,
    pub client: reqwest::Client,
}

impl fmt::Debug for HttpCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpCore")
            .field("name", &self.name)
            .field("base_url", &redact_url(&self.base_url))
            .field("key", &self.key)
            .field("key_env", &self.key_env)
            .field("default_model", &self.default_model)
            .field("retry", &self.retry)
            .finish()
    }
}

/// One failed try: the error and the wait the server asked for, if any.
#[derive(Debug)]
pub(crate) struct Failure {
    pub error: ProviderError,
    pub retry_after: Option<Duration>,
}

impl From<ProviderError> for Failure {
    fn from(error: ProviderError) -> Self {
        Failure { error, retry_after: None }
    }
}

/// Builds a reqwest client ([`steward_http::client_builder`]: its TLS loads the system's root
/// certificates only when a first `https://` server is checked). `timeout`: connect timeout
/// and the longest silence while reading a response.
pub(crate) fn build_client(timeout: Option<Duration>) -> Result<reqwest::Client, ProviderError> {
    let builder = steward_http::client_builder()
        .map_err(|e| ProviderError::new(ErrorClass::Config, format!("cannot set up TLS: {e}")))?;
    let mut builder = builder.user_agent(concat!("steward/", env!("CARGO_PKG_VERSION")));
    if let Some(t) = timeout {
        builder = builder.connect_timeout(t).read_timeout(t);
    }
    builder
        .build()
        .map_err(|e| ProviderError::new(ErrorClass::Config, format!("cannot build HTTP client: {}", e.without_url())))
}

impl HttpCore {
    /// The base URL without its query string and trailing `/`.
    pub fn base_without_query(&self) -> &str {
        self.base_url.split('?').next().unwrap_or_default().trim_end_matches('/')
    }

    /// The server's root, where llama.cpp's and Ollama's own endpoints are: the base URL
    /// without its query and a trailing `/v1`.
    pub fn server_root(&self) -> &str {
        let base = self.base_without_query();
        base.strip_suffix("/v1").unwrap_or(base)
    }

    /// Sends a question to the server outside the chat protocol (the key, if any, as a bearer
    /// token), waiting at most `timeout`: the JSON body of a success, `None` for anything else.
    pub async fn ask_json(&self, request: reqwest::RequestBuilder, timeout: Duration) -> Option<serde_json::Value> {
        let request = match &self.key {
            Some(key) => request.bearer_auth(key.expose()),
            None => request,
        };
        let response = request.timeout(timeout).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        response.json().await.ok()
    }

    /// Removes the key (and credential-shaped text) from a message.
    pub fn redact(&self, text: &str) -> String {
        Redactor::new(self.key.iter().map(|k| k.expose().to_string())).redact(text)
    }

    /// `{base_url}{path}`, keeping a query string of the base URL at the end.
    pub fn url(&self, path: &str) -> String {
        match self.base_url.split_once('?') {
            Some((base, query)) => format!("{}{path}?{query}", base.trim_end_matches('/')),
            None => format!("{}{path}", self.base_url),
        }
    }

    /// Sends a request and returns the response when its status is a success; otherwise the
    /// classified failure.
    pub async fn send(&self, request: reqwest::RequestBuilder) -> Result<reqwest::Response, Failure> {
        let response = request.send().await.map_err(|e| Failure::from(self.transport_error(&e, false)))?;
        let status = response.status().as_u16();
        if response.status().is_success() {
            return Ok(response);
        }
        let retry_after = retry::retry_after(response.headers(), chrono::Utc::now());
        let body = response.text().await.unwrap_or_default();
        Err(Failure { error: self.status_error(status, &body), retry_after })
    }

    /// Classifies a reqwest error. `mid_stream`: it happened while reading a streamed body.
    pub fn transport_error(&self, e: &reqwest::Error, mid_stream: bool) -> ProviderError {
        let mut detail = String::new();
        let mut source: Option<&dyn std::error::Error> = std::error::Error::source(e);
        while let Some(s) = source {
            detail.push_str(": ");
            detail.push_str(&s.to_string());
            source = s.source();
        }
        let base = redact_url(&self.base_url);
        let (class, msg) = if e.is_timeout() {
            (ErrorClass::Timeout, format!("provider '{}' at {base} timed out{detail}", self.name))
        } else if mid_stream || e.is_body() || e.is_decode() {
            (ErrorClass::StreamInterrupted, format!("the stream from provider '{}' broke off{detail}", self.name))
        } else {
            (ErrorClass::ProviderUnreachable, format!("cannot reach provider '{}' at {base}{detail}", self.name))
        };
        ProviderError::new(class, self.redact(&msg))
    }

    /// Classifies an HTTP error status with a short, redacted excerpt of the body.
    pub fn status_error(&self, status: u16, body: &str) -> ProviderError {
        let excerpt = body_excerpt(body);
        let msg = match status {
            401 | 403 => {
                let vars = if self.key_env.is_empty() { "the API key".to_string() } else { self.key_env.join(" / ") };
                format!("provider '{}' rejected the API key (HTTP {status}); check {vars}: {excerpt}", self.name)
            }
            429 => format!("provider '{}' is rate limiting requests (HTTP 429): {excerpt}", self.name),
            _ => format!("provider '{}' answered HTTP {status}: {excerpt}", self.name),
        };
        let class = if status == 429 { ErrorClass::RateLimited } else { ErrorClass::ProviderError };
        ProviderError::new(class, self.redact(&msg)).with_status(status)
    }

    /// GETs `{base_url}{path}` and returns the `id` of every entry of `data` (the model list
    /// shape shared by OpenAI and Anthropic: `{"data": [{"id": "…"}, …]}`). Not retried.
    pub async fn list_ids(&self, request: reqwest::RequestBuilder) -> Result<Vec<String>, ProviderError> {
        let response = self.send(request).await.map_err(|f| f.error)?;
        let body: serde_json::Value = response.json().await.map_err(|e| {
            ProviderError::new(
                ErrorClass::ProviderError,
                self.redact(&format!("provider '{}' sent an unreadable model list: {}", self.name, e.without_url())),
            )
        })?;
        let ids = body
            .get("data")
            .and_then(|d| d.as_array())
            .map(|items| {
                items.iter().filter_map(|m| m.get("id").and_then(|v| v.as_str()).map(str::to_string)).collect()
            })
            .unwrap_or_default();
        Ok(ids)
    }
}

/// The message of a JSON error body (`{"error": {"message": …}}` or `{"error": "…"}`), or the
/// body's first 300 chars.
fn body_excerpt(body: &str) -> String {
    let from_json = serde_json::from_str::<serde_json::Value>(body).ok().and_then(|v| {
        let err = v.get("error")?;
        err.get("message").and_then(|m| m.as_str()).or_else(|| err.as_str()).map(str::to_string)
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    let text = if text.is_empty() { "(empty body)".to_string() } else { text };
    steward_protocol::truncate_chars(&text, BODY_EXCERPT_CHARS).to_string()
}

/// One try of a model call, implemented by each HTTP provider.
#[async_trait]
pub(crate) trait Attempt: Send + Sync {
    fn core(&self) -> &HttpCore;
    /// Sends the request and reads the whole reply, passing deltas to `sink`.
    async fn attempt(&self, request: &ChatRequest, sink: DeltaSink<'_>) -> Result<ChatResponse, Failure>;
}

/// Runs `attempt` up to `retry.tries` times (SPEC P7). Stops at once when the failure is not
/// retryable, when a content delta already reached `on_delta`, or when the server asks for a
/// wait longer than [`MAX_RETRY_AFTER`]. Before each retry a [`StreamDelta::Notice`] is sent.
pub(crate) async fn with_retries<P: Attempt>(
    provider: &P,
    request: &ChatRequest,
    on_delta: DeltaSink<'_>,
) -> Result<ChatResponse, ProviderError> {
    let policy = provider.core().retry;
    let mut tries = 0;
    loop {
        tries += 1;
        let mut emitted = false;
        let result = {
            let mut tracked = |d: StreamDelta| {
                if !matches!(d, StreamDelta::Notice { .. }) {
                    emitted = true;
                }
                on_delta(d);
            };
            provider.attempt(request, &mut tracked).await
        };
        let failure = match result {
            Ok(reply) => return Ok(reply),
            Err(f) => f,
        };
        let too_long = failure.retry_after.is_some_and(|d| d > MAX_RETRY_AFTER);
        if emitted || !failure.error.is_retryable() || tries >= policy.tries || too_long {
            let mut error = failure.error;
            if tries > 1 {
                error.message.push_str(&format!(" (gave up after {tries} tries)"));
            }
            return Err(error);
        }
        let wait = policy.delay(tries + 1, failure.retry_after);
        tracing::warn!(provider = %provider.core().name, try_no = tries, wait_ms = wait.as_millis() as u64, error = %failure.error, "retrying model call");
        on_delta(StreamDelta::Notice {
            message: format!("retrying in {} ms after: {}", wait.as_millis(), failure.error),
            data: serde_json::json!({"retry": tries, "wait_ms": wait.as_millis() as u64, "class": failure.error.class}),
        });
        tokio::time::sleep(wait).await;
    }
}

/// What an SSE reader gets: the data of one event (both APIs repeat the event name inside
/// the JSON data, so the `event:` field is not needed).
pub(crate) struct SseEvent {
    pub data: String,
}

/// Why an SSE stream broke: its transport failed, or its bytes are not SSE (or not UTF-8).
pub(crate) enum SseError<E> {
    /// The transport's own error.
    Transport(E),
    /// The bytes could not be framed.
    Framing(eventsource_stream::EventStreamError<E>),
}

impl<E: fmt::Display> fmt::Display for SseError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::Transport(e) => e.fmt(f),
            SseError::Framing(e) => e.fmt(f),
        }
    }
}

/// Turns a byte stream into SSE events (framing by `eventsource-stream`, which also joins
/// UTF-8 sequences split across chunks). Transport and framing errors are passed through as
/// `Err`.
pub(crate) fn sse_events<S, E>(bytes: S) -> impl Stream<Item = Result<SseEvent, SseError<E>>>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: fmt::Display,
{
    use eventsource_stream::{EventStreamError, Eventsource};
    bytes.eventsource().map(|item| match item {
        Ok(ev) => Ok(SseEvent { data: ev.data }),
        Err(EventStreamError::Transport(e)) => Err(SseError::Transport(e)),
        Err(other) => Err(SseError::Framing(other)),
    })
}

/// What a wire's reader did with one event of a streamed reply.
pub(crate) enum Step {
    /// Read on.
    Continue,
    /// The protocol's end of the reply (`data: [DONE]`, `message_stop`, `response.completed`).
    End,
}

/// Reads the SSE events of a streamed reply into `reply`, handing the data of each (trimmed,
/// empty ones skipped) to the wire's `on_event`. Returns true when `on_event` ended the reply,
/// or when its text began repeating itself ([`crate::repetition`]; the rest is not read, and
/// dropping the stream stops the server); false when the body just ended, which the wire
/// judges. A body that broke is `StreamInterrupted`, naming the calls being received.
pub(crate) async fn read_events<S, E>(
    provider: &str,
    bytes: S,
    reply: &mut crate::reply::ReplyBuilder,
    mut on_event: impl FnMut(&mut crate::reply::ReplyBuilder, &str) -> Result<Step, Failure>,
) -> Result<bool, Failure>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: fmt::Display,
{
    let events = sse_events(bytes);
    futures::pin_mut!(events);
    while let Some(event) = events.next().await {
        let event = event.map_err(|cause| Failure::from(reply.interrupted(provider, &cause.to_string())))?;
        let data = event.data.trim();
        if data.is_empty() {
            continue;
        }
        if let Step::End = on_event(reply, data)? {
            return Ok(true);
        }
        if reply.text.is_repeating() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A transport failure while a reply body streams in. Its text leaves the URL out (it may hold
/// a key in its query) and joins the causes, which name what broke (reset, timeout …).
#[derive(Debug)]
pub(crate) struct BodyError(reqwest::Error);

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = std::error::Error::source(&self.0);
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

impl std::error::Error for BodyError {}

/// A response body as a byte stream; errors are [`BodyError`]s (described without the URL).
pub(crate) fn body_stream(response: reqwest::Response) -> impl Stream<Item = Result<Bytes, BodyError>> {
    response.bytes_stream().map(|r| r.map_err(|e| BodyError(e.without_url())))
}

/// A URL fit for messages: passwords in user info and credential-like query values replaced
/// (the shared redactor's rules, case B13), everything else kept for debugging.
pub(crate) fn redact_url(url: &str) -> String {
    Redactor::default().redact(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core(key: Option<&str>) -> HttpCore {
        HttpCore {
            name: "test".into(),
            base_url: "http://127.0.0.1:9/v1?api_key=sekrit123".into(),
            key: key.map(|k| ApiKey::new(k.into())),
            key_env: vec!["TEST_API_KEY".into()],
            default_model: "m".into(),
            retry: RetryPolicy::default(),
            client: build_client(None).unwrap(),
        }
    }

    #[test]
    fn key_never_in_debug_or_status_errors() {
        let c = core(Some("sk-test-SECRET-VALUE"));
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("sk-test-SECRET-VALUE"), "{dbg}");
        assert!(!dbg.contains("sekrit123"), "{dbg}");
        let e = c.status_error(401, r#"{"error":{"message":"Incorrect API key provided: sk-test-SECRET-VALUE"}}"#);
        assert!(!e.message.contains("sk-test-SECRET-VALUE"), "{}", e.message);
        assert!(e.message.contains("rejected the API key") && e.message.contains("TEST_API_KEY"));
        assert_eq!((e.class, e.status), (ErrorClass::ProviderError, Some(401)));
        let e = c.status_error(500, "upstream https://x.invalid/v1?key=abcdef failed; Authorization: Bearer tok_123");
        assert!(!e.message.contains("abcdef") && !e.message.contains("tok_123"), "{}", e.message);
        assert!(e.is_retryable());
        assert_eq!(c.status_error(429, "").class, ErrorClass::RateLimited);
    }

    #[tokio::test]
    async fn b13_connection_refused_names_the_redacted_base_url() {
        let c = core(None);
        let err = c.send(c.client.get(c.url("/models"))).await.unwrap_err().error;
        assert_eq!(err.class, ErrorClass::ProviderUnreachable);
        assert!(err.message.contains("http://127.0.0.1:9/v1?api_key=[REDACTED]"), "{}", err.message);
        assert!(!err.message.contains("sekrit123"));
    }
}
