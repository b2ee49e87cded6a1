//! `--wire FILE`: this process's one wire hub, installed before any connection is made, and
//! the tap each server's connect options carry. The dashboard always has a hub (its wire
//! view reads from it); other commands have one only with `--wire`.
//!
//! Must not format or mask records (that is `mcp::wire`).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use super::args::exit;
use super::{CliResult, fail};
use crate::engine::ServerSpec;
use crate::mcp::wire::{FileSink, WireHub};

static HUB: OnceLock<Arc<WireHub>> = OnceLock::new();

/// Install the hub: with a file for `--wire`, and without one for the dashboard.
pub(super) fn install(file: Option<&Path>, dashboard: bool) -> CliResult<()> {
    let sink = match file {
        Some(path) => Some(
            FileSink::open(path, FileSink::max_bytes_from_env()).map_err(|e| {
                fail(
                    &format!("--wire {}: cannot open it: {e}", path.display()),
                    exit::USAGE,
                )
            })?,
        ),
        None if dashboard => None,
        None => return Ok(()),
    };
    let _ = HUB.set(WireHub::new(sink));
    Ok(())
}

/// The hub, when this process has one.
pub fn hub() -> Option<Arc<WireHub>> {
    HUB.get().cloned()
}

/// Report every message of `spec`'s connection to the hub, under its id.
pub(super) fn tapped(mut spec: ServerSpec) -> ServerSpec {
    spec.options.wire = HUB.get().map(|h| h.tap(spec.id.as_str()));
    spec
}

/// Write what is queued and stop (at the end of the process).
pub(super) fn close() {
    if let Some(h) = HUB.get() {
        h.close(std::time::Duration::from_secs(2));
    }
}
