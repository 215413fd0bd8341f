//! The error type of every store operation.

use steward_protocol::ErrorClass;

/// A persistence failure. Every message names the database (its path, or `:memory:`) so that
/// a user can tell which file is at fault; none contains stored content.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Creating the directory or the file, or setting its permissions, failed.
    #[error("cannot prepare the database file {path}: {source}")]
    Io {
        /// The database path.
        path: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Opening a connection failed.
    #[error("cannot open the database {path}: {source}")]
    Open {
        /// The database path.
        path: String,
        /// The driver error.
        #[source]
        source: sqlx::Error,
    },
    /// Applying the schema migrations failed.
    #[error("cannot migrate the database {path}: {source}")]
    Migrate {
        /// The database path.
        path: String,
        /// The migration error.
        #[source]
        source: sqlx::migrate::MigrateError,
    },
    /// A query or a commit failed.
    #[error("database error in {path}: {source}")]
    Database {
        /// The database path.
        path: String,
        /// The driver error.
        #[source]
        source: sqlx::Error,
    },
    /// A stored row could not be read back (a bad timestamp, unknown status, invalid JSON…).
    #[error("corrupt row in {path}: {what}")]
    Corrupt {
        /// The database path.
        path: String,
        /// What is wrong, without the row's content.
        what: String,
    },
    /// A value cannot be stored (a non-finite risk, an integer above `i64::MAX`).
    #[error("cannot store a value in {path}: {what}")]
    Invalid {
        /// The database path.
        path: String,
        /// What is wrong.
        what: String,
    },
    /// An update named a record that does not exist.
    #[error("not found in {path}: {what}")]
    NotFound {
        /// The database path.
        path: String,
        /// What was looked for (e.g. `run run_…`).
        what: String,
    },
    /// A batched write could not be committed (its transaction failed to start or commit);
    /// every write of that batch reports it.
    #[error("cannot write to {path}: {message}")]
    Write {
        /// The database path.
        path: String,
        /// The failure, as text (it is shared by several waiters).
        message: String,
    },
    /// An event queued earlier (by `append_event`, which does not wait for the commit) could
    /// not be written; reported by the next `flush`.
    #[error("an earlier queued write to {path} failed: {message}")]
    Deferred {
        /// The database path.
        path: String,
        /// The first failure's message.
        message: String,
    },
    /// The writer task has stopped (the runtime is shutting down or it panicked).
    #[error("the writer of {path} has stopped")]
    Closed {
        /// The database path.
        path: String,
    },
}

impl StoreError {
    /// The error class shared with the rest of Steward: always [`ErrorClass::Storage`].
    pub fn class(&self) -> ErrorClass {
        ErrorClass::Storage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_path_and_class_is_storage() {
        let err = StoreError::NotFound { path: "/tmp/x/steward.db".into(), what: "run run_1".into() };
        assert_eq!(err.class(), ErrorClass::Storage);
        assert_eq!(err.to_string(), "not found in /tmp/x/steward.db: run run_1");
        let closed = StoreError::Closed { path: ":memory:".into() };
        assert!(closed.to_string().contains(":memory:"));
    }
}
