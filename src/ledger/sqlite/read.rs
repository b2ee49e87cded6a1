//! Reads from the ledger (records, timelines, answered keys) and retention pruning.
//!
//! Owns the row → `TaskRecord` mapping. Stored JSON that no longer parses is dropped to
//! `None` rather than failing a whole listing. Must not log task ids.

use std::time::Duration;

use anyhow::bail;
use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, Params, Row, params};
use serde_json::Value;

use super::db::Db;
use super::tx::{from_ms, from_sql_u64, now_ms};
use crate::ids::{ServerId, TaskId};
use crate::ledger::lean::lean_snapshot;
use crate::ledger::{AnsweredKey, EventKind, EventRecord, Origin, Owner, TaskRecord, Tombstone};
use crate::mcp::types::{Era, Task};

/// The columns [`task_from_row`] maps, with the arguments and snapshot columns given.
macro_rules! select_task {
    ($arguments:literal, $snapshot:literal, $answered:expr) => {
        concat!(
            "SELECT t.server, t.task_id, t.era, t.tool, ",
            $arguments,
            ", t.recorded_at, t.server_created_at, ",
            $snapshot,
            ", t.status, t.terminal, t.terminal_at, t.expired,
               t.last_seen, t.poll_interval_ms, t.ttl_ms, t.parent_task, ",
            $answered,
            ", t.end_reason, t.cancel_state, t.started_by, t.session,
               t.changed_seq AS changed_seq, t.id AS row_id,
               t.cancel_by AS cancel_by, t.host_note AS host_note, t.origin AS origin"
        )
    };
}

/// The answered input keys of `t`, oldest first, as a JSON array.
macro_rules! answered_keys {
    () => {
        "(SELECT json_group_array(a.input_key ORDER BY a.answered_at, a.input_key)
            FROM answered_keys a WHERE a.task = t.id)"
    };
}

pub(super) const SELECT_TASK: &str = concat!(
    select_task!("t.arguments", "t.snapshot", answered_keys!()),
    " FROM tasks t"
);

/// [`SELECT_TASK`] for resuming: a finished task is read lean (see [`TaskRecord::lean`]),
/// and column 23 says whether it was. Its snapshot's payload is dropped in [`scan_row`],
/// once parsed: SQLite's JSON functions (validate, then remove) cost several times the
/// parse itself.
const SCAN_TASK: &str = concat!(
    select_task!(
        "CASE WHEN (t.terminal = 1 OR t.expired = 1) THEN NULL ELSE t.arguments END",
        "t.snapshot",
        // No input is asked of a finished task again: its answered keys are not read (a
        // lookup in another table per row).
        concat!(
            "CASE WHEN (t.terminal = 1 OR t.expired = 1) THEN NULL ELSE ",
            answered_keys!(),
            " END"
        )
    ),
    ", (t.terminal = 1 OR t.expired = 1) AS lean FROM tasks t"
);

pub(super) fn task_from_row(r: &Row<'_>) -> rusqlite::Result<TaskRecord> {
    task_from_row_with(r, |s| serde_json::from_str(s).ok())
}

