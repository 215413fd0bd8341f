//! The backends every storage test runs against: a SQLite file in a temporary directory, and a
//! fresh schema of a PostgreSQL database (`STEWARD_TEST_DATABASE_URL`, default
//! `postgres://postgres@127.0.0.1:5432/test`), dropped when the test ends.
//!
//! When PostgreSQL cannot be reached the PostgreSQL variants (named `…::postgres`) fail; a user
//! without PostgreSQL opts out with `STEWARD_TEST_SKIP=postgres` (see `steward_peers::needs`).
#![allow(dead_code)]

pub mod records;

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{ConnectOptions, Connection};
use steward_peers::Need;
use steward_store::{PgStore, SqliteStore, Store, StoreOptions, new_id, redact_database_url};

/// The PostgreSQL server the tests use unless `STEWARD_TEST_DATABASE_URL` names another.
pub const DEFAULT_TEST_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// Generates one test per backend: `NAME::sqlite` and `NAME::postgres`. The body sees the
/// backend as `db: Db`.
#[macro_export]
macro_rules! both {
    ($(#[$meta:meta])* async fn $name:ident($db:ident: Db) $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            $(#[$meta])*
            async fn sqlite() {
                let $db = Db::sqlite();
                $body
            }

            $(#[$meta])*
            async fn postgres() {
                let $db = Db::postgres().await;
                $body
            }
        }
    };
}

/// A test's database.
pub enum Db {
    /// `steward.db` in a temporary directory.
    Sqlite {
        /// Removed when the test ends.
        dir: tempfile::TempDir,
    },
    /// A schema of its own in the test database.
    Postgres {
        /// The server, database and user.
        connect: Box<PgConnectOptions>,
        /// `t_` and 16 random hex digits.
        schema: String,
    },
}

impl Db {
    /// A new SQLite database file (not created yet).
    pub fn sqlite() -> Db {
        Db::Sqlite { dir: tempfile::tempdir().unwrap() }
    }

    /// A new, empty schema in the test database. The test fails when PostgreSQL is unreachable
    /// or opted out of (`steward_peers::needs`).
    pub async fn postgres() -> Db {
        steward_peers::needs::require(Need::Postgres);
        let url = test_database_url();
        let connect = PgConnectOptions::from_str(&url)
            .unwrap_or_else(|e| panic!("STEWARD_TEST_DATABASE_URL {} is not usable: {e}", redact_database_url(&url)))
            .disable_statement_logging();
        let mut conn = match tokio::time::timeout(Duration::from_secs(5), PgConnection::connect_with(&connect)).await {
            Ok(Ok(conn)) => conn,
            outcome => {
                let why = match outcome {
                    Ok(Err(e)) => e.to_string(),
                    _ => "no answer within 5 s".to_string(),
                };
                let shown = redact_database_url(&url);
                steward_peers::needs::unavailable(Need::Postgres, format!("PostgreSQL at {shown} ({why})"));
            }
        };
        let schema = new_id("t_");
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}"))).execute(&mut conn).await.unwrap();
        conn.close().await.unwrap();
        Db::Postgres { connect: Box::new(connect), schema }
    }

    /// True for PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        matches!(self, Db::Postgres { .. })
    }

    /// The SQLite file.
    pub fn path(&self) -> PathBuf {
        match self {
            Db::Sqlite { dir } => dir.path().join("state").join("steward.db"),
            Db::Postgres { .. } => panic!("a PostgreSQL database has no path"),
        }
    }

    /// What error messages name the database by: the file name, or the URL without password.
    pub fn shown(&self) -> String {
        match self {
            Db::Sqlite { .. } => "steward.db".to_string(),
            Db::Postgres { connect, .. } => {
                format!("postgres://{}@{}:{}/", connect.get_username(), connect.get_host(), connect.get_port())
            }
        }
    }

    /// Connect options that put the test's schema first on the search path.
    pub fn pg_connect(&self) -> PgConnectOptions {
        match self {
            Db::Postgres { connect, schema } => (**connect).clone().options([("search_path", schema.as_str())]),
            Db::Sqlite { .. } => panic!("not a PostgreSQL database"),
        }
    }

    /// A store on this database with default options.
    pub async fn open(&self) -> Arc<dyn Store> {
        self.open_with(StoreOptions::default()).await
    }

    /// A store on this database.
    pub async fn open_with(&self, options: StoreOptions) -> Arc<dyn Store> {
        match self {
            Db::Sqlite { .. } => Arc::new(SqliteStore::open(&self.path(), options).await.unwrap()),
            Db::Postgres { .. } => Arc::new(self.open_pg("node-a", options).await),
        }
    }

    /// A PostgreSQL store writing as `node`.
    pub async fn open_pg(&self, node: &str, options: StoreOptions) -> PgStore {
        PgStore::open_with(self.pg_connect(), options, node).await.unwrap()
    }

    /// Runs `sql` (statements separated by `;`) directly on the database, as someone editing
    /// it behind the store's back would.
    pub async fn tamper(&self, sql: &str) {
        let statements = sql.split(';').map(str::trim).filter(|s| !s.is_empty());
        match self {
            Db::Sqlite { .. } => {
                let options = SqliteConnectOptions::new().filename(self.path());
                let mut conn = SqliteConnection::connect_with(&options).await.unwrap();
                for statement in statements {
                    sqlx::query(sqlx::AssertSqlSafe(statement.to_string())).execute(&mut conn).await.unwrap();
                }
                conn.close().await.unwrap();
            }
            Db::Postgres { .. } => {
                let mut conn = PgConnection::connect_with(&self.pg_connect()).await.unwrap();
                for statement in statements {
                    sqlx::query(sqlx::AssertSqlSafe(statement.to_string())).execute(&mut conn).await.unwrap();
                }
                conn.close().await.unwrap();
            }
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let Db::Postgres { connect, schema } = self else { return };
        let (connect, schema) = ((**connect).clone(), schema.clone());
        // Drop may run inside the test's runtime: use a thread with a runtime of its own.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            runtime.block_on(async {
                let mut conn = PgConnection::connect_with(&connect).await.ok()?;
                sqlx::query("SET lock_timeout = '10s'").execute(&mut conn).await.ok()?;
                sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA IF EXISTS {schema} CASCADE")))
                    .execute(&mut conn)
                    .await
                    .ok()?;
                conn.close().await.ok()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(()))) {
            eprintln!("notice: the test schema could not be dropped");
        }
    }
}

/// `STEWARD_TEST_DATABASE_URL`, else [`DEFAULT_TEST_DATABASE_URL`].
pub fn test_database_url() -> String {
    std::env::var("STEWARD_TEST_DATABASE_URL")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_TEST_DATABASE_URL.to_string())
}
