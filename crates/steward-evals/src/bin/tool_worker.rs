//! `steward-eval-tool-worker`: the worker of generated tools for processes that run evals
//! without being the `steward` binary (this package's own tests point the eval runner at it).
//! It serves one step on stdin/stdout, as `steward __tool-worker` does.

fn main() {
    std::process::exit(steward_generated::worker::serve_stdio());
}
