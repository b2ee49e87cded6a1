//! Tokens and the token endpoint: `TokenSet` (what is stored), the `oauth2` client for one
//! server, and the three token requests taskrail makes: the authorization code exchange
//! (with the PKCE verifier), refresh, and client credentials. Every request carries the
//! `resource` parameter (RFC 8707).
//!
//! Owns: token requests and expiry. Must not log a token; `Debug` hides them.

use oauth2::basic::{BasicClient, BasicErrorResponse, BasicTokenResponse};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, EndpointNotSet, EndpointSet,
    PkceCodeVerifier, RedirectUrl, RefreshToken, RequestTokenError, Scope, TokenResponse, TokenUrl,
};
use serde::{Deserialize, Serialize};

use super::AuthError;
use super::discovery::ServerMetadata;
use super::fetch::{AuthHttp, HttpFailure};
use super::registration::{AuthMethod, Client};

/// Refresh this long before the access token expires.
pub const REFRESH_SKEW_SECS: i64 = 60;

/// The tokens of one sign-in.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenSet {
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Unix seconds; none when the server did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// The scopes granted (or requested, when the server did not say).
    #[serde(default)]
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSet")
            .field("access_token", &"***")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "***"))
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .finish()
    }
}

impl TokenSet {
    /// Expired, or expiring within the refresh skew.
    pub fn needs_refresh(&self, now: i64) -> bool {
        self.expires_at
            .is_some_and(|at| at - REFRESH_SKEW_SECS <= now)
    }

    fn from_response(
        r: &BasicTokenResponse,
        requested: &[String],
        old_refresh: Option<&str>,
        now: i64,
    ) -> TokenSet {
        TokenSet {
            access_token: r.access_token().secret().clone(),
            // A refresh that returns no new refresh token keeps the old one (RFC 6749 §6).
            refresh_token: r
                .refresh_token()
                .map(|t| t.secret().clone())
                .or_else(|| old_refresh.map(str::to_string)),
            expires_at: r
                .expires_in()
                .map(|d| now + i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 4)),
            scopes: r
                .scopes()
                .map(|s| {
                    s.iter()
                        .map(|x| x.to_string())
                        .filter(|x| !x.is_empty())
                        .collect()
                })
                .unwrap_or_else(|| requested.to_vec()),
        }
    }
}

pub fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

/// An `oauth2` client with the token endpoint set.
pub type TokenClient =
    BasicClient<EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// The same with the authorization endpoint set too.
pub type CodeClient =
    BasicClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// The `oauth2` client for `client` at `md`'s token endpoint. `secret`: the configured
/// secret of a configured client (registered clients carry their own).
pub fn token_client(
    md: &ServerMetadata,
    client: &Client,
    secret: Option<&str>,
) -> Result<TokenClient, AuthError> {
    let token = md.token_endpoint.as_deref().ok_or_else(|| {
        AuthError::Discovery("the authorization server has no token endpoint".into())
    })?;
    let token = TokenUrl::new(token.to_string())
        .map_err(|e| AuthError::Discovery(format!("token endpoint: {e}")))?;
    let mut c = BasicClient::new(ClientId::new(client.client_id.clone())).set_token_uri(token);
    let secret = client.client_secret.as_deref().or(secret);
    if let Some(s) = secret.filter(|_| client.auth_method != AuthMethod::None) {
        c = c.set_client_secret(ClientSecret::new(s.to_string()));
    }
    Ok(c.set_auth_type(match client.auth_method {
        AuthMethod::ClientSecretBasic => AuthType::BasicAuth,
        AuthMethod::ClientSecretPost | AuthMethod::None => AuthType::RequestBody,
    }))
}

/// [`token_client`] with the authorization endpoint and the redirect URI.
pub fn code_client(
    md: &ServerMetadata,
    client: &Client,
    secret: Option<&str>,
    redirect_uri: &str,
) -> Result<CodeClient, AuthError> {
    let auth = md.authorization_endpoint.as_deref().ok_or_else(|| {
        AuthError::Discovery("the authorization server has no authorization endpoint".into())
    })?;
    let auth = AuthUrl::new(auth.to_string())
        .map_err(|e| AuthError::Discovery(format!("authorization endpoint: {e}")))?;
    let redirect = RedirectUrl::new(redirect_uri.to_string())
        .map_err(|e| AuthError::Authorization(format!("redirect URI: {e}")))?;
    Ok(token_client(md, client, secret)?
        .set_auth_uri(auth)
        .set_redirect_uri(redirect))
}

type TokenError = RequestTokenError<HttpFailure, BasicErrorResponse>;

