//! Every input kind against real servers nobody on this project wrote: the TypeScript
//! SDK's example servers (`simpleTaskInteractive`: task elicitation and task sampling;
//! `elicitationFormExample`: a form outside any task; `elicitationUrlExample`: URL-mode
//! elicitation on the session stream and through `-32042`; `toolWithSampleServer`:
//! sampling over stdio), server-everything's `trigger-*` tools (and the `*-async` ones,
//! which run as tasks hosted on taskrail) and `get-roots-list`, and FastMCP's
//! multi-round-trip tools. The person is played through tmux (the dashboard, or `taskrail
//! call` on a terminal); without a terminal the CLI declines. All peers bind 127.0.0.1.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::browser::{FakeBrowser, request};
use support::taskrail::Taskrail;
use support::tmux::Tmux;

const LIMIT: Duration = Duration::from_secs(90);

/// A config file naming one server `peer` (`target` is `url = "…"` or `command = "…"`).
fn config(tr: &Taskrail, target: &str, extra: &str) -> PathBuf {
    let path = tr.dir().join("config.toml");
    std::fs::write(
        &path,
        format!("[[server]]\nname = \"peer\"\n{target}\n{extra}\n"),
    )
    .unwrap();
    path
}

fn url_target(url: &str) -> String {
    format!("url = \"{url}\"")
}

fn cfg_arg(cfg: &Path) -> String {
    format!("--config '{}'", cfg.display())
}

/// `taskrail call` on a terminal (tmux), stdout to a file; returns (exit code, stdout JSON).
fn call_on_terminal(
    tmux: &Tmux,
    tr: &Taskrail,
    env: &str,
    cfg: &Path,
    tool: &str,
    args: &str,
    person: impl FnOnce(&Tmux),
) -> (i32, serde_json::Value) {
    let out = tr.dir().join(format!("{tool}.json"));
    tmux.start_cli(
        tr,
        env,
        &format!(
            "{} call -s peer {tool} --args '{args}' > '{}'",
            cfg_arg(cfg),
            out.display()
        ),
    );
    person(tmux);
    let code = tmux.exit_code();
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let json = serde_json::from_str(text.trim()).unwrap_or(serde_json::Value::Null);
    (code, json)
}

/// The text of every content block of a tool result, joined.
fn text(result: &serde_json::Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn run_cli(tr: &Taskrail, cfg: &Path, args: &[&str]) -> support::taskrail::Run {
    let mut all = vec!["--config", cfg.to_str().unwrap()];
    all.extend_from_slice(args);
    tr.run(&all, LIMIT)
}

/// Press `key` until `cond` holds on screen: a legacy server delivers a task's input
/// request a moment after the task says it waits for input.
fn press_until(tmux: &Tmux, key: &str, what: &str, cond: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(40);
    loop {
        tmux.keys(&[key]);
        std::thread::sleep(Duration::from_millis(300));
        let screen = tmux.screen();
        if cond(&screen) {
            return screen;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what} did not show:\n{screen}"
        );
    }
}

// ---- simpleTaskInteractive: a legacy task's elicitation and sampling -------------------

/// Start `tool` from the dashboard's new-task flow (a legacy server sends input to the
/// session that follows the task) with `arg` typed into its one field.
fn new_task(tmux: &Tmux, tool: &str, arg: &str) {
    tmux.keys(&["n"]);
    tmux.wait("the tool picker", |s| s.contains(tool));
    for _ in 0..20 {
        if tmux
            .screen()
            .lines()
            .any(|l| l.contains(&format!("› {tool}")))
        {
            break;
        }
        tmux.keys(&["j"]);
        std::thread::sleep(Duration::from_millis(50));
    }
    tmux.keys(&["Enter"]);
    tmux.wait("the argument form", |s| {
        s.contains(&format!("New task: {tool}"))
    });
    tmux.type_text(arg);
    tmux.keys(&["Enter"]);
}

