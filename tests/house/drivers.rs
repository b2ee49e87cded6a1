//! Each database driver lives in its backend's folder: `rusqlite` only in
//! `src/ledger/sqlite/`, the PostgreSQL driver (`postgres`, `tokio_postgres`) only in
//! `src/ledger/postgres/`. Everything else reaches a ledger through the `Ledger` trait.

use std::path::Path;

use super::scan::{files, without_comments, write_file};

/// (driver, a pattern naming it as a crate path, the folder it may be named in).
fn drivers() -> Vec<(&'static str, regex::Regex, &'static str)> {
    vec![
        (
            "rusqlite",
            regex::Regex::new(r"(^|[^:\w])(::)?rusqlite\b").unwrap(),
            "src/ledger/sqlite/",
        ),
        (
            "postgres",
            regex::Regex::new(r"(^|[^:\w])(::)?(tokio_)?postgres::").unwrap(),
            "src/ledger/postgres/",
        ),
    ]
}

fn breaches(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for file in files(&root.join("src")) {
        let rel = format!("src/{}", file.rel);
        let text = without_comments(&file.text);
        for (name, pattern, home) in drivers() {
            if !rel.starts_with(home) && pattern.is_match(&text) {
                out.push(format!(
                    "{rel} names the driver {name}, which belongs in {home}"
                ));
            }
        }
    }
    out
}

#[test]
fn each_driver_stays_in_its_backend() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = breaches(root);
    assert!(found.is_empty(), "{found:#?}");
}

#[test]
fn the_check_catches_a_driver_outside_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| write_file(dir.path(), rel, text);
    write("src/ledger/sqlite/db.rs", "use rusqlite::Connection;\n");
    write("src/ledger/postgres/db.rs", "use ::postgres::Client;\n");
    write(
        "src/cli/fine.rs",
        "// rusqlite in a comment\nfn f() { crate::ledger::postgres::migrate(); }\n",
    );
    assert_eq!(breaches(dir.path()), Vec::<String>::new());
    write("src/engine/bad.rs", "fn f(c: &rusqlite::Connection) {}\n");
    write("src/state/bad.rs", "use tokio_postgres::Client;\n");
    let found = breaches(dir.path());
    assert_eq!(found.len(), 2, "{found:#?}");
}
