//! Files that hold one concept: every source file opens with a `//!` line saying what it owns,
//! and a production file stays under `MAX_LINES` unless it is listed here with the reason it
//! has not been split yet; a listed file that shrank must leave the list.

use std::path::Path;

use crate::scan;

/// The most lines a production file may have.
const MAX_LINES: usize = 600;

/// Production files allowed past `MAX_LINES` for now, and why.
const LONG_FILES: &[(&str, &str)] = &[
    (
        "engine/foreground.rs",
        "a foreground call's whole life (create, follow, input, result) for `call` and the proxy",
    ),
    (
        "ledger/contract/store.rs",
        "the contract suite's store cases, one per ledger operation",
    ),
    (
        "mcp/auth/discovery.rs",
        "OAuth metadata discovery; its endpoint checks fold into one helper when it splits",
    ),
    (
        "mcp/auth/authorizer/mod.rs",
        "the sign-in flow's state machine",
    ),
];

/// Each file problem of the tree under `src`, in words.
fn problems(src: &Path, long: &[(&str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    for file in scan::files(src) {
        if !file.text.starts_with("//!") {
            out.push(format!(
                "src/{}: opens without a `//!` line saying what it owns",
                file.rel
            ));
        }
        if file.is_test {
            continue;
        }
        let lines = file.text.lines().count();
        let listed = long.iter().any(|(f, _)| *f == file.rel);
        if lines > MAX_LINES && !listed {
            out.push(format!(
                "src/{}: {lines} lines (at most {MAX_LINES}): split it by concept, or list it in LONG_FILES with the reason",
                file.rel
            ));
        }
        if lines <= MAX_LINES && listed {
            out.push(format!(
                "src/{}: {lines} lines now: take it off LONG_FILES",
                file.rel
            ));
        }
    }
    for (f, _) in long {
        if !src.join(f).exists() {
            out.push(format!(
                "src/{f} is listed in LONG_FILES but does not exist"
            ));
        }
    }
    out
}

#[test]
fn every_file_says_what_it_owns_and_stays_short() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = problems(&src, LONG_FILES);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_file_check_sees_a_missing_line_a_long_file_and_a_stale_entry() {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| scan::write_file(dir.path(), rel, text);
    write("a.rs", "fn f() {}\n");
    write("b.rs", &format!("//! Long.\n{}", "fn g() {}\n".repeat(700)));
    write("c.rs", "//! Short.\n");
    write(
        "tests/d.rs",
        &format!("//! Long test.\n{}", "fn h() {}\n".repeat(700)),
    );
    let found = problems(dir.path(), &[("c.rs", "was long")]).join("\n");
    assert!(found.contains("src/a.rs: opens without"), "{found}");
    assert!(found.contains("src/b.rs: 701 lines"), "{found}");
    assert!(found.contains("src/c.rs: 1 lines now"), "{found}");
    assert!(!found.contains("d.rs"), "{found}");
}
