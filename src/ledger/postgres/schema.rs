//! The PostgreSQL ledger's schema as ordered, versioned migrations, the check every client
//! makes before using it, and `migrate`, which creates or upgrades it.
//!
//! Owns `MIGRATIONS` (index `i` upgrades version `i` to `i + 1`; never edit a released one,
//! append), the group role `taskrail_users` and exactly what it may do, and row-level
//! security: a row belongs to the role that wrote it (`owner_role`), and a role sees and
//! acts on the rows of the roles it is a member of. `{s}` in the SQL is the schema's name.
//! A client never migrates: it says what to run.

use ::postgres::Client;
use anyhow::{Context, bail};

/// The group role every login role using the ledger is granted.
pub const USERS_ROLE: &str = "taskrail_users";

/// The schema taskrail keeps its tables in (tests use schemas of their own).
pub const DEFAULT_SCHEMA: &str = "taskrail";

/// Version 1: the tables, as the SQLite ledger has them (times in ms since the epoch,
/// JSON as text), each row owned by the role that wrote it. Legacy session ids are not
/// here: `session_ref` is a digest of one, the id itself stays on the machine that opened
/// the session.
const V1: &str = r#"
CREATE SEQUENCE {s}.change_seq;

CREATE TABLE {s}.sessions (
    id               BIGSERIAL PRIMARY KEY,
    server           TEXT   NOT NULL,
    session_ref      TEXT   NOT NULL,
    protocol_version TEXT   NOT NULL,
    capabilities     TEXT   NOT NULL DEFAULT 'null',
    server_name      TEXT,
    created_at       BIGINT NOT NULL,
    lost_at          BIGINT,
    owner_role       NAME   NOT NULL DEFAULT current_user,
    UNIQUE (server, session_ref)
);

CREATE TABLE {s}.tasks (
    id                BIGSERIAL PRIMARY KEY,
    server            TEXT     NOT NULL,
    task_id           TEXT     NOT NULL,
    era               TEXT,
    tool              TEXT,
    arguments         TEXT,
    recorded_at       BIGINT   NOT NULL,
    server_created_at TEXT,
    snapshot          TEXT,
    status            TEXT     NOT NULL DEFAULT 'unknown',
    terminal          BOOLEAN  NOT NULL DEFAULT false,
    terminal_at       BIGINT,
    expired           BOOLEAN  NOT NULL DEFAULT false,
    end_reason        TEXT,
    last_seen         BIGINT,
    poll_interval_ms  BIGINT,
    ttl_ms            BIGINT,
    parent_task       TEXT,
    cancel_state      SMALLINT NOT NULL DEFAULT 0,
    cancel_by         TEXT,
    started_by        TEXT,
    host_note         TEXT,
    session           BIGINT REFERENCES {s}.sessions (id) ON DELETE SET NULL,
    call_key          TEXT,
    delivery          SMALLINT NOT NULL DEFAULT 0,
    origin            TEXT,
    changed_seq       BIGINT   NOT NULL DEFAULT 0,
    owner_role        NAME     NOT NULL DEFAULT current_user,
    UNIQUE (server, task_id)
);
CREATE INDEX tasks_open ON {s}.tasks (terminal, recorded_at);
CREATE INDEX tasks_by_server_recorded ON {s}.tasks (server, recorded_at);
CREATE INDEX tasks_by_change ON {s}.tasks (changed_seq);
CREATE INDEX tasks_by_terminal_at ON {s}.tasks (terminal_at) WHERE terminal;
CREATE INDEX tasks_by_call ON {s}.tasks (server, call_key) WHERE call_key IS NOT NULL;

CREATE TABLE {s}.answered_keys (
    task        BIGINT NOT NULL REFERENCES {s}.tasks (id) ON DELETE CASCADE,
    input_key   TEXT   NOT NULL,
    action      TEXT   NOT NULL,
    answered_at BIGINT NOT NULL,
    owner_role  NAME   NOT NULL DEFAULT current_user,
    PRIMARY KEY (task, input_key)
);

