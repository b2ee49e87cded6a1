//! Config parsing: the shipped full example (`assets/config.example.toml`, which the README
//! points to) and a minimal fixture parse; every invalid fixture fails with the error its
//! first line expects (`# expect: …`), and the binary reports it as a usage error instead
//! of panicking.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use taskrail::config::{Config, Desktop, Sampling, Target};
use taskrail::mcp::auth::{ClientAssertion, Grant};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/config")
}

/// The shipped example of every setting (`assets/config.example.toml`).
fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/config.example.toml")
}

fn env(v: &str) -> Option<String> {
    matches!(
        v,
        "TASKRAIL_FIXTURE_TOKEN" | "PROD_TOKEN" | "HOSTED_CLIENT_SECRET" | "CI_PRIVATE_KEY"
    )
    .then(|| "tok-123".to_string())
}

fn parse(path: &Path) -> Result<Config, String> {
    let text = std::fs::read_to_string(path).unwrap();
    Config::parse(&text, env, path.parent().unwrap())
}

#[test]
fn the_full_example_parses() {
    let c = parse(&example()).unwrap();
    let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["demo", "prod", "hosted", "ci", "local"]);
    assert_eq!(c.proxy.answer_within.as_deref(), Some("50s"));
    assert_eq!(c.proxy.hosts.get("goose").map(String::as_str), Some("280s"));
    assert_eq!(
        c.telemetry
            .get("OTEL_EXPORTER_OTLP_ENDPOINT")
            .map(String::as_str),
        Some("http://localhost:4318")
    );
    let demo = c.server("demo").unwrap();
    assert_eq!(demo.poll_floor, Some(Duration::from_millis(500)));
    assert!(!demo.read_only);
    assert_eq!(demo.sampling, Some(Sampling::Person));
    assert_eq!(
        demo.roots.as_deref(),
        Some(&["file:///home/me/project".to_string()][..])
    );
    let caps = demo.input_support();
    assert!(caps.sampling && caps.roots.is_some());
    let prod = c.server("prod").unwrap();
    assert!(prod.read_only);
    assert!(
        prod.headers
            .contains(&("Authorization".into(), "Bearer tok-123".into()))
    );
    assert!(prod.headers.contains(&("X-Team".into(), "infra".into())));
    let hosted = &c.server("hosted").unwrap().auth;
    assert_eq!(hosted.client_id.as_deref(), Some("taskrail-cli"));
    assert_eq!(
        hosted.client_secret.as_ref().map(|s| s.expose()),
        Some("tok-123")
    );
    assert_eq!(hosted.redirect_port, Some(33418));
    assert!(hosted.client_metadata_url.is_some());
    assert!(!format!("{:?}", c.server("hosted").unwrap()).contains("tok-123"));
    let ci = &c.server("ci").unwrap().auth;
    assert!(matches!(
        &ci.grant,
        Grant::ClientCredentials(ClientAssertion::Jwt { algorithm, .. }) if algorithm == "ES256"
    ));
    let local = c.server("local").unwrap();
    assert_eq!(
        local.target,
        Target::Command("python3 -m my_server --stdio".into())
    );
    assert_eq!(
        local.sampling,
        Some(Sampling::Command {
            command: "llm -m gpt-4o-mini".into(),
            timeout: Duration::from_secs(120)
        })
    );
    assert_eq!(local.roots, None);
    assert_eq!(
        prod.sampling, None,
        "sampling is offered only where configured"
    );
    assert_eq!(c.theme_name.as_deref(), Some("light"));
    assert_eq!(c.notify.desktop, Desktop::Osc9);
    assert!(c.notify.bell && c.notify.on_input && c.notify.on_finished);
    assert_eq!(c.keys.len(), 4);
}

#[test]
fn the_readme_points_to_the_full_example() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    assert!(
        readme.contains("assets/config.example.toml"),
        "README.md must point to assets/config.example.toml"
    );
}

#[test]
fn a_minimal_config_parses() {
    let c = parse(&fixtures().join("minimal.toml")).unwrap();
    assert_eq!(c.servers[0].name, "http://127.0.0.1:9/mcp");
    assert!(c.mouse);
}

#[test]
fn every_invalid_fixture_fails_with_its_expected_error() {
    let mut seen = 0;
    for entry in std::fs::read_dir(fixtures().join("invalid")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let expect = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{} has no `# expect:` line", path.display()));
        let err = parse(&path).expect_err(&format!("{} must not parse", path.display()));
        assert!(
            err.contains(expect),
            "{}: expected {expect:?} in the error, got {err:?}",
            path.display()
        );
        assert!(!err.contains("tok-123"), "no secret in errors: {err}");
        seen += 1;
    }
    assert!(seen >= 10, "only {seen} invalid fixtures");
}

#[test]
fn the_binary_reports_a_bad_config_as_a_usage_error() {
    let tr = support::taskrail::Taskrail::new();
    let bad = fixtures().join("invalid/duplicate_name.toml");
    let run = tr.run(
        &["--config", bad.to_str().unwrap(), "ls"],
        Duration::from_secs(30),
    );
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr
            .contains("line 6: a server named \"a\" is already configured"),
        "{run:?}"
    );
    assert!(!run.stderr.contains("panicked"), "{run:?}");
    let missing = tr.run(
        &["--config", "/nonexistent/taskrail.toml", "ls"],
        Duration::from_secs(30),
    );
    assert_eq!(missing.code, Some(2), "{missing:?}");
}

#[test]
fn completions_and_man_page_come_from_the_cli_definition() {
    let tr = support::taskrail::Taskrail::new();
    let bash = tr.run(&["completions", "bash"], Duration::from_secs(30));
    assert_eq!(bash.code, Some(0), "{bash:?}");
    assert!(bash.stdout.contains("taskrail") && bash.stdout.contains("export"));
    let zsh = tr.run(&["completions", "zsh"], Duration::from_secs(30));
    assert!(zsh.stdout.contains("#compdef taskrail"), "{zsh:?}");
    let man = tr.run(&["man"], Duration::from_secs(30));
    assert_eq!(man.code, Some(0), "{man:?}");
    assert!(
        man.stdout.contains(".TH taskrail"),
        "{}",
        &man.stdout[..200.min(man.stdout.len())]
    );
    assert!(
        man.stdout.contains("\\-\\-config"),
        "options are documented"
    );
}
