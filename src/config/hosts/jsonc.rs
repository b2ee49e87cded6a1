//! A JSON-with-comments reader that keeps byte spans: `//` and `/* */` comments, trailing
//! commas and a leading BOM are accepted (VS Code's and Zed's files have them), every value
//! and key knows where it sits, so an edit replaces one value's bytes and nothing else.
//!
//! Must not re-serialise a document: it only reads, and renders one new value.

use std::ops::Range;

use serde_json::Value;

use super::{ParseError, RawEntry, line_indent, line_of};

/// A JSON value with where it is in the text.
#[derive(Debug, Clone)]
pub enum Node {
    Object(Vec<Member>, Range<usize>),
    Array(Vec<Node>, Range<usize>),
    Scalar(Value, Range<usize>),
}

/// One `"key": value` of an object.
#[derive(Debug, Clone)]
pub struct Member {
    pub key: String,
    pub key_span: Range<usize>,
    pub value: Node,
}

impl Node {
    pub fn span(&self) -> Range<usize> {
        match self {
            Node::Object(_, s) | Node::Array(_, s) | Node::Scalar(_, s) => s.clone(),
        }
    }

    /// The plain value (comments and positions dropped).
    pub fn to_value(&self) -> Value {
        match self {
            Node::Object(members, _) => Value::Object(
                members
                    .iter()
                    .map(|m| (m.key.clone(), m.value.to_value()))
                    .collect(),
            ),
            Node::Array(items, _) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Scalar(v, _) => v.clone(),
        }
    }

    pub fn members(&self) -> &[Member] {
        match self {
            Node::Object(m, _) => m,
            _ => &[],
        }
    }
}

/// Nesting deeper than this is refused (a hostile file must not blow the stack).
const MAX_DEPTH: usize = 128;

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn error(&self, at: usize, message: impl Into<String>) -> ParseError {
        ParseError {
            line: line_of(self.text, at),
            message: message.into(),
        }
    }

    /// Skip whitespace and comments.
    fn skip(&mut self) -> Result<(), ParseError> {
        loop {
            match self.bytes.get(self.pos) {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.pos += 1,
                Some(b'/') => match self.bytes.get(self.pos + 1) {
                    Some(b'/') => {
                        while self.bytes.get(self.pos).is_some_and(|b| *b != b'\n') {
                            self.pos += 1;
                        }
                    }
                    Some(b'*') => {
                        let start = self.pos;
                        let end = self.text[self.pos + 2..]
                            .find("*/")
                            .ok_or_else(|| self.error(start, "a /* comment is never closed"))?;
                        self.pos += 2 + end + 2;
                    }
                    _ => return Err(self.error(self.pos, "unexpected `/`")),
                },
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.error(self.pos, "nested too deeply"));
        }
        self.skip()?;
        let start = self.pos;
        match self.bytes.get(self.pos) {
            None => Err(self.error(start, "unexpected end of file")),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => {
                let s = self.string()?;
                Ok(Node::Scalar(Value::String(s), start..self.pos))
            }
            Some(_) => {
                while self
                    .bytes
                    .get(self.pos)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.'))
                {
                    self.pos += 1;
                }
                let raw = &self.text[start..self.pos];
                let v: Value = serde_json::from_str(raw).map_err(|_| {
                    let shown: String = raw.chars().take(20).collect();
                    if raw.is_empty() {
                        self.error(start, "expected a value")
                    } else {
                        self.error(start, format!("`{shown}` is not a JSON value"))
                    }
                })?;
                Ok(Node::Scalar(v, start..self.pos))
            }
        }
    }

    fn string(&mut self) -> Result<String, ParseError> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.bytes.get(self.pos) {
                None | Some(b'\n') => return Err(self.error(start, "a string is never closed")),
                Some(b'\\') => self.pos += 2,
                Some(b'"') => {
                    self.pos += 1;
                    break;
                }
                Some(_) => self.pos += 1,
            }
        }
        let raw = self.text.get(start..self.pos).unwrap_or("");
        serde_json::from_str(raw).map_err(|e| self.error(start, format!("invalid string: {e}")))
    }

    fn object(&mut self, depth: usize) -> Result<Node, ParseError> {
        let start = self.pos;
        self.pos += 1;
        let mut members = Vec::new();
        loop {
            self.skip()?;
            match self.bytes.get(self.pos) {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Node::Object(members, start..self.pos));
                }
                Some(b'"') => {}
                None => return Err(self.error(start, "an object is never closed")),
                Some(_) => return Err(self.error(self.pos, "expected a \"key\" or `}`")),
            }
            let key_start = self.pos;
            let key = self.string()?;
            let key_span = key_start..self.pos;
            self.skip()?;
            if self.bytes.get(self.pos) != Some(&b':') {
                return Err(self.error(self.pos, format!("expected `:` after \"{key}\"")));
            }
            self.pos += 1;
            let value = self.value(depth + 1)?;
            members.push(Member {
                key,
                key_span,
                value,
            });
            self.skip()?;
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {}
                _ => return Err(self.error(self.pos, "expected `,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Node, ParseError> {
        let start = self.pos;
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip()?;
            match self.bytes.get(self.pos) {
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Node::Array(items, start..self.pos));
                }
                None => return Err(self.error(start, "an array is never closed")),
                _ => {}
            }
            items.push(self.value(depth + 1)?);
            self.skip()?;
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {}
                _ => return Err(self.error(self.pos, "expected `,` or `]`")),
            }
        }
    }
}

