//! `steward-tool-worker`: serves one step of a generated tool on stdin/stdout (see
//! `steward_generated::protocol`). Steward itself runs the same code as `steward __tool-worker`.

fn main() {
    std::process::exit(steward_generated::worker::serve_stdio());
}
