//! The unit tests' PostgreSQL: the shared test server (`test_server.rs`), URLs and
//! connections to it, and schema names of each test's own.

pub use super::test_server::{TestServer, server};
use crate::ledger::PgUrl;

impl TestServer {
    /// A URL as `user` to the database `postgres`.
    pub fn url(&self, user: &str) -> PgUrl {
        PgUrl::parse(&format!(
            "postgres://{user}@127.0.0.1:{}/postgres?sslmode=disable",
            self.port
        ))
        .expect("a test URL")
    }

    /// A connection as the superuser.
    pub fn admin(&self) -> ::postgres::Client {
        let config = super::connect::config(&self.url("postgres")).expect("a config");
        super::connect::connect(&config).expect("connecting to the test server")
    }
}

/// A schema name of a test's own.
pub fn fresh_schema() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    format!(
        "t{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}