CREATE TABLE {s}.events (
    id         BIGSERIAL PRIMARY KEY,
    task       BIGINT NOT NULL REFERENCES {s}.tasks (id) ON DELETE CASCADE,
    at         BIGINT NOT NULL,
    kind       TEXT   NOT NULL,
    latency_ms BIGINT,
    detail     TEXT   NOT NULL DEFAULT 'null',
    owner_role NAME   NOT NULL DEFAULT current_user
);
CREATE INDEX events_by_task ON {s}.events (task, id);

CREATE TABLE {s}.owners (
    owner TEXT   PRIMARY KEY,
    until BIGINT NOT NULL
);

CREATE TABLE {s}.follows (
    task  BIGINT PRIMARY KEY REFERENCES {s}.tasks (id) ON DELETE CASCADE,
    owner TEXT   NOT NULL,
    until BIGINT NOT NULL
);
CREATE INDEX follows_by_owner ON {s}.follows (owner);

CREATE TABLE {s}.outbox (
    id           BIGSERIAL PRIMARY KEY,
    task         BIGINT NOT NULL REFERENCES {s}.tasks (id) ON DELETE CASCADE,
    kind         TEXT   NOT NULL,
    payload      TEXT   NOT NULL DEFAULT 'null',
    requester    TEXT   NOT NULL,
    requested_at BIGINT NOT NULL,
    done_at      BIGINT,
    done_seq     BIGINT,
    outcome      TEXT,
    owner_role   NAME   NOT NULL DEFAULT current_user
);
CREATE INDEX outbox_open ON {s}.outbox (task) WHERE done_at IS NULL;
"#;

/// Version 2: who sees what, and the live signal.
///
/// - Row-level security: a role sees and changes the tasks (and sessions) of the roles it
///   is a member of (`GRANT alice TO carol` shares alice's tasks with carol), and a task's
///   keys, events, requests and lease with the task; it writes rows only as itself (or a
///   role it is a member of, for tasks). Rows of others are invisible: acting on one is
///   acting on an unknown task.
/// - Every write to `tasks` or `outbox` stamps the task's change number and notifies the
///   channel named after the schema with the hint `changed` (never an id, never an
///   argument); each process listens and reads the rows past its cursor.
const V2: &str = r#"
CREATE FUNCTION {s}.stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.changed_seq := nextval('{s}.change_seq');
    RETURN NEW;
END $$;
CREATE TRIGGER tasks_stamp BEFORE INSERT OR UPDATE ON {s}.tasks
    FOR EACH ROW EXECUTE FUNCTION {s}.stamp();

CREATE FUNCTION {s}.hint() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('{s}', 'changed');
    RETURN NULL;
END $$;
CREATE TRIGGER tasks_hint AFTER INSERT OR UPDATE OR DELETE ON {s}.tasks
    FOR EACH STATEMENT EXECUTE FUNCTION {s}.hint();
CREATE TRIGGER outbox_hint AFTER INSERT OR UPDATE ON {s}.outbox
    FOR EACH STATEMENT EXECUTE FUNCTION {s}.hint();

ALTER TABLE {s}.tasks ENABLE ROW LEVEL SECURITY;
ALTER TABLE {s}.sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE {s}.answered_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE {s}.events ENABLE ROW LEVEL SECURITY;
ALTER TABLE {s}.outbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE {s}.follows ENABLE ROW LEVEL SECURITY;
CREATE POLICY member ON {s}.tasks
    USING (pg_has_role(current_user, owner_role, 'MEMBER'))
    WITH CHECK (pg_has_role(current_user, owner_role, 'MEMBER'));
CREATE POLICY member ON {s}.sessions
    USING (pg_has_role(current_user, owner_role, 'MEMBER'))
    WITH CHECK (pg_has_role(current_user, owner_role, 'MEMBER'));
-- A task's answered keys, timeline, requests and lease are seen with the task (carol's
-- answer to alice's task is alice's to carry out), and are written as oneself.
CREATE POLICY with_task ON {s}.answered_keys
    USING (EXISTS (SELECT FROM {s}.tasks t WHERE t.id = task)) WITH CHECK (EXISTS (SELECT FROM {s}.tasks t WHERE t.id = task));
