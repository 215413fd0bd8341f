//! The tools the agent wrote for itself (SPEC G) on the Tools pages: the session owner's
//! generated tools only (as `steward tools generated` shows the local owner's), each with its
//! versions, the full source of every version, the history of its generation, approval and
//! removal, and removal itself (audited, like `steward tools generated remove`).

use steward_store::GeneratedToolRecord;

use super::*;

/// One version of a generated tool, as the pages show it.
#[derive(Serialize)]
pub(crate) struct VersionRow {
    version: u32,
    versioned: String,
    /// `offered` (the newest version not removed), `older` or `removed`.
    state: &'static str,
    description: String,
    source_hash: String,
    source: String,
    input_schema: String,
    approved_by: String,
    approval_id: String,
    run_id: String,
    created_at: String,
    removed_at: String,
    removed_by: String,
}

/// One generated tool: its name and versions, newest first.
#[derive(Serialize)]
pub(crate) struct ToolRow {
    name: String,
    /// The version runs are offered, if any.
    offered: Option<u32>,
    versions: Vec<VersionRow>,
}

/// One line of a tool's history.
#[derive(Serialize)]
struct HistoryRow {
    at: String,
    what: &'static str,
    detail: String,
    run_id: String,
}

/// Every version of the owner's generated tools (none when the store keeps none).
async fn records(state: &AppState, owner_id: &str) -> Result<Vec<GeneratedToolRecord>, ApiError> {
    match state.runtime.store.generated_registry() {
        Some(registry) => registry.generated_tools(owner_id).await.map_err(ApiError::storage),
        None => Ok(Vec::new()),
    }
}

/// The owner's generated tools by name, each version's state worked out as the CLI does.
pub(crate) async fn tool_rows(state: &AppState, owner_id: &str) -> Result<Vec<ToolRow>, ApiError> {
    let all = records(state, owner_id).await?;
    let current: Vec<(String, u32)> =
        steward_store::generated::current_versions(&all).iter().map(|r| (r.name.clone(), r.version)).collect();
    let mut rows: Vec<ToolRow> = Vec::new();
    for r in &all {
        let offered = current.iter().find(|(n, _)| *n == r.name).map(|(_, v)| *v);
        let state = if r.removed_at.is_some() {
            "removed"
        } else if offered == Some(r.version) {
            "offered"
        } else {
            "older"
        };
        let row = VersionRow {
            version: r.version,
            versioned: r.versioned_name(),
            state,
            description: r.description.clone(),
            source_hash: r.source_hash.clone(),
            source: r.source.clone(),
            input_schema: serde_json::to_string_pretty(&r.input_schema).unwrap_or_default(),
            approved_by: r.approved_by.clone().unwrap_or_default(),
            approval_id: r.approval_id.clone().unwrap_or_default(),
            run_id: r.run_id.clone(),
            created_at: r.created_at.to_rfc3339(),
            removed_at: r.removed_at.map(|t| t.to_rfc3339()).unwrap_or_default(),
            removed_by: r.removed_by.clone().unwrap_or_default(),
        };
        match rows.iter_mut().find(|t| t.name == r.name) {
            Some(tool) => tool.versions.push(row),
            None => rows.push(ToolRow { name: r.name.clone(), offered, versions: vec![row] }),
        }
    }
    for tool in &mut rows {
        tool.versions.sort_by_key(|v| std::cmp::Reverse(v.version));
    }
    Ok(rows)
}

