//! What taskrail starts outside itself, only ever on the person's keypress: the browser
//! for a link (`$BROWSER`, else the desktop's opener), the clipboard (an OSC 52 sequence),
//! and a server's configured sampling command (the request as JSON on stdin; its stdout,
//! bounded and timed, is the reply to review).
//!
//! Must not use a shell: command lines are split into arguments.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The most of a sampling command's stdout that is read.
pub const MAX_OUTPUT: usize = 64 * 1024;
/// The most of its stderr kept for an error message.
const MAX_STDERR: usize = 4 * 1024;

/// The argv that opens `url`: each `$BROWSER` entry (`:`-separated; `%s` stands for the
/// link, else it is appended) in turn, then the desktop's opener.
pub fn browser_commands(url: &str, browser: Option<&str>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for entry in browser.unwrap_or("").split(':').map(str::trim) {
        if entry.is_empty() {
            continue;
        }
        let Some(mut argv) = shlex::split(entry).filter(|a| !a.is_empty()) else {
            continue;
        };
        if argv.iter().any(|a| a.contains("%s")) {
            for a in &mut argv {
                *a = a.replace("%s", url);
            }
        } else {
            argv.push(url.to_string());
        }
        out.push(argv);
    }
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    out.push(vec![opener.to_string(), url.to_string()]);
    out
}

/// Start the browser on `url` (not waited for). The error says what was tried.
pub fn open_browser(url: &str) -> Result<(), String> {
    let browser = std::env::var("BROWSER").ok();
    let mut tried = Vec::new();
    for argv in browser_commands(url, browser.as_deref()) {
        let spawned = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        match spawned {
            Ok(mut child) => {
                // Reap it whenever it ends, without holding the caller.
                std::thread::spawn(move || child.wait());
                return Ok(());
            }
            Err(e) => tried.push(format!("{}: {e}", argv[0])),
        }
    }
    Err(tried.join("; "))
}

/// The OSC 52 sequence that puts `text` on the terminal's clipboard.
pub fn osc52(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{b64}\x07").into_bytes()
}

async fn read_bounded<R: AsyncReadExt + Unpin>(mut r: R, max: usize) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => return (out, false),
            Ok(n) if out.len() + n > max => {
                out.extend_from_slice(&buf[..max - out.len()]);
                return (out, true);
            }
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// Run a sampling command: `input` as one JSON line on stdin, stdout (at most
/// `MAX_OUTPUT` bytes) returned as text, within `timeout`.
pub async fn run_sampling(
    command: &str,
    timeout: Duration,
    input: &Value,
) -> Result<String, String> {
    let argv = shlex::split(command)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| format!("cannot split the command line {command:?}"))?;
    let mut child = tokio::process::Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", argv[0]))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let line = format!("{input}\n");
    let run = async move {
        let write = async {
            // A command that does not read its input is fine.
            let _ = stdin.write_all(line.as_bytes()).await;
            drop(stdin);
        };
        let ((out, cut), (err, _), ()) = tokio::join!(
            read_bounded(stdout, MAX_OUTPUT),
            read_bounded(stderr, MAX_STDERR),
            write
        );
        if cut {
            return Err(format!(
                "the command wrote more than {} KiB",
                MAX_OUTPUT / 1024
            ));
        }
        let status = child.wait().await.map_err(|e| e.to_string())?;
        if !status.success() {
            let why = String::from_utf8_lossy(&err);
            let first = why.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            return Err(format!(
                "{status}{}{first}",
                if first.is_empty() { "" } else { ": " }
            ));
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    };
    match tokio::time::timeout(timeout, run).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer within {} s; stopped", timeout.as_secs())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn browser_respects_the_environment() {
        let url = "https://example.com/a?b=c";
        let cmds = browser_commands(url, Some("firefox --new-tab:lynx %s"));
        assert_eq!(cmds[0], vec!["firefox", "--new-tab", url]);
        assert_eq!(cmds[1], vec!["lynx", url]);
        assert_eq!(cmds.last().unwrap().last().unwrap(), url);
        assert_eq!(browser_commands(url, None).len(), 1);
    }

    #[test]
    fn osc52_carries_the_text_in_base64() {
        assert_eq!(osc52("hi"), b"\x1b]52;c;aGk=\x07".to_vec());
    }

    #[tokio::test]
    async fn a_sampling_command_gets_the_request_and_its_output_is_returned() {
        let out = run_sampling(
            "sh -c 'read -r l; echo \"got ${#l} bytes\"'",
            Duration::from_secs(10),
            &json!({"a": 1}),
        )
        .await
        .unwrap();
        assert_eq!(out.trim(), "got 7 bytes");
        let e = run_sampling(
            "sh -c 'echo boom >&2; exit 3'",
            Duration::from_secs(10),
            &json!({}),
        )
        .await
        .unwrap_err();
        assert!(e.contains("boom") && e.contains('3'), "{e}");
        let e = run_sampling("sleep 5", Duration::from_millis(200), &json!({}))
            .await
            .unwrap_err();
        assert!(e.contains("stopped"), "{e}");
        let e = run_sampling(
            "sh -c 'head -c 100000 /dev/zero'",
            Duration::from_secs(10),
            &json!({}),
        )
        .await
        .unwrap_err();
        assert!(e.contains("KiB"), "{e}");
        assert!(
            run_sampling("/nonexistent/llm", Duration::from_secs(1), &json!({}))
                .await
                .is_err()
        );
    }
}
