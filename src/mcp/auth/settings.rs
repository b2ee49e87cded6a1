//! Per-server sign-in settings, already resolved from the config (`[server.auth]`) or the
//! conformance context: a pre-registered client, a Client ID Metadata Document URL, a
//! fixed redirect port, and the client-credentials mode for unattended runs.
//!
//! Owns: `AuthSettings`, `AuthMethod` and `Secret`. Secrets never appear in `Debug` output.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMethod {
    /// A public client: `client_id` in the body, no secret.
    None,
    ClientSecretBasic,
    ClientSecretPost,
}

/// A secret string (client secret, private key): `Debug` and `Display` show `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Secret {
        Secret(s.into())
    }

    /// The secret itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// How an unattended client proves who it is (the `oauth-client-credentials` extension).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientAssertion {
    /// `client_secret_basic` or `client_secret_post`, whichever the server supports.
    Secret(Secret),
    /// `private_key_jwt` (RFC 7523 §2.2): a JWT signed with this PEM private key.
    Jwt {
        private_key_pem: Secret,
        algorithm: String,
    },
}

/// Which OAuth grant obtains the tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Grant {
    /// A person signs in in a browser (authorization code + PKCE).
    #[default]
    AuthorizationCode,
    /// Machine to machine, no person (client credentials).
    ClientCredentials(ClientAssertion),
}

/// Everything about one server's sign-in that is not discovered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthSettings {
    /// A pre-registered client (used before a metadata document or registration).
    pub client_id: Option<String>,
    pub client_secret: Option<Secret>,
    /// How the pre-registered client authenticates (default: the server's first choice).
    pub auth_method: Option<AuthMethod>,
    /// A fixed loopback port for servers that need an exact redirect URI.
    pub redirect_port: Option<u16>,
    /// An HTTPS URL of our Client ID Metadata Document (used when the server supports it).
    pub client_metadata_url: Option<String>,
    pub grant: Grant,
}

impl AuthSettings {
    pub fn is_client_credentials(&self) -> bool {
        matches!(self.grant, Grant::ClientCredentials(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_show_in_debug_output() {
        let s = AuthSettings {
            client_id: Some("cid".into()),
            client_secret: Some(Secret::new("hunter2")),
            grant: Grant::ClientCredentials(ClientAssertion::Jwt {
                private_key_pem: Secret::new("-----BEGIN PRIVATE KEY-----abc"),
                algorithm: "ES256".into(),
            }),
            ..Default::default()
        };
        let text = format!("{s:?}");
        assert!(text.contains("cid"));
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!text.contains("BEGIN"), "{text}");
    }
}
