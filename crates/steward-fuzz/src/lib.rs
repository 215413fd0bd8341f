//! Test support for Steward's fuzz targets: property-based tests (proptest) that each crate
//! runs from its `tests/fuzz_*.rs`.
//!
//! A target first replays its seed corpus (`fuzz/corpus/TARGET/*` at the workspace root, one
//! input per file, decoded by the target), then runs generated cases:
//!
//! - in the normal test run, [`DEFAULT_CASES`] cases (or `STEWARD_FUZZ_CASES`) from a fixed
//!   seed, so the run is repeatable;
//! - with `STEWARD_FUZZ_SECONDS=N` (what `scripts/fuzz.sh TARGET N` sets), fresh random runs
//!   one after another until `N` seconds are spent; it then prints the executions per second.
//!
//! A failing case is shrunk by proptest and reported in the panic message with the input.
#![forbid(unsafe_code)]

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use proptest;
use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

/// Generated cases of one target in the normal test run.
pub const DEFAULT_CASES: u32 = 256;
/// Cases of one runner within a time-budgeted run; runners are started until the budget is
/// spent.
const BUDGET_BATCH: u32 = 100;

/// The directory of a target's seed corpus: `fuzz/corpus/TARGET` at the workspace root.
pub fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target)
}

/// The seed inputs of `target`, sorted by file name, as `(file name, bytes)`. A missing
/// corpus directory is an error: every target ships seeds.
pub fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir(target);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("fuzz target {target}: cannot read its corpus {}: {e}", dir.display()));
    let mut files: Vec<(String, Vec<u8>)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let bytes = std::fs::read(e.path()).unwrap_or_else(|err| panic!("{name}: {err}"));
            (name, bytes)
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "fuzz target {target}: the corpus {} is empty", dir.display());
    files
}

/// The time budget of this run, from `STEWARD_FUZZ_SECONDS`; `None` in the normal test run.
pub fn budget() -> Option<Duration> {
    let text = std::env::var("STEWARD_FUZZ_SECONDS").ok()?;
    let seconds: u64 = text.trim().parse().unwrap_or_else(|_| panic!("STEWARD_FUZZ_SECONDS={text} is not a number"));
    Some(Duration::from_secs(seconds))
}

fn cases(default: u32) -> u32 {
    std::env::var("STEWARD_FUZZ_CASES").ok().and_then(|t| t.trim().parse().ok()).unwrap_or(default)
}

/// One fuzz target: replays the corpus through `seed` (bytes of one file to inputs; none when
/// the file does not decode) and `check`, then runs `strategy`'s cases through `check`
/// ([`DEFAULT_CASES`] of them in the normal test run). Panics on the first failing input,
/// naming the target and the (shrunk) input.
pub fn run<S, D, F>(target: &str, strategy: S, seed: D, check: F)
where
    S: Strategy,
    S::Value: Debug,
    D: Fn(&[u8]) -> Vec<S::Value>,
    F: Fn(S::Value) -> Result<(), TestCaseError>,
{
    run_cases(target, DEFAULT_CASES, strategy, seed, check);
}

/// [`run`] with `normal_cases` generated cases in the normal test run, for targets whose
/// cases are slow (a process or a filesystem per case).
pub fn run_cases<S, D, F>(target: &str, normal_cases: u32, strategy: S, seed: D, check: F)
where
    S: Strategy,
    S::Value: Debug,
    D: Fn(&[u8]) -> Vec<S::Value>,
    F: Fn(S::Value) -> Result<(), TestCaseError>,
{
    let mut replayed = 0usize;
    for (name, bytes) in corpus(target) {
        for value in seed(&bytes) {
            let shown = format!("{value:?}");
            if let Err(e) = check(value) {
                panic!("fuzz target {target}: seed {name} fails: {e}\ninput: {shown}");
            }
            replayed += 1;
        }
    }
    let counter = std::cell::Cell::new(0u64);
    let counted = |value: S::Value| {
        counter.set(counter.get() + 1);
        check(value)
    };
    let base = Config { failure_persistence: None, max_shrink_iters: 4_096, ..Config::default() };
    match budget() {
        None => {
            let config = Config { cases: cases(normal_cases), ..base };
            let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
            report(target, runner.run(&strategy, counted));
        }
        Some(budget) => {
            let started = Instant::now();
            let mut runs = 0u32;
            while started.elapsed() < budget {
                let mut runner = TestRunner::new(Config { cases: BUDGET_BATCH, ..base.clone() });
                report(target, runner.run(&strategy, counted));
                runs += 1;
            }
            let seconds = started.elapsed().as_secs_f64();
            let executions = counter.get();
            println!(
                "fuzz {target}: {executions} executions in {seconds:.1} s ({:.0}/s), {runs} runs, {replayed} seeds, 0 failures",
                executions as f64 / seconds.max(f64::EPSILON)
            );
        }
    }
}

fn report<V: Debug>(target: &str, result: Result<(), TestError<V>>) {
    match result {
        Ok(()) => {}
        Err(TestError::Fail(reason, value)) => panic!("fuzz target {target} fails: {reason}\nminimal input: {value:?}"),
        Err(TestError::Abort(reason)) => panic!("fuzz target {target} aborted: {reason}"),
    }
}
