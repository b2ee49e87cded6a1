//! The command line as a user runs it: the real binary against the demo server, real peers
//! and hostile servers; config and host files; what it writes and what it keeps secret.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

#[path = "../support/mod.rs"]
mod support;

mod bench;
mod config;
mod demo_server;
mod escapes;
mod exits;
mod hostile_server;
mod hosts;
mod huge_files;
mod ledger_location;
mod ledger_rows;
mod otel;
mod pg_scale;
mod secrets;
mod sign_ins;
mod team_ledger;
mod team_ledger_tls;
mod team_outage;
mod team_outsider;
mod unix_tool;
mod watch_all;
mod wire_log;