CREATE POLICY with_task ON {s}.events
    USING (EXISTS (SELECT FROM {s}.tasks t WHERE t.id = task)) WITH CHECK (EXISTS (SELECT FROM {s}.tasks t WHERE t.id = task));
CREATE POLICY with_task ON {s}.outbox
    USING (EXISTS (SELECT FROM {s}.tasks t WHERE t.id = task)) WITH CHECK (EXISTS (SELECT FROM {s}.tasks t WHERE t.id = task));
CREATE POLICY with_task ON {s}.follows
    USING (EXISTS (SELECT FROM {s}.tasks t WHERE t.id = task)) WITH CHECK (EXISTS (SELECT FROM {s}.tasks t WHERE t.id = task));
CREATE POLICY as_oneself ON {s}.answered_keys AS RESTRICTIVE FOR INSERT
    WITH CHECK (owner_role = current_user);
CREATE POLICY as_oneself ON {s}.events AS RESTRICTIVE FOR INSERT
    WITH CHECK (owner_role = current_user);
CREATE POLICY as_oneself ON {s}.outbox AS RESTRICTIVE FOR INSERT
    WITH CHECK (owner_role = current_user);
"#;

/// Version 3: tasks a prune (or a demo server's clean-up) removed, stamped with that
/// write's change number, so the feed tells other processes to drop their rows. Kept for a
/// day. A row is seen by the roles that saw the task (it names the task's id).
const V3: &str = r#"
CREATE TABLE {s}.removed (
    seq        BIGINT NOT NULL,
    server     TEXT   NOT NULL,
    task_id    TEXT   NOT NULL,
    at         BIGINT NOT NULL,
    owner_role NAME   NOT NULL
);
CREATE INDEX removed_by_seq ON {s}.removed (seq);
ALTER TABLE {s}.removed ENABLE ROW LEVEL SECURITY;
CREATE POLICY member ON {s}.removed
    USING (pg_has_role(current_user, owner_role, 'MEMBER'))
    WITH CHECK (pg_has_role(current_user, owner_role, 'MEMBER'));
"#;

/// Version 4: whether a task is in the ledger but hidden from the caller by row-level
/// security, so a role given another team's task id (a leaked one) is refused rather than
/// sending the server a cancel or an answer for a task it may not see. Runs as the schema's
/// owner (row-level security does not apply to it); says only yes or no.
const V4: &str = r#"
CREATE FUNCTION {s}.task_hidden(p_server TEXT, p_task_id TEXT) RETURNS BOOLEAN
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$ SELECT EXISTS (SELECT 1 FROM {s}.tasks WHERE server = p_server AND task_id = p_task_id) $$;
REVOKE ALL ON FUNCTION {s}.task_hidden(TEXT, TEXT) FROM PUBLIC;
"#;

/// Every migration, oldest first. The schema version is `MIGRATIONS.len()`.
pub const MIGRATIONS: &[&str] = &[V1, V2, V3, V4];

/// The schema version this build uses.
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// What the group role may do: use the schema, read and write the rows row-level security
/// lets it see, draw change numbers and row ids. No DDL, no TRUNCATE, no REFERENCES.
const GRANTS: &str = r#"
GRANT USAGE ON SCHEMA {s} TO taskrail_users;
GRANT SELECT, INSERT, UPDATE, DELETE ON
    {s}.tasks, {s}.sessions, {s}.answered_keys, {s}.events, {s}.owners, {s}.follows,
    {s}.outbox, {s}.removed
    TO taskrail_users;
GRANT SELECT ON {s}.schema_version TO taskrail_users;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA {s} TO taskrail_users;
GRANT EXECUTE ON FUNCTION {s}.task_hidden(TEXT, TEXT) TO taskrail_users;
"#;

