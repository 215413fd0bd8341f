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
    "0012_audit_seq_rowid.sql",
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

/// The statement that reads what [`is_current`] compares: `(version, checksum, success)` of
/// every row of sqlx's `_sqlx_migrations` table, in version order. Fails when the table does
/// not exist (a new database).
pub const APPLIED: &str = "SELECT version, checksum, success FROM _sqlx_migrations ORDER BY version";

/// True when `applied` (the rows [`APPLIED`] reads) records exactly `migrator`'s migrations,
/// in order, each applied successfully with the same checksum: the one case in which running
/// the migrator would change nothing and return `Ok`. A store opening a database it migrated
/// before checks this with one statement instead of the migrator's three (create the table if
/// missing, look for a failed migration, list the applied ones). Anything else (a migration
/// not applied yet, a failed one, one this build does not know, a changed file) is left to the
/// migrator, which applies it or reports the error.
pub fn is_current(migrator: &Migrator, applied: &[(i64, Vec<u8>, bool)]) -> bool {
    let expected = migrator.iter().filter(|m| !m.migration_type.is_down_migration());
    let recorded = applied.iter().map(|(version, checksum, success)| (*version, checksum.as_slice(), *success));
    expected.map(|m| (m.version, m.checksum.as_ref(), true)).eq(recorded)
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

    /// The rows a database migrated by this build holds.
    fn all_applied(migrator: &Migrator) -> Vec<(i64, Vec<u8>, bool)> {
        migrator.iter().map(|m| (m.version, m.checksum.to_vec(), true)).collect()
    }

    #[test]
    fn a_database_with_every_migration_applied_is_current() {
        for migrator in [sqlite(), postgres()] {
            assert!(is_current(migrator, &all_applied(migrator)));
        }
    }

    /// Every other state is left to the migrator: nothing applied, one missing, one failed,
    /// one changed, one this build does not know, the rows out of order.
    #[test]
    fn any_difference_leaves_the_database_to_the_migrator() {
        let migrator = sqlite();
        let all = all_applied(migrator);
        assert!(!is_current(migrator, &[]));
        assert!(!is_current(migrator, &all[..all.len() - 1]));
        let mut failed = all.clone();
        failed[3].2 = false;
        assert!(!is_current(migrator, &failed));
        let mut changed = all.clone();
        changed[0].1[0] ^= 1;
        assert!(!is_current(migrator, &changed));
        let mut newer = all.clone();
        newer.push((99, vec![0; 48], true));
        assert!(!is_current(migrator, &newer));
        let mut swapped = all.clone();
        swapped.swap(0, 1);
        assert!(!is_current(migrator, &swapped));
    }

    #[test]
    fn embedded_migrations_match_the_directories() {
        same_as_directory("sqlite", sqlite());
        same_as_directory("postgres", postgres());
        assert_eq!(sqlite().iter().map(|m| m.version).collect::<Vec<_>>(), (1..=12).collect::<Vec<_>>());
    }
}