#[test]
fn simple_task_interactive_confirm_delete_is_answered_in_the_form() {
    let peer = support::sdk_example("simpleTaskInteractive");
    let tr = Taskrail::new();
    let cfg = config(&tr, &url_target(&peer.url), "");
    let tmux = Tmux::start("sti-confirm");
    tmux.start_dashboard(&tr, &cfg_arg(&cfg));
    new_task(&tmux, "confirm_delete", "notes.txt");
    tmux.wait("the task to wait for input", |s| {
        s.contains("confirm_delete") && s.contains("input needed")
    });
    press_until(&tmux, "a", "the form", |s| {
        s.contains("Are you sure you want to delete 'notes.txt'?")
    });
    tmux.keys(&["Space", "Enter"]);
    tmux.wait("the task to complete", |s| {
        s.contains("confirm_delete") && s.contains("completed")
    });
    tmux.keys(&["Enter"]);
    tmux.wait("the result", |s| s.contains("Deleted 'notes.txt'"));
    tmux.escape_from("╭ Task ");
    tmux.quit();
}

#[test]
fn simple_task_interactive_write_haiku_is_answered_by_typing() {
    let peer = support::sdk_example("simpleTaskInteractive");
    let tr = Taskrail::new();
    let cfg = config(&tr, &url_target(&peer.url), "sampling = \"person\"");
    let tmux = Tmux::start("sti-haiku");
    tmux.start_dashboard(&tr, &cfg_arg(&cfg));
    new_task(&tmux, "write_haiku", "tide pools");
    tmux.wait("the task to wait for input", |s| {
        s.contains("write_haiku") && s.contains("input needed")
    });
    let screen = press_until(&tmux, "a", "the sampling view", |s| {
        s.contains("Write a haiku about tide pools")
    });
    assert!(screen.contains("max tokens  50"), "{screen}");
    tmux.type_text("Still water, small crabs");
    tmux.keys(&["C-s"]);
    tmux.wait("the task to complete", |s| {
        s.contains("write_haiku") && s.contains("completed")
    });
    tmux.keys(&["Enter"]);
    tmux.wait("the haiku in the result", |s| {
        s.contains("Still water, small crabs")
    });
    tmux.escape_from("╭ Task ");
    tmux.quit();
}

#[test]
fn simple_task_interactive_sampling_not_offered_is_said_and_refused_into_a_readable_failure() {
    let peer = support::sdk_example("simpleTaskInteractive");
    let tr = Taskrail::new();
    let cfg = config(&tr, &url_target(&peer.url), "");
    // Sampling is not declared to this server.
    let tmux = Tmux::start("sti-no-sampling");
    tmux.start_dashboard(&tr, &cfg_arg(&cfg));
    new_task(&tmux, "write_haiku", "autumn");
    let screen = tmux.wait("the row to say sampling is not offered", |s| {
        s.contains("wants sampling")
    });
    assert!(screen.contains("taskrail does not"), "{screen}");
    press_until(&tmux, "a", "the sampling view", |s| {
        s.contains("Sampling is not offered to this server")
    });
    tmux.keys(&["C-d"]);
    // The legacy server ends it `failed` with an `isError` result: a tool error, as the
    // exit code of `taskrail call` says too.
    let screen = tmux.wait("the task to end in a tool error", |s| {
        s.contains("write_haiku") && s.contains("tool error")
    });
    let row = screen.lines().find(|l| l.contains("write_haiku")).unwrap();
    assert!(row.contains("Error"), "the row says why: {row}");
    tmux.keys(&["Enter"]);
    tmux.wait("the reason in the detail view", |s| {
        s.contains("User rejected sampling request")
    });
    tmux.escape_from("╭ Task ");
    tmux.quit();
}

// ---- elicitationFormExample: a form outside any task ------------------------------------

#[test]
fn a_form_outside_any_task_opens_in_call_on_a_terminal() {
    let peer = support::sdk_example("elicitationFormExample");
    let tr = Taskrail::new();
    let cfg = config(&tr, &url_target(&peer.url), "");
    let tmux = Tmux::start("form-call");
    let (code, result) = call_on_terminal(&tmux, &tr, "", &cfg, "register_user", "{}", |t| {
        t.wait("the form", |s| {
            s.contains("Please provide your registration information")
        });
        t.type_text("ada");
        t.keys(&["Tab"]);
        t.type_text("ada@example.com");
        t.keys(&["Tab"]);
        t.type_text("correct horse");
        t.keys(&["Enter"]);
    });
    assert_eq!(code, 0, "{}", tmux.screen());
    let text = text(&result);
    assert!(
        text.contains("Registration successful!") && text.contains("Username: ada"),
        "{text}"
    );
}

