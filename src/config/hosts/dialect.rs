//! How each host spells a server entry: reading one (stdio `command`/`cmd` + `args` or a
//! command array, `env`/`envs`/`environment`; HTTP `url`/`httpUrl`/`uri` + `headers`/
//! `http_headers`, told apart by `type`/`transport` where the host has one) and writing the
//! stdio entry that runs `taskrail proxy` in the same host's spelling.
//!
//! Must not decide what a wrapped entry runs (that is `wrap`), nor touch text or files.

use serde_json::{Map, Value};

use super::Host;

/// The name of the environment variable that marks an entry as wrapped and holds the
/// original entry's exact text (base64).
pub const STASH_VAR: &str = "TASKRAIL_WRAPPED";

/// What kind of server an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Stdio,
    /// Streamable HTTP.
    Http,
    /// The legacy HTTP+SSE transport.
    Sse,
    /// Something else (goose's `builtin`, an unknown `type`, no command nor URL).
    Other(String),
}

impl Kind {
    pub fn name(&self) -> &str {
        match self {
            Kind::Stdio => "stdio",
            Kind::Http => "http",
            Kind::Sse => "sse",
            Kind::Other(s) => s,
        }
    }
}

/// One entry, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    pub kind: Kind,
    /// The stdio command line.
    pub argv: Vec<String>,
    /// The stdio environment (as written; values are usually strings).
    pub env: Map<String, Value>,
    pub url: Option<String>,
    pub headers: Vec<(String, String)>,
    /// The original entry's text, base64 (present: the entry was wrapped by taskrail).
    pub stash: Option<String>,
    /// Why taskrail cannot wrap this entry, if it cannot.
    pub refused: Option<String>,
}

/// The keys that say how a server is reached; a wrapped entry replaces them all.
const TRANSPORT_KEYS: &[&str] = &[
    "type",
    "transport",
    "command",
    "args",
    "cmd",
    "env",
    "envs",
    "environment",
    "url",
    "httpUrl",
    "uri",
    "serverUrl",
    "headers",
    "http_headers",
];

