//! The config's input settings of a server: `sampling` (a person, or a command run after
//! the person approves) and `roots` (absolute `file://` URIs). Errors name the line.

use std::time::Duration;

use toml::Spanned;

use super::theme::line_of;
use super::{SAMPLING_TIMEOUT, Sampling};

fn at<T>(text: &str, s: &Spanned<T>) -> usize {
    line_of(text, s.span().start)
}

/// `sampling = "person"` or `sampling = { command = "llm -m …", timeout_secs = 120 }`.
pub(super) fn sampling(text: &str, v: &Spanned<toml::Value>) -> Result<Sampling, String> {
    let line = at(text, v);
    let usage = "use sampling = \"person\" or sampling = { command = \"…\" }";
    match v.get_ref() {
        toml::Value::String(s) if s == "person" => Ok(Sampling::Person),
        toml::Value::String(s) => Err(format!("line {line}: sampling = {s:?}: {usage}")),
        toml::Value::Table(t) => {
            if let Some(k) = t
                .keys()
                .find(|k| !["command", "timeout_secs"].contains(&k.as_str()))
            {
                return Err(format!(
                    "line {line}: unknown sampling setting {k:?} (command, timeout_secs)"
                ));
            }
            let command = match t.get("command") {
                Some(toml::Value::String(c)) if shlex::split(c).is_some_and(|a| !a.is_empty()) => {
                    c.trim().to_string()
                }
                Some(toml::Value::String(c)) => {
                    return Err(format!(
                        "line {line}: sampling command {c:?} is not a command line"
                    ));
                }
                Some(_) => return Err(format!("line {line}: sampling command must be a string")),
                None => return Err(format!("line {line}: sampling needs a command: {usage}")),
            };
            let timeout = match t.get("timeout_secs") {
                None => SAMPLING_TIMEOUT,
                Some(toml::Value::Integer(n)) if (1..=3600).contains(n) => {
                    Duration::from_secs(*n as u64)
                }
                Some(_) => {
                    return Err(format!(
                        "line {line}: sampling timeout_secs must be a whole number from 1 to 3600"
                    ));
                }
            };
            Ok(Sampling::Command { command, timeout })
        }
        _ => Err(format!("line {line}: {usage}")),
    }
}

/// `roots = ["file:///…", …]`: absolute `file://` URIs.
pub(super) fn roots(
    text: &str,
    list: &Spanned<Vec<Spanned<String>>>,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for r in list.get_ref() {
        let uri = r.get_ref().trim();
        let ok =
            url::Url::parse(uri).is_ok_and(|u| u.scheme() == "file" && u.path().starts_with('/'));
        if !ok {
            return Err(format!(
                "line {}: root {uri:?} is not a file:// URI (like \"file:///home/me/project\")",
                at(text, r)
            ));
        }
        if out.len() >= 64 {
            return Err(format!("line {}: at most 64 roots", at(text, r)));
        }
        out.push(uri.to_string());
    }
    Ok(out)
}
