//! The team ledger over TLS, against a real PostgreSQL that speaks only TLS over TCP
//! (`ssl=on`, plaintext TCP rejected by `pg_hba.conf`, certificates made by `openssl`):
//! `require` connects encrypted (the server logs the connection as SSL), `verify-full` with
//! the right root certificate and host name connects, a wrong root or host name is refused
//! with exit 6 and says why, `verify-ca` checks the chain but not the name, and a missing
//! root certificate file is named; a password goes over TLS with SCRAM bound to the
//! channel. Against the plaintext server, `require` is refused before anything is sent.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::time::Duration;

use crate::support::postgres::{server, tls_psql, tls_server};
use crate::support::taskrail::{Run, Taskrail};

const LIMIT: Duration = Duration::from_secs(60);

/// A user with a HOME of their own (no `~/.postgresql/root.crt` unless a test puts one).
fn user() -> Taskrail {
    let tr = Taskrail::new();
    let home = tr.dir().display().to_string();
    tr.with_env("HOME", home)
}

/// `taskrail --db URL args…` for `tr`.
fn at(tr: &Taskrail, url: &str, args: &[&str]) -> Run {
    let mut all = vec!["--db", url];
    all.extend_from_slice(args);
    tr.run(&all, LIMIT)
}

/// A URL to the TLS server as the superuser at `host`, with `query`.
fn tls_url(host: &str, query: &str) -> String {
    format!(
        "postgres://postgres@{host}:{}/postgres?{query}",
        tls_server().port
    )
}

/// The schema exists (migrated over TLS with `require`, once per test binary).
fn migrated() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let run = at(
            &user(),
            &tls_url("127.0.0.1", "sslmode=require&application_name=tls-migrate"),
            &["ledger", "migrate"],
        );
        assert_eq!(run.code, Some(0), "migrate over TLS: {run:#?}");
    });
}

/// The server log's lines about connections of `application_name`.
fn logged_connections(app: &str) -> Vec<String> {
    let log = std::fs::read_to_string(tls_server().dir.join("server.log")).unwrap();
    log.lines()
        .filter(|l| l.contains("connection authorized") && l.contains(app))
        .map(str::to_string)
        .collect()
}

