//! The engine and the processes that follow tasks: in process and as `watch` against the
//! demo server, real peers and hostile servers; network faults, leases between followers,
//! legacy sessions, the demo server's wire.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

#[path = "../support/mod.rs"]
mod support;

mod demo_server;
mod demo_wire;
mod hostile_server;
mod hostile_stdio;
mod hostile_streams;
mod input;
mod leases;
mod legacy_sessions;
mod network_faults;
mod server_identity;
