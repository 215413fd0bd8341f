//! What a program embedding a front end provides so that runs can be prepared: where the
//! configuration comes from (and how it is hardened), which providers are offered.

use std::path::Path;

use async_trait::async_trait;
use serde::Serialize;
use steward_protocol::ToolSpec;

use super::{Prepared, RunOptions};

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

/// Prepares runs for a front end (the web server, the hub): it loads the configuration for a
/// workspace the way its program does and hands it to [`super::prepare`], so every run is
/// composed the same way.
#[async_trait]
pub trait Launcher: Send + Sync {
    /// Prepares a run in `workspace` (canonical, allowed by the front end) with `options`.
    /// `Err` is a sentence for the user (bad configuration, unknown provider …); nothing was
    /// started.
    async fn prepare(&self, workspace: &Path, options: &RunOptions) -> Result<Prepared, String>;

    /// The tools a run in `workspace` is offered.
    async fn tools(&self, workspace: &Path) -> Result<Vec<ToolSpec>, String>;

    /// Configured and preset providers with their reachability (each probe bounded in time);
    /// none by default.
    async fn providers(&self) -> Vec<ProviderStatus> {
        Vec::new()
    }
}