#[test]
fn without_a_terminal_a_form_outside_any_task_is_declined_with_the_reason() {
    let peer = support::sdk_example("elicitationFormExample");
    let tr = Taskrail::new();
    let cfg = config(&tr, &url_target(&peer.url), "");
    let run = run_cli(&tr, &cfg, &["call", "-s", "peer", "register_user"]);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stderr.contains("stdin is not a terminal"),
        "{}",
        run.stderr
    );
    assert!(
        text(&run.json()).contains("Registration cancelled by user."),
        "{run:#?}"
    );
}

// ---- elicitationUrlExample: URL mode on the session stream and through -32042 -----------

fn url_example(tr: &Taskrail) -> (support::Peer, PathBuf) {
    let peer = support::sdk_example("elicitationUrlExample");
    let token = peer
        .extra
        .clone()
        .expect("the launcher signs in and prints a token");
    let cfg = config(
        tr,
        &url_target(&peer.url),
        &format!("headers = {{ Authorization = \"Bearer {token}\" }}"),
    );
    (peer, cfg)
}

/// The example's pages check the session cookie its authorization server sets.
const COOKIE: &str =
    "demo_session=%7B%22userId%22%3A%22demo_user%22%2C%22name%22%3A%22Demo%20User%22%7D";

fn query(url: &str, name: &str) -> String {
    url.split(['?', '&'])
        .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_link_the_server_completes_by_itself_closes_its_view_and_the_call_is_sent_again() {
    let tr = Taskrail::new();
    let (_peer, cfg) = url_example(&tr);
    let browser = FakeBrowser::new(tr.dir());
    let tmux = Tmux::start("url-server-done");
    tmux.type_text(&format!("export {}; ", browser.env()));
    tmux.start_dashboard(&tr, &cfg_arg(&cfg));
    new_task(&tmux, "third-party-auth", "x");
    // Our own call asks: its consent view opens at once.
    let screen = tmux.wait("the consent view", |s| {
        s.contains("requires access to your example.com account")
    });
    assert!(screen.contains("site  www.example.com"), "{screen}");
    assert!(browser.opened().is_empty(), "nothing is opened unasked");
    // The example completes the interaction itself after 5 s
    // (`notifications/elicitation/complete`): the view closes, the call is sent again —
    // and this example asks again every time, so after a bounded number of rounds the
    // call ends, saying why.
    let screen = tmux.wait("the rounds to end the call", |s| {
        s.contains("5 times in a row")
    });
    assert!(screen.contains("third-party-auth failed"), "{screen}");
    assert!(
        !screen.contains("to visit a link"),
        "no view left open:\n{screen}"
    );
    assert!(browser.opened().is_empty());
    tmux.quit();
}

#[test]
fn a_url_required_error_is_consented_to_and_the_call_sent_again_in_call_on_a_terminal() {
    let tr = Taskrail::new();
    let (_peer, cfg) = url_example(&tr);
    let browser = FakeBrowser::new(tr.dir());
    let tmux = Tmux::start("url-required");
    let (code, _) = call_on_terminal(
        &tmux,
        &tr,
        &browser.env(),
        &cfg,
        "payment-confirm",
        r#"{"cartId":"cart-42"}"#,
        |t| {
            t.wait("the consent view", |s| {
                s.contains("Open the link to confirm payment!")
            });
            t.keys(&["o"]);
            let url = browser.wait_opened(1);
            assert!(
                url.contains("/confirm-payment?") && url.contains("cartId=cart-42"),
                "{url}"
            );
            let body = format!(
                "session={}&elicitation={}&cartId=cart-42&action=confirm",
                query(&url, "session"),
                query(&url, "elicitation")
            );
            let (status, page) = request(
                "POST",
                url.split('?').next().unwrap(),
                &[
                    ("Content-Type", "application/x-www-form-urlencoded"),
                    ("Cookie", COOKIE),
                ],
                &body,
            );
            assert_eq!(status, 200, "{page}");
            // The completion notice closes the view and sends the call again; this example
            // always asks again (a fresh view: nothing opened from it yet).
            t.wait("the second view", |s| {
                s.contains("Open the link to confirm payment!")
                    && !s.contains("opened in your browser")
            });
            t.keys(&["o"]);
            let again = browser.wait_opened(2);
            assert_ne!(
                query(&again, "elicitation"),
                query(&url, "elicitation"),
                "a new request"
            );
            t.keys(&["C-d"]);
        },
    );
    assert_eq!(code, 6, "the call ends with its error: {}", tmux.screen());
    let screen = tmux.screen();
    assert!(
        screen.contains("the link it requires was refused"),
        "{screen}"
    );
}

// ---- toolWithSampleServer: sampling over stdio ------------------------------------------

#[test]
fn sampling_over_stdio_through_the_configured_command() {
    let tr = Taskrail::new();
    let llm = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_llm.sh");
    let command = support::sdk_stdio_example("toolWithSampleServer");
    let command = command.strip_prefix("stdio:").unwrap();
    let cfg = config(
        &tr,
        &format!("command = \"{command}\""),
        &format!("sampling = {{ command = \"{}\" }}", llm.display()),
    );
    let tmux = Tmux::start("stdio-sampling");
    let (code, result) = call_on_terminal(
        &tmux,
        &tr,
        "",
        &cfg,
        "summarize",
        r#"{"text":"a long text"}"#,
        |t| {
            let screen = t.wait("the sampling view", |s| {
                s.contains("Please summarize the following text")
            });
            assert!(screen.contains("during summarize"), "{screen}");
            t.keys(&["C-r"]);
            t.wait("the command's output", |s| s.contains("Fake model reply"));
            t.keys(&["C-s"]);
        },
    );
    assert_eq!(code, 0, "{}", tmux.screen());
    assert!(
        text(&result).starts_with("Fake model reply: I read a sampling request"),
        "{result}"
    );
    // Not configured: sampling is not declared, and refused in words.
    let plain = config(&tr, &format!("command = \"{command}\""), "");
    let run = run_cli(
        &tr,
        &plain,
        &[
            "call",
            "-s",
            "peer",
            "summarize",
            "--args",
            r#"{"text":"x"}"#,
        ],
    );
    assert_eq!(run.code, Some(1), "a tool error: {run:#?}");
    assert!(
        text(&run.json()).contains("taskrail does not offer sampling"),
        "{run:#?}"
    );
}

// ---- server-everything: the trigger tools, hosted tasks, roots --------------------------

fn everything(tr: &Taskrail, extra: &str) -> (support::Peer, PathBuf) {
    let peer = support::everything_http();
    let cfg = config(tr, &url_target(&peer.url), extra);
    (peer, cfg)
}

#[test]
fn everything_offers_the_tools_of_what_is_declared_only() {
    let tr = Taskrail::new();
    let (_peer, plain) = everything(&tr, "");
    // The name is what the user types: whole at any width (the description is cut).
    for columns in ["40", "80", "200"] {
        let narrow = Taskrail::new().with_env("COLUMNS", columns);
        let tools = run_cli(&narrow, &plain, &["tools", "-s", "peer"]).stdout;
        for name in ["trigger-elicitation-request ", "trigger-url-elicitation "] {
            assert!(tools.contains(name), "COLUMNS={columns}: {tools}");
        }
    }
    let tools = run_cli(&tr, &plain, &["tools", "-s", "peer"]).stdout;
    assert!(
        tools.contains("trigger-url-elicitation"),
        "URL mode is declared: {tools}"
    );
    assert!(
        !tools.contains("trigger-sampling-request"),
        "no sampling declared: {tools}"
    );
    assert!(
        !tools.contains("get-roots-list"),
        "no roots declared: {tools}"
    );
    let (_peer, full) = everything(
        &tr,
        "sampling = \"person\"\nroots = [\"file:///work/repo\"]",
    );
    let tools = run_cli(&tr, &full, &["tools", "-s", "peer"]).stdout;
    assert!(
        tools.contains("trigger-sampling-request") && tools.contains("get-roots-list"),
        "{tools}"
    );
}

#[test]
fn everything_get_roots_list_is_answered_from_the_config() {
    let tr = Taskrail::new();
    let (_peer, cfg) = everything(&tr, "roots = [\"file:///work/repo\", \"file:///srv/data\"]");
    let run = run_cli(&tr, &cfg, &["call", "-s", "peer", "get-roots-list"]);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let text = text(&run.json());
    assert!(
        text.contains("file:///work/repo") && text.contains("file:///srv/data"),
        "{text}"
    );
    assert!(run.stderr.contains("roots sent to peer"), "{}", run.stderr);
}

#[test]
fn everything_trigger_elicitation_request_in_call_on_a_terminal() {
    let tr = Taskrail::new();
    let (_peer, cfg) = everything(&tr, "");
    let tmux = Tmux::start("ev-elicit");
    let (code, result) = call_on_terminal(
        &tmux,
        &tr,
        "",
        &cfg,
        "trigger-elicitation-request",
        "{}",
        |t| {
            t.wait("the form", |s| {
                s.contains("Please provide inputs for the following fields")
            });
            t.type_text("Grace Hopper");
            t.keys(&["Enter"]);
        },
    );
    assert_eq!(code, 0, "{}", tmux.screen());
    let text = text(&result);
    assert!(
        text.contains("User provided the requested information")
            && text.contains("Name: Grace Hopper"),
        "{text}"
    );
}

#[test]
fn everything_trigger_url_elicitation_both_paths() {
    let tr = Taskrail::new();
    let (_peer, cfg) = everything(&tr, "");
    let browser = FakeBrowser::new(tr.dir());
    let tmux = Tmux::start("ev-url");
    let args = r#"{"url":"http://shop.example/pay?x=1"}"#;
    let (code, result) = call_on_terminal(
        &tmux,
        &tr,
        &browser.env(),
        &cfg,
        "trigger-url-elicitation",
        args,
        |t| {
            // down to its key line: a capture can land between two writes of one frame
            let screen = t.wait("the consent view", |s| {
                s.contains("to visit a link") && s.contains(" decline ")
            });
            assert!(screen.contains("plain http to shop.example"), "{screen}");
            t.keys(&["o"]);
            assert_eq!(browser.wait_opened(1), "http://shop.example/pay?x=1");
            t.keys(&["d"]);
        },
    );
    assert_eq!(code, 0, "{}", tmux.screen());
    assert!(
        text(&result).contains("User completed the URL elicitation flow"),
        "{result}"
    );
    // The error path: -32042 names a prerequisite link; once it is done the call is sent
    // again and asks for the original link.
    let args = r#"{"url":"https://shop.example/pay","errorPath":true}"#;
    let (code, result) = call_on_terminal(
        &tmux,
        &tr,
        &browser.env(),
        &cfg,
        "trigger-url-elicitation",
        args,
        |t| {
            t.wait("the prerequisite link", |s| {
                s.contains("site  modelcontextprotocol.io")
            });
            t.keys(&["d"]);
            t.wait("the original link", |s| s.contains("site  shop.example"));
            t.keys(&["d"]);
        },
    );
    assert_eq!(code, 0, "{}", tmux.screen());
    assert!(
        text(&result).contains("URL: https://shop.example/pay"),
        "{result}"
    );
}

#[test]
fn everything_trigger_sampling_request_is_answered_by_typing() {
    let tr = Taskrail::new();
    let (_peer, cfg) = everything(&tr, "sampling = \"person\"");
    let tmux = Tmux::start("ev-sampling");
    let args = r#"{"prompt":"capital of France?","maxTokens":20}"#;
    let (code, result) = call_on_terminal(
        &tmux,
        &tr,
        "",
        &cfg,
        "trigger-sampling-request",
        args,
        |t| {
            // down to its key line: a capture can land between two writes of one frame
            let screen = t.wait("the sampling view", |s| {
                s.contains("capital of France?") && s.contains(" send ")
            });
            assert!(
                screen.contains("You are a helpful test server."),
                "{screen}"
            );
            assert!(screen.contains("max tokens  20"), "{screen}");
            t.type_text("Paris.");
            t.keys(&["C-s"]);
        },
    );
    assert_eq!(code, 0, "{}", tmux.screen());
    let text = text(&result);
    assert!(
        text.contains("\"text\": \"Paris.\"") && text.contains("\"role\": \"assistant\""),
        "{text}"
    );
}

#[test]
fn everything_async_requests_run_as_tasks_hosted_on_taskrail() {
    let tr = Taskrail::new();
    let (_peer, cfg) = everything(&tr, "sampling = \"person\"");
    let tmux = Tmux::start("ev-async");
    let (code, result) = call_on_terminal(
        &tmux,
        &tr,
        "",
        &cfg,
        "trigger-elicitation-request-async",
        "{}",
        |t| {
            t.wait("the form", |s| s.contains("async task demo"));
            t.type_text("Ada");
            t.keys(&["Enter"]);
        },
    );
    assert_eq!(code, 0, "{}", tmux.screen());
    let text = text(&result);
    assert!(
        text.contains("[COMPLETED]") && text.contains("Name: Ada"),
        "{text}"
    );
    assert!(
        text.contains("Task created:"),
        "the server polled a task hosted here: {text}"
    );
    let args = r#"{"prompt":"hello","maxTokens":10}"#;
    let (code, result) = call_on_terminal(
        &tmux,
        &tr,
        "",
        &cfg,
        "trigger-sampling-request-async",
        args,
        |t| {
            t.wait("the sampling view", |s| s.contains("context: hello"));
            t.type_text("Hi there.");
            t.keys(&["C-s"]);
        },
    );
    assert_eq!(code, 0, "{}", tmux.screen());
    let text = self::text(&result);
    assert!(
        text.contains("[COMPLETED] Async sampling completed!") && text.contains("Hi there."),
        "{text}"
    );
}

// ---- FastMCP: the modern multi-round-trip input ------------------------------------------

#[test]
fn fastmcp_multi_round_trip_form_on_a_terminal_and_declined_without_one() {
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    let cfg = config(&tr, &url_target(&peer.url), "");
    let tmux = Tmux::start("fast-mrtr");
    let (code, result) = call_on_terminal(
        &tmux,
        &tr,
        "",
        &cfg,
        "confirm_now",
        r#"{"item":"the build cache"}"#,
        |t| {
            t.wait("the form", |s| s.contains("Really clear the build cache?"));
            t.keys(&["Space", "Enter"]);
        },
    );
    assert_eq!(code, 0, "{}", tmux.screen());
    assert_eq!(
        text(&result),
        "cleared the build cache (state round-1)",
        "requestState echoed"
    );
    let run = run_cli(&tr, &cfg, &["call", "-s", "peer", "confirm_now"]);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stderr.contains("stdin is not a terminal"),
        "{}",
        run.stderr
    );
    assert_eq!(
        text(&run.json()),
        "kept the cache (action=decline, state round-1)"
    );
}

