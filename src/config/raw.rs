//! The config file's raw shape (serde, with spans) and its validation into `Config`.
//! Every error names its line. Header values never appear in an error.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::theme::{self as theme_file, line_of};
use super::{
    Config, Desktop, ExpandError, KeyOverride, NotifyConfig, ServerConfig, Target, expand_env,
};
use crate::state::keymap::{Action, Keymap};
use crate::state::keys::Key;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    server: Vec<Spanned<RawServer>>,
    theme: Option<Spanned<String>>,
    mouse: Option<bool>,
    notify: Option<RawNotify>,
    proxy: Option<RawProxy>,
    telemetry: Option<Spanned<BTreeMap<String, String>>>,
    #[serde(default)]
    keys: BTreeMap<String, Spanned<BTreeMap<String, Spanned<KeyList>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    name: Option<Spanned<String>>,
    url: Option<Spanned<String>>,
    command: Option<Spanned<String>>,
    #[serde(default)]
    headers: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    read_only: bool,
    poll_floor_ms: Option<Spanned<u64>>,
    auth: Option<Spanned<super::auth::RawAuth>>,
    sampling: Option<Spanned<toml::Value>>,
    roots: Option<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProxy {
    answer_within: Option<String>,
    #[serde(default)]
    hosts: BTreeMap<String, RawProxyHost>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProxyHost {
    answer_within: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNotify {
    bell: Option<bool>,
    desktop: Option<Spanned<String>>,
    on: Option<Spanned<Vec<String>>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum KeyList {
    One(String),
    Many(Vec<String>),
}

fn at<T>(text: &str, s: &Spanned<T>) -> usize {
    line_of(text, s.span().start)
}

pub(super) fn parse(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    base: &Path,
) -> Result<Config, String> {
    let raw: RawConfig = toml::from_str(text).map_err(|e| {
        // toml's message names the line and shows it; keep it compact
        e.to_string().trim().replace("TOML parse error at ", "")
    })?;
    let mut config = Config::defaults();
    for s in &raw.server {
        let server = server(text, s, env, base)?;
        if config.servers.iter().any(|o| o.name == server.name) {
            return Err(format!(
                "line {}: a server named {:?} is already configured",
                at(text, s),
                server.name
            ));
        }
        config.servers.push(server);
    }
    if let Some(t) = &raw.theme {
        let name = t.get_ref();
        let theme = if let Some(theme) = theme_file::bundled(name) {
            theme
        } else if name.ends_with(".toml") || name.contains('/') {
            let path = base.join(name);
            let body = super::read_file(&path)
                .map_err(|e| format!("line {}: theme file {}: {e}", at(text, t), path.display()))?;
            theme_file::parse_theme(&body)
                .map_err(|e| format!("theme file {}: {e}", path.display()))?
        } else {
            let names: Vec<&str> = theme_file::BUNDLED.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "line {}: unknown theme {name:?} (bundled: {}; or a path to a .toml file)",
                at(text, t),
                names.join(", ")
            ));
        };
        config.theme_name = Some(name.clone());
        config.theme = Some(theme);
    }
    if let Some(m) = raw.mouse {
        config.mouse = m;
    }
    if let Some(n) = &raw.notify {
        config.notify = notify(text, n)?;
    }
    if let Some(p) = &raw.proxy {
        config.proxy = super::ProxyConfig {
            answer_within: p.answer_within.clone(),
            hosts: p
                .hosts
                .iter()
                .filter_map(|(k, h)| h.answer_within.clone().map(|a| (k.clone(), a)))
                .collect(),
        };
    }
    if let Some(t) = &raw.telemetry {
        for (k, v) in t.get_ref() {
            let name = k.to_ascii_uppercase();
            if !name.starts_with("OTEL_") {
                return Err(format!(
                    "line {}: [telemetry] {k:?}: the keys are the OTEL_* variables (e.g. OTEL_EXPORTER_OTLP_ENDPOINT)",
                    at(text, t)
                ));
            }
            config.telemetry.insert(name, v.clone());
        }
    }
    config.keys = keys(text, &raw.keys)?;
    Ok(config)
}

fn server(
    text: &str,
    s: &Spanned<RawServer>,
    env: &dyn Fn(&str) -> Option<String>,
    base: &Path,
) -> Result<ServerConfig, String> {
    let line = at(text, s);
    let r = s.get_ref();
    let target = match (&r.url, &r.command) {
        (Some(u), None) => {
            let url = u.get_ref().trim();
            if !(url.starts_with("http://") || url.starts_with("https://"))
                || url::Url::parse(url).is_err()
            {
                return Err(format!(
                    "line {}: url {url:?} is not an http(s) URL",
                    at(text, u)
                ));
            }
            Target::Url(url.to_string())
        }
        (None, Some(c)) => {
            let cmd = c.get_ref().trim();
            if shlex::split(cmd).is_none_or(|v| v.is_empty()) {
                return Err(format!(
                    "line {}: command {cmd:?} is not a command line",
                    at(text, c)
                ));
            }
            Target::Command(cmd.to_string())
        }
        (Some(_), Some(_)) => {
            return Err(format!(
                "line {line}: a [[server]] has either url or command, not both"
            ));
        }
        (None, None) => {
            return Err(format!(
                "line {line}: a [[server]] needs url = \"http…\" or command = \"…\""
            ));
        }
    };
    let name = match &r.name {
        Some(n) if n.get_ref().trim().is_empty() => {
            return Err(format!("line {}: empty server name", at(text, n)));
        }
        Some(n) => n.get_ref().trim().to_string(),
        None => match &target {
            Target::Url(u) => u.clone(),
            Target::Command(c) => format!("stdio:{c}"),
        },
    };
    let mut headers = Vec::new();
    let mut disabled = None;
    for (hname, value) in &r.headers {
        let hl = at(text, value);
        if hname.is_empty()
            || !hname
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!("line {hl}: invalid header name {hname:?}"));
        }
        if matches!(&target, Target::Command(_)) {
            return Err(format!(
                "line {hl}: headers apply to url servers only (server {name:?} is a command)"
            ));
        }
        let v = match expand_env(value.get_ref(), env) {
            Ok(v) => v,
            // An unset variable disables this server only; the file stays usable.
            Err(e @ ExpandError::Unset(_)) => {
                disabled.get_or_insert(format!("line {hl}: header {hname}: {e}"));
                continue;
            }
            Err(e) => return Err(format!("line {hl}: header {hname}: {e}")),
        };
        if v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(format!(
                "line {hl}: header {hname}: the value holds a line break"
            ));
        }
        headers.push((hname.clone(), v));
    }
    let poll_floor = match &r.poll_floor_ms {
        Some(ms) if *ms.get_ref() < 10 => {
            return Err(format!(
                "line {}: poll_floor_ms must be at least 10",
                at(text, ms)
            ));
        }
        Some(ms) => Some(Duration::from_millis(*ms.get_ref())),
        None => None,
    };
    let sampling = match &r.sampling {
        Some(v) => Some(super::input::sampling(text, v)?),
        None => None,
    };
    let roots = match &r.roots {
        Some(list) => Some(super::input::roots(text, list)?),
        None => None,
    };
    let auth = match &r.auth {
        Some(a) if matches!(&target, Target::Command(_)) => {
            return Err(format!(
                "line {}: [server.auth] applies to url servers only (server {name:?} is a command: \
                 give it credentials in its environment)",
                at(text, a)
            ));
        }
        Some(a) => super::auth::settings(text, a.get_ref(), env, base)?,
        None => Default::default(),
    };
    Ok(ServerConfig {
        name,
        target,
        headers,
        read_only: r.read_only,
        poll_floor,
        disabled,
        auth,
        sampling,
        roots,
    })
}

