//! Documents as lines: the kinds of line a view shows (`LineKind`), a line of text with its
//! kind (`DocLine`), and the builders every view shares — words wrapped, JSON pretty-printed
//! within a byte budget, a tool result's content blocks (text, structured JSON, media
//! placeholders, resource links), sizes in words. Sanitized and bounded: large payloads are
//! cut before any work. Must not know any view or render.

use std::io::{self, Write};

use serde_json::Value;

use crate::sanitize::{sanitize_block, sanitize_line};
use crate::state::widths;

/// Lines kept per text block.
const MAX_BLOCK_LINES: usize = 400;
/// Columns kept per line (views wrap what is kept).
pub const MAX_COLS: usize = 400;
/// Bytes of pretty JSON produced at most.
const MAX_JSON_BYTES: usize = 64 * 1024;

/// How a line is styled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Heading,
    /// A heading inside a section (a content block).
    SubHeading,
    /// `label: value`.
    Field,
    Body,
    Code,
    Dim,
    Error,
    Link,
}

/// One line of a document; `text` is already sanitized.
#[derive(Debug, Clone, PartialEq)]
pub struct DocLine {
    pub kind: LineKind,
    pub label: Option<String>,
    pub text: String,
}

impl DocLine {
    pub fn new(kind: LineKind, text: impl Into<String>) -> DocLine {
        DocLine {
            kind,
            label: None,
            text: text.into(),
        }
    }

    pub fn field(label: &str, value: impl AsRef<str>) -> DocLine {
        DocLine {
            kind: LineKind::Field,
            label: Some(label.to_string()),
            text: sanitize_line(value.as_ref(), MAX_COLS),
        }
    }
}

struct Limited {
    buf: Vec<u8>,
    limit: usize,
}

impl Write for Limited {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.len() + data.len() > self.limit {
            return Err(io::Error::other("limit"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Break `text` into lines of at most `width` characters at spaces (a longer word gets a
/// line of its own).
pub fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let last = lines.last_mut().expect("never empty");
        if !last.is_empty() && last.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

/// Pretty JSON, cut after `MAX_JSON_BYTES` and `max_lines` lines.
pub fn json_lines(v: &Value, max_lines: usize) -> Vec<DocLine> {
    let mut w = Limited {
        buf: Vec::new(),
        limit: MAX_JSON_BYTES,
    };
    let cut = serde_json::to_writer_pretty(&mut w, v).is_err();
    let text = String::from_utf8_lossy(&w.buf);
    let mut lines: Vec<DocLine> = sanitize_block(&text, max_lines, MAX_COLS)
        .into_iter()
        .map(|l| DocLine::new(LineKind::Code, l))
        .collect();
    if cut {
        lines.push(DocLine::new(
            LineKind::Dim,
            format!("… (JSON cut at {})", human_bytes(MAX_JSON_BYTES as u64)),
        ));
    }
    lines
}

/// `1.5 KB`, `10.0 MB`.
pub fn human_bytes(n: u64) -> String {
    match n {
        n if n < 1024 => format!("{n} B"),
        n if n < 1024 * 1024 => format!("{:.1} KB", n as f64 / 1024.0),
        n => format!("{:.1} MB", n as f64 / (1024.0 * 1024.0)),
    }
}

fn base64_size(data: &str) -> u64 {
    let trimmed = data.trim_end_matches('=');
    (trimmed.len() as u64 * 3) / 4
}

/// The content blocks of a `CallToolResult` (and its `structuredContent`).
pub fn result_lines(result: &Value) -> Vec<DocLine> {
    let mut out = Vec::new();
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        out.push(DocLine::new(
            LineKind::Error,
            "The tool reported an error (isError: true)",
        ));
    }
    let blocks = result.get("content").and_then(Value::as_array);
    for (i, block) in blocks.into_iter().flatten().enumerate() {
        let ty = block.get("type").and_then(Value::as_str).unwrap_or("?");
        let mime = block
            .get("mimeType")
            .or_else(|| block.pointer("/resource/mimeType"))
            .and_then(Value::as_str)
            .map(|m| sanitize_line(m, widths::METHOD_IN_VIEW))
            .unwrap_or_else(|| "unknown type".to_string());
        let heading = |s: String| DocLine::new(LineKind::SubHeading, format!("[{}] {s}", i + 1));
        match ty {
            "text" => {
                let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                out.push(heading(format!("text, {}", human_bytes(text.len() as u64))));
                out.extend(text_lines(text));
            }
            "image" | "audio" => {
                let data = block.get("data").and_then(Value::as_str).unwrap_or("");
                out.push(heading(format!(
                    "{ty} ({mime}, {})",
                    human_bytes(base64_size(data))
                )));
                out.push(DocLine::new(LineKind::Dim, format!("<{ty} not shown>")));
            }
            "resource" => {
                let res = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = res.get("uri").and_then(Value::as_str).unwrap_or("");
                out.push(heading(format!("embedded resource ({mime})")));
                out.push(DocLine::new(LineKind::Link, sanitize_line(uri, MAX_COLS)));
                if let Some(text) = res.get("text").and_then(Value::as_str) {
                    out.extend(text_lines(text));
                } else if let Some(blob) = res.get("blob").and_then(Value::as_str) {
                    out.push(DocLine::new(
                        LineKind::Dim,
                        format!("<binary, {}>", human_bytes(base64_size(blob))),
                    ));
                }
            }
            "resource_link" => {
                let uri = block.get("uri").and_then(Value::as_str).unwrap_or("");
                let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                out.push(heading(format!("resource link ({mime})")));
                if !name.is_empty() {
                    out.push(DocLine::field("name", name));
                }
                out.push(DocLine::new(LineKind::Link, sanitize_line(uri, MAX_COLS)));
            }
            other => {
                out.push(heading(format!(
                    "{} block",
                    sanitize_line(other, widths::LABEL)
                )));
                out.extend(json_lines(block, 40));
            }
        }
    }
    if let Some(s) = result.get("structuredContent") {
        out.push(DocLine::new(LineKind::SubHeading, "structuredContent"));
        out.extend(json_lines(s, MAX_BLOCK_LINES));
    }
    if blocks.is_none() && result.get("structuredContent").is_none() {
        out.push(DocLine::new(LineKind::SubHeading, "result (raw JSON)"));
        out.extend(json_lines(result, MAX_BLOCK_LINES));
    }
    out
}

fn text_lines(text: &str) -> Vec<DocLine> {
    let mut lines: Vec<DocLine> = sanitize_block(text, MAX_BLOCK_LINES, MAX_COLS)
        .into_iter()
        .map(|l| DocLine::new(LineKind::Body, l))
        .collect();
    if text.len() > 256 * 1024 || lines.len() > MAX_BLOCK_LINES {
        lines.push(DocLine::new(
            LineKind::Dim,
            format!(
                "… ({} in total; truncated for display: `taskrail get ID` prints it whole)",
                human_bytes(text.len() as u64)
            ),
        ));
    }
    lines
}
