//! Metrics beside the traces, through the same collector: the conventions'
//! `mcp.client.operation.duration` histogram (every request, by method, tool and error) and
//! `taskrail.tasks`, a gauge of the tasks this process follows by server and status.
//!
//! Owns: the instruments and what they count. Must not label with anything unbounded or
//! secret: no task ids, no arguments, tool names sanitized and bounded.

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, MeterProvider as _};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

static DURATION: OnceLock<Histogram<f64>> = OnceLock::new();
/// Each open task's (server address, status), keyed by task id in memory only.
static TASKS: Mutex<Option<HashMap<String, (String, String)>>> = Mutex::new(None);

/// The conventions' buckets for MCP operation durations, in seconds.
const BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

pub(super) fn install(provider: &SdkMeterProvider) {
    let meter = provider.meter("taskrail");
    let histogram = meter
        .f64_histogram("mcp.client.operation.duration")
        .with_unit("s")
        .with_description("Duration of MCP requests as the client sees them")
        .with_boundaries(BUCKETS.to_vec())
        .build();
    let _ = DURATION.set(histogram);
    // The callback stays registered with the provider: the handle itself is not needed.
    let _gauge = meter
        .i64_observable_gauge("taskrail.tasks")
        .with_description("Tasks this process follows, by server and status")
        .with_callback(|observer| {
            let mut counts: HashMap<(String, String), i64> = HashMap::new();
            if let Some(tasks) = TASKS.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                for (server, status) in tasks.values() {
                    *counts.entry((server.clone(), status.clone())).or_default() += 1;
                }
            }
            for ((server, status), n) in counts {
                observer.observe(
                    n,
                    &[
                        KeyValue::new("server.address", server),
                        KeyValue::new(format!("{}status", super::PREFIX), status),
                    ],
                );
            }
        })
        .build();
}

/// One request took `seconds`.
pub(super) fn request(seconds: f64, attrs: &[KeyValue]) {
    if let Some(h) = DURATION.get() {
        h.record(seconds, attrs);
    }
}

/// A followed task's status (`None`: it ended, or this process stopped following it).
pub(super) fn task_status(task: &str, server: &str, status: Option<&str>) {
    let mut tasks = TASKS.lock().unwrap_or_else(|e| e.into_inner());
    let tasks = tasks.get_or_insert_with(HashMap::new);
    match status {
        Some(s) => {
            tasks.insert(task.to_string(), (server.to_string(), s.to_string()));
        }
        None => {
            tasks.remove(task);
        }
    }
}
