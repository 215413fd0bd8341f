//! Retry rules for model calls (SPEC P7).
//!
//! Only model calls are retried, never tool executions. A call is tried again on HTTP 408,
//! 429, 5xx (including Anthropic's 529 "overloaded") and on connection failures, but only
//! while no delta has reached the caller. Waits grow exponentially from a base (default
//! 500 ms) with jitter, and are never shorter than what the server asked for with
//! `Retry-After` (RFC 9110 §10.2.3: delay in seconds or an HTTP date) or `retry-after-ms`
//! (milliseconds, sent by OpenAI and Azure).

use std::time::Duration;

/// Default number of tries in total (first try included).
pub const DEFAULT_TRIES: u32 = 3;
/// Default base of the exponential backoff, in ms.
pub const DEFAULT_BACKOFF_MS: u64 = 500;
/// Longest wait the client accepts from a `Retry-After` header; a server asking for longer
/// gets no retry and the error is returned at once.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// Longest computed backoff between two tries.
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// True for the statuses that are worth another try: 408, 429, 500–599 (which includes 529).
pub fn is_retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..=599).contains(&status)
}

/// How many tries and how long to wait between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in total, at least 1.
    pub tries: u32,
    /// Base of the exponential backoff.
    pub backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { tries: DEFAULT_TRIES, backoff: Duration::from_millis(DEFAULT_BACKOFF_MS) }
    }
}

impl RetryPolicy {
    /// The wait before try number `next_try` (2 for the first retry): `backoff × 2^(n-2)`
    /// capped at 8 s, plus up to 25 % jitter, and never less than `server_asked`.
    pub fn delay(&self, next_try: u32, server_asked: Option<Duration>) -> Duration {
        let exp = next_try.saturating_sub(2).min(16);
        let base = self.backoff.saturating_mul(1u32 << exp).min(MAX_BACKOFF);
        let jitter_ms = if base.is_zero() { 0 } else { rand::random_range(0..=(base.as_millis() as u64 / 4)) };
        let computed = base + Duration::from_millis(jitter_ms);
        match server_asked {
            Some(asked) => asked.max(base),
            None => computed,
        }
    }
}

/// Reads the wait a server asked for from response headers: `retry-after-ms` (ms) first,
/// then `Retry-After` as delta-seconds or as an HTTP date (IMF-fixdate, RFC 9110 §5.6.7).
/// `now` is the current time, used for dates. Returns `None` when neither header is usable.
pub fn retry_after(headers: &reqwest::header::HeaderMap, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    if let Some(d) = headers.get("retry-after-ms").and_then(|v| v.to_str().ok()).and_then(parse_retry_after_ms) {
        return Some(d);
    }
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    parse_retry_after(value, now)
}

/// Parses a `retry-after-ms` value (a non-negative number of milliseconds, possibly
/// fractional).
pub fn parse_retry_after_ms(value: &str) -> Option<Duration> {
    let ms: f64 = value.trim().parse().ok()?;
    (ms.is_finite() && ms >= 0.0).then(|| Duration::from_secs_f64(ms / 1000.0))
}

/// Parses a `Retry-After` value: delta-seconds (`"120"`, fractional accepted) or an HTTP
/// date (`"Wed, 21 Oct 2015 07:28:00 GMT"`), relative to `now`. A date in the past gives
/// zero.
pub fn parse_retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = date.with_timezone(&chrono::Utc) - now;
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn retry_after_seconds_date_and_ms() {
        let now = chrono::Utc.with_ymd_and_hms(2015, 10, 21, 7, 27, 0).unwrap();
        assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after(" 1.5 ", now), Some(Duration::from_millis(1500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now), Some(Duration::from_secs(60)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("-3", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after_ms("250"), Some(Duration::from_millis(250)));

        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "7".parse().unwrap());
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(7)));
        headers.insert("retry-after-ms", "1200".parse().unwrap());
        assert_eq!(retry_after(&headers, now), Some(Duration::from_millis(1200)));
    }

    #[test]
    fn delay_grows_is_capped_and_honours_the_server() {
        let p = RetryPolicy { tries: 5, backoff: Duration::from_millis(100) };
        let d2 = p.delay(2, None);
        assert!(d2 >= Duration::from_millis(100) && d2 <= Duration::from_millis(125));
        let d3 = p.delay(3, None);
        assert!(d3 >= Duration::from_millis(200) && d3 <= Duration::from_millis(250));
        assert!(p.delay(30, None) <= MAX_BACKOFF + MAX_BACKOFF / 4);
        assert_eq!(p.delay(2, Some(Duration::from_secs(3))), Duration::from_secs(3));
    }

    #[test]
    fn retryable_statuses() {
        for s in [408, 429, 500, 502, 503, 504, 529] {
            assert!(is_retryable_status(s), "{s}");
        }
        for s in [400, 401, 403, 404, 422] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }
}