/// [`task_from_row`] with the snapshot read by `snapshot`.
fn task_from_row_with(
    r: &Row<'_>,
    snapshot: impl FnOnce(&str) -> Option<Task>,
) -> rusqlite::Result<TaskRecord> {
    let json = |i: usize| -> rusqlite::Result<Option<Value>> {
        Ok(r.get::<_, Option<String>>(i)?
            .and_then(|s| serde_json::from_str(&s).ok()))
    };
    let era = r
        .get::<_, Option<String>>(2)?
        .and_then(|s| match s.as_str() {
            "modern" => Some(Era::Modern),
            "legacy" => Some(Era::Legacy),
            _ => None,
        });
    let snapshot = r
        .get_ref(7)?
        .as_str_or_null()
        .ok()
        .flatten()
        .and_then(snapshot);
    let answered_keys = r
        .get::<_, Option<String>>(16)?
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default();
    Ok(TaskRecord {
        server: r.get(0)?,
        task_id: r.get(1)?,
        era,
        tool: r.get(3)?,
        arguments: json(4)?,
        recorded_at: from_ms(r.get(5)?),
        server_created_at: r.get(6)?,
        snapshot,
        status: r.get(8)?,
        terminal: r.get(9)?,
        terminal_at: r.get::<_, Option<i64>>(10)?.map(from_ms),
        expired: r.get(11)?,
        last_seen: r.get::<_, Option<i64>>(12)?.map(from_ms),
        poll_interval_ms: from_sql_u64(r.get(13)?),
        ttl_ms: from_sql_u64(r.get(14)?),
        parent_task: r.get(15)?,
        answered_keys,
        end: r
            .get::<_, Option<String>>(17)?
            .as_deref()
            .and_then(Tombstone::parse),
        cancel: match r.get::<_, i64>(18)? {
            1 => Some(false),
            2 => Some(true),
            _ => None,
        },
        started_by: r.get(19)?,
        session: r.get(20)?,
        cancel_by: r
            .get::<_, Option<String>>("cancel_by")?
            .and_then(|s| serde_json::from_str(&s).ok()),
        host_note: r
            .get::<_, Option<String>>("host_note")?
            .and_then(|s| serde_json::from_str(&s).ok()),
        origin: match r.get::<_, Option<String>>("origin")?.as_deref() {
            Some("proxy") => Origin::Proxy,
            _ => Origin::Server,
        },
        lean: false,
    })
}

