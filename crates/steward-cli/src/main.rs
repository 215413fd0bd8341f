//! `steward`: a local-first agent harness whose execution control layer decides what a
//! model's proposed tool calls may do.
#![deny(unsafe_code)]

mod commands;
mod home;
mod ui;
mod usage;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Exit code: usage or configuration error.
pub const EXIT_USAGE: u8 = 2;

#[derive(Parser)]
#[command(
    name = "steward",
    version,
    about = "A local-first AI agent harness: models propose tool calls, Steward decides.",
    long_about = "A local-first AI agent harness: models propose tool calls, Steward decides.\n\n\
                  `steward` alone, in a terminal, opens an interactive session (as `steward chat`); \
                  `steward run \"TASK\"` runs one task."
)]
struct Cli {
    /// The command; none opens the interactive session (`steward chat` with its defaults).
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Talk with the agent in a loop in this terminal (what `steward` alone opens): each message is a turn of a stored conversation, run as `steward run` runs it; approvals inline, Ctrl-C cancels a turn, /help lists the session's commands, Ctrl-D leaves (exit 2 without a terminal).
    Chat(commands::ChatArgs),
    /// Run a task in a workspace (exit 0 answered, 1 failed, 2 usage/config error, 3 stopped by a limit, 4 cancelled, 5 with --strict: answered but a step was refused or failed).
    #[command(
        after_help = "Telemetry: with OTEL_EXPORTER_OTLP_ENDPOINT (or [telemetry] endpoint) set, the run's trace is sent as OpenTelemetry spans over OTLP/HTTP (protobuf) when it ends, without holding it up; OTEL_SDK_DISABLED=true turns it off (docs/telemetry.md)."
    )]
    Run(commands::RunArgs),
    /// Send the next message of a conversation (`cnv_…`) or of the conversation a run (`run_…`, a unique prefix, or `last`) belongs to: a run in its workspace given its last 4 turns as context, as in the web UI (exit codes as `steward run`).
    Resume(commands::ResumeArgs),
    /// Approve a pending approval of one of your runs (`apr_…`, listed by `steward approvals pending`), for a run waiting in another terminal, in the background (`--approvals wait`) or in the web UI.
    Approve {
        /// The approval id (`apr_…`).
        id: String,
        /// once (this call), run (this tool for the rest of the run) or workspace (this tool in this workspace).
        #[arg(long, default_value = "once", value_parser = ["once", "run", "workspace"])]
        scope: String,
    },
    /// Deny a pending approval of one of your runs (`apr_…`): the call is refused and the model is told why.
    Deny {
        /// The approval id (`apr_…`).
        id: String,
        /// Why, shown to the model (default: "denied by the owner").
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Run a task with the classic and with the model planner in the same workspace and print both side by side with their costs (exit 0 when both answered, 1 otherwise, 2 usage/config error).
    Compare(commands::CompareArgs),
    /// List each configured provider's models, saying which providers are unreachable.
    Models {
        /// Workspace whose `.steward/` configuration to read.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// One JSON object per provider.
        #[arg(long)]
        json: bool,
    },
    /// List your recent runs, newest first: id, status (with why it ended), start time, task.
    Runs {
        /// How many.
        #[arg(long, default_value_t = 20)]
        limit: u32,
        /// JSON lines.
        #[arg(long)]
        json: bool,
        /// Every owner's runs (web sessions, other users), with an owner column; default: only
        /// this user's (`local:$USER`).
        #[arg(long)]
        all: bool,
    },
    /// Print a run's trace: each planner call and tool step with duration and tokens, and totals.
    Show {
        /// The run id (`run_…`), a unique prefix of it, or `last` (your newest run).
        run_id: String,
        /// The run record and its events as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// The hash-chained audit log.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Remembered approvals (grants for a run or a workspace): list and revoke.
    Approvals {
        #[command(subcommand)]
        command: ApprovalsCommand,
    },
    /// Judge a tool call, or the recorded calls of past runs, with the current policy without running anything.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Trust a workspace's own `.steward/` configuration (providers, sandbox, policy that allows).
    Trust {
        /// The workspace (default: the current directory).
        #[arg(default_value = ".")]
        workspace: PathBuf,
    },
    /// MCP servers: list them, their tools, or call one tool through the control layer.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Configuration.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Undo a run's changes in reverse order (or only step N): file snapshots, and `[[tool]]` compensate commands (sandboxed); stops at the first step it cannot undo and says which steps were and were not undone (exit 1).
    Rollback {
        /// The run id, a unique prefix, or `last` (your newest run that changed files, not simply your newest run).
        run_id: String,
        /// Undo only this step (as numbered by `--list`).
        #[arg(long)]
        step: Option<u32>,
        /// List the run's undoable steps without changing anything.
        #[arg(long)]
        list: bool,
    },
    /// List the tools a model would be offered in a workspace (built-in and `[[tool]]` ones); `tools generated` lists the generated ones.
    Tools {
        #[command(subcommand)]
        command: Option<ToolsCommand>,
        /// Workspace whose configuration to read.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// Print exactly the `tools` array sent to an OpenAI-compatible model.
        #[arg(long)]
        json: bool,
    },
    /// Show which sandbox protections this machine enforces, by applying each to a child process.
    Doctor {
        /// One JSON object per protection.
        #[arg(long)]
        json: bool,
    },
    /// The workspace search index that gives the model planner the passages matching its task: build, status, search, clear.
    Index {
        #[command(subcommand)]
        command: commands::index::IndexCommand,
    },
    /// Run golden eval cases with rule-based scoring (default: the cases shipped with Steward; cases without a fake scenario use --provider, --model and --base-url, a [providers.NAME] from the case's config); exit 1 when any case fails.
    Eval(commands::eval::EvalArgs),
    /// Serve the web UI and JSON API: start runs, watch them live, approve or deny their tool calls from a browser.
    Serve(commands::serve::ServeArgs),
    /// Serve an editor (Zed, JetBrains IDEs, Neovim) over the Agent Client Protocol on stdio: each prompt is a run, its approvals are asked in the editor, sessions are conversations (docs/acp.md).
    Acp(commands::acp::AcpArgs),
    /// The work ledger on the local store: file, list, approve and revoke work requests.
    Ledger {
        #[command(subcommand)]
        command: commands::ledger::LedgerCommand,
    },
    /// Run the hub: claim approved work from a ledger, run it once as a read-only run, report evidence.
    Hub(commands::hub::HubArgs),
    /// Print a shell completion script on stdout (`steward completions bash > /etc/bash_completion.d/steward`).
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print a reference page generated from the code (the pages under docs/reference/).
    #[command(hide = true)]
    Reference {
        /// Which page.
        page: commands::reference::Page,
        /// `man` only: write one manual page per command into this folder instead.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum ToolsCommand {
    /// Tools the agent wrote for itself: every version with its source hash and who approved it.
    Generated {
        #[command(subcommand)]
        command: Option<commands::generated::GeneratedCommand>,
        /// One JSON object per version.
        #[arg(long)]
        json: bool,
    },
    /// Run a `[[tool]]` once with ARGS in the workspace, then its `compensate` command, and record the compensation as tested when everything the tool may write is exactly as before (exit 0 tested, 1 not, 2 usage/config error).
    TestCompensation {
        /// The `[[tool]]`'s name.
        name: String,
        /// The call's arguments as a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// Workspace to run it in (a scratch copy is fine: the test holds for the definition, not the workspace).
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
    },
}

#[derive(Subcommand)]
enum AuditCommand {
    /// Recompute the hash chain; exit 1 naming the first record that was changed, removed or reordered.
    Verify,
    /// Print audit records (optionally of one run) as JSON lines.
    List {
        /// Only this run.
        #[arg(long)]
        run: Option<String>,
    },
    /// Show the audit anchor (the chain's newest record, kept outside the database); `--reset`
    /// sets it to the chain's head after recording who reset it (needed after the anchor file
    /// was removed: until then `audit verify` fails with "anchor missing").
    Anchor {
        /// Reset the anchor to the chain's head, as an audit record of its own.
        #[arg(long)]
        reset: bool,
    },
    /// Write audit records as JSON lines (to stdout, or to --output FILE), oldest first.
    Export {
        /// Only records at or after this time (RFC 3339, e.g. 2026-11-30T00:00:00Z) or sequence number.
        #[arg(long)]
        since: Option<String>,
        /// File to write (created with mode 0600); stdout when absent.
        #[arg(long)]
        output: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum ApprovalsCommand {
    /// List the approvals your running runs wait on: id, run, time left, tool, arguments (redacted).
    Pending {
        /// JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// List your grants (active ones; `--all` adds revoked, expired and ended ones).
    List {
        /// Include revoked, expired and ended grants (run grants end with their run).
        #[arg(long)]
        all: bool,
        /// JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a grant: later calls of its tool ask again.
    Revoke {
        /// The grant id (`grt_…`).
        id: String,
    },
}

#[derive(Subcommand)]
enum PolicyCommand {
    /// Print the decision, the deciding rule and the risk score for TOOL with ARGS.
    Check {
        /// Tool name.
        tool: String,
        /// Arguments as a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// Workspace whose configuration and paths apply.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// One JSON object with decision, rule, risk and reasons.
        #[arg(long)]
        json: bool,
        /// Judge it as in a run that has read untrusted content.
        #[arg(long)]
        tainted: bool,
    },
    /// Judge the recorded tool calls of past runs again under the current policy files and list those now decided differently (allow → ask, ask → deny, …); nothing runs (exit 0).
    Replay {
        /// Only runs started since then: a duration back from now (`90s`, `30m`, `12h`, `7d`, `2w`) or an RFC 3339 time.
        #[arg(long)]
        since: Option<String>,
        /// Only this run (its id, a unique prefix, or `last`: your newest run).
        #[arg(long = "run")]
        run: Option<String>,
        /// One JSON object per call decided differently: run_id, call_id, tool, arguments, recorded {decision, rule}, now (the decision).
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum McpCommand {
    /// Each configured server, whether it starts, and how many tools it offers.
    List {
        /// Workspace whose configuration to read.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// One line per tool: its registry name (`server__tool`), then its description.
    Tools {
        /// Only this server's tools.
        server: Option<String>,
        /// Workspace whose configuration to read.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// Call one tool through the control layer (policy, approval, audit), for debugging; prints the tool's result (redacted, capped).
    Call {
        /// Server name, or the tool's full name `SERVER__TOOL` as `steward mcp tools` prints it.
        server: String,
        /// The tool's name on that server (left out when the first argument is `SERVER__TOOL`).
        tool: Option<String>,
        /// Arguments as a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// Workspace to run in.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// Print only the outcome as one JSON object on stdout: run_id, tool, status (completed, failed, denied, rejected, not_run), output (the result text, redacted and capped), output_chars, duration_ms, error.
        #[arg(long)]
        json: bool,
    },
    /// Log in to a `url` server that needs a login (MCP authorization, OAuth 2.1): shows the address to log in at, opens the browser when there is one, and keeps the login owner-only under $STEWARD_HOME (renewed by itself when the server allows).
    Login {
        /// The server's name in the configuration.
        server: String,
        /// Only show the address; do not start a browser.
        #[arg(long)]
        no_browser: bool,
        /// Workspace whose configuration to read.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
    },
    /// Forget the login to a server.
    Logout {
        /// The server's name in the configuration.
        server: String,
        /// Workspace whose configuration to read.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
    },
    /// Print the MCP servers of another client's file as `[mcp_servers.NAME]` tables: a `.mcp.json` or Claude Desktop file (`mcpServers`), or Codex's `config.toml` (`[mcp_servers.NAME]`). Review the output, then add it to your configuration.
    Import {
        /// The file to read (JSON or TOML).
        file: PathBuf,
    },
    /// Serve Steward over MCP on stdio: submit_task, list_runs, get_run, list_pending_approvals, submit_work_request (approving is not an MCP tool).
    Serve,
    /// Bearer tokens of `/mcp` in `steward serve` (owned by the local user): create, list, revoke.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// The client under test of the MCP conformance suite: runs the scenario named by
    /// `MCP_CONFORMANCE_SCENARIO` against URL. No human is there: a server's request for input
    /// (elicitation) is answered by playing an owner who submits the pre-filled form unchanged
    /// (the schema's defaults, through the same default-filling and validation as a person's
    /// answer).
    #[command(hide = true)]
    ConformanceClient {
        /// The scenario's test server (streamable HTTP).
        url: String,
    },
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Make a token and print it once (only its hash is stored).
    Create {
        /// A label for the token (which assistant uses it).
        #[arg(long)]
        name: Option<String>,
        /// Comma list of scopes: `read` (list_runs, get_run, list_pending_approvals), `submit` (submit_task, submit_work_request), `hub` (claim approved work from the ledger).
        #[arg(long, default_value = "read")]
        scope: String,
    },
    /// List your tokens (never their secrets).
    List {
        /// JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token: requests with it are refused from now on.
    Revoke {
        /// The token id (`mtk_…`).
        id: String,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Print the merged configuration with secrets redacted, the file each entry came from and the defaults in effect.
    Show {
        /// Workspace whose `.steward/` configuration to read.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// One JSON object: the merged configuration, the file each entry came from, the defaults in effect, the files read.
        #[arg(long)]
        json: bool,
    },
}

/// What `STEWARD_LOG` asks to log: comma-separated `target=level` pairs and a bare default
/// level (`warn,steward_store=debug`; targets are module paths, matched by prefix), as parsed
/// by `tracing_subscriber`'s [`Targets`](tracing_subscriber::filter::Targets). Unset or empty:
/// errors only. A value it cannot parse is reported on stderr and errors only are logged.
fn log_filter() -> tracing_subscriber::filter::Targets {
    // The MCP SDK's transport worker logs the end of every refused connection as an error;
    // Steward reports those itself (`mcp_login_required`, `mcp_unavailable`).
    let errors_only = tracing_subscriber::filter::Targets::new()
        .with_default(tracing_subscriber::filter::LevelFilter::ERROR)
        .with_target("rmcp::transport::worker", tracing_subscriber::filter::LevelFilter::OFF);
    let value = std::env::var("STEWARD_LOG").unwrap_or_default();
    // Empty entries (`warn,`) are left out: `Targets` would read one as "every target".
    let entries: Vec<&str> = value.split(',').map(str::trim).filter(|entry| !entry.is_empty()).collect();
    if entries.is_empty() {
        return errors_only;
    }
    entries.join(",").parse().unwrap_or_else(|e| {
        eprintln!("steward: STEWARD_LOG is not a list of `target=level` pairs ({e}); logging errors only");
        errors_only
    })
}

fn main() -> ExitCode {
    // The worker of generated tools: one step on stdin/stdout, before anything else starts.
    if std::env::args_os().nth(1).is_some_and(|a| a == home::TOOL_WORKER_ARG) {
        return ExitCode::from(u8::try_from(steward_generated::worker::serve_stdio()).unwrap_or(1));
    }
    // `steward audit list | head`: stop quietly when stdout is closed, like other command-line
    // tools. (SIGPIPE itself stays ignored: a child process that dies — an MCP server — must
    // not kill Steward when it writes to that child's stdin.)
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        // `print!` says "Broken pipe"; clap_complete's writer says `BrokenPipe`.
        let broken_pipe = message.contains("Broken pipe") || message.contains("BrokenPipe");
        if (message.contains("failed printing to stdout") || message.contains("failed to write completion"))
            && broken_pipe
        {
            std::process::exit(141);
        }
        default_hook(info);
    }));
    let cli = Cli::parse();
    {
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::util::SubscriberInitExt as _;
        tracing_subscriber::fmt()
            .with_max_level(tracing_subscriber::filter::LevelFilter::TRACE)
            .with_writer(std::io::stderr)
            .finish()
            .with(log_filter())
            .init();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("steward: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async move {
        match cli.command.unwrap_or_else(|| Command::Chat(commands::ChatArgs::default())) {
            Command::Chat(args) => commands::chat(args).await,
            Command::Run(args) => commands::run(args).await,
            Command::Resume(args) => commands::resume(args).await,
            Command::Approve { id, scope } => commands::decide(&id, steward_core::OwnerDecision::Approve(scope)).await,
            Command::Deny { id, reason } => commands::decide(&id, steward_core::OwnerDecision::Deny(reason)).await,
            Command::Approvals { command: ApprovalsCommand::Pending { json } } => {
                commands::approvals_pending(json).await
            }
            Command::Compare(args) => commands::compare(args).await,
            Command::Models { workspace, json } => commands::models(&workspace, json).await,
            Command::Runs { limit, json, all } => commands::runs(limit, json, all).await,
            Command::Show { run_id, json } => commands::show(&run_id, json).await,
            Command::Audit { command: AuditCommand::Verify } => commands::audit_verify().await,
            Command::Audit { command: AuditCommand::List { run } } => commands::audit_list(run.as_deref()).await,
            Command::Audit { command: AuditCommand::Anchor { reset } } => commands::audit_anchor(reset).await,
            Command::Audit { command: AuditCommand::Export { since, output } } => {
                commands::audit_export(since.as_deref(), output.as_deref()).await
            }
            Command::Approvals { command: ApprovalsCommand::List { all, json } } => {
                commands::grants_list(all, json).await
            }
            Command::Approvals { command: ApprovalsCommand::Revoke { id } } => commands::grants_revoke(&id).await,
            Command::Policy { command: PolicyCommand::Check { tool, args, workspace, json, tainted } } => {
                commands::policy_check(&tool, &args, &workspace, json, tainted).await
            }
            Command::Policy { command: PolicyCommand::Replay { since, run, json } } => {
                commands::policy_replay(since.as_deref(), run.as_deref(), json).await
            }
            Command::Config { command: ConfigCommand::Show { workspace, json } } => {
                commands::config_show(&workspace, json)
            }
            Command::Trust { workspace } => commands::trust(&workspace),
            Command::Rollback { run_id, step, list } => commands::rollback(&run_id, step, list).await,
            Command::Mcp { command: McpCommand::List { workspace, json } } => {
                commands::mcp::list(&workspace, json).await
            }
            Command::Mcp { command: McpCommand::Tools { server, workspace, json } } => {
                commands::mcp::tools(&workspace, server.as_deref(), json).await
            }
            Command::Mcp { command: McpCommand::Call { server, tool, args, workspace, json } } => {
                commands::mcp::call(&workspace, &server, tool.as_deref(), &args, json).await
            }
            Command::Mcp { command: McpCommand::Login { server, no_browser, workspace } } => {
                commands::mcp_login::login(&workspace, &server, no_browser).await
            }
            Command::Mcp { command: McpCommand::Logout { server, workspace } } => {
                commands::mcp_login::logout(&workspace, &server)
            }
            Command::Mcp { command: McpCommand::Import { file } } => commands::mcp_import::import(&file),
            Command::Mcp { command: McpCommand::Serve } => commands::mcp_serve::serve().await,
            Command::Mcp { command: McpCommand::ConformanceClient { url } } => {
                commands::mcp_conformance::conformance_client(&url).await
            }
            Command::Mcp { command: McpCommand::Token { command: TokenCommand::Create { name, scope } } } => {
                commands::mcp_token::create(name.as_deref(), &scope).await
            }
            Command::Mcp { command: McpCommand::Token { command: TokenCommand::List { json } } } => {
                commands::mcp_token::list(json).await
            }
            Command::Mcp { command: McpCommand::Token { command: TokenCommand::Revoke { id } } } => {
                commands::mcp_token::revoke(&id).await
            }
            Command::Tools { command: None, workspace, json } => commands::tools::tools(&workspace, json).await,
            Command::Tools { command: Some(ToolsCommand::TestCompensation { name, args, workspace }), .. } => {
                commands::tools::test_compensation(&workspace, &name, &args).await
            }
            Command::Tools { command: Some(ToolsCommand::Generated { command, json }), .. } => match command {
                None => commands::generated::list(json).await,
                Some(commands::generated::GeneratedCommand::Show { tool }) => commands::generated::show(&tool).await,
                Some(commands::generated::GeneratedCommand::Remove { tool }) => {
                    commands::generated::remove(&tool).await
                }
            },
            Command::Doctor { json } => commands::doctor(json).await,
            Command::Ledger { command } => commands::ledger::run(command).await,
            Command::Serve(args) => commands::serve::serve(args).await,
            Command::Acp(args) => commands::acp::acp(args).await,
            Command::Eval(args) => commands::eval::eval(args).await,
            Command::Index { command } => commands::index::run(command).await,
            Command::Hub(args) => commands::hub::hub(args).await,
            Command::Completions { shell } => {
                clap_complete::generate(shell, &mut Cli::command(), "steward", &mut std::io::stdout());
                Ok(0)
            }
            Command::Reference { page, out } => commands::reference::print::<Cli>(page, out.as_deref()),
        }
    });
    // Do not wait for a blocked stdin reader (an approval prompt) after the run ended.
    runtime.shutdown_background();
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            let redactor = commands::redactor();
            eprintln!("steward: {}", redactor.redact(&format!("{err:#}")));
            ExitCode::from(err.downcast_ref::<commands::UsageError>().map_or(1, |_| EXIT_USAGE))
        }
    }
}
