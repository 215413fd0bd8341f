//! Hooks (SPEC T9): commands that run after a file event (`create`, `edit`, `delete`,
//! `move`, or a custom event name) on matching paths, in the sandbox; their output (capped,
//! redacted) is given to the model in the next round. `list` and `read` fire none. A failing
//! hook is reported, never fatal.

pub use steward_config::HookConfig;

/// What one hook did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookReport {
    /// The hook's name.
    pub name: String,
    /// True when every command exited 0.
    pub ok: bool,
    /// Combined output of its commands (capped at [`MAX_HOOK_OUTPUT_CHARS`]), or why it failed.
    pub output: String,
    /// Sandbox profile of the last command run.
    pub sandbox: String,
}

/// Characters of one hook's output kept for the model.
pub const MAX_HOOK_OUTPUT_CHARS: usize = 4_000;

/// Runs the hooks that any of `events` on workspace-relative `path` fires (each hook once), in
/// configuration order.
/// Commands run in the sandbox with the workspace as working directory, only the changed file
/// and the hook's `writes` folders writable, no network, and the hook's timeout. A command
/// that cannot start or exits non-zero makes the hook fail; later hooks still run.
pub async fn run_hooks(
    hooks: &[HookConfig],
    events: &[&str],
    path: &str,
    ctx: &steward_tools::ToolContext,
) -> Vec<HookReport> {
    let mut reports = Vec::new();
    for hook in hooks.iter().filter(|h| h.events.iter().any(|e| events.contains(&e.as_str()))) {
        let matches =
            globset::Glob::new(&hook.path_pattern).map(|g| g.compile_matcher().is_match(path)).unwrap_or(false);
        if !matches {
            continue;
        }
        reports.push(run_one(hook, path, ctx).await);
    }
    reports
}

async fn run_one(hook: &HookConfig, path: &str, ctx: &steward_tools::ToolContext) -> HookReport {
    let mut output = String::new();
    let mut sandbox = String::new();
    let root = ctx.workspace.root().to_path_buf();
    // Writable: the changed file (a formatter rewrites it in place) and the hook's folders.
    let mut writable = Vec::new();
    if let Ok(file) = ctx.workspace.resolve(path, steward_policy::Access::Write)
        && file.abs.is_file()
    {
        writable.push(file.abs);
    }
    for dir in &hook.writes {
        match steward_tools::writable_folder(dir).map(|()| ctx.workspace.resolve(dir, steward_policy::Access::Write)) {
            Ok(Ok(resolved)) => writable.push(resolved.abs),
            Ok(Err(e)) => output.push_str(&format!("writes `{dir}` left out: {e}\n")),
            Err(why) => output.push_str(&format!("writes `{dir}` left out: {why}\n")),
        }
    }
    // A name starting with `-` would be read as an option.
    let shown_path = if path.starts_with('-') { format!("./{path}") } else { path.to_string() };
    for command in &hook.commands {
        let argv: Vec<String> = command.iter().map(|a| a.replace("{path}", &shown_path)).collect();
        if argv.is_empty() {
            continue;
        }
        let request = steward_sandbox::ExecRequest {
            env_allow: ctx.env_allow.clone(),
            timeout: std::time::Duration::from_millis(hook.timeout_ms.unwrap_or(30_000)),
            network: false,
            writable: writable.clone(),
            memory_bytes: ctx.sandbox.memory_bytes,
            accept_weaker: ctx.accept_weaker.clone(),
            ..steward_sandbox::ExecRequest::new(argv.clone(), root.clone())
        };
        let request = match steward_tools::sandbox_paths::confine(request, ctx) {
            Ok(request) => request,
            Err(e) => {
                output.push_str(&format!("`{}` could not run: {e}\n", argv.join(" ")));
                return HookReport { name: hook.name.clone(), ok: false, output: cap(output), sandbox };
            }
        };
        match steward_sandbox::run(request, ctx.cancel.clone()).await {
            Err(e) => {
                output.push_str(&format!("`{}` could not run: {e}\n", argv.join(" ")));
                return HookReport { name: hook.name.clone(), ok: false, output: cap(output), sandbox };
            }
            Ok(out) => {
                sandbox = out.profile.clone();
                output.push_str(&String::from_utf8_lossy(&out.stdout));
                output.push_str(&String::from_utf8_lossy(&out.stderr));
                let failed = out.timed_out || out.exit_code != Some(0);
                if failed {
                    let why = if out.timed_out {
                        "timed out".to_string()
                    } else {
                        format!("exited with {:?}", out.exit_code)
                    };
                    output.push_str(&format!("`{}` {why}\n", argv.join(" ")));
                    return HookReport { name: hook.name.clone(), ok: false, output: cap(output), sandbox };
                }
            }
        }
    }
    HookReport { name: hook.name.clone(), ok: true, output: cap(output), sandbox }
}

fn cap(text: String) -> String {
    steward_protocol::head_tail_chars(&text, MAX_HOOK_OUTPUT_CHARS, "hook output cut").0
}
