//! The rules every task snapshot passes, wherever it is folded in (engine, ledger, board,
//! CLI, proxy): the one timestamp parser; the acceptance rule — the first terminal state
//! wins, and a snapshot older by `lastUpdatedAt` never replaces a newer one; whether a task
//! is finished; and how it ended ([`Outcome`]).
//!
//! Pure: no I/O, no clock reads.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

use super::types::{Task, TaskStatus};

/// Parse a server's ISO 8601 timestamp leniently (RFC 3339, a space for `T`, no zone = UTC,
/// a bare date); `None` instead of an error for anything odd.
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    for fmt in [
        "%Y-%m-%dT%H:%M:%S%.f%z",
        "%Y-%m-%d %H:%M:%S%.f%z",
        "%Y-%m-%dT%H:%M:%S%.f%:z",
    ] {
        if let Ok(t) = DateTime::parse_from_str(s, fmt) {
            return Some(t.with_timezone(&Utc));
        }
    }
    let naive = s.trim_end_matches(['Z', 'z']);
    for fmt in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(naive, fmt) {
            return Some(t.and_utc());
        }
    }
    NaiveDate::parse_from_str(naive, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}

/// What to do with a snapshot, given what is already known of the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Newer (or as new): take it.
    Accept,
    /// The task is already terminal: terminal is forever, ignore it.
    AfterTerminal,
    /// A non-terminal snapshot older by `lastUpdatedAt` than the known one: ignore it.
    Stale,
    /// The same terminal state, now with the result or error the known snapshot lacked
    /// (legacy `tasks/result`, or the `tasks/get` after a terminal `CreateTaskResult`):
    /// take its payload only.
    Payload,
}

/// The acceptance rule. `known` is the last accepted snapshot; `known_terminal` is whether the
/// task is already finished (or tombstoned) even when no snapshot is at hand.
pub fn judge(known: Option<&Task>, known_terminal: bool, next: &Task) -> Verdict {
    let terminal = known_terminal || known.is_some_and(|k| k.status.is_terminal());
    if terminal {
        let adds_payload = known.is_some_and(|k| {
            k.status == next.status
                && k.result.is_none()
                && k.error.is_none()
                && (next.result.is_some() || next.error.is_some())
        });
        return if adds_payload {
            Verdict::Payload
        } else {
            Verdict::AfterTerminal
        };
    }
    // A terminal snapshot always wins over a live one, whatever its clock says.
    if next.status.is_terminal() {
        return Verdict::Accept;
    }
    let stamp = |t: &Task| t.last_updated_at.as_deref().and_then(parse_time);
    match (known.and_then(stamp), stamp(next)) {
        (Some(prev), Some(new)) if new < prev => Verdict::Stale,
        _ => Verdict::Accept,
    }
}

/// Nothing more will happen to the task: its last snapshot is terminal, or it is already
/// known to be over (`ended`: recorded terminal, or a tombstone: expired, session or proxy
/// lost) even without a snapshot at hand.
pub fn is_finished(last: Option<&Task>, ended: bool) -> bool {
    ended || last.is_some_and(|t| t.status.is_terminal())
}

/// How a finished task ended: the one answer the board, the CLI's exit codes and the proxy
/// all give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Completed,
    /// The tool ran and reported an error (`isError: true` in its result).
    ToolError,
    /// The call itself failed (a JSON-RPC error, or the server's `failed` without a tool
    /// result).
    Failed,
    Cancelled,
    /// It ended without a terminal state: expired, or its session or proxy was lost.
    Gone,
}

