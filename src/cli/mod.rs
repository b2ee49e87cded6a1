//! The command line: parses arguments, sets up logging, the ledger and the engine, and
//! runs one subcommand (or the dashboard). Exit codes are in `args::exit`; why a command
//! stopped is a `CliError`, said once at the top.
//!
//! Owns: process-level wiring. Must not hold protocol logic (that is `mcp`/`engine`).

mod answer_check;
mod answer_shape;
mod args;
mod auth;
mod call;
mod conformance;
mod dashboard;
mod extras;
mod failure;
mod follow;
mod history;
mod hosts;
mod intent;
mod ledger_admin;
mod logging;
mod oneshot;
mod output;
mod proxy;
mod proxy_headers;
mod servers;
pub mod stats_read;
mod task_ref;
mod wire;

pub use args::{AuthCommand, Cli, Command, GlobalArgs, exit};

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OnceCell;

use crate::engine::{EngineCommand, EngineConfig, ServerId, ServerSpec, TaskId, spawn_engine};
use crate::ledger::{self, DEFAULT_RETENTION, Ledger, LedgerHandle, Op};
use crate::mcp::{ConnectOptions, Endpoint, McpClient};
pub(crate) use failure::{CliError, CliResult, fail};
use follow::{Follower, Mode};
use output::say;

/// A failed connection; "sign in required" gets its own exit code and advice.
pub(crate) fn connect_failure(server: &ServerId, e: &crate::mcp::McpError) -> CliError {
    if let crate::mcp::McpError::SignInRequired(_) = e {
        return fail(&format!("{server}: {e}"), exit::SIGN_IN).advise(format!(
            "sign in with: taskrail auth login {}",
            shlex::try_quote(server.as_str()).unwrap_or_default()
        ));
    }
    fail(
        &format!("cannot connect to {server}: {e}"),
        exit::CONNECTION,
    )
}

/// [`connect_failure`] for `spec`; when the sign-in fails because the loopback server
/// knows itself by another spelling of its address (`localhost` for `127.0.0.1`), the
/// advice names the spelling that works.
pub(crate) async fn connect_failure_at(spec: &ServerSpec, e: &crate::mcp::McpError) -> CliError {
    let failure = connect_failure(&spec.id, e);
    let sign_in = matches!(
        e,
        crate::mcp::McpError::SignInRequired(_) | crate::mcp::McpError::Auth(_)
    );
    let url = match &spec.endpoint {
        Endpoint::Http { url } if sign_in => url::Url::parse(url).ok(),
        _ => None,
    };
    let Some(url) = url else {
        return failure;
    };
    match crate::mcp::auth::discovery::working_spelling(&url).await {
        Some(alias) => failure.advise(format!(
            "the server calls itself {alias}: use that address (in the config too); sign in \
             with: taskrail auth login {}",
            shlex::try_quote(&alias).unwrap_or_default()
        )),
        None => failure,
    }
}

/// What every subcommand needs: options, the ledger (opened on first use), the server.
pub struct Context {
    pub global: GlobalArgs,
    pub servers: Vec<String>,
    pub read_only: bool,
    pub config: crate::config::Config,
    /// Where sign-ins are kept (opened on first use).
    pub tokens: crate::mcp::auth::TokenStore,
    ledger: OnceCell<LedgerHandle>,
}

impl Context {
    pub fn new(cli: &Cli) -> CliResult<Self> {
        crate::mcp::auth::StoreChoice::parse(&cli.global.token_store)
            .map_err(|e| fail(&format!("--token-store: {e}"), exit::USAGE))?;
        let mut ctx = Self::bare(cli.global.clone(), cli.global.read_only);
        ctx.servers = cli.servers.clone();
        Ok(ctx)
    }

    /// A context with these options, no `--server` and the default config.
    pub fn bare(global: GlobalArgs, read_only: bool) -> Self {
        let choice = crate::mcp::auth::StoreChoice::parse(&global.token_store)
            .unwrap_or(crate::mcp::auth::StoreChoice::Auto);
        Self {
            global,
            servers: Vec::new(),
            read_only,
            config: crate::config::Config::defaults(),
            tokens: crate::mcp::auth::TokenStore::new(choice),
            ledger: OnceCell::new(),
        }
    }

    /// Attach OAuth sign-in to an HTTP server's options (stdio servers take credentials
    /// from their environment).
    pub fn with_auth(
        &self,
        endpoint: &Endpoint,
        settings: crate::mcp::auth::AuthSettings,
        mut options: ConnectOptions,
    ) -> CliResult<ConnectOptions> {
        if let Endpoint::Http { url } = endpoint {
            let auth = crate::mcp::auth::Authorizer::new(
                url,
                settings,
                self.tokens.clone(),
                &options.client_name,
            )
            .map_err(|e| fail(&e.to_string(), exit::USAGE))?;
            options.auth = Some(Arc::new(auth));
        }
        Ok(options)
    }

