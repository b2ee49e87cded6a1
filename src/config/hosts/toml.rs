//! Codex's `config.toml`: finds each `[mcp_servers.NAME]` entry's bytes with `toml_edit`'s
//! spans (a table with its sub-tables such as `[mcp_servers.NAME.env]`, or an inline table
//! `NAME = { … }`), reads it, and writes a new entry with `toml_edit`'s value syntax.
//!
//! Must not re-serialise the document: only the entry's own bytes are ever replaced.
//! Dotted-key entries (`mcp_servers.NAME.command = …`) and tables of one entry split
//! around other tables are refused with an error naming the line.

use serde_json::Value;
use toml_edit::{Document, Item, Table};

use super::{ParseError, RawEntry, line_of};

/// Parse and find the entries under the table at `container` (a dotted path).
pub fn entries(text: &str, containers: &[&[&str]]) -> Result<Vec<RawEntry>, ParseError> {
    let doc = Document::parse(text).map_err(|e| ParseError {
        line: e.span().map_or(1, |s| line_of(text, s.start)),
        message: e.message().to_string(),
    })?;
    let mut headers = Vec::new();
    table_headers(doc.as_table(), &mut headers);
    headers.sort_unstable();
    let mut out = Vec::new();
    for path in containers {
        let mut item: Option<&Item> = None;
        let mut table = doc.as_table();
        for (i, key) in path.iter().enumerate() {
            let Some(next) = table.get(key) else {
                item = None;
                break;
            };
            item = Some(next);
            if i + 1 < path.len() {
                match next.as_table() {
                    Some(t) => table = t,
                    None => {
                        item = None;
                        break;
                    }
                }
            }
        }
        let Some(container) = item.and_then(Item::as_table_like) else {
            continue;
        };
        for (name, entry) in container.iter() {
            out.push(entry_of(text, &headers, name, entry)?);
        }
    }
    Ok(out)
}

/// Where every `[table]` / `[[array]]` header starts.
fn table_headers(table: &Table, out: &mut Vec<usize>) {
    if let Some(span) = table.span()
        && !table.is_implicit()
        && !table.is_dotted()
    {
        out.push(span.start);
    }
    for (_, item) in table.iter() {
        match item {
            Item::Table(t) => table_headers(t, out),
            Item::ArrayOfTables(a) => {
                for t in a.iter() {
                    table_headers(t, out);
                }
            }
            _ => {}
        }
    }
}

fn entry_of(
    text: &str,
    headers: &[usize],
    name: &str,
    item: &Item,
) -> Result<RawEntry, ParseError> {
    let refuse = |at: usize, why: &str| ParseError {
        line: line_of(text, at),
        message: format!("server {name:?}: {why}"),
    };
    match item {
        Item::Value(toml_edit::Value::InlineTable(t)) => {
            let span = t
                .span()
                .ok_or_else(|| refuse(0, "no position for its inline table"))?;
            Ok(RawEntry {
                name: name.to_string(),
                scope: None,
                value: to_json(item),
                indent: super::line_indent(text, span.start),
                line: line_of(text, span.start),
                span,
            })
        }
        Item::Table(t) if !t.is_dotted() && !t.is_implicit() => {
            let header = t
                .span()
                .ok_or_else(|| refuse(0, "no position for its table"))?;
            let start = text[..header.start].rfind('\n').map_or(0, |i| i + 1);
            let mut own = Vec::new();
            table_headers(t, &mut own);
            let next = headers
                .iter()
                .copied()
                .find(|h| *h > header.start && !own.contains(h))
                .unwrap_or(text.len());
            if let Some(stray) = own.iter().find(|h| **h > next) {
                return Err(refuse(
                    *stray,
                    "its tables are not together (another table sits between them); \
                     move them together to wrap it",
                ));
            }
            let end = trim_trailing(text, start, next);
            Ok(RawEntry {
                name: name.to_string(),
                scope: None,
                value: to_json(item),
                span: start..end,
                indent: String::new(),
                line: line_of(text, header.start),
            })
        }
        Item::Table(t) => {
            let at = t
                .iter()
                .find_map(|(k, _)| t.key(k).and_then(|k| k.span()))
                .map_or(0, |s| s.start);
            Err(refuse(
                at,
                "written with dotted keys, a layout `taskrail hosts` does not edit; write it \
                 as a [mcp_servers.NAME] table",
            ))
        }
        _ => Err(refuse(0, "not a table")),
    }
}

/// `start..next` less the blank and comment lines at its end (they belong to what follows),
/// and less the final newline.
fn trim_trailing(text: &str, start: usize, next: usize) -> usize {
    let body = &text[start..next];
    let mut end = body.len();
    loop {
        let trimmed = body[..end].trim_end_matches(['\n', '\r', ' ', '\t']);
        let line_start = trimmed.rfind('\n').map_or(0, |i| i + 1);
        let last = trimmed[line_start..].trim_start();
        if last.starts_with('#') && line_start > 0 {
            end = line_start;
            continue;
        }
        return start + trimmed.len();
    }
}

/// A TOML item as plain JSON (dates as their text).
pub fn to_json(item: &Item) -> Value {
    match item {
        Item::None => Value::Null,
        Item::Value(v) => value_json(v),
        Item::Table(t) => {
            Value::Object(t.iter().map(|(k, v)| (k.to_string(), to_json(v))).collect())
        }
        Item::ArrayOfTables(a) => Value::Array(
            a.iter()
                .map(|t| {
                    Value::Object(t.iter().map(|(k, v)| (k.to_string(), to_json(v))).collect())
                })
                .collect(),
        ),
    }
}

