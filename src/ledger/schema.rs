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

/// Every migration, oldest first. The schema version is `MIGRATIONS.len()`.
pub(crate) const MIGRATIONS: &[&str] = &[V1];

/// The schema version this build writes.
pub(crate) const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;
