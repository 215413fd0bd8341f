//! `steward compare`: one task run with the classic and with the model planner, side by side
//! with what each cost (SPEC A4), as the web UI's Compare page shows them.

use anyhow::Result;
use steward_core::compare::Summary;

use super::*;

/// `steward compare` arguments.
#[derive(Args)]
pub struct CompareArgs {
    /// The task, in plain words.
    task: String,
    /// Workspace directory (default: the current directory); both runs use its configuration and policy.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    #[command(flatten)]
    model: ModelArgs,
    /// Rounds with tool calls before a run stops with `max_rounds` (default 5).
    #[arg(long)]
    max_rounds: Option<u32>,
    /// Print each run's summary as a JSON line (classic first) instead of the table.
    #[arg(long)]
    json: bool,
}

/// `steward compare`: exit 0 when both runs answered, 1 otherwise, 2 on a usage or
/// configuration error (nothing runs then).
pub async fn compare(args: CompareArgs) -> Result<u8> {
    let workspace = std::fs::canonicalize(&args.workspace)
        .map_err(|e| usage(format!("workspace {}: {e}", args.workspace.display())))?;
    if args.task.trim().is_empty() {
        return Err(usage("the task is empty: say what to do, e.g. steward compare \"list the files\""));
    }
    if args.max_rounds == Some(0) {
        return Err(usage("--max-rounds must be at least 1"));
    }
    let config = load_config(&workspace)?;
    let redactor = redactor_for(&config);
    let options = |planner: &str| {
        let model = planner == "model";
        RunOptions {
            planner: PlannerOverrides {
                planner: Some(planner.to_string()),
                provider: args.model.provider.provider.clone().filter(|_| model),
                model: args.model.provider.model.clone().filter(|_| model),
                base_url: args.model.provider.base_url.clone().filter(|_| model),
                tool_choice: None,
                scenario: args.model.scenario.clone().filter(|_| model),
                max_tokens: None,
            },
            max_rounds: args.max_rounds,
            ..RunOptions::default()
        }
    };
    // The model run is prepared first: a missing provider is refused before anything runs.
    let model = prepare_run(config.clone(), &workspace, &options("model")).await?;
    let classic = prepare_run(config, &workspace, &options("classic")).await?;

    let runtime = Home::locate()?.runtime(redactor).await?;
    let owner_id = local_owner();
    let cancel = CancellationToken::new();
    crate::home::spawn_lease_keeper(&runtime, CancellationToken::new())?;
    crate::home::spawn_decision_follower(&runtime);
    super::run::cancel_on_ctrl_c(&cancel);
    let mut summaries = Vec::new();
    for prepared in [classic, model] {
        let observer: Arc<dyn steward_core::EventObserver> =
            if args.json { Arc::new(Quiet) } else { Arc::new(ui::Human::default()) };
        let ready = prepared.into_run(Task {
            task: args.task.clone(),
            owner_id: owner_id.clone(),
            // Without a terminal an ask is denied, as in `steward run`.
            approver: Arc::new(ui::TerminalApprover {
                owner_id: owner_id.clone(),
                decisions: runtime.decisions.clone(),
                wait_for_decisions: false,
            }),
            observer,
            cancel: cancel.clone(),
            run_id: None,
            history: Vec::new(),
            attachments: Vec::new(),
        });
        let run = ready.run(&runtime).await.map_err(|e| match e {
            steward_core::RunError::Config(msg) => usage(msg),
            other => anyhow::Error::new(other),
        })?;
        let events = runtime.store.events(&run.id, 0).await?;
        summaries.push(Summary::of(&run, &events));
    }
    if args.json {
        for s in &summaries {
            println!("{}", serde_json::to_string(s)?);
        }
    } else {
        print_table(&summaries);
    }
    runtime.shutdown().await;
    let answered = summaries.iter().all(|s| s.status == "completed" && s.stop.as_deref() == Some("answered"));
    Ok(if answered { 0 } else { 1 })
}

/// Sees a run's events and prints nothing (`--json` prints the summaries alone).
struct Quiet;

impl steward_core::EventObserver for Quiet {
    fn on_event(&self, _event: &steward_protocol::Event) {}
}

/// The summaries as columns, then each final answer.
fn print_table(summaries: &[Summary]) {
    let rows: Vec<(&str, Vec<String>)> = vec![
        ("run", summaries.iter().map(|s| s.id.clone()).collect()),
        (
            "status",
            summaries
                .iter()
                .map(|s| format!("{}{}", s.status, s.stop.as_ref().map(|w| format!(" ({w})")).unwrap_or_default()))
                .collect(),
        ),
        ("rounds", summaries.iter().map(|s| s.rounds.to_string()).collect()),
        ("tool calls", summaries.iter().map(|s| format!("{} ({} refused)", s.tool_calls, s.refused)).collect()),
        (
            "tokens",
            summaries
                .iter()
                .map(|s| {
                    format!("{} ({} in, {} out)", s.input_tokens + s.output_tokens, s.input_tokens, s.output_tokens)
                })
                .collect(),
        ),
        ("wall time", summaries.iter().map(|s| format!("{} ms", s.wall_ms)).collect()),
    ];
    let width = summaries
        .iter()
        .map(|s| s.label.chars().count())
        .chain(rows.iter().flat_map(|(_, cells)| cells.iter().map(|c| c.chars().count())))
        .max()
        .unwrap_or(0);
    let mut header = format!("{:<12}", "");
    for s in summaries {
        header.push_str(&format!("  {:<width$}", s.label));
    }
    println!("{}", header.trim_end());
    for (name, cells) in rows {
        let mut line = format!("{name:<12}");
        for cell in cells {
            line.push_str(&format!("  {cell:<width$}"));
        }
        println!("{}", line.trim_end());
    }
    for s in summaries {
        println!("── {} ──\n{}", s.label, s.final_text);
    }
}