fn value_json(v: &toml_edit::Value) -> Value {
    use toml_edit::Value as V;
    match v {
        V::String(s) => Value::String(s.value().clone()),
        V::Integer(i) => Value::from(*i.value()),
        V::Float(f) => serde_json::Number::from_f64(*f.value()).map_or(Value::Null, Value::Number),
        V::Boolean(b) => Value::Bool(*b.value()),
        V::Datetime(d) => Value::String(d.value().to_string()),
        V::Array(a) => Value::Array(a.iter().map(value_json).collect()),
        V::InlineTable(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.to_string(), value_json(v)))
                .collect(),
        ),
    }
}

/// A JSON value as a TOML value (`null`: none, the key is left out).
fn toml_value(v: &Value) -> Option<toml_edit::Value> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64().unwrap_or_default().into(),
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(items) => {
            let mut a = toml_edit::Array::new();
            for item in items.iter().filter_map(toml_value) {
                a.push(item);
            }
            a.fmt();
            toml_edit::Value::Array(a)
        }
        Value::Object(map) => toml_edit::Value::InlineTable(inline(map)),
    })
}

fn inline(map: &serde_json::Map<String, Value>) -> toml_edit::InlineTable {
    let mut t = toml_edit::InlineTable::new();
    for (k, v) in map {
        if let Some(v) = toml_value(v) {
            t.insert(k, v);
        }
    }
    t.fmt();
    t
}

fn key_text(k: &str) -> String {
    toml_edit::Key::new(k).display_repr().into_owned()
}

/// The text of a new entry: the same header line and one `key = value` line per field for
/// a table entry, an inline table for an inline one.
pub fn render(text: &str, entry: &RawEntry, value: &Value) -> String {
    let empty = serde_json::Map::new();
    let map = value.as_object().unwrap_or(&empty);
    let original = text.get(entry.span.clone()).unwrap_or("");
    if original.starts_with('{') {
        return inline(map).to_string().trim().to_string();
    }
    let header = original.lines().next().unwrap_or("").trim_end();
    let mut out = header.to_string();
    for (k, v) in map {
        if let Some(v) = toml_value(v) {
            let v = v.decorated("", "");
            out.push_str(&format!("\n{} = {}", key_text(k), v));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const CODEX: &str = "# codex\nmodel = \"o3\"\n\n[mcp_servers.docs]\ncommand = \"npx\" # run it\nargs = [\"-y\", \"docs\"]\n\n[mcp_servers.docs.env]\nTOKEN = \"t\"\n\n# the next one\n[mcp_servers.remote]\nurl = \"https://x.example/mcp\"\nhttp_headers = { \"X-Key\" = \"k\" }\n\n[profiles.a]\nmodel = \"o4\"\n";

    #[test]
    fn finds_tables_with_their_subtables() {
        let e = entries(CODEX, &[&["mcp_servers"]]).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(
            &CODEX[e[0].span.clone()],
            "[mcp_servers.docs]\ncommand = \"npx\" # run it\nargs = [\"-y\", \"docs\"]\n\n[mcp_servers.docs.env]\nTOKEN = \"t\""
        );
        assert_eq!(e[0].value["env"]["TOKEN"], "t");
        assert_eq!(e[0].line, 4);
        assert_eq!(
            &CODEX[e[1].span.clone()],
            "[mcp_servers.remote]\nurl = \"https://x.example/mcp\"\nhttp_headers = { \"X-Key\" = \"k\" }"
        );
        assert_eq!(e[1].value["http_headers"]["X-Key"], "k");
    }

    #[test]
    fn renders_a_table_and_an_inline_table() {
        let e = entries(CODEX, &[&["mcp_servers"]]).unwrap();
        let v =
            serde_json::json!({"command": "/bin/t", "args": ["a b", "c"], "env": {"K": "v\"q"}});
        let out = render(CODEX, &e[0], &v);
        assert_eq!(
            out,
            "[mcp_servers.docs]\ncommand = \"/bin/t\"\nargs = [\"a b\", \"c\"]\nenv = { K = 'v\"q' }"
        );
        let text = "[mcp_servers]\nx = { command = \"a\" }\n";
        let e = entries(text, &[&["mcp_servers"]]).unwrap();
        assert_eq!(&text[e[0].span.clone()], "{ command = \"a\" }");
        assert_eq!(render(text, &e[0], &v).chars().next(), Some('{'));
    }

    #[test]
    fn refuses_dotted_and_split_layouts() {
        let dotted = "[mcp_servers]\nx.command = \"a\"\n";
        let err = entries(dotted, &[&["mcp_servers"]]).unwrap_err();
        assert_eq!(err.line, 2, "{}", err.message);
        let split = "[mcp_servers.x]\ncommand = \"a\"\n[other]\n[mcp_servers.x.env]\nA = \"b\"\n";
        assert_eq!(entries(split, &[&["mcp_servers"]]).unwrap_err().line, 4);
        assert_eq!(
            entries("a = = 1\n\n", &[&["mcp_servers"]])
                .unwrap_err()
                .line,
            1
        );
    }
}
