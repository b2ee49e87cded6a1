//! `Pg`: one blocking connection to the team's database, used only on the ledger thread,
//! with the helpers every query shares: write transactions, finding or inserting a task
//! row, appending an event, and hearing other processes' writes.
//!
//! The change feed's order: every write transaction first takes one transaction-level
//! advisory lock per schema, so writers commit one after another and the change numbers
//! their rows are stamped with (`stamp()` draws them from a sequence) become visible in
//! increasing order. Without it, a transaction that drew number 5 could commit after one
//! that drew 6, and a reader whose cursor had passed 6 would never see 5. Writes are short,
//! so the serialization costs little; reads never take the lock.
//!
//! Must not log task ids or passwords.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::postgres::fallible_iterator::FallibleIterator;
use ::postgres::{Client, GenericClient, Transaction};
use serde_json::Value;

use crate::ids::{ServerId, TaskId};
use crate::ledger::EventKind;
use crate::ledger::backlog::{Backlog, Offline};
use crate::ledger::sqlite::Spool;
use crate::mcp::types::Era;

/// The ledger in one schema of a PostgreSQL database, over one connection.
pub struct Pg {
    client: RefCell<Client>,
    location: String,
    /// The advisory lock every write takes (see the module docs).
    lock_key: String,
    /// This connection's backend pid: its own notifications are not news.
    pid: Cell<i32>,
    /// How to connect again after the connection was lost, and the schema to use.
    config: super::connect::Target,
    schema: String,
    /// How many notifications from other connections arrived so far.
    heard: Cell<u64>,
    /// `heard` when the feed last looked.
    feed_seen: Cell<Option<u64>>,
    /// Where this machine keeps legacy session ids (`sessions.rs`).
    session_ids: Option<PathBuf>,
    /// Writes made while the database could not be reached (`spool.rs`), if this machine
    /// has a place for them.
    pub(super) spool: Option<Spool>,
    /// Reachable or not, and how many writes wait: for the header.
    pub(super) backlog: Arc<Backlog>,
    /// The last failure was the connection's (not the statement's).
    pub(super) lost: Cell<bool>,
    /// Why the database cannot be reached, while it cannot.
    why_offline: RefCell<Option<String>>,
    /// No new connection is tried before this (growing pauses while the database is away).
    retry_at: Cell<Option<Instant>>,
    pause: Cell<Duration>,
    /// The spool is being replayed (its writes must not wait for themselves).
    pub(super) replaying: Cell<bool>,
}

/// First pause between tries to reach a database that went away, doubled up to
/// [`RETRY_MAX`]: a write meanwhile goes to the spool at once instead of waiting for a
/// connection timeout.
const RETRY_FIRST: Duration = Duration::from_millis(250);
const RETRY_MAX: Duration = Duration::from_secs(5);

thread_local! {
    /// While a spooled write is replayed: when it was made (it is stored with that time).
    pub(super) static REPLAY_AT: Cell<Option<i64>> = const { Cell::new(None) };
}

impl std::fmt::Debug for Pg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pg")
            .field("location", &self.location)
            .finish()
    }
}

impl Pg {
    /// The ledger in `schema` over `client` (its schema already checked): sets the search
    /// path and listens on the schema's channel. Writes an earlier process of this machine
    /// left in the spool at `spool` are replayed before the first operation.
    pub fn new(
        mut client: Client,
        config: super::connect::Target,
        schema: &str,
        location: String,
        session_ids: Option<PathBuf>,
        spool: Option<PathBuf>,
    ) -> anyhow::Result<Pg> {
        anyhow::ensure!(
            super::schema::valid_schema(schema),
            "schema name {schema:?} is not one taskrail uses"
        );
        let pid = prepare(&mut client, schema)?;
        let backlog = Arc::new(Backlog::default());
        let spool = spool
            .map(|path| Spool::open(&path, &location, backlog.clone()))
            .transpose()?;
        Ok(Pg {
            client: RefCell::new(client),
            location,
            lock_key: format!("taskrail-feed:{schema}"),
            pid: Cell::new(pid),
            config,
            schema: schema.to_string(),
            heard: Cell::new(0),
            feed_seen: Cell::new(None),
            session_ids,
            spool,
            backlog,
            lost: Cell::new(false),
            why_offline: RefCell::new(None),
            retry_at: Cell::new(None),
            pause: Cell::new(RETRY_FIRST),
            replaying: Cell::new(false),
        })
    }

    /// The gauge the header reads (`ledger/backlog.rs`).
    pub fn backlog(&self) -> Arc<Backlog> {
        self.backlog.clone()
    }

    /// Where the ledger is, for people.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The file this machine keeps legacy session ids in, if it has a home.
    pub(super) fn session_ids(&self) -> Option<&Path> {
        self.session_ids.as_deref()
    }

