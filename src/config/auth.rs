//! A server's `[server.auth]` table: a pre-registered client (secret from `${ENV}`), a
//! fixed redirect port, a Client ID Metadata Document URL, and the client-credentials
//! grant (secret, or a signed JWT from a private key) for unattended runs. Errors name the
//! line; secrets never appear in one.

use serde::Deserialize;
use std::path::Path;
use toml::Spanned;

use super::expand_env;
use super::theme::line_of;
use crate::mcp::auth::registration::AuthMethod;
use crate::mcp::auth::{AuthSettings, ClientAssertion, Grant, Secret};

/// Signing algorithms `private_key_jwt` accepts.
const ALGORITHMS: &[&str] = &[
    "ES256", "ES384", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA",
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAuth {
    client_id: Option<Spanned<String>>,
    client_secret: Option<Spanned<String>>,
    token_endpoint_auth_method: Option<Spanned<String>>,
    redirect_port: Option<Spanned<i64>>,
    client_metadata_url: Option<Spanned<String>>,
    grant: Option<Spanned<String>>,
    private_key: Option<Spanned<String>>,
    private_key_file: Option<Spanned<String>>,
    signing_algorithm: Option<Spanned<String>>,
}

fn at<T>(text: &str, s: &Spanned<T>) -> usize {
    line_of(text, s.span().start)
}

/// A secret setting: it must come from the environment, so config files hold no secrets.
fn secret(
    text: &str,
    s: &Spanned<String>,
    what: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Secret, String> {
    let line = at(text, s);
    let raw = s.get_ref().trim();
    if !(raw.starts_with("${") && raw.ends_with('}')) {
        return Err(format!(
            "line {line}: {what} must come from the environment: {what} = \"${{VAR}}\""
        ));
    }
    let v = expand_env(raw, env).map_err(|e| format!("line {line}: {what}: {e}"))?;
    if v.is_empty() {
        return Err(format!(
            "line {line}: {what}: the environment variable is empty"
        ));
    }
    Ok(Secret::new(v))
}

pub(super) fn settings(
    text: &str,
    a: &RawAuth,
    env: &dyn Fn(&str) -> Option<String>,
    base: &Path,
) -> Result<AuthSettings, String> {
    let mut out = AuthSettings::default();
    if let Some(id) = &a.client_id {
        let v = id.get_ref().trim();
        if v.is_empty() {
            return Err(format!("line {}: empty client_id", at(text, id)));
        }
        out.client_id = Some(v.to_string());
    }
    let client_secret = a
        .client_secret
        .as_ref()
        .map(|s| secret(text, s, "client_secret", env))
        .transpose()?;
    if let Some(m) = &a.token_endpoint_auth_method {
        out.auth_method = Some(match m.get_ref().as_str() {
            "client_secret_basic" => AuthMethod::ClientSecretBasic,
            "client_secret_post" => AuthMethod::ClientSecretPost,
            other => {
                return Err(format!(
                    "line {}: token_endpoint_auth_method = {other:?}: use \"client_secret_basic\" \
                     or \"client_secret_post\"",
                    at(text, m)
                ));
            }
        });
        if client_secret.is_none() {
            return Err(format!(
                "line {}: token_endpoint_auth_method needs a client_secret",
                at(text, m)
            ));
        }
    }
    if let Some(p) = &a.redirect_port {
        let port = *p.get_ref();
        if !(1..=65535).contains(&port) {
            return Err(format!(
                "line {}: redirect_port must be between 1 and 65535",
                at(text, p)
            ));
        }
        out.redirect_port = Some(port as u16);
    }
    if let Some(u) = &a.client_metadata_url {
        let v = u.get_ref().trim();
        let ok = url::Url::parse(v).is_ok_and(|p| p.scheme() == "https" && p.path() != "/");
        if !ok {
            return Err(format!(
                "line {}: client_metadata_url must be an https:// URL with a path",
                at(text, u)
            ));
        }
        out.client_metadata_url = Some(v.to_string());
    }
    let grant = a
        .grant
        .as_ref()
        .map(|g| (g.get_ref().as_str(), at(text, g)));
    match grant {
        None | Some(("authorization_code", _)) => {
            if let Some(k) = a
                .private_key
                .as_ref()
                .map(|k| at(text, k))
                .or(a.private_key_file.as_ref().map(|k| at(text, k)))
            {
                return Err(format!(
                    "line {k}: a private key is for grant = \"client_credentials\""
                ));
            }
            out.client_secret = client_secret;
            if out.client_secret.is_some() && out.client_id.is_none() {
                let line = a.client_secret.as_ref().map(|s| at(text, s)).unwrap_or(0);
                return Err(format!("line {line}: client_secret needs a client_id"));
            }
        }
        Some(("client_credentials", line)) => {
            if out.client_id.is_none() {
                return Err(format!(
                    "line {line}: grant = \"client_credentials\" needs a client_id"
                ));
            }
            let key = match (&a.private_key, &a.private_key_file) {
                (Some(_), Some(f)) => {
                    return Err(format!(
                        "line {}: give private_key or private_key_file, not both",
                        at(text, f)
                    ));
                }
                (Some(k), None) => Some(secret(text, k, "private_key", env)?),
                (None, Some(f)) => {
                    let path = base.join(f.get_ref().trim());
                    let pem = std::fs::read_to_string(&path).map_err(|e| {
                        format!(
                            "line {}: private_key_file {}: {e}",
                            at(text, f),
                            path.display()
                        )
                    })?;
                    Some(Secret::new(pem))
                }
                (None, None) => None,
            };
            let assertion = match (key, client_secret) {
                (Some(_), Some(_)) => {
                    return Err(format!(
                        "line {line}: give client_secret or a private key, not both"
                    ));
                }
                (Some(pem), None) => {
                    let alg = match &a.signing_algorithm {
                        Some(s) if ALGORITHMS.contains(&s.get_ref().as_str()) => {
                            s.get_ref().clone()
                        }
                        Some(s) => {
                            return Err(format!(
                                "line {}: signing_algorithm {:?}: use one of {}",
                                at(text, s),
                                s.get_ref(),
                                ALGORITHMS.join(", ")
                            ));
                        }
                        None => "ES256".to_string(),
                    };
                    ClientAssertion::Jwt {
                        private_key_pem: pem,
                        algorithm: alg,
                    }
                }
                (None, Some(s)) => ClientAssertion::Secret(s),
                (None, None) => {
                    return Err(format!(
                        "line {line}: grant = \"client_credentials\" needs client_secret or a private key"
                    ));
                }
            };
            out.grant = Grant::ClientCredentials(assertion);
        }
        Some((other, line)) => {
            return Err(format!(
                "line {line}: grant = {other:?}: use \"authorization_code\" or \"client_credentials\""
            ));
        }
    }
    Ok(out)
}
