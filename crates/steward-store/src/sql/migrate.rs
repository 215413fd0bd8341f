//! The schema migrations, embedded in the binary and applied when a store opens.
//!
//! Each database has its own files (`migrations/sqlite/`, `migrations/postgres/`), named
//! `<version>_<description>.sql`. They are recorded in sqlx's `_sqlx_migrations` table with the
//! version, description and checksum that sqlx's own directory reader gives them, so databases
//! migrated by earlier builds (which read the same files at compile time) are recognised as up
//! to date; a test checks that the lists below match the directories.

use std::borrow::Cow;
use std::sync::LazyLock;

use sqlx::migrate::{Migration, MigrationType, Migrator};

/// `(file name, contents)` of each migration file of `migrations/<dir>/`.
macro_rules! embedded {
    ($dir:literal: $($file:literal),* $(,)?) => {
        &[$(($file, include_str!(concat!("../../migrations/", $dir, "/", $file)))),*]
    };
}

/// The SQLite migrations, in version order.
const SQLITE: &[(&str, &str)] = embedded!("sqlite":
    "0001_initial.sql",
    "0002_rollbacks_grants.sql",
    "0003_facts.sql",
    "0004_approval_decisions.sql",
    "0005_conversations.sql",
    "0006_mcp_tokens.sql",
    "0007_ledger.sql",
    "0008_hub_journal.sql",
    "0009_leases.sql",
    "0010_ledger_authority_token.sql",
    "0011_generated_tools.sql",
);

/// The PostgreSQL migrations, in version order.
const POSTGRES: &[(&str, &str)] = embedded!("postgres":
    "0001_initial.sql",
    "0002_rollbacks_grants.sql",
    "0003_facts.sql",
    "0004_approval_decisions.sql",
    "0005_conversations.sql",
    "0006_mcp_tokens.sql",
    "0007_ledger.sql",
    "0008_hub_journal.sql",
    "0009_leases.sql",
    "0010_ledger_authority_token.sql",
    "0011_generated_tools.sql",
);

/// A migration as sqlx's directory reader makes it from file `name` (`0001_initial.sql`:
/// version 1, description `initial`) with contents `sql`.
fn migration(name: &'static str, sql: &'static str) -> Migration {
    let (version, rest) = name.split_once('_').unwrap_or(("", name));
    // The names are the constants above: a bad one fails every test that opens a store.
    let version: i64 = version.parse().unwrap_or(-1);
    let kind = MigrationType::from_filename(rest);
    let description = rest.trim_end_matches(kind.suffix()).replace('_', " ");
    let no_tx = sql.starts_with("-- no-transaction");
    Migration::new(version, Cow::Owned(description), kind, sqlx::SqlSafeStr::into_sql_str(sql), no_tx)
}

fn migrator(files: &'static [(&'static str, &'static str)]) -> Migrator {
    Migrator::with_migrations(files.iter().map(|(name, sql)| migration(name, sql)).collect())
}

static SQLITE_MIGRATOR: LazyLock<Migrator> = LazyLock::new(|| migrator(SQLITE));
static POSTGRES_MIGRATOR: LazyLock<Migrator> = LazyLock::new(|| migrator(POSTGRES));

/// The SQLite schema's migrator.
pub fn sqlite() -> &'static Migrator {
    &SQLITE_MIGRATOR
}

/// The PostgreSQL schema's migrator.
pub fn postgres() -> &'static Migrator {
    &POSTGRES_MIGRATOR
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The embedded migrations are exactly what sqlx reads from the directory (as `migrate!`
    /// did): same files, versions, descriptions, kinds and checksums.
    fn same_as_directory(dir: &str, embedded: &Migrator) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").join(dir);
        let from_dir = sqlx::migrate::resolve_blocking(&path).unwrap();
        let ours: Vec<&Migration> = embedded.iter().collect();
        assert_eq!(ours.len(), from_dir.len(), "migrations/{dir} has a file that is not embedded (or one too few)");
        for (ours, (theirs, file)) in ours.iter().zip(&from_dir) {
            let file = file.display();
            assert_eq!(ours.version, theirs.version, "{file}");
            assert_eq!(ours.description, theirs.description, "{file}");
            assert_eq!(ours.migration_type, theirs.migration_type, "{file}");
            assert_eq!(ours.checksum, theirs.checksum, "{file}");
            assert_eq!(ours.no_tx, theirs.no_tx, "{file}");
            assert_eq!(ours.sql.as_str(), theirs.sql.as_str(), "{file}");
        }
    }

    #[test]
    fn embedded_migrations_match_the_directories() {
        same_as_directory("sqlite", sqlite());
        same_as_directory("postgres", postgres());
        assert_eq!(sqlite().iter().map(|m| m.version).collect::<Vec<_>>(), (1..=11).collect::<Vec<_>>());
    }
}
