//! The options that choose the model planner's provider, shared by `steward run`, `compare`,
//! `eval` and `hub` (flattened into each command's arguments).

use std::path::PathBuf;

use clap::Args;

/// `--provider`, `--model` and `--base-url`: which model the model planner asks. Absent
/// options fall back to the configuration (`[run] provider`, the provider's default model).
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderArgs {
    /// Provider of the model planner: a preset (openai, openrouter, xai, anthropic, ollama, lmstudio, llamacpp, fake) or a [providers.NAME] entry (default: [run] provider). Giving it selects the model planner.
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id of the model planner (default: the provider's default model).
    #[arg(long)]
    pub model: Option<String>,
    /// Base URL of an OpenAI-compatible server for the model planner, e.g. http://127.0.0.1:8080/v1. Giving it selects the model planner.
    #[arg(long)]
    pub base_url: Option<String>,
}

/// [`ProviderArgs`] and `--scenario`, the script the `fake` provider plays.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelArgs {
    // Provider, model and server.
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// Scenario file for `--provider fake` (format in docs/models.md).
    #[arg(long)]
    pub scenario: Option<PathBuf>,
}
