//! Where a server lives and how to reach it: `Endpoint` (HTTP URL or stdio command line)
//! and `ConnectOptions` (extra headers, timeouts, size bounds).
//!
//! Must not do I/O beyond reading environment variables for header values.

use std::time::Duration;

use super::capabilities::InputSupport;
use super::error::McpError;

/// A server address: `http://…`, `https://…`, or `stdio:<command line>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Http { url: String },
    Stdio { argv: Vec<String> },
}

impl Endpoint {
    /// Parse a `--server` value.
    pub fn parse(s: &str) -> Result<Endpoint, McpError> {
        let s = s.trim();
        if let Some(cmd) = s.strip_prefix("stdio:") {
            let argv = shlex::split(cmd).filter(|a| !a.is_empty()).ok_or_else(|| {
                McpError::Unsupported(format!("cannot split stdio command line {cmd:?}"))
            })?;
            return Ok(Endpoint::Stdio { argv });
        }
        let lower = s.get(..8).unwrap_or(s).to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            reqwest::Url::parse(s).map_err(|e| {
                McpError::Unsupported(format!("invalid server URL {:?}: {e}", redact_url(s)))
            })?;
            return Ok(Endpoint::Http { url: s.to_string() });
        }
        Err(McpError::Unsupported(format!(
            "server {s:?} is neither an http(s):// URL nor stdio:<command>"
        )))
    }

    /// A stable identity for the ledger and the UI (no secrets: headers are not part of it,
    /// credentials in the URL are redacted). URLs are normalised (scheme and host lower
    /// case, default port dropped), so two spellings of one address are one server.
    pub fn identity(&self) -> String {
        match self {
            Endpoint::Http { url } => {
                redact_url(&reqwest::Url::parse(url).map_or_else(|_| url.clone(), String::from))
            }
            Endpoint::Stdio { argv } => format!(
                "stdio:{}",
                shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" "))
            ),
        }
    }
}

/// A URL fit to show and store: a user name, a password, a fragment and the value of
/// every query parameter whose name looks like a credential (`api_key`, `token`,
/// `access_token`, `sig`, `password`, …) are replaced by `***`.
pub fn redact_url(url: &str) -> String {
    let Ok(mut u) = reqwest::Url::parse(url) else {
        return url.to_string();
    };
    let mut changed = false;
    if !u.username().is_empty() {
        let _ = u.set_username("***");
        changed = true;
    }
    if u.password().is_some() {
        let _ = u.set_password(Some("***"));
        changed = true;
    }
    if u.fragment().is_some_and(|f| !f.is_empty()) {
        u.set_fragment(Some("***"));
        changed = true;
    }
    let pairs: Vec<(String, String)> = u.query_pairs().into_owned().collect();
    if pairs.iter().any(|(k, _)| is_secret_param(k)) {
        let redacted: Vec<(String, String)> = pairs
            .into_iter()
            .map(|(k, v)| {
                let v = if is_secret_param(&k) { "***".into() } else { v };
                (k, v)
            })
            .collect();
        u.query_pairs_mut().clear().extend_pairs(redacted);
        changed = true;
    }
    if changed {
        u.to_string()
    } else {
        url.to_string()
    }
}

/// Query parameter names that carry credentials.
fn is_secret_param(name: &str) -> bool {
    const SECRET: [&str; 10] = [
        "token",
        "key",
        "secret",
        "pass",
        "pwd",
        "auth",
        "sig",
        "session",
        "credential",
        "jwt",
    ];
    let name = name.to_ascii_lowercase();
    SECRET.iter().any(|s| name.contains(s))
}

/// Connection settings shared by both transports.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Extra HTTP headers (already resolved; values may be secrets and are never logged).
    pub headers: Vec<(String, String)>,
    /// Deadline for one ordinary request.
    pub request_timeout: Duration,
    /// Deadline for a `tools/call` (servers without tasks may hold it open).
    pub call_timeout: Duration,
    /// TCP/TLS connect deadline.
    pub connect_timeout: Duration,
    /// A push stream silent for longer than this is treated as dead.
    pub stream_idle_timeout: Duration,
    /// How long a stdio server may stay silent on the `server/discover` probe.
    pub probe_timeout: Duration,
    /// Largest accepted message (one JSON body, SSE event or stdio line).
    pub max_message_bytes: usize,
    pub client_name: String,
    pub client_version: String,
    /// The input kinds answered for this server (declared in the client capabilities).
    pub input: InputSupport,
    /// Client capabilities that replace `input`'s in the legacy `initialize` (a proxy
    /// declares what its host answers, see `proxy::upstream_capabilities`).
    pub capabilities: Option<serde_json::Value>,
    /// OAuth sign-in for HTTP servers (none: only the static headers).
    pub auth: Option<std::sync::Arc<super::auth::Authorizer>>,
    /// Where every message to and from this server is reported (`--wire`, the wire view).
    pub wire: Option<super::wire::WireTap>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            headers: Vec::new(),
            request_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(600),
            connect_timeout: Duration::from_secs(10),
            stream_idle_timeout: Duration::from_secs(120),
            probe_timeout: Duration::from_secs(15),
            max_message_bytes: 16 * 1024 * 1024,
            client_name: "taskrail".into(),
            client_version: env!("CARGO_PKG_VERSION").into(),
            input: InputSupport::default(),
            capabilities: None,
            auth: None,
            wire: None,
        }
    }
}

impl ConnectOptions {
    /// Parse `Name: value` or `Name=value`; `${VAR}` in the value is read from the
    /// environment (so tokens stay out of command lines and files).
    pub fn parse_header(spec: &str) -> Result<(String, String), McpError> {
        Self::parse_header_with(spec, &process_env)
    }

