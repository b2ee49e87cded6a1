//! The outage spool's writes: what a write to the PostgreSQL ledger is when it is kept
//! on this machine because the database cannot be reached (`Write`), making a write or
//! keeping it (`Pg::through`), and replaying the kept ones in order, each with the time it
//! was made (`Pg::replay`). The file itself is `ledger/sqlite/spool.rs`.
//!
//! A row is deleted after the database committed it, so a crash between the two replays
//! that one write again (snapshots, tombstones and keys are idempotent; an event may then
//! appear twice). Holds no credentials: only what the shared ledger itself would store.
//! Must not log task ids.

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::db::{Pg, now_ms};
use crate::ids::{ServerId, TaskId};
use crate::ledger::{Delivery, EventKind, NewTask, Owner, SnapshotWrite, Tombstone};
use crate::mcp::types::{Era, Task};

/// One write the ledger could not make, as the spool keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(super) enum Write {
    Created {
        server: String,
        era: Era,
        tool: String,
        arguments: Value,
        task: Task,
        parent_task: Option<TaskId>,
        session: Option<i64>,
        started_by: Option<String>,
        /// Set for a proxy's task: its follower and lease (`record_proxy_task`).
        proxy_owner: Option<String>,
        proxy_ttl_ms: Option<u64>,
    },
    Tracked {
        server: String,
        era: Option<Era>,
        task_id: TaskId,
        session: Option<i64>,
    },
    Snapshots {
        batch: Vec<Snapshot>,
    },
    Event {
        server: String,
        task_id: TaskId,
        kind: String,
        latency_ms: Option<u64>,
        detail: Value,
    },
    Answered {
        server: String,
        task_id: TaskId,
        key: String,
        action: String,
    },
    Ended {
        server: String,
        task_id: TaskId,
        why: String,
    },
    SetCall {
        server: String,
        task_id: TaskId,
        key: String,
    },
    SetDelivery {
        server: String,
        task_id: TaskId,
        delivery: u8,
    },
    HostGaveUp {
        server: String,
        task_id: TaskId,
        note: Value,
    },
    Attached {
        server: String,
        task_id: TaskId,
        detail: Value,
    },
    CompleteRequest {
        id: i64,
        error: Option<String>,
    },
}

/// One snapshot of a spooled batch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Snapshot {
    server: String,
    task: Task,
    source: String,
    latency_ms: Option<u64>,
}

impl Write {
    pub(super) fn created(new: NewTask<'_>, proxy: Option<(&Owner, std::time::Duration)>) -> Write {
        Write::Created {
            server: new.server.as_str().to_string(),
            era: new.era,
            tool: new.tool.to_string(),
            arguments: new.arguments.clone(),
            task: new.task.clone(),
            parent_task: new.parent_task.cloned(),
            session: new.session,
            started_by: new.started_by.map(str::to_string),
            proxy_owner: proxy.map(|(o, _)| o.as_str().to_string()),
            proxy_ttl_ms: proxy.map(|(_, ttl)| u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)),
        }
    }

    pub(super) fn snapshots(batch: &[SnapshotWrite]) -> Write {
        Write::Snapshots {
            batch: batch
                .iter()
                .map(|(server, task, source, latency_ms)| Snapshot {
                    server: server.as_str().to_string(),
                    task: task.clone(),
                    source: source.as_str().to_string(),
                    latency_ms: *latency_ms,
                })
                .collect(),
        }
    }

    /// How many results the write's operation returns (one per snapshot of a batch).
    pub(super) fn results(&self) -> usize {
        match self {
            Write::Snapshots { batch } => batch.len(),
            _ => 1,
        }
    }

    /// Apply it to the database (`pg`'s own write methods); whether each result changed
    /// its task.
    pub(super) fn apply(&self, pg: &Pg) -> anyhow::Result<Vec<bool>> {
        let sid = |s: &str| ServerId::stored(s);
        match self {
            Write::Created {
                server,
                era,
                tool,
                arguments,
                task,
                parent_task,
                session,
                started_by,
                proxy_owner,
                proxy_ttl_ms,
            } => {
                let server = sid(server);
                let new = NewTask {
                    server: &server,
                    era: *era,
                    tool,
                    arguments,
                    task,
                    parent_task: parent_task.as_ref(),
                    session: *session,
                    started_by: started_by.as_deref(),
                };
                match (proxy_owner, proxy_ttl_ms) {
                    (Some(owner), Some(ttl)) => pg.record_proxy_task(
                        new,
                        &Owner::stored(owner),
                        std::time::Duration::from_millis(*ttl),
                    )?,
                    _ => pg.record_created(new)?,
                }
                Ok(vec![true])
            }
            Write::Tracked {
                server,
                era,
                task_id,
                session,
            } => {
                pg.record_tracked(&sid(server), *era, task_id, *session)?;
                Ok(vec![true])
            }
            Write::Snapshots { batch } => {
                let batch: Vec<SnapshotWrite> = batch
                    .iter()
                    .map(|s| {
                        (
                            sid(&s.server),
                            s.task.clone(),
                            EventKind::parse(&s.source).unwrap_or(EventKind::Status),
                            s.latency_ms,
                        )
                    })
                    .collect();
                pg.record_snapshots(&batch)
            }
            Write::Event {
                server,
                task_id,
                kind,
                latency_ms,
                detail,
            } => {
                let kind = EventKind::parse(kind)
                    .with_context(|| format!("a spooled event of an unknown kind {kind:?}"))?;
                pg.record_event(&sid(server), task_id, kind, *latency_ms, detail)?;
                Ok(vec![true])
            }
            Write::Answered {
                server,
                task_id,
                key,
                action,
            } => {
                pg.mark_answered(&sid(server), task_id, key, action)?;
                Ok(vec![true])
            }
            Write::Ended {
                server,
                task_id,
                why,
            } => {
                let why = Tombstone::parse(why)
                    .with_context(|| format!("a spooled tombstone of an unknown kind {why:?}"))?;
                pg.mark_ended(&sid(server), task_id, why)?;
                Ok(vec![true])
            }
            Write::SetCall {
                server,
                task_id,
                key,
            } => {
                pg.set_call(&sid(server), task_id, key)?;
                Ok(vec![true])
            }
            Write::SetDelivery {
                server,
                task_id,
                delivery,
            } => {
                let delivery = match delivery {
                    0 => Delivery::Waiting,
                    1 => Delivery::Undelivered,
                    _ => Delivery::Settled,
                };
                pg.set_delivery(&sid(server), task_id, delivery)?;
                Ok(vec![true])
            }
            Write::HostGaveUp {
                server,
                task_id,
                note,
            } => {
                pg.host_gave_up(&sid(server), task_id, note)?;
                Ok(vec![true])
            }
            Write::Attached {
                server,
                task_id,
                detail,
            } => {
                pg.attached(&sid(server), task_id, detail)?;
                Ok(vec![true])
            }
            Write::CompleteRequest { id, error } => {
                pg.complete_request(*id, error.as_deref())?;
                Ok(vec![true])
            }
        }
    }
}

