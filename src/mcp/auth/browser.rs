//! How the user reaches the authorization URL: the system browser (`BROWSER` respected,
//! through the `webbrowser` crate), the URL printed for `--no-browser` and SSH sessions
//! (the user may then paste the final redirect URL), or, for conformance runs, a direct
//! GET whose redirect is the answer.
//!
//! Owns: the `Interaction` trait and its implementations. Must not write to the terminal
//! itself: announcements go through the callback the front end gives.

use futures::future::BoxFuture;
use std::sync::Arc;
use tokio::sync::{Mutex, mpsc};

use super::AuthError;
use super::fetch::AuthHttp;

/// The front end of one sign-in.
pub trait Interaction: Send + Sync {
    /// Bring the user to `url`. `Some(redirect)` when the interaction itself produced the
    /// redirect (then no listener is waited for).
    fn open<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Option<String>, AuthError>>;

    /// The next redirect URL the user pasted (pending forever when pasting is not offered).
    fn pasted(&self) -> BoxFuture<'_, Option<String>>;

    /// A redirect arrived that does not answer this sign-in (it was ignored).
    fn rejected(&self, _why: &str) {}
}

/// What the front end is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prompt {
    /// The authorization URL is ready.
    Ready(Announcement),
    /// A redirect was ignored, and why.
    Ignored(String),
}

/// What the front end is told when the URL is ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announcement {
    pub url: String,
    /// Whether a browser was started (else the user opens the URL by hand).
    pub browser_opened: bool,
    /// Why not, when it was tried.
    pub browser_error: Option<String>,
}

/// Opens the system browser (unless told not to), announces the URL, accepts pastes.
pub struct Prompter {
    open_browser: bool,
    announce: Box<dyn Fn(Prompt) + Send + Sync>,
    pastes: Mutex<Option<mpsc::Receiver<String>>>,
}

impl Prompter {
    pub fn new(
        open_browser: bool,
        announce: impl Fn(Prompt) + Send + Sync + 'static,
        pastes: Option<mpsc::Receiver<String>>,
    ) -> Arc<Prompter> {
        Arc::new(Prompter {
            open_browser,
            announce: Box::new(announce),
            pastes: Mutex::new(pastes),
        })
    }
}

impl Interaction for Prompter {
    fn open<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Option<String>, AuthError>> {
        Box::pin(async move {
            let mut browser_error = None;
            let mut browser_opened = false;
            if self.open_browser {
                let target = url.to_string();
                // The browser command may take a moment (or be a script): off the runtime.
                let r = tokio::task::spawn_blocking(move || {
                    let opts = webbrowser::BrowserOptions::new();
                    webbrowser::open_browser_with_options(
                        webbrowser::Browser::Default,
                        &target,
                        &opts,
                    )
                })
                .await;
                match r {
                    Ok(Ok(())) => browser_opened = true,
                    Ok(Err(e)) => browser_error = Some(e.to_string()),
                    Err(e) => browser_error = Some(e.to_string()),
                }
            }
            (self.announce)(Prompt::Ready(Announcement {
                url: url.to_string(),
                browser_opened,
                browser_error,
            }));
            Ok(None)
        })
    }

    fn rejected(&self, why: &str) {
        (self.announce)(Prompt::Ignored(why.to_string()));
    }

    fn pasted(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            let mut guard = self.pastes.lock().await;
            match guard.as_mut() {
                Some(rx) => match rx.recv().await {
                    Some(s) => Some(s),
                    None => {
                        *guard = None;
                        drop(guard);
                        std::future::pending().await
                    }
                },
                None => {
                    drop(guard);
                    std::future::pending().await
                }
            }
        })
    }
}

/// Conformance runs: the suite's authorization endpoint redirects at once, so the
/// "browser" is a GET that does not follow redirects; its `Location` is the response.
pub struct DirectFetch {
    http: AuthHttp,
}

impl DirectFetch {
    pub fn new(http: AuthHttp) -> Arc<DirectFetch> {
        Arc::new(DirectFetch { http })
    }
}

impl Interaction for DirectFetch {
    fn open<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Option<String>, AuthError>> {
        Box::pin(async move {
            match self.http.redirect_target(url).await? {
                Some(location) => Ok(Some(location)),
                None => Err(AuthError::Authorization(
                    "the authorization endpoint did not redirect".into(),
                )),
            }
        })
    }

    fn pasted(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(std::future::pending())
    }
}
