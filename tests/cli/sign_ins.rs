//! `auth status` lists every sign-in the token store holds, including one made for a URL
//! the config does not name, in text and in `--json`.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;
use support::taskrail::Taskrail;

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn auth_status_lists_a_sign_in_for_a_url_not_in_the_config() {
    let tr = Taskrail::new();
    let url = "http://127.0.0.1:9/mcp";
    let entry = serde_json::json!({"version": 1, "servers": {url: {
        "current": "https://as.example",
        "issuers": {"https://as.example": {
            "resource": url,
            "metadata": {"issuer": "https://as.example"},
            "client": {"client_id": "c", "auth_method": "none", "redirect_uris": [],
                       "source": "registered"},
            "tokens": {"access_token": "not-shown", "scopes": ["mcp"]}
        }}
    }}});
    std::fs::write(tr.tokens(), entry.to_string()).unwrap();
    // A config naming another server only.
    let cfg = tr.dir().join("config.toml");
    std::fs::write(
        &cfg,
        "[[server]]\nname = \"other\"\nurl = \"http://127.0.0.1:8/mcp\"\n",
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap();

    let text = tr.run(&["--config", cfg, "auth", "status"], LIMIT);
    assert_eq!(text.code, Some(0), "{text:#?}");
    let row = text.stdout.lines().find(|l| l.starts_with(url));
    assert!(
        row.is_some_and(|r| r.contains("signed in")),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.lines().any(|l| l.starts_with("other")),
        "{}",
        text.stdout
    );

    let json = tr.run(&["--config", cfg, "auth", "status", "--json"], LIMIT);
    assert_eq!(json.code, Some(0), "{json:#?}");
    let lines = json.json_lines();
    let mine = lines
        .iter()
        .find(|l| l["url"] == url)
        .unwrap_or_else(|| panic!("{json:#?}"));
    assert_eq!(mine["signedIn"], true);
    assert_eq!(mine["issuer"], "https://as.example");
    assert!(!json.stdout.contains("not-shown") && !text.stdout.contains("not-shown"));
}