    /// Connected, with every spooled write replayed. A lost connection (the server
    /// restarted, the network broke) is made again first, with growing pauses between tries
    /// while the database stays away; meanwhile this fails at once with [`Offline`].
    /// Notifications missed meanwhile count as news: the feed looks.
    pub(super) fn ready(&self) -> anyhow::Result<()> {
        if self.client.borrow().is_closed() {
            if self.retry_at.get().is_some_and(|at| Instant::now() < at) {
                return Err(self.offline());
            }
            let made = super::connect::connect(&self.config).and_then(|mut client| {
                let pid = prepare(&mut client, &self.schema)?;
                Ok((client, pid))
            });
            match made {
                Ok((client, pid)) => {
                    *self.client.borrow_mut() = client;
                    self.pid.set(pid);
                    self.heard.set(self.heard.get() + 1);
                    self.retry_at.set(None);
                    self.pause.set(RETRY_FIRST);
                    self.lost.set(false);
                    *self.why_offline.borrow_mut() = None;
                    self.backlog.set_offline(false);
                    tracing::info!("ledger: connected to PostgreSQL again");
                }
                Err(e) => {
                    let pause = self.pause.get();
                    self.retry_at.set(Some(Instant::now() + pause));
                    self.pause.set((pause * 2).min(RETRY_MAX));
                    self.went_offline(format!("{e:#}"));
                    return Err(self.offline());
                }
            }
        }
        if !self.replaying.get() && self.spool.as_ref().is_some_and(Spool::pending) {
            self.replay()?;
        }
        Ok(())
    }

    /// The database cannot be reached: say so (once) and show it.
    fn went_offline(&self, why: String) {
        self.lost.set(true);
        self.backlog.set_offline(true);
        let mut was = self.why_offline.borrow_mut();
        if was.is_none() {
            tracing::warn!(
                "ledger: the PostgreSQL ledger cannot be reached ({why}); writes are kept on \
                 this machine until it is back"
            );
        }
        *was = Some(why);
    }

    fn offline(&self) -> anyhow::Error {
        let why = self.why_offline.borrow().clone();
        anyhow::Error::new(Offline {
            why: why.unwrap_or_else(|| "the connection was lost".into()),
        })
    }

    /// After a failed statement: whether the connection went with it.
    fn note_failure(&self, e: &anyhow::Error) {
        let closed = self.client.borrow().is_closed();
        let lost = closed
            || e.downcast_ref::<::postgres::Error>().is_some_and(|pg| {
                pg.is_closed()
                    || pg.code().is_some_and(|c| {
                        let c = c.code();
                        c.starts_with("08") || c.starts_with("57P")
                    })
            });
        if lost {
            self.went_offline(format!("{e:#}"));
        } else {
            self.lost.set(false);
        }
    }

    /// Run `f` in a write transaction holding the feed lock; committed when `f` succeeds.
    pub(super) fn write<T>(
        &self,
        f: impl FnOnce(&mut Transaction<'_>) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        self.ready()?;
        let result = {
            let mut client = self.client.borrow_mut();
            let run = || -> anyhow::Result<T> {
                let mut tx = client.transaction()?;
                tx.execute(
                    "SELECT pg_advisory_xact_lock(hashtext($1))",
                    &[&self.lock_key],
                )?;
                let out = f(&mut tx)?;
                tx.commit()?;
                Ok(out)
            };
            run()
        };
        self.settle(result)
    }

    /// Note how an operation ended (a lost connection takes the ledger offline) and say a
    /// driver error plainly.
    fn settle<T>(&self, result: anyhow::Result<T>) -> anyhow::Result<T> {
        match result {
            Ok(v) => {
                self.lost.set(false);
                Ok(v)
            }
            Err(e) => {
                self.note_failure(&e);
                Err(plainly(e))
            }
        }
    }

    /// Run `f` on the connection (reads).
    pub(super) fn read<T>(
        &self,
        f: impl FnOnce(&mut Client) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        self.ready()?;
        let result = f(&mut self.client.borrow_mut());
        self.settle(result)
    }

    /// Take in the notifications waiting on the connection (never blocks); whether any
    /// came from another connection.
    ///
    /// One round trip first: the server sends the notifications of transactions committed
    /// before it reads our query, so a commit another connection saw finish is heard here.
    fn hear(&self) -> anyhow::Result<()> {
        self.ready()?;
        let result = {
            let mut client = self.client.borrow_mut();
            let mut run = || -> anyhow::Result<u64> {
                client.batch_execute("")?;
                let mut others = 0;
                let mut notes = client.notifications();
                let mut it = notes.iter();
                while let Some(n) = it.next()? {
                    if n.process_id() != self.pid.get() {
                        others += 1;
                    }
                }
                Ok(others)
            };
            run()
        };
        let others = self.settle(result)?;
        self.heard.set(self.heard.get() + others);
        Ok(())
    }

    /// A check for `PgLedger::watch` (`thread.rs`): true when another connection wrote
    /// since the last check (and the first time).
    pub fn other_writes() -> impl FnMut(&Pg) -> bool + Send + 'static {
        let mut seen = None;
        move |pg| match pg.hear() {
            Ok(()) => seen.replace(pg.heard.get()) != Some(pg.heard.get()),
            Err(_) => true,
        }
    }

