//! MCP elicitations put to the run's owner (SPEC M1): when a server asks for input during a
//! tool call (`elicitation/create`, form mode), the orchestrator shows it to the run's owner
//! through the run's [`Approver`](crate::approval::Approver) — the terminal prompt, the run's
//! page in the web UI — as an [`ElicitationPrompt`], and waits for the answer as long as for an
//! approval.
//!
//! The server's message and schema are untrusted text: redacted, shown as data, and an answer
//! only ever goes back to that server (it approves nothing). The form is pre-filled with the
//! schema's defaults; accepted values are validated against the schema before they are sent.
//! Unanswered by the expiry, the server gets `cancel`; with nobody to ask, or a schema beyond
//! the MCP spec's (reason `unsupported_schema`, without asking anyone), `decline`. Every
//! elicitation is two audit records (asked, answered) with the server, the tool and the
//! outcome, never the values given.

use serde_json::{Map, Value};
use steward_mcp::elicitation::{AnswerError, Field};
use steward_protocol::Timestamp;

/// A server's request for input, as shown to the run's owner.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationPrompt {
    /// `eli_…`.
    pub id: String,
    /// The run.
    pub run_id: String,
    /// The run's owner: the only one who may answer.
    pub owner_id: String,
    /// The tool call during which the server asked.
    pub call_id: String,
    /// The tool (`server__tool`).
    pub tool: String,
    /// The configured server name.
    pub server: String,
    /// The server's message, redacted (untrusted: show it as text).
    pub message: String,
    /// The form, from the redacted schema, pre-filled with its defaults.
    pub fields: Vec<Field>,
    /// The schema as the server sent it, to validate answers against (not for showing).
    pub schema: Value,
    /// When it was asked.
    pub created_at: Timestamp,
    /// Unanswered by then, the server gets `cancel`.
    pub expires_at: Timestamp,
}

impl ElicitationPrompt {
    /// The values of a filled-in form (`(field name, text)`; an empty text omits the field):
    /// parsed, completed with the schema's defaults, and validated against the schema. `Err`
    /// says what is wrong, for the owner to correct.
    pub fn answer(&self, inputs: &[(String, String)]) -> Result<Map<String, Value>, AnswerError> {
        steward_mcp::elicitation::answer_form(&self.schema, &self.fields, inputs)
    }
}

/// What the owner (or the lack of one) answered.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationReply {
    /// Accepted with these values (from [`ElicitationPrompt::answer`]).
    Accept {
        /// The values to send.
        values: Map<String, Value>,
        /// Who answered.
        decided_by: String,
    },
    /// Declined.
    Decline {
        /// Who answered.
        decided_by: String,
    },
    /// Dismissed without a choice.
    Cancel {
        /// Who answered.
        decided_by: String,
    },
    /// Nobody can answer here (no terminal, no UI): the server gets `decline`.
    NoApprover,
}
