//! What a program embedding a front end provides so that runs can be prepared: where the
//! configuration comes from (and how it is hardened), which providers are offered.

use std::path::Path;

use async_trait::async_trait;
use serde::Serialize;
use steward_protocol::ToolSpec;

use super::{PrepareError, Prepared, RunOptions};
use steward_config::ConfigError;

/// A provider as a start page shows it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProviderStatus {
    /// Provider name.
    pub name: String,
    /// True when it answered its model list.
    pub reachable: bool,
    /// Models it offers (empty when unreachable).
    pub models: Vec<String>,
    /// Why it is unreachable (redacted), empty otherwise.
    pub error: String,
}

/// Why a [`Launcher`] prepared no run; nothing was started. Its text is a sentence for the
/// user, which a front end shows through its redactor.
#[derive(Debug, thiserror::Error)]
pub enum LauncherError {
    /// The configuration files cannot be loaded (the file and line are in the message).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The run cannot be composed from the configuration ([`super::prepare`]).
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    /// A front end that tells no details (the hub, whose workspaces hold pull requests' text)
    /// says only this fixed description.
    #[error("{0}")]
    Withheld(&'static str),
}

/// Prepares runs for a front end (the web server, the hub): it loads the configuration for a
/// workspace the way its program does and hands it to [`super::prepare`], so every run is
/// composed the same way.
#[async_trait]
pub trait Launcher: Send + Sync {
    /// Prepares a run in `workspace` (canonical, allowed by the front end) with `options`.
    /// Errors: [`LauncherError`] (bad configuration, unknown provider …); nothing was started.
    async fn prepare(&self, workspace: &Path, options: &RunOptions) -> Result<Prepared, LauncherError>;

    /// The tools a run in `workspace` is offered. Errors: as [`Launcher::prepare`].
    async fn tools(&self, workspace: &Path) -> Result<Vec<ToolSpec>, LauncherError>;

    /// Configured and preset providers with their reachability (each probe bounded in time);
    /// none by default.
    async fn providers(&self) -> Vec<ProviderStatus> {
        Vec::new()
    }
}
