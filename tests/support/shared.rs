//! Peers shared by every test of one test binary: each starts on first use and runs until
//! the binary exits (a static is never dropped, so its process group outlives the tests).
#![allow(dead_code)]

use std::sync::OnceLock;

use super::Peer;

/// The URL of this binary's FastMCP peer over HTTP ([`super::fastmcp_http`]).
pub fn fastmcp() -> &'static str {
    static PEER: OnceLock<Peer> = OnceLock::new();
    &PEER.get_or_init(super::fastmcp_http).url
}

/// The URL of this binary's tower-mcp peer ([`super::tower_http`]).
pub fn tower() -> &'static str {
    static PEER: OnceLock<Peer> = OnceLock::new();
    &PEER.get_or_init(super::tower_http).url
}

/// The URL of this binary's server-everything peer over HTTP ([`super::everything_http`]).
pub fn everything() -> &'static str {
    static PEER: OnceLock<Peer> = OnceLock::new();
    &PEER.get_or_init(super::everything_http).url
}
