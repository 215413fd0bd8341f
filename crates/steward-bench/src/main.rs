//! `steward-bench`: Steward's benchmarks, apart from the `steward` binary.
//!
//! Without a mode it measures the harness's own overhead per tool-call step (on a store opened
//! exactly as `steward run` opens it), policy decisions, the audit chain (appends and
//! verification) and sandboxed `cat` steps; the modes measure `steward serve`, several nodes
//! on PostgreSQL, the work ledger, sandboxed steps in detail, generated tools, prompt
//! injections, the secret redactor and the workspace search index. Every figure is printed on
//! stdout, one line each. Exit code 0 when every measurement ran, 1 when one failed, 2 on a
//! usage error.
#![deny(unsafe_code)]

mod generated;
mod injection;
mod ledger;
mod local;
mod local_tasks;
mod nodes;
mod redaction;
mod rusage;
mod sandbox;
mod search;
mod serve;
mod serve_clients;
mod serve_floor;
mod step;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The environment variable naming a PostgreSQL database, as for `steward`.
pub const DATABASE_URL_VAR: &str = "STEWARD_DATABASE_URL";

/// Exit code: usage error.
const EXIT_USAGE: u8 = 2;

#[derive(Parser)]
#[command(
    name = "steward-bench",
    version,
    about = "Measure Steward's own costs: per tool-call step (fake provider, no-op tool), policy, audit chain, \
             sandbox; modes for the server, nodes, the ledger, generated tools, prompt injections and redaction.",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    mode: Option<Mode>,
    #[command(flatten)]
    step: step::StepArgs,
}

/// Other measurements.
#[derive(Subcommand)]
enum Mode {
    /// `steward serve`: memory per run parked on an approval, and event latency to many connected clients.
    Serve(serve::BenchServeArgs),
    /// Several nodes on one PostgreSQL database: latency of an event stored on one node until another node is notified and reads it.
    Nodes(nodes::BenchNodesArgs),
    /// The work ledger: claims per second with several hubs at once, on SQLite and PostgreSQL.
    Ledger(ledger::BenchLedgerArgs),
    /// Sandboxed steps: a `cat` against a plain spawn, a `shell_command` line run directly and
    /// through bash, one `[[tool]]` call by network setting (no network, everything, a host
    /// list through the egress proxy), and the first call of a fresh process, cold and warm.
    Sandbox(sandbox::BenchSandboxArgs),
    /// Tools the agent writes for itself: a sandboxed worker's start-up plus one call of a trivial generated tool, and the time from a planner naming an unknown tool to the generated tool's first call.
    Generated(generated::BenchGeneratedArgs),
    /// The secret redactor every tool output passes: MB/s and recall on a corpus of minified
    /// bundles, sources and logs with planted secrets, against gitleaks on the same corpus.
    Redaction(redaction::BenchRedactionArgs),
    /// Prompt injections from AgentDojo against an always-obeying model: attacker calls executed, approvals asked on benign tasks.
    Injection(injection::BenchInjectionArgs),
    /// The workspace search index: recall@5 of grep and BM25 on labelled queries over a crates.io package's source, indexing throughput (MB/s), incremental update time.
    Search(search::BenchSearchArgs),
    /// A real local model (Qwen2.5-Coder-0.5B by default) on llama.cpp's llama-server (or llama-cpp-python's server) doing 22 everyday tasks in three small repositories: tasks completed, endings by class, rounds (constrained), calls native / from text / refused, prompt tokens per round, the prompt estimate beside the server's count, the cached share, the server's prompt and generation tokens/s, wall time per task.
    Local(local::BenchLocalArgs),
    /// The clients of `serve`'s event-latency measurement, in a process of their own.
    #[command(hide = true)]
    ServeClients(serve_clients::ServeClientsArgs),
    /// Print this program's reference page in Markdown (docs/reference/bench.md).
    #[command(hide = true)]
    Reference,
}

