//! What several of steward-core's integration tests share: an owner who approves every request
//! once, and an observer that keeps every event.

use std::sync::Mutex;

use async_trait::async_trait;
use steward_core::approval::{ApprovalAnswer, ApprovalScope, Approver};
use steward_core::events::EventObserver;
use steward_protocol::{ApprovalRequest, Event};

/// The owner `local:alice`, approving every request once.
pub struct Yes;

#[async_trait]
impl Approver for Yes {
    async fn ask(&self, _request: &ApprovalRequest, token: &str) -> ApprovalAnswer {
        ApprovalAnswer::Approve { token: token.into(), decided_by: "local:alice".into(), scope: ApprovalScope::Once }
    }
}

/// Keeps every event of a run, in order.
#[derive(Default)]
pub struct Recorder(pub Mutex<Vec<Event>>);

impl EventObserver for Recorder {
    fn on_event(&self, event: &Event) {
        self.0.lock().unwrap().push(event.clone());
    }
}
