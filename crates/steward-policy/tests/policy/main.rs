//! Integration tests of steward-policy: workspace paths (B09, B10), redaction (B13), gate, shell commands (B06, B08), option sets.

#[path = "../common/mod.rs"]
mod common;
mod gate;
mod global_options;
mod nested_commands;
mod option_sets;
mod paths;
mod redaction;
mod risk_and_expiry;
mod shell_gate;
