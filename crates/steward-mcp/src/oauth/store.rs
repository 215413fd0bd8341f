//! Where logins are kept: `$STEWARD_HOME/mcp-logins/OWNER/SERVER.json`, owner-only.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use oauth2::TokenResponse;
use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The logins of one owner: `DIR/mcp-logins/H/` where `H` is the first 32 hex digits of the
/// SHA-256 of the owner id (`local:alice`, a web owner …), one `SERVER.json` per server.
#[derive(Debug, Clone)]
pub struct TokenPlace {
    dir: PathBuf,
}

/// What is known of a stored login, without its tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoginState {
    /// A login is stored for this server at its configured address.
    pub logged_in: bool,
    /// When the access token expires, in seconds since the Unix epoch, when the server said.
    pub expires_at: Option<u64>,
    /// Whether it can be renewed without a person (a refresh token was given).
    pub renewable: bool,
    /// The scopes granted.
    pub scopes: Vec<String>,
}

/// One stored login, bound to the address it was made for.
#[derive(Serialize, Deserialize)]
struct TokenFile {
    /// The server's configured address: the only one this login is sent to.
    resource: String,
    credentials: StoredCredentials,
}

impl TokenPlace {
    /// The logins of `owner` under `steward_home` (`$STEWARD_HOME`).
    pub fn new(steward_home: &Path, owner: &str) -> TokenPlace {
        let digest = hex::encode(Sha256::digest(owner.as_bytes()));
        TokenPlace { dir: steward_home.join("mcp-logins").join(&digest[..32]) }
    }

    fn file(&self, server: &str) -> PathBuf {
        // Server names are 1–32 of `[A-Za-z0-9_-]` (checked with the configuration).
        self.dir.join(format!("{server}.json"))
    }

    /// The credential store of `server` at `url`, for the SDK's authorization manager.
    pub(crate) fn store(&self, server: &str, url: &str) -> FileCredentialStore {
        FileCredentialStore { path: self.file(server), resource: url.to_string() }
    }

    fn read(&self, server: &str, url: &str) -> Option<StoredCredentials> {
        let text = std::fs::read_to_string(self.file(server)).ok()?;
        let file: TokenFile = serde_json::from_str(&text).ok()?;
        (file.resource == url).then_some(file.credentials)
    }

    /// What is stored for `server` at `url` (a login made for another address counts as none).
    pub fn state(&self, server: &str, url: &str) -> LoginState {
        let Some(credentials) = self.read(server, url) else { return LoginState::default() };
        let Some(tokens) = &credentials.token_response else { return LoginState::default() };
        let expires_at = tokens
            .expires_in()
            .zip(credentials.token_received_at)
            .map(|(expires_in, received)| received.saturating_add(expires_in.as_secs()));
        LoginState {
            logged_in: true,
            expires_at,
            renewable: tokens.refresh_token().is_some(),
            scopes: credentials.granted_scopes.clone(),
        }
    }

    /// The access and refresh tokens stored for `server` at `url`, for the redactor.
    pub fn secret_values(&self, server: &str, url: &str) -> Vec<String> {
        let Some(tokens) = self.read(server, url).and_then(|c| c.token_response) else { return Vec::new() };
        let mut values = vec![tokens.access_token().secret().clone()];
        values.extend(tokens.refresh_token().map(|t| t.secret().clone()));
        values
    }

