//! HTTP for sign-in: metadata GETs, registration POSTs, and the `oauth2` crate's token
//! requests, all on one reqwest client (the transport's TLS stack) that never follows
//! redirects and reads bounded bodies.
//!
//! Owns: `AuthHttp` and the `oauth2` HTTP-client adapter. Must not log bodies (they hold
//! tokens and secrets).

use futures::StreamExt;
use serde_json::Value;
use std::time::Duration;

use super::AuthError;

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
}

impl AuthHttp {
    pub fn new(user_agent: &str, loopback_only: bool) -> Result<AuthHttp, AuthError> {
        super::super::http::install_crypto_provider();
        let mut b = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .user_agent(user_agent);
        if loopback_only {
            b = b.no_proxy();
        }
        let client = b.build().map_err(|e| AuthError::Network(e.to_string()))?;
        Ok(AuthHttp { client })
    }

    /// GET a JSON document. 4xx is `Missing`; 5xx, network and parse failures are errors.
    pub async fn get_json(&self, url: &url::Url) -> Result<Fetched, AuthError> {
        let resp = self
            .client
            .get(url.clone())
            .header("Accept", "application/json")
            .header("MCP-Protocol-Version", super::super::types::LEGACY_VERSION)
            .send()
            .await
            .map_err(|e| AuthError::Network(describe(&e)))?;
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
        let resp = self
            .client
            .post(url.clone())
            .header("Accept", "application/json")
            .json(body)
            .send()
            .await
            .map_err(|e| AuthError::Network(describe(&e)))?;
        let status = resp.status().as_u16();
        let body = read_bounded(resp)
            .await
            .map_err(|e| AuthError::Network(describe(&e)))?;
        Ok((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
    }

    /// GET without following redirects: the `Location` of a redirect (conformance runs:
    /// the suite's authorization endpoint redirects at once).
    pub async fn redirect_target(&self, url: &str) -> Result<Option<String>, AuthError> {
        let resp = self
            .client
            .get(url)
            .send()
            .await
            .map_err(|e| AuthError::Network(describe(&e)))?;
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
        let resp = self
            .client
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body)
            .send()
            .await
            .map_err(|e| HttpFailure(describe(&e)))?;
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
    super::super::http::describe_error(e)
}
