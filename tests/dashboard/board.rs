//! End-to-end tests of the real dashboard binary in tmux: a private tmux server per test
//! (its own `-L` socket) runs `taskrail --server URL` against a `serve-demo` process, keys
//! go in with `send-keys`, and every check polls `capture-pane` until it holds (bounded).
//! tmux is required: `.ci/run` installs it; a missing tmux fails the test, never skips it.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::select::{pick_tool, select_task as select};
use crate::support;

use std::time::{Duration, Instant};

use support::taskrail::{DemoProcess, Taskrail, task_id};
use support::tmux::{EXITED, LIMIT, Tmux};

const CLI_LIMIT: Duration = Duration::from_secs(60);

/// The board line of task `id`.
fn row<'a>(screen: &'a str, id: &str) -> Option<&'a str> {
    screen.lines().find(|l| l.contains(&id[..8]))
}

fn row_has(screen: &str, id: &str, needle: &str) -> bool {
    row(screen, id).is_some_and(|l| l.contains(needle))
}

/// The percentage shown in a row (`  42%`), if any.
fn percent(line: &str) -> Option<u32> {
    line.split_whitespace()
        .find_map(|w| w.strip_suffix('%')?.parse().ok())
}

fn call(tr: &Taskrail, url: &str, tool: &str, args: &str) -> String {
    task_id(&tr.run(
        &["call", "--server", url, tool, "--args", args, "--detach"],
        CLI_LIMIT,
    ))
}

/// `taskrail get`: the task JSON, checked against the exit code for its status.
fn get(tr: &Taskrail, url: &str, id: &str) -> serde_json::Value {
    let run = tr.run(&["get", "--server", url, id], CLI_LIMIT);
    let task = run.json();
    let code = match task["status"].as_str() {
        Some("completed") if task["result"]["isError"] == true => 1,
        Some("completed" | "working" | "input_required") => 0,
        Some("cancelled") => 4,
        _ => 3,
    };
    assert_eq!(run.code, Some(code), "taskrail get: {run:#?}");
    task
}

fn show(title: &str, screen: &str) {
    println!("---- {title} ----\n{screen}");
}

