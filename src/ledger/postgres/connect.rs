//! Connecting to the team's database: a resolved address (`pg_url.rs`) becomes the
//! driver's configuration, without TLS (this build has none: a `sslmode` that needs it is
//! refused before anything is sent).
//!
//! Owns the connection's settings and the wording of "cannot reach the database". Must
//! not print a password.

use std::time::Duration;

use ::postgres::config::SslMode as DriverSslMode;
use ::postgres::{Client, Config, NoTls};
use anyhow::bail;

use crate::ledger::{PgResolved, PgUrl, SslMode};

/// How long to wait for the server when the URL does not say (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The driver's configuration for `url` completed from this process's environment.
pub fn config(url: &PgUrl) -> anyhow::Result<Config> {
    let resolved = url.resolve_here().map_err(anyhow::Error::msg)?;
    config_of(&resolved)
}

/// The driver's configuration for a resolved address.
pub fn config_of(r: &PgResolved) -> anyhow::Result<Config> {
    if r.sslmode.needs_tls() {
        bail!(
            "sslmode={} needs TLS, which this build does not have for PostgreSQL; use a \
             network you trust with sslmode=prefer or sslmode=disable (never sent in plaintext \
             when TLS is required)",
            r.sslmode.as_str()
        );
    }
    let mut config = Config::new();
    for host in &r.hosts {
        config.host(host);
    }
    for port in &r.ports {
        config.port(*port);
    }
    config.user(&r.user).dbname(&r.dbname);
    if let Some(password) = &r.password {
        config.password(password);
    }
    if let Some(options) = &r.options {
        config.options(options);
    }
    config.application_name(r.application_name.as_deref().unwrap_or("taskrail"));
    config.connect_timeout(
        r.connect_timeout
            .map_or(CONNECT_TIMEOUT, Duration::from_secs),
    );
    config.ssl_mode(match r.sslmode {
        SslMode::Disable => DriverSslMode::Disable,
        // Without TLS, "allow" and "prefer" both connect in plaintext.
        _ => DriverSslMode::Prefer,
    });
    Ok(config)
}

/// One connection (blocking client: it runs on a thread of its own, never on the async
/// runtime).
pub fn connect(config: &Config) -> anyhow::Result<Client> {
    config
        .connect(NoTls)
        .map_err(|e| anyhow::anyhow!("cannot reach the PostgreSQL ledger: {}", describe(&e)))
}

/// A driver error in one line, with the server's own message when it sent one.
pub fn describe(e: &::postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text.push_str(": ");
                text.push_str(&s.to_string());
                source = s.source();
            }
            text
        }
    }
}
