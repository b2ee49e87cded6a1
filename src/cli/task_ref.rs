//! Which task a command means: a full task id or a unique prefix of one the ledger holds,
//! on the `--server` given or, without one, on the server the ledger recorded it for. The
//! one place every id-taking subcommand resolves its argument.
//!
//! Owns: that resolution and its errors. Must not talk to servers.

use super::args::exit;
use super::{CliResult, Context, fail};
use crate::engine::{ServerId, ServerSpec};
use crate::ledger::TaskRecord;
use crate::mcp::TaskId;
use crate::sanitize::sanitize_line;

/// A resolved task argument.
#[derive(Debug, Clone)]
pub struct TaskRef {
    pub task_id: TaskId,
    /// The ledger's record, when it has the task.
    pub record: Option<TaskRecord>,
}

/// What the ledger's prefix search came to, on one server or all.
#[derive(Debug)]
pub enum Found {
    One(Box<TaskRecord>),
    None,
    Several(usize),
}

/// Pick the task `given` names among the ledger's `candidates` (tasks whose id starts with
/// it): an exact id wins, else a unique prefix. Only the tasks of `server` count when one
/// is given.
pub fn pick(given: &str, candidates: Vec<TaskRecord>, server: Option<&ServerId>) -> Found {
    let mut on_server: Vec<TaskRecord> = candidates
        .into_iter()
        .filter(|r| server.is_none_or(|s| &r.server == s))
        .collect();
    if let Some(i) = on_server.iter().position(|r| r.task_id.as_str() == given) {
        return Found::One(Box::new(on_server.swap_remove(i)));
    }
    match on_server.len() {
        0 => Found::None,
        1 => Found::One(Box::new(on_server.remove(0))),
        n => Found::Several(n),
    }
}

/// How a command uses the task it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The ledger's record (timeline, export): a task the ledger lacks is an error.
    Record,
    /// A server to ask: an id the ledger lacks is taken whole.
    Server,
}

/// Resolve `given` through the ledger, restricted to `server` when given.
pub async fn resolve(
    ctx: &Context,
    given: &str,
    server: Option<&ServerId>,
    need: Need,
) -> CliResult<TaskRef> {
    if given.is_empty() {
        return Err(fail("the task id is empty", exit::USAGE));
    }
    let prefix = given.to_string();
    let candidates = ctx.ledger_call(move |l| l.find(&prefix)).await?;
    let shown = sanitize_line(given, 80);
    match pick(given, candidates, server) {
        Found::One(rec) => Ok(TaskRef {
            task_id: rec.task_id.clone(),
            record: Some(*rec),
        }),
        Found::Several(n) => Err(fail(
            &format!("{n} tasks start with {shown:?}: give more of the id"),
            exit::USAGE,
        )),
        Found::None if need == Need::Record => Err(fail(
            &format!("no task in the ledger starts with {shown:?}"),
            exit::UNKNOWN_TASK,
        )),
        Found::None => Ok(TaskRef {
            task_id: TaskId::new(given),
            record: None,
        }),
    }
}

/// The server and task a network command (`get`, `answer`, `cancel`, `watch ID`) works on:
/// the `--server` given, else the one the ledger recorded the task for.
pub async fn on_server(ctx: &Context, given: &str) -> CliResult<(ServerSpec, TaskRef)> {
    if ctx.servers.len() > 1 {
        return Err(fail("this command takes at most one --server", exit::USAGE));
    }
    let spec = match ctx.servers.first() {
        Some(s) => match ctx.spec(s) {
            Ok(spec) => Some(spec),
            // Not a configured name nor an address: a server the ledger names (the demo).
            Err(e) => return ledger_server(ctx, s, given).await.ok_or(e)?,
        },
        None => None,
    };
    let task = resolve(ctx, given, spec.as_ref().map(|s| &s.id), Need::Server).await?;
    if let (Some(spec), None) = (&spec, &task.record) {
        refuse_hidden(ctx, &spec.id, &task.task_id).await?;
    }
    let spec = match (spec, &task.record) {
        (Some(spec), _) => spec,
        (None, Some(rec)) => match ctx.config.server(rec.server.as_str()) {
            // a configured server: its own spec (a disabled one says why)
            Some(_) => ctx.spec(rec.server.as_str())?,
            // A server this process cannot reach (the demo of another shell, a stdio
            // server another process runs): answers and cancels go through the outbox to
            // the process that follows the task; `get` reads what it last recorded.
            None => ctx
                .spec_for(&rec.server)
                .unwrap_or_else(|| unreachable(ctx, &rec.server)),
        },
        (None, None) => {
            return Err(fail(
                &format!(
                    "no task in the ledger starts with {:?}; give --server URL to ask a server",
                    sanitize_line(given, 80)
                ),
                exit::UNKNOWN_TASK,
            ));
        }
    };
    Ok((spec, task))
}

