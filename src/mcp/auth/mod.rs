//! Signing in to remote MCP servers, as the MCP authorization spec (2025-11-25 with the
//! 2026-07-28 changes) asks of an OAuth 2.1 client: discovery, client registration, the
//! authorization code flow with PKCE and a loopback redirect, token refresh, the token
//! store, and the client-credentials extension for unattended runs. The HTTP transport
//! asks an `Authorizer` for the `Authorization` header and reports 401/403 to it.
//!
//! Must not import ratatui, crossterm, `state` or `ui`: front ends drive sign-in through
//! the `Interaction` trait.

pub mod address;
pub mod assertion;
mod authorizer;
pub mod browser;
pub mod challenge;
pub mod discovery;
pub mod fetch;
pub mod flow;
pub mod guard;
pub mod redirect;
pub mod registration;
pub mod settings;
pub mod store;
pub mod tokens;

pub use authorizer::{Authorizer, SIGN_IN_TIMEOUT, SignInStatus};
pub use browser::{Announcement, DirectFetch, Interaction, Prompt, Prompter};
pub use challenge::Challenge;
pub use settings::{AuthSettings, ClientAssertion, Grant, Secret};
pub use store::{StoreChoice, TokenStore};

/// What went wrong while signing in. Texts are safe to show: server text in them is
/// sanitized, and no token or secret is ever part of one.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AuthError {
    /// Nobody is signed in (or the sign-in lapsed): the user has to sign in.
    #[error("sign in required: {0}")]
    SignInRequired(String),
    /// The authorization server or the metadata could not be reached (transient).
    #[error("{0}")]
    Network(String),
    #[error("discovery: {0}")]
    Discovery(String),
    /// A security check failed (wrong resource, wrong issuer, no PKCE, not HTTPS, …).
    #[error("refused: {0}")]
    Refused(String),
    #[error("registration: {0}")]
    Registration(String),
    /// The authorization step failed (declined, timed out, bad response).
    #[error("{0}")]
    Authorization(String),
    /// The token endpoint said no.
    #[error("{0}")]
    Rejected(String),
    #[error("token store: {0}")]
    Store(String),
    /// The sign-in settings are unusable (a bad key, a missing client id).
    #[error("{0}")]
    Settings(String),
}

impl From<AuthError> for super::McpError {
    fn from(e: AuthError) -> Self {
        match e {
            AuthError::SignInRequired(why) => super::McpError::SignInRequired(why),
            AuthError::Network(m) => super::McpError::Transport(m),
            other => super::McpError::Auth(other.to_string()),
        }
    }
}