#[test]
fn board_progress_answer_cancel_quit_and_restart() {
    // Answers and cancels are acknowledged at once but applied later, so the
    // "answer sent" and "cancel requested" marks stay on screen for a while.
    let demo = DemoProcess::start(&["--time-scale", "0.5", "--ack-delay", "1500"]);
    let url = demo.url.as_str();
    let tr = Taskrail::new();

    // Tasks created from the command line, into the same ledger.
    let report = call(&tr, url, "render_report", r#"{"pages":100}"#);
    let ask = call(
        &tr,
        url,
        "wait_for_input",
        r#"{"prompt":"Name the release"}"#,
    );
    let lint = call(&tr, url, "lint", r#"{"repo":"taskrail"}"#);

    let tmux = Tmux::start("main");
    tmux.start_dashboard(&tr, &format!("--server {url}"));

    // The rows appear, and progress moves.
    let screen = tmux.wait("the three rows", |s| {
        [&report, &ask, &lint].iter().all(|id| row(s, id).is_some())
    });
    assert!(
        screen.contains("render_report") && screen.contains("wait_for_input"),
        "{screen}"
    );
    let screen = tmux.wait("a progress percentage on render_report", |s| {
        row(s, &report).and_then(percent).is_some()
    });
    let first = row(&screen, &report).and_then(percent).unwrap();
    let screen = tmux.wait("render_report's progress to move", |s| {
        row(s, &report).and_then(percent).is_some_and(|p| p > first)
    });
    show("board, progress moving (120x35)", &screen);

    // The tool error of lint is not a plain success.
    let screen = tmux.wait("lint to finish", |s| row_has(s, &lint, "✖ tool error"));
    assert!(!row_has(&screen, &lint, "✔"), "{screen}");

    // An input form: select, open, send empty (refused), type, send.
    tmux.wait("wait_for_input to need input", |s| {
        row_has(s, &ask, "input needed")
    });
    select(&tmux, &ask);
    tmux.keys(&["a"]);
    tmux.wait("the input form", |s| {
        s.contains("Input for wait_for_input") && s.contains("Name the release")
    });
    tmux.keys(&["Enter"]);
    let screen = tmux.wait("the validation error", |s| {
        s.contains("required") && s.contains("needs fixing")
    });
    show("input form, sent empty (120x35)", &screen);
    let value = r#"v2.1 "Ada" — ünïcode & <tags>"#;
    tmux.type_text(value);
    let screen = tmux.wait("the typed value in the field", |s| s.contains(value));
    assert!(
        !screen.contains("✖ required"),
        "a stale validation error stays next to the filled field:\n{screen}"
    );
    show("input form, filled in (120x35)", &screen);
    tmux.keys(&["Enter"]);
    tmux.wait("the answer-sent mark", |s| {
        !s.contains("Input for wait_for_input") && row_has(s, &ask, "answer sent")
    });
    tmux.wait("the answered task to complete", |s| {
        row_has(s, &ask, "completed")
    });
    let task = get(&tr, url, &ask);
    assert_eq!(task["status"], "completed", "{task:#}");
    assert_eq!(
        task["result"]["content"][0]["text"],
        format!("Received: {value}"),
        "{task:#}"
    );
    assert_eq!(task["result"]["structuredContent"]["value"], value);

    // A new task from the UI (`n`), then cancel it (`c`, `y`).
    let before: Vec<String> = ledger_ids(&tr);
    tmux.keys(&["n"]);
    tmux.wait("the tool picker", |s| s.contains("pick a tool"));
    pick_tool(&tmux, "import_rows");
    tmux.keys(&["Enter"]);
    tmux.wait("the argument form", |s| s.contains("New task: import_rows"));
    tmux.keys(&["Enter"]);
    let import = wait_new_id(&tr, &before);
    let screen = tmux.wait("the new import_rows row, working", |s| {
        row_has(s, &import, "working")
    });
    assert!(row_has(&screen, &import, "import_rows"), "{screen}");
    select(&tmux, &import);
    tmux.keys(&["c"]);
    tmux.wait("the cancel question", |s| s.contains("Cancel import_rows"));
    tmux.keys(&["y"]);
    let screen = tmux.wait("the cancel-requested mark", |s| {
        !s.contains("Cancel import_rows")
            && (row_has(s, &import, "cancel requested") || row_has(s, &import, "cancelling"))
    });
    show("cancel requested (120x35)", &screen);
    let screen = tmux.wait("the row to say cancelled", |s| {
        row_has(s, &import, "⊘ cancelled")
    });
    show("after cancel (120x35)", &screen);
    assert_eq!(get(&tr, url, &import)["status"], "cancelled");

    // q restores the terminal; a new start shows the same tasks again.
    tmux.keys(&["q"]);
    let screen = tmux.wait("the shell after q", |s| s.contains(&format!("{EXITED}0")));
    assert!(
        !tmux.alternate_screen(),
        "the alternate screen is still on after q:\n{screen}"
    );
    assert!(!screen.contains("panicked"), "{screen}");

    tmux.start_dashboard(&tr, &format!("--server {url}"));
    let screen = tmux.wait("every earlier task back on the board", |s| {
        row_has(s, &ask, "completed")
            && row_has(s, &import, "cancelled")
            && row_has(s, &lint, "✖ tool error")
            && row(s, &report).is_some()
    });
    show("restarted on the same ledger (120x35)", &screen);
    tmux.keys(&["q"]);
    tmux.wait("the second exit", |s| {
        s.matches(&format!("{EXITED}0")).count() == 2
    });
    assert!(!tmux.alternate_screen());
}

#[test]
fn resizing_keeps_the_board_rendering() {
    let demo = DemoProcess::start(&["--time-scale", "0.3"]);
    let url = demo.url.as_str();
    let tr = Taskrail::new();
    let ids: Vec<String> = ["import_rows", "render_report", "import_rows"]
        .iter()
        .map(|tool| call(&tr, url, tool, "{}"))
        .collect();

    let tmux = Tmux::start("resize");
    tmux.start_dashboard(&tr, &format!("--server {url}"));
    tmux.wait("the rows", |s| ids.iter().all(|id| row(s, id).is_some()));

    tmux.resize(60, 16);
    let screen = tmux.wait("the board at 60x16", |s| {
        let lines: Vec<&str> = s.lines().collect();
        lines.len() <= 16
            && lines.first().is_some_and(|l| l.contains(" taskrail "))
            && s.contains(" id ")
            && ids.iter().all(|id| row(s, id).is_some())
            && lines.iter().all(|l| l.chars().count() <= 60)
    });
    show("board at 60x16", &screen);
    assert!(tmux.alternate_screen(), "the dashboard is gone:\n{screen}");

    // Smaller still, keys while small, then back.
    tmux.resize(24, 5);
    tmux.wait("the table at 24x5", |s| {
        s.contains(" id ") && s.contains('›')
    });
    tmux.keys(&["j"]);
    tmux.keys(&["?"]);
    tmux.wait("the help at 24x5", |s| s.contains("Help"));
    tmux.keys(&["Escape"]);
    tmux.wait("the help closed at 24x5", |s| !s.contains("Help"));
    // to the next status tab and back: the rows stay on "All" whether or not the
    // tasks finished meanwhile (on "Active", finished ones would be gone)
    tmux.keys(&["Tab"]);
    tmux.keys(&["BTab"]);
    tmux.resize(120, 35);
    let screen = tmux.wait("the board at 120x35 again", |s| {
        s.contains("sort age") && ids.iter().all(|id| row(s, id).is_some())
    });
    assert!(tmux.alternate_screen(), "the dashboard is gone:\n{screen}");
    tmux.keys(&["q"]);
    let screen = tmux.wait("the shell after q", |s| s.contains(&format!("{EXITED}0")));
    assert!(!screen.contains("panicked"), "{screen}");
    assert!(!tmux.alternate_screen());
}

/// Task ids in the ledger.
fn ledger_ids(tr: &Taskrail) -> Vec<String> {
    let run = tr.run(&["ls", "--all", "--json"], CLI_LIMIT);
    assert_eq!(run.code, Some(0), "taskrail ls failed: {run:#?}");
    run.json_lines()
        .iter()
        .filter_map(|t| t["taskId"].as_str().map(String::from))
        .collect()
}

/// Wait (bounded) for a task id in the ledger that is not in `before`.
fn wait_new_id(tr: &Taskrail, before: &[String]) -> String {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Some(id) = ledger_ids(tr).into_iter().find(|id| !before.contains(id)) {
            return id;
        }
        assert!(
            Instant::now() < deadline,
            "no new task reached the ledger in {LIMIT:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_plain_web_server_is_named_as_such_and_its_tool_picker_can_be_left() {
    let web = support::plain_web_http();
    let tr = Taskrail::new();
    let tmux = Tmux::start("plainweb");
    tmux.launch_dashboard(&tr, &format!("--server {}", web.url));
    let name = web.url.trim_start_matches("http://");
    let screen = tmux.wait("the reason, in words, in the header", |s| {
        s.lines()
            .any(|l| l.contains(name) && l.contains("not an MCP endpoint (HTTP 501)"))
    });
    show("a plain web server (120x35)", &screen);
    assert!(
        !screen.contains("http://"),
        "the header names it without a scheme:\n{screen}"
    );

    tmux.keys(&["n"]);
    let screen = tmux.wait("the tool picker saying why", |s| {
        s.contains("pick a tool") && s.contains("check its path")
    });
    show("the tool picker on it (120x35)", &screen);
    assert!(!screen.contains("listing tools…"), "{screen}");
    tmux.keys(&["Escape"]);
    tmux.wait("the picker gone", |s| !s.contains("pick a tool"));

    tmux.keys(&["v"]);
    let screen = tmux.wait("the server's detail", |s| {
        s.contains("Servers") && s.contains("not an MCP endpoint") && s.contains("check its path")
    });
    show("the servers view (120x35)", &screen);
    tmux.escape_from("check its path");
    tmux.quit();
}

#[test]
fn five_configured_servers_show_as_five_with_names_a_person_can_tell_apart() {
    let demo = DemoProcess::start(&[]);
    let fastmcp = support::fastmcp_http();
    let everything = support::everything_http();
    let tower = support::tower_http();
    let stdio = support::fastmcp_stdio_command()
        .iter()
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let tr = Taskrail::new();
    let config = tr.dir().join("config.toml");
    let mut text = String::new();
    for url in [&demo.url, &fastmcp.url, &everything.url, &tower.url] {
        text.push_str(&format!("[[server]]\nurl = \"{url}\"\n\n"));
    }
    text.push_str(&format!(
        "[[server]]\ncommand = \"{}\"\n",
        stdio.replace('"', "\\\"")
    ));
    std::fs::write(&config, text).unwrap();

    let tmux = Tmux::start("five");
    tmux.launch_dashboard(&tr, &format!("--config {}", config.display()));
    let names: Vec<String> = [&demo.url, &fastmcp.url, &everything.url, &tower.url]
        .iter()
        .map(|u| u.trim_start_matches("http://").to_string())
        .chain(["fastmcp_peer.py".to_string()])
        .collect();
    let screen = tmux.wait("five servers, connected, by their short names", |s| {
        let header: Vec<&str> = s.lines().skip(1).take(5).collect();
        names
            .iter()
            .zip(&header)
            .all(|(n, l)| l.contains(n.as_str()) && l.contains("connected"))
    });
    show("five servers (120x35)", &screen);
    assert!(!screen.contains("more servers"), "{screen}");
    assert!(!screen.contains("http://"), "{screen}");
    for line in screen.lines().skip(1).take(5) {
        assert!(
            line.contains(" push ")
                || line.contains(" polling ")
                || line.contains("push supported"),
            "every server says how it gets updates: {line}"
        );
        assert!(line.chars().count() <= 120, "{line}");
    }
    tmux.quit();
}

/// Send `signal` to the dashboard running in the pane; wait for the shell to be back.
fn end_dashboard_with(tmux: &Tmux, signal: &str, exits_before: usize) -> String {
    assert!(tmux.alternate_screen());
    let pid = tmux.foreground_pid();
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let screen = tmux.wait(&format!("the shell after SIG{signal}"), |s| {
        s.matches(EXITED).count() > exits_before
    });
    assert!(
        !tmux.alternate_screen(),
        "still on the alternate screen after SIG{signal}:\n{screen}"
    );
    assert!(!screen.contains("panicked"), "{screen}");
    screen
}

#[test]
fn sigterm_and_sighup_restore_the_terminal() {
    let demo = DemoProcess::start(&[]);
    let tr = Taskrail::new();
    let tmux = Tmux::start("sigterm");
    tmux.start_dashboard(&tr, &format!("--server {}", demo.url));
    end_dashboard_with(&tmux, "TERM", 0);
    // the line discipline is back to cooked mode: echo, canonical input, signals
    tmux.type_text(
        "clear; echo stty-begin; stty -a | tr ' ;' '\\n\\n' | grep -x -e '-*icanon' -e '-*echo' -e '-*isig'; echo stty-end",
    );
    tmux.keys(&["Enter"]);
    let screen = tmux.wait("stty's flags", |s| {
        s.lines().any(|l| l.trim() == "stty-end")
    });
    show("stty after SIGTERM", &screen);
    let flags: Vec<&str> = screen
        .lines()
        .map(str::trim)
        .skip_while(|l| *l != "stty-begin")
        .take_while(|l| *l != "stty-end")
        .collect();
    for flag in ["icanon", "echo", "isig"] {
        assert!(
            flags.contains(&flag),
            "{flag} is off after SIGTERM: {flags:?}\n{screen}"
        );
    }
    // a hangup (the terminal window closed) leaves the same way
    tmux.type_text("clear");
    tmux.keys(&["Enter"]);
    tmux.start_dashboard(&tr, &format!("--server {}", demo.url));
    end_dashboard_with(&tmux, "HUP", 0);
}

#[test]
fn an_80x24_terminal_shows_the_board_help_and_a_form_whole() {
    let demo = DemoProcess::start(&["--time-scale", "0.5"]);
    let url = demo.url.as_str();
    let tr = Taskrail::new();
    let ask = call(
        &tr,
        url,
        "wait_for_input",
        r#"{"prompt":"Name the release"}"#,
    );
    call(&tr, url, "render_report", r#"{"pages":100}"#);
    let tmux = Tmux::start("small");
    tmux.resize(80, 24);
    tmux.start_dashboard(&tr, &format!("--server {url}"));
    let fits = |s: &str| s.lines().count() <= 24 && s.lines().all(|l| l.chars().count() <= 80);

    let screen = tmux.wait("the board at 80x24", |s| {
        fits(s) && row_has(s, &ask, "input needed")
    });
    show("board (80x24)", &screen);
    let footer = screen.lines().last().unwrap_or("");
    assert!(footer.contains("? help"), "the footer: {footer:?}");
    assert!(
        !footer.trim_end().ends_with('…'),
        "cut at the edge: {footer:?}"
    );

    tmux.keys(&["?"]);
    let screen = tmux.wait("the help at 80x24", |s| fits(s) && s.contains("Help"));
    show("help (80x24)", &screen);
    // a long description wraps under its column instead of running off the edge
    assert!(
        screen.contains("Quit (tasks keep running on their servers; they are in"),
        "{screen}"
    );
    assert!(screen.contains("the ledger)"), "{screen}");
    tmux.keys(&["Escape"]);
    tmux.wait("the help closed", |s| !s.contains("Help"));

    select(&tmux, &ask);
    tmux.keys(&["a"]);
    let screen = tmux.wait("the input form at 80x24", |s| {
        fits(s) && s.contains("Input for wait_for_input") && s.contains("Name the release")
    });
    show("input form (80x24)", &screen);
    assert!(
        screen.contains("enter"),
        "the form's keys are shown:\n{screen}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait("the form closed", |s| !s.contains("Input for"));
    tmux.quit();
}