impl Db {
    fn query_tasks<P: Params>(&self, tail: &str, params: P) -> anyhow::Result<Vec<TaskRecord>> {
        let mut stmt = self.conn.prepare_cached(&format!("{SELECT_TASK} {tail}"))?;
        let rows = stmt.query_map(params, task_from_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// The record for (server, task id), if stored.
    pub fn get(&self, server: &ServerId, task_id: &TaskId) -> anyhow::Result<Option<TaskRecord>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "{SELECT_TASK} WHERE t.server = ?1 AND t.task_id = ?2"
        ))?;
        Ok(stmt
            .query_row(params![server, task_id], task_from_row)
            .optional()?)
    }

    /// Tasks whose id starts with `prefix`, on any server (for a short id given to the
    /// CLI). An exact match sorts first, then newest first. An empty prefix is an error.
    pub fn find(&self, prefix: &str) -> anyhow::Result<Vec<TaskRecord>> {
        if prefix.is_empty() {
            bail!("empty task id prefix");
        }
        self.query_tasks(
            "WHERE substr(t.task_id, 1, length(?1)) = ?1
             ORDER BY t.task_id = ?1 DESC, t.recorded_at DESC, t.id DESC",
            params![prefix],
        )
    }

    /// Every task, newest first; terminal and expired ones only if `include_terminal`.
    pub fn list(&self, include_terminal: bool) -> anyhow::Result<Vec<TaskRecord>> {
        self.query_tasks(
            "WHERE ?1 OR t.terminal = 0 ORDER BY t.recorded_at DESC, t.id DESC",
            params![include_terminal],
        )
    }

    /// Tasks still to be watched (not terminal, not expired), newest first: what to resume
    /// polling after a restart.
    pub fn non_terminal(&self) -> anyhow::Result<Vec<TaskRecord>> {
        self.list(false)
    }

    /// A task's events in the order they were recorded (empty for an unknown task).
    /// Poll counts this connection still holds in memory are written first.
    pub fn timeline(
        &self,
        server: &ServerId,
        task_id: &TaskId,
    ) -> anyhow::Result<Vec<EventRecord>> {
        self.flush_pending()?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT e.at, e.kind, e.latency_ms, e.detail
               FROM events e JOIN tasks t ON t.id = e.task
              WHERE t.server = ?1 AND t.task_id = ?2
              ORDER BY e.id",
        )?;
        let rows = stmt.query_map(params![server, task_id], |r| {
            let kind: String = r.get(1)?;
            let detail: String = r.get(3)?;
            Ok(EventRecord {
                at: from_ms(r.get(0)?),
                kind: EventKind::parse(&kind).unwrap_or(EventKind::Note),
                latency_ms: from_sql_u64(r.get(2)?),
                detail: serde_json::from_str(&detail).unwrap_or(Value::Null),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Input keys already answered for a task, oldest answer first.
    pub fn answered_keys(
        &self,
        server: &ServerId,
        task_id: &TaskId,
    ) -> anyhow::Result<Vec<String>> {
        Ok(self
            .answered(server, task_id)?
            .into_iter()
            .map(|a| a.key)
            .collect())
    }

    /// Answered input keys with their action and time, oldest first.
    pub fn answered(
        &self,
        server: &ServerId,
        task_id: &TaskId,
    ) -> anyhow::Result<Vec<AnsweredKey>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT a.input_key, a.action, a.answered_at
               FROM answered_keys a JOIN tasks t ON t.id = a.task
              WHERE t.server = ?1 AND t.task_id = ?2
              ORDER BY a.answered_at, a.input_key",
        )?;
        let rows = stmt.query_map(params![server, task_id], |r| {
            Ok(AnsweredKey {
                key: r.get(0)?,
                action: r.get(1)?,
                at: from_ms(r.get(2)?),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Delete terminal (or expired) tasks that became so more than `older_than` ago, with
    /// their events and answered keys. Tasks still running are never pruned. Returns how
    /// many tasks were deleted.
    pub fn prune(&self, older_than: Duration) -> anyhow::Result<usize> {
        let age = i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX);
        self.prune_before(from_ms(now_ms().saturating_sub(age)))
    }

    /// Delete terminal (or expired) tasks whose terminal time is before `cutoff`.
    pub fn prune_before(&self, cutoff: DateTime<Utc>) -> anyhow::Result<usize> {
        let tx = self.write_tx()?;
        let cutoff = cutoff.timestamp_millis();
        let now = now_ms();
        // What goes is noted for the feed first (other processes drop their rows).
        let gone: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM tasks WHERE terminal = 1 AND terminal_at < ?1)",
            params![cutoff],
            |r| r.get(0),
        )?;
        if gone {
            tx.execute(
                "INSERT INTO removed (seq, server, task_id, at)
                 SELECT ?2, server, task_id, ?3 FROM tasks WHERE terminal = 1 AND terminal_at < ?1",
                params![cutoff, tx.seq()?, now],
            )?;
        }
        tx.execute(
            "DELETE FROM removed WHERE at < ?1",
            params![now.saturating_sub(REMOVED_KEPT_MS)],
        )?;
        let deleted = tx.execute(
            "DELETE FROM tasks WHERE terminal = 1 AND terminal_at < ?1",
            params![cutoff],
        )?;
        tx.commit()?;
        if deleted > 0 {
            tracing::debug!(deleted, "pruned old terminal tasks from the ledger");
        }
        Ok(deleted)
    }
}

impl Db {
    /// Remove every task of `server` no live process other than `me` follows; how many.
    pub fn remove_unfollowed(&self, server: &ServerId, me: &Owner) -> anyhow::Result<usize> {
        let ids: Vec<TaskId> = {
            let mut stmt = self
                .conn
                .prepare_cached("SELECT task_id FROM tasks WHERE server = ?1")?;
            let rows = stmt.query_map(params![server], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<Vec<_>>>()?
        };
        let live = self.followed_by_others(server, &ids, me)?;
        let gone: Vec<&TaskId> = ids.iter().filter(|id| !live.contains(*id)).collect();
        if gone.is_empty() {
            return Ok(0);
        }
        let tx = self.write_tx()?;
        let (seq, now) = (tx.seq()?, now_ms());
        for id in &gone {
            tx.execute(
                "INSERT INTO removed (seq, server, task_id, at) VALUES (?1, ?2, ?3, ?4)",
                params![seq, server, id, now],
            )?;
            tx.execute(
                "DELETE FROM tasks WHERE server = ?1 AND task_id = ?2",
                params![server, id],
            )?;
        }
        tx.commit()?;
        Ok(gone.len())
    }
}

/// How long the feed remembers a pruned task (a process reading later reads the ledger
/// afresh anyway).
const REMOVED_KEPT_MS: i64 = 24 * 3600 * 1000;

impl Db {
    /// Every server with an unfinished task, by id.
    pub fn servers_with_open_tasks(&self) -> anyhow::Result<Vec<crate::ids::ServerId>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT DISTINCT server FROM tasks WHERE terminal = 0 ORDER BY server",
        )?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Every server with a task, finished or not, by id.
    pub fn servers(&self) -> anyhow::Result<Vec<crate::ids::ServerId>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT DISTINCT server FROM tasks ORDER BY server")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

/// The statement of [`Db::scan_server`]: two texts, so each gets the plan that walks
/// an index in this order instead of sorting every row.
fn scan_sql(include_terminal: bool) -> String {
    let which = if include_terminal {
        ""
    } else {
        "AND t.terminal = 0"
    };
    format!("{SCAN_TASK} WHERE t.server = ?1 {which} ORDER BY t.recorded_at DESC, t.id DESC")
}

/// A row of [`scan_sql`]; a lean one keeps of its snapshot's payload only what the board
/// shows (see [`lean_snapshot`]).
fn scan_row(r: &Row<'_>) -> rusqlite::Result<TaskRecord> {
    let lean: bool = r.get("lean")?;
    let mut rec = if lean {
        task_from_row_with(r, lean_snapshot)?
    } else {
        task_from_row(r)?
    };
    rec.lean = lean;
    Ok(rec)
}

impl Db {
    /// How many tasks the ledger holds for `server` (what [`Db::scan_server`] reads with
    /// `include_terminal`), counted from the index alone.
    pub fn count_server(&self, server: &crate::ids::ServerId) -> anyhow::Result<usize> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT count(*) FROM tasks WHERE server = ?1")?;
        let n: i64 = stmt.query_row(params![server], |r| r.get(0))?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// A server's tasks, newest first (finished and expired ones only with
    /// `include_terminal`, and lean: see [`TaskRecord::lean`]), handed to `each` in chunks of at most `chunk` records as they
    /// are read, so the caller works on one chunk while the next is read. Stops early
    /// when `each` returns false.
    pub fn scan_server(
        &self,
        server: &crate::ids::ServerId,
        include_terminal: bool,
        chunk: usize,
        mut each: impl FnMut(Vec<TaskRecord>) -> bool,
    ) -> anyhow::Result<()> {
        let mut stmt = self.conn.prepare_cached(&scan_sql(include_terminal))?;
        let mut rows = stmt.query_map(params![server], scan_row)?;
        let chunk = chunk.max(1);
        loop {
            let batch = rows
                .by_ref()
                .take(chunk)
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let last = batch.len() < chunk;
            if batch.is_empty() || !each(batch) || last {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ledger: &Db, task: serde_json::Value, arguments: serde_json::Value) {
        let task = crate::mcp::Task::from_wire(&task).unwrap();
        ledger
            .record_created(crate::ledger::NewTask {
                server: &ServerId::named("s"),
                era: Era::Modern,
                tool: "t",
                arguments: &arguments,
                task: &task,
                parent_task: None,
                session: None,
                started_by: None,
            })
            .unwrap();
    }

    /// Resuming reads a finished task without its payload, except what the board shows
    /// (a tool error's text); a live task comes whole; the ledger keeps everything.
    #[test]
    fn resuming_reads_finished_tasks_lean() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Db::open(&dir.path().join("l.db")).unwrap();
        let result = serde_json::json!({"content": [{"type": "text", "text": "big"}]});
        let tool_error =
            serde_json::json!({"isError": true, "content": [{"type": "text", "text": "boom"}]});
        let args = serde_json::json!({"n": 1});
        record(
            &ledger,
            serde_json::json!({"taskId": "done", "status": "completed", "result": result}),
            args.clone(),
        );
        record(
            &ledger,
            serde_json::json!({"taskId": "tool-error", "status": "completed", "result": tool_error}),
            args.clone(),
        );
        record(
            &ledger,
            serde_json::json!({"taskId": "failed", "status": "failed",
            "error": {"code": -32000, "message": "no", "data": {"trace": "long"}}}),
            args.clone(),
        );
        record(
            &ledger,
            serde_json::json!({"taskId": "live", "status": "working"}),
            args.clone(),
        );
        for id in ["done", "live"] {
            ledger
                .mark_answered(&ServerId::named("s"), &TaskId::new(id), "k", "accept")
                .unwrap();
        }
        let mut got = Vec::new();
        ledger
            .scan_server(&ServerId::named("s"), true, 2, |c| {
                got.extend(c);
                true
            })
            .unwrap();
        let by = |id: &str| got.iter().find(|r| r.task_id.as_str() == id).unwrap();
        let done = by("done");
        assert!(done.lean && done.arguments.is_none());
        assert_eq!(done.snapshot.as_ref().unwrap().result, None);
        assert_eq!(
            done.snapshot.as_ref().unwrap().status,
            crate::mcp::TaskStatus::Completed
        );
        assert_eq!(
            by("tool-error").snapshot.as_ref().unwrap().result,
            Some(Box::new(tool_error))
        );
        let failed = by("failed").snapshot.clone().unwrap().error.unwrap();
        assert_eq!(
            (failed.code, failed.message.as_str(), failed.data),
            (-32000, "no", None)
        );
        assert!(
            done.answered_keys.is_empty(),
            "no input is asked of a finished task"
        );
        let live = by("live");
        assert!(!live.lean);
        assert_eq!(live.arguments, Some(args.clone()));
        assert_eq!(live.answered_keys, ["k"]);
        let full = ledger
            .get(&ServerId::named("s"), &TaskId::new("done"))
            .unwrap()
            .unwrap();
        assert_eq!(full.snapshot.unwrap().result, Some(Box::new(result)));
        assert_eq!(full.arguments, Some(args));
        assert_eq!(full.answered_keys, ["k"]);
    }

    /// A stored snapshot that is not JSON is read as none, not an error of the whole scan.
    #[test]
    fn a_broken_snapshot_does_not_stop_resuming() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Db::open(&dir.path().join("l.db")).unwrap();
        record(
            &ledger,
            serde_json::json!({"taskId": "a", "status": "completed"}),
            serde_json::json!({}),
        );
        ledger
            .conn
            .execute("UPDATE tasks SET snapshot = '{not json'", [])
            .unwrap();
        let mut got = Vec::new();
        ledger
            .scan_server(&ServerId::named("s"), true, 8, |c| {
                got.extend(c);
                true
            })
            .unwrap();
        assert_eq!(got.len(), 1);
        assert!(got[0].snapshot.is_none());
    }

    /// Resuming walks an index in its order: no temporary sort of every row.
    #[test]
    fn scanning_a_server_sorts_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Db::open(&dir.path().join("l.db")).unwrap();
        for history in [true, false] {
            let plan: Vec<String> = ledger
                .conn
                .prepare(&format!("EXPLAIN QUERY PLAN {}", scan_sql(history)))
                .unwrap()
                .query_map(["bench"], |r| r.get(3))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            let plan = plan.join("; ");
            assert!(
                !plan.contains("TEMP B-TREE FOR ORDER BY"),
                "history {history}: {plan}"
            );
        }
    }
}
