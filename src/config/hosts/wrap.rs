//! The wrap/unwrap rule, on a file's text: which entries change, what a wrapped entry runs
//! (`<taskrail> --db <ledger> proxy <upstream>`), where an HTTP entry's headers go
//! (`TASKRAIL_PROXY_HEADERS` in the entry's environment) and how the original comes back
//! (its exact text, base64, in `TASKRAIL_WRAPPED`). Every edit replaces one entry's bytes;
//! the result is parsed again before it is returned, so a bad edit is never written.
//!
//! Must not touch files or the terminal.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::dialect::{self, Kind, STASH_VAR, Server};
use super::{Host, ParseError, RawEntry};

/// The environment variable `taskrail proxy` reads extra upstream headers from (a JSON
/// object of header name to value).
pub const HEADERS_VAR: &str = "TASKRAIL_PROXY_HEADERS";

/// What a wrapped entry runs: this taskrail and the ledger it should use.
#[derive(Debug, Clone)]
pub struct Proxy {
    /// The absolute path of the taskrail binary.
    pub exe: String,
    /// The absolute path of the ledger file (hosts start servers in a pruned environment,
    /// so the proxy is told its ledger rather than left to find it).
    pub db: String,
}

/// What happened to one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Wrapped,
    Unwrapped,
    /// Nothing to do (already wrapped, or not wrapped when unwrapping).
    Unchanged,
    /// Cannot be wrapped or unwrapped, with why.
    Refused(String),
}

/// One entry's outcome.
#[derive(Debug, Clone)]
pub struct Report {
    pub name: String,
    pub scope: Option<String>,
    pub outcome: Outcome,
}

/// The `stdio:` upstream of a command line, quoted so `Endpoint::parse` splits it back.
pub fn stdio_upstream(argv: &[String]) -> Result<String, String> {
    shlex::try_join(argv.iter().map(String::as_str))
        .map(|line| format!("stdio:{line}"))
        .map_err(|e| format!("its command line cannot be quoted: {e}"))
}

/// The upstream a wrapped entry's arguments name (their last one), for listings.
pub fn wrapped_upstream(server: &Server) -> Option<&str> {
    server.argv.last().map(String::as_str)
}

fn wrapped_value(
    host: Host,
    proxy: &Proxy,
    entry: &RawEntry,
    original_text: &str,
    server: &Server,
) -> Result<Value, String> {
    if let Some(why) = &server.refused {
        return Err(why.clone());
    }
    let upstream = match server.kind {
        Kind::Stdio => stdio_upstream(&server.argv)?,
        Kind::Http => server.url.clone().ok_or("it has no URL")?,
        _ => return Err(format!("a {} server cannot be wrapped", server.kind.name())),
    };
    let mut env: Map<String, Value> = server.env.clone();
    if server.kind == Kind::Http && !server.headers.is_empty() {
        let headers: Map<String, Value> = server
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        env.insert(
            HEADERS_VAR.into(),
            Value::String(Value::Object(headers).to_string()),
        );
    }
    env.insert(
        STASH_VAR.into(),
        Value::String(base64::engine::general_purpose::STANDARD.encode(original_text)),
    );
    let args = vec![
        "--db".to_string(),
        proxy.db.clone(),
        "proxy".to_string(),
        upstream,
    ];
    Ok(dialect::stdio_entry(
        host,
        &entry.value,
        &proxy.exe,
        &args,
        env,
    ))
}

fn selected(entry: &RawEntry, only: &[String]) -> bool {
    only.is_empty() || only.contains(&entry.name)
}

/// Apply `edits` (span, new text) from the end of the text backwards.
fn apply(text: &str, mut edits: Vec<(std::ops::Range<usize>, String)>) -> String {
    edits.sort_by_key(|(span, _)| std::cmp::Reverse(span.start));
    let mut out = text.to_string();
    for (span, new) in edits {
        out.replace_range(span, &new);
    }
    out
}

