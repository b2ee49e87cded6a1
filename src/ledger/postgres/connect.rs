//! Connecting to the team's database: a resolved address (`pg_url.rs`) becomes the
//! driver's configuration and the TLS to use with it, by libpq's `sslmode` rules:
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | — |
//! | `allow` | only if plaintext is refused | not checked |
//! | `prefer` (default) | if the server offers it, else plaintext | not checked |
//! | `require` | always | not checked; with a root certificate file present (`sslrootcert`, or `~/.postgresql/root.crt`): chained to it, as `verify-ca` |
//! | `verify-ca` | always | chained to `sslrootcert` (default `~/.postgresql/root.crt`; `system`: the system's store) |
//! | `verify-full` | always | the chain, and it names the host |
//!
//! SCRAM binds to the TLS channel when both sides can (`channel_binding=prefer`, the
//! default; `require` refuses a connection without it, `disable` never binds).
//!
//! When TLS is required nothing (no password either) is sent before the handshake has
//! succeeded: a server without TLS, or a certificate that fails its check, ends the attempt.
//! A missing root certificate file for `verify-*` is an error naming it, before connecting.
//!
//! Owns the connection's settings and the wording of "cannot reach the database". Must
//! not print a password.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ::postgres::config::{ChannelBinding as DriverChannelBinding, SslMode as DriverSslMode};
use ::postgres::{Client, Config, NoTls};

use super::tls::{self, Check, Roots, Tls};
use crate::ledger::pg_url::ChannelBinding;
use crate::ledger::{PgResolved, PgUrl, SslMode};

/// How long to wait for the server when the URL does not say (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The TLS a configuration is connected with.
#[derive(Debug, Clone)]
enum Policy {
    Plain,
    /// Plaintext first, TLS if the server refuses it (`allow`).
    PlainThenTls(Tls),
    /// TLS as the configuration's `ssl_mode` says (prefer or require).
    Tls(Tls),
}

/// Where to connect and how: the driver's configuration and the TLS `sslmode` asks for
/// (kept together, so a connection made again later uses the same TLS).
#[derive(Debug, Clone)]
pub struct Target {
    config: Config,
    policy: Policy,
}

/// The target `url` names, completed from this process's environment.
pub fn config(url: &PgUrl) -> anyhow::Result<Target> {
    let resolved = url.resolve_here().map_err(anyhow::Error::msg)?;
    config_of(&resolved)
}

/// The TLS `r` asks for (libpq's rules, see the table above); `home` finds the default
/// root certificate file.
fn policy_of(r: &PgResolved, home: Option<&Path>) -> anyhow::Result<Policy> {
    let mode = r.sslmode.as_str();
    let given = r.sslrootcert.as_deref().filter(|s| !s.is_empty());
    let roots = match given {
        Some("system") => Some(Roots::System),
        Some(file) => Some(Roots::File(PathBuf::from(file))),
        None => tls::default_root_file(home).map(Roots::File),
    };
    let check = match r.sslmode {
        SslMode::Disable => return Ok(Policy::Plain),
        SslMode::Allow | SslMode::Prefer => Check::Nothing,
        SslMode::Require => match &roots {
            Some(Roots::File(f)) if f.is_file() => Check::Chain,
            Some(Roots::System) => Check::Chain,
            _ => Check::Nothing,
        },
        SslMode::VerifyCa => Check::Chain,
        SslMode::VerifyFull => Check::ChainAndHost,
    };
    let roots = match roots {
        Some(roots) => roots,
        None if check == Check::Nothing => Roots::System,
        None => anyhow::bail!(
            "sslmode={mode} needs root certificates: give sslrootcert=FILE (there is no \
             home directory for ~/.postgresql/root.crt)"
        ),
    };
    let tls = Tls::new(tls::client_config(check, &roots, mode)?, check);
    Ok(match r.sslmode {
        SslMode::Allow => Policy::PlainThenTls(tls),
        _ => Policy::Tls(tls),
    })
}

/// The target of a resolved address: the driver's configuration and its TLS.
pub fn config_of(r: &PgResolved) -> anyhow::Result<Target> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let policy = policy_of(r, home.as_deref())?;
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
    config.channel_binding(match r.channel_binding {
        ChannelBinding::Disable => DriverChannelBinding::Disable,
        ChannelBinding::Prefer => DriverChannelBinding::Prefer,
        ChannelBinding::Require => DriverChannelBinding::Require,
    });
    config.ssl_mode(match r.sslmode {
        SslMode::Disable | SslMode::Allow => DriverSslMode::Disable,
        SslMode::Prefer => DriverSslMode::Prefer,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => DriverSslMode::Require,
    });
    Ok(Target { config, policy })
}

