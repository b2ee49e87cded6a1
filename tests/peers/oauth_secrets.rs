//! Sign-in secrets stay in the token store: against FastMCP's OAuth provider, with a client
//! registered beforehand (its secret given to taskrail through `${ENV}` in the config), the
//! access token, the refresh token and the client secret appear in no file taskrail
//! writes except the token store (ledger, log, export, config), nor in `ps` output while
//! a task runs.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;
use support::taskrail::{Taskrail, task_id};

const LIMIT: Duration = Duration::from_secs(90);

/// POST a JSON body over plain HTTP/1.1 and return the JSON answer.
fn post_json(url: &str, body: &Value) -> Value {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_once('/').unwrap();
    let mut s = TcpStream::connect(authority).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let body = body.to_string();
    write!(
        s,
        "POST /{path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let (_, json) = answer.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn tokens_and_the_client_secret_stay_in_the_token_store() {
    let peer = support::fastmcp_oauth_http();
    let base = peer.url.trim_end_matches("/mcp");
    let port = free_port();
    let client = post_json(
        &format!("{base}/register"),
        &serde_json::json!({
            "client_name": "registered by hand",
            "redirect_uris": [format!("http://127.0.0.1:{port}/callback")],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "client_secret_post",
        }),
    );
    let client_id = client["client_id"].as_str().unwrap().to_string();
    let client_secret = client["client_secret"].as_str().unwrap().to_string();
    assert!(client_secret.len() > 16);

    let tr = Taskrail::new();
    let config = tr.dir().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[[server]]\nname = \"guarded\"\nurl = \"{}\"\n[server.auth]\nclient_id = \"{client_id}\"\n\
             client_secret = \"${{TR_TEST_CLIENT_SECRET}}\"\nredirect_port = {port}\n",
            peer.url
        ),
    )
    .unwrap();
    let tr = tr
        .with_fake_browser()
        .with_env("TR_TEST_CLIENT_SECRET", client_secret.clone())
        .with_env("TASKRAIL_CONFIG", config.display().to_string());

    let login = tr.run(&["auth", "login", "guarded"], LIMIT);
    assert_eq!(login.code, Some(0), "{login:?}\n{}", peer.log_tail(2000));
    let store = std::fs::read_to_string(tr.tokens()).unwrap();
    let doc: Value = serde_json::from_str(&store).unwrap();
    let server = doc["servers"].as_object().unwrap().values().next().unwrap();
    let entry = &server["issuers"][server["current"].as_str().unwrap()];
    assert_eq!(entry["client"]["client_id"], client_id.as_str());
    assert_eq!(entry["client"]["source"], "configured");
    let access = entry["tokens"]["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let refresh = entry["tokens"]["refresh_token"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        !store.contains(&client_secret),
        "a configured secret is not copied"
    );
    let mode = std::fs::metadata(tr.tokens()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // While a task runs, no process shows a secret on its command line.
    let mut call = tr.spawn(&[
        "call",
        "-s",
        "guarded",
        "slow_count",
        "--args",
        r#"{"steps":40,"delay":0.1}"#,
    ]);
    call.wait_stderr("connected to", LIMIT);
    let ps = std::process::Command::new("ps")
        .args(["-eww", "-o", "args="])
        .output()
        .unwrap();
    let ps = String::from_utf8_lossy(&ps.stdout);
    assert!(ps.contains("slow_count"), "ps shows the running call");
    for secret in [&access, &refresh, &client_secret] {
        assert!(
            !ps.contains(secret.as_str()),
            "a secret is on a command line"
        );
    }
    let run = call.finish(LIMIT);
    assert_eq!(run.code, Some(0), "{run:?}");

    // Renew once (the refresh token rotates), then everything that writes files.
    let expired = store.replace(
        &format!("\"expires_at\": {}", entry["tokens"]["expires_at"]),
        "\"expires_at\": 1",
    );
    assert_ne!(expired, store, "the expiry was rewritten");
    std::fs::write(tr.tokens(), expired).unwrap();
    let detach = tr.run(
        &[
            "call",
            "-s",
            "guarded",
            "--detach",
            "slow_count",
            "--args",
            r#"{"steps":1}"#,
        ],
        LIMIT,
    );
    let id = task_id(&detach);
    let export = tr.dir().join("export.jsonl");
    for args in [
        vec!["watch", "-s", "guarded", &id],
        vec!["ls", "--all", "--json"],
        vec!["timeline", &id],
        vec!["export", &id, "-o", export.to_str().unwrap()],
        vec!["auth", "status", "--json"],
    ] {
        let run = tr.run(&args, LIMIT);
        assert_eq!(run.code, Some(0), "{args:?}: {run:?}");
        for secret in [&access, &refresh, &client_secret] {
            assert!(
                !run.stdout.contains(secret.as_str()),
                "{args:?} printed a secret"
            );
            assert!(
                !run.stderr.contains(secret.as_str()),
                "{args:?} printed a secret"
            );
        }
    }
    let store = std::fs::read_to_string(tr.tokens()).unwrap();
    let renewed: Value = serde_json::from_str(&store).unwrap();
    let server = renewed["servers"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    let tokens = &server["issuers"][server["current"].as_str().unwrap()]["tokens"];
    let access2 = tokens["access_token"].as_str().unwrap().to_string();
    let refresh2 = tokens["refresh_token"].as_str().unwrap().to_string();
    assert_ne!(access2, access, "the token was renewed");

    let mut checked = 0;
    for entry in std::fs::read_dir(tr.dir()).unwrap() {
        let path = entry.unwrap().path();
        if path == tr.tokens() || path.is_dir() {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).into_owned();
        for secret in [&access, &refresh, &access2, &refresh2, &client_secret] {
            assert!(
                !text.contains(secret.as_str()),
                "{} holds a secret",
                path.display()
            );
        }
        checked += 1;
    }
    assert!(
        checked >= 4,
        "ledger, log, config and export were checked ({checked})"
    );
    let log = std::fs::read_to_string(tr.log()).unwrap();
    assert!(log.contains("signed in"), "the log tells what happened");
}
