//! `taskrail auth login|logout|status`: signing in headless. `login` connects with the
//! interactive flow allowed (the browser opens, or `--no-browser` prints the URL; a pasted
//! redirect URL on standard input works too, for SSH sessions); `logout` forgets a
//! server's sign-in; `status` lists what the token store holds.
//!
//! Owns: these commands' wiring and output. Must not print a token or a secret.

use serde_json::json;
use std::sync::Arc;
use tokio::io::AsyncBufReadExt as _;
use tokio::sync::mpsc;

use std::fmt::Write as _;

use super::args::{AuthCommand, exit};
use super::output::{finish, say};
use super::{CliResult, Context, connect_failure_at, fail};
use crate::engine::ServerSpec;
use crate::mcp::auth::{Authorizer, Prompt, Prompter, SignInStatus};
use crate::mcp::{Endpoint, McpClient};
use crate::sanitize::sanitize_line;

pub async fn run(ctx: &Context, cmd: AuthCommand) -> CliResult {
    match cmd {
        AuthCommand::Login { server, no_browser } => login(ctx, &server, no_browser).await,
        AuthCommand::Logout { server } => logout(ctx, &server).await,
        AuthCommand::Status { json } => status(ctx, json).await,
    }
}

/// The spec and authorizer of an HTTP server named on the command line.
fn resolve(ctx: &Context, server: &str) -> CliResult<(ServerSpec, Arc<Authorizer>)> {
    let spec = ctx.spec(server)?;
    if let Endpoint::Stdio { .. } = spec.endpoint {
        return Err(fail(
            &format!(
                "{}: a stdio server takes its credentials from its environment",
                spec.id
            ),
            exit::USAGE,
        ));
    }
    match spec.options.auth.clone() {
        Some(a) => Ok((spec, a)),
        None => Err(fail(
            &format!("{}: no sign-in for this server", spec.id),
            exit::USAGE,
        )),
    }
}

/// Lines typed on standard input (a pasted redirect URL), while the sign-in waits.
fn stdin_pastes() -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if !line.trim().is_empty() && tx.send(line).await.is_err() {
                break;
            }
        }
    });
    rx
}

fn announce(server: String) -> impl Fn(Prompt) + Send + Sync + 'static {
    move |p| match p {
        Prompt::Ready(a) => {
            let url = sanitize_line(&a.url, 4000);
            if a.browser_opened {
                say!("Opening the browser to sign in to {server}. If it does not open, visit:");
            } else {
                if let Some(e) = &a.browser_error {
                    say!("(no browser: {})", sanitize_line(e, 200));
                }
                say!("Open this URL in a browser to sign in to {server}:");
            }
            say!("\n  {url}\n");
            say!(
                "Waiting for the sign-in. If the browser runs on another machine, it ends on a \
                 page that does not load: paste that page's address here and press Enter."
            );
        }
        Prompt::Ignored(why) => say!("{}", sanitize_line(&why, 200)),
    }
}

async fn login(ctx: &Context, server: &str, no_browser: bool) -> CliResult {
    let (mut spec, auth) = resolve(ctx, server)?;
    // The first request waits for the person in the browser.
    spec.options.request_timeout = crate::mcp::auth::SIGN_IN_TIMEOUT + spec.options.request_timeout;
    let started = std::time::Instant::now();
    let had = auth
        .status()
        .await
        .ok()
        .flatten()
        .is_some_and(|s| s.signed_in);
    let ui = Prompter::new(
        !no_browser,
        announce(spec.id.to_string()),
        Some(stdin_pastes()),
    );
    auth.set_interaction(Some(ui));
    let result = McpClient::connect(spec.endpoint.clone(), spec.options.clone()).await;
    auth.set_interaction(None);
    let client = match result {
        Ok((c, _)) => c,
        Err(e) => return Err(connect_failure_at(&spec, &e).await),
    };
    client.close().await;
    match auth.status().await {
        Ok(Some(s)) if s.signed_in => {
            let verb = if had {
                "already signed in to"
            } else {
                "signed in to"
            };
            say!(
                "{verb} {} (issuer {}){}",
                spec.id,
                sanitize_line(&s.issuer, 200),
                if had {
                    String::new()
                } else {
                    format!(" in {:.1} s", started.elapsed().as_secs_f64())
                }
            );
            say!("kept in {}", ctx.tokens.describe().await);
            Ok(exit::COMPLETED)
        }
        Ok(_) => {
            say!("{} did not ask for a sign-in: nothing to do", spec.id);
            Ok(exit::COMPLETED)
        }
        Err(e) => Err(fail(&e.to_string(), exit::CONNECTION)),
    }
}

