//! Outbound HTTP of every Steward client (model providers, MCP servers and their logins,
//! generated tools' `http_get`, the hub's ledger, the telemetry exporter): one place that sets
//! up TLS and builds reqwest clients.
//!
//! reqwest is built without a crypto provider (`rustls-no-provider`), so rustls needs one
//! installed for the process before any client that does not bring its own (the MCP SDK's
//! discovery and token requests build theirs): [`install_crypto_provider`] installs `ring`
//! once, and [`client_builder`] calls it. The builder's own TLS is [`tls`]'s: `ring`, with the
//! system's root certificates loaded only when a first certificate is checked.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod tls;

use std::sync::Once;

pub use tls::{client_config, roots_loaded};

/// Installs rustls's `ring` crypto provider as the process default, once. A provider already
/// installed by someone else is kept.
pub fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err means another provider is already installed, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A reqwest client builder with Steward's TLS ([`tls::client_config`]), the process's crypto
/// provider installed first. Errors: rustls refuses the protocol versions (it never does with
/// `ring`), as [`rustls::Error`].
pub fn client_builder() -> Result<reqwest::ClientBuilder, rustls::Error> {
    install_crypto_provider();
    Ok(reqwest::Client::builder().tls_backend_preconfigured(client_config()?))
}