#[test]
fn require_connects_encrypted() {
    migrated();
    let app = format!("tls-require-{}", std::process::id());
    let run = at(
        &user(),
        &tls_url(
            "127.0.0.1",
            &format!("sslmode=require&application_name={app}"),
        ),
        &["ls"],
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    // The server rejects plaintext TCP, and logs this connection as encrypted.
    let lines = logged_connections(&app);
    assert!(!lines.is_empty(), "the server logged the connection");
    assert!(
        lines.iter().all(|l| l.contains("SSL enabled")),
        "encrypted: {lines:#?}"
    );
}

#[test]
fn prefer_uses_tls_when_the_server_offers_it() {
    migrated();
    let app = format!("tls-prefer-{}", std::process::id());
    let run = at(
        &user(),
        &tls_url(
            "127.0.0.1",
            &format!("sslmode=prefer&application_name={app}"),
        ),
        &["ls"],
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        logged_connections(&app)
            .iter()
            .all(|l| l.contains("SSL enabled"))
    );
}

#[test]
fn verify_full_connects_with_the_right_root_and_host_name() {
    migrated();
    let ca = tls_server().ca.display().to_string();
    let run = at(
        &user(),
        &tls_url(
            "localhost",
            &format!("sslmode=verify-full&sslrootcert={ca}"),
        ),
        &["ls"],
    );
    assert_eq!(run.code, Some(0), "{run:#?}");

    // The default root file, ~/.postgresql/root.crt, serves as well.
    let tr = user();
    std::fs::create_dir_all(tr.dir().join(".postgresql")).unwrap();
    std::fs::copy(&tls_server().ca, tr.dir().join(".postgresql/root.crt")).unwrap();
    let run = at(&tr, &tls_url("localhost", "sslmode=verify-full"), &["ls"]);
    assert_eq!(run.code, Some(0), "{run:#?}");
}

#[test]
fn verify_full_refuses_a_wrong_root_or_a_wrong_host_name() {
    migrated();
    let other = tls_server().other_ca.display().to_string();
    let run = at(
        &user(),
        &tls_url(
            "localhost",
            &format!("sslmode=verify-full&sslrootcert={other}"),
        ),
        &["ls"],
    );
    assert_eq!(run.code, Some(6), "{run:#?}");
    assert!(
        run.stderr.contains("cannot reach the PostgreSQL ledger")
            && run.stderr.contains("certificate")
            && run.stderr.contains("UnknownIssuer"),
        "says the certificate has an unknown issuer: {run:#?}"
    );
    assert!(!run.stdout.contains("no tasks"), "{run:#?}");

    // The certificate names `localhost`, not 127.0.0.1.
    let ca = tls_server().ca.display().to_string();
    let run = at(
        &user(),
        &tls_url(
            "127.0.0.1",
            &format!("sslmode=verify-full&sslrootcert={ca}"),
        ),
        &["ls"],
    );
    assert_eq!(run.code, Some(6), "{run:#?}");
    assert!(
        run.stderr
            .contains("certificate not valid for name \"127.0.0.1\""),
        "says the certificate is for another name: {run:#?}"
    );
}

#[test]
fn verify_ca_checks_the_chain_but_not_the_host_name() {
    migrated();
    let ca = tls_server().ca.display().to_string();
    let run = at(
        &user(),
        &tls_url("127.0.0.1", &format!("sslmode=verify-ca&sslrootcert={ca}")),
        &["ls"],
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    let other = tls_server().other_ca.display().to_string();
    let run = at(
        &user(),
        &tls_url(
            "127.0.0.1",
            &format!("sslmode=verify-ca&sslrootcert={other}"),
        ),
        &["ls"],
    );
    assert_eq!(run.code, Some(6), "{run:#?}");
    assert!(run.stderr.contains("UnknownIssuer"), "{run:#?}");
}

#[test]
fn require_with_a_root_file_present_checks_the_chain() {
    migrated();
    // libpq: `require` with a root certificate file behaves as `verify-ca`.
    let other = tls_server().other_ca.display().to_string();
    let run = at(
        &user(),
        &tls_url("127.0.0.1", &format!("sslmode=require&sslrootcert={other}")),
        &["ls"],
    );
    assert_eq!(run.code, Some(6), "{run:#?}");
    assert!(run.stderr.contains("UnknownIssuer"), "{run:#?}");
}

#[test]
fn verify_ca_without_the_root_file_names_it() {
    let tr = user();
    let default = tr.dir().join(".postgresql").join("root.crt");
    let run = at(&tr, &tls_url("localhost", "sslmode=verify-ca"), &["ls"]);
    assert_eq!(run.code, Some(6), "{run:#?}");
    assert!(
        run.stderr.contains(&default.display().to_string())
            && run.stderr.contains("does not exist"),
        "names ~/.postgresql/root.crt: {run:#?}"
    );
    let missing = tr.dir().join("no-such-ca.pem").display().to_string();
    let run = at(
        &tr,
        &tls_url(
            "localhost",
            &format!("sslmode=verify-full&sslrootcert={missing}"),
        ),
        &["ls"],
    );
    assert_eq!(run.code, Some(6), "{run:#?}");
    assert!(run.stderr.contains(&missing), "names the file: {run:#?}");
}

#[test]
fn require_against_a_server_without_tls_is_refused() {
    let url = format!(
        "postgres://postgres:hunter2@127.0.0.1:{}/postgres?sslmode=require",
        server().port
    );
    let run = at(&user(), &url, &["ls"]);
    assert_eq!(run.code, Some(6), "{run:#?}");
    assert!(
        run.stderr.contains("cannot reach the PostgreSQL ledger") && run.stderr.contains("TLS"),
        "{run:#?}"
    );
    assert!(!run.stderr.contains("hunter2"), "{run:#?}");
}

#[test]
fn allow_tries_plaintext_then_tls() {
    migrated();
    // The server rejects plaintext TCP: `allow` then connects with TLS.
    let app = format!("tls-allow-{}", std::process::id());
    let run = at(
        &user(),
        &tls_url(
            "127.0.0.1",
            &format!("sslmode=allow&application_name={app}"),
        ),
        &["ls"],
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    let lines = logged_connections(&app);
    assert!(
        !lines.is_empty() && lines.iter().all(|l| l.contains("SSL enabled")),
        "{lines:#?}"
    );
}

#[test]
fn a_password_goes_over_tls_with_scram_bound_to_the_channel() {
    migrated();
    tls_psql(
        "DO $$ BEGIN
             IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'tls_scram') THEN
                 CREATE ROLE tls_scram LOGIN PASSWORD 'scram-pw-7';
             END IF;
         END $$;
         GRANT taskrail_users TO tls_scram",
    );
    let url = |password: &str| {
        format!(
            "postgres://tls_scram:{password}@127.0.0.1:{}/postgres?sslmode=require&channel_binding=require",
            tls_server().port
        )
    };
    // `channel_binding=require` refuses SCRAM without -PLUS: this connects only if the
    // channel binding taskrail computes from the server's certificate is the server's own.
    let run = at(&user(), &url("scram-pw-7"), &["ls"]);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let run = at(&user(), &url("wrong-pw-7"), &["ls"]);
    assert_eq!(run.code, Some(6), "{run:#?}");
    assert!(
        run.stderr.contains("password authentication failed"),
        "{run:#?}"
    );
    assert!(!run.stderr.contains("wrong-pw-7"), "{run:#?}");
}