fn env_key(host: Host) -> &'static str {
    match host {
        Host::Goose => "envs",
        Host::OpenCode => "environment",
        _ => "env",
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|s| match s {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Read one entry.
pub fn read(host: Host, entry: &Value) -> Server {
    let empty = Map::new();
    let e = entry.as_object().unwrap_or(&empty);
    let str_of = |k: &str| e.get(k).and_then(Value::as_str);
    let ty = str_of("type")
        .or_else(|| str_of("transport"))
        .map(str::to_ascii_lowercase);
    let mut argv = Vec::new();
    let mut env = e
        .get(env_key(host))
        .or_else(|| e.get("env"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    match e.get("command").or_else(|| e.get("cmd")) {
        Some(Value::String(c)) => {
            argv.push(c.clone());
            argv.extend(strings(e.get("args")));
        }
        Some(Value::Array(_)) => argv = strings(e.get("command")),
        // Zed's older `"command": {"path", "args", "env"}`.
        Some(Value::Object(c)) => {
            if let Some(p) = c.get("path").and_then(Value::as_str) {
                argv.push(p.to_string());
                argv.extend(strings(c.get("args")));
            }
            if let Some(Value::Object(m)) = c.get("env") {
                env = m.clone();
            }
        }
        _ => {}
    }
    let http_url = str_of("httpUrl");
    let url = http_url
        .or_else(|| str_of("url"))
        .or_else(|| str_of("uri"))
        .or_else(|| str_of("serverUrl"))
        .map(str::to_string);
    let mut refused = None;
    let mut headers = Vec::new();
    if let Some(h) = e.get("headers").or_else(|| e.get("http_headers")) {
        match h.as_object() {
            Some(map) => {
                for (k, v) in map {
                    match v.as_str() {
                        Some(v) => headers.push((k.clone(), v.to_string())),
                        None => refused = Some(format!("header {k:?} is not text")),
                    }
                }
            }
            None => refused = Some("its headers are not a map".into()),
        }
    }
    let kind = match ty.as_deref() {
        Some("sse") => Kind::Sse,
        Some("http" | "streamable_http" | "streamable-http" | "streamablehttp" | "remote") => {
            Kind::Http
        }
        Some("stdio" | "local") => Kind::Stdio,
        Some(other) if argv.is_empty() => Kind::Other(other.to_string()),
        _ if !argv.is_empty() => Kind::Stdio,
        // Gemini CLI: `httpUrl` is Streamable HTTP, a bare `url` is its SSE transport.
        _ if host == Host::Gemini && http_url.is_none() && url.is_some() => Kind::Sse,
        _ if url.is_some() => Kind::Http,
        _ => Kind::Other("unknown".into()),
    };
    let stash = env
        .get(STASH_VAR)
        .and_then(Value::as_str)
        .map(str::to_string);
    match kind {
        Kind::Stdio if argv.is_empty() => refused = Some("it has no command".into()),
        Kind::Http if url.is_none() => refused = Some("it has no URL".into()),
        Kind::Sse => {
            refused = Some(
                "it uses the legacy HTTP+SSE transport; taskrail proxy speaks Streamable HTTP"
                    .into(),
            )
        }
        Kind::Other(ref t) => {
            refused = Some(format!("its type {t:?} is not a server taskrail can start"))
        }
        _ => {}
    }
    if host == Host::Codex
        && kind == Kind::Http
        && (e.contains_key("bearer_token_env_var") || e.contains_key("env_http_headers"))
    {
        refused = Some(
            "its headers come from environment variables (bearer_token_env_var, \
             env_http_headers), which taskrail does not carry over yet"
                .into(),
        );
    }
    Server {
        kind,
        argv,
        env,
        url,
        headers,
        stash,
        refused,
    }
}

/// The stdio entry running `command args…` with `env`, in `host`'s spelling: the original's
/// other keys (timeouts, `enabled`, names, …) stay where they were; the transport keys are
/// replaced, at the place of the first of them.
pub fn stdio_entry(
    host: Host,
    original: &Value,
    command: &str,
    args: &[String],
    env: Map<String, Value>,
) -> Value {
    let empty = Map::new();
    let e = original.as_object().unwrap_or(&empty);
    let mut fields = Map::new();
    let had_type = e.contains_key("type");
    match host {
        Host::OpenCode => {
            fields.insert("type".into(), "local".into());
        }
        Host::VsCode | Host::Goose => {
            fields.insert("type".into(), "stdio".into());
        }
        _ if had_type => {
            fields.insert("type".into(), "stdio".into());
        }
        _ => {}
    }
    let args_json: Vec<Value> = args.iter().cloned().map(Value::String).collect();
    match host {
        Host::OpenCode => {
            let mut all = vec![Value::String(command.to_string())];
            all.extend(args_json);
            fields.insert("command".into(), Value::Array(all));
        }
        Host::Goose => {
            fields.insert("cmd".into(), command.into());
            fields.insert("args".into(), Value::Array(args_json));
        }
        _ => {
            fields.insert("command".into(), command.into());
            fields.insert("args".into(), Value::Array(args_json));
        }
    }
    fields.insert(env_key(host).into(), Value::Object(env));
    let mut out = Map::new();
    let mut pending = Some(fields);
    for (k, v) in e {
        if TRANSPORT_KEYS.contains(&k.as_str()) {
            if let Some(f) = pending.take() {
                out.extend(f);
            }
        } else {
            out.insert(k.clone(), v.clone());
        }
    }
    if let Some(f) = pending {
        let mut front = f;
        front.extend(out);
        out = front;
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_each_hosts_spelling() {
        let s = read(
            Host::ClaudeCode,
            &json!({"command": "npx", "args": ["-y", "x"], "env": {"A": "b"}}),
        );
        assert_eq!(
            (s.kind.clone(), s.argv.clone()),
            (Kind::Stdio, vec!["npx".into(), "-y".into(), "x".into()])
        );
        assert_eq!(s.env["A"], "b");
        let s = read(
            Host::ClaudeCode,
            &json!({"type": "http", "url": "https://a/mcp", "headers": {"K": "v"}}),
        );
        assert_eq!(
            (s.kind, s.headers),
            (Kind::Http, vec![("K".into(), "v".into())])
        );
        let s = read(
            Host::OpenCode,
            &json!({"type": "local", "command": ["a", "b"], "environment": {"X": "1"}}),
        );
        assert_eq!(
            (s.argv, s.env["X"].clone()),
            (vec!["a".into(), "b".into()], json!("1"))
        );
        assert_eq!(
            read(
                Host::OpenCode,
                &json!({"type": "remote", "url": "https://a"})
            )
            .kind,
            Kind::Http
        );
        let s = read(
            Host::Goose,
            &json!({"type": "stdio", "cmd": "uvx", "args": ["m"], "envs": {"T": "t"}}),
        );
        assert_eq!((s.argv.len(), s.env["T"].clone()), (2, json!("t")));
        assert_eq!(
            read(
                Host::Goose,
                &json!({"type": "streamable_http", "uri": "https://a"})
            )
            .kind,
            Kind::Http
        );
        assert!(
            read(Host::Goose, &json!({"type": "sse", "uri": "https://a"}))
                .refused
                .is_some()
        );
        assert!(matches!(
            read(
                Host::Goose,
                &json!({"type": "builtin", "name": "developer"})
            )
            .kind,
            Kind::Other(_)
        ));
        assert_eq!(
            read(Host::Gemini, &json!({"httpUrl": "https://a"})).kind,
            Kind::Http
        );
        assert_eq!(
            read(Host::Gemini, &json!({"url": "https://a/sse"})).kind,
            Kind::Sse
        );
        assert_eq!(
            read(
                Host::Codex,
                &json!({"url": "https://a", "http_headers": {"K": "v"}})
            )
            .headers
            .len(),
            1
        );
        assert!(
            read(
                Host::Codex,
                &json!({"url": "https://a", "bearer_token_env_var": "T"})
            )
            .refused
            .is_some()
        );
        let s = read(
            Host::Zed,
            &json!({"command": {"path": "p", "args": ["a"], "env": {"E": "1"}}}),
        );
        assert_eq!((s.argv.len(), s.env.len()), (2, 1));
    }

    #[test]
    fn writes_in_the_hosts_spelling_keeping_other_keys_in_place() {
        let env = Map::from_iter([("K".to_string(), json!("v"))]);
        let out = stdio_entry(
            Host::Gemini,
            &json!({"timeout": 5, "httpUrl": "https://a", "headers": {}, "trust": true}),
            "/t",
            &["proxy".into()],
            env.clone(),
        );
        assert_eq!(
            out.to_string(),
            r#"{"timeout":5,"command":"/t","args":["proxy"],"env":{"K":"v"},"trust":true}"#
        );
        let out = stdio_entry(
            Host::OpenCode,
            &json!({"type": "remote", "url": "u", "enabled": true}),
            "/t",
            &["p".into()],
            env.clone(),
        );
        assert_eq!(
            out.to_string(),
            r#"{"type":"local","command":["/t","p"],"environment":{"K":"v"},"enabled":true}"#
        );
        let out = stdio_entry(
            Host::Goose,
            &json!({"name": "n", "type": "streamable_http", "uri": "u"}),
            "/t",
            &[],
            env,
        );
        assert_eq!(
            out.to_string(),
            r#"{"name":"n","type":"stdio","cmd":"/t","args":[],"envs":{"K":"v"}}"#
        );
    }
}
