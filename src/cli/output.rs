//! What the CLI prints and how: JSON in the wire's camelCase (`watch --json` lines, ledger
//! records, tools), human status lines, response normalisation for answers, and the two
//! writers — stdout, where a closed pipe (`| head`) ends the command quietly, and stderr,
//! whose lines are best effort and never panic. Every line the CLI writes goes through
//! here (`say!`, `out!`, `write_out`, `finish`).
//!
//! Everything a server sent is untrusted: free text goes through `sanitize`; ids and keys
//! go through `shown`, which prints them as they are only when every character is
//! printable and otherwise escaped and marked, so a cleaned-up look-alike never passes
//! for the real value; a command line to paste is only offered when every word can be
//! quoted safely (`command_line`); JSON goes through `sanitize::json_line`. Formatting
//! and writing only.

use std::fmt;
use std::io::Write;

use serde_json::{Value, json};

use crate::engine::UpdateSource;
use crate::ledger::TaskRecord;
use crate::mcp::{Task, ToolInfo};
use crate::sanitize::{is_printable, sanitize_line};

/// How much of an unprintable id or key is shown escaped.
const SHOWN_CHARS: usize = 120;

/// A last pass over human lines: nothing unprintable reaches the terminal (our own line
/// breaks stay; a tab is a space).
fn inert(text: &str) -> String {
    text.chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .filter(|c| *c == '\n' || is_printable(*c))
        .collect()
}

/// A character an id may show as it is: printable, and no whitespace but the space.
fn plain_char(c: char) -> bool {
    is_printable(c) && (c == ' ' || !c.is_whitespace())
}

/// Whether `s` can be shown and quoted as it is.
fn plain(s: &str) -> bool {
    !s.is_empty() && s.chars().all(plain_char)
}

/// A server-chosen id or key for a person: itself when it is plain printable text,
/// otherwise `«escaped: …»` with every other character as `\u{…}`.
pub fn shown(s: &str) -> String {
    if plain(s) {
        return sanitize_line(s, 200);
    }
    let mut out = String::from("«escaped: ");
    for (i, c) in s.chars().enumerate() {
        if i == SHOWN_CHARS {
            out.push('…');
            break;
        }
        match c {
            '\\' => out.push_str("\\\\"),
            c if plain_char(c) => out.push(c),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    out.push('»');
    out
}

/// The short form of a task id (its first characters, and `…` when it is longer: ids are
/// bearer secrets), shown as [`shown`] does.
pub fn shown_short(id: &str) -> String {
    let head: String = id.chars().take(crate::ids::SHORT_LEN).collect();
    let mut s = shown(&head);
    if id.chars().count() > crate::ids::SHORT_LEN {
        s.push('…');
    }
    s
}

/// Why no command line is offered for a word that [`command_line`] refused.
pub const UNQUOTABLE: &str =
    "holds characters that cannot be quoted safely for a shell, so no command is offered";

/// `words` as one command line a shell reads back word for word, or `None` when a word
/// holds anything but printable text (NUL, controls, escapes, invisible characters).
pub fn command_line(words: &[&str]) -> Option<String> {
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        if !w.chars().all(plain_char) {
            return None;
        }
        out.push(shlex::try_quote(w).ok()?.into_owned());
    }
    Some(out.join(" "))
}

/// How much of an input request's JSON the prompt shows.
const REQUEST_PREVIEW: usize = 2000;

/// The request as one terminal-safe JSON line, cut when long.
pub fn request_preview(request: &crate::mcp::InputRequest) -> String {
    let mut v = serde_json::to_value(request).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.remove(REPLY_TO);
    }
    let json = crate::sanitize::json_line(&v);
    if json.len() <= REQUEST_PREVIEW {
        return json;
    }
    let cut: String = json.chars().take(REQUEST_PREVIEW).collect();
    format!("{cut}… ({} bytes in all)", json.len())
}

/// The field a legacy request carries to remember the server's request id: ours, never shown.
const REPLY_TO: &str = "_replyTo";

/// `v` without taskrail's own fields: every input request under an `inputRequests` loses
/// its `_replyTo` (kept in the ledger to answer a legacy server, meaningless to a person).
pub fn public(mut v: Value) -> Value {
    fn walk(v: &mut Value, depth: usize) {
        if depth > 8 {
            return;
        }
        if let Some(o) = v.as_object_mut() {
            if let Some(Value::Object(requests)) = o.get_mut("inputRequests") {
                for r in requests.values_mut() {
                    if let Some(r) = r.as_object_mut() {
                        r.remove(REPLY_TO);
                    }
                }
            }
            for (_, child) in o.iter_mut() {
                walk(child, depth + 1);
            }
        }
    }
    walk(&mut v, 0);
    v
}

