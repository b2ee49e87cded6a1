//! Server identity, decided in one place: a `--server` value or a ledger id becomes a
//! `ServerSpec` whose `ServerId` is the configured name when the config names that server
//! (by name, or by the same address), and the normalised, redacted address otherwise.
//!
//! Owns: name-vs-address resolution and the ledger's migration to canonical ids. Header
//! values (secrets) go into connect options only.

use std::collections::HashMap;

use super::args::exit;
use super::{CliResult, Context, fail};
use crate::config::ServerConfig;
use crate::engine::{Resolver, ServerId, ServerSpec};
use crate::mcp::Endpoint;

impl Context {
    /// The configured server with this address, if any.
    fn configured_by_address(&self, endpoint: &Endpoint) -> Option<&ServerConfig> {
        let identity = endpoint.identity();
        self.config
            .servers
            .iter()
            .find(|s| Endpoint::parse(&s.endpoint_spec()).is_ok_and(|e| e.identity() == identity))
    }

    /// The spec of a `--server` value: a configured name, or an address (the configured
    /// server with that address keeps its name, headers and settings).
    pub fn spec(&self, server: &str) -> CliResult<ServerSpec> {
        if let Some(configured) = self.config.server(server) {
            return super::extras::configured_spec(self, configured);
        }
        let endpoint = Endpoint::parse(server).map_err(|e| fail(&e.to_string(), exit::USAGE))?;
        if let Some(configured) = self.configured_by_address(&endpoint) {
            return super::extras::configured_spec(self, configured);
        }
        let options = self.with_auth(&endpoint, Default::default(), self.connect_options()?)?;
        let mut spec = ServerSpec::new(endpoint, options);
        spec.read_only = self.read_only;
        Ok(super::wire::tapped(spec))
    }

    /// The id a `--server` value stands for (no connection, no error output).
    pub fn server_id(&self, server: &str) -> Option<ServerId> {
        if self.config.server(server).is_some() {
            return Some(ServerId::named(server));
        }
        let endpoint = Endpoint::parse(server).ok()?;
        Some(match self.configured_by_address(&endpoint) {
            Some(c) => ServerId::named(&c.name),
            None => ServerId::ad_hoc(&endpoint.identity()),
        })
    }

    /// The spec of a server known by its ledger id, when this process can reach it: a
    /// configured server, or an HTTP address. An ad-hoc stdio server is not started from a
    /// ledger row: its tasks lived in the process that started it.
    pub fn spec_for(&self, id: &ServerId) -> Option<ServerSpec> {
        if let Some(configured) = self.config.server(id.as_str()) {
            return super::extras::configured_spec(self, configured).ok();
        }
        match Endpoint::parse(id.as_str()).ok()? {
            Endpoint::Stdio { .. } => None,
            endpoint @ Endpoint::Http { .. } => {
                let spec = self.spec(id.as_str()).ok()?;
                (spec.id == *id && spec.endpoint == endpoint).then_some(spec)
            }
        }
    }

    /// [`Context::spec_for`] for the engine, which meets servers in the ledger.
    pub fn resolver(&self) -> Resolver {
        let specs: HashMap<ServerId, Option<ServerSpec>> = HashMap::new();
        let ctx = ResolverContext {
            config: self.config.clone(),
            global: self.global.clone(),
            read_only: self.read_only,
            tokens: self.tokens.clone(),
        };
        let cache = std::sync::Mutex::new(specs);
        Resolver(std::sync::Arc::new(move |id: &ServerId| {
            let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
            cache
                .entry(id.clone())
                .or_insert_with(|| ctx.context().spec_for(id))
                .clone()
        }))
    }

    /// The canonical id of a stored server id: a configured server's name for its address,
    /// the normalised address for an ad-hoc one.
    pub fn canonical(&self, id: &ServerId) -> ServerId {
        if self.config.server(id.as_str()).is_some() {
            return id.clone();
        }
        self.server_id(id.as_str()).unwrap_or_else(|| id.clone())
    }
}

/// What the resolver needs of a `Context`, owned (the engine keeps it).
struct ResolverContext {
    config: crate::config::Config,
    global: super::GlobalArgs,
    read_only: bool,
    tokens: crate::mcp::auth::TokenStore,
}

impl ResolverContext {
    fn context(&self) -> Context {
        let mut ctx = Context::bare(self.global.clone(), self.read_only);
        ctx.config = self.config.clone();
        ctx.tokens = self.tokens.clone();
        ctx
    }
}
