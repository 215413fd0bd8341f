//! The Ledger page of `steward serve`: the owner's work requests with their approvals, and the
//! forms that file, approve and revoke them.

use super::*;

fn when(t: &steward_protocol::Timestamp) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// `GET /ledger`: the owner's work requests, a form to file one, and for each open request a
/// form to approve it (revision shown, head SHA, lifetime), for each live one a revoke button.
pub async fn ledger_page(State(state): State<AppState>, Extension(session): Extension<Session>) -> Response {
    let ledger = match ledger(&state) {
        Ok(l) => l,
        Err(e) => return error_page(&session, &e),
    };
    let records = match ledger.work_requests(&session.owner_id, LIST_LIMIT).await {
        Ok(r) => r,
        Err(e) => return error_page(&session, &ApiError::storage(e)),
    };
    let mut rows = Vec::with_capacity(records.len());
    for r in &records {
        let approval = match r.status {
            WorkStatus::Open | WorkStatus::Revoked => None,
            _ => match ledger.work_approvals(&r.id).await {
                Ok(list) => list.into_iter().last(),
                Err(e) => return error_page(&session, &ApiError::storage(e)),
            },
        };
        let authority = match &approval {
            Some(a) => match ledger.authority_of(&a.id).await {
                Ok(found) => found,
                Err(e) => return error_page(&session, &ApiError::storage(e)),
            },
            None => None,
        };
        let result = match &authority {
            Some(a) => match ledger.attempt_result(&a.attempt_id).await {
                Ok(found) => found,
                Err(e) => return error_page(&session, &ApiError::storage(e)),
            },
            None => None,
        };
        // The evidence was checked against the wire shape when it was reported; an unreadable
        // one shows no summary rather than failing the page.
        let evidence: Option<Evidence> = result.as_ref().and_then(|r| serde_json::from_str(&r.evidence).ok());
        rows.push(context! {
            id => &r.id, revision => r.revision, epoch => r.epoch, kind => &r.kind, repository => &r.repository,
            pr_number => r.pr_number, text => &r.text, status => r.status.as_str(), created_at => when(&r.created_at),
            open => r.status == WorkStatus::Open, revocable => !r.status.is_final(),
            head_sha => approval.as_ref().map(|a| a.head_sha.clone()),
            expires_at => approval.as_ref().map(|a| when(&a.expires_at)),
            hub_id => authority.as_ref().map(|a| a.hub_id.clone()),
            attempt_id => authority.as_ref().map(|a| a.attempt_id.clone()),
            outcome => result.as_ref().map(|r| r.outcome.clone()),
            summary => evidence.as_ref().and_then(|e| e.summary.clone()),
            tested_sha => evidence.as_ref().and_then(|e| e.tested_sha.clone()),
            run_id => evidence.as_ref().and_then(|e| e.run_id.clone()),
        });
    }
    render(
        StatusCode::OK,
        "ledger.html",
        context! { csrf => &session.csrf, owner => &session.owner_id, requests => rows,
        max_text => MAX_TEXT_CHARS, max_expires_minutes => MAX_EXPIRES_IN_S / 60, current_page => "ledger" },
    )
}

/// The form that files a request from the Ledger page.
#[derive(Deserialize)]
pub struct RequestForm {
    csrf: String,
    repository: String,
    pr_number: String,
    #[serde(default)]
    text: String,
}

/// `POST /ledger` (form): files a request for the owner.
pub async fn file_request_form(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    Form(form): Form<RequestForm>,
) -> Response {
    let act = async {
        let pr_number = form
            .pr_number
            .trim()
            .parse::<u64>()
            .map_err(|_| ApiError::invalid("the pull request number must be a whole number"))?;
        let new = NewWorkRequest {
            kind: WorkKind::PrSummary,
            repository: form.repository.clone(),
            pr_number,
            text: form.text.clone(),
        };
        file_request(ledger(&state)?, state.now(), &session.owner_id, &new).await?;
        Ok("/ledger".to_string())
    };
    form_post(&state, &session, &form.csrf, act).await
}

/// The approve form of an open request.
#[derive(Deserialize)]
pub struct ApproveForm {
    csrf: String,
    revision: String,
    head_sha: String,
    /// Minutes.
    expires_in_minutes: String,
}

/// `POST /ledger/{id}/approve` (form).
pub async fn approve_form(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    axum::extract::Path(id): axum::extract::Path<String>,
    Form(form): Form<ApproveForm>,
) -> Response {
    let act = async {
        let revision =
            form.revision.trim().parse::<u32>().map_err(|_| ApiError::invalid("the revision is not a number"))?;
        let minutes = form
            .expires_in_minutes
            .trim()
            .parse::<u64>()
            .map_err(|_| ApiError::invalid("the lifetime must be a whole number of minutes"))?;
        let body =
            ApproveWorkRequest { revision, head_sha: form.head_sha.clone(), expires_in_s: minutes.saturating_mul(60) };
        approve_request(ledger(&state)?, state.now(), &session.owner_id, &id, &body).await?;
        Ok("/ledger".to_string())
    };
    form_post(&state, &session, &form.csrf, act).await
}

/// A form carrying only the CSRF token.
#[derive(Deserialize)]
pub struct CsrfForm {
    csrf: String,
}

/// `POST /ledger/{id}/revoke` (form).
pub async fn revoke_form(
    State(state): State<AppState>,
    Extension(session): Extension<Session>,
    axum::extract::Path(id): axum::extract::Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let act = async {
        revoke_request(ledger(&state)?, state.now(), &session.owner_id, &id).await?;
        Ok("/ledger".to_string())
    };
    form_post(&state, &session, &form.csrf, act).await
}