impl Pg {
    /// Make `write`, or keep it in the spool while the database cannot be reached (it is
    /// replayed, in order, before anything else once it can); whether each result changed
    /// its task (a kept write counts as a change). Without a spool, failures are errors.
    pub(super) fn through(&self, write: &Write) -> anyhow::Result<Vec<bool>> {
        let Some(spool) = &self.spool else {
            return write.apply(self);
        };
        let keep = || -> anyhow::Result<Vec<bool>> {
            spool.push(&serde_json::to_string(write)?, now_ms())?;
            Ok(vec![true; write.results()])
        };
        match self.ready() {
            Ok(()) if spool.pending() => return keep(),
            Ok(()) => {}
            Err(_) if self.lost.get() => return keep(),
            Err(e) => return Err(e),
        }
        match write.apply(self) {
            Ok(changed) => Ok(changed),
            Err(_) if self.lost.get() => keep(),
            Err(e) => Err(e),
        }
    }

    /// Replay the spool in order, each write with the time it was made; stops (the rest
    /// waiting) if the connection goes again. A write the database refuses for another
    /// reason can never be made: it is dropped with a warning, as a failed write would be.
    pub(super) fn replay(&self) -> anyhow::Result<()> {
        let Some(spool) = &self.spool else {
            return Ok(());
        };
        self.replaying.set(true);
        let run = || -> anyhow::Result<usize> {
            let mut replayed = 0;
            while let Some((seq, at, text)) = spool.first()? {
                let Ok(write) = serde_json::from_str::<Write>(&text) else {
                    tracing::warn!(
                        "ledger: a write in the local spool is not one this version can read; \
                         it is kept for a newer one"
                    );
                    spool.set_aside(seq)?;
                    continue;
                };
                super::db::REPLAY_AT.with(|c| c.set(Some(at)));
                let applied = write.apply(self);
                super::db::REPLAY_AT.with(|c| c.set(None));
                match applied {
                    Ok(_) => replayed += 1,
                    Err(e) if self.lost.get() => return Err(e),
                    Err(e) => tracing::warn!(
                        "ledger: a write kept during the outage was refused and is dropped: {e:#}"
                    ),
                }
                spool.done(seq)?;
            }
            Ok(replayed)
        };
        let result = run();
        self.replaying.set(false);
        let replayed = result?;
        if replayed > 0 {
            tracing::info!("ledger: replayed {replayed} writes kept while PostgreSQL was away");
        }
        Ok(())
    }
}