    pub fn connect_options(&self) -> CliResult<ConnectOptions> {
        let defaults = ConnectOptions::default();
        let given = self.global.timeout.map(|s| Duration::from_secs(s.max(1)));
        let mut opts = ConnectOptions {
            request_timeout: given.unwrap_or(defaults.request_timeout),
            call_timeout: given.unwrap_or(defaults.call_timeout),
            ..defaults
        };
        for h in &self.global.headers {
            match ConnectOptions::parse_header(h) {
                Ok(pair) => opts.headers.push(pair),
                Err(e) => return Err(fail(&format!("--header: {e}"), exit::USAGE)),
            }
        }
        Ok(opts)
    }

    /// The one server a command works on: the `--server` given, else the config's only one.
    fn single(&self) -> CliResult<ServerSpec> {
        match (self.servers.as_slice(), self.config.servers.as_slice()) {
            ([one], _) => self.spec(one),
            ([], [only]) => self.spec(&only.name),
            ([], []) => Err(fail(
                "this command needs --server URL (or --server stdio:<command>)",
                exit::USAGE,
            )),
            ([], many) => {
                let names: Vec<&str> = many.iter().map(|s| s.name.as_str()).collect();
                Err(fail(
                    &format!(
                        "this command needs --server NAME: the config names {} servers ({})",
                        names.len(),
                        crate::sanitize::sanitize_line(&names.join(", "), 300)
                    ),
                    exit::USAGE,
                ))
            }
            (_, _) => Err(fail("this command takes exactly one --server", exit::USAGE)),
        }
    }

    /// Connect to the one `--server`.
    pub async fn connect(&self) -> CliResult<(ServerSpec, Arc<McpClient>)> {
        let spec = self.single()?;
        let client = self.connect_to(&spec).await?;
        Ok((spec, client))
    }

    /// Connect to `spec` (its pushes are not needed).
    pub async fn connect_to(&self, spec: &ServerSpec) -> CliResult<Arc<McpClient>> {
        let client = match McpClient::connect(spec.endpoint.clone(), spec.options.clone()).await {
            Ok((c, _)) => c,
            Err(e) => return Err(connect_failure_at(spec, &e).await),
        };
        Ok(client)
    }

    /// Where the ledger is: `--db`, `TASKRAIL_DB`, or the data directory's file. A URL
    /// other than `postgres://` / `postgresql://` is refused here (a usage error).
    pub fn ledger_location(&self) -> CliResult<ledger::Location> {
        let given = match &self.global.db {
            Some(p) => p.clone(),
            None => crate::paths::ledger()
                .map_err(|e| fail(&format!("ledger location: {e}"), exit::CONNECTION))?,
        };
        ledger::Location::parse(given.as_os_str()).map_err(|e| fail(&e, exit::USAGE))
    }

    /// The local file the ledger's side files sit beside (the proxy's tokens): the SQLite
    /// file, or for a shared ledger the data directory's `ledger.db` (never created).
    pub fn ledger_path(&self) -> CliResult<std::path::PathBuf> {
        match self.ledger_location()? {
            ledger::Location::File(p) => Ok(p),
            ledger::Location::Postgres(_) => crate::paths::data_dir()
                .map(|d| d.join("ledger.db"))
                .ok_or_else(|| {
                    fail(
                        "cannot find a home directory for taskrail's local files",
                        exit::CONNECTION,
                    )
                }),
        }
    }

    /// The ledger, opened (and pruned of old finished tasks) on first use.
    pub async fn ledger(&self) -> CliResult<LedgerHandle> {
        self.ledger
            .get_or_try_init(|| async {
                let location = self.ledger_location()?;
                let handle = ledger::open_at(&location).map_err(|e| {
                    fail(
                        &format!("cannot open the ledger {location}: {e:#}"),
                        exit::CONNECTION,
                    )
                })?;
                if let Err(e) = handle.prune(DEFAULT_RETENTION).await {
                    tracing::warn!("pruning the ledger failed: {e:#}");
                }
                // Rows an older taskrail keyed by a URL the config now names move to the name.
                let canon = Box::new(self.canonical_ids());
                if let Err(e) = handle.canonicalize_servers(canon).await {
                    tracing::warn!("making server ids canonical failed: {e:#}");
                }
                Ok(handle)
            })
            .await
            .cloned()
    }

