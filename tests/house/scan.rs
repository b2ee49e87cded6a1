//! Reading the source tree for the house rules: every `.rs` file under `src/` with its module
//! path, its code without comments and without test-only items, and the crate paths it names —
//! `use crate::…`, grouped `use crate::{a, b::c}`, `super::` and `self::` paths resolved the
//! way Rust resolves them, and inline `crate::x::y` paths.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One source file of the crate.
pub struct SourceFile {
    /// Path relative to `src/`, with `/` separators (`state/board.rs`).
    pub rel: String,
    /// Its module path (`state/board.rs` → `[state, board]`, `state/mod.rs` → `[state]`).
    pub module: Vec<String>,
    /// The whole text, as on disk.
    pub text: String,
    /// The code without comments and without `#[cfg(test)]` items.
    pub code: String,
    /// A test-only file (`tests.rs`, `*_tests.rs`, anything under a `tests/` folder).
    pub is_test: bool,
}

/// Every `.rs` file under `src`, sorted by path.
pub fn files(src: &Path) -> Vec<SourceFile> {
    let mut paths = Vec::new();
    walk(src, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| {
            let rel = p
                .strip_prefix(src)
                .ok()?
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>();
            let text = std::fs::read_to_string(&p).ok()?;
            let code = without_test_items(&without_comments(&text));
            let is_test = rel.iter().any(|c| c == "tests")
                || rel
                    .last()
                    .is_some_and(|f| f == "tests.rs" || f.ends_with("_tests.rs"));
            Some(SourceFile {
                module: module_path(&rel),
                rel: rel.join("/"),
                text,
                code,
                is_test,
            })
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `[state, board.rs]` → `[state, board]`; `[state, mod.rs]` → `[state]`; `[lib.rs]` → `[]`.
fn module_path(rel: &[String]) -> Vec<String> {
    let mut m: Vec<String> = rel.to_vec();
    if let Some(last) = m.pop() {
        let stem = last.trim_end_matches(".rs");
        if !matches!(stem, "mod" | "lib" | "main") {
            m.push(stem.to_string());
        }
    }
    m
}

/// The text without `//` and `/* */` comments; string literals are kept as they are.
pub fn without_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut in_str = false;
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' && i + 1 < b.len() {
                out.push_str(&text[i..i + 2]);
                i += 2;
                continue;
            }
            if c == b'"' {
                in_str = false;
            }
            let ch = text[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                if b[i] == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 2;
            continue;
        }
        if c == b'"' && !(i > 0 && b[i - 1] == b'\'' && b.get(i + 1) == Some(&b'\'')) {
            in_str = true;
        }
        let ch = text[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// The code without items marked `#[cfg(test)]` (a `mod tests { … }`, a `use`, a helper fn).
pub fn without_test_items(code: &str) -> String {
    const ATTR: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find(ATTR) {
        out.push_str(&rest[..at]);
        let item = &rest[at + ATTR.len()..];
        // The item ends at its first `;` unless a `{` comes first, then at the matching `}`.
        let semi = item.find(';');
        let open = item.find('{');
        let end = match (semi, open) {
            (Some(s), Some(o)) if s < o => s + 1,
            (Some(s), None) => s + 1,
            (_, Some(o)) => {
                let mut depth = 0usize;
                let mut end = item.len();
                for (k, ch) in item[o..].char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = o + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (None, None) => item.len(),
        };
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// The crate paths a file names, absolute (`["state", "board", "Board"]`), from its `use`
/// declarations (grouped or not, `crate::`, `super::`, `self::`) and from inline paths.
pub fn crate_paths(file: &SourceFile) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    let code = &file.code;
    // `use` declarations, whole trees.
    let mut rest = code.as_str();
    while let Some(at) = find_word(rest, "use") {
        let after = &rest[at + 3..];
        let Some(end) = after.find(';') else { break };
        let tree: String = after[..end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for path in expand_tree(&tree) {
            if let Some(abs) = absolute(&file.module, &file.rel, &path) {
                out.insert(abs);
            }
        }
        rest = &after[end..];
    }
    // Inline paths: `crate::a::b`, `super::x`, `self::y` anywhere in the code.
    for start in ["crate::", "super::", "self::"] {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(start) {
            let boundary = at == 0 || {
                let b = rest.as_bytes()[at - 1];
                !(b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b':')
            };
            let tail = &rest[at..];
            let len = tail
                .char_indices()
                .find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .map_or(tail.len(), |(k, _)| k);
            if boundary {
                let path: Vec<String> = tail[..len]
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                if let Some(abs) = absolute(&file.module, &file.rel, &path) {
                    out.insert(abs);
                }
            }
            rest = &rest[at + start.len()..];
        }
    }
    out
}

/// The index of `word` in `text` standing as a whole word.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(k) = text[from..].find(word) {
        let at = from + k;
        let before = at.checked_sub(1).map(|i| text.as_bytes()[i]);
        let after = text.as_bytes().get(at + word.len()).copied();
        let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        if !before.is_some_and(ident) && !after.is_some_and(ident) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// A `use` tree (`crate::{a::B, c::{d, e as f}}`) as its paths.
pub fn expand_tree(tree: &str) -> Vec<Vec<String>> {
    fn go(prefix: &[String], body: &str, out: &mut Vec<Vec<String>>) {
        for part in split_top(body) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            if let Some(open) = part.find('{') {
                let head: Vec<String> = part[..open]
                    .split("::")
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                let inner = part[open + 1..].trim_end().trim_end_matches('}');
                let mut p = prefix.to_vec();
                p.extend(head);
                go(&p, inner, out);
            } else {
                let part = part.split(" as ").next().unwrap_or(part).trim();
                let mut p = prefix.to_vec();
                p.extend(
                    part.split("::")
                        .map(str::trim)
                        .filter(|s| !s.is_empty() && *s != "self")
                        .map(str::to_string),
                );
                out.push(p);
            }
        }
    }
    let tree = tree.trim().trim_start_matches("pub(crate) ").trim();
    let mut out = Vec::new();
    go(&[], tree, &mut out);
    out
}

/// `a, b::{c, d}, e` split at the commas outside braces.
fn split_top(body: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, ch) in body.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&body[start..]);
    parts
}

/// A path as written in `file` made absolute from the crate root, or `None` for a path into
/// another crate. `super` in `a/b.rs` and in `a/b/mod.rs` both name `a` (Rust's rule: a file's
/// parent module); `self` names the file's own module.
pub fn absolute(module: &[String], rel: &str, path: &[String]) -> Option<Vec<String>> {
    let _ = rel;
    let first = path.first()?;
    let (mut base, rest): (Vec<String>, &[String]) = match first.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (module.to_vec(), &path[1..]),
        "super" => {
            let mut base = module.to_vec();
            let mut k = 0;
            while path.get(k).is_some_and(|s| s == "super") {
                base.pop()?;
                k += 1;
            }
            (base, &path[k..])
        }
        _ => return None,
    };
    base.extend(rest.iter().filter(|s| s.as_str() != "self").cloned());
    Some(base)
}

/// The longest prefix of `path` that is the module of one of `files`.
pub fn file_of<'a>(path: &[String], files: &'a [SourceFile]) -> Option<&'a SourceFile> {
    (1..=path.len())
        .rev()
        .find_map(|k| files.iter().find(|f| f.module == path[..k]))
}

