//! The reducer stays pure: no production file of `src/state/` reads the clock, touches tokio,
//! the file system, the environment or threads. Time comes in as `now`; I/O goes out as an
//! `Effect`.

use std::path::Path;

use crate::scan;

/// What a pure reducer must not name, and why.
const IMPURE: &[(&str, &str)] = &[
    ("Instant::now", "reads the clock"),
    ("SystemTime::now", "reads the clock"),
    ("Utc::now", "reads the clock"),
    ("Local::now", "reads the clock"),
    ("tokio::", "uses the async runtime"),
    ("std::fs", "touches the file system"),
    ("std::env", "reads the environment"),
    ("std::thread", "uses threads"),
    ("std::process", "starts processes"),
    ("std::net", "uses the network"),
];

/// Each impurity in the production files of `folder` under `src`.
fn impurities(src: &Path, folder: &str) -> Vec<String> {
    let mut out = Vec::new();
    for file in scan::files(src) {
        if file.is_test || file.module.first().map(String::as_str) != Some(folder) {
            continue;
        }
        for (needle, why) in IMPURE {
            if file.code.contains(needle) {
                out.push(format!("src/{}: names `{needle}` ({why})", file.rel));
            }
        }
    }
    out
}

#[test]
fn the_reducer_is_pure() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = impurities(&src, "state");
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_purity_check_sees_a_clock_but_not_a_test() {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| scan::write_file(dir.path(), rel, text);
    write(
        "state/a.rs",
        "fn f() { let t = std::time::Instant::now(); }\n",
    );
    write(
        "state/b.rs",
        "// Utc::now in a comment\n#[cfg(test)]\nmod tests { fn g() { std::fs::read(\"x\"); } }\n",
    );
    write("state/tests/c.rs", "fn h() { tokio::spawn(async {}); }\n");
    let found = impurities(dir.path(), "state").join("\n");
    assert!(
        found.contains("src/state/a.rs: names `Instant::now`"),
        "{found}"
    );
    assert!(
        !found.contains("b.rs") && !found.contains("c.rs"),
        "{found}"
    );
}