    /// Call the ledger operation `op` names and await it; a failure becomes the command's error.
    pub async fn ledger_call<R: Send + 'static>(
        &self,
        op: impl FnOnce(&dyn Ledger) -> Op<R>,
    ) -> CliResult<R> {
        let ledger = self.ledger().await?;
        op(&*ledger)
            .await
            .map_err(|e| fail(&format!("ledger: {e:#}"), exit::CONNECTION))
    }

    /// Record something about `server` in the ledger; failures are reported, not fatal.
    pub async fn record(
        &self,
        server: &ServerId,
        op: impl FnOnce(&dyn Ledger, &ServerId) -> Op<()>,
    ) {
        if let Err(failure) = self.ledger_call(|l| op(l, server)).await {
            failure.report();
            tracing::warn!("ledger write failed: {failure}");
        }
    }

    fn canonical_ids(&self) -> impl Fn(&ServerId) -> ServerId + Send + 'static {
        let ctx = Context {
            config: self.config.clone(),
            ..Context::bare(self.global.clone(), self.read_only)
        };
        move |id: &ServerId| ctx.canonical(id)
    }

    fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            poll_floor: Duration::from_millis(self.global.poll_floor.max(10)),
            no_push: self.global.no_push,
            ..Default::default()
        }
    }
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    crate::mcp::http::install_crypto_provider();
    let cli = Cli::from_args();
    let _guard = logging::init_logging(&cli.global);
    start_telemetry(&cli);
    let dashboard = matches!(cli.command, None | Some(Command::Demo));
    if let Err(failure) = wire::install(cli.global.wire.as_deref(), dashboard) {
        return ExitCode::from(failure.report());
    }
    let runtime = match runtime_for(cli.command.as_ref()) {
        Ok(r) => r,
        Err(e) => {
            return ExitCode::from(
                fail(&format!("cannot start the runtime: {e}"), exit::CONNECTION).report(),
            );
        }
    };
    // Run as a spawned task, not as `block_on`'s own future: on a current-thread runtime
    // waking that future goes through the I/O driver (an eventfd write and one more
    // epoll turn per event), while waking a task is a local queue push.
    let code = runtime.block_on(async {
        match tokio::spawn(run(cli)).await {
            Ok(Ok(code)) => code,
            // Why the command stopped, said once, here.
            Ok(Err(failure)) => failure.report(),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => exit::CONNECTION,
        }
    });
    runtime.shutdown_timeout(Duration::from_millis(500));
    crate::telemetry::shutdown();
    wire::close();
    ExitCode::from(code)
}

/// OTLP export, if the environment or the config's `[telemetry]` says where to. A bad
/// setting is logged and said once; the command runs on without export.
fn start_telemetry(cli: &Cli) {
    if matches!(
        cli.command,
        Some(
            Command::ServeDemo(_) | Command::Bench(_) | Command::Completions { .. } | Command::Man
        )
    ) {
        return;
    }
    let table = crate::config::Config::load(cli.global.config.as_deref())
        .map(|c| c.telemetry)
        .unwrap_or_default();
    let lookup = |k: &str| std::env::var(k).ok().or_else(|| table.get(k).cloned());
    match crate::telemetry::settings::resolve(lookup) {
        Ok(settings) => crate::telemetry::init(settings),
        Err(e) => {
            tracing::warn!("telemetry: {e}");
            output::say_line(format_args!("taskrail: telemetry off: {e}"));
        }
    }
}

/// The dashboard, the proxy and the servers run on worker threads (input, drawing and
/// many servers at once); a CLI command follows its tasks on this thread alone, so a
/// poll's request, reply and record never hop between runtime threads.
fn runtime_for(command: Option<&Command>) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = match command {
        None
        | Some(Command::Demo | Command::Proxy(_) | Command::ServeDemo(_) | Command::Bench(_)) => {
            tokio::runtime::Builder::new_multi_thread()
        }
        Some(_) => tokio::runtime::Builder::new_current_thread(),
    };
    builder.enable_all().build()
}

