//! Cancellation and the run's time limit (SPEC A1, A7) around anything the run awaits.

use std::future::Future;

use tokio_util::sync::CancellationToken;

/// Why an awaited step was cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    /// The run was cancelled.
    Cancelled,
    /// `max_total_runtime_ms` ran out.
    Timeout,
}

impl Interrupt {
    /// `cancelled` or `timeout`.
    pub fn as_str(self) -> &'static str {
        match self {
            Interrupt::Cancelled => "cancelled",
            Interrupt::Timeout => "timeout",
        }
    }
}

/// A run's cancellation token and deadline (tokio time, so tests can pause the clock).
#[derive(Debug, Clone)]
pub struct Interruptible {
    /// Cancelled by Ctrl-C, the UI, or the run ending.
    pub cancel: CancellationToken,
    /// When the run's time is up.
    pub deadline: tokio::time::Instant,
}

impl Interruptible {
    /// Awaits `fut` unless the run is cancelled or its deadline passes first; then `fut` is
    /// dropped (which stops it) and the reason is returned.
    pub async fn run<F: Future>(&self, fut: F) -> Result<F::Output, Interrupt> {
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(Interrupt::Cancelled),
            _ = tokio::time::sleep_until(self.deadline) => Err(Interrupt::Timeout),
            out = fut => Ok(out),
        }
    }

    /// The reason to stop now, if any.
    pub fn check(&self) -> Option<Interrupt> {
        if self.cancel.is_cancelled() {
            Some(Interrupt::Cancelled)
        } else if tokio::time::Instant::now() >= self.deadline {
            Some(Interrupt::Timeout)
        } else {
            None
        }
    }
}