fn notify(text: &str, n: &RawNotify) -> Result<NotifyConfig, String> {
    let mut out = NotifyConfig::default();
    if let Some(b) = n.bell {
        out.bell = b;
    }
    if let Some(d) = &n.desktop {
        out.desktop = match d.get_ref().as_str() {
            "off" | "none" => Desktop::Off,
            "osc9" => Desktop::Osc9,
            "osc777" => Desktop::Osc777,
            other => {
                return Err(format!(
                    "line {}: desktop = {other:?}: use \"off\", \"osc9\" or \"osc777\"",
                    at(text, d)
                ));
            }
        };
    }
    if let Some(on) = &n.on {
        out.on_input = false;
        out.on_finished = false;
        for what in on.get_ref() {
            match what.as_str() {
                "input" => out.on_input = true,
                "finished" => out.on_finished = true,
                other => {
                    return Err(format!(
                        "line {}: notify on {other:?}: use \"input\" and/or \"finished\"",
                        at(text, on)
                    ));
                }
            }
        }
    }
    Ok(out)
}

fn keys(
    text: &str,
    raw: &BTreeMap<String, Spanned<BTreeMap<String, Spanned<KeyList>>>>,
) -> Result<Vec<KeyOverride>, String> {
    let mut out = Vec::new();
    for (ctx_name, table) in raw {
        let context = Keymap::context_named(ctx_name).ok_or_else(|| {
            format!(
                "line {}: unknown key context [keys.{ctx_name}] (board, filter, command, detail, \
                 form, consent, sampling, confirm, picker, help, global)",
                at(text, table)
            )
        })?;
        for (action_name, list) in table.get_ref() {
            let line = at(text, list);
            let action = Action::from_name(action_name).ok_or_else(|| {
                format!("line {line}: unknown action {action_name:?} in [keys.{ctx_name}]")
            })?;
            let names = match list.get_ref() {
                KeyList::One(k) => vec![k.clone()],
                KeyList::Many(v) => v.clone(),
            };
            let mut keys = Vec::new();
            for k in names {
                let key = Key::parse(&k).map_err(|e| format!("line {line}: {e}"))?;
                if out
                    .iter()
                    .any(|o: &KeyOverride| o.context == context && o.keys.contains(&key))
                {
                    return Err(format!(
                        "line {line}: key {k:?} is bound twice in [keys.{ctx_name}]"
                    ));
                }
                keys.push(key);
            }
            out.push(KeyOverride {
                context,
                action,
                keys,
            });
        }
    }
    Ok(out)
}