/// The edited text must still parse, with the same entries in the same order.
fn check(
    host: Host,
    path: &std::path::Path,
    before: &[RawEntry],
    after: &str,
) -> Result<(), ParseError> {
    let again = super::read_entries(host, path, after).map_err(|e| ParseError {
        line: e.line,
        message: format!(
            "the edit would break the file ({}); nothing was written",
            e.message
        ),
    })?;
    let names = |v: &[RawEntry]| {
        v.iter()
            .map(|e| (e.name.clone(), e.scope.clone()))
            .collect::<Vec<_>>()
    };
    if names(&again) != names(before) {
        return Err(ParseError {
            line: 1,
            message: "the edit would change which servers the file has; nothing was written".into(),
        });
    }
    Ok(())
}

/// Wrap the selected entries (`only` empty: all) of one file.
pub fn wrap(
    host: Host,
    path: &std::path::Path,
    text: &str,
    proxy: &Proxy,
    only: &[String],
) -> Result<(String, Vec<Report>), ParseError> {
    let entries = super::read_entries(host, path, text)?;
    let mut edits = Vec::new();
    let mut reports = Vec::new();
    for entry in entries.iter().filter(|e| selected(e, only)) {
        let server = dialect::read(host, &entry.value);
        let outcome = if server.stash.is_some() {
            Outcome::Unchanged
        } else {
            let original = &text[entry.span.clone()];
            match wrapped_value(host, proxy, entry, original, &server) {
                Ok(value) => {
                    edits.push((
                        entry.span.clone(),
                        super::render(host.format(), text, entry, &value),
                    ));
                    Outcome::Wrapped
                }
                Err(why) => Outcome::Refused(why),
            }
        };
        reports.push(Report {
            name: entry.name.clone(),
            scope: entry.scope.clone(),
            outcome,
        });
    }
    let out = apply(text, edits);
    check(host, path, &entries, &out)?;
    Ok((out, reports))
}

