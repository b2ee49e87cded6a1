//! The PostgreSQL backend: a team's ledger in one database, shared by taskrail processes
//! on many machines, each role seeing the tasks of the roles it is a member of.
//!
//! Owns everything PostgreSQL: connecting (libpq's rules, see `pg_url.rs`; no TLS in this
//! build), the versioned schema with its roles and row-level security, and `migrate`.
//! Nothing outside this folder names the driver. Must not log task ids or passwords.
//!
//! Not in this build yet: the `Ledger` operations themselves. Opening a PostgreSQL ledger
//! connects and checks the schema (so an unreachable server or a schema to migrate is said
//! plainly), then says the operations are not available; nothing is written.

mod connect;
mod schema;
#[cfg(test)]
mod schema_tests;
#[cfg(test)]
mod test_server;
#[cfg(test)]
pub(crate) mod testing;

pub use schema::{Migrated, SCHEMA_VERSION, USERS_ROLE};

use anyhow::bail;

use crate::ledger::{LedgerHandle, PgUrl};

/// Open the PostgreSQL ledger at `url`: reachable, and its schema this build's version.
pub fn open(url: &PgUrl) -> anyhow::Result<LedgerHandle> {
    let config = connect::config(url)?;
    off_runtime(move || {
        let mut client = connect::connect(&config)?;
        schema::check(&mut client, schema::DEFAULT_SCHEMA)
    })?;
    bail!(
        "the schema is ready, but this build of taskrail cannot yet read or write tasks on \
         PostgreSQL; use a SQLite file (--db PATH) for now"
    )
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
