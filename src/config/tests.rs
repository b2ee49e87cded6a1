//! Config parsing: `${ENV}` expansion, server validation, keymap overrides.

use std::path::Path;

use super::*;
use crate::state::keymap::{Action, Context, Keymap};

fn env(v: &str) -> Option<String> {
    match v {
        "TOKEN" => Some("s3cret".into()),
        _ => None,
    }
}

fn parse(text: &str) -> Result<Config, String> {
    Config::parse(text, env, Path::new("."))
}

#[test]
fn env_expansion_never_leaks_the_value_into_errors() {
    assert_eq!(
        expand_env("Bearer ${TOKEN}", &env).unwrap(),
        "Bearer s3cret"
    );
    assert_eq!(expand_env("plain", &env).unwrap(), "plain");
    let e = expand_env("Bearer ${MISSING}", &env)
        .unwrap_err()
        .to_string();
    assert!(e.contains("MISSING is not set"), "{e}");
    let e = expand_env("literal-secret ${TOKEN", &env)
        .unwrap_err()
        .to_string();
    assert!(!e.contains("literal-secret"), "{e}");
    assert!(expand_env("${}", &env).is_err());
}

#[test]
fn headers_are_expanded_and_debug_shows_names_only() {
    let c = parse(
        "[[server]]\nname = \"a\"\nurl = \"https://x.test/mcp\"\nheaders = { Authorization = \"Bearer ${TOKEN}\" }\n",
    )
    .unwrap();
    let s = c.server("a").unwrap();
    assert_eq!(
        s.headers,
        vec![("Authorization".to_string(), "Bearer s3cret".to_string())]
    );
    assert!(!format!("{s:?}").contains("s3cret"));
}

#[test]
fn unnamed_servers_are_named_by_their_endpoint() {
    let c = parse("[[server]]\ncommand = \"python3 srv.py\"\n").unwrap();
    assert_eq!(c.servers[0].name, "stdio:python3 srv.py");
    assert_eq!(c.servers[0].endpoint_spec(), "stdio:python3 srv.py");
}

#[test]
fn key_overrides_rebind_and_steal_keys() {
    let c = parse("[keys.board]\nrefresh = \"r\"\nrerun = [\"ctrl+e\"]\n").unwrap();
    let km = c.apply_keys(Keymap::default_keymap());
    let r = crate::state::keys::Key::char('r');
    assert_eq!(km.action(Context::Board, r), Some(Action::Refresh));
    assert_eq!(
        km.action(Context::Board, crate::state::keys::Key::ctrl('e')),
        Some(Action::Rerun)
    );
    // the old refresh keys are gone
    assert_eq!(
        km.action(Context::Board, crate::state::keys::Key::char('R')),
        None
    );
}

#[test]
fn defaults_without_a_file() {
    let c = parse("").unwrap();
    assert!(c.servers.is_empty() && c.mouse && c.theme.is_none());
    assert_eq!(c.notify, NotifyConfig::default());
}

#[test]
fn an_unset_variable_disables_only_its_server() {
    let c = parse(
        "[[server]]\nname = \"a\"\nurl = \"https://x.test/mcp\"\nheaders = { Authorization = \"Bearer ${MISSING}\" }\n\n[[server]]\nname = \"b\"\nurl = \"https://y.test/mcp\"\nheaders = { Authorization = \"Bearer ${TOKEN}\" }\n",
    )
    .unwrap();
    let a = c.server("a").unwrap();
    assert_eq!(
        a.disabled.as_deref(),
        Some("line 4: header Authorization: environment variable MISSING is not set")
    );
    assert!(a.headers.is_empty(), "no half-built header");
    let b = c.server("b").unwrap();
    assert_eq!(b.disabled, None);
    assert_eq!(b.headers.len(), 1);
    // a malformed value is still an error for the whole file
    assert!(parse("[[server]]\nurl = \"https://x.test/mcp\"\nheaders = { A = \"${\" }\n").is_err());
}

#[test]
fn the_telemetry_table_takes_the_otel_variables_in_either_case() {
    let c = parse(
        "[telemetry]\nOTEL_EXPORTER_OTLP_ENDPOINT = \"http://c:4318\"\notel_service_name = \"x\"\n",
    )
    .unwrap();
    assert_eq!(
        c.telemetry
            .get("OTEL_EXPORTER_OTLP_ENDPOINT")
            .map(String::as_str),
        Some("http://c:4318")
    );
    assert_eq!(
        c.telemetry.get("OTEL_SERVICE_NAME").map(String::as_str),
        Some("x")
    );
    let e = parse("\n[telemetry]\nendpoint = \"http://c\"\n").unwrap_err();
    assert!(e.contains("line 2") && e.contains("OTEL_"), "{e}");
}
