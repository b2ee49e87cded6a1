//! End-to-end tests of the input kinds beyond forms in the real dashboard, in tmux, against
//! a `serve-demo` process: a sampling request answered by typing, one answered through a
//! configured command (`tests/fake_llm.sh` standing in for `llm`), a URL-mode sign-in
//! opened in a (fake) browser and marked done — in both protocol eras — and roots answered
//! from the config. Every wait is bounded; tmux is required.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::browser::{FakeBrowser, visit};
use support::taskrail::{DemoProcess, Taskrail, task_id};
use support::tmux::Tmux;

const CLI_LIMIT: Duration = Duration::from_secs(60);

/// A config file naming the demo server `demo`, with `extra` settings for it.
fn config(tr: &Taskrail, url: &str, extra: &str) -> PathBuf {
    let path = tr.dir().join("config.toml");
    let text = format!("[[server]]\nname = \"demo\"\nurl = \"{url}\"\n{extra}\n");
    std::fs::write(&path, text).unwrap();
    path
}

/// Start `tool` as a task on the configured demo server (detached); its id.
fn start(tr: &Taskrail, cfg: &Path, tool: &str, args: &str) -> String {
    let cfg = cfg.to_str().unwrap();
    let run = tr.run(
        &[
            "--config", cfg, "call", "-s", "demo", tool, "--args", args, "--detach",
        ],
        CLI_LIMIT,
    );
    task_id(&run)
}

fn dashboard(tmux: &Tmux, tr: &Taskrail, cfg: &Path, env: &str) {
    let line = format!("--config '{}'", cfg.display());
    if env.is_empty() {
        tmux.start_dashboard(tr, &line);
    } else {
        tmux.type_text(&format!("export {env}; "));
        tmux.start_dashboard(tr, &line);
    }
}

fn row_has(screen: &str, id: &str, needle: &str) -> bool {
    screen
        .lines()
        .any(|l| l.contains(&id[..8]) && l.contains(needle))
}

/// Open the (only) task's input with `a` once its row waits.
fn open_input(tmux: &Tmux, id: &str) {
    tmux.wait("the task to wait for input", |s| {
        row_has(s, id, "input needed") || row_has(s, id, "wants ")
    });
    tmux.keys(&["g", "a"]);
}

/// The task's result text, from `taskrail get`.
fn result_text(tr: &Taskrail, cfg: &Path, id: &str) -> String {
    let run = tr.run(
        &["--config", cfg.to_str().unwrap(), "get", "-s", "demo", id],
        CLI_LIMIT,
    );
    run.json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_sampling_request_is_answered_by_typing_the_reply() {
    let demo = DemoProcess::start(&["--time-scale", "0.05"]);
    let tr = Taskrail::new();
    let cfg = config(&tr, &demo.url, "sampling = \"person\"");
    let id = start(
        &tr,
        &cfg,
        "summarize",
        r#"{"text":"fixed a crash; faster startup"}"#,
    );
    let tmux = Tmux::start("sampling-typed");
    dashboard(&tmux, &tr, &cfg, "");
    open_input(&tmux, &id);
    // the whole view, not a capture taken while tmux is still drawing it
    let screen = tmux.wait("the sampling view", |s| {
        s.contains("Sampling for summarize") && s.contains("max tokens")
    });
    assert!(
        screen.contains("you type the assistant's reply"),
        "{screen}"
    );
    assert!(
        screen.contains("You are a concise technical writer"),
        "system prompt:\n{screen}"
    );
    assert!(
        screen.contains("Summarize them for the changelog."),
        "history:\n{screen}"
    );
    assert!(screen.contains("max tokens  200"), "{screen}");
    // letters that are keys elsewhere (q quits the board) are typed here
    tmux.type_text("Quicker start, one crash fixed.");
    tmux.wait("the typed reply", |s| {
        s.contains("│ Quicker start, one crash fixed.")
    });
    tmux.keys(&["C-s"]);
    tmux.wait("the task to complete", |s| row_has(s, &id, "completed"));
    tmux.quit();
    assert_eq!(
        result_text(&tr, &cfg, &id),
        "Summary: Quicker start, one crash fixed."
    );
}

#[test]
fn a_sampling_request_is_answered_through_the_configured_command_after_approval() {
    let demo = DemoProcess::start(&["--time-scale", "0.05"]);
    let tr = Taskrail::new();
    let llm = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_llm.sh");
    let saw = tr.dir().join("llm-saw.json");
    let cfg = config(
        &tr,
        &demo.url,
        &format!(
            "sampling = {{ command = \"{}\", timeout_secs = 30 }}",
            llm.display()
        ),
    );
    let id = start(&tr, &cfg, "summarize", r#"{"text":"new export command"}"#);
    let tmux = Tmux::start("sampling-command");
    dashboard(
        &tmux,
        &tr,
        &cfg,
        &format!("FAKE_LLM_SAW='{}'", saw.display()),
    );
    open_input(&tmux, &id);
    tmux.wait("the sampling view", |s| s.contains("once you approve"));
    assert!(!saw.exists(), "nothing runs before the person approves");
    tmux.keys(&["C-r"]);
    let screen = tmux.wait("the command's output in the reply", |s| {
        s.contains("Fake model reply: I read a sampling request")
    });
    assert!(
        screen.contains("read it"),
        "the output is shown before it is sent:\n{screen}"
    );
    assert!(!row_has(&screen, &id, "completed"));
    let request: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saw).unwrap()).unwrap();
    assert_eq!(request["method"], "sampling/createMessage");
    assert_eq!(request["params"]["maxTokens"], 200);
    tmux.keys(&["C-s"]);
    tmux.wait("the task to complete", |s| row_has(s, &id, "completed"));
    tmux.quit();
    let text = result_text(&tr, &cfg, &id);
    assert!(
        text.starts_with("Summary: Fake model reply: I read a sampling request of "),
        "{text}"
    );
}

