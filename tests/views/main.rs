//! The dashboard's views rendered in process with `TestBackend` at fixed sizes, a pinned
//! clock and the default theme, kept as insta snapshots (`snapshots/`). No peers, no tmux.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

#[path = "../support/mod.rs"]
mod support;

mod board_rows;
mod clicks;
mod dashboard;
mod escapes;
mod inbox_and_commands;
mod input;
mod stats;
mod wire;
