//! What the CLI prints: JSON lines for `watch --json`, human status lines, and response
//! normalisation for answers. Every line the CLI writes goes through here: `say` (stderr)
//! and `show` (stdout) for people, `print_json` for machines.
//!
//! Everything a server sent is untrusted: free text goes through `sanitize`; ids and keys
//! go through `shown`, which prints them as they are only when every character is
//! printable and otherwise escaped and marked, so a cleaned-up look-alike never passes
//! for the real value; a command line to paste is only offered when every word can be
//! quoted safely (`command_line`). Pure formatting, apart from the three writers.

use serde_json::{Value, json};
use std::io::Write as _;

use crate::engine::UpdateSource;
use crate::mcp::Task;
use crate::sanitize::{is_printable, sanitize_line};

/// How much of an unprintable id or key is shown escaped.
const SHOWN_CHARS: usize = 120;

/// A last pass over a human line: nothing unprintable reaches the terminal.
fn inert(line: &str) -> String {
    line.chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .filter(|c| is_printable(*c))
        .collect()
}

/// One line for a person, on stderr.
pub fn say(line: impl AsRef<str>) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", inert(line.as_ref()));
}

/// One line for a person, on stdout.
pub fn show(line: impl AsRef<str>) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", inert(line.as_ref()));
    let _ = out.flush();
}

/// One JSON line on stdout (terminal-safe, see `sanitize::inert_json`).
pub fn print_json<T: serde::Serialize + ?Sized>(v: &T) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", crate::sanitize::json_line(v));
    let _ = out.flush();
}

/// Pretty JSON on stdout (terminal-safe).
pub fn print_json_pretty<T: serde::Serialize + ?Sized>(v: &T) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", crate::sanitize::json_pretty(v));
    let _ = out.flush();
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
    let json = crate::sanitize::json_line(request);
    if json.len() <= REQUEST_PREVIEW {
        return json;
    }
    let cut: String = json.chars().take(REQUEST_PREVIEW).collect();
    format!("{cut}… ({} bytes in all)", json.len())
}

/// `taskrail answer …` for one key, when every word quotes safely.
pub fn answer_command(server: &str, task_id: &str, key: &str) -> Option<String> {
    const RESPONSE: &str = r#"{"action":"accept","content":{…}}"#;
    let base = ["taskrail", "answer", "--server", server];
    let words: Vec<&str> = if task_id.starts_with('-') || key.starts_with('-') {
        base.into_iter()
            .chain(["--json", RESPONSE, "--", task_id, key])
            .collect()
    } else {
        base.into_iter()
            .chain([task_id, key, "--json", RESPONSE])
            .collect()
    };
    command_line(&words)
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
    if task.more_input_requests > 0 {
        v["moreInputRequests"] = json!(task.more_input_requests);
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
    let mut s = format!(
        "{} {}",
        shown_short(task.task_id.as_str()),
        sanitize_line(task.status.as_str(), 40)
    );
    if let Some(m) = &task.status_message {
        s.push_str(": ");
        s.push_str(&sanitize_line(m, 200));
    }
    if task.is_tool_error() {
        s.push_str(" (tool reported an error)");
    }
    s
}

/// `{"action":…}` as given (an accept's `content`, when present, must be an object),
/// any other object as the `content` of an accept; anything else is refused.
pub fn normalize_response(v: Value) -> Result<Value, String> {
    match v.get("action").and_then(Value::as_str) {
        Some("accept") if v.get("content").is_some_and(|c| !c.is_object()) => {
            Err("the content of an accept must be a JSON object".into())
        }
        Some("accept" | "decline" | "cancel") => Ok(v),
        _ if v.is_object() => Ok(json!({ "action": "accept", "content": v })),
        _ => Err(
            "the response must be a JSON object: {\"action\":\"accept\",\"content\":{…}}, \
             {\"action\":\"decline\"}, {\"action\":\"cancel\"} or the content object"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_normalised() {
        assert_eq!(
            normalize_response(json!({"action":"decline"})),
            Ok(json!({"action":"decline"}))
        );
        assert_eq!(
            normalize_response(json!({"name":"Ada"})),
            Ok(json!({"action":"accept","content":{"name":"Ada"}}))
        );
        for bad in [
            json!([]),
            json!(7),
            json!("x"),
            json!(null),
            json!({"action":"accept","content":[1]}),
        ] {
            assert!(normalize_response(bad.clone()).is_err(), "{bad}");
        }
    }

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
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == "output.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, line) in text.lines().enumerate() {
                assert!(
                    !(line.contains("println!") || line.contains("print!(")),
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
