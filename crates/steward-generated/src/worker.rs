//! The worker: one step of one generated tool in QuickJS, inside a confined process of its own.
//!
//! The interpreter has no ambient authority. Its context is made with only the language's
//! own objects (no `Date`, no `performance`, no `Promise` jobs, no module loader, so neither
//! `import` nor `require`), `Math.random` throws, and there is no `process`, `Deno`, `std` or
//! `os` object. The only ways out are the two host functions, `http_get(url)` and
//! `sandbox_write(name, text)`, which are requests written to stdout that the parent performs
//! (or refuses) and answers on stdin. The process itself is confined by the parent
//! ([`crate::host`]): no network, no writable path, rlimits, killed at the deadline.
//!
//! Limits inside the interpreter: the heap ([`StepRequest::memory_bytes`]), the stack
//! ([`STACK_BYTES`]) and the time ([`StepRequest::time_limit_ms`], checked by the interrupt
//! handler, which sees the clock that the script does not).

use std::cell::Cell;
use std::io::{BufRead, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use rquickjs::context::intrinsic;
use rquickjs::{Context, Ctx, Function, Runtime};

use crate::protocol::{FailureKind, HostCall, HostReply, StepMode, StepOutcome, StepRequest, WorkerMessage};

/// Call stack limit of the interpreter (bytes of native stack).
pub const STACK_BYTES: usize = 512 * 1024;

/// Runs before the tool's source: wraps the raw host bridge into `http_get` and
/// `sandbox_write`, removes the bridge, and makes `Math.random` throw.
const PRELUDE: &str = r#"
(function () {
  const bridge = globalThis.__steward_host;
  delete globalThis.__steward_host;
  function host(request) {
    const reply = JSON.parse(bridge(JSON.stringify(request)));
    if (Object.prototype.hasOwnProperty.call(reply, "error")) throw new Error(reply.error);
    return reply.ok;
  }
  Object.defineProperty(globalThis, "http_get", {
    value: function http_get(url) { return host({ op: "http_get", url: String(url) }); },
    writable: false, configurable: false,
  });
  Object.defineProperty(globalThis, "sandbox_write", {
    value: function sandbox_write(name, text) {
      return host({ op: "sandbox_write", name: String(name), text: String(text) });
    },
    writable: false, configurable: false,
  });
  Object.defineProperty(Math, "random", {
    value: function random() { throw new Error("Math.random is not available to generated tools: they are deterministic"); },
    writable: false, configurable: false,
  });
})();
"#;

/// Calls `run` with the input (a JSON text) and returns its result as JSON text.
const CALLER: &str = r#"
(function (inputJson) {
  if (typeof run !== "function") throw new Error("the source defines no function run(input)");
  const out = run(JSON.parse(inputJson));
  const text = JSON.stringify(out);
  return text === undefined ? "null" : text;
})
"#;

/// Performs the host functions of a step.
pub type HostFn = Box<dyn FnMut(HostCall) -> HostReply>;

/// Serves one step on this process's stdin and stdout, then returns the exit code (0 when a
/// [`WorkerMessage::Done`] was written).
pub fn serve_stdio() -> i32 {
    let stdin = std::io::stdin();
    let mut first = String::new();
    let request = match stdin.lock().read_line(&mut first) {
        Ok(_) => serde_json::from_str::<StepRequest>(&first),
        Err(e) => return finish(failed(FailureKind::Protocol, format!("cannot read the request: {e}"))),
    };
    let request = match request {
        Ok(request) => request,
        Err(e) => return finish(failed(FailureKind::Protocol, format!("bad request: {e}"))),
    };
    finish(run_step(&request, Box::new(stdio_host)))
}

fn finish(outcome: StepOutcome) -> i32 {
    match send(&WorkerMessage::Done(outcome)) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

fn send(message: &WorkerMessage) -> std::io::Result<()> {
    let mut line = serde_json::to_string(message).map_err(std::io::Error::other)?;
    line.push('\n');
    let mut out = std::io::stdout().lock();
    out.write_all(line.as_bytes())?;
    out.flush()
}

/// The host bridge over stdio: writes the request, waits for the parent's one-line answer.
fn stdio_host(call: HostCall) -> HostReply {
    if let Err(e) = send(&WorkerMessage::Host(call)) {
        return HostReply::Error(format!("the host is gone: {e}"));
    }
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) => HostReply::Error("the host is gone".into()),
        Ok(_) => serde_json::from_str(&line).unwrap_or_else(|e| HostReply::Error(format!("bad host reply: {e}"))),
        Err(e) => HostReply::Error(format!("the host is gone: {e}")),
    }
}

fn failed(kind: FailureKind, message: String) -> StepOutcome {
    StepOutcome::Failed { kind, message }
}

