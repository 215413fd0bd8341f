//! What a test needs from the machine, and the one place that decides whether a missing need
//! fails the test or was opted out of.
//!
//! Every need is required by default: a test that needs PostgreSQL and cannot reach it fails,
//! saying why. A user who cannot provide a need opts out explicitly with
//! `STEWARD_TEST_SKIP=postgres,landlock,…` ([`SKIP_VAR`]); `scripts/test.sh` then leaves the
//! tests of that need out (they carry the need's name as a word of their test name, e.g.
//! `…::postgres`, `…_on_postgres`, `netns::…`) and lists them as not run. A test of an opted-out
//! need that runs anyway (`cargo test` directly) fails too, naming the opt-out: it never passes
//! without having tested.

use std::fmt::Display;

/// The environment variable listing the needs a user opted out of, comma-separated.
pub const SKIP_VAR: &str = "STEWARD_TEST_SKIP";

/// Something a test needs beyond the workspace's own code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// A PostgreSQL server (`STEWARD_TEST_DATABASE_URL`, default 127.0.0.1:5432, db `test`).
    Postgres,
    /// Landlock in the kernel (Linux 5.13+, enabled in the LSM list).
    Landlock,
    /// Network namespaces, directly or through an unprivileged user namespace.
    Netns,
}

impl Need {
    /// Every need, in the order the documentation lists them.
    pub const ALL: [Need; 3] = [Need::Postgres, Need::Landlock, Need::Netns];

    /// The name used in [`SKIP_VAR`] and as a word of the tests' names.
    pub fn name(self) -> &'static str {
        match self {
            Need::Postgres => "postgres",
            Need::Landlock => "landlock",
            Need::Netns => "netns",
        }
    }

    /// What the need is, for messages.
    pub fn description(self) -> &'static str {
        match self {
            Need::Postgres => "a reachable PostgreSQL server",
            Need::Landlock => "Landlock in the running kernel",
            Need::Netns => "network namespaces (unshare(CLONE_NEWNET), or with CLONE_NEWUSER)",
        }
    }
}

/// The needs `value` (a [`SKIP_VAR`] value) opts out of; an unknown name is an error naming it
/// and the known names (a misspelt opt-out must not silently keep or drop tests).
pub fn parse_skip_list(value: &str) -> Result<Vec<Need>, UnknownNeed> {
    let mut needs = Vec::new();
    for word in value.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let Some(need) = Need::ALL.into_iter().find(|n| n.name() == word) else {
            return Err(UnknownNeed(word.to_string()));
        };
        needs.push(need);
    }
    Ok(needs)
}

/// A [`SKIP_VAR`] value names a need that does not exist (the name as written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownNeed(pub String);

impl Display for UnknownNeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let known: Vec<&str> = Need::ALL.iter().map(|n| n.name()).collect();
        write!(f, "{SKIP_VAR} names an unknown need {:?} (known: {})", self.0, known.join(", "))
    }
}

impl std::error::Error for UnknownNeed {}

/// True when the user opted out of `need` through [`SKIP_VAR`]. Panics when the variable names
/// an unknown need.
pub fn opted_out(need: Need) -> bool {
    let value = std::env::var(SKIP_VAR).unwrap_or_default();
    parse_skip_list(&value).unwrap_or_else(|e| panic!("{e}")).contains(&need)
}

/// Call first in a test that needs `need`: fails the test when the user opted out of it (such a
/// test must be left out by the runner, not run and passed).
pub fn require(need: Need) {
    if opted_out(need) {
        panic!(
            "this test needs {} and {SKIP_VAR} opts out of {:?}: it was not left out by the runner \
             (scripts/test.sh leaves such tests out), so it fails instead of passing untested",
            need.description(),
            need.name()
        );
    }
}

/// The test fails: `need` is missing on this machine (`why` says how the probe failed).
pub fn unavailable(need: Need, why: impl Display) -> ! {
    panic!(
        "this test needs {}, which is unavailable here: {why}. Provide it, or opt out with \
         {SKIP_VAR}={} (scripts/test.sh then leaves these tests out and lists them as not run)",
        need.description(),
        need.name()
    )
}

/// [`require`]s `need`, then gives the probe's value or fails the test with its error.
pub fn available<T, E: Display>(need: Need, probe: Result<T, E>) -> T {
    require(need);
    probe.unwrap_or_else(|e| unavailable(need, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_lists_name_known_needs_and_refuse_unknown_ones() {
        assert_eq!(parse_skip_list("").unwrap(), vec![]);
        assert_eq!(parse_skip_list("postgres, netns,").unwrap(), vec![Need::Postgres, Need::Netns]);
        let err = parse_skip_list("postgres,landlok").unwrap_err().to_string();
        assert!(err.contains("\"landlok\"") && err.contains("landlock"), "{err}");
    }

    #[test]
    #[should_panic(expected = "STEWARD_TEST_SKIP=postgres")]
    fn a_missing_need_fails_naming_the_opt_out() {
        unavailable(Need::Postgres, "connection refused")
    }
}