async fn logout(ctx: &Context, server: &str) -> CliResult {
    let (spec, auth) = resolve(ctx, server)?;
    match auth.sign_out().await {
        Ok(true) => {
            say!(
                "signed out of {} (removed from {})",
                spec.id,
                ctx.tokens.describe().await
            );
            Ok(exit::COMPLETED)
        }
        Ok(false) => {
            say!("{} has no sign-in", spec.id);
            Ok(exit::COMPLETED)
        }
        Err(e) => Err(fail(&e.to_string(), exit::CONNECTION)),
    }
}

fn describe(s: &Option<SignInStatus>, now: i64) -> String {
    let Some(s) = s else {
        return "not signed in".into();
    };
    if !s.signed_in {
        return format!("signed out (issuer {})", sanitize_line(&s.issuer, 120));
    }
    let expiry = match s.expires_at {
        Some(at) if at <= now => "expired".to_string(),
        Some(at) => format!(
            "expires in {}",
            crate::state::time::short_duration(chrono::TimeDelta::seconds(at - now))
        ),
        None => "no expiry given".to_string(),
    };
    format!(
        "signed in  issuer {}  {expiry}{}{}",
        sanitize_line(&s.issuer, 120),
        if s.refreshable { "  renewable" } else { "" },
        if s.scopes.is_empty() {
            String::new()
        } else {
            format!("  scopes {}", sanitize_line(&s.scopes.join(" "), 200))
        }
    )
}

async fn status(ctx: &Context, json: bool) -> CliResult {
    let mut names: Vec<String> = ctx
        .config
        .servers
        .iter()
        .filter(|s| matches!(s.target, crate::config::Target::Url(_)))
        .map(|s| s.name.clone())
        .collect();
    for s in &ctx.servers {
        if !names.contains(s) {
            names.push(s.clone());
        }
    }
    let now = chrono::Utc::now().timestamp();
    let mut code = exit::COMPLETED;
    let mut rows = Vec::new();
    for name in &names {
        let (spec, auth) = match resolve(ctx, name) {
            Ok(x) => x,
            Err(c) => {
                code = c.report();
                continue;
            }
        };
        match auth.status().await {
            Ok(s) => rows.push((spec.id.to_string(), auth.key().to_string(), s)),
            Err(e) => code = fail(&format!("{}: {e}", spec.id), exit::CONNECTION).report(),
        }
    }
    // Sign-ins the store holds for servers neither the config nor --server names.
    match ctx.tokens.keys().await {
        Ok(keys) => {
            for key in keys {
                if rows.iter().any(|(_, k, _)| *k == key) {
                    continue;
                }
                match resolve(ctx, &key) {
                    Ok((spec, auth)) if auth.key() == key => match auth.status().await {
                        Ok(s) => rows.push((spec.id.to_string(), key, s)),
                        Err(e) => code = fail(&format!("{key}: {e}"), exit::CONNECTION).report(),
                    },
                    _ => say!(
                        "the token store holds an entry this taskrail cannot read: {}",
                        sanitize_line(&key, 200)
                    ),
                }
            }
        }
        Err(e) => code = fail(&e.to_string(), exit::CONNECTION).report(),
    }
    let mut text = String::new();
    if json {
        for (name, key, s) in &rows {
            let line = match s {
                Some(s) => json!({
                    "server": name, "url": key, "signedIn": s.signed_in, "issuer": s.issuer,
                    "clientId": s.client_id, "scopes": s.scopes, "expiresAt": s.expires_at,
                    "renewable": s.refreshable,
                }),
                None => json!({ "server": name, "url": key, "signedIn": false }),
            };
            text.push_str(&crate::sanitize::json_line(&line));
            text.push('\n');
        }
    } else {
        if rows.is_empty() {
            text.push_str("no HTTP servers: configure some, or name them with --server URL\n");
        }
        let width = rows
            .iter()
            .map(|(n, _, _)| n.chars().count())
            .max()
            .unwrap_or(0)
            .min(60);
        for (name, _, s) in &rows {
            let _ = writeln!(
                text,
                "{:<width$}  {}",
                sanitize_line(name, 60),
                describe(s, now)
            );
        }
        let _ = writeln!(text, "sign-ins are kept in {}", ctx.tokens.describe().await);
    }
    Ok(finish(&text, code))
}
