//! taskrail: a terminal dashboard and headless CLI for MCP Tasks.
//!
//! Layers import only downward: `mcp` → `engine`/`ledger` → `state` → `ui` → `app`;
//! `cli` and `demo` sit beside them (see DESIGN.md).

pub mod app;
pub mod engine;
pub mod mcp;
pub mod sanitize;
pub mod state;
pub mod ui;
