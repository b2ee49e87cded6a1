//! `taskrail proxy` between real agent hosts and real servers: listener hardening, hosts kept
//! apart, retries attached to running work, faults, and the dashboard beside a proxy.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

#[path = "../support/mod.rs"]
mod support;

mod dashboard;
mod faults;
mod hosts;
mod listener;
mod otel;
mod retry;
mod sign_in;
mod wire_log;
