//! The pages of what runs remember and may use: remembered facts, tools, grants.

use super::*;

/// `GET /memory`.
pub async fn memory_page(State(state): State<AppState>, Extension(session): Extension<Session>) -> Response {
    match crate::memory::list(&state, &session.owner_id).await {
        Ok(facts) => render(
            StatusCode::OK,
            "memory.html",
            context! { csrf => &session.csrf, owner => &session.owner_id, facts => ser(&facts),
            max_facts => steward_core::memory::MAX_FACTS, max_chars => steward_core::memory::MAX_FACT_CHARS, current_page => "memory" },
        ),
        Err(e) => error_page(&session, &e),
    }
}

/// The remember form.
#[derive(Deserialize)]
pub struct FactForm {
    csrf: String,
    text: String,
}

/// `POST /memory` (form).
pub async fn remember(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Form(form): Form<FactForm>,
) -> Response {
    let act = async { crate::memory::remember(&state, &session.owner_id, &form.text).await.map(|_| "/memory".into()) };
    form_post(&state, &session, &form.csrf, act).await
}

/// `POST /memory/{id}/forget` (form).
pub async fn forget(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let act = async { crate::memory::forget(&state, &session.owner_id, &id).await.map(|()| "/memory".into()) };
    form_post(&state, &session, &form.csrf, act).await
}

/// `GET /tools`: the tools a run is offered, and the owner's generated tools with their versions.
pub async fn tools_page(State(state): State<AppState>, Extension(session): Extension<Session>) -> Response {
    let result = async {
        let workspace = runs::resolve_workspace(&state, None)?;
        let tools = state
            .launcher
            .tools(&workspace)
            .await
            .map_err(|e| ApiError::invalid(state.runtime.redactor.redact(&e.to_string())))?;
        let generated = super::generated::tool_rows(&state, &session.owner_id).await?;
        Ok::<_, ApiError>((workspace, tools, generated))
    }
    .await;
    match result {
        Ok((workspace, tools, generated)) => {
            let rows: Vec<_> = tools
                .iter()
                .map(|t| {
                    // The parameters' names (required ones marked), the schema itself on request.
                    let required: Vec<&str> = t.input_schema["required"]
                        .as_array()
                        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
                        .unwrap_or_default();
                    let names: Vec<String> = t.input_schema["properties"]
                        .as_object()
                        .map(|p| {
                            p.keys()
                                .map(|k| if required.contains(&k.as_str()) { format!("{k}*") } else { k.clone() })
                                .collect()
                        })
                        .unwrap_or_default();
                    context! { name => &t.name, description => &t.description, names => names,
                    parameters => serde_json::to_string_pretty(&t.input_schema).unwrap_or_default() }
                })
                .collect();
            render(
                StatusCode::OK,
                "tools.html",
                context! { csrf => &session.csrf, owner => &session.owner_id,
                workspace => workspace.display().to_string(), tools => rows, generated => ser(&generated),
                current_page => "tools" },
            )
        }
        Err(e) => error_page(&session, &e),
    }
}

/// `GET /grants`.
pub async fn grants_page(State(state): State<AppState>, Extension(session): Extension<Session>) -> Response {
    let grants = match state.runtime.store.grants(&session.owner_id).await {
        Ok(g) => g,
        Err(e) => return error_page(&session, &ApiError::storage(e)),
    };
    let now = state.now();
    let rows: Vec<_> = grants
        .iter()
        .map(|g| {
            let state = runs::grant_state(g, now);
            context! { id => &g.id, tool => &g.tool, scope => match g.scope { steward_store::GrantScope::Run => "run", steward_store::GrantScope::Workspace => "workspace" },
            expires_at => g.expires_at.to_rfc3339(), active => state == "active", state => state }
        })
        .collect();
    render(
        StatusCode::OK,
        "grants.html",
        context! { csrf => &session.csrf, owner => &session.owner_id, grants => rows, current_page => "grants" },
    )
}

/// `POST /grants/{id}/revoke` (form).
pub async fn revoke_grant(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Path(id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let act = async { runs::revoke_grant(&state, &session.owner_id, &id).await.map(|()| "/grants".into()) };
    form_post(&state, &session, &form.csrf, act).await
}
