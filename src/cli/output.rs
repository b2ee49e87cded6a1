//! What the CLI prints and how: JSON in the wire's camelCase (`watch --json` lines, ledger
//! records, tools), sanitized human status lines, response normalisation for answers, and
//! the two writers — stdout, where a closed pipe (`| head`) ends the command quietly, and
//! stderr, whose lines are best effort and never panic.
//!
//! Formatting and writing only. Everything a server sent goes through `sanitize` unless
//! printed as JSON.

use std::fmt;
use std::io::Write;

use serde_json::{Value, json};

use crate::engine::UpdateSource;
use crate::ledger::TaskRecord;
use crate::mcp::{Task, ToolInfo};
use crate::sanitize::sanitize_line;

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

/// One line to stdout (see [`write_out`]).
pub fn out_line(line: fmt::Arguments<'_>) -> Result<(), Closed> {
    write_out(&format!("{line}\n"))
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
    let _ = writeln!(err, "{line}").and_then(|()| err.flush());
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
    serde_json::to_value(r).unwrap_or(Value::Null)
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
    }
    if let Some(r) = &task.result {
        v["result"] = r.clone();
    }
    if let Some(e) = &task.error {
        v["error"] = serde_json::to_value(e).unwrap_or(Value::Null);
    }
    v
}

/// A one-line human summary of a snapshot.
pub fn status_line(task: &Task) -> String {
    let mut s = format!("{} {}", task.task_id, task.status.as_str());
    if let Some(m) = &task.status_message {
        s.push_str(": ");
        s.push_str(&sanitize_line(m, 200));
    }
    if task.is_tool_error() {
        s.push_str(" (tool reported an error)");
    }
    s
}

/// `{"action":…}` as given, anything else as the `content` of an accept.
pub fn normalize_response(v: Value) -> Value {
    match v.get("action").and_then(Value::as_str) {
        Some("accept" | "decline" | "cancel") => v,
        _ => json!({ "action": "accept", "content": v }),
    }
}

/// Quote an argument for a shell command the user may copy.
pub fn shell_quote(s: &str) -> String {
    shlex::try_quote(s)
        .map(|c| c.into_owned())
        .unwrap_or_else(|_| format!("'{s}'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_normalised() {
        assert_eq!(
            normalize_response(json!({"action":"decline"})),
            json!({"action":"decline"})
        );
        assert_eq!(
            normalize_response(json!({"name":"Ada"})),
            json!({"action":"accept","content":{"name":"Ada"}})
        );
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
