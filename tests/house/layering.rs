//! The walls between layers defend themselves: every top-level module of `src/` may import
//! only the modules below it (DESIGN.md), the protocol, engine and ledger layers never touch
//! ratatui or crossterm, the config never imports the views, and no two modules import
//! each other (directly or round a cycle). A new top-level module must be placed here.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Which crate modules each top-level module may import, and whether it may use the
/// terminal crates.
const LAYERS: &[(&str, &[&str], bool)] = &[
    ("sanitize", &[], false),
    ("paths", &[], false),
    ("ids", &["sanitize"], false),
    ("mcp", &["ids", "sanitize", "paths"], false),
    ("ledger", &["ids", "sanitize", "mcp"], false),
    ("telemetry", &["ids", "sanitize", "mcp"], false),
    (
        "engine",
        &["ids", "sanitize", "mcp", "ledger", "telemetry"],
        false,
    ),
    ("state", &["ids", "sanitize", "mcp", "engine"], false),
    (
        "config",
        &["ids", "sanitize", "paths", "mcp", "state"],
        false,
    ),
    ("ui", &["ids", "sanitize", "state", "config"], true),
    ("launch", &[], false),
    (
        "app",
        &[
            "ids", "sanitize", "state", "ui", "config", "engine", "launch",
        ],
        true,
    ),
    (
        "prompt",
        &["ids", "sanitize", "mcp", "engine", "state", "ui", "app"],
        true,
    ),
    (
        "proxy",
        &["ids", "sanitize", "paths", "mcp", "engine", "ledger"],
        false,
    ),
    ("demo", &[], false),
    (
        "bench",
        &[
            "ids", "sanitize", "paths", "mcp", "ledger", "engine", "state", "config", "ui", "app",
            "demo",
        ],
        true,
    ),
    (
        "cli",
        &[
            "ids",
            "sanitize",
            "paths",
            "mcp",
            "ledger",
            "engine",
            "state",
            "config",
            "ui",
            "app",
            "demo",
            "bench",
            "proxy",
            "prompt",
            "telemetry",
        ],
        false,
    ),
];

/// Crate-level modules every layer may name (the crate root's re-exports and macros).
const TERMINAL_CRATES: &[&str] = &["ratatui::", "crossterm::"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a file without its comments (doc comments name modules freely).
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `crate::X` references in `text`.
fn crate_refs(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let boundary = i == 0 || {
            let b = rest.as_bytes()[i - 1];
            !(b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
        };
        if boundary && !name.is_empty() {
            out.insert(name);
        }
        rest = after;
    }
    out
}

/// Top-level module of a file under `src/` (`src/mcp/http.rs` → `mcp`, `src/app.rs` → `app`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_string())
}

/// Every layering problem of the tree under `src`, in words.
fn violations(src: &Path) -> Vec<String> {
    let layers: BTreeMap<&str, (&[&str], bool)> = LAYERS
        .iter()
        .map(|(m, deps, tui)| (*m, (*deps, *tui)))
        .collect();
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut problems = Vec::new();
    for file in files {
        let Some(module) = module_of(src, &file) else {
            continue;
        };
        let text = code(&std::fs::read_to_string(&file).unwrap_or_default());
        let shown = file
            .strip_prefix(src)
            .unwrap_or(&file)
            .display()
            .to_string();
        let Some((allowed, tui)) = layers.get(module.as_str()) else {
            problems.push(format!(
                "src/{shown}: module `{module}` has no place in the layering table"
            ));
            continue;
        };
        for dep in crate_refs(&text) {
            if dep == module || !layers.contains_key(dep.as_str()) {
                continue;
            }
            graph.entry(module.clone()).or_default().insert(dep.clone());
            if !allowed.contains(&dep.as_str()) {
                problems.push(format!(
                    "src/{shown}: `{module}` must not import `crate::{dep}`"
                ));
            }
        }
        if !tui {
            for krate in TERMINAL_CRATES {
                if text.contains(krate) {
                    problems.push(format!(
                        "src/{shown}: `{module}` must not use `{}`",
                        krate.trim_end_matches(':')
                    ));
                }
            }
        }
    }
    problems.extend(cycles(&graph));
    problems
}

/// Import cycles between modules, each reported once.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut BTreeSet<String>,
    ) {
        if let Some(i) = path.iter().position(|p| p == node) {
            let mut cycle: Vec<String> = path[i..].to_vec();
            cycle.push(node.to_string());
            found.insert(cycle.join(" → "));
            return;
        }
        if done.contains(node) {
            return;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, path, done, found);
        }
        path.pop();
        done.insert(node.to_string());
    }
    let mut found = BTreeSet::new();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
        .into_iter()
        .map(|c| format!("import cycle: {c}"))
        .collect()
}

#[test]
fn every_module_imports_only_downward() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = violations(&src);
    assert!(problems.is_empty(), "layering:\n{}", problems.join("\n"));
}

#[test]
fn the_check_catches_each_kind_of_breach() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let p = src.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "mcp/x.rs",
        "use crate::ids::TaskId;\nuse ratatui::style::Style;\n",
    );
    write(
        "engine/y.rs",
        "// crate::ui in a comment is fine\nfn f() { crate::state::x() }\n",
    );
    write("config/z.rs", "use crate::ui::Theme;\n");
    write("ui/w.rs", "use crate::config::theme;\n");
    write("ledger/v.rs", "use crate::mcp::Task;\n");
    write("newthing.rs", "fn f() {}\n");
    let problems = violations(src).join("\n");
    for expected in [
        "`mcp` must not use `ratatui`",
        "`engine` must not import `crate::state`",
        "`config` must not import `crate::ui`",
        "import cycle: config → ui → config",
        "module `newthing` has no place",
    ] {
        assert!(
            problems.contains(expected),
            "missing {expected:?} in:\n{problems}"
        );
    }
    assert!(!problems.contains("crate::ids"), "{problems}");
    assert!(!problems.contains("ledger/v.rs"), "{problems}");
}
