//! Crash injection, a test hook: `STEWARD_HUB_CRASH_AT=<point>` makes the hub call
//! `std::process::abort()` at that journal step, so that tests can kill a real `steward hub`
//! at each step and check what a restart does. Unset (the normal case) it does nothing.

/// The environment variable naming the crash point.
pub const CRASH_VAR: &str = "STEWARD_HUB_CRASH_AT";

/// Where the hub aborts when told to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    /// `after_intent`: the `intent` row is committed, the claim is not sent.
    AfterIntent,
    /// `before_claim`: immediately before the claim request goes out.
    BeforeClaim,
    /// `after_claim`: the ledger issued the authority; its answer is not journaled yet.
    AfterClaim,
    /// `after_launch`: the run started and `started` is journaled; the run has not ended.
    AfterLaunch,
    /// `after_result`: the ledger acknowledged the result report; `acknowledged` is not
    /// journaled yet.
    AfterResult,
}

/// [`CRASH_VAR`] is set to a name that is no [`CrashPoint`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{CRASH_VAR} must be one of {}", CrashPoint::ALL.map(|p| p.as_str()).join(", "))]
pub struct UnknownCrashPoint;

impl CrashPoint {
    /// Every point, in the order the hub passes them.
    pub const ALL: [CrashPoint; 5] = [
        CrashPoint::AfterIntent,
        CrashPoint::BeforeClaim,
        CrashPoint::AfterClaim,
        CrashPoint::AfterLaunch,
        CrashPoint::AfterResult,
    ];

    /// The name used in [`CRASH_VAR`].
    pub fn as_str(self) -> &'static str {
        match self {
            CrashPoint::AfterIntent => "after_intent",
            CrashPoint::BeforeClaim => "before_claim",
            CrashPoint::AfterClaim => "after_claim",
            CrashPoint::AfterLaunch => "after_launch",
            CrashPoint::AfterResult => "after_result",
        }
    }

    /// The point named `name`, if any.
    pub fn parse(name: &str) -> Option<CrashPoint> {
        CrashPoint::ALL.into_iter().find(|p| p.as_str() == name.trim())
    }

    /// The point named by [`CRASH_VAR`]; `Err` with the value's problem when it is set to an
    /// unknown name.
    pub fn from_env() -> Result<Option<CrashPoint>, UnknownCrashPoint> {
        match std::env::var(CRASH_VAR) {
            Err(_) => Ok(None),
            Ok(v) if v.trim().is_empty() => Ok(None),
            Ok(v) => CrashPoint::parse(&v).map(Some).ok_or(UnknownCrashPoint),
        }
    }
}

/// Aborts the process when `configured` is `point`.
pub fn crash_at(configured: Option<CrashPoint>, point: CrashPoint) {
    if configured == Some(point) {
        std::process::abort();
    }
}
