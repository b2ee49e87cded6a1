//! The engine: one actor per server that follows tasks push-first with a paced polling
//! fallback, answers input and cancels on command, and reports owned `EngineEvent`s.
//!
//! Must not import ratatui or crossterm.

pub mod api;

pub use api::*;
