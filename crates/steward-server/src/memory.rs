//! Remembered facts (SPEC A5) for the API and pages: the rules live in
//! `steward_core::memory`; this adds ownership errors and tells every open tab of the owner
//! about each change.

use steward_core::{memory, memory::MemoryError};
use steward_store::FactRecord;

use crate::error::ApiError;
use crate::state::AppState;

fn api_error(e: MemoryError) -> ApiError {
    match e {
        MemoryError::NotFound => ApiError::not_found(e.to_string()),
        MemoryError::Storage(e) => ApiError::storage(e),
        other => ApiError::invalid(other.to_string()),
    }
}

/// The owner's facts, oldest first.
pub async fn list(state: &AppState, owner_id: &str) -> Result<Vec<FactRecord>, ApiError> {
    memory::list(state.runtime.store.as_ref(), owner_id).await.map_err(api_error)
}

/// Remembers `text` for the owner (redacted, at most 300 characters, at most 50 facts).
pub async fn remember(state: &AppState, owner_id: &str, text: &str) -> Result<FactRecord, ApiError> {
    let fact = memory::remember(
        state.runtime.store.as_ref(),
        state.runtime.clock.as_ref(),
        &state.runtime.redactor,
        owner_id,
        text,
    )
    .await
    .map_err(api_error)?;
    let _ = state.facts_changed.send(owner_id.to_string());
    Ok(fact)
}

/// Forgets the owner's fact `id`.
pub async fn forget(state: &AppState, owner_id: &str, id: &str) -> Result<(), ApiError> {
    memory::forget_id(state.runtime.store.as_ref(), owner_id, id).await.map_err(api_error)?;
    let _ = state.facts_changed.send(owner_id.to_string());
    Ok(())
}
