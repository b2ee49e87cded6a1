//! The real dashboard binary end to end in tmux: a private tmux server per test, keys sent
//! with `send-keys`, every check polling `capture-pane` until it holds (bounded). tmux is
//! required: a missing tmux fails, never skips.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

#[path = "../support/mod.rs"]
mod support;

mod board;
mod every_task;
mod inbox_and_commands;
mod input;
mod ledger_outage;
mod mouse;
mod restart;
mod select;
mod shared_ledger;
mod signin;
mod stats;
mod team_board;
mod wire;
