//! Signing in from the engine: a server that wants a signed-in user is reported once
//! (`SignInRequired`); a `SignIn` command runs the browser flow in a spawned task (the
//! actor never waits for the user), pasted redirect URLs are handed to it, and a success
//! reconnects the server (or resumes its polls and push stream).
//!
//! Must not import ratatui or crossterm; the browser is the `mcp::auth` prompter's.

use super::*;
use crate::mcp::auth::{Prompt, Prompter};

/// The sign-in state of one server.
#[derive(Default)]
pub(super) struct SignIn {
    /// `SignInRequired` was reported and not cured since.
    required: bool,
    /// A sign-in is running: where pasted redirects go.
    pastes: Option<mpsc::Sender<String>>,
}

impl ServerActor {
    /// Connecting met "sign in required": report it once, and look again now and then
    /// (another taskrail process may sign in).
    pub(super) async fn sign_in_required(&mut self, reason: String) {
        tracing::info!(server = %self.spec.id, "sign in required: {reason}");
        if !self.sign_in.required || self.sign_in.pastes.is_none() {
            self.emit(EngineEvent::SignInRequired {
                server: self.id(),
                reason,
            })
            .await;
        }
        self.sign_in.required = true;
        self.degraded = true;
        if self.sign_in.pastes.is_none() {
            self.start_connect(self.cfg.backoff.max);
        }
    }

    /// A request of a connected server met "sign in required".
    pub(super) async fn sign_in_lapsed(&mut self, reason: String) {
        if self.sign_in.required {
            return;
        }
        self.sign_in.required = true;
        self.emit(EngineEvent::SignInRequired {
            server: self.id(),
            reason,
        })
        .await;
    }

    /// `SignIn`: start the browser flow unless one runs.
    pub(super) async fn start_sign_in(&mut self) {
        if self.sign_in.pastes.is_some() {
            self.notice(
                NoticeLevel::Info,
                "a sign-in is already running: finish it in the browser".into(),
            )
            .await;
            return;
        }
        let Some(auth) = self.spec.options.auth.clone() else {
            let why = match self.spec.endpoint {
                crate::mcp::Endpoint::Stdio { .. } => {
                    "a stdio server takes its credentials from its environment"
                }
                crate::mcp::Endpoint::Http { .. } => {
                    "this server uses a static Authorization header"
                }
            };
            self.notice(NoticeLevel::Warn, format!("cannot sign in: {why}"))
                .await;
            return;
        };
        let (paste_tx, paste_rx) = mpsc::channel(4);
        self.sign_in.pastes = Some(paste_tx);
        let events = self.events.clone();
        let server = self.id();
        let announce = move |p: Prompt| {
            let ev = match p {
                Prompt::Ready(a) => EngineEvent::SignInStarted {
                    server: server.clone(),
                    url: a.url,
                    browser: a.browser_opened,
                },
                Prompt::Ignored(reason) => EngineEvent::SignInIgnored {
                    server: server.clone(),
                    reason,
                },
            };
            let _ = events.try_send(ev);
        };
        let ui = Prompter::new(true, announce, Some(paste_rx));
        let tx = self.internal_tx.clone();
        tokio::spawn(async move {
            let r = auth.sign_in(ui, None).await.map_err(|e| e.to_string());
            let _ = tx.send(Internal::SignedIn(r)).await;
        });
    }

    pub(super) async fn pasted_redirect(&mut self, url: String) {
        match &self.sign_in.pastes {
            Some(tx) => {
                let _ = tx.send(url).await;
            }
            None => {
                self.notice(
                    NoticeLevel::Warn,
                    "no sign-in is waiting for a redirect URL".into(),
                )
                .await
            }
        }
    }

    pub(super) async fn on_signed_in(&mut self, result: Result<(), String>) {
        self.sign_in.pastes = None;
        match result {
            Ok(()) => {
                self.sign_in.required = false;
                self.emit(EngineEvent::SignedIn { server: self.id() }).await;
                match self.client.clone() {
                    None => {
                        if let Some(t) = self.connect_task.take() {
                            t.abort();
                        }
                        self.connecting = false;
                        self.connect_attempt = 0;
                        self.start_connect(Duration::ZERO);
                    }
                    Some(client) => {
                        // Polls and the push stream stopped on the lapse: resume them.
                        self.backoff_until = None;
                        let now = Instant::now();
                        for id in self.owned_ids() {
                            self.schedule.set(&id, now);
                        }
                        let info = client.info();
                        self.start_push(client, info.era, info.tasks);
                    }
                }
            }
            Err(error) => {
                tracing::warn!(server = %self.spec.id, "sign-in failed: {error}");
                self.emit(EngineEvent::SignInFailed {
                    server: self.id(),
                    error,
                })
                .await;
                if self.client.is_none() && !self.connecting {
                    self.start_connect(self.cfg.backoff.max);
                }
            }
        }
    }
}
