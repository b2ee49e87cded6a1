//! The walls between layers defend themselves: every top-level module of `src/` may import
//! only the modules below it (DESIGN.md), the protocol, engine and ledger layers never touch
//! ratatui or crossterm, the config never imports the views, and no two modules import
//! each other (directly or round a cycle). A new top-level module must be placed here.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::scan;

/// Which crate modules each top-level module may import, and whether it may use the
/// terminal crates.
pub const LAYERS: &[(&str, &[&str], bool)] = &[
    ("sanitize", &[], false),
    ("paths", &[], false),
    ("ids", &["sanitize"], false),
    ("mcp", &["ids", "sanitize", "paths"], false),
    ("ledger", &["ids", "sanitize", "paths", "mcp"], false),
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

/// Every layering problem of the tree under `src`, in words.
pub fn violations(src: &Path) -> Vec<String> {
    let layers: BTreeMap<&str, (&[&str], bool)> = LAYERS
        .iter()
        .map(|(m, deps, tui)| (*m, (*deps, *tui)))
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut problems = Vec::new();
    for file in scan::files(src) {
        let Some(module) = file.module.first().cloned() else {
            continue;
        };
        let shown = &file.rel;
        let Some((allowed, tui)) = layers.get(module.as_str()) else {
            problems.push(format!(
                "src/{shown}: module `{module}` has no place in the layering table"
            ));
            continue;
        };
        let deps: BTreeSet<String> = scan::crate_paths(&file)
            .into_iter()
            .filter_map(|p| p.first().cloned())
            .collect();
        for dep in deps {
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
                if file.code.contains(krate) {
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
    let write = |rel: &str, text: &str| scan::write_file(src, rel, text);
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
    write(
        "ledger/u.rs",
        "use crate::{ids::TaskId, state::{State, Msg}};\n",
    );
    write("state/t.rs", "use super::super::ui::Theme;\n");
    write("newthing.rs", "fn f() {}\n");
    let problems = violations(src).join("\n");
    for expected in [
        "`mcp` must not use `ratatui`",
        "`engine` must not import `crate::state`",
        "`config` must not import `crate::ui`",
        "import cycle: config → ui → config",
        "module `newthing` has no place",
        "src/ledger/u.rs: `ledger` must not import `crate::state`",
        "src/state/t.rs: `state` must not import `crate::ui`",
    ] {
        assert!(
            problems.contains(expected),
            "missing {expected:?} in:\n{problems}"
        );
    }
    assert!(!problems.contains("crate::ids"), "{problems}");
    assert!(!problems.contains("ledger/v.rs"), "{problems}");
}