/// `taskrail answer …` for one key of a request of `kind`, when every word quotes safely:
/// the response in that kind's own shape.
pub fn answer_command(
    server: &str,
    task_id: &str,
    key: &str,
    kind: Option<&crate::mcp::InputKind>,
) -> Option<String> {
    let response = super::answer_shape::example(kind);
    let base = ["taskrail", "answer", "--server", server];
    let words: Vec<&str> = if task_id.starts_with('-') || key.starts_with('-') {
        base.into_iter()
            .chain(["--json", response, "--", task_id, key])
            .collect()
    } else {
        base.into_iter()
            .chain([task_id, key, "--json", response])
            .collect()
    };
    command_line(&words)
}

/// Standard output is gone (the reader closed the pipe, or the disk is full): stop writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

/// Write `text` to stdout and flush. A closed pipe is `Err(Closed)` without a word; any
/// other write error is said once on stderr, then `Err(Closed)` too.
pub fn write_out(text: &str) -> Result<(), Closed> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Closed),
        Err(e) => {
            say_line(format_args!("error: cannot write to standard output: {e}"));
            Err(Closed)
        }
    }
}

/// Fires when the reader of standard output goes away (`| head -1` read its line and
/// exited), so a command that waits for the next change does not wait on a reader that
/// is gone. Never fires for a terminal or a file. A thread blocked in `poll` asking for no
/// event: a pipe's hang-up is reported all the same.
pub fn stdout_gone() -> tokio::sync::oneshot::Receiver<()> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("stdout-gone".into())
        .spawn(move || {
            let stdout = std::io::stdout();
            loop {
                let mut fds = [rustix::event::PollFd::new(
                    &stdout,
                    rustix::event::PollFlags::empty(),
                )];
                match rustix::event::poll(&mut fds, None) {
                    Ok(_) => {
                        let gone = rustix::event::PollFlags::ERR | rustix::event::PollFlags::HUP;
                        if fds[0].revents().intersects(gone) {
                            let _ = tx.send(());
                            return;
                        }
                    }
                    Err(rustix::io::Errno::INTR) => {}
                    Err(_) => return,
                }
            }
        });
    if spawned.is_err() {
        tracing::debug!("cannot watch standard output for its reader going away");
    }
    rx
}

/// One line to stdout (see [`write_out`]).
pub fn out_line(line: fmt::Arguments<'_>) -> Result<(), Closed> {
    write_out(&format!("{}\n", inert(&line.to_string())))
}

/// The end of a one-shot command: its output, then its exit code. A closed stdout loses
/// the output quietly; the code stays what the command came to.
pub fn finish(text: &str, code: u8) -> u8 {
    let _ = write_out(text);
    code
}

/// One line to stderr, best effort: a closed stderr loses it instead of panicking.
pub fn say_line(line: fmt::Arguments<'_>) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", inert(&line.to_string())).and_then(|()| err.flush());
}

/// `eprintln!` that never panics (see [`say_line`]).
macro_rules! say {
    ($($arg:tt)*) => { $crate::cli::output::say_line(format_args!($($arg)*)) };
}
pub(crate) use say;

/// `println!` that reports a closed stdout instead of panicking (see [`out_line`]).
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::output::out_line(format_args!($($arg)*)) };
}
pub(crate) use out;

/// A ledger record as `ls --json` prints it: the wire's camelCase, the full id.
pub fn record_json(r: &TaskRecord) -> Value {
    public(serde_json::to_value(r).unwrap_or(Value::Null))
}

/// A tool as `tools --json` prints it: `tools/list`'s own shape, `execution.taskSupport`
/// included.
pub fn tool_json(t: &ToolInfo) -> Value {
    let mut v = json!({ "name": t.name, "inputSchema": t.input_schema });
    if let Some(title) = &t.title {
        v["title"] = json!(title);
    }
    if let Some(d) = &t.description {
        v["description"] = json!(d);
    }
    if let Some(support) = &t.task_support {
        v["execution"] = json!({ "taskSupport": support });
    }
    v
}

/// One `watch --json` line.
pub fn task_line(server: &str, task: &Task, source: UpdateSource) -> Value {
    let source = match source {
        UpdateSource::Create => "create",
        UpdateSource::Push => "push",
        UpdateSource::Poll | UpdateSource::Resync => "poll",
        UpdateSource::Ledger => "ledger",
    };
    let mut v = json!({
        "server": server,
        "taskId": task.task_id,
        "status": task.status.as_str(),
        "statusMessage": task.status_message,
        "createdAt": task.created_at,
        "lastUpdatedAt": task.last_updated_at,
        "ttlMs": task.ttl_ms,
        "pollIntervalMs": task.poll_interval_ms,
        "source": source,
    });
    if !task.input_requests.is_empty() {
        v["inputRequests"] = serde_json::to_value(&task.input_requests).unwrap_or(Value::Null);
        v = public(v);
    }
    if task.more_input_requests > 0 {
        v["moreInputRequests"] = json!(task.more_input_requests);
    }
    if let Some(r) = &task.result {
        v["result"] = (**r).clone();
    }
    if let Some(e) = &task.error {
        v["error"] = serde_json::to_value(e).unwrap_or(Value::Null);
    }
    v
}

