//! goose's `config.yaml`: reads the document with positions (`saphyr-parser` events), finds
//! each entry of the top-level `extensions` block mapping and the bytes of its value (the
//! rest of the key's line and every following line indented deeper), and writes a new value
//! as a block of `key: <JSON>` lines (JSON is YAML flow syntax).
//!
//! Must not re-serialise the document. Layouts it does not edit (a flow-style `extensions`
//! map, an entry key not at the start of its line) are refused with an error naming the line.

use saphyr_parser::{Event, Parser, ScalarStyle, Span};
use serde_json::Value;

use super::{ParseError, RawEntry, line_of};

/// Nesting deeper than this is refused.
const MAX_DEPTH: usize = 128;

/// A YAML node: mappings keep each key's position.
#[derive(Debug)]
enum Node {
    Map(Vec<(String, Span, Node)>),
    Seq(Vec<Node>),
    Scalar(String, ScalarStyle),
    Alias,
}

struct Reader<'a> {
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
}

fn scan_error(e: &saphyr_parser::ScanError) -> ParseError {
    ParseError {
        line: e.marker().line().max(1),
        message: e.info().to_string(),
    }
}

impl<'a> Reader<'a> {
    fn next(&mut self) -> Result<(Event<'a>, Span), ParseError> {
        match self.parser.next_event() {
            Some(Ok(ev)) => Ok(ev),
            Some(Err(e)) => Err(scan_error(&e)),
            None => Err(ParseError {
                line: 1,
                message: "unexpected end of the document".into(),
            }),
        }
    }

    fn node(&mut self, ev: Event<'a>, span: Span, depth: usize) -> Result<Node, ParseError> {
        if depth > MAX_DEPTH {
            return Err(ParseError {
                line: span.start.line(),
                message: "nested too deeply".into(),
            });
        }
        match ev {
            Event::Scalar(s, style, ..) => Ok(Node::Scalar(s.into_owned(), style)),
            Event::Alias(_) => Ok(Node::Alias),
            Event::SequenceStart(..) => {
                let mut items = Vec::new();
                loop {
                    let (ev, span) = self.next()?;
                    if matches!(ev, Event::SequenceEnd) {
                        return Ok(Node::Seq(items));
                    }
                    items.push(self.node(ev, span, depth + 1)?);
                }
            }
            Event::MappingStart(..) => {
                let mut members = Vec::new();
                loop {
                    let (ev, key_span) = self.next()?;
                    let key = match ev {
                        Event::MappingEnd => return Ok(Node::Map(members)),
                        Event::Scalar(s, ..) => s.into_owned(),
                        _ => {
                            return Err(ParseError {
                                line: key_span.start.line(),
                                message: "a mapping key that is not text is not handled".into(),
                            });
                        }
                    };
                    let (ev, span) = self.next()?;
                    let value = self.node(ev, span, depth + 1)?;
                    members.push((key, key_span, value));
                }
            }
            _ => Err(ParseError {
                line: span.start.line(),
                message: "unexpected YAML structure".into(),
            }),
        }
    }
}

/// The first document's root node (an empty file: an empty mapping).
fn parse(text: &str) -> Result<Node, ParseError> {
    let mut r = Reader {
        parser: Parser::new_from_str(text),
    };
    loop {
        let (ev, span) = r.next()?;
        match ev {
            Event::StreamStart | Event::DocumentStart(_) | Event::Nothing => continue,
            Event::StreamEnd | Event::DocumentEnd => return Ok(Node::Map(Vec::new())),
            ev => {
                let root = r.node(ev, span, 0)?;
                // The rest must parse too (a broken tail is a broken file).
                loop {
                    match r.parser.next_event() {
                        None => return Ok(root),
                        Some(Err(e)) => return Err(scan_error(&e)),
                        Some(Ok(_)) => {}
                    }
                }
            }
        }
    }
}