/// The sign-in flow: consent view, `o` starts the (fake) browser, the page is visited,
/// `d` answers accept, the task completes.
fn sign_in(legacy: bool) {
    let mut args = vec!["--time-scale", "0.05"];
    if legacy {
        args.push("--legacy");
    }
    let demo = DemoProcess::start(&args);
    let tr = Taskrail::new();
    let cfg = config(&tr, &demo.url, "");
    let browser = FakeBrowser::new(tr.dir());
    let tmux = Tmux::start(if legacy { "sign-in-legacy" } else { "sign-in" });
    let id = if legacy {
        // A legacy server sends input to the session that follows the task: the dashboard
        // starts it.
        dashboard(&tmux, &tr, &cfg, &browser.env());
        tmux.keys(&["n"]);
        tmux.wait("the tool picker", |s| s.contains("sign_in"));
        crate::select::pick_tool(&tmux, "sign_in");
        tmux.keys(&["Enter"]);
        tmux.wait("the argument form", |s| s.contains("New task: sign_in"));
        tmux.keys(&["Enter"]);
        let screen = tmux.wait("the task row", |s| {
            s.contains("sign_in") && s.contains("input needed")
        });
        let line = screen.lines().find(|l| l.contains("sign_in")).unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = words.iter().position(|w| *w == "sign_in").unwrap();
        words[at - 1].to_string()
    } else {
        let id = start(&tr, &cfg, "sign_in", r#"{"service":"billing-portal"}"#);
        dashboard(&tmux, &tr, &cfg, &browser.env());
        id
    };
    open_input(&tmux, &id);
    // down to its key line: a capture can land between two writes of one frame
    let screen = tmux.wait("the consent view", |s| {
        s.contains("to visit a link") && s.contains(" decline ")
    });
    assert!(screen.contains("site  127.0.0.1"), "{screen}");
    assert!(
        screen.contains("/sign-in/"),
        "the whole link is shown:\n{screen}"
    );
    assert!(
        !screen.contains("plain http"),
        "loopback http is no warning:\n{screen}"
    );
    assert!(browser.opened().is_empty(), "nothing is opened unasked");
    tmux.keys(&["o"]);
    let url = browser.wait_opened(1);
    assert!(
        url.contains("/sign-in/") && url.starts_with("http://127.0.0.1:"),
        "{url}"
    );
    tmux.wait("the note that the link was opened", |s| {
        s.contains("opened in your browser")
    });
    let (status, page) = visit(&url);
    assert_eq!(status, 200, "{page}");
    if legacy {
        // 2025-11-25: the server reports the interaction complete
        tmux.wait("the completion notice", |s| {
            s.contains("the server reports the interaction complete")
        });
    }
    tmux.keys(&["d"]);
    tmux.wait("the task to complete", |s| row_has(s, &id, "completed"));
    tmux.quit();
    assert_eq!(browser.opened().len(), 1);
    if !legacy {
        assert_eq!(result_text(&tr, &cfg, &id), "Signed in to billing-portal");
    }
}

#[test]
fn a_url_mode_sign_in_is_opened_on_request_and_done_sends_accept() {
    sign_in(false);
}

#[test]
fn a_legacy_sign_in_reports_its_completion() {
    sign_in(true);
}

#[test]
fn roots_come_from_the_config_and_the_roots_view_shows_them_sent() {
    let demo = DemoProcess::start(&["--time-scale", "0.05"]);
    let tr = Taskrail::new();
    let cfg = config(
        &tr,
        &demo.url,
        "roots = [\"file:///work/repo\", \"file:///srv/data\"]",
    );
    let tmux = Tmux::start("roots");
    dashboard(&tmux, &tr, &cfg, "");
    let id = start(&tr, &cfg, "scan_workspace", "{}");
    tmux.wait("the task to complete without a prompt", |s| {
        row_has(s, &id, "completed")
    });
    tmux.keys(&["o"]);
    // every part of the view: a capture can land between two writes of one frame
    let screen = tmux.wait("the roots view", |s| {
        s.contains("Roots of demo") && s.contains("file:///srv/data") && s.contains("root(s)")
    });
    assert!(
        screen.contains("file:///work/repo") && screen.contains("file:///srv/data"),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("to task {}: 2 root(s)", &id[..8])),
        "{screen}"
    );
    tmux.escape_from("Roots of demo");
    tmux.quit();
    assert_eq!(
        result_text(&tr, &cfg, &id),
        "Scanned 2 root(s): file:///work/repo, file:///srv/data"
    );
}