/// A schema name taskrail accepts (it is spliced into SQL): lower-case letters, digits and
/// `_`, starting with a letter, at most 48 bytes.
pub fn valid_schema(name: &str) -> bool {
    name.len() <= 48
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

fn sql(template: &str, schema: &str) -> String {
    template.replace("{s}", schema)
}

/// The schema's version, `None` if it has none (never migrated).
pub fn version(client: &mut Client, schema: &str) -> anyhow::Result<Option<i32>> {
    let exists = client
        .query_one(
            "SELECT to_regclass($1) IS NOT NULL",
            &[&format!("{schema}.schema_version")],
        )
        .context("reading the ledger's schema version")?;
    if !exists.get::<_, bool>(0) {
        return Ok(None);
    }
    let row = client
        .query_opt(&sql("SELECT version FROM {s}.schema_version", schema), &[])
        .context("reading the ledger's schema version")?;
    Ok(row.map(|r| r.get(0)))
}

/// The check a client makes before using the ledger: the schema is there and this build's
/// version; otherwise an error that says what to run. Never migrates.
pub fn check(client: &mut Client, schema: &str) -> anyhow::Result<()> {
    let advice = "run `taskrail --db URL ledger migrate` as a role that may create objects \
                  in the database (its owner, say), once";
    match version(client, schema)? {
        None => bail!("the ledger's schema \"{schema}\" is missing from this database: {advice}"),
        Some(v) if v < SCHEMA_VERSION => bail!(
            "the ledger's schema \"{schema}\" is at version {v} and this taskrail needs \
             version {SCHEMA_VERSION}: {advice}"
        ),
        Some(v) if v > SCHEMA_VERSION => bail!(
            "the ledger's schema \"{schema}\" is at version {v}, written by a newer taskrail \
             (this one knows up to {SCHEMA_VERSION}): upgrade taskrail"
        ),
        Some(_) => Ok(()),
    }
}

/// What `migrate` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migrated {
    pub from: i32,
    pub to: i32,
}

/// Create or upgrade the schema to this build's version (up to `target`, for tests of
/// older versions), create the group role if it is missing, and grant it what a client
/// needs. One transaction per migration, under an advisory lock so two migrating at once
/// take turns (the role is shared by the whole cluster). Refuses a schema newer than this build.
pub fn migrate(client: &mut Client, schema: &str, target: i32) -> anyhow::Result<Migrated> {
    if !valid_schema(schema) {
        bail!("schema name {schema:?} is not one taskrail uses");
    }
    let target = target.clamp(0, SCHEMA_VERSION);
    let mut tx = client.transaction()?;
    // One lock for every migration in the cluster: the group role is the cluster's.
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext('taskrail_users'))",
        &[],
    )?;
    tx.batch_execute(&sql(
        "CREATE SCHEMA IF NOT EXISTS {s};
         CREATE TABLE IF NOT EXISTS {s}.schema_version (
             one     BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
             version INTEGER NOT NULL
         );
         INSERT INTO {s}.schema_version (version) VALUES (0) ON CONFLICT DO NOTHING;",
        schema,
    ))?;
    let from: i32 = tx
        .query_one(
            &sql("SELECT version FROM {s}.schema_version FOR UPDATE", schema),
            &[],
        )?
        .get(0);
    if from > SCHEMA_VERSION {
        bail!(
            "the ledger's schema is at version {from}, newer than this taskrail knows \
             ({SCHEMA_VERSION}): upgrade taskrail"
        );
    }
    for (i, step) in MIGRATIONS
        .iter()
        .enumerate()
        .take(target as usize)
        .skip(from.max(0) as usize)
    {
        tx.batch_execute(&sql(step, schema))
            .with_context(|| format!("migrating the ledger to version {}", i + 1))?;
    }
    let to = from.max(target);
    tx.execute(
        &sql("UPDATE {s}.schema_version SET version = $1", schema),
        &[&to],
    )?;
    tx.batch_execute(
        // Roles belong to the whole cluster, and the advisory lock above only to this
        // database: a migration of another database may create the role at the same time.
        "DO $$ BEGIN
             IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'taskrail_users') THEN
                 CREATE ROLE taskrail_users NOLOGIN;
             END IF;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
         END $$;",
    )
    .context("creating the role taskrail_users")?;
    if to == SCHEMA_VERSION {
        tx.batch_execute(&sql(GRANTS, schema))
            .context("granting taskrail_users what a client needs")?;
    }
    tx.commit()?;
    Ok(Migrated { from, to })
}