impl Node {
    fn to_value(&self) -> Value {
        match self {
            Node::Map(m) => Value::Object(
                m.iter()
                    .map(|(k, _, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
            Node::Seq(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Alias => Value::Null,
            Node::Scalar(s, ScalarStyle::Plain) => plain(s),
            Node::Scalar(s, _) => Value::String(s.clone()),
        }
    }
}

/// A plain scalar's value under the YAML core schema.
fn plain(s: &str) -> Value {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ => {
            if let Ok(i) = s.parse::<i64>() {
                return Value::from(i);
            }
            if s.contains(['.', 'e', 'E'])
                && let Ok(f) = s.parse::<f64>()
                && let Some(n) = serde_json::Number::from_f64(f)
            {
                return Value::Number(n);
            }
            Value::String(s.to_string())
        }
    }
}

/// Byte offset of a (1-based line, 0-based char column) position.
fn offset(text: &str, line: usize, col: usize) -> usize {
    let mut start = 0;
    for _ in 1..line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    let rest = &text[start..];
    start + rest.char_indices().nth(col).map_or(rest.len(), |(i, _)| i)
}

/// The entries of the top-level mappings named by `containers` (one segment each).
pub fn entries(text: &str, containers: &[&[&str]]) -> Result<Vec<RawEntry>, ParseError> {
    let root = parse(text)?;
    let mut out = Vec::new();
    let Node::Map(top) = &root else {
        return Err(ParseError {
            line: 1,
            message: "the document is not a mapping".into(),
        });
    };
    for path in containers {
        let [name] = path else { continue };
        let Some((_, span, Node::Map(items))) = top.iter().find(|(k, _, _)| k == name) else {
            continue;
        };
        let container_line = span.start.line();
        for (key, key_span, value) in items {
            out.push(entry_of(text, key, key_span, value, container_line)?);
        }
    }
    Ok(out)
}

fn entry_of(
    text: &str,
    name: &str,
    key_span: &Span,
    value: &Node,
    container_line: usize,
) -> Result<RawEntry, ParseError> {
    let line = key_span.start.line();
    let refuse = |why: &str| ParseError {
        line,
        message: format!("extension {name:?}: {why}"),
    };
    let key_at = offset(text, line, key_span.start.col());
    let line_start = text[..key_at].rfind('\n').map_or(0, |i| i + 1);
    let indent = &text[line_start..key_at];
    if line == container_line || !indent.bytes().all(|b| b == b' ') {
        return Err(refuse(
            "not a block entry on a line of its own, a layout `taskrail hosts` does not edit",
        ));
    }
    let key_end = offset(text, key_span.end.line(), key_span.end.col());
    let after = &text[key_end..];
    let colon = after
        .find(|c: char| c != ' ')
        .filter(|i| after[*i..].starts_with(':'))
        .ok_or_else(|| refuse("no `:` after its key"))?;
    let start = key_end + colon + 1;
    // The value: the rest of this line and every following line indented deeper than the
    // key; blank and comment lines count only when more of the value follows them.
    let mut end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let mut pos = end;
    while pos < text.len() {
        let line_begin = pos + 1;
        let line_end = text[line_begin..]
            .find('\n')
            .map_or(text.len(), |i| line_begin + i);
        let l = &text[line_begin..line_end];
        let content = l.trim_start_matches(' ');
        let content_trimmed = content.trim_end_matches('\r').trim_end();
        pos = line_end;
        if content_trimmed.is_empty() || content_trimmed.starts_with('#') {
            continue;
        }
        if l.len() - content.len() <= indent.len() {
            break;
        }
        end = line_end;
    }
    let end = start + text[start..end].trim_end_matches('\r').len();
    Ok(RawEntry {
        name: name.to_string(),
        scope: None,
        value: value.to_value(),
        span: start..end,
        indent: indent.to_string(),
        line: line_of(text, key_at),
    })
}

/// The text of a new value: `key: <JSON>` lines one step deeper than the entry's key.
pub fn render(text: &str, entry: &RawEntry, value: &Value) -> String {
    let unit = text
        .get(entry.span.clone())
        .and_then(|body| {
            body.lines().skip(1).find_map(|l| {
                let c = l.trim_start_matches(' ');
                let deeper = l.len() - c.len();
                (!c.trim().is_empty() && !c.starts_with('#') && deeper > entry.indent.len())
                    .then(|| deeper - entry.indent.len())
            })
        })
        .unwrap_or(2);
    let child = format!("{}{}", entry.indent, " ".repeat(unit));
    let mut out = String::new();
    if let Some(map) = value.as_object() {
        for (k, v) in map {
            let key = if k
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                k.clone()
            } else {
                Value::String(k.clone()).to_string()
            };
            out.push_str(&format!("\n{child}{key}: {}", flow(v)));
        }
    }
    out
}

/// JSON with a space after every `:` and `,`: flow YAML that every YAML 1.1 parser reads.
fn flow(v: &Value) -> String {
    match v {
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(flow).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), flow(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const GOOSE: &str = "GOOSE_PROVIDER: anthropic\nextensions:\n  # github, from npm\n  github:   # mine\n    cmd: npx\n    args: [-y, \"@modelcontextprotocol/server-github\"]\n    envs: { \"TOKEN\": \"t\" }\n    enabled: true\n    timeout: 300\n    type: stdio\n\n  # remote\n  remote:\n    type: streamable_http\n    uri: https://x.example/mcp\n    headers:\n      X-Key: k\n    enabled: false\nGOOSE_MODEL: m\n";

    #[test]
    fn finds_block_entries() {
        let e = entries(GOOSE, &[&["extensions"]]).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].name, "github");
        assert_eq!(e[0].line, 4);
        assert_eq!(
            &GOOSE[e[0].span.clone()],
            "   # mine\n    cmd: npx\n    args: [-y, \"@modelcontextprotocol/server-github\"]\n    envs: { \"TOKEN\": \"t\" }\n    enabled: true\n    timeout: 300\n    type: stdio"
        );
        assert_eq!(e[0].value["args"][1], "@modelcontextprotocol/server-github");
        assert_eq!(e[0].value["timeout"], 300);
        assert_eq!(e[0].value["enabled"], true);
        assert_eq!(e[1].value["headers"]["X-Key"], "k");
        assert!(GOOSE[e[1].span.clone()].ends_with("enabled: false"));
    }

    #[test]
    fn renders_json_flow_values() {
        let e = entries(GOOSE, &[&["extensions"]]).unwrap();
        let out = render(
            GOOSE,
            &e[0],
            &serde_json::json!({"cmd": "/t", "args": ["a b"], "envs": {"K": "v"}}),
        );
        assert_eq!(
            out,
            "\n    cmd: \"/t\"\n    args: [\"a b\"]\n    envs: {\"K\": \"v\"}"
        );
        let mut text = GOOSE.to_string();
        text.replace_range(e[0].span.clone(), &out);
        let again = entries(&text, &[&["extensions"]]).unwrap();
        assert_eq!(again[0].value["envs"]["K"], "v");
        assert_eq!(again[0].value["args"][0], "a b");
    }

    #[test]
    fn refuses_flow_maps_and_names_broken_lines() {
        let flow = "extensions: {a: {cmd: x}}\n";
        assert_eq!(entries(flow, &[&["extensions"]]).unwrap_err().line, 1);
        let broken = "a: 1\nextensions:\n  x:\n    cmd: [unclosed\n";
        assert!(entries(broken, &[&["extensions"]]).unwrap_err().line >= 4);
        assert!(entries("", &[&["extensions"]]).unwrap().is_empty());
    }
}
