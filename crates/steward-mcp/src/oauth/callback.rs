//! The loopback address a browser is sent back to after a login (RFC 8252 §7.3): one
//! `GET /callback?code=…&state=…` on `127.0.0.1`, answered with a short page.

use std::time::Duration;

use axum::extract::{RawQuery, State};
use axum::response::Html;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// A redirect address for configuring a client outside a login (its refreshes send none).
pub(crate) const PLACEHOLDER_REDIRECT: &str = "http://127.0.0.1/callback";

/// A listener on a loopback port waiting for the authorization server's redirect.
pub(crate) struct Callback {
    listener: TcpListener,
    port: u16,
}

impl Callback {
    /// Listens on `127.0.0.1:PORT` (`None`: any free port). Errors: the port is taken.
    pub(crate) async fn bind(port: Option<u16>) -> std::io::Result<Callback> {
        let listener = TcpListener::bind(("127.0.0.1", port.unwrap_or(0))).await?;
        let port = listener.local_addr()?.port();
        Ok(Callback { listener, port })
    }

    /// `http://127.0.0.1:PORT/callback`.
    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    /// Waits up to `limit` for the redirect carrying `state` (the one this login sent; a
    /// request with another or none is answered and ignored, so another local program cannot
    /// end the login by calling first) and returns its whole address with the query the
    /// authorization server added. Errors: a sentence (no redirect in time, or the
    /// authorization server's `error` and `error_description`).
    pub(crate) async fn wait(self, limit: Duration, state: String) -> Result<String, String> {
        let redirect = self.redirect_uri();
        let (sender, mut received) = mpsc::channel::<String>(1);
        let app = axum::Router::new().route("/callback", get(answer)).with_state(Waiting { sender, state });
        let server = axum::serve(self.listener, app);
        let query = tokio::select! {
            served = server => return Err(format!("the login's loopback listener stopped: {served:?}")),
            query = received.recv() => query.unwrap_or_default(),
            _ = tokio::time::sleep(limit) => {
                return Err(format!("no login came back within {} s", limit.as_secs()));
            }
        };
        let address = format!("{redirect}?{query}");
        let pairs = reqwest::Url::parse(&address).map_err(|e| format!("the redirect is not an address: {e}"))?;
        if let Some((_, error)) = pairs.query_pairs().find(|(k, _)| k == "error") {
            let description = pairs.query_pairs().find(|(k, _)| k == "error_description").map(|(_, v)| v.into_owned());
            let why = description.map_or_else(String::new, |d| format!(": {d}"));
            return Err(format!("the authorization server refused the login ({error}{why})"));
        }
        Ok(address)
    }
}

/// The login waiting for its redirect.
#[derive(Clone)]
struct Waiting {
    sender: mpsc::Sender<String>,
    /// The `state` the login sent.
    state: String,
}

/// Hands a query carrying the login's `state` to the waiting login and tells the person they
/// may close the tab; any other request is told it is not the login Steward waits for.
async fn answer(State(waiting): State<Waiting>, RawQuery(query): RawQuery) -> Html<&'static str> {
    let query = query.unwrap_or_default();
    let ours = reqwest::Url::parse(&format!("http://127.0.0.1/?{query}"))
        .is_ok_and(|url| url.query_pairs().any(|(k, v)| k == "state" && *v == waiting.state));
    if !ours {
        return Html(
            "<!doctype html><meta charset=utf-8><title>Steward</title>\
             <p>This is not the login Steward is waiting for.</p>",
        );
    }
    let _ = waiting.sender.try_send(query);
    Html(
        "<!doctype html><meta charset=utf-8><title>Steward</title>\
         <p>Steward received the login. You can close this tab and go back to the terminal.</p>",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> reqwest::Client {
        steward_http::install_crypto_provider();
        reqwest::Client::new()
    }

    #[tokio::test]
    async fn only_the_redirect_with_the_logins_state_ends_the_wait() {
        let callback = Callback::bind(None).await.unwrap();
        let redirect = callback.redirect_uri();
        let waiting = tokio::spawn(callback.wait(Duration::from_secs(20), "s-123".into()));
        let client = client();
        // Another program calls first, without the state or with another one.
        for query in ["code=evil", "code=evil&state=other"] {
            let page = client.get(format!("{redirect}?{query}")).send().await.unwrap().text().await.unwrap();
            assert!(page.contains("not the login"), "{page}");
        }
        assert!(!waiting.is_finished());
        let page = client.get(format!("{redirect}?code=good&state=s-123")).send().await.unwrap().text().await.unwrap();
        assert!(page.contains("received the login"), "{page}");
        let address = waiting.await.unwrap().unwrap();
        assert_eq!(address, format!("{redirect}?code=good&state=s-123"));
    }

    #[tokio::test]
    async fn a_refusal_or_no_answer_is_a_sentence() {
        let callback = Callback::bind(None).await.unwrap();
        let redirect = callback.redirect_uri();
        let waiting = tokio::spawn(callback.wait(Duration::from_secs(20), "s".into()));
        let query = "error=access_denied&error_description=The+user+said+no&state=s";
        client().get(format!("{redirect}?{query}")).send().await.unwrap();
        let refused = waiting.await.unwrap().unwrap_err();
        assert!(refused.contains("access_denied: The user said no"), "{refused}");
        let silent = Callback::bind(None).await.unwrap().wait(Duration::from_millis(200), "s".into()).await;
        assert!(silent.unwrap_err().contains("no login came back"));
    }
}
