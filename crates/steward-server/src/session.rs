//! Owners of browser sessions (SPEC C7): a signed, HttpOnly, `SameSite=Strict` cookie names
//! the owner; state-changing requests carry a CSRF token derived from it; a one-time login URL
//! links one browser to the local owner (`local:<user>`), whose runs the CLI starts too.
//!
//! The cookie `steward_owner` holds the owner id, signed with HMAC-SHA256 by the `cookie`
//! crate (through `axum-extra`'s `SignedCookieJar`) under the server's session key. A browser
//! without a valid cookie gets a fresh owner `web:<16 hex>`. The CSRF token is the lowercase
//! hex HMAC-SHA256 of `csrf:<owner id>` under the same key: pages embed it in
//! `<meta name="csrf-token">` and forms; the JSON API expects it in `X-CSRF-Token`.

use std::sync::Mutex;

use axum::http::header;
use axum_extra::extract::cookie::{Cookie, Key, SameSite, SignedCookieJar};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// Name of the owner cookie.
pub const OWNER_COOKIE: &str = "steward_owner";
/// Header carrying the CSRF token on JSON requests.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// Lifetime of the owner cookie: 30 days.
const COOKIE_MAX_AGE_DAYS: i64 = 30;

/// The owner of the request, put into the request's extensions by `owner_layer`.
#[derive(Debug, Clone)]
pub struct Session {
    /// `local:<user>` or `web:<16 hex>`.
    pub owner_id: String,
    /// The CSRF token for this owner.
    pub csrf: String,
}

/// Session secrets: the cookie key and the pending one-time login token.
pub struct Sessions {
    key: Key,
    mac_key: Vec<u8>,
    local_owner: String,
    login_token: Mutex<Option<String>>,
}

impl Sessions {
    /// Sessions signed with `secret` (at least 64 bytes; shorter secrets are rejected with
    /// `None`). `local_owner` is the owner the login URL signs in as.
    pub fn new(secret: &[u8], local_owner: &str) -> Option<Self> {
        if secret.len() < 64 {
            return None;
        }
        Some(Sessions {
            key: Key::from(secret),
            mac_key: secret.to_vec(),
            local_owner: local_owner.to_string(),
            login_token: Mutex::new(None),
        })
    }

    /// A new one-time login token (32 random bytes, hex); it replaces any earlier unused one.
    pub fn issue_login_token(&self) -> String {
        let token = hex::encode(rand::random::<[u8; 32]>());
        if let Ok(mut slot) = self.login_token.lock() {
            *slot = Some(token.clone());
        }
        token
    }

    /// Consumes the login token when `given` matches it (constant-time); true on success.
    pub fn redeem_login_token(&self, given: &str) -> bool {
        let Ok(mut slot) = self.login_token.lock() else { return false };
        // Compared as SHA-256 digests: how long a comparison takes says nothing about the token.
        let digest = |t: &str| sha2::Sha256::digest(t.as_bytes());
        let matches = slot.as_deref().is_some_and(|expected| digest(expected) == digest(given));
        if matches {
            *slot = None;
        }
        matches
    }

    /// The local owner (`local:<user>`).
    pub fn local_owner(&self) -> &str {
        &self.local_owner
    }

    fn csrf_mac(&self, owner_id: &str) -> Hmac<Sha256> {
        // HMAC accepts keys of any length, so this cannot fail.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.mac_key)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        mac.update(b"csrf:");
        mac.update(owner_id.as_bytes());
        mac
    }

    /// The CSRF token of `owner_id`.
    pub fn csrf_token(&self, owner_id: &str) -> String {
        hex::encode(self.csrf_mac(owner_id).finalize().into_bytes())
    }

    /// True when `token` is the CSRF token of `owner_id` (compared in constant time by the
    /// `hmac` crate).
    pub fn csrf_ok(&self, owner_id: &str, token: &str) -> bool {
        hex::decode(token).is_ok_and(|bytes| self.csrf_mac(owner_id).verify_slice(&bytes).is_ok())
    }

    /// The owner cookie for `owner_id`.
    pub fn owner_cookie(owner_id: String) -> Cookie<'static> {
        Cookie::build((OWNER_COOKIE, owner_id))
            .http_only(true)
            .same_site(SameSite::Strict)
            .path("/")
            .max_age(time::Duration::days(COOKIE_MAX_AGE_DAYS))
            .build()
    }

    /// A cookie jar over the request's cookies.
    pub fn jar(&self, headers: &axum::http::HeaderMap) -> SignedCookieJar {
        SignedCookieJar::from_headers(headers, self.key.clone())
    }
}

/// Owner ids this server hands out: `local:<name>` or `web:<16 hex>`.
pub(crate) fn valid_owner_id(value: &str) -> bool {
    (value.starts_with("local:") || value.starts_with("web:"))
        && value.len() <= 128
        && value.bytes().all(|b| b.is_ascii_graphic())
}

/// False when the request's `Origin` names a host other than its `Host` header.
pub(crate) fn same_origin(headers: &axum::http::HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else { return true };
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else { return false };
    let origin_host = origin.split_once("://").map(|(_, rest)| rest).unwrap_or(origin);
    origin_host.trim_end_matches('/') == host
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions() -> Sessions {
        Sessions::new(&[7u8; 64], "local:alice").unwrap()
    }

    #[test]
    fn short_secrets_are_refused() {
        assert!(Sessions::new(&[1u8; 63], "local:a").is_none());
    }

    #[test]
    fn login_token_works_once() {
        let s = sessions();
        let token = s.issue_login_token();
        assert!(!s.redeem_login_token("nope"));
        assert!(s.redeem_login_token(&token));
        assert!(!s.redeem_login_token(&token));
    }

    #[test]
    fn csrf_tokens_are_per_owner() {
        let s = sessions();
        let a = s.csrf_token("web:a");
        assert!(s.csrf_ok("web:a", &a));
        assert!(!s.csrf_ok("web:b", &a));
        assert!(!s.csrf_ok("web:a", ""));
    }

    #[test]
    fn origin_must_match_host() {
        let mut h = axum::http::HeaderMap::new();
        h.insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
        assert!(same_origin(&h));
        h.insert(header::ORIGIN, "http://127.0.0.1:8080".parse().unwrap());
        assert!(same_origin(&h));
        h.insert(header::ORIGIN, "http://evil.example".parse().unwrap());
        assert!(!same_origin(&h));
    }

    #[test]
    fn owner_ids_are_checked() {
        assert!(valid_owner_id("web:0123456789abcdef"));
        assert!(valid_owner_id("local:alice"));
        assert!(!valid_owner_id("admin"));
        assert!(!valid_owner_id("web:a b"));
    }
}
