//! `steward eval` (SPEC E): golden cases run in fresh temporary git workspaces, with the
//! scripted fake provider or a real one, scored by rules — never by a model — on the path a
//! run took as well as its answer.
//!
//! - [`case`]: Steward's case format (TOML, documented there) and [`Case`];
//! - [`mreric`]: MrEric's golden file (`phase9_golden_cases.json`) read unchanged;
//! - [`scenarios`]: built-in fake scenarios;
//! - [`runner`]: one run of a case in its own workspace, state and configuration;
//! - [`pipeline`]: who plays each role when a case runs the role pipeline;
//! - [`scorer`] and [`leak`]: the checks;
//! - [`report`]: per-case verdicts and totals as text, JSON or JUnit.
//!
//! Cases Steward cannot run (a capability it lacks, no provider) are skipped with the
//! reason, never passed.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod case;
pub mod leak;
pub mod mreric;
pub mod outcome;
pub mod pipeline;
pub mod report;
pub mod runner;
pub mod scenarios;
pub mod scorer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use steward_policy::Redactor;

pub use case::{ApprovalAction, Approvals, Case, Expect};
pub use outcome::{RunOutcome, RunSummary};
pub use report::{CaseReport, EvalReport, RunReport, Verdict};
pub use runner::EvalOptions;
pub use scorer::{CheckFailure, score};

/// The default cases shipped with Steward (`cases/default.toml`).
pub const DEFAULT_CASES: &str = include_str!("../cases/default.toml");

/// Errors loading or selecting cases.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A file or directory could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        message: String,
    },
    /// A case file is invalid.
    #[error("{source_name}: {message}")]
    Parse {
        /// The file (or `default cases`).
        source_name: String,
        /// What is wrong (with the line, for TOML).
        message: String,
    },
    /// Two cases share a name.
    #[error("two cases are named `{0}`")]
    DuplicateCase(String),
    /// `--case NAME` names no case.
    #[error("no case named `{0}`")]
    UnknownCase(String),
}

/// Parses case file text: MrEric's golden JSON array when the text is a JSON array of that
/// shape, else Steward's TOML format. `source_name` labels errors.
pub fn parse_cases(text: &str, source_name: &str) -> Result<Vec<Case>, EvalError> {
    let parse_error = |message: String| EvalError::Parse { source_name: source_name.to_string(), message };
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        if mreric::looks_like_golden_file(&value) {
            return mreric::parse(text).map_err(|e| parse_error(e.to_string()));
        }
        return Err(parse_error(
            "a JSON case file must be a golden array (an array of objects with name, task, scenario)".into(),
        ));
    }
    let mut cases = case::parse_toml(text).map_err(|e| parse_error(e.to_string()))?;
    check_unique(&cases)?;
    link_earlier(&mut cases);
    Ok(cases)
}

/// Fills in [`Case::earlier`] of each case whose `after` names another case of `cases` (one
/// that does not continue a case itself).
fn link_earlier(cases: &mut [Case]) {
    let all: Vec<Case> = cases.to_vec();
    for case in cases.iter_mut() {
        if let Some(after) = &case.after {
            case.earlier = all.iter().find(|c| &c.name == after && c.after.is_none()).cloned().map(Box::new);
        }
    }
}

/// The default cases.
pub fn default_cases() -> Result<Vec<Case>, EvalError> {
    parse_cases(DEFAULT_CASES, "default cases")
}

/// Loads a case file, or every `*.toml` and `*.json` file of a directory (sorted by name).
pub fn load_cases(path: &Path) -> Result<Vec<Case>, EvalError> {
    let io = |e: std::io::Error| EvalError::Io { path: path.to_path_buf(), message: e.to_string() };
    let files = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "toml" || x == "json"))
            .collect();
        files.sort();
        files
    } else {
        vec![path.to_path_buf()]
    };
    let mut cases = Vec::new();
    for file in files {
        let text =
            std::fs::read_to_string(&file).map_err(|e| EvalError::Io { path: file.clone(), message: e.to_string() })?;
        cases.extend(parse_cases(&text, &file.display().to_string())?);
    }
    check_unique(&cases)?;
    Ok(cases)
}

fn check_unique(cases: &[Case]) -> Result<(), EvalError> {
    let mut names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    match names.windows(2).find(|w| w[0] == w[1]) {
        Some(w) => Err(EvalError::DuplicateCase(w[0].to_string())),
        None => Ok(()),
    }
}

/// The cases named `name` (exactly one), or all of them when `name` is `None`.
pub fn select(cases: Vec<Case>, name: Option<&str>) -> Result<Vec<Case>, EvalError> {
    match name {
        None => Ok(cases),
        Some(name) => {
            let chosen: Vec<Case> = cases.into_iter().filter(|c| c.name == name).collect();
            if chosen.is_empty() { Err(EvalError::UnknownCase(name.to_string())) } else { Ok(chosen) }
        }
    }
}

/// Runs `case` `options.runs` times (at least once) unless it is skipped, and scores each run.
pub async fn run_case(case: &Case, options: &EvalOptions, redactor: &Arc<Redactor>) -> CaseReport {
    if let Some(reason) = runner::skip_reason(case, options) {
        return CaseReport {
            name: case.name.clone(),
            verdict: Verdict::Skipped,
            skip_reason: Some(reason),
            runs: Vec::new(),
            measures: report::Measures::default(),
        };
    }
    let mut runs = Vec::new();
    for _ in 0..options.runs.max(1) {
        let outcome = runner::run_once(case, options, redactor).await;
        let failures = score(&case.expect, &outcome, redactor);
        runs.push(RunReport {
            passed: failures.is_empty(),
            failures,
            status: outcome.summary.as_ref().map(|s| format!("{:?}", s.status).to_lowercase()),
            rounds: outcome.summary.as_ref().map_or(0, |s| s.rounds),
            tool_calls: outcome.summary.as_ref().map_or(0, |s| s.tool_calls),
            tokens: outcome.tokens(),
            duration_ms: outcome.duration_ms,
        });
    }
    let verdict = if runs.iter().all(|r| r.passed) { Verdict::Passed } else { Verdict::Failed };
    let measures = report::Measures::of(runs.iter());
    CaseReport { name: case.name.clone(), verdict, skip_reason: None, runs, measures }
}

/// Runs every case in order; `on_case` sees each result as it is ready (for progress on
/// stderr). The redactor knows the secret values of this process's environment.
pub async fn run_cases(cases: &[Case], options: &EvalOptions, on_case: &mut dyn FnMut(&CaseReport)) -> EvalReport {
    let redactor = Arc::new(Redactor::from_env_vars(std::env::vars()));
    let mut reports = Vec::new();
    for case in cases {
        let report = run_case(case, options, &redactor).await;
        on_case(&report);
        reports.push(report);
    }
    EvalReport::new(reports)
}
