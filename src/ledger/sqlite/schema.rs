//! The ledger's SQL schema as an ordered list of migrations.
//!
//! Owns: `MIGRATIONS` (index `i` upgrades `user_version` `i` → `i + 1`). Never edit a
//! migration once released; append a new one instead.

/// Version 1: tasks, answered input keys, and the per-task event timeline.
///
/// Times are milliseconds since the Unix epoch; JSON columns hold text.
const V1: &str = r#"
CREATE TABLE tasks (
    id                INTEGER PRIMARY KEY,
    server            TEXT    NOT NULL,
    task_id           TEXT    NOT NULL,
    era               TEXT,
    tool              TEXT,
    arguments         TEXT,
    recorded_at       INTEGER NOT NULL,
    server_created_at TEXT,
    snapshot          TEXT,
    status            TEXT    NOT NULL DEFAULT 'unknown',
    terminal          INTEGER NOT NULL DEFAULT 0,
    terminal_at       INTEGER,
    expired           INTEGER NOT NULL DEFAULT 0,
    last_seen         INTEGER,
    poll_interval_ms  INTEGER,
    ttl_ms            INTEGER,
    parent_task       TEXT,
    UNIQUE (server, task_id)
);
CREATE INDEX tasks_by_recorded ON tasks (recorded_at);
CREATE INDEX tasks_open ON tasks (terminal, recorded_at);
CREATE INDEX tasks_by_terminal_at ON tasks (terminal_at) WHERE terminal = 1;

CREATE TABLE answered_keys (
    task        INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    input_key   TEXT    NOT NULL,
    action      TEXT    NOT NULL,
    answered_at INTEGER NOT NULL,
    PRIMARY KEY (task, input_key)
) WITHOUT ROWID;

CREATE TABLE events (
    id         INTEGER PRIMARY KEY,
    task       INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    at         INTEGER NOT NULL,
    kind       TEXT    NOT NULL,
    latency_ms INTEGER,
    detail     TEXT    NOT NULL DEFAULT 'null'
);
CREATE INDEX events_by_task ON events (task, id);
"#;

/// Version 2: the ledger shared live by several processes.
///
/// - `meta.change_seq` grows by one per write transaction that touches tasks, and every task
///   row it touched gets that number in `changed_seq`: a reader asks for the rows changed
///   since the number it saw last (after `PRAGMA data_version` says another connection wrote).
/// - `follows`: which process follows (polls) a task, with a lease it keeps renewing, so two
///   processes never poll one task.
/// - `outbox`: answers and cancels asked for by a process that does not follow the task, for
///   the one that does (the only one that can reach a stdio server or a legacy stream).
/// - `sessions`: legacy (2025-11-25) sessions, whose tasks live and die with them. A session
///   id is a secret: it is stored here and nowhere else, never logged or exported.
/// - `tasks.end_reason`: why a tombstone ended (`expired`, `session_lost`);
///   `tasks.cancel_state`: 1 requested, 2 acknowledged; `tasks.started_by`: the client that
///   started the task (a proxied agent host's name).
const V2: &str = r#"
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('change_seq', 0);

CREATE TABLE sessions (
    id               INTEGER PRIMARY KEY,
    server           TEXT    NOT NULL,
    session_id       TEXT    NOT NULL,
    protocol_version TEXT    NOT NULL,
    capabilities     TEXT    NOT NULL DEFAULT 'null',
    server_name      TEXT,
    created_at       INTEGER NOT NULL,
    lost_at          INTEGER,
    UNIQUE (server, session_id)
);

ALTER TABLE tasks ADD COLUMN changed_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN end_reason TEXT;
ALTER TABLE tasks ADD COLUMN cancel_state INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN started_by TEXT;
ALTER TABLE tasks ADD COLUMN session INTEGER REFERENCES sessions (id) ON DELETE SET NULL;
CREATE INDEX tasks_by_change ON tasks (changed_seq);
CREATE INDEX tasks_by_session ON tasks (session) WHERE session IS NOT NULL;
UPDATE tasks SET end_reason = 'expired' WHERE expired = 1;

CREATE TABLE follows (
    task  INTEGER PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
    owner TEXT    NOT NULL,
    until INTEGER NOT NULL
);
CREATE INDEX follows_by_owner ON follows (owner);

CREATE TABLE outbox (
    id           INTEGER PRIMARY KEY,
    task         INTEGER NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    kind         TEXT    NOT NULL,
    payload      TEXT    NOT NULL DEFAULT 'null',
    requester    TEXT    NOT NULL,
    requested_at INTEGER NOT NULL,
    done_at      INTEGER,
    done_seq     INTEGER,
    outcome      TEXT
);
CREATE INDEX outbox_open ON outbox (task) WHERE done_at IS NULL;
CREATE INDEX outbox_done ON outbox (requester, done_seq) WHERE done_seq IS NOT NULL;
"#;

/// Version 3: a server's tasks in the order resuming reads them (newest first, the row id
/// breaking ties), so resuming reads no more than it returns and sorts nothing.
const V3: &str = r#"
CREATE INDEX tasks_by_server_recorded ON tasks (server, recorded_at);
"#;

/// Version 4: one heartbeat per following process. A lease holds until the later of its
/// own `until` (set when it is taken) and its owner's row in `owners`, which the process
/// renews: keeping every lease it holds costs one row, not one per task it follows.
const V4: &str = r#"
CREATE TABLE owners (
    owner TEXT    PRIMARY KEY,
    until INTEGER NOT NULL
) WITHOUT ROWID;
"#;

/// Version 5: who asked for a cancel and why, the proxy's calls, and tasks of the proxy's
/// own.
///
/// - `tasks.origin`: `proxy` for a blocking call a proxy tracks as a task of its own (no
///   server knows its id; only the proxy process that made it can follow it); NULL for a
///   server's task.
/// - `tasks.cancel_by`: `{"by", "reason"}` of the first cancel asked for (JSON).
/// - `tasks.host_note`: what a proxied host last did about the task (gave up waiting).
/// - `tasks.call_key`: for a task a proxy created for a host that waits for the result,
///   the digest of (tool, canonical arguments); `tasks.delivery`: 0 a host waits for it,
///   1 its host stopped waiting before the result (a repeated call may attach), 2 the
///   result was delivered (never handed out again).
const V5: &str = r#"
ALTER TABLE tasks ADD COLUMN cancel_by TEXT;
ALTER TABLE tasks ADD COLUMN host_note TEXT;
ALTER TABLE tasks ADD COLUMN call_key TEXT;
ALTER TABLE tasks ADD COLUMN delivery INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN origin TEXT;
CREATE INDEX tasks_by_call ON tasks (server, call_key) WHERE call_key IS NOT NULL;
"#;

/// Version 6: tasks a prune removed, stamped with the prune's change number, so the feed
/// tells other processes (a dashboard drops their rows). Kept for a day.
const V6: &str = r#"
CREATE TABLE removed (
    seq     INTEGER NOT NULL,
    server  TEXT    NOT NULL,
    task_id TEXT    NOT NULL,
    at      INTEGER NOT NULL
);
CREATE INDEX removed_by_seq ON removed (seq);
"#;

/// Every migration, oldest first. The schema version is `MIGRATIONS.len()`.
pub(crate) const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6];

/// The schema version this build writes.
pub(crate) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;
