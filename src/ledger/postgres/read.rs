//! Reads from the PostgreSQL ledger (records, timelines, answered keys), retention
//! pruning, and the change feed other processes read.
//!
//! Owns the row → `TaskRecord` mapping. Stored JSON that no longer parses is dropped to
//! `None` rather than failing a whole listing. The feed reads the rows whose change number
//! is past the cursor; writers commit in change-number order (the feed lock, `db.rs`), so
//! a row is never stamped below a cursor already handed out. Must not log task ids.

use std::time::Duration;

use ::postgres::GenericClient;
use ::postgres::types::ToSql;
use anyhow::bail;
use chrono::{DateTime, Utc};
use serde_json::Value;

use super::db::{Pg, from_ms, from_sql_u64, now_ms};
use crate::ids::{ServerId, TaskId};
use crate::ledger::lean::lean_snapshot;
use crate::ledger::{
    AnsweredKey, Changes, Cursor, EventKind, EventRecord, Origin, Owner, TaskRecord, Tombstone,
};
use crate::mcp::types::{Era, Task};

/// At most this many task rows per feed read.
pub const FEED_BATCH: usize = 2000;

/// How long the feed remembers a removed task (a process reading later reads the ledger
/// afresh anyway).
const REMOVED_KEPT_MS: i64 = 24 * 3600 * 1000;

/// The columns [`task_from_row`] maps.
pub(super) const SELECT_TASK: &str = "SELECT t.server, t.task_id, t.era, t.tool, t.arguments,
    t.recorded_at, t.server_created_at, t.snapshot, t.status, t.terminal, t.terminal_at,
    t.expired, t.last_seen, t.poll_interval_ms, t.ttl_ms, t.parent_task,
    (SELECT coalesce(array_agg(a.input_key ORDER BY a.answered_at, a.input_key), '{}')
       FROM answered_keys a WHERE a.task = t.id),
    t.end_reason, t.cancel_state, t.started_by, t.session, t.changed_seq, t.id,
    t.cancel_by, t.host_note, t.origin
    FROM tasks t";

/// [`SELECT_TASK`] for a scan: a finished row's arguments and answered keys, which a
/// lean record drops, are not read (the same columns, in the same places).
const SELECT_SCAN: &str = "SELECT t.server, t.task_id, t.era, t.tool,
    CASE WHEN t.terminal OR t.expired THEN NULL ELSE t.arguments END,
    t.recorded_at, t.server_created_at, t.snapshot, t.status, t.terminal, t.terminal_at,
    t.expired, t.last_seen, t.poll_interval_ms, t.ttl_ms, t.parent_task,
    CASE WHEN t.terminal OR t.expired THEN '{}'::text[] ELSE
      (SELECT coalesce(array_agg(a.input_key ORDER BY a.answered_at, a.input_key), '{}')
         FROM answered_keys a WHERE a.task = t.id) END,
    t.end_reason, t.cancel_state, t.started_by, t.session, t.changed_seq, t.id,
    t.cancel_by, t.host_note, t.origin
    FROM tasks t";

pub(super) fn task_from_row(r: &::postgres::Row) -> TaskRecord {
    record_of(r, false)
}

