use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Timestamp;

/// A tool's risk level, from `safe` to `dangerous`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RiskLevel {
    /// Reads nothing sensitive and changes nothing.
    Safe,
    /// Reads workspace content.
    Low,
    /// Changes workspace content in a way that can be rolled back.
    Medium,
    /// Runs programs or changes things outside easy rollback.
    High,
    /// Irreversible or wide-reaching.
    Dangerous,
}

impl RiskLevel {
    /// The base risk score in `[0, 1]` for this level.
    pub fn base_score(self) -> f64 {
        match self {
            RiskLevel::Safe => 0.0,
            RiskLevel::Low => 0.2,
            RiskLevel::Medium => 0.5,
            RiskLevel::High => 0.8,
            RiskLevel::Dangerous => 1.0,
        }
    }

    /// The wire name (`safe`, `low`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            RiskLevel::Safe => "safe",
            RiskLevel::Low => "low",
            RiskLevel::Medium => "medium",
            RiskLevel::High => "high",
            RiskLevel::Dangerous => "dangerous",
        }
    }

    /// Parses a wire name; `None` for anything else.
    pub fn parse(name: &str) -> Option<RiskLevel> {
        Some(match name {
            "safe" => RiskLevel::Safe,
            "low" => RiskLevel::Low,
            "medium" => RiskLevel::Medium,
            "high" => RiskLevel::High,
            "dangerous" => RiskLevel::Dangerous,
            _ => return None,
        })
    }
}

/// What a model sees of a tool, plus what the control layer needs to judge it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolSpec {
    /// Registry name, e.g. `read` (`^[a-zA-Z0-9_-]{1,64}$`).
    pub name: String,
    /// One or two sentences for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub input_schema: Value,
    /// Risk level; decides the default policy (reads allow, writes ask).
    pub risk: RiskLevel,
    /// True when the tool changes files or state.
    pub writes: bool,
    /// Names of arguments that are workspace paths; the gate resolves and checks each one
    /// (workspace boundary, secret paths, ignore rules) before the tool runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path_inputs: Vec<String>,
    /// True when the tool's output may carry text from outside the user's control (command
    /// output, web pages, MCP results): once a run has seen it, the run is tainted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub untrusted_output: bool,
}

/// A tool call proposed by a planner, with parsed arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id (`call_…`, `toolu_…`), or one Steward made (`tc_…`).
    pub id: String,
    /// Tool name as the model wrote it.
    pub name: String,
    /// Arguments; always a JSON value that parsed completely.
    pub arguments: Value,
}

/// The three decisions of the gate.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Run without asking.
    Allow,
    /// Run only after the owner approves.
    Ask,
    /// Never run.
    Deny,
}

impl DecisionKind {
    /// The wire name (`allow`, `ask`, `deny`).
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::Allow => "allow",
            DecisionKind::Ask => "ask",
            DecisionKind::Deny => "deny",
        }
    }
}

/// A decision of the control layer with the rule that decided it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// allow / ask / deny. Stricter wins when several rules match (deny > ask > allow).
    pub decision: DecisionKind,
    /// Name of the deciding rule: a `[[policy.rule]]` name, `default:<risk>`, or a built-in
    /// refusal such as `workspace_boundary`, `secret_path`, `unknown_tool`, `no_approver`.
    pub rule: String,
    /// Risk score in `[0, 1]`.
    pub risk: f64,
    /// Human-readable reasons, shown to the user and the model.
    pub reasons: Vec<String>,
    /// What the risk score is made of, in the order it was added up; empty when the
    /// score was not computed from the call (an unknown tool scores 1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub risk_factors: Vec<RiskFactor>,
    /// How long an approval request for this call stays open, when a `[[policy.rule]]` or
    /// the tool's `[[tool]]` entry sets it (per-action expiry); `None`: the default
    /// (`approval_timeout_seconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_ttl: Option<ApprovalTtl>,
}

/// One contribution to a risk score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RiskFactor {
    /// What contributes: `risk_level`, `writes`, `protected_path`, `many_files`, `deletes`,
    /// `outside_source_paths`, `destructive_option`, `large_change`, `tainted`.
    pub factor: String,
    /// How much it adds to the score (before the sum is clamped to `[0, 1]`).
    pub score: f64,
    /// What in the call it is about, for people.
    pub detail: String,
}

/// A per-action approval expiry and where it was configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalTtl {
    /// Seconds an approval request stays open (at least 1).
    pub seconds: u64,
    /// Where it was set: `policy rule `NAME`` or `tool `NAME``.
    pub source: String,
}

impl ApprovalTtl {
    /// The shorter of two expiries (`a` when equal); either may be absent.
    pub fn shorter(a: Option<ApprovalTtl>, b: Option<ApprovalTtl>) -> Option<ApprovalTtl> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if b.seconds < a.seconds { b } else { a }),
            (a, b) => a.or(b),
        }
    }
}

impl Decision {
    /// A decision with one reason.
    pub fn new(decision: DecisionKind, rule: impl Into<String>, risk: f64, reason: impl Into<String>) -> Self {
        Decision {
            decision,
            rule: rule.into(),
            risk,
            reasons: vec![reason.into()],
            risk_factors: Vec::new(),
            approval_ttl: None,
        }
    }

    /// All reasons joined with `; `.
    pub fn reason(&self) -> String {
        self.reasons.join("; ")
    }
}

/// Status of an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for the owner.
    Pending,
    /// The owner approved before expiry.
    Approved,
    /// The owner denied, or nobody could answer.
    Denied,
    /// Expired before a decision, or the run ended.
    Expired,
}

impl ApprovalStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Denied => "denied",
            ApprovalStatus::Expired => "expired",
        }
    }

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "pending" => Self::Pending,
            "approved" => Self::Approved,
            "denied" => Self::Denied,
            "expired" => Self::Expired,
            _ => return None,
        })
    }
}

/// A request for a human decision on one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalRequest {
    /// `apr_…`
    pub id: String,
    /// The run the call belongs to.
    pub run_id: String,
    /// Only this owner may decide.
    pub owner_id: String,
    /// The tool call awaiting a decision.
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// Arguments, redacted.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub arguments: Value,
    /// Why the gate asks.
    pub reason: String,
    /// The deciding rule.
    pub rule: String,
    /// Risk score in `[0, 1]`.
    pub risk: f64,
    /// A preview of the effect (for example a diff), redacted; empty when none.
    pub preview: String,
    /// When the request was made.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    /// After this instant the request can no longer be approved.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub expires_at: Timestamp,
    /// Current status.
    pub status: ApprovalStatus,
}
