//! TLS of Steward's HTTP clients, with the system's root certificates loaded on first use.
//!
//! reqwest's own rustls set-up builds the platform verifier (`rustls-platform-verifier`) when a
//! client is built, which reads every root certificate of the system (hundreds of files) even
//! when the client only ever speaks plain `http://` to a local model server. Clients built
//! with [`crate::client_builder`] get a rustls configuration of their own instead: the `ring`
//! provider, TLS 1.2 and 1.3, ALPN `h2` then `http/1.1` (what reqwest sets), and a verifier
//! that builds that same platform verifier the first time a server certificate is to be
//! checked, once per process, and hands every check to it. A TLS connection is therefore
//! verified exactly as before; only the loading moved. When the roots cannot be loaded, every
//! TLS handshake fails with that error (nothing is ever accepted unverified).

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// The platform verifier, built on first use (or why it could not be).
static PLATFORM: OnceLock<Result<Arc<rustls_platform_verifier::Verifier>, rustls::Error>> = OnceLock::new();

/// The rustls client configuration of [`crate::client_builder`], described in the module
/// documentation.
pub fn client_config() -> Result<rustls::ClientConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(LazyPlatformVerifier { provider }))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Whether the system's root certificates have been loaded in this process (for tests).
pub fn roots_loaded() -> bool {
    PLATFORM.get().is_some()
}

/// Hands every check to the platform verifier, built the first time a certificate is checked.
#[derive(Debug)]
struct LazyPlatformVerifier {
    provider: Arc<CryptoProvider>,
}

impl LazyPlatformVerifier {
    fn platform(&self) -> Result<&rustls_platform_verifier::Verifier, rustls::Error> {
        let built =
            PLATFORM.get_or_init(|| rustls_platform_verifier::Verifier::new(self.provider.clone()).map(Arc::new));
        built.as_deref().map_err(Clone::clone)
    }
}

impl ServerCertVerifier for LazyPlatformVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.platform()?.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.platform()?.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.platform()?.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        // What the platform verifier answers (the provider's algorithms), without loading roots:
        // a client hello asks for it before any certificate arrives.
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn building_a_client_loads_no_root_certificates() {
        let client = crate::client_builder().unwrap().build().unwrap();
        drop(client);
        assert!(!roots_loaded());
        let config = client_config().unwrap();
        assert_eq!(config.alpn_protocols, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
    }
}