    /// [`ConnectOptions::parse_header`] with `env` resolving `${VAR}`.
    pub fn parse_header_with(
        spec: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(String, String), McpError> {
        let (name, value) = spec
            .split_once(':')
            .or_else(|| spec.split_once('='))
            .ok_or_else(|| {
                McpError::Unsupported(format!("header {spec:?} is not `Name: value`"))
            })?;
        let name = name.trim().to_string();
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(McpError::Unsupported(format!(
                "invalid header name {name:?}"
            )));
        }
        let value =
            expand_env(value.trim(), env).map_err(|e| McpError::Unsupported(e.to_string()))?;
        Ok((name, value))
    }
}

/// Why a `${VAR}` could not be expanded (the message names the variable, never the text
/// around it: header values are secrets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpandError {
    /// The variable is not set: the value cannot be built now (a configured server with
    /// it is disabled, the others are not).
    Unset(String),
    /// The text is not a valid use of `${…}`.
    Malformed(String),
}

impl std::fmt::Display for ExpandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExpandError::Unset(var) => write!(f, "environment variable {var} is not set"),
            ExpandError::Malformed(why) => f.write_str(why),
        }
    }
}

/// Expand every `${VAR}` in `s` with `env`; errors name the variable, never the text around
/// it (which may be a secret).
pub fn expand_env(s: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| ExpandError::Malformed("`${` without a closing `}`".into()))?;
        let var = &after[..end];
        if var.is_empty() || !var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(ExpandError::Malformed(format!(
                "`${{{var}}}` is not an environment variable name"
            )));
        }
        let val = env(var).ok_or_else(|| ExpandError::Unset(var.to_string()))?;
        out.push_str(&val);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The process environment, for [`expand_env`].
pub fn process_env(var: &str) -> Option<String> {
    std::env::var(var).ok()
}

/// Encode an `Mcp-Name`/`Mcp-Param-*` value: plain visible ASCII as is, anything else
/// (non-ASCII, controls, surrounding spaces, sentinel look-alikes) as `=?base64?…?=`.
pub fn encode_header_value(v: &str) -> String {
    use base64::Engine as _;
    let plain = !v.is_empty()
        && v.bytes().all(|b| (0x20..0x7f).contains(&b))
        && v.trim() == v
        && !(v.starts_with("=?base64?") && v.ends_with("?="));
    if plain {
        v.to_string()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(v.as_bytes())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_endpoints() {
        assert_eq!(
            Endpoint::parse("http://127.0.0.1:8000/mcp").unwrap(),
            Endpoint::Http {
                url: "http://127.0.0.1:8000/mcp".into()
            }
        );
        assert_eq!(
            Endpoint::parse("stdio:python3 'my server.py' --stdio").unwrap(),
            Endpoint::Stdio {
                argv: vec!["python3".into(), "my server.py".into(), "--stdio".into()]
            }
        );
        assert!(Endpoint::parse("ftp://x").is_err());
        assert!(Endpoint::parse("stdio:").is_err());
        assert!(Endpoint::parse("http://[bad").is_err());
    }

    #[test]
    fn urls_lose_every_credential() {
        assert_eq!(
            redact_url("https://alice:pw@h.test/mcp?api_key=K1&region=eu&access_token=T2#tok"),
            "https://***:***@h.test/mcp?api_key=***&region=eu&access_token=***#***"
        );
        assert_eq!(
            redact_url("http://h.test/mcp?Token=a&X-Signature=b&apikey=c&plain=1"),
            "http://h.test/mcp?Token=***&X-Signature=***&apikey=***&plain=1"
        );
        let plain = "http://127.0.0.1:8000/mcp?x=1";
        assert_eq!(redact_url(plain), plain);
        assert_eq!(
            Endpoint::parse("http://h.test/mcp?token=s3cret")
                .unwrap()
                .identity(),
            "http://h.test/mcp?token=***"
        );
    }

    #[test]
    fn identities_are_normalised() {
        let id = |s: &str| Endpoint::parse(s).unwrap().identity();
        assert_eq!(id("HTTP://LocalHost:80/mcp"), "http://localhost/mcp");
        assert_eq!(id("http://127.0.0.1:8765/mcp"), "http://127.0.0.1:8765/mcp");
        assert_eq!(id("https://h.example"), "https://h.example/");
        assert_eq!(id("http://u:pw@h:9/x"), "http://***:***@h:9/x");
    }

    #[test]
    fn header_values_are_encoded_when_not_plain() {
        assert_eq!(encode_header_value("hello_world"), "hello_world");
        assert_eq!(encode_header_value("héllo"), "=?base64?aMOpbGxv?=");
        assert_eq!(encode_header_value(" lead"), "=?base64?IGxlYWQ=?=");
        assert_eq!(encode_header_value("a\nb"), "=?base64?YQpi?=");
        assert!(encode_header_value("=?base64?abc?=").starts_with("=?base64?PT9i"));
    }

    #[test]
    fn headers_expand_environment() {
        let env = |v: &str| (v == "TASKRAIL_TEST_TOKEN_X").then(|| "s3cret".to_string());
        let (n, v) = ConnectOptions::parse_header_with(
            "Authorization: Bearer ${TASKRAIL_TEST_TOKEN_X}",
            &env,
        )
        .unwrap();
        assert_eq!((n.as_str(), v.as_str()), ("Authorization", "Bearer s3cret"));
        let err = ConnectOptions::parse_header_with("X-A: ${MISSING}", &env).unwrap_err();
        assert!(err.to_string().contains("MISSING"), "{err}");
        assert!(ConnectOptions::parse_header("no separator").is_err());
    }
}
