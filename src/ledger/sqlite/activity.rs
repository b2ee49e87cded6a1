//! The activity read (`Ledger::activity`) in SQL: the spans of the tasks alive since a
//! moment in one query, then each one's kept timeline entries through the per-task index,
//! with the JSON fields picked out by SQLite (no detail is parsed here).
//!
//! Must agree with `ledger::activity_from_reads` (the contract checks it); must not log
//! task ids (none is read).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rusqlite::params;

use super::db::Db;
use super::tx::{from_ms, from_sql_u64};
use crate::ids::ServerId;
use crate::ledger::activity::clip;
use crate::ledger::{Activity, ActivityEvent, ActivityLimits, EventKind, TaskSpan};

impl Db {
    /// See [`crate::ledger::Ledger::activity`].
    pub fn activity(
        &self,
        since: DateTime<Utc>,
        limits: ActivityLimits,
    ) -> anyhow::Result<Activity> {
        self.flush_pending()?;
        let since_ms = since.timestamp_millis();
        let mut out = Activity::default();
        let mut rows: Vec<i64> = Vec::new();
        let mut servers: HashMap<String, ServerId> = HashMap::new();
        {
            let mut stmt = self.conn.prepare_cached(
                "SELECT id, server, recorded_at, terminal, terminal_at,
                        CASE WHEN expired = 1 THEN 'expired' ELSE status END
                   FROM tasks
                  WHERE terminal = 0 OR terminal_at >= ?1
                  ORDER BY recorded_at DESC, id DESC
                  LIMIT ?2",
            )?;
            let limit = i64::try_from(limits.tasks.saturating_add(1)).unwrap_or(i64::MAX);
            let mut q = stmt.query(params![since_ms, limit])?;
            while let Some(r) = q.next()? {
                if out.tasks.len() == limits.tasks {
                    out.truncated = true;
                    break;
                }
                let started = from_ms(r.get(2)?);
                let terminal: bool = r.get(3)?;
                let ended: Option<i64> = r.get(4)?;
                let status: String = r.get(5)?;
                rows.push(r.get(0)?);
                out.tasks.push(TaskSpan {
                    server: {
                        // One id per server, shared by its spans.
                        let name: String = r.get(1)?;
                        servers
                            .entry(name)
                            .or_insert_with_key(|n| ServerId::stored(n))
                            .clone()
                    },
                    started,
                    ended: terminal.then(|| ended.map_or(started, from_ms)),
                    status: clip(&status),
                });
            }
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT at, kind, latency_ms,
                    CASE WHEN json_valid(detail) THEN json_extract(detail,
                         CASE kind WHEN 'status' THEN '$.to' ELSE '$.status' END) END,
                    CASE WHEN kind = 'polls' AND json_valid(detail)
                         THEN json_extract(detail, '$.unchanged') END
               FROM events
              WHERE task = ?1
                AND kind IN ('status', 'push', 'poll', 'resync', 'polls')
                AND (kind = 'status' OR at >= ?2)
              ORDER BY id",
        )?;
        let mut kinds: HashMap<String, EventKind> = HashMap::new();
        'tasks: for (i, row) in rows.iter().enumerate() {
            let mut q = stmt.query(params![row, since_ms])?;
            while let Some(r) = q.next()? {
                if out.events.len() >= limits.events {
                    out.truncated = true;
                    break 'tasks;
                }
                let kind: String = r.get(1)?;
                let kind = match kinds.get(&kind) {
                    Some(k) => *k,
                    None => {
                        let Some(k) = EventKind::parse(&kind) else {
                            continue;
                        };
                        kinds.insert(kind, k);
                        k
                    }
                };
                let status: Option<String> = r.get::<_, Option<String>>(3).unwrap_or(None);
                let unchanged: Option<i64> = r.get::<_, Option<i64>>(4).unwrap_or(None);
                out.events.push(ActivityEvent {
                    task: i,
                    at: from_ms(r.get(0)?),
                    kind,
                    latency_ms: from_sql_u64(r.get(2)?),
                    status: status.as_deref().map(clip),
                    count: if kind == EventKind::Polls {
                        unchanged.and_then(|n| u64::try_from(n).ok()).unwrap_or(1)
                    } else {
                        1
                    },
                });
            }
        }
        Ok(out)
    }
}
