//! `Authorizer`: one server's sign-in, as the transport sees it. It hands out the
//! `Authorization` header (refreshing before expiry), answers a 401 (refresh, else the
//! client-credentials grant, else the interactive flow when a front end allows one, else
//! "sign in required") and a 403 `insufficient_scope` (re-authorize with the union of
//! scopes), and keeps the store in step.
//!
//! Owns: the sign-in state of one server. Must not talk to the terminal.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;
use tokio::sync::Mutex;
use url::Url;

use super::AuthError;
use super::browser::Interaction;
use super::challenge::Challenge;
use super::discovery::{self, Discovered, canonical_resource};
use super::fetch::AuthHttp;
use super::flow::{Authorization, Rejected};
use super::redirect::Listener;
use super::registration::{self, Client, ClientSource};
use super::settings::AuthSettings;
use super::store::{IssuerEntry, ServerEntry, TokenStore};
use super::tokens::{self, TokenSet, now_secs};
use crate::mcp::McpError;

/// How long a sign-in waits for the browser's redirect (or a pasted URL).
pub const SIGN_IN_TIMEOUT: Duration = Duration::from_secs(300);

mod machine;

const OFFLINE: &str = "offline_access";

/// What `auth status` shows about one server.
#[derive(Debug, Clone, PartialEq)]
pub struct SignInStatus {
    pub issuer: String,
    pub client_id: String,
    pub client_source: ClientSource,
    pub scopes: Vec<String>,
    /// Unix seconds.
    pub expires_at: Option<i64>,
    pub refreshable: bool,
    pub signed_in: bool,
}

#[derive(Default)]
struct Inner {
    loaded: bool,
    entry: ServerEntry,
    /// Why the last sign-in stopped working.
    lapsed: Option<String>,
    /// The server's last challenge (a later `sign_in` starts from its scopes and metadata).
    challenge: Option<Challenge>,
}

impl Inner {
    fn current(&self) -> Option<(&str, &IssuerEntry)> {
        self.entry.current_entry()
    }

    fn access_token(&self) -> Option<&str> {
        self.current()
            .and_then(|(_, e)| e.tokens.as_ref())
            .map(|t| t.access_token.as_str())
    }

    /// Scopes granted or asked for last time.
    fn previous_scopes(&self) -> Vec<String> {
        self.current()
            .and_then(|(_, e)| e.tokens.as_ref())
            .map(|t| t.scopes.clone())
            .unwrap_or_default()
    }
}

/// One server's sign-in.
pub struct Authorizer {
    server: Url,
    key: String,
    settings: AuthSettings,
    /// Built on first use: most servers never ask for a sign-in.
    http: std::sync::OnceLock<AuthHttp>,
    loopback: bool,
    store: TokenStore,
    client_name: String,
    inner: Mutex<Inner>,
    /// Serializes authorization flows (one browser at a time per server).
    flow: Mutex<()>,
    interaction: StdMutex<Option<Arc<dyn Interaction>>>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer")
            .field("server", &self.key)
            .field("settings", &self.settings)
            .finish()
    }
}

impl Authorizer {
    pub fn new(
        server_url: &str,
        settings: AuthSettings,
        store: TokenStore,
        client_name: &str,
    ) -> Result<Authorizer, AuthError> {
        let server =
            Url::parse(server_url).map_err(|e| AuthError::Settings(format!("server URL: {e}")))?;
        let loopback = server
            .host_str()
            .is_some_and(|h| h == "localhost" || h.starts_with("127.") || h == "[::1]");
        Ok(Authorizer {
            key: canonical_resource(&server),
            server,
            settings,
            http: std::sync::OnceLock::new(),
            loopback,
            store,
            client_name: client_name.to_string(),
            inner: Mutex::new(Inner::default()),
            flow: Mutex::new(()),
            interaction: StdMutex::new(None),
        })
    }

    /// The key sign-ins are stored under: the server's canonical URI.
    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn store(&self) -> &TokenStore {
        &self.store
    }

    /// The HTTP client for metadata and token requests.
    pub fn http(&self) -> Result<&AuthHttp, AuthError> {
        if let Some(h) = self.http.get() {
            return Ok(h);
        }
        let agent = format!("{}/{}", self.client_name, env!("CARGO_PKG_VERSION"));
        let h = AuthHttp::new(&agent, self.loopback, &self.server)?;
        Ok(self.http.get_or_init(|| h))
    }

