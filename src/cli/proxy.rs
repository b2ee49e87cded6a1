//! `taskrail proxy SERVER [--listen ADDR]`: resolves the upstream (a configured name brings
//! its headers), opens the shared ledger, and runs the proxy on stdio or on loopback HTTP.
//!
//! Must not hold proxy logic (that is `crate::proxy`); stdout belongs to the host on stdio.

use std::net::SocketAddr;

use super::args::exit;
use super::output::say;
use super::{Context, fail};
use crate::proxy::{Proxy, ProxyOptions};

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

pub async fn run(ctx: &Context, server: &str, listen: Option<&str>) -> u8 {
    let addr = match listen.map(listen_addr).transpose() {
        Ok(a) => a,
        Err(e) => return fail(&e, exit::USAGE),
    };
    let upstream = match ctx.spec(server) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let ledger = match ctx.ledger().await {
        Ok(l) => l,
        Err(code) => return code,
    };
    let listener = match addr {
        Some(a) => match tokio::net::TcpListener::bind(a).await {
            Ok(l) => Some(l),
            Err(e) => return fail(&format!("cannot listen on {a}: {e}"), exit::CONNECTION),
        },
        None => None,
    };
    let running = Proxy::start(ProxyOptions {
        upstream,
        ledger,
        engine: ctx.engine_config(),
    });
    let proxy = running.proxy.clone();
    let served = match listener {
        Some(listener) => {
            let url = listener
                .local_addr()
                .map(|a| format!("http://{a}/mcp"))
                .unwrap_or_default();
            say!("taskrail proxy: serving {url}");
            crate::proxy::serve_http(proxy, listener, stopped()).await
        }
        None => tokio::select! {
            r = crate::proxy::serve_stdio(proxy) => r,
            _ = stopped() => Ok(()),
        },
    };
    running.stop().await;
    match served {
        Ok(()) => exit::COMPLETED,
        Err(e) => fail(&format!("proxy: {e:#}"), exit::CONNECTION),
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