/// Parse a whole JSONC document (an empty or comment-only file is an empty object).
pub fn parse(text: &str) -> Result<Node, ParseError> {
    let mut r = Reader {
        text,
        bytes: text.as_bytes(),
        pos: if text.starts_with('\u{feff}') { 3 } else { 0 },
    };
    r.skip()?;
    if r.pos == text.len() {
        return Ok(Node::Object(Vec::new(), r.pos..r.pos));
    }
    let root = r.value(0)?;
    r.skip()?;
    if r.pos != text.len() {
        return Err(r.error(r.pos, "unexpected text after the document"));
    }
    Ok(root)
}

/// The server entries under each container path (`*` matches every key, which becomes the
/// entry's scope).
pub fn entries(text: &str, containers: &[&[&str]]) -> Result<Vec<RawEntry>, ParseError> {
    let root = parse(text)?;
    if !matches!(root, Node::Object(..)) {
        return Err(ParseError {
            line: line_of(text, root.span().start),
            message: "the document is not a JSON object".into(),
        });
    }
    let mut out = Vec::new();
    for path in containers {
        collect(text, &root, path, None, &mut out);
    }
    Ok(out)
}

fn collect(text: &str, node: &Node, path: &[&str], scope: Option<&str>, out: &mut Vec<RawEntry>) {
    let Some((first, rest)) = path.split_first() else {
        for m in node.members() {
            if !matches!(m.value, Node::Object(..)) {
                continue;
            }
            out.push(RawEntry {
                name: m.key.clone(),
                scope: scope.map(str::to_string),
                value: m.value.to_value(),
                span: m.value.span(),
                indent: line_indent(text, m.key_span.start),
                line: line_of(text, m.key_span.start),
            });
        }
        return;
    };
    for m in node.members() {
        if *first == "*" {
            collect(text, &m.value, rest, Some(&m.key), out);
        } else if m.key == *first {
            collect(text, &m.value, rest, scope, out);
        }
    }
}

/// The text of a new entry value in the file's style: members one per line, indented one
/// step (the step the file uses, else two spaces) past the entry's own key line.
pub fn render(text: &str, entry: &RawEntry, value: &Value) -> String {
    let unit = indent_unit(text, entry);
    let mut buf = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, formatter);
    let pretty = match serde::Serialize::serialize(value, &mut ser) {
        Ok(()) => String::from_utf8(buf).unwrap_or_default(),
        Err(_) => value.to_string(),
    };
    pretty.replace('\n', &format!("\n{}", entry.indent))
}

/// The indentation step: the first member line of the entry's value, less the entry's own.
fn indent_unit(text: &str, entry: &RawEntry) -> String {
    let body = text.get(entry.span.clone()).unwrap_or("");
    for line in body.lines().skip(1) {
        let trimmed = line.trim_start_matches([' ', '\t']);
        if trimmed.is_empty() {
            continue;
        }
        let indent = &line[..line.len() - trimmed.len()];
        if let Some(step) = indent.strip_prefix(entry.indent.as_str())
            && !step.is_empty()
        {
            return step.to_string();
        }
        break;
    }
    "  ".to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reads_comments_trailing_commas_and_spans() {
        let text = "// top\n{\n  /* c */ \"servers\": {\n    \"a\": {\"command\": \"x\",}, // end\n  },\n}\n";
        let e = entries(text, &[&["servers"]]).unwrap();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].name, "a");
        assert_eq!(&text[e[0].span.clone()], "{\"command\": \"x\",}");
        assert_eq!(e[0].indent, "    ");
        assert_eq!(e[0].line, 4);
        assert_eq!(e[0].value["command"], "x");
    }

    #[test]
    fn wildcard_paths_give_a_scope() {
        let text = r#"{"projects": {"/p": {"mcpServers": {"s": {"command": "c"}}}}}"#;
        let e = entries(text, &[&["projects", "*", "mcpServers"]]).unwrap();
        assert_eq!(e[0].scope.as_deref(), Some("/p"));
    }

    #[test]
    fn errors_name_the_line() {
        let err = parse("{\n  \"a\": 1,\n  \"b\" 2\n}").unwrap_err();
        assert_eq!(err.line, 3, "{}", err.message);
        assert_eq!(parse("{\n\n /* open").unwrap_err().line, 3);
        assert_eq!(parse("{\"a\": tru}").unwrap_err().line, 1);
        assert!(parse("").is_ok());
        let deep = "[".repeat(1000);
        assert!(parse(&deep).is_err());
    }

    #[test]
    fn renders_in_the_files_indentation() {
        let text = "{\n\t\"s\": {\n\t\t\"a\": 1\n\t}\n}";
        let e = entries(text, &[&[]]).unwrap();
        let out = render(
            text,
            &e[0],
            &serde_json::json!({"command": "x", "args": ["y"]}),
        );
        assert_eq!(
            out,
            "{\n\t\t\"command\": \"x\",\n\t\t\"args\": [\n\t\t\t\"y\"\n\t\t]\n\t}"
        );
    }
}
