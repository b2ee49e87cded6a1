//! The MCP client library: wire types for both protocol eras, transports (Streamable HTTP
//! with JSON or SSE replies, stdio), era detection and the task methods.
//!
//! Must not import ratatui or crossterm: the engine, the CLI and the dashboard share it.

pub mod auth;
pub mod backoff;
pub mod bounded_json;
pub mod capabilities;
pub mod client;
pub mod endpoint;
pub mod error;
pub mod foreground;
pub mod get_stream;
pub mod hosted;
pub mod http;
mod http_reply;
pub mod input;
pub mod jsonrpc;
pub mod legacy;
pub mod lines;
pub mod param_headers;
pub mod push;
pub mod sse;
pub mod stdio;
pub mod task_rules;
pub mod trace_hook;
pub mod transport;
pub mod types;
pub mod wire;

#[cfg(test)]
mod decode_tests;

pub use capabilities::InputSupport;
pub use client::{LegacySession, McpClient, Tapped};
pub use endpoint::{ConnectOptions, Endpoint};
pub use error::{INVALID_PARAMS, McpError};
pub use input::{InputKind, Needs};
pub use push::{ServerPush, Subscription, SubscriptionEvent};
pub use task_rules::{Outcome, Verdict, is_finished, judge, outcome, parse_time};
pub use types::*;
