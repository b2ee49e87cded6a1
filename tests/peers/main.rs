//! The client core, the CLI and sign-in against third-party MCP servers nobody on this
//! project wrote (installed by `tests/interop/setup.sh` into `$TASKRAIL_PEERS_DIR`), and the
//! harness that starts them.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

#[path = "../support/mod.rs"]
mod support;

mod answers;
mod everything;
mod fastmcp;
mod harness;
mod input;
mod keyring;
mod oauth;
mod oauth_secrets;
mod tower;
mod wire_log;
