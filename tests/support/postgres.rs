//! The integration tests' PostgreSQL: the same test server the unit tests start
//! (`src/ledger/postgres/test_server.rs`), and URLs to it.

#[path = "../../src/ledger/postgres/test_server.rs"]
mod test_server;

#[allow(unused_imports)] // the TLS server: only some test binaries use it
pub use test_server::{server, tls_server};

use std::time::Duration;

use super::relay::Relay;
use super::taskrail::Taskrail;

/// A `postgres://` URL to the test server as `user` (no password: loopback is trusted).
pub fn url(user: &str) -> String {
    format!(
        "postgres://{user}@127.0.0.1:{}/postgres?sslmode=disable",
        server().port
    )
}

/// Run SQL as the superuser with `psql`.
pub fn psql(sql: &str) {
    let bin = std::env::var_os("TASKRAIL_PG_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/usr/lib/postgresql/15/bin".into());
    let out = std::process::Command::new(bin.join("psql"))
        .args([
            "-X",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            "127.0.0.1",
            "-U",
            "postgres",
            "-d",
            "postgres",
        ])
        .args(["-p", &server().port.to_string(), "-c", sql])
        .output()
        .expect("running psql");
    assert!(
        out.status.success(),
        "psql: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The rows of a query as the superuser on database `db`, one per line, unaligned.
pub fn psql_rows(sql: &str, db: &str) -> String {
    let bin = std::env::var_os("TASKRAIL_PG_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/usr/lib/postgresql/15/bin".into());
    let out = std::process::Command::new(bin.join("psql"))
        .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1"])
        .args([
            "-U",
            "postgres",
            "-d",
            db,
            "-p",
            &server().port.to_string(),
            "-c",
            sql,
        ])
        .output()
        .expect("running psql");
    assert!(
        out.status.success(),
        "psql: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A user whose HOME is their own, on the test server's database `db` as `role`.
pub fn user(db: &str, role: &str) -> Taskrail {
    let tr = Taskrail::new();
    let home = tr.dir().display().to_string();
    let url = format!(
        "postgres://{role}@127.0.0.1:{}/{db}?sslmode=disable",
        server().port
    );
    tr.with_env("HOME", home).with_env("TASKRAIL_DB", url)
}

/// A fresh database with the ledger's schema, for this test alone.
pub fn team_database(name: &str) -> String {
    let db = format!("{name}_{}", std::process::id());
    psql(&format!("CREATE DATABASE {db}"));
    let owner = Taskrail::new().with_env(
        "TASKRAIL_DB",
        format!(
            "postgres://postgres@127.0.0.1:{}/{db}?sslmode=disable",
            server().port
        ),
    );
    let run = owner.run(&["ledger", "migrate"], Duration::from_secs(60));
    assert_eq!(run.code, Some(0), "{run:#?}");
    db
}

/// A relay in front of the test server, and its port.
pub fn relay() -> (Relay, u16) {
    let relay = Relay::start(&format!("http://127.0.0.1:{}/", server().port));
    let port = relay
        .url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    (relay, port)
}

/// A user with a HOME of its own whose ledger is `db` reached through the relay at `port`.
pub fn user_behind(port: u16, db: &str) -> Taskrail {
    let tr = Taskrail::new();
    let home = tr.dir().display().to_string();
    tr.with_env("HOME", home).with_env(
        "TASKRAIL_DB",
        format!("postgres://postgres@127.0.0.1:{port}/{db}?sslmode=disable"),
    )
}

/// The task's status in the database itself (empty when it has no row).
pub fn stored_status(db: &str, id: &str) -> String {
    psql_rows(
        &format!("SELECT status FROM taskrail.tasks WHERE task_id = '{id}'"),
        db,
    )
    .trim()
    .to_string()
}

/// Run SQL as the superuser on the TLS server, through its Unix socket.
pub fn tls_psql(sql: &str) {
    let bin = std::env::var_os("TASKRAIL_PG_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/usr/lib/postgresql/15/bin".into());
    let server = tls_server();
    let out = std::process::Command::new(bin.join("psql"))
        .args([
            "-X",
            "-v",
            "ON_ERROR_STOP=1",
            "-U",
            "postgres",
            "-d",
            "postgres",
        ])
        .arg("-h")
        .arg(&server.dir)
        .args(["-p", &server.port.to_string(), "-c", sql])
        .output()
        .expect("running psql");
    assert!(
        out.status.success(),
        "psql: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