    /// Whether another connection wrote since the feed last looked (true the first time).
    pub(super) fn feed_news(&self) -> anyhow::Result<bool> {
        self.hear()?;
        let now = self.heard.get();
        Ok(self.feed_seen.replace(Some(now)) != Some(now))
    }

    /// The feed looked now: later news only counts from here.
    pub(super) fn feed_looked(&self) -> anyhow::Result<()> {
        self.feed_news().map(drop)
    }
}

/// Use `schema` on a new connection and listen on its channel; the connection's pid.
fn prepare(client: &mut Client, schema: &str) -> anyhow::Result<i32> {
    client.batch_execute(&format!("SET search_path TO {schema}; LISTEN {schema};"))?;
    Ok(client.query_one("SELECT pg_backend_pid()", &[])?.get(0))
}

/// A driver error said with the server's own message (the driver's own says "db error").
fn plainly(e: anyhow::Error) -> anyhow::Error {
    match e.downcast_ref::<::postgres::Error>() {
        Some(pg) => anyhow::anyhow!("PostgreSQL ledger: {}", super::connect::describe(pg)),
        None => e,
    }
}

/// The parts of a stored task that writes need.
pub(super) struct Row {
    pub(super) id: i64,
    pub(super) terminal: bool,
    pub(super) status: String,
    pub(super) snapshot: Option<String>,
}

pub(super) fn find_row(
    c: &mut impl GenericClient,
    server: &ServerId,
    task_id: &TaskId,
) -> anyhow::Result<Option<Row>> {
    let row = c.query_opt(
        "SELECT id, terminal, status, snapshot FROM tasks WHERE server = $1 AND task_id = $2",
        &[&server.as_str(), &task_id.as_str()],
    )?;
    Ok(row.map(|r| Row {
        id: r.get(0),
        terminal: r.get(1),
        status: r.get(2),
        snapshot: r.get(3),
    }))
}

/// The row id for (server, task id), inserting a bare tracked row if absent.
pub(super) fn ensure_task(
    c: &mut impl GenericClient,
    server: &ServerId,
    task_id: &TaskId,
    era: Option<Era>,
    now: i64,
) -> anyhow::Result<(i64, bool)> {
    if let Some(row) = find_row(c, server, task_id)? {
        return Ok((row.id, false));
    }
    let id: i64 = c
        .query_one(
            "INSERT INTO tasks (server, task_id, era, recorded_at) VALUES ($1, $2, $3, $4)
             RETURNING id",
            &[
                &server.as_str(),
                &task_id.as_str(),
                &era.map(Era::as_str),
                &now,
            ],
        )?
        .get(0);
    Ok((id, true))
}

/// Mark a task row changed (the trigger stamps a new change number).
pub(super) fn touch(c: &mut impl GenericClient, task_row: i64) -> anyhow::Result<()> {
    c.execute(
        "UPDATE tasks SET changed_seq = 0 WHERE id = $1",
        &[&task_row],
    )?;
    Ok(())
}

pub(super) fn push_event(
    c: &mut impl GenericClient,
    task: i64,
    at: i64,
    kind: EventKind,
    latency_ms: Option<u64>,
    detail: &Value,
) -> anyhow::Result<()> {
    c.execute(
        "INSERT INTO events (task, at, kind, latency_ms, detail) VALUES ($1, $2, $3, $4, $5)",
        &[
            &task,
            &at,
            &kind.as_str(),
            &to_sql_u64(latency_ms),
            &serde_json::to_string(detail)?,
        ],
    )?;
    Ok(())
}

/// Milliseconds since the Unix epoch, now (while a spooled write is replayed: when it was
/// made).
pub(super) fn now_ms() -> i64 {
    REPLAY_AT
        .with(Cell::get)
        .unwrap_or_else(|| chrono::Utc::now().timestamp_millis())
}

/// Stored milliseconds → timestamp (out-of-range values clamp to the epoch).
pub(super) fn from_ms(ms: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

/// Optional u64 → BIGINT (values beyond `i64::MAX` saturate).
pub(super) fn to_sql_u64(v: Option<u64>) -> Option<i64> {
    v.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
}

/// BIGINT → optional u64 (negative values are dropped).
pub(super) fn from_sql_u64(v: Option<i64>) -> Option<u64> {
    v.and_then(|v| u64::try_from(v).ok())
}
