//! The MCP client library: wire types for both protocol eras, transports (Streamable HTTP
//! with JSON or SSE replies, stdio), era detection and the task methods.
//!
//! Must not import ratatui or crossterm: the engine, the CLI and the dashboard share it.

pub mod error;
pub mod jsonrpc;
pub mod types;

pub use error::McpError;
pub use types::*;
