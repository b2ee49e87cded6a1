//! The integration tests' PostgreSQL: the same test server the unit tests start
//! (`src/ledger/postgres/test_server.rs`), and URLs to it.

#[path = "../../src/ledger/postgres/test_server.rs"]
mod test_server;

#[allow(unused_imports)] // the TLS server: only some test binaries use it
pub use test_server::{server, tls_server};

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
