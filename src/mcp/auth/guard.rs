//! The addresses sign-in traffic may reach: every host name an authorization request
//! connects to is resolved here (bounded by a timeout) and refused when an address is more
//! local than the MCP server itself (`address::permits`). The same resolution is reqwest's
//! DNS resolver for the sign-in client, so the addresses checked are the addresses
//! connected to (no re-resolution between the check and the connection).
//!
//! Owns: resolving and checking sign-in hosts. Must not send requests.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use url::Url;

use super::AuthError;
use super::address::{Reach, classify, permits};

/// How long one host name may take to resolve.
pub const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// Resolves a host and port to addresses (the system resolver; a fake in tests).
pub type Lookup =
    Arc<dyn Fn(String, u16) -> BoxFuture<'static, std::io::Result<Vec<SocketAddr>>> + Send + Sync>;

/// The system resolver (`getaddrinfo` through tokio).
pub fn system_lookup() -> Lookup {
    Arc::new(|host, port| {
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host.as_str(), port))
                .await?
                .collect())
        })
    })
}

/// One server's sign-in address check.
pub struct Guard {
    server_host: Option<String>,
    server_literal: Option<Reach>,
    server_reach: tokio::sync::OnceCell<Reach>,
    /// Proxy hosts the user configured (`HTTPS_PROXY`, …): reached as configured.
    proxies: Vec<String>,
    lookup: Lookup,
}

/// A host name without brackets or a trailing dot, lower-case.
fn norm(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

fn is_localhost_name(host: &str) -> bool {
    host == "localhost" || host.ends_with(".localhost")
}

/// The reach of a URL's host when it is known without resolving: an IP literal or a
/// `localhost` name.
pub fn literal_reach(u: &Url) -> Option<Reach> {
    match u.host()? {
        url::Host::Ipv4(ip) => Some(classify(ip.into()).reach),
        url::Host::Ipv6(ip) => Some(classify(ip.into()).reach),
        url::Host::Domain(d) => is_localhost_name(&norm(d)).then_some(Reach::Loopback),
    }
}

/// The hosts of the proxies reqwest takes from the environment.
fn env_proxy_hosts() -> Vec<String> {
    [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ]
    .iter()
    .filter_map(|v| std::env::var(v).ok())
    .filter_map(|p| {
        let p = p.trim();
        let full = if p.contains("://") {
            p.to_string()
        } else {
            format!("http://{p}")
        };
        Url::parse(&full).ok()?.host_str().map(norm)
    })
    .collect()
}

/// The server's reach in words, for a refusal.
fn server_words(reach: Reach) -> &'static str {
    match reach {
        Reach::Public => "the MCP server is on a public address",
        Reach::Private => "the MCP server is on a private network, not on this machine",
        Reach::Loopback => "the MCP server is on this machine",
    }
}

/// Why `ip` (reached as `host`) is refused to a server of reach `server`, or `None` when
/// it is allowed.
pub fn refusal(host: &str, ip: std::net::IpAddr, server: Reach) -> Option<String> {
    let class = classify(ip);
    if permits(server, class.reach) {
        return None;
    }
    let via = if norm(host) == ip.to_string() {
        format!("{ip} is")
    } else {
        format!("{host} resolves to {ip},")
    };
    Some(format!(
        "{via} {class}; {}, and its sign-in may not send us to a more local address",
        server_words(server)
    ))
}

impl Guard {
    pub fn new(server: &Url, lookup: Lookup) -> Guard {
        Guard {
            server_host: server.host_str().map(norm),
            server_literal: literal_reach(server),
            server_reach: tokio::sync::OnceCell::new(),
            proxies: env_proxy_hosts(),
            lookup,
        }
    }