/// The outcome of a task whose last snapshot is `last` and which is tombstoned when
/// `gone`; `None` while it runs. A result with `isError: true` is a tool error whether the
/// server ended it `completed` (2026-07-28) or `failed` (legacy servers end a tool error
/// `failed` with the tool result as payload).
pub fn outcome(last: Option<&Task>, gone: bool) -> Option<Outcome> {
    let Some(task) = last.filter(|t| t.status.is_terminal()) else {
        return gone.then_some(Outcome::Gone);
    };
    Some(match task.status {
        TaskStatus::Completed | TaskStatus::Failed if task.result_is_error() => Outcome::ToolError,
        TaskStatus::Completed => Outcome::Completed,
        TaskStatus::Cancelled => Outcome::Cancelled,
        _ => Outcome::Failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(v: serde_json::Value) -> Task {
        Task::from_wire(&v).unwrap()
    }

    #[test]
    fn parses_many_shapes_and_never_panics() {
        for ok in [
            "2026-07-28T10:00:00Z",
            "2026-07-28T10:00:00.123+02:00",
            "2026-07-28T10:00:00",
            "2026-07-28 10:00:00",
            "2026-07-28",
        ] {
            assert!(parse_time(ok).is_some(), "{ok}");
        }
        for bad in ["a", "", "9999999-99-99T99:99:99Z"] {
            assert!(parse_time(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn first_terminal_state_wins() {
        let working = task(json!({"taskId":"a","status":"working"}));
        let done = task(json!({"taskId":"a","status":"completed"}));
        assert_eq!(judge(None, false, &working), Verdict::Accept);
        assert_eq!(judge(Some(&working), false, &done), Verdict::Accept);
        assert_eq!(judge(Some(&done), false, &working), Verdict::AfterTerminal);
        assert_eq!(judge(None, true, &working), Verdict::AfterTerminal);
        let with_result = task(json!({"taskId":"a","status":"completed","result":{"content":[]}}));
        assert_eq!(judge(Some(&done), false, &with_result), Verdict::Payload);
        assert_eq!(
            judge(Some(&with_result), false, &with_result),
            Verdict::AfterTerminal
        );
        let failed = task(json!({"taskId":"a","status":"failed","result":{"content":[]}}));
        assert_eq!(judge(Some(&done), false, &failed), Verdict::AfterTerminal);
    }

    #[test]
    fn older_live_snapshots_are_stale_but_terminal_ones_win() {
        let at = |s: &str, t: &str| task(json!({"taskId":"a","status":s,"lastUpdatedAt":t}));
        let newer = at("working", "2026-01-01T00:00:10Z");
        assert_eq!(
            judge(
                Some(&newer),
                false,
                &at("input_required", "2026-01-01T00:00:05Z")
            ),
            Verdict::Stale
        );
        assert_eq!(
            judge(Some(&newer), false, &at("failed", "2026-01-01T00:00:05Z")),
            Verdict::Accept
        );
        assert_eq!(
            judge(Some(&newer), false, &at("working", "not a time")),
            Verdict::Accept
        );
    }

    #[test]
    fn a_tool_error_is_one_whether_the_server_ends_it_completed_or_failed() {
        let of = |v| outcome(Some(&task(v)), false);
        let err = json!({"content": [], "isError": true});
        assert_eq!(
            of(json!({"taskId":"a","status":"completed","result":err})),
            Some(Outcome::ToolError)
        );
        assert_eq!(
            of(json!({"taskId":"a","status":"failed","result":err})),
            Some(Outcome::ToolError)
        );
        assert_eq!(
            of(json!({"taskId":"a","status":"completed","result":{"content":[]}})),
            Some(Outcome::Completed)
        );
        assert_eq!(
            of(json!({"taskId":"a","status":"failed"})),
            Some(Outcome::Failed)
        );
        assert_eq!(
            of(json!({"taskId":"a","status":"completed","result":{"isError":"true"}})),
            Some(Outcome::Completed)
        );
        assert_eq!(
            of(json!({"taskId":"a","status":"cancelled"})),
            Some(Outcome::Cancelled)
        );
        assert_eq!(of(json!({"taskId":"a","status":"working"})), None);
        let working = task(json!({"taskId":"a","status":"working"}));
        assert_eq!(outcome(Some(&working), true), Some(Outcome::Gone));
        assert_eq!(outcome(None, true), Some(Outcome::Gone));
        assert_eq!(outcome(None, false), None);
        // A terminal snapshot wins over a tombstone: it says how the task ended.
        let done = task(json!({"taskId":"a","status":"completed"}));
        assert_eq!(outcome(Some(&done), true), Some(Outcome::Completed));
    }

    #[test]
    fn finished_means_terminal_or_known_over() {
        let working = task(json!({"taskId":"a","status":"working"}));
        let done = task(json!({"taskId":"a","status":"failed"}));
        assert!(!is_finished(Some(&working), false));
        assert!(is_finished(Some(&working), true));
        assert!(is_finished(Some(&done), false));
        assert!(is_finished(None, true));
        assert!(!is_finished(None, false));
    }
}
