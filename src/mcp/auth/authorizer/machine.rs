//! The client-credentials grant (the extension for unattended runs): a token for a
//! configured client, with a secret or a signed JWT assertion, after discovery.
//!
//! Must not start an interactive flow: a machine has no person to ask.

use super::Authorizer;
use crate::mcp::auth::challenge::Challenge;
use crate::mcp::auth::discovery::{self, ServerMetadata};
use crate::mcp::auth::registration::{self, AuthMethod, Client, ClientSource};
use crate::mcp::auth::settings::{ClientAssertion, Grant};
use crate::mcp::auth::store::IssuerEntry;
use crate::mcp::auth::tokens::{self, TokenSet, now_secs};
use crate::mcp::auth::{AuthError, assertion};

impl Authorizer {
    /// The client-credentials grant, after discovery.
    pub(super) async fn machine_sign_in(
        &self,
        challenge: Option<&Challenge>,
        extra: &[String],
    ) -> Result<(), AuthError> {
        let _one_at_a_time = self.flow.lock().await;
        let known = self.inner.lock().await.entry.current.clone();
        let d =
            discovery::discover(self.http()?, &self.server, challenge, known.as_deref()).await?;
        let scopes = Self::select_scopes(challenge, &d, extra, false);
        let tokens = self
            .machine_token(&d.metadata, &d.resource, &scopes)
            .await?;
        tracing::info!(server = %self.key, "client-credentials token obtained");
        let entry = IssuerEntry {
            resource: d.resource,
            client: self.machine_client(&d.metadata)?,
            metadata: d.metadata.clone(),
            tokens: Some(tokens),
        };
        let mut inner = self.inner.lock().await;
        self.save(&mut inner, d.metadata.issuer, entry).await
    }

    pub(super) fn machine_client(&self, md: &ServerMetadata) -> Result<Client, AuthError> {
        let Grant::ClientCredentials(how) = &self.settings.grant else {
            return Err(AuthError::Settings(
                "not a client-credentials server".into(),
            ));
        };
        let client_id = self.settings.client_id.clone().ok_or_else(|| {
            AuthError::Settings("the client-credentials grant needs a client_id".into())
        })?;
        let auth_method = match how {
            ClientAssertion::Jwt { .. } => AuthMethod::None,
            ClientAssertion::Secret(_) => self
                .settings
                .auth_method
                .unwrap_or_else(|| registration::secret_method(md)),
        };
        Ok(Client {
            client_id,
            client_secret: None,
            auth_method,
            redirect_uris: Vec::new(),
            source: ClientSource::Configured,
        })
    }

    pub(super) async fn machine_token(
        &self,
        md: &ServerMetadata,
        resource: &str,
        scopes: &[String],
    ) -> Result<TokenSet, AuthError> {
        let Grant::ClientCredentials(how) = &self.settings.grant else {
            return Err(AuthError::Settings(
                "not a client-credentials server".into(),
            ));
        };
        let client = self.machine_client(md)?;
        let (secret, jwt) = match how {
            ClientAssertion::Secret(s) => (Some(s.expose()), None),
            ClientAssertion::Jwt {
                private_key_pem,
                algorithm,
            } => (
                None,
                Some(assertion::sign(
                    &client.client_id,
                    &md.issuer,
                    private_key_pem.expose(),
                    algorithm,
                    now_secs(),
                )?),
            ),
        };
        let tc = tokens::token_client(md, &client, secret)?;
        tokens::client_credentials(self.http()?, &tc, jwt, resource, scopes).await
    }
}