/// A task of a shared ledger that its row-level security hides from this role (another
/// team's task, its id leaked): refused as an unknown task, and nothing is sent to the
/// server. A ledger that cannot say lets the command go on.
async fn refuse_hidden(ctx: &Context, server: &ServerId, task_id: &TaskId) -> CliResult<()> {
    let (server, id) = (server.clone(), task_id.clone());
    if let Ok(true) = ctx.ledger_call(move |l| l.hidden(&server, &id)).await {
        return Err(fail(
            &format!(
                "unknown task {}: the ledger has it, but it is not shared with your role; \
                 nothing was sent",
                sanitize_line(task_id.as_str(), 80)
            ),
            exit::UNKNOWN_TASK,
        ));
    }
    Ok(())
}

/// The spec of a server this process cannot reach, known by its ledger id.
pub fn unreachable(ctx: &Context, server: &ServerId) -> ServerSpec {
    ServerSpec {
        read_only: ctx.read_only,
        ..ServerSpec::unreachable(server.clone())
    }
}

/// `--server NAME` that is neither configured nor an address, when the ledger has the
/// task on a server of that name: that server, reached through the ledger.
async fn ledger_server(
    ctx: &Context,
    name: &str,
    given: &str,
) -> Option<CliResult<(ServerSpec, TaskRef)>> {
    let id = ServerId::stored(name);
    match resolve(ctx, given, Some(&id), Need::Record).await {
        Ok(task) => Some(Ok((unreachable(ctx, &id), task))),
        Err(_) => None,
    }
}

/// A ledger record for tests: `id` on `server`, working, nothing else known.
#[cfg(test)]
pub(crate) fn record_fixture(server: &str, id: &str) -> TaskRecord {
    TaskRecord {
        server: ServerId::named(server),
        task_id: TaskId::new(id),
        era: None,
        tool: None,
        arguments: None,
        recorded_at: chrono::Utc::now(),
        server_created_at: None,
        snapshot: None,
        status: "working".into(),
        terminal: false,
        terminal_at: None,
        expired: false,
        end: None,
        last_seen: None,
        poll_interval_ms: None,
        ttl_ms: None,
        parent_task: None,
        answered_keys: Vec::new(),
        cancel: None,
        started_by: None,
        cancel_by: None,
        host_note: None,
        origin: Default::default(),
        session: None,
        lean: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(server: &str, id: &str) -> TaskRecord {
        record_fixture(server, id)
    }

    fn id(found: Found) -> String {
        match found {
            Found::One(r) => format!("{}/{}", r.server, r.task_id.as_str()),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn an_exact_id_wins_then_a_unique_prefix_on_the_server_asked() {
        // what the ledger's prefix search returns for `given`
        let found = |given: &str| {
            vec![rec("a", "-abc"), rec("a", "-abcdef"), rec("b", "-abx")]
                .into_iter()
                .filter(|r| r.task_id.as_str().starts_with(given))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            id(pick("-abc", found("-abc"), None)),
            "a/-abc",
            "exact beats prefix"
        );
        assert_eq!(id(pick("-abcd", found("-abcd"), None)), "a/-abcdef");
        assert_eq!(id(pick("-ab", found("-ab"), None)), "Several(3)");
        let b = ServerId::named("b");
        assert_eq!(id(pick("-ab", found("-ab"), Some(&b))), "b/-abx");
        assert_eq!(id(pick("-abc", found("-abc"), Some(&b))), "None");
    }
}
