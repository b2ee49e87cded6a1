//! Finding the authorization server: the protected-resource metadata (RFC 9728: the
//! challenge's `resource_metadata`, else the path-based then the root well-known URL), then
//! the authorization server's metadata (RFC 8414 and OpenID discovery, in the MCP order for
//! issuers with a path), validated: the resource is this server, the `issuer` is the one
//! asked for, PKCE S256 is offered, endpoints are HTTPS (or loopback). Servers of the
//! 2025-03-26 era (no resource metadata) get that era's fallback.
//!
//! Owns: metadata types and their validation. Must not hold tokens.

use serde::{Deserialize, Serialize};
use url::Url;

use super::AuthError;
use super::address::{Reach, permits};
use super::challenge::Challenge;
use super::fetch::{AuthHttp, Fetched};
use super::guard::{literal_reach, refusal};

/// The protected-resource metadata fields a client uses.
#[derive(Debug, Clone, Deserialize)]
pub struct ResourceMetadata {
    pub resource: String,
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    pub scopes_supported: Option<Vec<String>>,
}

/// The authorization server metadata fields a client uses (kept in the token store).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types_supported: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id_metadata_document_supported: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_response_iss_parameter_supported: Option<bool>,
}

impl ServerMetadata {
    pub fn supports_auth_method(&self, method: &str) -> bool {
        self.token_endpoint_auth_methods_supported
            .as_ref()
            .is_none_or(|m| m.iter().any(|x| x == method))
    }

    pub fn offers_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == scope))
    }
}

/// What discovery found for one server.
#[derive(Debug, Clone)]
pub struct Discovered {
    /// The `resource` parameter to send (RFC 8707).
    pub resource: String,
    pub metadata: ServerMetadata,
    /// `scopes_supported` of the resource metadata.
    pub resource_scopes: Option<Vec<String>>,
}

/// The canonical URI of an MCP server (RFC 8707 §2): lower-case scheme and host (as `url`
/// parses them), no fragment, no trailing slash on an empty path.
pub fn canonical_resource(server: &Url) -> String {
    let mut u = server.clone();
    u.set_fragment(None);
    let _ = u.set_username("");
    let _ = u.set_password(None);
    let s = u.to_string();
    if u.path() == "/" && u.query().is_none() {
        s.trim_end_matches('/').to_string()
    } else {
        s
    }
}

fn is_loopback_host(u: &Url) -> bool {
    literal_reach(u) == Some(Reach::Loopback)
}

/// Whether a URL a server named may be fetched or used: HTTPS, or plain HTTP on a
/// loopback host for a loopback server; no server may point at an address more local than
/// itself (`address::permits`). Only what the URL shows is checked here (IP literals,
/// `localhost`); host names are resolved and checked by `guard` before anything connects.
pub fn allowed_url(server: &Url, target: &Url) -> Result<(), AuthError> {
    let loopback_server = is_loopback_host(server);
    let ok_scheme = match target.scheme() {
        "https" => true,
        "http" => is_loopback_host(target) && loopback_server,
        _ => false,
    };
    if !ok_scheme {
        return Err(AuthError::Refused(format!(
            "{} is not an HTTPS URL",
            endpoint_text(target)
        )));
    }
    // A server named by a host name counts as public here (its name is resolved later).
    let server_reach = literal_reach(server).unwrap_or(Reach::Public);
    let why = match target.host() {
        Some(url::Host::Ipv4(ip)) => refusal(&ip.to_string(), ip.into(), server_reach),
        Some(url::Host::Ipv6(ip)) => refusal(&ip.to_string(), ip.into(), server_reach),
        Some(url::Host::Domain(d)) if literal_reach(target) == Some(Reach::Loopback) => {
            (!permits(server_reach, Reach::Loopback))
                .then(|| format!("{d} names this machine, and the MCP server is not on it"))
        }
        _ => None,
    };
    match why {
        Some(why) => Err(AuthError::Refused(format!(
            "{} points at a local address: {why}",
            endpoint_text(target)
        ))),
        None => Ok(()),
    }
}