/// Runs one step in a fresh interpreter; `host` performs the host functions. Public so that
/// the interpreter's confinement can be tested without a process; Steward always runs it in
/// the confined worker.
pub fn run_step(request: &StepRequest, host: HostFn) -> StepOutcome {
    let runtime = match Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => return failed(FailureKind::Memory, format!("cannot start the interpreter: {e}")),
    };
    runtime.set_memory_limit(usize::try_from(request.memory_bytes).unwrap_or(usize::MAX));
    runtime.set_max_stack_size(STACK_BYTES);
    let deadline = Instant::now() + Duration::from_millis(request.time_limit_ms);
    let timed_out = Rc::new(Cell::new(false));
    let flag = timed_out.clone();
    runtime.set_interrupt_handler(Some(Box::new(move || {
        let late = Instant::now() >= deadline;
        if late {
            flag.set(true);
        }
        late
    })));
    // The language's own objects only: no Date, Performance, Promise, WeakRef or module loader.
    type Allowed = (intrinsic::Eval, intrinsic::RegExpCompiler, intrinsic::RegExp, intrinsic::Json, intrinsic::MapSet);
    let context = match Context::custom::<Allowed>(&runtime) {
        Ok(context) => context,
        Err(e) => return failed(FailureKind::Memory, format!("cannot start the interpreter: {e}")),
    };
    // The host bridge is called from inside the interpreter, so it holds `host` in a cell.
    let host = Rc::new(std::cell::RefCell::new(host));
    context.with(|ctx| {
        let outcome = step_in(&ctx, request, host);
        outcome.unwrap_or_else(|e| classify(&ctx, e, timed_out.get(), request))
    })
}

/// Compiles (and for [`StepMode::Call`], calls) the source in `ctx`.
fn step_in<'js>(
    ctx: &Ctx<'js>,
    request: &StepRequest,
    host: Rc<std::cell::RefCell<HostFn>>,
) -> Result<StepOutcome, StepFailure> {
    let bridge = Function::new(ctx.clone(), move |request: String| -> String {
        let reply = match serde_json::from_str::<HostCall>(&request) {
            Ok(call) => match host.try_borrow_mut() {
                Ok(mut host) => (*host)(call),
                Err(_) => HostReply::Error("host functions cannot be called re-entrantly".into()),
            },
            Err(e) => HostReply::Error(format!("bad host call: {e}")),
        };
        serde_json::to_string(&reply).unwrap_or_else(|_| r#"{"error":"unserialisable reply"}"#.into())
    })
    .map_err(|e| StepFailure::Setup(e.to_string()))?;
    ctx.globals().set("__steward_host", bridge).map_err(|e| StepFailure::Setup(e.to_string()))?;
    ctx.eval::<(), _>(PRELUDE).map_err(|e| StepFailure::Setup(e.to_string()))?;
    ctx.eval::<(), _>(request.source.as_bytes()).map_err(StepFailure::Compile)?;
    let caller: Function = ctx.eval(CALLER).map_err(|e| StepFailure::Setup(e.to_string()))?;
    if request.mode == StepMode::Compile {
        let defined: bool = ctx.eval("typeof run === 'function'").map_err(StepFailure::Compile)?;
        return Ok(if defined {
            StepOutcome::Ok(serde_json::Value::Bool(true))
        } else {
            failed(FailureKind::Compile, "the source defines no function run(input)".into())
        });
    }
    let input = serde_json::to_string(&request.input).map_err(|e| StepFailure::Setup(e.to_string()))?;
    let text: String = caller.call((input,)).map_err(StepFailure::Call)?;
    match serde_json::from_str(&text) {
        Ok(value) => Ok(StepOutcome::Ok(value)),
        Err(e) => Ok(failed(FailureKind::Exception, format!("run returned something that is not JSON: {e}"))),
    }
}

enum StepFailure {
    Setup(String),
    Compile(rquickjs::Error),
    Call(rquickjs::Error),
}

/// The failure as the step's outcome, with the limit that caused it when there was one.
fn classify(ctx: &Ctx<'_>, failure: StepFailure, timed_out: bool, request: &StepRequest) -> StepOutcome {
    let (compile, error) = match failure {
        StepFailure::Setup(message) => return failed(FailureKind::Exception, format!("interpreter setup: {message}")),
        StepFailure::Compile(e) => (true, e),
        StepFailure::Call(e) => (false, e),
    };
    let message = message_of(ctx, &error);
    let lower = message.to_ascii_lowercase();
    if timed_out || lower.contains("interrupted") {
        return failed(FailureKind::Timeout, format!("time limit of {} ms reached", request.time_limit_ms));
    }
    if matches!(error, rquickjs::Error::Allocation) || lower.contains("out of memory") {
        return failed(FailureKind::Memory, format!("memory limit of {} bytes reached", request.memory_bytes));
    }
    if lower.contains("stack overflow") || lower.contains("call stack") {
        return failed(FailureKind::Stack, format!("call stack limit reached: {message}"));
    }
    failed(if compile { FailureKind::Compile } else { FailureKind::Exception }, message)
}

/// The thrown value's text (`Name: message`), or the engine error's.
fn message_of(ctx: &Ctx<'_>, error: &rquickjs::Error) -> String {
    if !matches!(error, rquickjs::Error::Exception) {
        return error.to_string();
    }
    let thrown = ctx.catch();
    if let Some(exception) = thrown.as_exception() {
        let name: Option<String> = exception.get("name").ok();
        let message = exception.message().unwrap_or_default();
        return match name {
            Some(name) if !name.is_empty() => format!("{name}: {message}"),
            _ => message,
        };
    }
    match thrown.as_string().and_then(|s| s.to_string().ok()) {
        Some(text) => text,
        None if thrown.is_null() || thrown.is_undefined() => "the interpreter stopped without an error value".into(),
        None => format!("{thrown:?}"),
    }
}
