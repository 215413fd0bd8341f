//! Integration tests of steward-policy: workspace paths (B09, B10), redaction (B13), gate, shell commands (B06, B08).

mod gate;
mod global_options;
mod paths;
mod redaction;
mod shell_gate;