/// Resolve the host of every endpoint in `md` and refuse one that leads somewhere more
/// local than the server (the authorization endpoint too, though the browser opens it).
async fn check_endpoints(http: &AuthHttp, md: &ServerMetadata) -> Result<(), AuthError> {
    for e in [
        &md.authorization_endpoint,
        &md.token_endpoint,
        &md.registration_endpoint,
    ]
    .into_iter()
    .flatten()
    {
        let u = Url::parse(e)
            .map_err(|err| AuthError::Discovery(format!("endpoint {e:?} is not a URL: {err}")))?;
        http.check(&u).await.map_err(|err| match err {
            AuthError::Refused(why) => AuthError::Refused(format!(
                "{} points at a local address: {why}",
                endpoint_text(&u)
            )),
            other => other,
        })?;
    }
    Ok(())
}

/// A URL to show: scheme, authority and path only.
pub fn endpoint_text(u: &Url) -> String {
    format!("{}://{}{}", u.scheme(), u.authority(), u.path())
}

/// Whether the metadata's `resource` names this server: same origin, and its path is the
/// server's path or a parent of it on a segment boundary.
pub fn resource_matches(server: &Url, resource: &str) -> bool {
    let Ok(r) = Url::parse(resource) else {
        return false;
    };
    if r.fragment().is_some()
        || r.scheme() != server.scheme()
        || r.host_str().map(str::to_ascii_lowercase)
            != server.host_str().map(str::to_ascii_lowercase)
        || r.port_or_known_default() != server.port_or_known_default()
    {
        return false;
    }
    let rp = r.path().trim_end_matches('/');
    let sp = server.path().trim_end_matches('/');
    rp.is_empty() || sp == rp || sp.starts_with(&format!("{rp}/"))
}

/// `server` spelled with the loopback host `resource` names, when that is the only
/// difference (`127.0.0.1` typed, `localhost` in the metadata, or the other way round):
/// the address under which a sign-in works.
pub fn loopback_alias(server: &Url, resource: &str) -> Option<String> {
    let r = Url::parse(resource).ok()?;
    let loopback = |u: &Url| literal_reach(u) == Some(Reach::Loopback);
    let (rh, sh) = (r.host_str()?, server.host_str()?);
    if !loopback(&r) || !loopback(server) || rh.eq_ignore_ascii_case(sh) {
        return None;
    }
    let mut alias = server.clone();
    alias.set_host(Some(rh)).ok()?;
    resource_matches(&alias, resource).then(|| alias.to_string())
}

/// For a loopback server, the spelling of its address that its own resource metadata
/// uses, when it differs from the one given (see [`loopback_alias`]). Best effort, a few
/// seconds at most: `None` when there is nothing to suggest.
pub async fn working_spelling(server: &Url) -> Option<String> {
    if literal_reach(server) != Some(Reach::Loopback) {
        return None;
    }
    let http = AuthHttp::new("taskrail", true, server).ok()?;
    let probe = async {
        for url in resource_metadata_urls(server) {
            if let Ok(Fetched::Json(v)) = http.get_json(&url).await {
                let resource = v.get("resource")?.as_str()?.to_string();
                return loopback_alias(server, &resource);
            }
        }
        None
    };
    tokio::time::timeout(std::time::Duration::from_secs(3), probe)
        .await
        .ok()
        .flatten()
}

/// The well-known URLs of the protected-resource metadata, in the order to try.
fn resource_metadata_urls(server: &Url) -> Vec<Url> {
    let mut out = Vec::new();
    let path = server.path().trim_end_matches('/');
    let mut base = server.clone();
    base.set_query(None);
    base.set_fragment(None);
    if !path.is_empty() {
        let mut u = base.clone();
        u.set_path(&format!("/.well-known/oauth-protected-resource{path}"));
        out.push(u);
    }
    let mut root = base;
    root.set_path("/.well-known/oauth-protected-resource");
    out.push(root);
    out
}

