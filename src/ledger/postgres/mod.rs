//! The PostgreSQL backend: a team's ledger in one database, shared by taskrail processes
//! on many machines, each role seeing the tasks of the roles it is a member of.
//!
//! Owns everything PostgreSQL: connecting (libpq's rules, see `pg_url.rs`; TLS by rustls
//! in `tls.rs`), the versioned schema with its roles and row-level security, `migrate`, and the
//! `Ledger` operations on one blocking connection served by a thread of its own (`thread.rs`,
//! as the SQLite backend serves its file). Nothing outside this folder names the driver.
//! Must not log task ids or passwords.

mod activity;
mod backend;
mod calls;
mod connect;
mod db;
#[cfg(test)]
mod feed_tests;
mod leases;
mod outbox;
mod read;
mod schema;
#[cfg(test)]
mod schema_tests;
mod sessions;
mod spool;
#[cfg(test)]
mod test_server;
#[cfg(test)]
pub(crate) mod testing;
mod thread;
mod tls;
mod write;

pub use schema::{Migrated, SCHEMA_VERSION, USERS_ROLE};

use std::sync::Arc;

use crate::ledger::{LedgerHandle, PgResolved, PgUrl};

/// Open the PostgreSQL ledger at `url`: reachable, and its schema this build's version.
pub fn open(url: &PgUrl) -> anyhow::Result<LedgerHandle> {
    let resolved = url.resolve_here().map_err(anyhow::Error::msg)?;
    open_schema(
        &resolved,
        schema::DEFAULT_SCHEMA,
        LocalFiles {
            session_ids: crate::paths::pg_session_ids(),
            spool: crate::paths::pg_spool(),
        },
    )
}

/// What this machine keeps of a shared ledger, outside the database.
struct LocalFiles {
    /// Legacy session ids (the database holds only their digests).
    session_ids: Option<std::path::PathBuf>,
    /// Writes made while the database could not be reached.
    spool: Option<std::path::PathBuf>,
}

/// The ledger in `schema` of the database `resolved` names (its schema checked).
fn open_schema(
    resolved: &PgResolved,
    schema_name: &str,
    local: LocalFiles,
) -> anyhow::Result<LedgerHandle> {
    let config = connect::config_of(resolved)?;
    let location = format!(
        "PostgreSQL database {} on {}:{} as {} (schema {schema_name})",
        resolved.dbname,
        resolved.hosts.join(","),
        resolved
            .ports
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(","),
        resolved.user,
    );
    let schema_name = schema_name.to_string();
    let pg = off_runtime(move || {
        let mut client = connect::connect(&config)?;
        schema::check(&mut client, &schema_name)?;
        db::Pg::new(
            client,
            config,
            &schema_name,
            location,
            local.session_ids,
            local.spool,
        )
    })?;
    Ok(Arc::new(thread::PgLedger::spawn(pg, "taskrail-pg-ledger")))
}

/// `taskrail ledger migrate`: create or upgrade the schema at `url` and the group role
/// `taskrail_users` (run as a role that may create objects).
pub fn migrate(url: &PgUrl) -> anyhow::Result<Migrated> {
    let config = connect::config(url)?;
    off_runtime(move || {
        let mut client = connect::connect(&config)?;
        schema::migrate(&mut client, schema::DEFAULT_SCHEMA, SCHEMA_VERSION)
    })
}

/// The contract tests' ledger: the test server, as its superuser, in a schema of its own
/// named after `path` (opening the same path twice shares the ledger, as two processes do).
#[cfg(test)]
pub fn open_for_test(path: &std::path::Path) -> anyhow::Result<LedgerHandle> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut h);
    let name = format!("c{}_{:x}", std::process::id(), h.finish());
    let server = testing::server();
    let path = path.to_path_buf();
    off_runtime(move || {
        let mut admin = server.admin();
        schema::migrate(&mut admin, &name, SCHEMA_VERSION)?;
        Ok(name)
    })
    .and_then(|name| {
        let resolved = server
            .url("postgres")
            .resolve_here()
            .map_err(anyhow::Error::msg)?;
        let local = LocalFiles {
            session_ids: Some(path.with_file_name("pg-sessions.json")),
            spool: Some(path.with_file_name("pg-spool.db")),
        };
        open_schema(&resolved, &name, local)
    })
}

/// Run `f` on a thread of its own and wait for it: the blocking client runs a runtime of
/// its own, which must not be started on one of the async runtime's threads.
fn off_runtime<T: Send + 'static>(
    f: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    std::thread::Builder::new()
        .name("taskrail-pg".into())
        .spawn(f)?
        .join()
        .map_err(|_| anyhow::anyhow!("the PostgreSQL connection thread panicked"))?
}
