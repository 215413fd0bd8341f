//! Running a command tool's argv in the sandbox and rendering the result for the model; shared
//! by `shell_command` and the user-defined command tools.

use steward_protocol::ErrorClass;
use steward_sandbox::{ExecOutput, ExecRequest, SandboxError};

use super::{ToolContext, ToolError};

/// Runs `request` in the sandbox. Errors: the run was cancelled (`cancelled`), the command
/// could not start or a protection could not be enforced (`tool_failed`), or it ran past its
/// timeout (`timeout`, naming `timeout_ms`).
pub(crate) async fn run_sandboxed(request: ExecRequest, ctx: &ToolContext) -> Result<ExecOutput, ToolError> {
    let timeout_ms = request.timeout.as_millis();
    let output = steward_sandbox::run(request, ctx.cancel.clone()).await.map_err(|e| match e {
        SandboxError::Cancelled => {
            ToolError { class: ErrorClass::Cancelled, message: "cancelled; the command was killed".into(), rule: None }
        }
        other => ToolError::failed(format!("the command was not run: {other}")),
    })?;
    if output.timed_out {
        return Err(ToolError {
            class: ErrorClass::Timeout,
            message: format!("the command did not finish within {timeout_ms} ms and was killed"),
            rule: None,
        });
    }
    Ok(output)
}

/// `[exit status N]`, stdout, then `[stderr]` and stderr when there is any, and a note when the
/// sandbox cut a stream at `max_output_bytes`.
pub(crate) fn render(output: &ExecOutput, max_output_bytes: usize) -> String {
    let status = match (output.exit_code, output.signal) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "no exit status".to_string(),
    };
    let mut content = format!("[{status}]\n");
    content.push_str(&String::from_utf8_lossy(&output.stdout));
    if !output.stderr.is_empty() {
        content.push_str("\n[stderr]\n");
        content.push_str(&String::from_utf8_lossy(&output.stderr));
    }
    if output.truncated {
        content.push_str(&format!("\n[output cut at {max_output_bytes} bytes per stream]"));
    }
    content
}