    /// Forgets the login of `server`. `Ok(false)` when none was stored.
    pub fn logout(&self, server: &str) -> std::io::Result<bool> {
        match std::fs::remove_file(self.file(server)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// The SDK's view of one stored login ([`CredentialStore`]): reads and writes `SERVER.json`,
/// each write a new owner-only file renamed over the old one.
pub(crate) struct FileCredentialStore {
    path: PathBuf,
    resource: String,
}

impl FileCredentialStore {
    fn write(&self, credentials: StoredCredentials) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        let file = TokenFile { resource: self.resource.clone(), credentials };
        let text = serde_json::to_vec(&file).map_err(std::io::Error::other)?;
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default();
        let temporary = self.path.with_extension(format!("{}.{nanos}.tmp", std::process::id()));
        let mut out = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temporary)?;
        out.write_all(&text)?;
        out.sync_all()?;
        std::fs::rename(&temporary, &self.path)
    }
}

fn store_error(e: std::io::Error) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

#[async_trait]
impl CredentialStore for FileCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(store_error(e)),
        };
        let file: TokenFile = serde_json::from_str(&text)
            .map_err(|e| AuthError::CredentialStoreError(format!("{}: {e}", self.path.display())))?;
        Ok((file.resource == self.resource).then_some(file.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(credentials).map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(store_error(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oauth2::basic::BasicTokenType;
    use oauth2::{AccessToken, RefreshToken};
    use rmcp::transport::auth::{OAuthTokenResponse, VendorExtraTokenFields};

    fn tokens(access: &str, refresh: Option<&str>) -> StoredCredentials {
        let mut response = OAuthTokenResponse::new(
            AccessToken::new(access.into()),
            BasicTokenType::Bearer,
            VendorExtraTokenFields::default(),
        );
        response.set_expires_in(Some(&std::time::Duration::from_secs(600)));
        response.set_refresh_token(refresh.map(|r| RefreshToken::new(r.into())));
        StoredCredentials::new("client-1".into(), Some(response), vec!["docs:read".into()], Some(1_000))
    }

    #[tokio::test]
    async fn a_login_is_owner_only_bound_to_its_address_and_to_its_owner() {
        let home = tempfile::tempdir().unwrap();
        let alice = TokenPlace::new(home.path(), "local:alice");
        let store = alice.store("docs", "https://docs.example/mcp");
        assert!(store.load().await.unwrap().is_none());
        store.save(tokens("access-1", Some("refresh-1"))).await.unwrap();

        let state = alice.state("docs", "https://docs.example/mcp");
        assert_eq!(
            state,
            LoginState { logged_in: true, expires_at: Some(1_600), renewable: true, scopes: vec!["docs:read".into()] }
        );
        assert_eq!(alice.secret_values("docs", "https://docs.example/mcp"), ["access-1", "refresh-1"]);
        let file = alice.file("docs");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(file.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
        assert!(!std::fs::read_to_string(&file).unwrap().contains("alice"), "the owner id is not in the path");

        // The configuration now names another address: the login is not sent there.
        let moved = alice.store("docs", "https://elsewhere.example/mcp");
        assert!(moved.load().await.unwrap().is_none());
        assert!(!alice.state("docs", "https://elsewhere.example/mcp").logged_in);
        assert!(alice.secret_values("docs", "https://elsewhere.example/mcp").is_empty());
        // Another owner has none.
        let bob = TokenPlace::new(home.path(), "local:bob");
        assert!(!bob.state("docs", "https://docs.example/mcp").logged_in);
        assert!(bob.store("docs", "https://docs.example/mcp").load().await.unwrap().is_none());

        // A renewal replaces the file; a logout deletes it.
        store.save(tokens("access-2", None)).await.unwrap();
        assert_eq!(alice.secret_values("docs", "https://docs.example/mcp"), ["access-2"]);
        assert!(!alice.state("docs", "https://docs.example/mcp").renewable);
        assert!(alice.logout("docs").unwrap());
        assert!(!alice.logout("docs").unwrap());
        assert!(!file.exists());
        let leftovers: Vec<_> = std::fs::read_dir(file.parent().unwrap()).unwrap().collect();
        assert!(leftovers.is_empty(), "no temporary files are left: {leftovers:?}");
    }

    #[tokio::test]
    async fn a_damaged_login_file_is_an_error_not_a_login() {
        let home = tempfile::tempdir().unwrap();
        let place = TokenPlace::new(home.path(), "local:alice");
        let store = place.store("docs", "https://docs.example/mcp");
        store.save(tokens("access-1", None)).await.unwrap();
        std::fs::write(place.file("docs"), "{ not json").unwrap();
        assert!(matches!(store.load().await, Err(AuthError::CredentialStoreError(_))));
        assert!(!place.state("docs", "https://docs.example/mcp").logged_in);
    }
}