    async fn lookup(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, AuthError> {
        match tokio::time::timeout(LOOKUP_TIMEOUT, (self.lookup)(host.to_string(), port)).await {
            Ok(Ok(addrs)) if !addrs.is_empty() => Ok(addrs),
            Ok(Ok(_)) => Err(AuthError::Network(format!(
                "host not found: {host} has no address"
            ))),
            Ok(Err(e)) => Err(AuthError::Network(format!(
                "host not found: cannot resolve {host}: {e}"
            ))),
            Err(_) => Err(AuthError::Network(format!(
                "cannot resolve {host}: no answer within {} s",
                LOOKUP_TIMEOUT.as_secs()
            ))),
        }
    }

    /// How local the MCP server is: its literal address or `localhost`, else the least
    /// local of the addresses its name resolves to (public when it does not resolve).
    pub async fn server_reach(&self) -> Reach {
        if let Some(r) = self.server_literal {
            return r;
        }
        *self
            .server_reach
            .get_or_init(|| async {
                let Some(host) = self.server_host.as_deref() else {
                    return Reach::Public;
                };
                match self.lookup(host, 0).await {
                    Ok(addrs) => addrs
                        .iter()
                        .map(|a| classify(a.ip()).reach)
                        .min()
                        .unwrap_or(Reach::Public),
                    Err(_) => Reach::Public,
                }
            })
            .await
    }

    /// Refuse `ip` (reached as `host`) when it is more local than the server.
    async fn check_ip(&self, host: &str, ip: std::net::IpAddr) -> Result<(), AuthError> {
        let server = self.server_reach().await;
        match refusal(host, ip, server) {
            Some(why) => Err(AuthError::Refused(why)),
            None => Ok(()),
        }
    }

    /// Resolve `host` and check every address; the addresses to connect to.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, AuthError> {
        let host = norm(host);
        if let Ok(ip) = host.parse::<std::net::IpAddr>() {
            self.check_ip(&host, ip).await?;
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        let addrs = self.lookup(&host, port).await?;
        // The server's own host and the user's proxies are where the user sent us.
        let exempt =
            self.server_host.as_deref() == Some(host.as_str()) || self.proxies.contains(&host);
        if !exempt {
            for a in &addrs {
                self.check_ip(&host, a.ip()).await?;
            }
        }
        Ok(addrs)
    }

    /// Check the host of `url` before a request (a request through a proxy is resolved by
    /// the proxy, so this is the only check it gets).
    pub async fn check(&self, url: &Url) -> Result<(), AuthError> {
        let Some(host) = url.host_str() else {
            return Ok(());
        };
        self.resolve(host, url.port_or_known_default().unwrap_or(443))
            .await
            .map(drop)
    }
}

/// A refusal or failure of the resolver, carried through reqwest's error chain.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub AuthError);

/// The sign-in client's DNS resolver: `Guard::resolve`.
#[derive(Clone)]
pub struct GuardedResolver(pub Arc<Guard>);

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = self.0.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            match guard.resolve(&host, 0).await {
                Ok(addrs) => Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs),
                Err(e) => Err(Box::new(Refusal(e)) as Box<dyn std::error::Error + Send + Sync>),
            }
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::net::IpAddr;

    /// A resolver that knows a few names.
    pub(crate) fn fake(names: &[(&str, &str)]) -> Lookup {
        let names: Vec<(String, IpAddr)> = names
            .iter()
            .map(|(n, ip)| (n.to_string(), ip.parse().unwrap()))
            .collect();
        Arc::new(move |host, port| {
            let found: Vec<SocketAddr> = names
                .iter()
                .filter(|(n, _)| *n == host)
                .map(|(_, ip)| SocketAddr::new(*ip, port))
                .collect();
            Box::pin(async move {
                if found.is_empty() {
                    Err(std::io::Error::other("no such host"))
                } else {
                    Ok(found)
                }
            })
        })
    }

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[tokio::test]
    async fn a_public_server_may_not_send_us_to_a_name_that_resolves_locally() {
        let names = fake(&[
            ("mcp.example.com", "93.184.216.34"),
            ("auth.example.com", "93.184.216.35"),
            ("sneaky.example.com", "127.0.0.1"),
            ("lan.example.com", "10.0.0.7"),
            ("mapped.example.com", "::ffff:192.168.1.1"),
            ("linklocal.example.com", "fe80::1"),
            // one bad address among good ones is enough to refuse
            ("mixed.example.com", "93.184.216.36"),
            ("mixed.example.com", "169.254.169.254"),
        ]);
        let g = Guard::new(&u("https://mcp.example.com/mcp"), names);
        assert_eq!(g.server_reach().await, Reach::Public);
        assert!(g.check(&u("https://auth.example.com/token")).await.is_ok());
        for (url, ip, why) in [
            ("https://sneaky.example.com/x", "127.0.0.1", "loopback"),
            ("https://lan.example.com/x", "10.0.0.7", "private"),
            (
                "https://mapped.example.com/x",
                "::ffff:192.168.1.1",
                "192.168.1.1",
            ),
            ("https://linklocal.example.com/x", "fe80::1", "link-local"),
            (
                "https://mixed.example.com/x",
                "169.254.169.254",
                "link-local",
            ),
            ("https://[::ffff:10.0.0.1]/x", "::ffff:10.0.0.1", "10.0.0.1"),
        ] {
            let Err(AuthError::Refused(text)) = g.check(&u(url)).await else {
                panic!("{url} was not refused")
            };
            assert!(text.contains(ip), "{url}: {text}");
            assert!(text.contains(why), "{url}: {text}");
            assert!(text.contains("public address"), "{url}: {text}");
        }
    }

    #[tokio::test]
    async fn local_servers_may_use_local_sign_in_hosts() {
        let names = fake(&[
            ("mcp.corp.example", "10.0.0.5"),
            ("sso.corp.example", "10.0.0.6"),
            ("sneaky.example.com", "127.0.0.1"),
            ("localhost", "127.0.0.1"),
        ]);
        // a server on a private network: private sign-in hosts, not this machine
        let corp = Guard::new(&u("https://mcp.corp.example/mcp"), names.clone());
        assert_eq!(corp.server_reach().await, Reach::Private);
        assert!(corp.check(&u("https://sso.corp.example/t")).await.is_ok());
        let Err(AuthError::Refused(text)) = corp.check(&u("https://sneaky.example.com/")).await
        else {
            panic!("a private server sent us to this machine")
        };
        assert!(text.contains("private network"), "{text}");
        // a loopback server: anything
        let local = Guard::new(&u("http://127.0.0.1:9/mcp"), names.clone());
        assert!(local.check(&u("http://localhost:1/x")).await.is_ok());
        assert!(local.check(&u("https://sso.corp.example/t")).await.is_ok());
        let local = Guard::new(&u("http://localhost:9/mcp"), names);
        assert_eq!(local.server_reach().await, Reach::Loopback);
    }

    #[tokio::test]
    async fn the_server_itself_is_not_refused_and_failures_say_why() {
        let names = fake(&[
            ("mcp.example.com", "10.0.0.5"),
            ("mcp.example.com", "8.8.8.8"),
        ]);
        let g = Guard::new(&u("https://mcp.example.com/mcp"), names);
        // least local of its addresses: public
        assert_eq!(g.server_reach().await, Reach::Public);
        assert!(
            g.check(&u("https://mcp.example.com/.well-known/x"))
                .await
                .is_ok()
        );
        let Err(AuthError::Network(text)) = g.check(&u("https://nowhere.example/")).await else {
            panic!("an unknown name resolved")
        };
        assert!(text.contains("nowhere.example"), "{text}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_lookup_that_never_answers_times_out() {
        let never: Lookup = Arc::new(|_, _| Box::pin(futures::future::pending()));
        let g = Guard::new(&u("https://93.184.216.34/mcp"), never);
        let Err(AuthError::Network(text)) = g.check(&u("https://slow.example/")).await else {
            panic!("no timeout")
        };
        assert!(text.contains("no answer within"), "{text}");
    }
}
