//! What several of steward-core's integration tests share: an owner who approves every request
//! once, an observer that keeps every event, and the context a tool is called with.

use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use steward_core::EventObserver;
use steward_core::{ApprovalAnswer, ApprovalScope, Approver};
use steward_policy::Workspace;
use steward_protocol::{ApprovalRequest, Event};
use steward_tools::ToolContext;
use steward_tools::rollback::Snapshots;
use tokio_util::sync::CancellationToken;

/// The owner `local:alice`, approving every request once.
pub struct Yes;

#[async_trait]
impl Approver for Yes {
    async fn ask(&self, request: &ApprovalRequest, token: &str) -> ApprovalAnswer {
        let call_hash = steward_core::call_hash(request);
        ApprovalAnswer::Approve {
            token: token.into(),
            decided_by: "local:alice".into(),
            scope: ApprovalScope::Once,
            call_hash,
        }
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

/// The context a tool is called with in workspace `root`: defaults everywhere (no variables
/// passed through, no credentials, no egress, the default sandbox), a 30 s timeout, and
/// snapshots under the temporary folder's `snapshots` folder.
pub fn tool_context(root: &Path, snapshots: &str) -> ToolContext {
    ToolContext {
        workspace: Arc::new(Workspace::open(root, &[]).unwrap()),
        cancel: CancellationToken::new(),
        env_allow: Vec::new(),
        timeout_ms: 30_000,
        snapshots: Snapshots::new(&std::env::temp_dir().join(snapshots), "run"),
        credentials: Default::default(),
        elicitor: None,
        egress: None,
        accept_weaker: Vec::new(),
        sandbox: Default::default(),
    }
}