/// Write `text` to `rel` under `root`, creating its folders (the self-tests' trees).
pub fn write_file(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn grouped_and_relative_imports_are_read() {
    let file = SourceFile {
        rel: "state/views/inbox.rs".into(),
        module: vec!["state".into(), "views".into(), "inbox".into()],
        text: String::new(),
        code: "use crate::{ids::TaskId, mcp::{types::Task, input as i}};\n\
               use super::super::board::{self, Board};\n\
               use self::inner::X;\n\
               fn f() { crate::engine::EngineEvent::Gone; super::roots::g(); }\n"
            .into(),
        is_test: false,
    };
    let got: BTreeSet<String> = crate_paths(&file)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    for want in [
        "ids::TaskId",
        "mcp::types::Task",
        "mcp::input",
        "state::board",
        "state::board::Board",
        "state::views::inbox::inner::X",
        "engine::EngineEvent::Gone",
        "state::views::roots::g",
    ] {
        assert!(got.contains(want), "missing {want} in {got:?}");
    }
}

#[test]
fn comments_and_test_items_are_not_code() {
    let code = without_test_items(&without_comments(
        "use a; // use crate::x;\n/* crate::y */ let s = \"// kept\";\n\
         #[cfg(test)]\nmod tests { use crate::z; fn f() { {} } }\n#[cfg(test)]\nuse crate::w;\nfn g() {}\n",
    ));
    assert!(
        !code.contains("crate::x") && !code.contains("crate::y"),
        "{code}"
    );
    assert!(
        !code.contains("crate::z") && !code.contains("crate::w"),
        "{code}"
    );
    assert!(
        code.contains("\"// kept\"") && code.contains("fn g()"),
        "{code}"
    );
}
