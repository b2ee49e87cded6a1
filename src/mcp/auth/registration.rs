//! Client identity, in the MCP order: a pre-registered client from the config, a Client
//! ID Metadata Document URL when the server supports them, else dynamic client
//! registration (RFC 7591; `application_type: "native"`, `refresh_token` among the grant
//! types). A registration belongs to the issuer that made it and is never used with another.
//!
//! Owns: `Client` and the registration request. Must not store anything (the authorizer does).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use url::Url;

use super::AuthError;
use super::discovery::{ServerMetadata, allowed_url};
use super::fetch::AuthHttp;
pub use super::settings::AuthMethod;
use super::settings::AuthSettings;

/// Where a client id came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientSource {
    Configured,
    MetadataDocument,
    Registered,
}

/// The client taskrail is at one authorization server.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct Client {
    pub client_id: String,
    /// Issued by registration (configured secrets are never stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    pub auth_method: AuthMethod,
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    pub source: ClientSource,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "***"))
            .field("auth_method", &self.auth_method)
            .field("source", &self.source)
            .finish()
    }
}

/// The method for a client holding a secret: the first of Basic and POST the server
/// lists (Basic when it lists neither).
pub fn secret_method(md: &ServerMetadata) -> AuthMethod {
    md.token_endpoint_auth_methods_supported
        .iter()
        .flatten()
        .find_map(|m| match m.as_str() {
            "client_secret_basic" => Some(AuthMethod::ClientSecretBasic),
            "client_secret_post" => Some(AuthMethod::ClientSecretPost),
            _ => None,
        })
        .unwrap_or(AuthMethod::ClientSecretBasic)
}

/// The configured client, if any (its secret stays in the settings).
pub fn configured(settings: &AuthSettings, md: &ServerMetadata) -> Option<Client> {
    let id = settings.client_id.clone()?;
    let auth_method = match (&settings.client_secret, settings.auth_method) {
        (None, _) => AuthMethod::None,
        (Some(_), Some(m)) => m,
        (Some(_), None) => secret_method(md),
    };
    Some(Client {
        client_id: id,
        client_secret: None,
        auth_method,
        redirect_uris: Vec::new(),
        source: ClientSource::Configured,
    })
}

/// The client to sign in with at `md`'s server. `stored`: the registration this issuer
/// gave earlier (reused when it covers `redirect_uri`).
pub async fn choose(
    http: &AuthHttp,
    server: &Url,
    settings: &AuthSettings,
    md: &ServerMetadata,
    stored: Option<&Client>,
    redirect_uri: &str,
    client_name: &str,
) -> Result<Client, AuthError> {
    if let Some(c) = configured(settings, md) {
        return Ok(c);
    }
    if let Some(url) = &settings.client_metadata_url
        && md.client_id_metadata_document_supported == Some(true)
    {
        return Ok(Client {
            client_id: url.clone(),
            client_secret: None,
            auth_method: AuthMethod::None,
            redirect_uris: vec![redirect_uri.to_string()],
            source: ClientSource::MetadataDocument,
        });
    }
    if let Some(c) = stored.filter(|c| {
        c.source == ClientSource::Registered && c.redirect_uris.iter().any(|r| r == redirect_uri)
    }) {
        return Ok(c.clone());
    }
    let Some(endpoint) = &md.registration_endpoint else {
        return Err(AuthError::Registration(
            "the authorization server offers no client registration: configure a client_id \
             for this server (see README, Signing in)"
                .into(),
        ));
    };
    register(http, server, md, endpoint, redirect_uri, client_name).await
}

/// Dynamic client registration (RFC 7591).
async fn register(
    http: &AuthHttp,
    server: &Url,
    md: &ServerMetadata,
    endpoint: &str,
    redirect_uri: &str,
    client_name: &str,
) -> Result<Client, AuthError> {
    let url = Url::parse(endpoint)
        .map_err(|e| AuthError::Registration(format!("registration endpoint: {e}")))?;
    allowed_url(server, &url)?;
    let requested = if md.supports_auth_method("none") {
        "none"
    } else if md.supports_auth_method("client_secret_basic") {
        "client_secret_basic"
    } else {
        "client_secret_post"
    };
    let body = json!({
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": requested,
        "application_type": "native",
    });
    let (status, answer) = http.post_json(&url, &body).await?;
    if !(200..300).contains(&status) {
        let why = answer
            .get("error_description")
            .or_else(|| answer.get("error"))
            .and_then(Value::as_str)
            .map(|s| crate::sanitize::sanitize_line(s, 200))
            .unwrap_or_default();
        return Err(AuthError::Registration(format!(
            "the authorization server refused to register taskrail (HTTP {status}){}{why}",
            if why.is_empty() { "" } else { ": " }
        )));
    }
    let client_id = answer
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| AuthError::Registration("the registration answer has no client_id".into()))?
        .to_string();
    let client_secret = answer
        .get("client_secret")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let auth_method = match answer
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
    {
        Some("client_secret_basic") => AuthMethod::ClientSecretBasic,
        Some("client_secret_post") => AuthMethod::ClientSecretPost,
        Some("none") => AuthMethod::None,
        _ if client_secret.is_some() => secret_method(md),
        _ => AuthMethod::None,
    };
    Ok(Client {
        client_id,
        client_secret,
        auth_method,
        redirect_uris: vec![redirect_uri.to_string()],
        source: ClientSource::Registered,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(methods: &[&str]) -> ServerMetadata {
        ServerMetadata {
            issuer: "https://as.example".into(),
            token_endpoint_auth_methods_supported: Some(
                methods.iter().map(|s| s.to_string()).collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn a_configured_client_comes_first_and_picks_a_method_the_server_takes() {
        let mut s = AuthSettings {
            client_id: Some("pre".into()),
            ..Default::default()
        };
        let c = configured(&s, &md(&["client_secret_basic"])).unwrap();
        assert_eq!(c.auth_method, AuthMethod::None);
        s.client_secret = Some(super::super::Secret::new("x"));
        let c = configured(&s, &md(&["client_secret_post"])).unwrap();
        assert_eq!(c.auth_method, AuthMethod::ClientSecretPost);
        let c = configured(&s, &md(&["client_secret_post", "client_secret_basic"])).unwrap();
        assert_eq!(
            c.auth_method,
            AuthMethod::ClientSecretPost,
            "the server's first"
        );
        s.auth_method = Some(AuthMethod::ClientSecretBasic);
        let c = configured(&s, &md(&["client_secret_post", "client_secret_basic"])).unwrap();
        assert_eq!(
            c.auth_method,
            AuthMethod::ClientSecretBasic,
            "as configured"
        );
        s.auth_method = None;
        assert_eq!(c.client_secret, None, "configured secrets are not copied");
        let c = configured(&s, &ServerMetadata::default()).unwrap();
        assert_eq!(c.auth_method, AuthMethod::ClientSecretBasic);
    }

    #[test]
    fn debug_hides_a_registered_secret() {
        let c = Client {
            client_id: "id".into(),
            client_secret: Some("s3cr3t".into()),
            auth_method: AuthMethod::ClientSecretBasic,
            redirect_uris: vec![],
            source: ClientSource::Registered,
        };
        assert!(!format!("{c:?}").contains("s3cr3t"));
    }
}
