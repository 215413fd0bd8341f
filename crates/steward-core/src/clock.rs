//! Time as the control layer reads it: when an approval request or an MCP elicitation was
//! made and whether it has expired, and when a remembered grant was given and whether it still
//! holds. The system clock in production; a [`ManualClock`] lets a test move time on by hand.

use std::sync::{Mutex, PoisonError};

use steward_protocol::Timestamp;

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// The current time (UTC).
    fn now(&self) -> Timestamp;
}

/// The system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        chrono::Utc::now()
    }
}

/// A clock that stands still until it is moved ([`ManualClock::advance`], [`ManualClock::set`]).
#[derive(Debug)]
pub struct ManualClock(Mutex<Timestamp>);

impl ManualClock {
    /// A clock showing `start`.
    pub fn new(start: Timestamp) -> Self {
        ManualClock(Mutex::new(start))
    }

    /// Moves the clock on by `by` (back, when negative).
    pub fn advance(&self, by: chrono::Duration) {
        let mut now = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *now += by;
    }

    /// Sets the clock to `to`.
    pub fn set(&self, to: Timestamp) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let start = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap().to_utc();
        let clock = ManualClock::new(start);
        assert_eq!(clock.now(), start);
        clock.advance(chrono::Duration::seconds(90));
        assert_eq!(clock.now(), start + chrono::Duration::seconds(90));
        clock.set(start);
        assert_eq!(clock.now(), start);
    }
}