/// One connection (blocking client: it runs on a thread of its own, never on the async
/// runtime), with the target's TLS.
pub fn connect(target: &Target) -> anyhow::Result<Client> {
    let config = &target.config;
    let result = match target.policy.clone() {
        Policy::Plain => config.connect(NoTls),
        Policy::Tls(tls) => config.connect(tls),
        Policy::PlainThenTls(tls) => config.connect(NoTls).or_else(|plain| {
            if plain.as_db_error().is_none() {
                return Err(plain);
            }
            let mut with_tls = config.clone();
            with_tls.ssl_mode(DriverSslMode::Require);
            with_tls.connect(tls)
        }),
    };
    result.map_err(|e| anyhow::anyhow!("cannot reach the PostgreSQL ledger: {}", describe(&e)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn resolved(url: &str) -> PgResolved {
        PgUrl::parse(url).unwrap().resolve(&|_| None, None).unwrap()
    }

    /// The check a URL's policy makes: `None` for plaintext only, `Some((check, allow))`.
    fn check_of(url: &str, home: Option<&Path>) -> anyhow::Result<Option<(Check, bool)>> {
        Ok(match policy_of(&resolved(url), home)? {
            Policy::Plain => None,
            Policy::PlainThenTls(t) => Some((t.check(), true)),
            Policy::Tls(t) => Some((t.check(), false)),
        })
    }

    /// A CA certificate made by `openssl` at `path`.
    fn make_ca(path: &Path) {
        let out = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
            .args(["-subj", "/CN=unit test CA", "-keyout"])
            .arg(path.with_extension("key"))
            .arg("-out")
            .arg(path)
            .output()
            .expect("openssl");
        assert!(out.status.success(), "{out:?}");
    }

    #[test]
    fn each_sslmode_checks_what_libpq_checks() {
        let home = tempfile::tempdir().unwrap();
        let h = Some(home.path());
        let at = |q: &str| format!("postgres://u@db.example/x?{q}");
        assert_eq!(check_of(&at("sslmode=disable"), h).unwrap(), None);
        assert_eq!(
            check_of(&at("sslmode=allow"), h).unwrap(),
            Some((Check::Nothing, true))
        );
        assert_eq!(
            check_of(&at("sslmode=prefer"), h).unwrap(),
            Some((Check::Nothing, false))
        );
        // `require` without a root certificate file encrypts only, even when sslrootcert
        // names a file that is not there (libpq's rule).
        assert_eq!(
            check_of(&at("sslmode=require"), h).unwrap(),
            Some((Check::Nothing, false))
        );
        assert_eq!(
            check_of(&at("sslmode=require&sslrootcert=/nonexistent.pem"), h).unwrap(),
            Some((Check::Nothing, false))
        );
        assert_eq!(
            check_of(&at("sslmode=require"), None).unwrap(),
            Some((Check::Nothing, false))
        );

        // verify-* without the file: an error naming it.
        let default = home.path().join(".postgresql/root.crt");
        for mode in ["verify-ca", "verify-full"] {
            let e = check_of(&at(&format!("sslmode={mode}")), h)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&default.display().to_string()) && e.contains("does not exist"),
                "{e}"
            );
        }
        let e = check_of(&at("sslmode=verify-ca"), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("sslrootcert=FILE"), "{e}");

        // With ~/.postgresql/root.crt: require checks the chain as verify-ca does.
        std::fs::create_dir_all(default.parent().unwrap()).unwrap();
        make_ca(&default);
        assert_eq!(
            check_of(&at("sslmode=require"), h).unwrap(),
            Some((Check::Chain, false))
        );
        assert_eq!(
            check_of(&at("sslmode=verify-ca"), h).unwrap(),
            Some((Check::Chain, false))
        );
        assert_eq!(
            check_of(&at("sslmode=verify-full"), h).unwrap(),
            Some((Check::ChainAndHost, false))
        );
        let other = home.path().join("other.pem");
        make_ca(&other);
        assert_eq!(
            check_of(
                &at(&format!(
                    "sslmode=verify-full&sslrootcert={}",
                    other.display()
                )),
                None
            )
            .unwrap(),
            Some((Check::ChainAndHost, false))
        );
    }

    #[test]
    fn a_root_file_without_a_certificate_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        let url = format!(
            "postgres://u@db.example/x?sslmode=verify-ca&sslrootcert={}",
            junk.display()
        );
        let e = check_of(&url, None).unwrap_err().to_string();
        assert!(
            e.contains(&junk.display().to_string()) && e.contains("no usable certificate"),
            "{e}"
        );
    }
}
