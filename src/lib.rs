//! taskrail: a terminal dashboard and headless CLI for MCP Tasks.
//!
//! Layers import only downward: `mcp` → `engine`/`ledger` → `state` → `ui` → `app`;
//! `cli` and `demo` sit beside them (see DESIGN.md).

// Events and commands carry task snapshots by value: they are moved once through a
// channel, so boxing the large variants would only add allocations.
#![allow(clippy::large_enum_variant)]

pub mod app;
pub mod bench;
pub mod cli;
pub mod config;
pub mod demo;
pub mod engine;
pub mod ids;
pub mod launch;
pub mod ledger;
pub mod mcp;
pub mod paths;
pub mod prompt;
pub mod proxy;
pub mod sanitize;
pub mod state;
pub mod ui;
