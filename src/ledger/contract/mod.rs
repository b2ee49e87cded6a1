//! The ledger contract as tests every backend runs: the behaviour callers rely on (see the
//! `Ledger` trait's docs), written once against `LedgerHandle`, never against a backend.
//!
//! Each test is an `async fn(open: &Open)`. `open(path)` opens the ledger a test owns at
//! `path` (a fresh temporary directory's file); opening the same `path` twice gives two
//! independent handles, as two processes sharing the ledger would hold.
//!
//! `contract_suite!(open_fn)` turns every test into a `#[tokio::test]` for one backend. A
//! new backend runs the whole suite by adding one instantiation at the bottom of this file,
//! e.g. for PostgreSQL (a factory that maps the path to a database or schema of its own):
//!
//! ```ignore
//! mod postgres {
//!     crate::ledger::contract::contract_suite!(crate::ledger::postgres::open_for_test);
//! }
//! ```
//!
//! Tests of one backend's internals (SQLite's pragmas, WAL, file mode, `data_version`,
//! its rows) stay with that backend.

mod activity;
mod durability;
mod handle;
mod shared;
mod store;

use std::path::Path;

use crate::ledger::LedgerHandle;

/// Opens (creating if needed) the ledger at a test's location.
pub type Open = dyn Fn(&Path) -> LedgerHandle + Sync;

/// A fresh ledger in a temporary directory (kept alive by the returned guard).
pub fn fresh(open: &Open) -> (tempfile::TempDir, LedgerHandle) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = open(&dir.path().join("ledger.db"));
    (dir, ledger)
}

/// One `#[tokio::test]` per contract test, for the backend `$open` opens.
macro_rules! contract_suite {
    ($open:path) => {
        $crate::ledger::contract::contract_suite!(@tests $open;
            activity::activity_holds_the_tasks_alive_since_and_their_entries,
            activity::activity_keeps_to_its_limits,
            activity::activity_of_many_tasks_agrees_with_list_and_timeline,
            durability::two_ledgers_interleave_writes,
            handle::round_trip,
            handle::queued_snapshots_are_seen_by_later_calls,
            handle::an_unawaited_write_runs_before_later_operations,
            handle::a_url_free_location_is_reported,
            shared::the_feed_reports_other_connections_writes_once,
            shared::one_process_follows_a_task_at_a_time,
            shared::tracking_by_id_records_the_task_and_takes_its_lease_once,
            shared::leases_of_owners_on_either_side_of_mine_are_found,
            shared::a_killed_process_not_yet_reaped_holds_no_lease,
            shared::outbox_requests_reach_the_follower_and_outcomes_the_requester,
            shared::a_lost_session_tombstones_its_live_tasks,
            shared::url_rows_move_to_the_configured_name_and_merge,
            shared::a_prune_is_in_the_feed_once,
            store::creation_round_trip,
            store::tracked_task_is_inserted_once_and_filled_by_creation,
            store::snapshot_ordering_and_first_terminal_wins,
            store::snapshot_for_unknown_task_is_kept,
            store::batched_snapshots_apply_in_order,
            store::answered_keys_first_answer_wins,
            store::tombstone_is_terminal_and_final,
            store::list_non_terminal_and_find,
            store::timeline_keeps_insertion_order,
        );
    };
    (@tests $open:path; $($module:ident :: $test:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $test() {
                let open = |p: &std::path::Path| $open(p).expect("opening the ledger");
                $crate::ledger::contract::$module::$test(&open).await;
            }
        )*
    };
}
pub(crate) use contract_suite;

/// The SQLite backend runs the contract.
mod sqlite {
    super::contract_suite!(crate::ledger::sqlite::open);
}

/// The PostgreSQL backend runs the same contract, each ledger a schema of its own on the
/// tests' own server.
mod postgres {
    super::contract_suite!(crate::ledger::postgres::open_for_test);
}
