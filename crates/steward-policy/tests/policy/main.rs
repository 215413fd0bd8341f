//! Integration tests of steward-policy: workspace paths (B09, B10), redaction (B13), gate.

mod gate;
mod paths;
mod redaction;