/// With HTTP Basic client authentication, the `client_id` is also put in the body: RFC
/// 6749 allows it, and some servers (the Python MCP SDK's) look for it there only.
fn basic_client_id(auth: &AuthType, id: &ClientId) -> Option<(&'static str, String)> {
    matches!(auth, AuthType::BasicAuth).then(|| ("client_id", id.to_string()))
}

/// A token endpoint failure in words (server text sanitized, never a token).
fn token_error(what: &str, e: TokenError) -> AuthError {
    let detail = match &e {
        RequestTokenError::ServerResponse(r) => {
            let mut s = r.error().to_string();
            if let Some(d) = r.error_description() {
                s.push_str(": ");
                s.push_str(d);
            }
            crate::sanitize::sanitize_line(&s, 200)
        }
        RequestTokenError::Request(f) => f.to_string(),
        RequestTokenError::Parse(_, _) => {
            "the token endpoint's answer is not a token response".into()
        }
        RequestTokenError::Other(o) => crate::sanitize::sanitize_line(o, 200),
    };
    let rejected = matches!(e, RequestTokenError::ServerResponse(_));
    let msg = format!("{what}: {detail}");
    if rejected {
        AuthError::Rejected(msg)
    } else {
        AuthError::Network(msg)
    }
}

/// Exchange an authorization code (with its PKCE verifier) for tokens.
pub async fn exchange_code(
    http: &AuthHttp,
    client: &CodeClient,
    code: String,
    verifier: PkceCodeVerifier,
    resource: &str,
    requested: &[String],
) -> Result<TokenSet, AuthError> {
    let mut req = client
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(verifier)
        .add_extra_param("resource", resource.to_string());
    if let Some((k, v)) = basic_client_id(client.auth_type(), client.client_id()) {
        req = req.add_extra_param(k, v);
    }
    let r = req
        .request_async(http)
        .await
        .map_err(|e| token_error("the code exchange failed", e))?;
    Ok(TokenSet::from_response(&r, requested, None, now_secs()))
}

/// Refresh `tokens` (the refresh token is required).
pub async fn refresh(
    http: &AuthHttp,
    client: &TokenClient,
    tokens: &TokenSet,
    resource: &str,
) -> Result<TokenSet, AuthError> {
    let rt = tokens
        .refresh_token
        .clone()
        .ok_or_else(|| AuthError::SignInRequired("the sign-in has no refresh token".into()))?;
    let refresh = RefreshToken::new(rt.clone());
    let mut req = client
        .exchange_refresh_token(&refresh)
        .add_extra_param("resource", resource.to_string());
    if let Some((k, v)) = basic_client_id(client.auth_type(), client.client_id()) {
        req = req.add_extra_param(k, v);
    }
    let r = req
        .request_async(http)
        .await
        .map_err(|e| token_error("refreshing the token failed", e))?;
    Ok(TokenSet::from_response(
        &r,
        &tokens.scopes,
        Some(&rt),
        now_secs(),
    ))
}

/// The client-credentials grant. `assertion`: a signed JWT (`private_key_jwt`), else the
/// client authenticates with its secret as `client` says.
pub async fn client_credentials(
    http: &AuthHttp,
    client: &TokenClient,
    assertion: Option<String>,
    resource: &str,
    scopes: &[String],
) -> Result<TokenSet, AuthError> {
    let mut req = client
        .exchange_client_credentials()
        .add_scopes(scopes.iter().map(|s| Scope::new(s.clone())))
        .add_extra_param("resource", resource.to_string());
    if let Some((k, v)) = basic_client_id(client.auth_type(), client.client_id()) {
        req = req.add_extra_param(k, v);
    }
    if let Some(jwt) = assertion {
        req = req
            .add_extra_param(
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            )
            .add_extra_param("client_assertion", jwt);
    }
    let r = req
        .request_async(http)
        .await
        .map_err(|e| token_error("the client-credentials request failed", e))?;
    Ok(TokenSet::from_response(&r, scopes, None, now_secs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_judged_with_a_skew_and_debug_hides_tokens() {
        let t = TokenSet {
            access_token: "at-secret".into(),
            refresh_token: Some("rt-secret".into()),
            expires_at: Some(1000),
            scopes: vec!["a".into()],
        };
        assert!(!t.needs_refresh(1000 - REFRESH_SKEW_SECS - 1));
        assert!(t.needs_refresh(1000 - REFRESH_SKEW_SECS));
        assert!(t.needs_refresh(2000));
        let never = TokenSet {
            expires_at: None,
            ..t.clone()
        };
        assert!(!never.needs_refresh(i64::MAX / 2));
        let d = format!("{t:?}");
        assert!(!d.contains("secret"), "{d}");
    }
}
