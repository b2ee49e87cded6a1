//! Signing in from the engine: a server that wants a signed-in user is reported once
//! (`SignInRequired`); a `SignIn` command runs the browser flow in a spawned task (the
//! actor never waits for the user), pasted redirect URLs are handed to it, and a success
//! reconnects the server (or resumes its polls and push stream). While the sign-in is
//! missing, the token store is looked at every second: a sign-in another process stores
//! (`taskrail auth login` in another shell) cures it the same way, without a restart.
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
    /// The running browser flow (ended early when another process signs in first).
    flow: Option<JoinHandle<()>>,
    /// Looks for a sign-in stored by another process, while `required`.
    store_watch: Option<JoinHandle<()>>,
}

/// How often a server that wants a sign-in looks for one in the token store.
const STORE_LOOK: Duration = Duration::from_secs(1);

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
        self.watch_store();
        if self.sign_in.pastes.is_none() {
            self.start_connect(self.cfg.backoff.max);
        }
    }

    /// Look for a sign-in stored by another process until one is (then
    /// `Internal::SignInStored`): the store's entry for this server differing from what it
    /// held when the sign-in went missing, with tokens in it.
    fn watch_store(&mut self) {
        if self
            .sign_in
            .store_watch
            .as_ref()
            .is_some_and(|w| !w.is_finished())
        {
            return;
        }
        let Some(auth) = self.spec.options.auth.clone() else {
            return;
        };
        let tx = self.internal_tx.clone();
        self.sign_in.store_watch = Some(tokio::spawn(async move {
            let missing = auth.status().await.ok().flatten();
            loop {
                tokio::time::sleep(STORE_LOOK).await;
                if tx.is_closed() {
                    return;
                }
                match auth.status().await {
                    Ok(Some(now)) if now.signed_in && Some(&now) != missing.as_ref() => {
                        let _ = tx.send(Internal::SignInStored).await;
                        return;
                    }
                    Ok(_) => {}
                    Err(e) => tracing::debug!("token store: {e}"),
                }
            }
        }));
    }

    /// Connected: whatever sign-in was missing is not any more.
    pub(super) fn sign_in_cured(&mut self) {
        self.sign_in.required = false;
        if let Some(w) = self.sign_in.store_watch.take() {
            w.abort();
        }
    }

    /// Another process stored a sign-in for this server: use it now.
    pub(super) async fn on_sign_in_stored(&mut self) {
        self.sign_in.store_watch = None;
        if !self.sign_in.required {
            return;
        }
        // A browser flow of ours is not needed any more (nor its redirect listener).
        if let Some(flow) = self.sign_in.flow.take() {
            flow.abort();
            self.sign_in.pastes = None;
        }
        tracing::info!(server = %self.spec.id, "a sign-in was stored: connecting again");
        self.signed_in().await;
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
        self.watch_store();
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
        self.sign_in.flow = Some(tokio::spawn(async move {
            let r = auth.sign_in(ui, None).await.map_err(|e| e.to_string());
            let _ = tx.send(Internal::SignedIn(r)).await;
        }));
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
        self.sign_in.flow = None;
        if self.sign_in.pastes.take().is_none() {
            // The flow was ended: a sign-in another process stored came first.
            return;
        }
        match result {
            Ok(()) => self.signed_in().await,
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

    /// Signed in (here or in another process): reconnect, or resume polls and the push
    /// stream that stopped on the lapse.
    async fn signed_in(&mut self) {
        self.sign_in_cured();
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
}
