//! A host's session while the upstream wants a signed-in user: the handshake is answered
//! here (so the host keeps the server instead of marking it failed), `tools/list` lists
//! nothing and every `tools/call` is a tool error naming the command that signs in. Once
//! the engine connects (a sign-in was stored, e.g. by `taskrail auth login` in another
//! shell), every 2025-era host is sent `notifications/tools/list_changed` and lists the
//! upstream's real tools.
//!
//! Owns: what a host is told while no sign-in exists. Must not decide when the sign-in is
//! missing or cured (the engine reports both, the board keeps them).

use serde_json::{Value, json};

use super::Proxy;
use super::era::{self, HostEra};
use super::host::{Answer, Ctx, Reply};
use crate::mcp::MODERN_VERSION;

/// What the session's instructions say while the sign-in is missing.
fn instructions(why: &str) -> String {
    format!(
        "taskrail proxy: no tools yet. {why}. The tools appear (notifications/tools/list_changed) \
         once the sign-in is stored; no restart is needed."
    )
}

fn server_info() -> Value {
    json!({ "name": "taskrail-proxy", "version": env!("CARGO_PKG_VERSION") })
}

/// The `initialize` result for a 2025-era host at `version`, answered here.
pub fn initialize_result(version: &str, why: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": { "tools": { "listChanged": true } },
        "serverInfo": server_info(),
        "instructions": instructions(why),
    })
}

/// The `server/discover` result for a 2026-07-28 host, answered here.
pub fn discover_result(why: &str) -> Value {
    let mut versions = vec![MODERN_VERSION];
    versions.extend(era::LEGACY_VERSIONS.iter().rev());
    json!({
        "resultType": "complete",
        "supportedVersions": versions,
        "capabilities": { "tools": { "listChanged": true } },
        "_meta": { "io.modelcontextprotocol/serverInfo": server_info() },
        "instructions": instructions(why),
        "ttlMs": 0,
        "cacheScope": "private",
    })
}

/// The empty `tools/list` result; a 2026-07-28 host is told not to keep it (`ttlMs` 0).
pub fn no_tools(era: &HostEra) -> Value {
    era::cache_hints(
        "tools/list",
        era::shape_result(json!({ "tools": [] }), era),
        era,
    )
}

/// A `tools/call` result that tells the host (and its model) what to do: a tool error,
/// which hosts show as the call's outcome, not a protocol failure.
pub fn call_result(why: &str, era: &HostEra) -> Value {
    era::shape_result(
        json!({
            "content": [{ "type": "text", "text": why }],
            "isError": true,
        }),
        era,
    )
}

impl Proxy {
    /// Why the upstream cannot be used until someone signs in, while it cannot.
    pub(super) fn wants_sign_in(&self) -> Option<String> {
        self.board.sign_in().borrow().clone()
    }

    /// The sign-in is no longer missing: every host that keeps a session learns that the
    /// tools changed (a 2026-07-28 host holds no stream to hear it on, and lists anew per
    /// request).
    pub(super) fn tools_changed(&self) {
        let msg = json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" });
        let mut told = 0;
        for host in self.hosts() {
            if host.declared().version.is_some() {
                host.notify(msg.clone());
                told += 1;
            }
        }
        tracing::info!("signed in to the upstream: {told} host(s) told its tools changed");
    }
}

/// `initialize` and `server/discover`: the upstream's (through `up`), or answered here
/// when the upstream wants a sign-in.
pub async fn handshake(ctx: &Ctx, up: impl FnOnce(&crate::mcp::ServerInfo) -> Value) -> Answer {
    match ctx.proxy.upstream().await {
        Ok(c) => Ok(up(&c.info())),
        Err(e) => {
            let why = ctx.proxy.wants_sign_in().ok_or(e)?;
            Ok(match ctx.era {
                HostEra::Modern => discover_result(&why),
                HostEra::Legacy(_) => {
                    let version = ctx.host.declared().version.unwrap_or_default();
                    initialize_result(&version, &why)
                }
            })
        }
    }
}

/// `tools/list`, `tools/call` and `ping` answered here while the upstream wants a sign-in
/// (`None`: serve them as usual). Never waits: a call that may attach to running work is
/// not held up. On a connection whose sign-in lapsed, lists and pings still go upstream,
/// while a call is answered here (the upstream would refuse it).
pub fn while_signed_out(ctx: &Ctx) -> Reply {
    if !matches!(ctx.method.as_str(), "tools/list" | "tools/call" | "ping") {
        return None;
    }
    let why = ctx.proxy.wants_sign_in()?;
    if ctx.method != "tools/call" && ctx.proxy.upstream.borrow().is_some() {
        return None;
    }
    Some(Ok(match ctx.method.as_str() {
        "tools/list" => no_tools(&ctx.era),
        "tools/call" => call_result(&why, &ctx.era),
        _ => era::shape_result(json!({}), &ctx.era),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHY: &str = "the upstream server up wants a signed-in user (no token); sign in with: \
                       taskrail auth login up";

    #[test]
    fn the_handshake_promises_tool_list_changes() {
        let init = initialize_result("2025-06-18", WHY);
        assert_eq!(init["protocolVersion"], "2025-06-18");
        assert_eq!(init["capabilities"]["tools"]["listChanged"], true);
        assert_eq!(init["serverInfo"]["name"], "taskrail-proxy");
        let text = init["instructions"].as_str().unwrap();
        assert!(text.contains("taskrail auth login up"), "{text}");
        let discover = discover_result(WHY);
        assert_eq!(discover["capabilities"]["tools"]["listChanged"], true);
        assert_eq!(discover["supportedVersions"][0], MODERN_VERSION);
    }

    #[test]
    fn a_call_is_a_tool_error_naming_the_command() {
        let legacy = call_result(WHY, &HostEra::Legacy("2025-11-25".into()));
        assert_eq!(legacy["isError"], true);
        assert!(legacy.get("resultType").is_none());
        assert!(
            legacy["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("taskrail auth login up")
        );
        let modern = call_result(WHY, &HostEra::Modern);
        assert_eq!(modern["resultType"], "complete");
        let listed = no_tools(&HostEra::Modern);
        assert_eq!(
            (&listed["ttlMs"], &listed["cacheScope"]),
            (&json!(0), &json!("private"))
        );
        assert!(
            no_tools(&HostEra::Legacy("2025-06-18".into()))
                .get("ttlMs")
                .is_none()
        );
    }
}
