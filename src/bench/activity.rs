//! `taskrail bench activity`: the `:stats` view's ledger read (`Ledger::activity`) on a
//! filled ledger, timed over a few runs, beside the default read built from `list` and one
//! `timeline` per task (what a backend without its own bulk read does).
//!
//! Reads only; the ledger is the one given (`bench populate` fills one).

use std::path::Path;
use std::time::{Duration, Instant};

use super::{machine_line, ms, quantile};
use crate::ledger::{self, ActivityLimits, activity_from_reads};

/// The `:stats` view's bounds (`cli::stats_read::LIMITS`).
const LIMITS: ActivityLimits = ActivityLimits {
    tasks: 200_000,
    events: 1_000_000,
};

/// Time `runs` activity reads of the last `hours` on the ledger at `location`; with
/// `default_read`, one run of the default read too.
pub async fn activity(
    location: &Path,
    hours: u32,
    runs: usize,
    default_read: bool,
) -> anyhow::Result<()> {
    let ledger = ledger::open(location)?;
    let since = chrono::Utc::now() - chrono::Duration::hours(i64::from(hours));
    let mut took = Vec::with_capacity(runs);
    let mut shape = (0, 0, false);
    for _ in 0..runs.max(1) {
        let t0 = Instant::now();
        let a = ledger.clone().activity(since, LIMITS).await?;
        took.push(ms(t0.elapsed()));
        shape = (a.tasks.len(), a.events.len(), a.truncated);
    }
    took.sort_by(f64::total_cmp);
    let backend = match ledger::Location::parse(location.as_os_str()) {
        Ok(ledger::Location::Postgres(_)) => "PostgreSQL",
        _ => "SQLite",
    };
    report!(
        "activity read (:stats) on the {backend} ledger, last {hours} h: {} tasks, {} entries{}",
        shape.0,
        shape.1,
        if shape.2 { " (truncated)" } else { "" }
    );
    report!(
        "  {} runs: min {:.1} ms, median {:.1} ms, max {:.1} ms",
        took.len(),
        took[0],
        quantile(&took, 0.5),
        took[took.len() - 1]
    );
    if default_read {
        let t0 = Instant::now();
        let a = tokio::time::timeout(
            Duration::from_secs(600),
            activity_from_reads(ledger.clone(), since, LIMITS),
        )
        .await??;
        report!(
            "  the default read (list + one timeline per task): {:.1} ms ({} tasks, {} entries)",
            ms(t0.elapsed()),
            a.tasks.len(),
            a.events.len()
        );
    }
    report!("  method: Ledger::activity with the :stats bounds, timed from the call to its");
    report!("  result (the summing up into the view's figures is not included).");
    report!("  {}", machine_line());
    Ok(())
}