    /// Allow (or stop allowing) an interactive sign-in when a request meets a 401.
    pub fn set_interaction(&self, ui: Option<Arc<dyn Interaction>>) {
        *self.interaction.lock().unwrap_or_else(|e| e.into_inner()) = ui;
    }

    fn interaction(&self) -> Option<Arc<dyn Interaction>> {
        self.interaction
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Read the store once; `again`: read it anew (after a 401: another process may have
    /// signed in or renewed meanwhile).
    async fn ensure_loaded(&self, inner: &mut Inner, again: bool) -> Result<(), AuthError> {
        if inner.loaded && !again {
            return Ok(());
        }
        inner.entry = self.store.load(&self.key).await?.unwrap_or_default();
        inner.loaded = true;
        Ok(())
    }

    async fn save(
        &self,
        inner: &mut Inner,
        issuer: String,
        entry: IssuerEntry,
    ) -> Result<(), AuthError> {
        let (i, e) = (issuer.clone(), entry.clone());
        self.store
            .update(&self.key, move |s| {
                s.issuers.insert(i.clone(), e);
                s.current = Some(i);
            })
            .await?;
        inner.entry.issuers.insert(issuer.clone(), entry);
        inner.entry.current = Some(issuer);
        inner.lapsed = None;
        Ok(())
    }

    /// Forget the current tokens (kept registrations stay: they belong to the issuer).
    async fn drop_tokens(&self, inner: &mut Inner, why: String) {
        if let Some(issuer) = inner.entry.current.clone() {
            let dropped = inner
                .entry
                .issuers
                .get_mut(&issuer)
                .and_then(|e| e.tokens.take())
                .map(|t| t.access_token);
            let i = issuer.clone();
            // Only these tokens: another process may have stored newer ones meanwhile.
            if let Err(e) = self
                .store
                .update(&self.key, move |s| {
                    if let Some(x) = s.issuers.get_mut(&i)
                        && x.tokens.as_ref().map(|t| &t.access_token) == dropped.as_ref()
                    {
                        x.tokens = None;
                    }
                })
                .await
            {
                tracing::warn!("token store: {e}");
            }
        }
        inner.lapsed = Some(why);
    }

    fn lapsed_reason(inner: &Inner) -> String {
        inner
            .lapsed
            .clone()
            .unwrap_or_else(|| "this server wants you to sign in".into())
    }

    /// The access token to send, refreshed first when it is about to expire. `None`:
    /// send the request without one.
    pub async fn bearer(&self) -> Result<Option<String>, McpError> {
        let mut inner = self.inner.lock().await;
        self.ensure_loaded(&mut inner, false).await?;
        let Some(tokens) = inner.current().and_then(|(_, e)| e.tokens.clone()) else {
            return Ok(None);
        };
        if !tokens.needs_refresh(now_secs()) {
            return Ok(Some(tokens.access_token));
        }
        match self.renew(&mut inner).await {
            Ok(t) => Ok(Some(t.access_token)),
            Err(AuthError::Network(m)) => Err(McpError::Transport(m)),
            Err(e) => {
                self.drop_tokens(
                    &mut inner,
                    format!("the sign-in expired and could not be renewed ({e})"),
                )
                .await;
                Ok(None)
            }
        }
    }

    /// New tokens without a person: the refresh token, or the client-credentials grant.
    async fn renew(&self, inner: &mut Inner) -> Result<TokenSet, AuthError> {
        if let Some(t) = self.adopt_stored(inner).await? {
            return Ok(t);
        }
        match self.renew_held(inner).await {
            Err(e @ AuthError::Network(_)) => Err(e),
            // A concurrent renewal (another process, or another connection to the same
            // server) may have used the refresh token first: its tokens are in the store.
            Err(e) => self.adopt_stored(inner).await?.ok_or(e),
            ok => ok,
        }
    }

    /// Take the store's tokens when another process renewed them (still valid: returned;
    /// expired but newer: held, so the refresh uses the newest refresh token).
    async fn adopt_stored(&self, inner: &mut Inner) -> Result<Option<TokenSet>, AuthError> {
        let held = inner.access_token().map(str::to_string);
        let stored = self.store.load(&self.key).await?.unwrap_or_default();
        let Some(t) = stored.current_entry().and_then(|(_, e)| e.tokens.clone()) else {
            return Ok(None);
        };
        if Some(&t.access_token) == held.as_ref() {
            return Ok(None);
        }
        inner.entry = stored;
        Ok((!t.needs_refresh(now_secs())).then_some(t))
    }

    async fn renew_held(&self, inner: &mut Inner) -> Result<TokenSet, AuthError> {
        let (issuer, entry) = inner
            .current()
            .map(|(i, e)| (i.to_string(), e.clone()))
            .ok_or_else(|| AuthError::SignInRequired("nobody is signed in".into()))?;
        let old = entry
            .tokens
            .clone()
            .ok_or_else(|| AuthError::SignInRequired("nobody is signed in".into()))?;
        let fresh = if self.settings.is_client_credentials() {
            self.machine_token(&entry.metadata, &entry.resource, &old.scopes)
                .await?
        } else {
            let secret = self.configured_secret(&entry.client);
            let client = tokens::token_client(&entry.metadata, &entry.client, secret)?;
            tokens::refresh(self.http()?, &client, &old, &entry.resource).await?
        };
        tracing::info!(server = %self.key, "access token renewed");
        let mut entry = entry;
        entry.tokens = Some(fresh.clone());
        self.save(inner, issuer, entry).await?;
        Ok(fresh)
    }

    fn configured_secret(&self, client: &Client) -> Option<&str> {
        (client.source == ClientSource::Configured)
            .then(|| self.settings.client_secret.as_ref().map(|s| s.expose()))
            .flatten()
    }

    /// The server answered 401 to a request that carried `sent`. `Ok`: try again.
    pub async fn unauthorized(
        &self,
        sent: Option<&str>,
        challenge: Option<Challenge>,
    ) -> Result<(), McpError> {
        {
            let mut inner = self.inner.lock().await;
            inner.challenge = challenge.clone().or(inner.challenge.take());
            self.ensure_loaded(&mut inner, true).await?;
            let current = inner.access_token().map(str::to_string);
            if current.is_some() && current.as_deref() != sent {
                return Ok(()); // renewed meanwhile
            }
            if sent.is_some() && current.is_some() {
                match self.renew(&mut inner).await {
                    Ok(_) => return Ok(()),
                    Err(AuthError::Network(m)) => return Err(McpError::Transport(m)),
                    Err(e) => {
                        self.drop_tokens(
                            &mut inner,
                            format!(
                                "the server refused the sign-in and it could not be renewed ({e})"
                            ),
                        )
                        .await
                    }
                }
            }
        }
        if self.settings.is_client_credentials() {
            return Ok(self.machine_sign_in(challenge.as_ref(), &[]).await?);
        }
        let Some(ui) = self.interaction() else {
            let inner = self.inner.lock().await;
            return Err(McpError::SignInRequired(Self::lapsed_reason(&inner)));
        };
        Ok(self.sign_in_with(ui, challenge.as_ref(), &[]).await?)
    }

    /// The server answered 403 with `challenge`. `Ok`: re-authorized with more scopes.
    pub async fn forbidden(&self, challenge: Challenge) -> Result<(), McpError> {
        let previous = {
            let mut inner = self.inner.lock().await;
            inner.challenge = Some(challenge.clone());
            inner.previous_scopes()
        };
        let wanted = union(&previous, &challenge.scopes);
        if self.settings.is_client_credentials() {
            return Ok(self.machine_sign_in(Some(&challenge), &wanted).await?);
        }
        let Some(ui) = self.interaction() else {
            return Err(McpError::SignInRequired(format!(
                "the server wants more access ({}): sign in again",
                crate::sanitize::sanitize_line(&challenge.scopes.join(" "), 200)
            )));
        };
        Ok(self.sign_in_with(ui, Some(&challenge), &wanted).await?)
    }

    /// Scopes to ask for: the challenge's, else the resource's `scopes_supported`, else
    /// none; plus `extra`; plus `offline_access` when the authorization server offers it.
    fn select_scopes(
        challenge: Option<&Challenge>,
        d: &Discovered,
        extra: &[String],
        offline: bool,
    ) -> Vec<String> {
        let base = match challenge.filter(|c| !c.scopes.is_empty()) {
            Some(c) => c.scopes.clone(),
            None => d.resource_scopes.clone().unwrap_or_default(),
        };
        let mut out = union(&base, extra);
        out.retain(|s| offline || s != OFFLINE);
        if offline && d.metadata.offers_scope(OFFLINE) && !out.iter().any(|s| s == OFFLINE) {
            out.push(OFFLINE.into());
        }
        out
    }

    /// A configured client is bound to the issuer it was first used with.
    fn check_binding(&self, inner: &Inner, issuer: &str) -> Result<(), AuthError> {
        if self.settings.client_id.is_none() {
            return Ok(());
        }
        match inner.current() {
            Some((known, e)) if e.client.source == ClientSource::Configured && known != issuer => {
                Err(AuthError::Refused(format!(
                    "the configured client was used with {}, but the server now names {}; \
                     run `taskrail auth logout` for this server if that is expected",
                    crate::sanitize::sanitize_line(known, 120),
                    crate::sanitize::sanitize_line(issuer, 120)
                )))
            }
            _ => Ok(()),
        }
    }

    /// The authorization code flow, end to end, through `ui`.
    async fn sign_in_with(
        &self,
        ui: Arc<dyn Interaction>,
        challenge: Option<&Challenge>,
        extra: &[String],
    ) -> Result<(), AuthError> {
        let _one_at_a_time = self.flow.lock().await;
        let (known, stored) = {
            let inner = self.inner.lock().await;
            (inner.entry.current.clone(), inner.entry.clone())
        };
        let d =
            discovery::discover(self.http()?, &self.server, challenge, known.as_deref()).await?;
        discovery::require_pkce(&self.server, &d.metadata)?;
        let issuer = d.metadata.issuer.clone();
        self.check_binding(&*self.inner.lock().await, &issuer)?;
        let scopes = Self::select_scopes(challenge, &d, extra, true);
        let mut listener = Listener::bind(self.settings.redirect_port).await?;
        let previous_client = stored.issuers.get(&issuer).map(|e| e.client.clone());
        let client = registration::choose(
            self.http()?,
            &self.server,
            &self.settings,
            &d.metadata,
            previous_client.as_ref(),
            &listener.redirect_uri,
            &self.client_name,
        )
        .await?;
        let secret = self.configured_secret(&client);
        let code_client =
            tokens::code_client(&d.metadata, &client, secret, &listener.redirect_uri)?;
        let mut auth = Authorization::begin(&code_client, &d.metadata, &d.resource, &scopes);
        tracing::info!(server = %self.key, issuer = %issuer, "authorization started");
        let code = match ui.open(&auth.url).await? {
            Some(redirect) => match auth.accept(&redirect) {
                Ok(code) => code,
                Err(Rejected::Failed(e)) => return Err(e),
                Err(Rejected::NotOurs) => {
                    return Err(AuthError::Authorization(
                        "the authorization response does not answer this request".into(),
                    ));
                }
            },
            None => wait_for_code(&mut listener, &*ui, &auth).await?,
        };
        drop(listener);
        let verifier = auth
            .take_verifier()
            .ok_or_else(|| AuthError::Authorization("the PKCE verifier was used".into()))?;
        let tokens = tokens::exchange_code(
            self.http()?,
            &code_client,
            code,
            verifier,
            &d.resource,
            &auth.scopes,
        )
        .await?;
        tracing::info!(server = %self.key, issuer = %issuer, "signed in");
        let entry = IssuerEntry {
            resource: d.resource,
            metadata: d.metadata,
            client,
            tokens: Some(tokens),
        };
        let mut inner = self.inner.lock().await;
        self.save(&mut inner, issuer, entry).await
    }

    /// Sign in interactively now (the dashboard's sign-in key) without an MCP request:
    /// discovery starts from `challenge`, else the server's last one, else the well-known
    /// URLs; the scopes held before are asked for again.
    pub async fn sign_in(
        &self,
        ui: Arc<dyn Interaction>,
        challenge: Option<Challenge>,
    ) -> Result<(), AuthError> {
        let (previous, challenge) = {
            let inner = self.inner.lock().await;
            (
                inner.previous_scopes(),
                challenge.or(inner.challenge.clone()),
            )
        };
        if self.settings.is_client_credentials() {
            return self.machine_sign_in(challenge.as_ref(), &previous).await;
        }
        self.sign_in_with(ui, challenge.as_ref(), &previous).await
    }

    /// Forget this server's sign-in (tokens and registrations). Whether one was stored.
    pub async fn sign_out(&self) -> Result<bool, AuthError> {
        let removed = self.store.remove(&self.key).await?;
        let mut inner = self.inner.lock().await;
        *inner = Inner {
            loaded: true,
            ..Default::default()
        };
        Ok(removed)
    }

    /// What the store holds for this server.
    pub async fn status(&self) -> Result<Option<SignInStatus>, AuthError> {
        let entry = self.store.load(&self.key).await?;
        Ok(entry.and_then(|e| {
            let (issuer, ie) = e.current_entry()?;
            let t = ie.tokens.as_ref();
            Some(SignInStatus {
                issuer: issuer.to_string(),
                client_id: ie.client.client_id.clone(),
                client_source: ie.client.source,
                scopes: t.map(|t| t.scopes.clone()).unwrap_or_default(),
                expires_at: t.and_then(|t| t.expires_at),
                refreshable: t.is_some_and(|t| t.refresh_token.is_some())
                    || self.settings.is_client_credentials(),
                signed_in: t.is_some(),
            })
        }))
    }
}

/// Wait for the redirect on the listener or a pasted URL; other requests are ignored.
async fn wait_for_code(
    listener: &mut Listener,
    ui: &dyn Interaction,
    auth: &Authorization,
) -> Result<String, AuthError> {
    let deadline = tokio::time::sleep(SIGN_IN_TIMEOUT);
    tokio::pin!(deadline);
    loop {
        let redirect = tokio::select! {
            r = listener.next() => r.ok_or_else(|| {
                AuthError::Authorization("the redirect listener stopped".into())
            })?,
            Some(p) = ui.pasted() => p,
            _ = &mut deadline => {
                return Err(AuthError::Authorization(format!(
                    "no sign-in response within {} minutes",
                    SIGN_IN_TIMEOUT.as_secs() / 60
                )));
            }
        };
        match auth.accept(&redirect) {
            Ok(code) => return Ok(code),
            Err(Rejected::NotOurs) => {
                tracing::warn!("ignoring a redirect that does not answer this sign-in");
                ui.rejected("that is not the response to this sign-in (its state differs)");
            }
            Err(Rejected::Failed(e)) => return Err(e),
        }
    }
}

/// `a` then the members of `b` not in it.
fn union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out = a.to_vec();
    for s in b {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::auth::discovery::ServerMetadata;

    fn discovered(resource_scopes: Option<&[&str]>, as_scopes: Option<&[&str]>) -> Discovered {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        Discovered {
            resource: "https://mcp.example/mcp".into(),
            metadata: ServerMetadata {
                issuer: "https://as.example".into(),
                scopes_supported: as_scopes.map(v),
                ..Default::default()
            },
            resource_scopes: resource_scopes.map(v),
        }
    }

    fn challenge(scopes: &[&str]) -> Challenge {
        Challenge {
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn scope_selection_follows_the_spec_order() {
        let d = discovered(Some(&["r1", "r2"]), None);
        // the challenge's scope wins
        assert_eq!(
            Authorizer::select_scopes(Some(&challenge(&["c"])), &d, &[], true),
            ["c"]
        );
        // else scopes_supported of the resource
        assert_eq!(
            Authorizer::select_scopes(Some(&challenge(&[])), &d, &[], true),
            ["r1", "r2"]
        );
        // else none at all
        let none = discovered(None, None);
        assert!(Authorizer::select_scopes(None, &none, &[], true).is_empty());
        // step-up: the union with what was held
        assert_eq!(
            Authorizer::select_scopes(
                Some(&challenge(&["basic", "write"])),
                &d,
                &["basic".into(), "read".into()],
                true
            ),
            ["basic", "write", "read"]
        );
    }

    #[test]
    fn offline_access_only_when_offered_and_never_for_machines() {
        let offered = discovered(Some(&["mcp"]), Some(&["mcp", OFFLINE]));
        assert_eq!(
            Authorizer::select_scopes(None, &offered, &[], true),
            ["mcp", OFFLINE]
        );
        assert_eq!(
            Authorizer::select_scopes(None, &offered, &[], false),
            ["mcp"]
        );
        let not = discovered(Some(&["mcp"]), Some(&["mcp"]));
        assert_eq!(Authorizer::select_scopes(None, &not, &[], true), ["mcp"]);
        // a challenge naming it is not a reason when the server does not offer it
        assert_eq!(
            Authorizer::select_scopes(Some(&challenge(&["a", OFFLINE])), &not, &[], true),
            ["a", OFFLINE]
        );
    }
}