/// A usage error: reported as is, exit code 2.
#[derive(Debug)]
pub struct UsageError(String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// An error that makes `steward-bench` exit with code 2.
pub fn usage_error(message: &str) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.to_string()))
}

/// `$STEWARD_DATABASE_URL` when set and not empty; a usage error when it is not UTF-8.
pub fn database_url() -> anyhow::Result<Option<String>> {
    let Some(value) = std::env::var_os(DATABASE_URL_VAR).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let url = value.into_string().map_err(|_| usage_error(&format!("{DATABASE_URL_VAR} is not valid UTF-8")))?;
    Ok(Some(url))
}

/// The reference page: usage, arguments and options of every mode, as `--help` shows them.
fn reference() -> String {
    let options = clap_markdown::MarkdownOptions::new()
        .title("steward-bench reference".to_string())
        .show_footer(false)
        .show_table_of_contents(true);
    let body = clap_markdown::help_markdown_custom::<Cli>(&options);
    format!(
        "<!-- Generated from the code by `steward-bench reference` (scripts/reference.sh); do not edit. -->\n\n{}\n",
        body.trim_end()
    )
}

fn main() -> ExitCode {
    // The worker of generated tools (`steward-bench generated` runs itself as its worker): one
    // step on stdin/stdout, before anything else starts.
    if std::env::args_os().nth(1).is_some_and(|a| a == generated::WORKER_ARG) {
        return ExitCode::from(u8::try_from(steward_generated::worker::serve_stdio()).unwrap_or(1));
    }
    let cli = Cli::parse();
    {
        // `STEWARD_LOG` as `steward` reads it: `target=level` pairs; errors only otherwise.
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::util::SubscriberInitExt as _;
        let filter = std::env::var("STEWARD_LOG")
            .ok()
            .and_then(|value| value.parse::<tracing_subscriber::filter::Targets>().ok())
            .unwrap_or_else(|| {
                tracing_subscriber::filter::Targets::new().with_default(tracing_subscriber::filter::LevelFilter::ERROR)
            });
        tracing_subscriber::fmt()
            .with_max_level(tracing_subscriber::filter::LevelFilter::TRACE)
            .with_writer(std::io::stderr)
            .finish()
            .with(filter)
            .init();
    }
    if matches!(cli.mode, Some(Mode::Reference)) {
        print!("{}", reference());
        return ExitCode::SUCCESS;
    }
    if let Some(Mode::ServeClients(args)) = cli.mode {
        return match serve_clients::run(args) {
            Ok(code) => ExitCode::from(code),
            Err(err) => {
                eprintln!("steward-bench serve-clients: {err:#}");
                ExitCode::from(1)
            }
        };
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("steward-bench: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async move {
        match cli.mode {
            None => step::run(cli.step).await,
            Some(Mode::Serve(args)) => serve::run(args).await,
            Some(Mode::Nodes(args)) => nodes::run(args).await,
            Some(Mode::Ledger(args)) => ledger::run(args).await,
            Some(Mode::Sandbox(args)) => sandbox::run(args).await,
            Some(Mode::Generated(args)) => generated::run(args).await,
            Some(Mode::Injection(args)) => injection::run(args).await,
            Some(Mode::Redaction(args)) => redaction::run(args).await,
            Some(Mode::Search(args)) => search::run(args).await,
            Some(Mode::Local(args)) => local::run(args).await,
            Some(Mode::Reference) | Some(Mode::ServeClients(_)) => Ok(0),
        }
    });
    runtime.shutdown_background();
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            // Never print a secret an error message may carry (a database password, a key from
            // the environment).
            let redactor = steward_policy::Redactor::from_env_vars(std::env::vars());
            eprintln!("steward-bench: {}", redactor.redact(&format!("{err:#}")));
            ExitCode::from(err.downcast_ref::<UsageError>().map_or(1, |_| EXIT_USAGE))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
