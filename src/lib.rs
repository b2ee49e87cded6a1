//! taskrail: a terminal dashboard and headless CLI for MCP Tasks. This is the crate map a
//! contributor reads first; `tests/house/layering.rs` (its `LAYERS` table) is the one authority on
//! the walls, and `tests/house/crate_map.rs` checks that this list follows it.
//!
//! # Layers, in import order
//!
//! A module may import only the modules named on its line (plus std and outside crates);
//! `mcp`, `engine` and `ledger` never touch ratatui or crossterm.
//!
//! - `sanitize` — display-safe text: strips controls, escape sequences, bidi and zero-width
//!   characters, bounds lengths by width. Imports nothing of the crate.
//! - `paths` — where taskrail keeps its files (config, data directory, ledger, log, tokens):
//!   pure lookups. Imports nothing of the crate.
//! - `ids` — identities minted once (`ServerId`, `TaskId`, redacting themselves in logs).
//!   May import `sanitize`.
//! - `mcp` — the protocol library: JSON-RPC, both eras' types, `task_rules` (acceptance,
//!   outcome, finished), transports (HTTP JSON/SSE, stdio, bounded readers), `auth` (OAuth).
//!   May import `ids`, `sanitize`, `paths`.
//! - `ledger` — everything durable (a SQLite file; a team's PostgreSQL schema and roles):
//!   tasks, timeline, leases, outbox, sessions, the change feed other processes read. May
//!   import `ids`, `sanitize`, `paths`, `mcp`.
//! - `telemetry` — OpenTelemetry export over OTLP (only when the `OTEL_*` variables or the
//!   config's `[telemetry]` say where): a task is one span, each request a child span, W3C
//!   trace context in `_meta` (through `mcp::trace_hook`); never a task id. May import `ids`,
//!   `sanitize`, `mcp`.
//! - `engine` — one actor per server (push first, paced polling, intents), the router and the
//!   feed; emits `EngineEvent`s, takes `EngineCommand`s. May import `ids`, `sanitize`, `mcp`,
//!   `ledger`, `telemetry`.
//! - `state` — `State`, `Msg`, `Effect` and the pure reducer `update`. May import `ids`,
//!   `sanitize`, `mcp`, `engine` (its event and command types).
//! - `config` — the user's TOML, themes, keymap overrides, other hosts' config files (pure
//!   parse and patch). May import `ids`, `sanitize`, `paths`, `mcp`, `state`.
//! - `ui` — one file per view, pure functions of `&State`. May import `ids`, `sanitize`,
//!   `state`, `config`, and ratatui.
//! - `launch` — what taskrail starts outside itself on a keypress: the browser, OSC 52, a
//!   sampling command (no shell). Imports nothing of the crate.
//! - `app` — the event loop: one `select!`, frame pacing, effects, the terminal. May import
//!   `ids`, `sanitize`, `state`, `ui`, `config`, `engine`, `launch`, and the terminal crates.
//! - `prompt` — one input request answered on a terminal for `taskrail call`. May import
//!   `ids`, `sanitize`, `mcp`, `engine`, `state`, `ui`, `app`.
//! - `proxy` — the MCP server a host talks to, in front of one upstream; records and follows
//!   its tasks. May import `ids`, `sanitize`, `paths`, `mcp`, `engine`, `ledger` (never the
//!   dashboard).
//! - `demo` — the embedded demo server; shares no code with the client, so it stays an
//!   independent check. Imports nothing of the crate.
//! - `bench` — `taskrail bench …` end-to-end measurements. May import `ids`, `sanitize`,
//!   `paths`, `mcp`, `ledger`, `engine`, `state`, `config`, `ui`, `app`, `demo`.
//! - `cli` — subcommands and the composition root; exit codes. May import `ids`, `sanitize`,
//!   `paths`, `mcp`, `ledger`, `engine`, `state`, `config`, `ui`, `app`, `demo`, `bench`,
//!   `proxy`, `prompt`, `telemetry` (everything above but the launcher).
//!
//! # Data flow
//!
//! From the wire to a cell: network → `mcp` client (http | stdio) → `engine` actor (one per
//! server) → `EngineEvent` (owned, past tense) → `state::update(&mut State, Msg, now)` →
//! `ui::render(&State)`. Intent flows back: key → `Action` → `Effect` (data the reducer
//! returns) → `EngineCommand` → the actor → the server. The `ledger` sits beside the engine:
//! a task id is committed before anything reports it, and the ledger's outbox and change feed
//! carry answers, cancels and snapshots between processes.
//!
//! # Where a change goes
//!
//! - A new protocol field: its type in `mcp` (both eras if both carry it), the rule that
//!   decides on it in `mcp::task_rules`, then the `EngineEvent` that reports it.
//! - A new view: three files with one name — its data in `state::views`, its transitions in
//!   `state` (dispatched from `update`), its drawing in `ui` — and its keys in
//!   `assets/keymap.toml`.
//! - A new CLI subcommand: its arguments in `cli::args`, its body in its own `cli` file.
//! - A new ledger operation: in `ledger` (schema, read or write side), called through the
//!   ledger handle from `engine`, `cli` or `proxy`.
//! - A new proxy behaviour: in `proxy`; facts about a task stay the engine's to decide.

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
pub mod telemetry;
pub mod ui;
