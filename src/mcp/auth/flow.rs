//! The authorization request and its response: PKCE S256, a random `state`, the
//! `resource` parameter, the chosen scopes; then the redirect checked before its code is
//! used: `state` must match and `iss` is compared with the recorded issuer (RFC 9207 §2.4,
//! as the MCP table says). On an `iss` mismatch nothing of the response is shown.
//!
//! Owns: one authorization attempt's secrets (verifier, state). Must not do I/O.

use oauth2::{CsrfToken, PkceCodeChallenge, PkceCodeVerifier, Scope};

use super::AuthError;
use super::discovery::ServerMetadata;
use super::redirect::query_of;
use super::tokens::CodeClient;

/// One authorization in progress.
pub struct Authorization {
    /// The URL the user opens.
    pub url: String,
    state: CsrfToken,
    verifier: Option<PkceCodeVerifier>,
    issuer: String,
    iss_required: bool,
    pub scopes: Vec<String>,
}

/// Why a redirect was not accepted.
#[derive(Debug)]
pub enum Rejected {
    /// Not the response to this request (another `state`): keep waiting.
    NotOurs,
    /// The response is ours and final.
    Failed(AuthError),
}

impl Authorization {
    pub fn begin(
        client: &CodeClient,
        md: &ServerMetadata,
        resource: &str,
        scopes: &[String],
    ) -> Self {
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state) = client
            .authorize_url(CsrfToken::new_random)
            .add_scopes(scopes.iter().map(|s| Scope::new(s.clone())))
            .set_pkce_challenge(challenge)
            .add_extra_param("resource", resource.to_string())
            .url();
        Authorization {
            url: url.to_string(),
            state,
            verifier: Some(verifier),
            issuer: md.issuer.clone(),
            iss_required: md.authorization_response_iss_parameter_supported == Some(true),
            scopes: scopes.to_vec(),
        }
    }

    /// The PKCE verifier, once.
    pub fn take_verifier(&mut self) -> Option<PkceCodeVerifier> {
        self.verifier.take()
    }

    /// Check a redirect (a full URL or its query) and return its authorization code.
    pub fn accept(&self, redirect: &str) -> Result<String, Rejected> {
        let Some(query) = query_of(redirect) else {
            return Err(Rejected::NotOurs);
        };
        let params: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
        let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        if get("state") != Some(self.state.secret().as_str()) {
            return Err(Rejected::NotOurs);
        }
        match get("iss") {
            Some(iss) if iss != self.issuer => {
                return Err(Rejected::Failed(AuthError::Refused(format!(
                    "the sign-in response came from another authorization server than {} (RFC 9207 iss mismatch); it was discarded",
                    crate::sanitize::sanitize_line(&self.issuer, 120)
                ))));
            }
            None if self.iss_required => {
                return Err(Rejected::Failed(AuthError::Refused(
                    "the sign-in response lacks the iss parameter its server promised; it was discarded"
                        .into(),
                )));
            }
            _ => {}
        }
        if let Some(err) = get("error") {
            let mut text = crate::sanitize::sanitize_line(err, 80);
            if let Some(d) = get("error_description") {
                text.push_str(": ");
                text.push_str(&crate::sanitize::sanitize_line(d, 200));
            }
            return Err(Rejected::Failed(AuthError::Authorization(format!(
                "the authorization server declined: {text}"
            ))));
        }
        match get("code") {
            Some(code) if !code.is_empty() => Ok(code.to_string()),
            _ => Err(Rejected::Failed(AuthError::Authorization(
                "the sign-in response has no authorization code".into(),
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::auth::registration::{AuthMethod, Client, ClientSource};
    use crate::mcp::auth::tokens::code_client;

    fn md(iss_supported: Option<bool>) -> ServerMetadata {
        ServerMetadata {
            issuer: "https://as.example/tenant".into(),
            authorization_endpoint: Some("https://as.example/authorize".into()),
            token_endpoint: Some("https://as.example/token".into()),
            code_challenge_methods_supported: Some(vec!["S256".into()]),
            authorization_response_iss_parameter_supported: iss_supported,
            ..Default::default()
        }
    }

    fn begin(md: &ServerMetadata) -> Authorization {
        let client = Client {
            client_id: "cid".into(),
            client_secret: None,
            auth_method: AuthMethod::None,
            redirect_uris: vec![],
            source: ClientSource::Registered,
        };
        let c = code_client(md, &client, None, "http://127.0.0.1:5/callback").unwrap();
        Authorization::begin(&c, md, "https://mcp.example/mcp", &["a".into(), "b".into()])
    }

    fn param(url: &str, name: &str) -> Option<String> {
        url::Url::parse(url)
            .unwrap()
            .query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }

    #[test]
    fn the_request_carries_pkce_state_resource_and_scopes() {
        let a = begin(&md(None));
        assert_eq!(
            param(&a.url, "code_challenge_method").as_deref(),
            Some("S256")
        );
        assert!(param(&a.url, "code_challenge").is_some());
        assert_eq!(
            param(&a.url, "resource").as_deref(),
            Some("https://mcp.example/mcp")
        );
        assert_eq!(param(&a.url, "scope").as_deref(), Some("a b"));
        assert_eq!(param(&a.url, "client_id").as_deref(), Some("cid"));
        assert_eq!(
            param(&a.url, "redirect_uri").as_deref(),
            Some("http://127.0.0.1:5/callback")
        );
        assert!(param(&a.url, "state").is_some_and(|s| s.len() >= 16));
    }

    #[test]
    fn state_and_iss_are_checked_as_the_table_says() {
        let a = begin(&md(None));
        let state = param(&a.url, "state").unwrap();
        let ok = format!("http://127.0.0.1:5/callback?code=c1&state={state}");
        assert_eq!(a.accept(&ok).unwrap(), "c1");
        assert!(matches!(
            a.accept("?code=c1&state=other"),
            Err(Rejected::NotOurs)
        ));
        assert!(matches!(a.accept("?code=c1"), Err(Rejected::NotOurs)));
        // present iss must match exactly, even when not advertised
        let good_iss = format!("?code=c1&state={state}&iss=https%3A%2F%2Fas.example%2Ftenant");
        assert_eq!(a.accept(&good_iss).unwrap(), "c1");
        let slash = format!("?code=c1&state={state}&iss=https%3A%2F%2Fas.example%2Ftenant%2F");
        assert!(matches!(
            a.accept(&slash),
            Err(Rejected::Failed(AuthError::Refused(_)))
        ));
        // an error response with a wrong iss is not acted on (its text is not shown)
        let evil = format!(
            "?error=access_denied&error_description=EVIL&state={state}&iss=https%3A%2F%2Fevil"
        );
        match a.accept(&evil) {
            Err(Rejected::Failed(e)) => assert!(!e.to_string().contains("EVIL")),
            other => panic!("{other:?}"),
        }
        // advertised: absent iss is refused
        let strict = begin(&md(Some(true)));
        let state = param(&strict.url, "state").unwrap();
        assert!(matches!(
            strict.accept(&format!("?code=c&state={state}")),
            Err(Rejected::Failed(AuthError::Refused(_)))
        ));
        let denied =
            format!("?error=access_denied&state={state}&iss=https%3A%2F%2Fas.example%2Ftenant");
        assert!(
            strict
                .accept(&denied)
                .unwrap_err_text()
                .contains("access_denied")
        );
    }

    trait ErrText {
        fn unwrap_err_text(self) -> String;
    }
    impl ErrText for Result<String, Rejected> {
        fn unwrap_err_text(self) -> String {
            match self {
                Err(Rejected::Failed(e)) => e.to_string(),
                other => panic!("{other:?}"),
            }
        }
    }
}
