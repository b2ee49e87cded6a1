//! HTTP for sign-in: metadata GETs, registration POSTs, and the `oauth2` crate's token
//! requests, all on one reqwest client (the transport's TLS stack) that never follows
//! redirects, reads bounded bodies, and reaches only the addresses `guard` allows (its DNS
//! resolver is the guard's, and every request's host is checked before it is sent).
//!
//! Owns: `AuthHttp` and the `oauth2` HTTP-client adapter. Must not log bodies (they hold
//! tokens and secrets).

use futures::StreamExt;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

use super::AuthError;
use super::guard::{Guard, GuardedResolver, Lookup, Refusal, system_lookup};

/// Largest metadata, registration or token response read.
const MAX_BODY: usize = 256 * 1024;

/// The outcome of one metadata GET.
#[derive(Debug)]
pub enum Fetched {
    Json(Value),
    /// 4xx: not here (try the next well-known URL).
    Missing(u16),
}

/// An HTTP client for authorization servers and metadata.
#[derive(Clone)]
pub struct AuthHttp {
    client: reqwest::Client,
    guard: Arc<Guard>,
}

impl AuthHttp {
    /// The sign-in client of the MCP server `server` (whose reach decides which addresses
    /// its sign-in may use).
    pub fn new(
        user_agent: &str,
        loopback_only: bool,
        server: &url::Url,
    ) -> Result<AuthHttp, AuthError> {
        AuthHttp::with_lookup(user_agent, loopback_only, server, system_lookup())
    }

    /// `new` with another resolver (tests: names that resolve where a test needs).
    pub(crate) fn with_lookup(
        user_agent: &str,
        loopback_only: bool,
        server: &url::Url,
        lookup: Lookup,
    ) -> Result<AuthHttp, AuthError> {
        super::super::http::install_crypto_provider();
        let guard = Arc::new(Guard::new(server, lookup));
        let mut b = reqwest::Client::builder()
            .dns_resolver(Arc::new(GuardedResolver(guard.clone())))
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .user_agent(user_agent);
        if loopback_only {
            b = b.no_proxy();
        }
        let client = b.build().map_err(|e| AuthError::Network(e.to_string()))?;
        Ok(AuthHttp { client, guard })
    }

    /// Refuse a URL whose host resolves somewhere the server may not send us.
    pub async fn check(&self, url: &url::Url) -> Result<(), AuthError> {
        self.guard.check(url).await
    }

    /// GET a JSON document. 4xx is `Missing`; 5xx, network and parse failures are errors.
    pub async fn get_json(&self, url: &url::Url) -> Result<Fetched, AuthError> {
        self.check(url).await?;
        let resp = self
            .client
            .get(url.clone())
            .header("Accept", "application/json")
            .header("MCP-Protocol-Version", super::super::types::LEGACY_VERSION)
            .send()
            .await
            .map_err(|e| failure(&e))?;
        let status = resp.status();
        if status.is_client_error() || status.is_redirection() {
            return Ok(Fetched::Missing(status.as_u16()));
        }
        if !status.is_success() {
            return Err(AuthError::Network(format!("{url} answered HTTP {status}")));
        }
        let body = read_bounded(resp)
            .await
            .map_err(|e| AuthError::Network(describe(&e)))?;
        serde_json::from_slice(&body)
            .map(Fetched::Json)
            .map_err(|e| AuthError::Discovery(format!("{url} is not JSON: {e}")))
    }

    /// POST a JSON body; the status and the JSON answer (`Null` when not JSON).
    pub async fn post_json(&self, url: &url::Url, body: &Value) -> Result<(u16, Value), AuthError> {
        self.check(url).await?;
        let resp = self
            .client
            .post(url.clone())
            .header("Accept", "application/json")
            .json(body)
            .send()
            .await
            .map_err(|e| failure(&e))?;
        let status = resp.status().as_u16();
        let body = read_bounded(resp)
            .await
            .map_err(|e| AuthError::Network(describe(&e)))?;
        Ok((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
    }

    /// GET without following redirects: the `Location` of a redirect (conformance runs:
    /// the suite's authorization endpoint redirects at once).
    pub async fn redirect_target(&self, url: &str) -> Result<Option<String>, AuthError> {
        let parsed = url::Url::parse(url)
            .map_err(|e| AuthError::Discovery(format!("endpoint {url:?} is not a URL: {e}")))?;
        self.check(&parsed).await?;
        let resp = self
            .client
            .get(parsed)
            .send()
            .await
            .map_err(|e| failure(&e))?;
        Ok(resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string))
    }

    /// The adapter `oauth2`'s token requests run on.
    async fn execute(
        &self,
        request: oauth2::HttpRequest,
    ) -> Result<oauth2::HttpResponse, HttpFailure> {
        let (parts, body) = request.into_parts();
        let target = url::Url::parse(&parts.uri.to_string())
            .map_err(|e| HttpFailure(format!("the token endpoint is not a URL: {e}")))?;
        self.check(&target)
            .await
            .map_err(|e| HttpFailure(e.to_string()))?;
        let resp = self
            .client
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body)
            .send()
            .await
            .map_err(|e| HttpFailure(failure(&e).to_string()))?;
        let mut out = http::Response::builder().status(resp.status());
        if let Some(h) = out.headers_mut() {
            *h = resp.headers().clone();
        }
        let body = read_bounded(resp)
            .await
            .map_err(|e| HttpFailure(describe(&e)))?;
        out.body(body).map_err(|e| HttpFailure(e.to_string()))
    }
}

impl<'c> oauth2::AsyncHttpClient<'c> for AuthHttp {
    type Error = HttpFailure;
    type Future = std::pin::Pin<
        Box<
            dyn std::future::Future<Output = Result<oauth2::HttpResponse, HttpFailure>> + Send + 'c,
        >,
    >;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(self.execute(request))
    }
}

/// A token request that did not get an HTTP answer.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpFailure(String);

async fn read_bounded(resp: reqwest::Response) -> Result<Vec<u8>, reqwest::Error> {
    let mut out = Vec::new();
    let mut body = resp.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        let room = MAX_BODY.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() >= MAX_BODY {
            break;
        }
    }
    Ok(out)
}

/// A reqwest error in words (the transport's wording: one owner).
fn describe(e: &reqwest::Error) -> String {
    super::super::http_reply::describe_error(e)
}

/// A failed request: the guard's refusal when its resolver refused the host, else the
/// network failure in words.
fn failure(e: &reqwest::Error) -> AuthError {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        if let Some(Refusal(why)) = s.downcast_ref::<Refusal>() {
            return why.clone();
        }
        src = s.source();
    }
    AuthError::Network(describe(e))
}