/// The history of the owner's tool `name`: every step of its generation recorded in the
/// audit trail of the runs that generated a version (attempts, checks passed, registration
/// with its approval), each approval request, and each removal; oldest first.
async fn history(state: &AppState, versions: &[&GeneratedToolRecord]) -> Result<Vec<HistoryRow>, ApiError> {
    let store = &state.runtime.store;
    let mut rows: Vec<(chrono::DateTime<chrono::Utc>, HistoryRow)> = Vec::new();
    let mut runs: Vec<&str> = versions.iter().map(|r| r.run_id.as_str()).collect();
    runs.sort_unstable();
    runs.dedup();
    let Some(name) = versions.first().map(|r| r.name.as_str()) else { return Ok(Vec::new()) };
    for run in runs {
        for record in store.audit_records(Some(run)).await.map_err(ApiError::storage)? {
            let entry = &record.entry;
            if entry.policy != "generated_tool" || entry.action != name {
                continue;
            }
            let what = match entry.outcome {
                steward_protocol::AuditOutcome::Approved => "approved and registered",
                steward_protocol::AuditOutcome::Failed => "rejected",
                _ => "generated and checked",
            };
            let row = HistoryRow { at: record.at.to_rfc3339(), what, detail: entry.detail.clone(), run_id: run.into() };
            rows.push((record.at, row));
        }
        let approvals = store.approvals(run).await.map_err(ApiError::storage)?;
        for r in versions.iter().filter(|r| r.run_id == run) {
            let Some(approval) = r.approval_id.as_deref().and_then(|id| approvals.iter().find(|a| a.id == id)) else {
                continue;
            };
            let detail = format!(
                "approval {} asked of {} to register {} (source sha256 {}), {}",
                approval.id,
                approval.owner_id,
                r.versioned_name(),
                r.source_hash,
                approval.status.as_str()
            );
            let row =
                HistoryRow { at: approval.created_at.to_rfc3339(), what: "approval asked", detail, run_id: run.into() };
            rows.push((approval.created_at, row));
        }
    }
    for r in versions {
        if let Some(at) = r.removed_at {
            let by = r.removed_by.as_deref().unwrap_or("?");
            let detail = format!("{by} removed {}", r.versioned_name());
            rows.push((at, HistoryRow { at: at.to_rfc3339(), what: "removed", detail, run_id: String::new() }));
        }
    }
    rows.sort_by_key(|(at, _)| *at);
    Ok(rows.into_iter().map(|(_, row)| row).collect())
}

/// `GET /tools/generated/{name}`: one of the owner's generated tools, every version with its
/// full source, and its history. 404 when the owner has no tool of that name.
pub async fn generated_tool_page(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(name): Path<String>,
) -> Response {
    let result = async {
        let all = records(&state, &session.owner_id).await?;
        let versions: Vec<&GeneratedToolRecord> = all.iter().filter(|r| r.name == name).collect();
        if versions.is_empty() {
            return Err(ApiError::not_found(format!("you have no generated tool `{name}`")));
        }
        let history = history(&state, &versions).await?;
        let tool = tool_rows(&state, &session.owner_id).await?.into_iter().find(|t| t.name == name);
        Ok((tool, history))
    }
    .await;
    match result {
        Ok((tool, history)) => render(
            StatusCode::OK,
            "generated_tool.html",
            context! { csrf => &session.csrf, owner => &session.owner_id, tool => ser(&tool), history => ser(&history) },
        ),
        Err(e) => error_page(&session, &e),
    }
}

/// The removal form: the CSRF token and, to remove one version only, its number.
#[derive(Deserialize)]
pub struct RemoveGeneratedForm {
    csrf: String,
    #[serde(default)]
    version: Option<u32>,
}

/// `POST /tools/generated/{name}/remove` (form): removes the owner's tool (every version, or
/// the form's `version`); audited. Runs stop offering it from their next start.
pub async fn remove_generated_tool(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(name): Path<String>,
    Form(form): Form<RemoveGeneratedForm>,
) -> Response {
    let act = async {
        let owner = &session.owner_id;
        let removed = steward_core::remove_generated_tool(
            &state.runtime.store,
            state.runtime.clock.as_ref(),
            owner,
            &name,
            form.version,
            owner,
        )
        .await
        .map_err(ApiError::storage)?;
        if removed.is_empty() {
            let what = form.version.map_or_else(|| name.clone(), |v| format!("{name}@v{v}"));
            return Err(ApiError::not_found(format!("you have no generated tool `{what}` left to remove")));
        }
        Ok(format!("/tools/generated/{name}"))
    };
    form_post(&state, &session, &form.csrf, act).await
}
