//! The loopback redirect listener: `http://127.0.0.1:PORT/callback` on an ephemeral port
//! (or the configured one), answering the browser with a short page and handing the full
//! redirect URL to the sign-in flow. Over SSH the user pastes that URL instead.
//!
//! Owns: the listener and reading a pasted URL. Must not judge the response (the flow
//! checks `state` and `iss`).

use axum::extract::State;
use axum::response::Html;
use axum::routing::get;
use tokio::sync::mpsc;

use super::AuthError;

/// A running redirect listener (stops when dropped).
pub struct Listener {
    pub redirect_uri: String,
    rx: mpsc::Receiver<String>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

const PAGE: &str = "<!doctype html><meta charset=utf-8><title>taskrail</title>\
<body style=\"font-family:sans-serif;margin:3em\"><h1>taskrail</h1>\
<p>The sign-in response reached taskrail. You can close this tab and return to the terminal.</p>";

impl Listener {
    /// Bind `127.0.0.1:port` (0: any free port).
    pub async fn bind(port: Option<u16>) -> Result<Listener, AuthError> {
        let socket = tokio::net::TcpListener::bind(("127.0.0.1", port.unwrap_or(0)))
            .await
            .map_err(|e| {
                AuthError::Authorization(format!(
                    "cannot listen for the sign-in redirect on 127.0.0.1:{}: {e}",
                    port.unwrap_or(0)
                ))
            })?;
        let addr = socket
            .local_addr()
            .map_err(|e| AuthError::Authorization(e.to_string()))?;
        let origin = format!("http://127.0.0.1:{}", addr.port());
        let (tx, rx) = mpsc::channel::<String>(8);
        let app = axum::Router::new()
            .route("/callback", get(callback))
            .with_state((tx, origin.clone()));
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(socket, app).await {
                tracing::debug!("redirect listener stopped: {e}");
            }
        });
        Ok(Listener {
            redirect_uri: format!("{origin}/callback"),
            rx,
            task,
        })
    }

    /// The next redirect the browser delivered.
    pub async fn next(&mut self) -> Option<String> {
        self.rx.recv().await
    }
}

async fn callback(
    State((tx, origin)): State<(mpsc::Sender<String>, String)>,
    uri: axum::http::Uri,
) -> Html<&'static str> {
    let _ = tx.try_send(format!("{origin}{uri}"));
    Html(PAGE)
}

/// The query of a pasted redirect: a full URL, or just its `?query` / `code=…&state=…`.
pub fn query_of(pasted: &str) -> Option<String> {
    let s = pasted.trim();
    if s.is_empty() || s.len() > 16 * 1024 {
        return None;
    }
    if let Ok(u) = url::Url::parse(s) {
        return u.query().map(str::to_string);
    }
    let q = s.split_once('?').map_or(s, |(_, q)| q);
    let q = q.split('#').next().unwrap_or(q);
    q.contains('=').then(|| q.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_listener_hands_over_the_full_redirect() {
        crate::mcp::http::install_crypto_provider();
        let mut l = Listener::bind(None).await.unwrap();
        assert!(l.redirect_uri.starts_with("http://127.0.0.1:"));
        let url = format!("{}?code=abc&state=xyz", l.redirect_uri);
        let page = reqwest::Client::builder()
            .no_proxy()
            .build()
            .unwrap()
            .get(&url)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(page.contains("close this tab"));
        assert_eq!(l.next().await.unwrap(), url);
    }

    #[test]
    fn pasted_urls_and_bare_queries_are_read() {
        assert_eq!(
            query_of(" http://127.0.0.1:5/callback?code=a&state=b ").as_deref(),
            Some("code=a&state=b")
        );
        assert_eq!(
            query_of("?code=a&state=b").as_deref(),
            Some("code=a&state=b")
        );
        assert_eq!(
            query_of("code=a&state=b#x").as_deref(),
            Some("code=a&state=b")
        );
        assert_eq!(query_of("nothing here"), None);
        assert_eq!(query_of(""), None);
    }
}
