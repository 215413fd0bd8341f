//! Tools added to a run's registry while it runs (generated tools, SPEC G): a fixed number of
//! write-once slots shared by every clone of the registry, so a tool registered during round
//! N is offered from round N+1 on, while references handed out earlier stay valid.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::Tool;

/// Most tools one run's registry can take while it runs.
pub const MAX_ADDED_TOOLS: usize = 32;

/// The slots.
pub(super) struct AddedTools {
    slots: Box<[OnceLock<Arc<dyn Tool>>]>,
    next: Mutex<usize>,
}

/// Why a tool could not be added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddToolError {
    /// The registry was not made to take tools while it runs.
    #[error("this run's tools cannot change")]
    Fixed,
    /// [`MAX_ADDED_TOOLS`] were added already.
    #[error("this run already added {MAX_ADDED_TOOLS} tools")]
    Full,
    /// A configured or built-in tool has that name.
    #[error("a tool named `{0}` already exists")]
    Taken(String),
}

impl AddedTools {
    pub(super) fn new() -> Self {
        AddedTools { slots: (0..MAX_ADDED_TOOLS).map(|_| OnceLock::new()).collect(), next: Mutex::new(0) }
    }

    /// The newest tool added under `name`.
    pub(super) fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.slots.iter().rev().filter_map(OnceLock::get).find(|t| t.spec().name == name)
    }

    /// The newest tool of each name, in name order.
    pub(super) fn current(&self) -> Vec<&Arc<dyn Tool>> {
        let mut seen = std::collections::BTreeMap::new();
        for tool in self.slots.iter().filter_map(OnceLock::get) {
            seen.insert(tool.spec().name.clone(), tool);
        }
        seen.into_values().collect()
    }

    pub(super) fn add(&self, tool: Arc<dyn Tool>) -> Result<(), AddToolError> {
        let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = self.slots.get(*next).ok_or(AddToolError::Full)?;
        slot.set(tool).map_err(|_| AddToolError::Full)?;
        *next += 1;
        Ok(())
    }
}