/// A row as a record; `lean`: its snapshot parsed lean (once) and its arguments and
/// answered keys left out, as a scan reads finished tasks.
fn record_of(r: &::postgres::Row, lean: bool) -> TaskRecord {
    let json = |i: usize| -> Option<Value> {
        r.get::<_, Option<String>>(i)
            .and_then(|s| serde_json::from_str(&s).ok())
    };
    let era = r
        .get::<_, Option<String>>(2)
        .and_then(|s| match s.as_str() {
            "modern" => Some(Era::Modern),
            "legacy" => Some(Era::Legacy),
            _ => None,
        });
    TaskRecord {
        server: ServerId::stored(r.get(0)),
        task_id: TaskId::new(r.get(1)),
        era,
        tool: r.get(3),
        arguments: if lean { None } else { json(4) },
        recorded_at: from_ms(r.get(5)),
        server_created_at: r.get(6),
        snapshot: if lean {
            r.get::<_, Option<&str>>(7).and_then(lean_snapshot)
        } else {
            r.get::<_, Option<&str>>(7)
                .and_then(|s| serde_json::from_str::<Task>(s).ok())
        },
        status: r.get(8),
        terminal: r.get(9),
        terminal_at: r.get::<_, Option<i64>>(10).map(from_ms),
        expired: r.get(11),
        last_seen: r.get::<_, Option<i64>>(12).map(from_ms),
        poll_interval_ms: from_sql_u64(r.get(13)),
        ttl_ms: from_sql_u64(r.get(14)),
        parent_task: r.get::<_, Option<&str>>(15).map(TaskId::new),
        answered_keys: r.get(16),
        end: r.get::<_, Option<&str>>(17).and_then(Tombstone::parse),
        cancel: match r.get::<_, i16>(18) {
            1 => Some(false),
            2 => Some(true),
            _ => None,
        },
        started_by: r.get(19),
        session: r.get(20),
        cancel_by: json(23),
        host_note: json(24),
        origin: match r.get::<_, Option<&str>>(25) {
            Some("proxy") => Origin::Proxy,
            _ => Origin::Server,
        },
        lean,
    }
}

/// Tasks matching `tail` (a WHERE/ORDER clause on `t`).
pub(super) fn query_tasks(
    c: &mut impl GenericClient,
    tail: &str,
    params: &[&(dyn ToSql + Sync)],
) -> anyhow::Result<Vec<TaskRecord>> {
    Ok(c.query(&format!("{SELECT_TASK} {tail}"), params)?
        .iter()
        .map(task_from_row)
        .collect())
}

impl Pg {
    pub fn get(&self, server: &ServerId, task_id: &TaskId) -> anyhow::Result<Option<TaskRecord>> {
        self.read(|c| {
            Ok(query_tasks(
                c,
                "WHERE t.server = $1 AND t.task_id = $2",
                &[&server.as_str(), &task_id.as_str()],
            )?
            .pop())
        })
    }

    /// Whether row-level security hides this task from the caller (`task_hidden`, V4).
    pub fn hidden(&self, server: &ServerId, task_id: &TaskId) -> anyhow::Result<bool> {
        self.read(|c| {
            let exists: bool = c
                .query_one(
                    "SELECT task_hidden($1, $2)",
                    &[&server.as_str(), &task_id.as_str()],
                )?
                .get(0);
            if !exists {
                return Ok(false);
            }
            let seen = c.query_opt(
                "SELECT 1 FROM tasks WHERE server = $1 AND task_id = $2",
                &[&server.as_str(), &task_id.as_str()],
            )?;
            Ok(seen.is_none())
        })
    }

    pub fn find(&self, prefix: &str) -> anyhow::Result<Vec<TaskRecord>> {
        if prefix.is_empty() {
            bail!("empty task id prefix");
        }
        self.read(|c| {
            query_tasks(
                c,
                "WHERE left(t.task_id, length($1)) = $1
                 ORDER BY t.task_id = $1 DESC, t.recorded_at DESC, t.id DESC",
                &[&prefix],
            )
        })
    }

    pub fn list(&self, include_terminal: bool) -> anyhow::Result<Vec<TaskRecord>> {
        self.read(|c| {
            query_tasks(
                c,
                "WHERE $1 OR NOT t.terminal ORDER BY t.recorded_at DESC, t.id DESC",
                &[&include_terminal],
            )
        })
    }

    pub fn non_terminal(&self) -> anyhow::Result<Vec<TaskRecord>> {
        self.list(false)
    }

    pub fn timeline(
        &self,
        server: &ServerId,
        task_id: &TaskId,
    ) -> anyhow::Result<Vec<EventRecord>> {
        self.read(|c| {
            let rows = c.query(
                "SELECT e.at, e.kind, e.latency_ms, e.detail
                   FROM events e JOIN tasks t ON t.id = e.task
                  WHERE t.server = $1 AND t.task_id = $2
                  ORDER BY e.id",
                &[&server.as_str(), &task_id.as_str()],
            )?;
            Ok(rows
                .iter()
                .map(|r| EventRecord {
                    at: from_ms(r.get(0)),
                    kind: EventKind::parse(r.get(1)).unwrap_or(EventKind::Note),
                    latency_ms: from_sql_u64(r.get(2)),
                    detail: serde_json::from_str(r.get(3)).unwrap_or(Value::Null),
                })
                .collect())
        })
    }

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

