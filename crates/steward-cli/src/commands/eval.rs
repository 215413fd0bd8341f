//! `steward eval`: golden cases with rule-based scoring (SPEC E), run by `steward-evals`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use steward_evals::{EvalOptions, Verdict};

use crate::commands::{ProviderArgs, usage_error};

/// `steward eval` arguments.
#[derive(Args)]
pub struct EvalArgs {
    /// A case file (Steward's TOML format, or a golden JSON array such as `phase9_golden_cases.json`) or a directory of them; default: the cases shipped with Steward.
    cases: Option<PathBuf>,
    /// Run only the case with this name.
    #[arg(long)]
    case: Option<String>,
    /// Runs per case; the report gives the median and spread.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    // The model planner of the cases without a fake scenario; a [providers.NAME] is looked up in the case's config.
    #[command(flatten)]
    model: ProviderArgs,
    /// Report format on stdout.
    #[arg(long, default_value = "text", value_parser = ["text", "json", "junit"])]
    format: String,
}

/// `steward eval`: exit 0 when no case failed (skips allowed), 1 when any failed, 2 on a usage
/// error. The report goes to stdout, progress to stderr.
pub async fn eval(args: EvalArgs) -> Result<u8> {
    let cases = match &args.cases {
        Some(path) => steward_evals::load_cases(path),
        None => steward_evals::default_cases(),
    }
    .map_err(|e| usage_error(&e.to_string()))?;
    let cases = steward_evals::select(cases, args.case.as_deref()).map_err(|e| usage_error(&e.to_string()))?;
    let options = EvalOptions {
        runs: args.runs,
        provider: args.model.provider,
        model: args.model.model,
        base_url: args.model.base_url,
        config_overlay: None,
        tool_worker: crate::home::own_tool_worker(),
    };
    let report = steward_evals::run_cases(&cases, &options, &mut |case| {
        let verdict = match case.verdict {
            Verdict::Passed => "passed",
            Verdict::Failed => "FAILED",
            Verdict::Skipped => "skipped",
        };
        eprintln!("steward eval: {}: {verdict}", case.name);
    })
    .await;
    let text = match args.format.as_str() {
        "json" => report.to_json(),
        "junit" => report.to_junit(),
        _ => report.to_text(),
    };
    print!("{text}");
    if !text.ends_with('\n') {
        println!();
    }
    Ok(if report.any_failed() { 1 } else { 0 })
}
