//! `taskrail proxy SERVER [--listen ADDR]`: resolves the upstream (a configured name brings
//! its headers), opens the shared ledger, and runs the proxy on stdio or on loopback HTTP;
//! `taskrail proxy token` prints a listener host's token.
//!
//! Must not hold proxy logic (that is `crate::proxy`); stdout belongs to the host on stdio.

use std::net::SocketAddr;

use super::args::{ProxyAction, ProxyArgs, exit};
use super::output::{out, say};
use super::{CliResult, Context, fail};
use crate::ledger::parse_duration;
use crate::proxy::tokens::{self, Tokens};
use crate::proxy::{Listener, Proxy, ProxyOptions};

/// The address to listen on: loopback only (the proxy carries the upstream's credentials).
fn listen_addr(spec: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = spec
        .parse()
        .map_err(|_| format!("--listen {spec:?} is not an address like 127.0.0.1:8808"))?;
    if !addr.ip().is_loopback() {
        return Err(format!(
            "--listen {addr} refused: the proxy serves only loopback addresses (it acts with \
             the upstream's credentials)"
        ));
    }
    Ok(addr)
}

/// SIGINT or SIGTERM: stop, giving the leases up so a dashboard takes the tasks over.
async fn stopped() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

/// The listener's token file, beside the ledger.
fn token_file(ctx: &Context) -> CliResult<Tokens> {
    Ok(Tokens::at(tokens::file_for(&ctx.ledger_path()?)))
}

/// `taskrail proxy token`: print the host's token.
fn token(ctx: &Context, host: &str, rotate: bool) -> CliResult {
    let tokens = token_file(ctx)?;
    match tokens.issue(host, rotate) {
        Ok(t) => {
            let _ = out!("{t}");
            Ok(exit::COMPLETED)
        }
        Err(e) => Err(fail(&format!("proxy token: {e:#}"), exit::USAGE)),
    }
}

fn duration(flag: &str, value: &str) -> CliResult<std::time::Duration> {
    parse_duration(value).map_err(|e| fail(&format!("{flag}: {e:#}"), exit::USAGE))
}

pub async fn run(ctx: &Context, args: ProxyArgs) -> CliResult {
    if let Some(ProxyAction::Token { host, rotate }) = &args.action {
        return token(ctx, host, *rotate);
    }
    let Some(server) = args.server.as_deref() else {
        return Err(fail(
            "taskrail proxy needs SERVER (a name, a URL or stdio:<command>)",
            exit::USAGE,
        ));
    };
    let addr = match args.listen.as_deref().map(listen_addr).transpose() {
        Ok(a) => a,
        Err(e) => return Err(fail(&e, exit::USAGE)),
    };
    let given = args
        .answer_within
        .as_deref()
        .map(|v| ("--answer-within", v.to_string()))
        .or_else(|| {
            let c = ctx.config.proxy.answer_within.clone()?;
            Some(("config [proxy] answer_within", c))
        });
    let answer_within = match given.map(|(what, v)| duration(what, &v)) {
        Some(Err(code)) => return Err(code),
        Some(Ok(d)) => Some(d),
        None => None,
    };
    let (track_after, detach_limit) = match (
        duration("--track-after", &args.track_after),
        duration("--detach-limit", &args.detach_limit),
    ) {
        (Ok(t), Ok(d)) => (t, d),
        (Err(code), _) | (_, Err(code)) => return Err(code),
    };
    let mut answer_within_for = std::collections::HashMap::new();
    for (host, v) in &ctx.config.proxy.hosts {
        match duration(&format!("config [proxy.hosts.{host}] answer_within"), v) {
            Ok(d) => answer_within_for.insert(host.clone(), d),
            Err(e) => return Err(e),
        };
    }
    let listener_opts = match (addr, duration("--session-idle", &args.session_idle)) {
        (None, _) => None,
        (Some(_), Err(e)) => return Err(e),
        (Some(_), Ok(idle)) => match token_file(ctx) {
            Ok(tokens) => Some(Listener {
                max_body: args.max_body.max(1024),
                session_idle: idle,
                max_sessions: args.max_sessions.max(1),
                ..Listener::new(tokens)
            }),
            Err(e) => return Err(e),
        },
    };
    let mut upstream = ctx.spec(server)?;
    super::proxy_headers::apply(&mut upstream)?;
    let ledger = ctx.ledger().await?;
    let listener = match addr {
        Some(a) => match tokio::net::TcpListener::bind(a).await {
            Ok(l) => Some(l),
            Err(e) => {
                return Err(fail(
                    &format!("cannot listen on {a}: {e}"),
                    exit::CONNECTION,
                ));
            }
        },
        None => None,
    };
    let running = Proxy::start(ProxyOptions {
        upstream,
        ledger,
        engine: ctx.engine_config(),
        answer_within,
        answer_within_for,
        reattach: !args.no_reattach,
        track_after,
    });
    let proxy = running.proxy.clone();
    let served = match listener.zip(listener_opts) {
        Some((listener, opts)) => {
            let url = listener
                .local_addr()
                .map(|a| format!("http://{a}/mcp"))
                .unwrap_or_default();
            say!("taskrail proxy: serving {url}");
            crate::proxy::serve_http(proxy, listener, opts, stopped()).await
        }
        None => {
            let mut stop = std::pin::pin!(stopped());
            let served = tokio::select! {
                r = crate::proxy::serve_stdio(proxy.clone()) => r,
                _ = &mut stop => Ok(()),
            };
            // The host went away: calls still running finish first (bounded), so their
            // results reach the ledger and a retry from the host's next proxy gets them.
            let running_calls = proxy.calls_running();
            if running_calls > 0 {
                tracing::info!(
                    "the client went away with {running_calls} call(s) running: waiting for them (at most {} s)",
                    detach_limit.as_secs()
                );
                tokio::select! {
                    _ = proxy.calls_ended(detach_limit) => {}
                    _ = &mut stop => {}
                }
            }
            served
        }
    };
    running.stop().await;
    match served {
        Ok(()) => Ok(exit::COMPLETED),
        Err(e) => Err(fail(&format!("proxy: {e:#}"), exit::CONNECTION)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listens_on_loopback_only() {
        assert!(listen_addr("127.0.0.1:0").is_ok());
        assert!(listen_addr("[::1]:8808").is_ok());
        assert!(
            listen_addr("0.0.0.0:8808")
                .unwrap_err()
                .contains("loopback")
        );
        assert!(listen_addr("localhost").is_err());
    }
}