/// A one-line human summary of a snapshot.
pub fn status_line(task: &Task) -> String {
    let mut s = format!(
        "{} {}",
        shown_short(task.task_id.as_str()),
        sanitize_line(task.status.as_str(), 40)
    );
    if let Some(m) = &task.status_message {
        s.push_str(": ");
        s.push_str(&sanitize_line(m, 200));
    }
    if crate::mcp::outcome(Some(task), false) == Some(crate::mcp::Outcome::ToolError) {
        s.push_str(" (tool reported an error)");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unprintable_ids_are_escaped_and_marked() {
        assert_eq!(shown("task-123"), "task-123");
        assert_eq!(shown("it's a $(x)"), "it's a $(x)");
        let s = shown("x\u{0}y\u{1b}]0;t\u{7}\u{202e}z\\");
        assert_eq!(s, r"«escaped: x\u{0}y\u{1b}]0;t\u{7}\u{202e}z\\»");
        assert!(s.chars().all(is_printable));
        assert!(shown("a\nb").starts_with("«escaped: "));
        assert!(shown(&"\u{7}".repeat(1000)).chars().count() < 1000);
        assert_eq!(
            shown_short("\u{1b}]0;abcdefgh"),
            r"«escaped: \u{1b}]0;abcd»…"
        );
    }

    #[test]
    fn commands_are_offered_only_when_every_word_quotes_safely() {
        let line = command_line(&["taskrail", "watch", "--", "it's $(x)"]).unwrap();
        assert_eq!(
            shlex::split(&line).unwrap(),
            vec!["taskrail", "watch", "--", "it's $(x)"]
        );
        assert_eq!(command_line(&["x\u{0}'; touch PWNED; echo '"]), None);
        assert_eq!(command_line(&["k\u{1b}]52;c;AAAA\u{7}"]), None);
        assert_eq!(command_line(&["a\u{202e}b"]), None);
        assert_eq!(command_line(&["tab\there"]), None);
    }

    #[test]
    fn every_cli_line_goes_through_this_module() {
        fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    rust_files(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&root.join("cli"), &mut files);
        files.push(root.join("prompt.rs"));
        assert!(files.len() > 10, "{files:?}");
        for path in files {
            if path.file_name().is_some_and(|n| n == "output.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, line) in text.lines().enumerate() {
                assert!(
                    !["println!", "print!(", "eprintln!", "eprint!("]
                        .iter()
                        .any(|m| line.contains(m)),
                    "{}:{}: prints without cli::output: {line}",
                    path.display(),
                    i + 1
                );
            }
        }
    }

    #[test]
    fn status_lines_are_sanitized() {
        let t = Task::from_wire(&json!({"taskId":"abcdefghijkl","status":"working","statusMessage":"\u{1b}[2Jpage 1/3\u{7}"})).unwrap();
        let line = status_line(&t);
        assert!(
            !line.contains('\u{1b}') && !line.contains('\u{7}'),
            "{line:?}"
        );
        assert!(line.contains("page 1/3"));
    }

    #[test]
    fn tools_keep_their_task_support_under_execution() {
        let t = ToolInfo {
            name: "render".into(),
            title: None,
            description: Some("pages".into()),
            input_schema: json!({"type": "object"}),
            task_support: Some("required".into()),
        };
        let v = tool_json(&t);
        assert_eq!(v["execution"]["taskSupport"], "required");
        assert_eq!(v["inputSchema"], json!({"type": "object"}));
        assert!(v.get("taskSupport").is_none() && v.get("title").is_none());
    }

    #[test]
    fn json_lines_carry_the_documented_fields() {
        let t = Task::from_wire(
            &json!({"taskId":"t","status":"completed","ttlMs":5,"result":{"content":[]}}),
        )
        .unwrap();
        let v = task_line("srv", &t, UpdateSource::Resync);
        assert_eq!(v["source"], "poll");
        assert_eq!(v["result"], json!({"content":[]}));
        for k in [
            "server",
            "taskId",
            "status",
            "statusMessage",
            "createdAt",
            "lastUpdatedAt",
            "ttlMs",
            "pollIntervalMs",
        ] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
    }
}