/// The authorization-server metadata URLs for `issuer`, in the MCP order.
fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let mut base = issuer.clone();
    base.set_query(None);
    base.set_fragment(None);
    let at = |p: String| {
        let mut u = base.clone();
        u.set_path(&p);
        u
    };
    if path.is_empty() {
        vec![
            at("/.well-known/oauth-authorization-server".into()),
            at("/.well-known/openid-configuration".into()),
        ]
    } else {
        vec![
            at(format!("/.well-known/oauth-authorization-server{path}")),
            at(format!("/.well-known/openid-configuration{path}")),
            at(format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

/// Fetch the protected-resource metadata; `None` when the server publishes none (a
/// 2025-03-26 server).
pub async fn resource_metadata(
    http: &AuthHttp,
    server: &Url,
    challenge: Option<&Challenge>,
) -> Result<Option<ResourceMetadata>, AuthError> {
    let explicit = challenge.and_then(|c| c.resource_metadata.as_deref());
    let candidates = match explicit {
        Some(s) => {
            let u = server.join(s).map_err(|e| {
                AuthError::Discovery(format!("resource_metadata is not a URL: {e}"))
            })?;
            allowed_url(server, &u)?;
            vec![u]
        }
        None => resource_metadata_urls(server),
    };
    for url in &candidates {
        match http.get_json(url).await? {
            Fetched::Json(v) => {
                let md: ResourceMetadata = serde_json::from_value(v).map_err(|e| {
                    AuthError::Discovery(format!(
                        "the resource metadata at {} is malformed: {e}",
                        endpoint_text(url)
                    ))
                })?;
                if let Some(alias) = loopback_alias(server, &md.resource) {
                    return Err(AuthError::Refused(format!(
                        "the resource metadata names {}: the server calls itself by that \
                         name, so sign in (and connect) with {alias}",
                        crate::sanitize::sanitize_line(&md.resource, 120)
                    )));
                }
                if !resource_matches(server, &md.resource) {
                    return Err(AuthError::Refused(format!(
                        "the resource metadata names another resource ({}), not this server",
                        crate::sanitize::sanitize_line(&md.resource, 120)
                    )));
                }
                if md.authorization_servers.is_empty() {
                    return Err(AuthError::Discovery(
                        "the resource metadata names no authorization server".into(),
                    ));
                }
                return Ok(Some(md));
            }
            Fetched::Missing(status) => {
                tracing::debug!("no resource metadata at {} ({status})", endpoint_text(url));
            }
        }
    }
    if explicit.is_some() {
        return Err(AuthError::Discovery(
            "the resource metadata the server pointed at is not there".into(),
        ));
    }
    Ok(None)
}

/// Fetch and validate the metadata of the authorization server `issuer`.
pub async fn server_metadata(
    http: &AuthHttp,
    server: &Url,
    issuer: &str,
) -> Result<ServerMetadata, AuthError> {
    let issuer_url = Url::parse(issuer).map_err(|e| {
        AuthError::Discovery(format!("authorization server {issuer:?} is not a URL: {e}"))
    })?;
    allowed_url(server, &issuer_url)?;
    for url in server_metadata_urls(&issuer_url) {
        match http.get_json(&url).await? {
            Fetched::Json(v) => {
                let md: ServerMetadata = serde_json::from_value(v).map_err(|e| {
                    AuthError::Discovery(format!(
                        "the authorization server metadata at {} is malformed: {e}",
                        endpoint_text(&url)
                    ))
                })?;
                if md.issuer != issuer {
                    return Err(AuthError::Refused(format!(
                        "the metadata at {} names issuer {}, not {}",
                        endpoint_text(&url),
                        crate::sanitize::sanitize_line(&md.issuer, 120),
                        crate::sanitize::sanitize_line(issuer, 120)
                    )));
                }
                validate(server, &md, false)?;
                check_endpoints(http, &md).await?;
                return Ok(md);
            }
            Fetched::Missing(status) => {
                tracing::debug!("no server metadata at {} ({status})", endpoint_text(&url));
            }
        }
    }
    Err(AuthError::Discovery(format!(
        "authorization server {} publishes no metadata",
        crate::sanitize::sanitize_line(issuer, 120)
    )))
}

/// A 2025-03-26 server: the authorization server lives at the server's origin; its
/// metadata at the root well-known URL, else the default endpoints.
pub async fn legacy_metadata(http: &AuthHttp, server: &Url) -> Result<ServerMetadata, AuthError> {
    let mut origin = server.clone();
    origin.set_path("");
    origin.set_query(None);
    origin.set_fragment(None);
    let base = origin.as_str().trim_end_matches('/').to_string();
    let mut url = origin.clone();
    url.set_path("/.well-known/oauth-authorization-server");
    let md = match http.get_json(&url).await? {
        Fetched::Json(v) => {
            let md: ServerMetadata = serde_json::from_value(v).map_err(|e| {
                AuthError::Discovery(format!(
                    "the authorization server metadata is malformed: {e}"
                ))
            })?;
            // That era had no issuer check; the document comes from the server's own origin.
            validate(server, &md, false)?;
            check_endpoints(http, &md).await?;
            md
        }
        Fetched::Missing(_) => ServerMetadata {
            issuer: base.clone(),
            authorization_endpoint: Some(format!("{base}/authorize")),
            token_endpoint: Some(format!("{base}/token")),
            registration_endpoint: Some(format!("{base}/register")),
            // That era required PKCE S256 of every server.
            code_challenge_methods_supported: Some(vec!["S256".into()]),
            ..Default::default()
        },
    };
    Ok(md)
}

/// Endpoints are HTTPS (or loopback for a loopback server); PKCE S256 is offered when
/// `pkce` (the authorization code grant) matters.
fn validate(server: &Url, md: &ServerMetadata, pkce: bool) -> Result<(), AuthError> {
    for e in [
        &md.authorization_endpoint,
        &md.token_endpoint,
        &md.registration_endpoint,
    ]
    .into_iter()
    .flatten()
    {
        let u = Url::parse(e)
            .map_err(|err| AuthError::Discovery(format!("endpoint {e:?} is not a URL: {err}")))?;
        allowed_url(server, &u)?;
    }
    if pkce {
        let methods = md
            .code_challenge_methods_supported
            .as_deref()
            .unwrap_or(&[]);
        if !methods.iter().any(|m| m == "S256") {
            return Err(AuthError::Refused(
                "the authorization server does not offer PKCE (S256)".into(),
            ));
        }
    }
    Ok(())
}

/// Everything discovery finds for `server`, after a 401 carrying `challenge`. `known`:
/// the issuer used last time, preferred when the resource metadata still lists it.
pub async fn discover(
    http: &AuthHttp,
    server: &Url,
    challenge: Option<&Challenge>,
    known: Option<&str>,
) -> Result<Discovered, AuthError> {
    match resource_metadata(http, server, challenge).await? {
        Some(prm) => {
            let issuer = known
                .filter(|k| prm.authorization_servers.iter().any(|a| a == k))
                .unwrap_or(&prm.authorization_servers[0])
                .to_string();
            let metadata = server_metadata(http, server, &issuer).await?;
            Ok(Discovered {
                resource: prm.resource.clone(),
                metadata,
                resource_scopes: prm.scopes_supported,
            })
        }
        None => Ok(Discovered {
            resource: canonical_resource(server),
            metadata: legacy_metadata(http, server).await?,
            resource_scopes: None,
        }),
    }
}

/// PKCE is required for the authorization code grant only; the client-credentials grant
/// is checked for its token endpoint alone.
pub fn require_pkce(server: &Url, md: &ServerMetadata) -> Result<(), AuthError> {
    validate(server, md, true)
}

#[cfg(test)]
mod alias_tests {
    use super::*;

    #[test]
    fn a_loopback_server_named_another_way_is_offered_its_own_spelling() {
        let typed = Url::parse("http://127.0.0.1:3000/mcp").unwrap();
        assert_eq!(
            loopback_alias(&typed, "http://localhost:3000/mcp").as_deref(),
            Some("http://localhost:3000/mcp")
        );
        let typed = Url::parse("http://localhost:3000/mcp").unwrap();
        assert_eq!(
            loopback_alias(&typed, "http://127.0.0.1:3000/").as_deref(),
            Some("http://127.0.0.1:3000/mcp")
        );
        for other in [
            "http://localhost:3001/mcp",
            "https://localhost:3000/mcp",
            "http://localhost:3000/other",
            "http://evil.example:3000/mcp",
            "http://localhost:3000/mcp",
        ] {
            assert_eq!(loopback_alias(&typed, other), None, "{other}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn canonical_uris_drop_fragments_and_a_lone_slash() {
        assert_eq!(
            canonical_resource(&u("HTTPS://MCP.Example.com/")),
            "https://mcp.example.com"
        );
        assert_eq!(
            canonical_resource(&u("https://mcp.example.com:8443/mcp#x")),
            "https://mcp.example.com:8443/mcp"
        );
        assert_eq!(canonical_resource(&u("https://a:b@h/mcp")), "https://h/mcp");
    }

    #[test]
    fn resource_metadata_urls_are_path_based_then_root() {
        let urls = resource_metadata_urls(&u("https://h.example/public/mcp?x=1"));
        let urls: Vec<String> = urls.into_iter().map(String::from).collect();
        assert_eq!(
            urls,
            [
                "https://h.example/.well-known/oauth-protected-resource/public/mcp",
                "https://h.example/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(resource_metadata_urls(&u("https://h.example/")).len(), 1);
    }

    #[test]
    fn server_metadata_order_follows_the_spec_for_issuers_with_a_path() {
        let with: Vec<String> = server_metadata_urls(&u("https://auth.example.com/tenant1"))
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(
            with,
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        let without: Vec<String> = server_metadata_urls(&u("https://auth.example.com/"))
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(
            without,
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn resources_match_this_server_or_a_parent_path_on_its_origin() {
        let s = u("http://localhost:3000/mcp");
        assert!(resource_matches(&s, "http://localhost:3000/mcp"));
        assert!(resource_matches(&s, "http://localhost:3000/mcp/"));
        assert!(resource_matches(&s, "http://localhost:3000"));
        assert!(resource_matches(&s, "http://LOCALHOST:3000/"));
        assert!(!resource_matches(&s, "http://localhost:3000/mc"));
        assert!(!resource_matches(&s, "http://localhost:3000/mcp2"));
        assert!(!resource_matches(&s, "https://evil.example.com/mcp"));
        assert!(!resource_matches(&s, "http://localhost:3001/mcp"));
        assert!(!resource_matches(&s, "not a url"));
    }

    #[test]
    fn urls_must_be_https_unless_everything_is_loopback() {
        let public = u("https://mcp.example.com/mcp");
        let local = u("http://127.0.0.1:9/mcp");
        assert!(allowed_url(&public, &u("https://auth.example.com")).is_ok());
        assert!(allowed_url(&public, &u("http://auth.example.com")).is_err());
        assert!(allowed_url(&public, &u("https://127.0.0.1/x")).is_err());
        assert!(allowed_url(&public, &u("https://10.0.0.1/x")).is_err());
        assert!(allowed_url(&public, &u("http://localhost:1/x")).is_err());
        assert!(allowed_url(&local, &u("http://localhost:1/x")).is_ok());
        assert!(allowed_url(&local, &u("http://example.com/x")).is_err());
        assert!(allowed_url(&local, &u("ftp://localhost/x")).is_err());
    }

    #[test]
    fn a_public_server_may_not_name_any_form_of_a_local_address() {
        let public = u("https://mcp.example.com/mcp");
        for (target, words) in [
            ("https://[::ffff:10.0.0.1]/x", "10.0.0.1"),
            ("https://[::ffff:127.0.0.1]/x", "loopback"),
            ("https://[::ffff:7f00:1]/x", "127.0.0.1"),
            ("https://[fe80::1]/x", "link-local"),
            ("https://[fd00::1]/x", "unique-local"),
            ("https://169.254.169.254/latest", "link-local"),
            ("https://0x7f000001/x", "loopback"),
            ("https://0.0.0.0/x", "this-host"),
            ("https://[::]/x", "unspecified"),
        ] {
            let Err(AuthError::Refused(text)) = allowed_url(&public, &u(target)) else {
                panic!("{target} was allowed")
            };
            assert!(text.contains(words), "{target}: {text}");
            assert!(text.contains("public address"), "{target}: {text}");
        }
        assert!(allowed_url(&public, &u("https://[2001:db8::1]/x")).is_ok());
        assert!(allowed_url(&public, &u("https://[::ffff:8.8.8.8]/x")).is_ok());
        // a server on a private address may use private addresses, not this machine
        let lan = u("https://10.0.0.5/mcp");
        assert!(allowed_url(&lan, &u("https://10.0.0.6/x")).is_ok());
        assert!(allowed_url(&lan, &u("https://[::ffff:10.0.0.6]/x")).is_ok());
        assert!(allowed_url(&lan, &u("https://127.0.0.1/x")).is_err());
        assert!(allowed_url(&lan, &u("https://localhost/x")).is_err());
        // a loopback server, however it is written, may use anything
        let mapped = u("http://[::ffff:127.0.0.1]:9/mcp");
        assert!(allowed_url(&mapped, &u("http://localhost:1/x")).is_ok());
    }

    #[tokio::test]
    async fn a_public_servers_endpoints_may_not_resolve_to_local_addresses() {
        use super::super::guard::tests::fake;
        let server = u("https://mcp.example.com/mcp");
        let http = AuthHttp::with_lookup(
            "t",
            false,
            &server,
            fake(&[
                ("mcp.example.com", "93.184.216.34"),
                ("sso.example.com", "127.0.0.1"),
            ]),
        )
        .unwrap();
        // the issuer's own metadata URL is refused before anything is sent
        let Err(AuthError::Refused(text)) =
            server_metadata(&http, &server, "https://sso.example.com").await
        else {
            panic!("an issuer resolving to 127.0.0.1 was fetched")
        };
        assert!(
            text.contains("sso.example.com resolves to 127.0.0.1"),
            "{text}"
        );
        assert!(text.contains("loopback"), "{text}");
        // and an endpoint named in metadata
        let md = ServerMetadata {
            issuer: "https://mcp.example.com".into(),
            token_endpoint: Some("https://sso.example.com/token".into()),
            ..Default::default()
        };
        let Err(AuthError::Refused(text)) = check_endpoints(&http, &md).await else {
            panic!("a token endpoint resolving to 127.0.0.1 was accepted")
        };
        assert!(
            text.starts_with("https://sso.example.com/token points at a local address"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn the_connection_uses_the_checked_addresses_not_a_second_answer() {
        // DNS rebinding: the first answer (the check) is public, the next one is local.
        // The client's own resolver is the guard, so the connection is refused too.
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = calls.clone();
        let rebinding: super::super::guard::Lookup = std::sync::Arc::new(move |host, port| {
            let n = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let ip: std::net::IpAddr = match (host.as_str(), n) {
                ("mcp.example.com", _) => "93.184.216.34".parse().unwrap(),
                (_, 0 | 1) => "93.184.216.35".parse().unwrap(),
                _ => "127.0.0.1".parse().unwrap(),
            };
            Box::pin(async move { Ok(vec![std::net::SocketAddr::new(ip, port)]) })
        });
        let server = u("https://mcp.example.com/mcp");
        let http = AuthHttp::with_lookup("t", true, &server, rebinding).unwrap();
        let Err(AuthError::Refused(text)) =
            http.get_json(&u("http://rebind.example.com:9/x")).await
        else {
            panic!("the second answer was connected to")
        };
        assert!(text.contains("127.0.0.1"), "{text}");
        assert!(calls.load(std::sync::atomic::Ordering::SeqCst) >= 3);
    }

    #[test]
    fn metadata_without_pkce_is_refused() {
        let s = u("http://localhost:1/mcp");
        let mut md = ServerMetadata {
            issuer: "http://localhost:2".into(),
            authorization_endpoint: Some("http://localhost:2/authorize".into()),
            token_endpoint: Some("http://localhost:2/token".into()),
            ..Default::default()
        };
        assert!(matches!(require_pkce(&s, &md), Err(AuthError::Refused(_))));
        md.code_challenge_methods_supported = Some(vec!["plain".into()]);
        assert!(require_pkce(&s, &md).is_err());
        md.code_challenge_methods_supported = Some(vec!["plain".into(), "S256".into()]);
        assert!(require_pkce(&s, &md).is_ok());
        md.token_endpoint = Some("http://example.com/token".into());
        assert!(require_pkce(&s, &md).is_err());
    }
}