    pub fn answered(
        &self,
        server: &ServerId,
        task_id: &TaskId,
    ) -> anyhow::Result<Vec<AnsweredKey>> {
        self.read(|c| {
            let rows = c.query(
                "SELECT a.input_key, a.action, a.answered_at
                   FROM answered_keys a JOIN tasks t ON t.id = a.task
                  WHERE t.server = $1 AND t.task_id = $2
                  ORDER BY a.answered_at, a.input_key",
                &[&server.as_str(), &task_id.as_str()],
            )?;
            Ok(rows
                .iter()
                .map(|r| AnsweredKey {
                    key: r.get(0),
                    action: r.get(1),
                    at: from_ms(r.get(2)),
                })
                .collect())
        })
    }

    pub fn prune(&self, older_than: Duration) -> anyhow::Result<usize> {
        let age = i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX);
        self.prune_before(from_ms(now_ms().saturating_sub(age)))
    }

    /// Delete finished tasks that ended before `cutoff`, noting each for the feed (other
    /// processes drop their rows) under one change number.
    pub fn prune_before(&self, cutoff: DateTime<Utc>) -> anyhow::Result<usize> {
        let cutoff = cutoff.timestamp_millis();
        self.write(|tx| {
            let now = now_ms();
            tx.execute(
                "INSERT INTO removed (seq, server, task_id, at, owner_role)
                 SELECT s.seq, t.server, t.task_id, $2, t.owner_role
                   FROM tasks t, (SELECT nextval('change_seq') AS seq) s
                  WHERE t.terminal AND t.terminal_at < $1",
                &[&cutoff, &now],
            )?;
            tx.execute(
                "DELETE FROM removed WHERE at < $1",
                &[&now.saturating_sub(REMOVED_KEPT_MS)],
            )?;
            let n = tx.execute(
                "DELETE FROM tasks WHERE terminal AND terminal_at < $1",
                &[&cutoff],
            )?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
    }

    /// Remove every task of `server` no live process other than `me` follows, noting each
    /// for the feed; how many.
    pub fn remove_unfollowed(&self, server: &ServerId, me: &Owner) -> anyhow::Result<usize> {
        let ids: Vec<TaskId> = self.read(|c| {
            Ok(c.query(
                "SELECT task_id FROM tasks WHERE server = $1",
                &[&server.as_str()],
            )?
            .iter()
            .map(|r| TaskId::new(r.get(0)))
            .collect())
        })?;
        let live = self.followed_by_others(server, &ids, me)?;
        let gone: Vec<&str> = ids
            .iter()
            .filter(|id| !live.contains(*id))
            .map(TaskId::as_str)
            .collect();
        if gone.is_empty() {
            return Ok(0);
        }
        self.write(|tx| {
            let seq: i64 = tx.query_one("SELECT nextval('change_seq')", &[])?.get(0);
            tx.execute(
                "INSERT INTO removed (seq, server, task_id, at, owner_role)
                 SELECT $1, server, task_id, $3, owner_role FROM tasks
                  WHERE server = $2 AND task_id = ANY($4)",
                &[&seq, &server.as_str(), &now_ms(), &gone],
            )?;
            let n = tx.execute(
                "DELETE FROM tasks WHERE server = $1 AND task_id = ANY($2)",
                &[&server.as_str(), &gone],
            )?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
    }

    pub fn servers_with_open_tasks(&self) -> anyhow::Result<Vec<ServerId>> {
        self.read(|c| {
            Ok(c.query(
                "SELECT DISTINCT server FROM tasks WHERE NOT terminal ORDER BY server",
                &[],
            )?
            .iter()
            .map(|r| ServerId::stored(r.get(0)))
            .collect())
        })
    }

    pub fn servers(&self) -> anyhow::Result<Vec<ServerId>> {
        self.read(|c| {
            Ok(
                c.query("SELECT DISTINCT server FROM tasks ORDER BY server", &[])?
                    .iter()
                    .map(|r| ServerId::stored(r.get(0)))
                    .collect(),
            )
        })
    }

    pub fn count_server(&self, server: &ServerId) -> anyhow::Result<usize> {
        self.read(|c| {
            let n: i64 = c
                .query_one(
                    "SELECT count(*) FROM tasks WHERE server = $1",
                    &[&server.as_str()],
                )?
                .get(0);
            Ok(usize::try_from(n).unwrap_or(0))
        })
    }

    /// A server's tasks, newest first, in chunks of at most `chunk` (a portal: rows are
    /// read as they are handed on). Finished ones are read lean, as SQLite reads them:
    /// their arguments and answered keys are not read, their snapshot parsed once, lean.
    pub fn scan_server(
        &self,
        server: &ServerId,
        include_terminal: bool,
        chunk: usize,
        mut each: impl FnMut(Vec<TaskRecord>) -> bool,
    ) -> anyhow::Result<()> {
        let which = if include_terminal {
            ""
        } else {
            "AND NOT t.terminal"
        };
        let sql = format!(
            "{SELECT_SCAN} WHERE t.server = $1 {which} ORDER BY t.recorded_at DESC, t.id DESC"
        );
        let chunk = chunk.max(1);
        self.read(|client| {
            let mut tx = client.transaction()?;
            let portal = tx.bind(sql.as_str(), &[&server.as_str()])?;
            loop {
                let rows = tx.query_portal(&portal, i32::try_from(chunk).unwrap_or(i32::MAX))?;
                let last = rows.len() < chunk;
                let batch: Vec<TaskRecord> = rows
                    .iter()
                    .map(|r| record_of(r, r.get::<_, bool>(9) || r.get::<_, bool>(11)))
                    .collect();
                if batch.is_empty() || !each(batch) || last {
                    break;
                }
            }
            tx.commit()?;
            Ok(())
        })
    }

    pub fn feed_cursor(&self) -> anyhow::Result<Cursor> {
        self.feed_looked()?;
        self.read(|c| {
            let r = c.query_one(
                "SELECT greatest(
                        (SELECT coalesce(max(changed_seq), 0) FROM tasks),
                        (SELECT coalesce(max(done_seq), 0) FROM outbox),
                        (SELECT coalesce(max(seq), 0) FROM removed)),
                        (SELECT coalesce(max(id), 0) FROM tasks)",
                &[],
            )?;
            Ok((r.get(0), r.get(1)))
        })
    }

    pub fn changes(
        &self,
        since: Cursor,
        owner: &str,
        force: bool,
    ) -> anyhow::Result<Option<Changes>> {
        if !self.feed_news()? && !force {
            return Ok(None);
        }
        let rows = self.read(|c| {
            Ok(c.query(
                &format!(
                    "{SELECT_TASK} WHERE (t.changed_seq, t.id) > ($1, $2)
                     ORDER BY t.changed_seq, t.id LIMIT $3"
                ),
                &[&since.0, &since.1, &(FEED_BATCH as i64 + 1)],
            )?)
        })?;
        let more = rows.len() > FEED_BATCH;
        let mut cursor = since;
        let tasks = rows
            .iter()
            .take(FEED_BATCH)
            .map(|r| {
                cursor = (r.get(21), r.get(22));
                task_from_row(r)
            })
            .collect();
        let requests = self.open_requests(owner)?;
        let outcomes = self.outcomes_since(owner, since.0)?;
        let gone = self.read(|c| {
            Ok(c.query(
                "SELECT seq, server, task_id FROM removed WHERE seq > $1 ORDER BY seq LIMIT $2",
                &[&since.0, &(FEED_BATCH as i64)],
            )?)
        })?;
        let removed: Vec<(ServerId, TaskId)> = gone
            .iter()
            .map(|r| (ServerId::stored(r.get(1)), TaskId::new(r.get(2))))
            .collect();
        // A removal stamps no task row: the cursor moves past it once every task row up to
        // it was read (its number is its own: no task row has it).
        if let Some(seq) = gone.last().map(|r| r.get::<_, i64>(0))
            && !more
            && removed.len() < FEED_BATCH
            && seq > cursor.0
        {
            cursor = (seq, 0);
        }
        Ok(Some(Changes {
            cursor,
            tasks,
            requests,
            outcomes,
            removed,
            more,
        }))
    }
}
