//! The rules every task snapshot passes, wherever it is folded in (engine, ledger, board):
//! the one timestamp parser, and the acceptance rule — the first terminal state wins, and a
//! snapshot older by `lastUpdatedAt` never replaces a newer one.
//!
//! Pure: no I/O, no clock reads.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

use super::types::Task;

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
}
