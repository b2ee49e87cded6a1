//! Where the ledger is: `--db` / `TASKRAIL_DB` take a SQLite path or a `postgres://` URL;
//! any other URL is refused as a usage error and creates nothing; a URL's password is never
//! printed; a `sslmode` that checks certificates without a root certificate file names it.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support::taskrail::Taskrail;

/// Runs `taskrail --db <db> ls` in the user's directory; (exit code, stderr).
fn ls_at(tr: &Taskrail, db: &str) -> (Option<i32>, String) {
    let out = tr
        .command(&["--db", db, "ls"])
        .current_dir(tr.dir())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn entries(tr: &Taskrail) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(tr.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "taskrail.log")
        .collect();
    names.sort();
    names
}

#[test]
fn another_url_is_refused_and_creates_nothing() {
    let tr = Taskrail::new();
    for db in ["mysql://u:hunter2@127.0.0.1/x", "sqlite://ledger.db"] {
        let (code, stderr) = ls_at(&tr, db);
        assert_eq!(code, Some(2), "{db}: {stderr}");
        assert!(
            stderr.contains("cannot use") && stderr.contains("postgres://"),
            "{stderr}"
        );
        assert!(!stderr.contains("hunter2"), "{stderr}");
    }
    assert_eq!(
        entries(&tr),
        Vec::<String>::new(),
        "nothing created in the directory"
    );
}

#[test]
fn a_postgres_url_is_never_taken_for_a_file_and_never_shows_its_password() {
    let tr = Taskrail::new();
    // Port 1 on loopback: nothing listens there.
    let (code, stderr) = ls_at(&tr, "postgres://u:hunter2@127.0.0.1:1/x?connect_timeout=2");
    assert_eq!(code, Some(6), "{stderr}");
    assert!(
        stderr.contains("postgresql://u:***@127.0.0.1:1/x"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("hunter2") && !stderr.contains("no tasks"),
        "{stderr}"
    );
    assert_eq!(
        entries(&tr),
        Vec::<String>::new(),
        "no postgres: directory, no SQLite file"
    );
}

#[test]
fn a_sslmode_that_needs_tls_fails_before_connecting_without_its_root_certificate() {
    // No ~/.postgresql/root.crt in this HOME: verify-* name the file; require has nothing
    // to check against and fails to connect (nothing listens), never in plaintext.
    let tr = Taskrail::new();
    let home = tr.dir().display().to_string();
    let tr = tr.with_env("HOME", home);
    for mode in ["require", "verify-ca", "verify-full"] {
        let (code, stderr) = ls_at(&tr, &format!("postgresql://u@127.0.0.1:1/x?sslmode={mode}"));
        assert_eq!(code, Some(6), "{stderr}");
        if mode == "require" {
            assert!(stderr.contains("cannot reach"), "{stderr}");
        } else {
            assert!(
                stderr.contains("root.crt") && stderr.contains("does not exist"),
                "{stderr}"
            );
        }
    }
}

/// `taskrail ledger migrate` on a real server creates the schema and the group role; a
/// login role given `taskrail_users` gets past the schema check; before the migration a
/// client says what to run and creates nothing.
#[test]
fn migrate_creates_the_schema_a_client_then_accepts() {
    use crate::support::postgres::{psql, url};
    let tr = Taskrail::new();
    let db = format!("{}&application_name=cli-test", url("postgres"));
    let role = format!("cli_{}", std::process::id());
    // Each test binary has its own server, but be safe if the schema exists already.
    psql("DROP SCHEMA IF EXISTS taskrail CASCADE");
    let (code, stderr) = ls_at(&tr, &db);
    assert_eq!(code, Some(6), "{stderr}");
    assert!(
        stderr.contains("missing") && stderr.contains("ledger migrate"),
        "{stderr}"
    );

    let out = tr
        .command(&["--db", &db, "ledger", "migrate"])
        .current_dir(tr.dir())
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("schema version") && said.contains("taskrail_users"),
        "{said}"
    );

    psql(&format!(
        "CREATE ROLE {role} LOGIN; GRANT taskrail_users TO {role}"
    ));
    let (code, stderr) = ls_at(&tr, &url(&role));
    // Past the schema check: the member role uses the ledger.
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        entries(&tr),
        Vec::<String>::new(),
        "no file was made for the URL"
    );
}
