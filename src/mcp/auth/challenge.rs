//! `WWW-Authenticate` challenges (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1): the
//! `Bearer` challenge's parameters a client acts on.
//!
//! Pure parsing: no I/O. Values are server text: callers sanitize before showing them.

use std::collections::BTreeMap;

/// The parameters of a `Bearer` challenge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: where the protected-resource metadata lives (RFC 9728).
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes this request needs, space-separated on the wire.
    pub scopes: Vec<String>,
    /// `error` (`invalid_token`, `insufficient_scope`, …).
    pub error: Option<String>,
    pub error_description: Option<String>,
}

impl Challenge {
    /// The `Bearer` challenge among the header values, if any (other schemes are skipped).
    pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Option<Challenge> {
        values.into_iter().find_map(bearer)
    }

    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Find the `Bearer` challenge in one header value and read its parameters.
fn bearer(value: &str) -> Option<Challenge> {
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return None;
        }
        let (scheme, after) = take_token(rest);
        if scheme.is_empty() {
            return None;
        }
        let (params, after) = params(after);
        if scheme.eq_ignore_ascii_case("bearer") {
            let get = |k: &str| params.get(k).cloned();
            return Some(Challenge {
                resource_metadata: get("resource_metadata"),
                scopes: get("scope")
                    .map(|s| s.split_whitespace().map(str::to_string).collect())
                    .unwrap_or_default(),
                error: get("error"),
                error_description: get("error_description"),
            });
        }
        rest = after;
    }
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

fn take_token(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !is_tchar(c)).unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// Read `name=value` pairs (value a token or a quoted string) until the next scheme; a
/// token68 (`Bearer abc==`) is skipped.
fn params(mut s: &str) -> (BTreeMap<String, String>, &str) {
    let mut out = BTreeMap::new();
    loop {
        let trimmed = s.trim_start_matches([' ', '\t', ',']);
        let (name, after) = take_token(trimmed);
        if name.is_empty() {
            return (out, trimmed);
        }
        let after = after.trim_start_matches([' ', '\t']);
        match after.strip_prefix('=') {
            Some(v) if !v.starts_with('=') => {
                let v = v.trim_start_matches([' ', '\t']);
                let (value, rest) = match v.strip_prefix('"') {
                    Some(q) => quoted(q),
                    None => {
                        let (t, r) = take_token(v);
                        (t.to_string(), r)
                    }
                };
                out.insert(name.to_ascii_lowercase(), value);
                s = rest;
            }
            Some(padding) => s = padding.trim_start_matches('='),
            // the next challenge's scheme starts at `name`
            None => return (out, trimmed),
        }
    }
}

/// A quoted string after its opening quote: the unescaped value and what follows it.
fn quoted(s: &str) -> (String, &str) {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return (out, &s[i + 1..]),
            '\\' => {
                if let Some((_, n)) = chars.next() {
                    out.push(n);
                }
            }
            c => out.push(c),
        }
    }
    (out, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_parameters_a_client_needs() {
        let c = Challenge::parse([
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read files:write""#,
        ])
        .unwrap();
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(c.scopes, ["files:read", "files:write"]);
        assert!(!c.is_insufficient_scope());
    }

    #[test]
    fn insufficient_scope_with_escapes_and_token_values() {
        let c = Challenge::parse([
            r#"Bearer error=insufficient_scope, scope="a \"b\"", error_description="needs \\ write""#,
        ])
        .unwrap();
        assert!(c.is_insufficient_scope());
        assert_eq!(c.scopes, ["a", "\"b\""]);
        assert_eq!(c.error_description.as_deref(), Some("needs \\ write"));
    }

    #[test]
    fn finds_bearer_among_other_schemes_and_values() {
        let c = Challenge::parse([
            "Basic realm=\"x\", charset=\"UTF-8\"",
            "Newauth realm=\"apps\", type=1, Bearer scope=\"mcp\"",
        ])
        .unwrap();
        assert_eq!(c.scopes, ["mcp"]);
        let c =
            Challenge::parse(["Basic realm=\"a, b\", BEARER realm=\"r\", error=\"invalid_token\""])
                .unwrap();
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
    }

    #[test]
    fn bare_bearer_and_garbage() {
        assert_eq!(Challenge::parse(["Bearer"]), Some(Challenge::default()));
        assert_eq!(Challenge::parse(["Basic"]), None);
        assert_eq!(Challenge::parse([""]), None);
        assert_eq!(Challenge::parse(["\"unterminated"]), None);
        // an unterminated quoted value ends the header, without panicking
        let c = Challenge::parse(["Bearer scope=\"a b"]).unwrap();
        assert_eq!(c.scopes, ["a", "b"]);
    }
}
