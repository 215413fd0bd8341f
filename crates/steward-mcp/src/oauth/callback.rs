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

    /// Waits up to `limit` for the redirect and returns its whole address (with the query the
    /// authorization server added). Errors: a sentence (no redirect in time, or the
    /// authorization server's `error` and `error_description`).
    pub(crate) async fn wait(self, limit: Duration) -> Result<String, String> {
        let redirect = self.redirect_uri();
        let (sender, mut received) = mpsc::channel::<String>(1);
        let app = axum::Router::new().route("/callback", get(answer)).with_state(sender);
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

/// Hands the query to the waiting login and tells the person they may close the tab.
async fn answer(State(sender): State<mpsc::Sender<String>>, RawQuery(query): RawQuery) -> Html<&'static str> {
    let _ = sender.try_send(query.unwrap_or_default());
    Html(
        "<!doctype html><meta charset=utf-8><title>Steward</title>\
         <p>Steward received the login. You can close this tab and go back to the terminal.</p>",
    )
}