async fn run(cli: Cli) -> CliResult {
    let mut ctx = Context::new(&cli)?;
    match &cli.command {
        Some(Command::Completions { shell }) => return Ok(extras::completions(*shell)),
        Some(Command::Man) => return Ok(extras::man()),
        Some(Command::ServeDemo(_) | Command::Bench(_)) => {}
        _ => match crate::config::Config::load(cli.global.config.as_deref()) {
            Ok(config) => ctx.config = config,
            Err(e) => return Err(fail(&e, exit::USAGE)),
        },
    }
    match cli.command {
        Some(Command::Tools { json }) => oneshot::tools(&ctx, json).await,
        Some(Command::Call { tool, args, detach }) => call::call(&ctx, &tool, &args, detach).await,
        Some(Command::Get { task_id }) => {
            let (spec, task) = task_ref::on_server(&ctx, &task_id).await?;
            oneshot::get(&ctx, spec, &task).await
        }
        Some(Command::Watch { task_ids, json }) => watch(&ctx, task_ids, json).await,
        Some(Command::Answer {
            task_id,
            key,
            response,
            force,
        }) => {
            let (spec, task) = task_ref::on_server(&ctx, &task_id).await?;
            let args = intent::AnswerArgs {
                key: &key,
                response: &response,
                force,
            };
            intent::answer(&ctx, spec, &task, args).await
        }
        Some(Command::Cancel { task_id }) => {
            let (spec, task) = task_ref::on_server(&ctx, &task_id).await?;
            intent::cancel(&ctx, spec, &task).await
        }
        Some(Command::Ls { all, json }) => history::ls(&ctx, all, json).await,
        Some(Command::Timeline { task_id, json }) => history::timeline(&ctx, &task_id, json).await,
        Some(Command::Prune { older_than }) => history::prune(&ctx, &older_than).await,
        Some(Command::Export { task_id, output }) => extras::export(&ctx, &task_id, output).await,
        Some(Command::Completions { .. } | Command::Man) => Ok(exit::COMPLETED),
        Some(Command::Auth(cmd)) => auth::run(&ctx, cmd).await,
        Some(Command::Ledger(cmd)) => ledger_admin::run(&ctx, cmd),
        Some(Command::ServeDemo(opts)) => match crate::demo::run_serve_demo(opts).await {
            Ok(()) => Ok(exit::COMPLETED),
            Err(e) => Err(fail(&format!("demo server: {e:#}"), exit::CONNECTION)),
        },
        Some(Command::Demo) => dashboard::board(&ctx, true).await,
        Some(Command::Bench(args)) => Ok(crate::bench::run(args).await),
        Some(Command::Conformance {
            server_url,
            client_metadata_url,
        }) => conformance::run(&ctx, &server_url, client_metadata_url).await,
        Some(Command::Proxy(args)) => proxy::run(&ctx, args).await,
        Some(Command::Hosts { command, json }) => hosts::run(&ctx, command, json),
        None => {
            dashboard::board(
                &ctx,
                ctx.servers.is_empty() && ctx.config.servers.is_empty(),
            )
            .await
        }
    }
}

async fn watch(ctx: &Context, task_ids: Vec<String>, json: bool) -> CliResult {
    let ledger = ctx.ledger().await?;
    // (server, task id) pairs to follow, and the servers they live on.
    let mut targets: Vec<(ServerSpec, TaskId)> = Vec::new();
    if task_ids.is_empty() {
        let records = ctx.ledger_call(|l| l.non_terminal()).await?;
        let mut only = Vec::new();
        for s in &ctx.servers {
            match ctx.server_id(s) {
                Some(id) => only.push(id),
                None => {
                    return Err(fail(
                        &format!("{s:?} is neither a configured server nor an address"),
                        exit::USAGE,
                    ));
                }
            }
        }
        for rec in records {
            if !only.is_empty() && !only.contains(&rec.server) {
                continue;
            }
            let disabled = ctx.config.server(rec.server.as_str()).and_then(|s| {
                let why = s.disabled.as_deref()?;
                Some(extras::disabled_text(s, why))
            });
            if let Some(text) = disabled {
                say!(
                    "skipping task {}: {text}",
                    output::shown_short(rec.task_id.as_str())
                );
                continue;
            }
            // A server this process cannot reach (a stdio server another process runs,
            // the demo of another shell): answered from the ledger, as `watch ID` is.
            let spec = ctx
                .spec_for(&rec.server)
                .unwrap_or_else(|| task_ref::unreachable(ctx, &rec.server));
            targets.push((spec, rec.task_id));
        }
        if targets.is_empty() {
            let on = if only.is_empty() {
                String::new()
            } else {
                " on that server".to_string()
            };
            say!("nothing to watch: the ledger has no unfinished tasks{on}");
            return Ok(exit::COMPLETED);
        }
    } else {
        for given in &task_ids {
            match task_ref::on_server(ctx, given).await {
                Ok((spec, task)) => targets.push((spec, task.task_id)),
                Err(e) => return Err(e),
            }
        }
    }
    let mut specs: BTreeMap<ServerId, ServerSpec> = BTreeMap::new();
    for (spec, _) in &targets {
        specs.entry(spec.id.clone()).or_insert_with(|| spec.clone());
    }
    let (engine, events, join) = spawn_engine(
        specs.into_values().collect(),
        Some(ledger),
        ctx.engine_config(),
    );
    let mut follower = Follower::new(engine.clone(), Mode::Watch { json });
    for (spec, id) in targets {
        follower.add_target(spec.id.clone(), id.clone());
        engine
            .send(EngineCommand::Track {
                server: spec.id,
                task_id: id,
            })
            .await;
    }
    let code = follower.run(events).await;
    stop_engine(engine, join).await;
    Ok(code)
}

async fn stop_engine(engine: crate::engine::EngineHandle, join: tokio::task::JoinHandle<()>) {
    engine.send(EngineCommand::Shutdown).await;
    let _ = tokio::time::timeout(Duration::from_secs(3), join).await;
}
