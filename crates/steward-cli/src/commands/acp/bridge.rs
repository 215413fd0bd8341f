//! The way from a run (its observer and approver, on the runtime's worker threads) to the ACP
//! connection (single-threaded, on the local task set): messages in order on one channel,
//! sent by [`drain`].

use std::rc::Rc;

use agent_client_protocol::{self as acp, Client as _};
use tokio::sync::{mpsc, oneshot};

/// What a run sends the editor.
pub enum Outgoing {
    /// A `session/update` notification.
    Update(Box<acp::SessionNotification>),
    /// A `session/request_permission` request and where its answer goes.
    Permission(Box<acp::RequestPermissionRequest>, oneshot::Sender<acp::Result<acp::RequestPermissionResponse>>),
    /// Answered once everything sent before it is handed to the connection (a prompt's updates
    /// go out before its response).
    Flush(oneshot::Sender<()>),
}

/// The sending side; cheap to clone.
#[derive(Clone)]
pub struct Bridge(pub mpsc::UnboundedSender<Outgoing>);

impl Bridge {
    /// Queues `message`; `Err` when the connection is gone.
    pub fn send(&self, message: Outgoing) -> Result<(), ()> {
        self.0.send(message).map_err(|_| ())
    }

    /// Queues a `session/update` of `session_id`.
    pub fn update(&self, session_id: &acp::SessionId, update: acp::SessionUpdate) {
        let _ = self.send(Outgoing::Update(Box::new(acp::SessionNotification::new(session_id.clone(), update))));
    }

    /// Waits until everything queued so far was handed to the connection.
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.send(Outgoing::Flush(tx)).is_ok() {
            let _ = rx.await;
        }
    }
}

/// Hands the queued messages to `conn` in order until every sender is gone; permission
/// requests wait for their answers in tasks of their own, so updates keep flowing meanwhile.
pub async fn drain(conn: Rc<acp::AgentSideConnection>, mut rx: mpsc::UnboundedReceiver<Outgoing>) {
    while let Some(message) = rx.recv().await {
        match message {
            Outgoing::Update(notification) => {
                if let Err(e) = conn.session_notification(*notification).await {
                    tracing::warn!("session/update not sent: {e}");
                }
            }
            Outgoing::Permission(request, answer) => {
                let conn = conn.clone();
                tokio::task::spawn_local(async move {
                    let _ = answer.send(conn.request_permission(*request).await);
                });
            }
            Outgoing::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}
