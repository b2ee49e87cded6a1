//! `TASKRAIL_PROXY_HEADERS`: extra upstream headers for `taskrail proxy`, given as a JSON
//! object (header name → value) in its environment. A host entry wrapped by `taskrail hosts
//! wrap` carries an HTTP server's headers this way, so secrets never go on a command line.
//!
//! Owns reading and checking that variable and merging it into the upstream's headers (a
//! name given there replaces the same header from the config). Must not print or log a
//! header value, nor read any other variable.

use super::args::exit;
use super::{CliResult, fail};
use crate::config::hosts::HEADERS_VAR;
use crate::engine::ServerSpec;

/// Merge the variable's headers into `spec`; a malformed value is a usage error (said).
pub fn apply(spec: &mut ServerSpec) -> CliResult<()> {
    let raw = std::env::var_os(HEADERS_VAR);
    let raw = match raw.as_deref().map(|v| v.to_str()) {
        None => return Ok(()),
        Some(Some(s)) => s,
        Some(None) => {
            return Err(fail(
                &format!("{HEADERS_VAR} is not UTF-8 text"),
                exit::USAGE,
            ));
        }
    };
    merge(spec, raw).map_err(|e| fail(&e, exit::USAGE))
}

/// Parse `raw` and merge it into `spec`'s connect options.
pub fn merge(spec: &mut ServerSpec, raw: &str) -> Result<(), String> {
    if raw.trim().is_empty() {
        return Ok(());
    }
    let parsed: serde_json::Value = serde_json::from_str(raw).map_err(|e| {
        format!(
            "{HEADERS_VAR} is not a JSON object of header names to values (line {}, column {})",
            e.line(),
            e.column()
        )
    })?;
    let serde_json::Value::Object(map) = parsed else {
        return Err(format!(
            "{HEADERS_VAR} must be a JSON object of header names to values"
        ));
    };
    for (name, value) in map {
        if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(format!(
                "{HEADERS_VAR}: {} is not a valid header name",
                crate::sanitize::sanitize_line(&format!("{name:?}"), 80)
            ));
        }
        let Some(value) = value.as_str() else {
            return Err(format!(
                "{HEADERS_VAR}: the value of header {name} is not text"
            ));
        };
        if http::HeaderValue::from_str(value).is_err() {
            return Err(format!(
                "{HEADERS_VAR}: the value of header {name} is not a valid header value \
                 (control characters or line breaks)"
            ));
        }
        let headers = &mut spec.options.headers;
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
        headers.push((name, value.to_string()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::mcp::{ConnectOptions, Endpoint};

    fn spec() -> ServerSpec {
        let mut options = ConnectOptions::default();
        options.headers.push(("authorization".into(), "old".into()));
        ServerSpec::new(Endpoint::parse("https://a.example/mcp").unwrap(), options)
    }

    #[test]
    fn merges_and_replaces_headers() {
        let mut s = spec();
        merge(&mut s, r#"{"Authorization": "Bearer t", "X-Key": "k"}"#).unwrap();
        assert_eq!(
            s.options.headers,
            [
                ("Authorization".to_string(), "Bearer t".to_string()),
                ("X-Key".to_string(), "k".to_string())
            ]
        );
        merge(&mut s, "").unwrap();
        assert_eq!(s.options.headers.len(), 2);
    }

    #[test]
    fn refuses_bad_json_names_and_values_without_showing_values() {
        let mut s = spec();
        assert!(
            merge(&mut s, "{oops")
                .unwrap_err()
                .contains("not a JSON object")
        );
        assert!(merge(&mut s, "[1]").unwrap_err().contains("JSON object"));
        assert!(
            merge(&mut s, r#"{"bad name": "v"}"#)
                .unwrap_err()
                .contains("header name")
        );
        assert!(
            merge(&mut s, r#"{"K": 1}"#)
                .unwrap_err()
                .contains("not text")
        );
        let err = merge(&mut s, "{\"K\": \"sec\\nret\"}").unwrap_err();
        assert!(
            err.contains("not a valid header value") && !err.contains("sec"),
            "{err}"
        );
    }
}