/// Put back the originals of the selected wrapped entries (`only` empty: all).
pub fn unwrap(
    host: Host,
    path: &std::path::Path,
    text: &str,
    only: &[String],
) -> Result<(String, Vec<Report>), ParseError> {
    let entries = super::read_entries(host, path, text)?;
    let mut edits = Vec::new();
    let mut reports = Vec::new();
    for entry in entries.iter().filter(|e| selected(e, only)) {
        let server = dialect::read(host, &entry.value);
        let outcome = match &server.stash {
            None => Outcome::Unchanged,
            Some(stash) => match base64::engine::general_purpose::STANDARD
                .decode(stash)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
            {
                Some(original) => {
                    edits.push((entry.span.clone(), original));
                    Outcome::Unwrapped
                }
                None => {
                    Outcome::Refused(format!("its {STASH_VAR} is not the text taskrail stored"))
                }
            },
        };
        reports.push(Report {
            name: entry.name.clone(),
            scope: entry.scope.clone(),
            outcome,
        });
    }
    let out = apply(text, edits);
    check(host, path, &entries, &out)?;
    Ok((out, reports))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::path::Path;

    fn proxy() -> Proxy {
        Proxy {
            exe: "/opt/taskrail".into(),
            db: "/home/u/ledger db/ledger.db".into(),
        }
    }

    fn round_trip(host: Host, file: &str, text: &str) {
        let path = Path::new(file);
        let (wrapped, reports) = wrap(host, path, text, &proxy(), &[]).unwrap();
        assert_ne!(wrapped, text, "{host:?}: nothing wrapped");
        assert!(
            reports.iter().any(|r| r.outcome == Outcome::Wrapped),
            "{reports:?}"
        );
        let (twice, _) = wrap(host, path, &wrapped, &proxy(), &[]).unwrap();
        assert_eq!(twice, wrapped, "{host:?}: wrapping twice changed it");
        for e in read_wrapped(host, path, &wrapped) {
            assert_eq!(e.argv[0], "/opt/taskrail");
            assert_eq!(
                &e.argv[1..4],
                ["--db", "/home/u/ledger db/ledger.db", "proxy"]
            );
        }
        let (back, _) = unwrap(host, path, &wrapped, &[]).unwrap();
        assert_eq!(back, text, "{host:?}: unwrap is not byte for byte");
    }

    fn read_wrapped(host: Host, path: &Path, text: &str) -> Vec<Server> {
        super::super::read_entries(host, path, text)
            .unwrap()
            .iter()
            .map(|e| dialect::read(host, &e.value))
            .filter(|s| s.stash.is_some())
            .collect()
    }

    #[test]
    fn every_format_round_trips() {
        round_trip(
            Host::ClaudeCode,
            "/h/.claude.json",
            "{\n  \"x\": 1,\n  \"mcpServers\": {\n    \"a\": { \"command\": \"npx\", \"args\": [\"my server.js\"] },\n    \"b\": {\"type\": \"http\", \"url\": \"https://b/mcp\", \"headers\": {\"Authorization\": \"Bearer s\"}}\n  },\n  \"projects\": {\"/p\": {\"mcpServers\": {\"c\": {\"command\": \"c\"}}}}\n}\n",
        );
        round_trip(
            Host::VsCode,
            "/p/.vscode/mcp.json",
            "// servers\n{\n\t\"servers\": {\n\t\t\"a\": {\n\t\t\t\"type\": \"stdio\", // local\n\t\t\t\"command\": \"uvx\",\n\t\t\t\"args\": [\"m\",],\n\t\t},\n\t},\n}\n",
        );
        round_trip(
            Host::Codex,
            "/h/.codex/config.toml",
            "model = \"o3\"\n\n[mcp_servers.a]\ncommand = \"npx\"\nargs = [\"-y\", \"a\"]\n\n[mcp_servers.a.env]\nK = \"v\"\n\n# remote\n[mcp_servers.b]\nurl = \"https://b/mcp\"\nhttp_headers = { \"X-Key\" = \"k\" }\n",
        );
        round_trip(
            Host::Goose,
            "/h/.config/goose/config.yaml",
            "extensions:\n  a:\n    cmd: npx\n    args: [-y, a]\n    envs: {}\n    type: stdio\n  b:\n    type: streamable_http\n    uri: https://b/mcp\n    headers:\n      X-Key: k\n# end\nGOOSE_MODEL: m\n",
        );
        round_trip(
            Host::OpenCode,
            "/p/opencode.json",
            "{\n  \"mcp\": {\n    \"a\": {\"type\": \"local\", \"command\": [\"bun\", \"x\"], \"environment\": {\"K\": \"v\"}},\n    \"b\": {\"type\": \"remote\", \"url\": \"https://b\", \"headers\": {\"K\": \"v\"}}\n  }\n}\n",
        );
    }

    #[test]
    fn http_headers_travel_in_the_environment_not_the_arguments() {
        let text = r#"{"mcpServers": {"b": {"type": "http", "url": "https://b/mcp", "headers": {"Authorization": "Bearer s3cret"}}}}"#;
        let path = Path::new("/h/.claude.json");
        let (wrapped, _) = wrap(Host::ClaudeCode, path, text, &proxy(), &[]).unwrap();
        let s = &read_wrapped(Host::ClaudeCode, path, &wrapped)[0];
        assert!(s.argv.iter().all(|a| !a.contains("s3cret")));
        assert_eq!(s.argv.last().map(String::as_str), Some("https://b/mcp"));
        let headers: Value = serde_json::from_str(s.env[HEADERS_VAR].as_str().unwrap()).unwrap();
        assert_eq!(headers["Authorization"], "Bearer s3cret");
    }

    #[test]
    fn only_named_servers_change_and_refusals_are_reported() {
        let text = r#"{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}, "s": {"type": "sse", "url": "https://s"}}}"#;
        let path = Path::new("/h/.cursor/mcp.json");
        let (out, reports) = wrap(
            Host::Cursor,
            path,
            text,
            &proxy(),
            &["b".into(), "s".into()],
        )
        .unwrap();
        assert!(out.contains(r#""a": {"command": "a"}"#));
        assert_eq!(reports.len(), 2);
        assert!(matches!(reports[1].outcome, Outcome::Refused(_)));
        let s = &read_wrapped(Host::Cursor, path, &out)[0];
        assert_eq!(s.argv.last().map(String::as_str), Some("stdio:b"));
        assert_eq!(
            stdio_upstream(&["python3".into(), "my server.py".into()]).unwrap(),
            "stdio:python3 'my server.py'"
        );
    }
}