#[test]
fn fastmcp_multi_round_trip_roots_and_sampling() {
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    let cfg = config(
        &tr,
        &url_target(&peer.url),
        "roots = [\"file:///work/repo\"]\nsampling = \"person\"",
    );
    let run = run_cli(&tr, &cfg, &["call", "-s", "peer", "roots_now"]);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(
        text(&run.json()),
        "roots: file:///work/repo",
        "answered without asking"
    );
    let tmux = Tmux::start("fast-haiku");
    let (code, result) = call_on_terminal(
        &tmux,
        &tr,
        "",
        &cfg,
        "haiku_now",
        r#"{"topic":"rain"}"#,
        |t| {
            t.wait("the sampling view", |s| {
                s.contains("Write a haiku about rain.")
            });
            t.type_text("Rain on the tin roof");
            t.keys(&["C-s"]);
        },
    );
    assert_eq!(code, 0, "{}", tmux.screen());
    assert_eq!(text(&result), "haiku: Rain on the tin roof (model person)");
    // Without sampling offered the call cannot be answered, and says so.
    let plain = config(&tr, &url_target(&peer.url), "");
    let run = run_cli(&tr, &plain, &["call", "-s", "peer", "haiku_now"]);
    assert_eq!(run.code, Some(6), "{run:#?}");
    assert!(
        run.stderr.contains("which taskrail does not offer here"),
        "{}",
        run.stderr
    );
}
