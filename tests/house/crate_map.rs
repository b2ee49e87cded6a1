//! `src/lib.rs`'s crate map cannot drift from the walls: it has one bullet per module of the
//! layering table, in the table's order, and each bullet's "May import" list (or "Imports
//! nothing of the crate") is exactly the table's.

use std::collections::BTreeSet;
use std::path::Path;

use crate::layering::LAYERS;

/// The map's bullets: module name and the crate modules it says the module may import.
fn bullets(lib: &str) -> Vec<(String, BTreeSet<String>)> {
    let mut items: Vec<String> = Vec::new();
    for line in lib.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            break;
        };
        if let Some(item) = doc.strip_prefix(" - `") {
            items.push(format!("`{item}"));
        } else if let (Some(last), Some(more)) = (items.last_mut(), doc.strip_prefix("   ")) {
            last.push(' ');
            last.push_str(more.trim());
        } else if !doc.trim().is_empty() || items.last().is_some_and(|l| l.ends_with('.')) {
            items.push(String::new());
        }
    }
    let names = |text: &str| -> Vec<String> {
        text.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    items
        .into_iter()
        .filter(|i| i.starts_with('`'))
        .filter_map(|item| {
            let name = names(&item).into_iter().next()?;
            let deps = match item.find("May import") {
                Some(at) => names(&item[at..])
                    .into_iter()
                    .filter(|d| LAYERS.iter().any(|(m, _, _)| m == d))
                    .collect(),
                None if item.contains("Imports nothing of the crate") => BTreeSet::new(),
                None => return Some((name, BTreeSet::from(["?".to_string()]))),
            };
            Some((name, deps))
        })
        .collect()
}

/// Each difference between the map in `lib` and the layering table.
fn drift(lib: &str) -> Vec<String> {
    let map = bullets(lib);
    let mut out = Vec::new();
    let order: Vec<&str> = map.iter().map(|(n, _)| n.as_str()).collect();
    let table: Vec<&str> = LAYERS.iter().map(|(m, _, _)| *m).collect();
    if order != table {
        out.push(format!(
            "the map lists modules in the order {order:?}; the layering table in {table:?}"
        ));
    }
    for (module, deps, _) in LAYERS {
        let want: BTreeSet<String> = deps.iter().map(|d| d.to_string()).collect();
        match map.iter().find(|(n, _)| n == module) {
            None => out.push(format!("the map has no bullet for `{module}`")),
            Some((_, got)) if *got != want => out.push(format!(
                "the map says `{module}` may import {got:?}; the layering table says {want:?}"
            )),
            Some(_) => {}
        }
    }
    out
}

#[test]
fn the_crate_map_follows_the_layering_table() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let found = drift(&lib);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_map_check_sees_a_missing_module_and_a_wrong_import() {
    let mut lib = String::from("//! The map.\n//!\n");
    for (module, deps, _) in LAYERS {
        let deps = if *module == "ledger" {
            &["ids"][..]
        } else {
            deps
        };
        if *module == "demo" {
            continue;
        }
        if deps.is_empty() {
            lib.push_str(&format!(
                "//! - `{module}` — it. Imports nothing of the crate.\n"
            ));
        } else {
            let list: Vec<String> = deps.iter().map(|d| format!("`{d}`")).collect();
            lib.push_str(&format!(
                "//! - `{module}` — it.\n//!   May import {}.\n",
                list.join(", ")
            ));
        }
    }
    let found = drift(&lib).join("\n");
    assert!(found.contains("no bullet for `demo`"), "{found}");
    assert!(found.contains("`ledger` may import"), "{found}");
    assert!(!found.contains("`mcp` may import"), "{found}");
}
