//! Agent hosts' MCP server lists (Claude Code, Claude Desktop, Cursor, VS Code, Codex,
//! Gemini CLI, goose, Zed, OpenCode): where each host keeps them (`catalogue`), reading an
//! entry in each host's spelling (`dialect`), and wrapping an entry so the host starts
//! `taskrail proxy` in front of the original server, or unwrapping it (`wrap`). Pure text in,
//! text out: must not touch files, the terminal or the network (that is `cli::hosts`).
//!
//! **Format-preserving.** A file is never re-serialised: each format's reader (`jsonc`,
//! `toml` with `toml_edit`'s spans, `yaml` with `saphyr-parser`'s positions) gives the byte
//! span of every entry's value, and an edit replaces exactly those bytes. Comments, key order
//! and formatting elsewhere are untouched; the result is parsed again before it is returned.
//!
//! **How unwrap recovers the original.** A wrapped entry carries the original entry's exact
//! text (the bytes of its span), base64, in its environment as `TASKRAIL_WRAPPED` (`env`,
//! goose's `envs`, OpenCode's `environment`). That variable is also the mark of a wrapped
//! entry: wrapping skips it (so wrapping twice changes nothing) and listings show it as going
//! through taskrail. Unwrap puts the stored text back in place of the wrapped entry's span, so
//! a file that was only wrapped comes back byte for byte. Edits made by hand to a wrapped
//! entry are lost on unwrap (the stored original wins).
//!
//! **How headers travel.** A wrapped HTTP entry becomes a stdio entry running `taskrail proxy
//! URL`; its headers go, as a JSON object, into the entry's environment as
//! `TASKRAIL_PROXY_HEADERS`, which the proxy merges into the upstream's headers. Secrets stay
//! in the host's file (never on a command line, never in taskrail's files).

mod catalogue;
mod dialect;
mod jsonc;
mod toml;
mod wrap;
mod yaml;

pub use catalogue::{Format, Host, HostFile, Scope, host_files};
pub use dialect::{Kind, STASH_VAR, Server, read};
pub use wrap::{
    HEADERS_VAR, Outcome, Proxy, Report, stdio_upstream, unwrap, wrap, wrapped_upstream,
};

use std::ops::Range;
use std::path::Path;

use serde_json::Value;

/// Why a file could not be read (the line is 1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// One server entry as found in a file.
#[derive(Debug, Clone)]
pub struct RawEntry {
    /// The server's key.
    pub name: String,
    /// The key the entry sits under when a file has several lists (a Claude Code project).
    pub scope: Option<String>,
    /// The entry, read.
    pub value: Value,
    /// The bytes an edit replaces.
    pub span: Range<usize>,
    /// The indentation of the entry's key line.
    pub indent: String,
    /// The 1-based line of the entry's key.
    pub line: usize,
}

/// The 1-based line of a byte offset.
pub(crate) fn line_of(text: &str, at: usize) -> usize {
    let at = at.min(text.len());
    text.as_bytes()[..at]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// The leading spaces and tabs of the line holding `at`.
pub(crate) fn line_indent(text: &str, at: usize) -> String {
    let at = at.min(text.len());
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    text[start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect()
}

/// Every server entry of a host file, in file order.
pub fn read_entries(host: Host, path: &Path, text: &str) -> Result<Vec<RawEntry>, ParseError> {
    let containers = host.containers(path);
    let mut entries = match host.format() {
        Format::Jsonc => jsonc::entries(text, containers)?,
        Format::Toml => toml::entries(text, containers)?,
        Format::Yaml => yaml::entries(text, containers)?,
    };
    // A list inside another list's map (OpenCode's `mcp.servers` under `mcp`) is a
    // container, not a server.
    let spans: Vec<Range<usize>> = entries.iter().map(|e| e.span.clone()).collect();
    entries.retain(|e| {
        !spans
            .iter()
            .any(|s| *s != e.span && e.span.start <= s.start && s.end <= e.span.end)
    });
    entries.sort_by_key(|e| e.span.start);
    Ok(entries)
}

/// The text of a new entry value, in the file's format and style.
pub fn render(format: Format, text: &str, entry: &RawEntry, value: &Value) -> String {
    match format {
        Format::Jsonc => jsonc::render(text, entry, value),
        Format::Toml => toml::render(text, entry, value),
        Format::Yaml => yaml::render(text, entry, value),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn opencode_reads_both_layouts() {
        let p = Path::new("/p/opencode.json");
        let v1 = r#"{"mcp": {"a": {"type": "local", "command": ["x"]}}}"#;
        let v2 = r#"{"mcp": {"servers": {"a": {"type": "local", "command": ["x"]}}}}"#;
        for text in [v1, v2] {
            let e = read_entries(Host::OpenCode, p, text).unwrap();
            assert_eq!(
                e.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
                ["a"],
                "{text}"
            );
        }
    }

    #[test]
    fn lines_and_indents() {
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_indent("x\n\t  y", 5), "\t  ");
    }
}
