//! No file-level import loop inside a folder: two files that import each other (directly or
//! round a cycle) have not decided who owns what. The loops that exist today are listed with
//! the reason they remain; a listed file that no longer loops must leave the list, so the list
//! only shrinks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::scan::{self, SourceFile};

/// Loops allowed for now: the top-level folder, the files of the loop (paths under `src/`), why.
const ALLOWED_LOOPS: &[(&str, &[&str], &str)] = &[];

/// The import graph between the production files of each top-level folder.
fn graphs(files: &[SourceFile]) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let mut out: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let production: Vec<&SourceFile> = files
        .iter()
        .filter(|f| !f.is_test && !f.module.is_empty())
        .collect();
    for f in &production {
        let top = f.module[0].clone();
        let edges = out
            .entry(top.clone())
            .or_default()
            .entry(f.rel.clone())
            .or_default();
        for path in scan::crate_paths(f) {
            if path.first() != Some(&top) {
                continue;
            }
            if let Some(target) = scan::file_of(&path, files)
                && target.rel != f.rel
                && !target.is_test
            {
                edges.insert(target.rel.clone());
            }
        }
    }
    out
}

/// The strongly connected components with more than one file (Tarjan).
fn loops(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        found: Vec<BTreeSet<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            self.on_stack.insert(v);
            let graph = self.graph;
            for w in graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut part = BTreeSet::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    part.insert(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if part.len() > 1 {
                    self.found.push(part);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

/// Every loop problem of the tree under `src`, in words, against `allowed`.
fn problems(src: &Path, allowed: &[(&str, &[&str], &str)]) -> Vec<String> {
    let files = scan::files(src);
    let mut looping: BTreeSet<String> = BTreeSet::new();
    let mut problems = Vec::new();
    for (folder, graph) in graphs(&files) {
        for part in loops(&graph) {
            looping.extend(part.iter().cloned());
            let unlisted: Vec<&String> = part
                .iter()
                .filter(|f| {
                    !allowed
                        .iter()
                        .any(|(d, list, _)| *d == folder && list.contains(&f.as_str()))
                })
                .collect();
            if !unlisted.is_empty() {
                let all: Vec<&str> = part.iter().map(String::as_str).collect();
                problems.push(format!(
                    "import loop in src/{folder}/: {} (new in the loop: {})",
                    all.join(", "),
                    unlisted
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    for (_, list, _) in allowed {
        for f in *list {
            if !looping.contains(*f) {
                problems.push(format!(
                    "src/{f} no longer takes part in an import loop: take it off ALLOWED_LOOPS"
                ));
            }
        }
    }
    problems
}

#[test]
fn no_file_level_import_loop_inside_a_folder() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = problems(&src, ALLOWED_LOOPS);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_loop_check_finds_a_loop_and_a_stale_allowance() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |rel: &str, text: &str| scan::write_file(src, rel, text);
    write("state/mod.rs", "mod a; mod b; mod c;\n");
    write("state/a.rs", "use super::b::B;\npub struct A;\n");
    write(
        "state/b.rs",
        "use crate::state::{c::C, a};\npub struct B;\n",
    );
    write("state/c.rs", "pub struct C;\n");
    write("state/tests.rs", "use super::a::A;\n");
    let found = problems(src, &[("state", &["state/c.rs"], "")]).join("\n");
    assert!(
        found.contains("import loop in src/state/: state/a.rs, state/b.rs"),
        "{found}"
    );
    assert!(
        found.contains("src/state/c.rs no longer takes part"),
        "{found}"
    );
    let fine = problems(src, &[("state", &["state/a.rs", "state/b.rs"], "")]);
    assert!(fine.is_empty(), "{fine:?}");
}
