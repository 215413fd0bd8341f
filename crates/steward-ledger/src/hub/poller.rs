//! The poller (SPEC H4): one listing of the ledger's candidates at a time, complete
//! pagination, and backoff with jitter on failures and overload.

use std::time::Duration;

use rand::Rng;

use super::intake::{IntakeError, LedgerClient};
use crate::wire::Candidate;

/// Most pages one listing reads (at [`PAGE_LIMIT`] each) before it gives up as incomplete.
pub const MAX_PAGES: usize = 1000;

/// Candidates asked for per page.
pub const PAGE_LIMIT: u32 = 50;

/// One listing of the candidates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// Every candidate seen, in the ledger's order.
    pub items: Vec<Candidate>,
    /// `None` when the last page (`next_cursor: None`) was read: the listing is complete.
    /// Otherwise why it stopped early; the items are a partial view and absence from them means
    /// nothing.
    pub incomplete: Option<IntakeError>,
}

impl Listing {
    /// True when every page was read.
    pub fn complete(&self) -> bool {
        self.incomplete.is_none()
    }
}

/// Lists candidates, never two listings at once.
#[derive(Debug)]
pub struct Poller {
    client: LedgerClient,
    busy: tokio::sync::Mutex<()>,
    page_limit: u32,
}

/// A listing was asked for while another was running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a poll is already running")]
pub struct PollBusy;

impl Poller {
    /// A poller over `client`, asking for `page_limit` candidates per page (1 ..= 100).
    pub fn new(client: LedgerClient, page_limit: u32) -> Poller {
        Poller { client, busy: tokio::sync::Mutex::new(()), page_limit: page_limit.clamp(1, 100) }
    }

    /// Reads every page of the candidates. Errors with [`PollBusy`] (nothing read) when
    /// another listing of this poller is running. A failure on any page, a repeated cursor or
    /// more than [`MAX_PAGES`] pages give an incomplete [`Listing`].
    pub async fn poll(&self) -> Result<Listing, PollBusy> {
        let _guard = self.busy.try_lock().map_err(|_| PollBusy)?;
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..MAX_PAGES {
            let page = match self.client.candidates(cursor.as_deref(), self.page_limit).await {
                Ok(page) => page,
                Err(e) => return Ok(Listing { items, incomplete: Some(e) }),
            };
            items.extend(page.items);
            match page.next_cursor {
                None => return Ok(Listing { items, incomplete: None }),
                Some(next) => {
                    if !seen.insert(next.clone()) {
                        return Ok(Listing { items, incomplete: Some(IntakeError::Malformed) });
                    }
                    cursor = Some(next);
                }
            }
        }
        Ok(Listing { items, incomplete: Some(IntakeError::Oversized) })
    }
}

/// Exponential backoff with full jitter: after `n` failures in a row the wait is a random
/// duration in `[base·2ⁿ⁻¹ / 2, base·2ⁿ⁻¹]`, capped at `max`; a `Retry-After` from the ledger
/// is a floor.
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    failures: u32,
}

impl Backoff {
    /// Starts at `base` after the first failure and never waits longer than `max` (except
    /// when the ledger's `Retry-After` asks for more, up to one hour).
    pub fn new(base: Duration, max: Duration) -> Backoff {
        Backoff { base, max: max.max(base), failures: 0 }
    }

    /// A success: the next failure starts from `base` again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// Consecutive failures so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// Records a failure and returns how long to wait before the next try.
    pub fn next_delay(&mut self, retry_after: Option<Duration>) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let exp = self.failures.saturating_sub(1).min(20);
        let ceiling = self.base.saturating_mul(1u32 << exp).min(self.max);
        let low = ceiling / 2;
        let jittered = if ceiling > low {
            let span = (ceiling - low).as_millis() as u64;
            low + Duration::from_millis(rand::rng().random_range(0..=span))
        } else {
            ceiling
        };
        match retry_after {
            Some(floor) => jittered.max(floor),
            None => jittered,
        }
    }
}

/// The hub's last failed listing (SPEC H4), written as JSON to
/// [`super::engine::HubSettings::status_file`] so that `steward ledger polls` shows it; the
/// file is removed after a complete listing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PollFailure {
    /// The failure's class (an [`IntakeError::code`], `busy` or `incomplete`).
    pub class: String,
    /// Failed listings in a row, this one included.
    pub failures: u32,
    /// When the listing failed.
    pub at: chrono::DateTime<chrono::Utc>,
    /// When the hub lists again; `None` when it does not (`steward hub --once`).
    pub next_attempt_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl PollFailure {
    /// Writes `failure` to `path` (`Some`), or removes the file after a complete listing
    /// (`None`). Errors when the file cannot be written or removed.
    pub fn record(path: &std::path::Path, failure: Option<&PollFailure>) -> std::io::Result<()> {
        match failure {
            Some(f) => {
                let text = serde_json::to_string(f).map_err(std::io::Error::other)?;
                let tmp = path.with_extension("tmp");
                std::fs::write(&tmp, text)?;
                std::fs::rename(&tmp, path)
            }
            None => match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
        }
    }

    /// The failure recorded at `path`; `Ok(None)` when there is none (the last listing was
    /// complete, or the hub never ran). Errors when the file cannot be read or parsed.
    pub fn load(path: &std::path::Path) -> std::io::Result<Option<PollFailure>> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(std::io::Error::other),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_with_jitter_and_honours_retry_after() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
        let first = b.next_delay(None);
        assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100), "{first:?}");
        for _ in 0..10 {
            b.next_delay(None);
        }
        let later = b.next_delay(None);
        assert!(later >= Duration::from_secs(1) && later <= Duration::from_secs(2), "{later:?}");
        assert!(b.next_delay(Some(Duration::from_secs(9))) >= Duration::from_secs(9));
        b.reset();
        assert!(b.next_delay(None) <= Duration::from_millis(100));
    }
}
