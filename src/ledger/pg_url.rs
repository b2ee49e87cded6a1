//! A PostgreSQL ledger's address, read by libpq's rules: the URL
//! `postgres[ql]://[user[:password]@][host][:port][,host[:port]…][/dbname][?param=value&…]`
//! (parameters `host`, `port`, `user`, `password`, `dbname`, `sslmode`, `sslrootcert`,
//! `channel_binding`, `options`, `application_name`, `connect_timeout`), then libpq's
//! environment (`PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGSSLMODE`, `PGSSLROOTCERT`,
//! `PGCHANNELBINDING`, `PGOPTIONS`, `PGPASSWORD`) and `~/.pgpass` (`PGPASSFILE`) for what
//! the URL leaves out.
//!
//! Owns parsing and resolution only (no driver): the backend turns a [`Resolved`] into a
//! connection. The password is a secret: `Display` and `Debug` show `***` in its place.

use std::fmt;
use std::path::{Path, PathBuf};

/// How the connection may use TLS (libpq's `sslmode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SslMode {
    Disable,
    Allow,
    #[default]
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(s: &str) -> Result<SslMode, String> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode {other:?} is not one of disable, allow, prefer, require, verify-ca, verify-full"
                ));
            }
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// Whether this mode refuses a connection without TLS.
    pub fn needs_tls(self) -> bool {
        matches!(
            self,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
        )
    }
}

/// Whether SCRAM authentication binds to the TLS channel (libpq's `channel_binding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChannelBinding {
    Disable,
    #[default]
    Prefer,
    Require,
}

impl ChannelBinding {
    fn parse(s: &str) -> Result<ChannelBinding, String> {
        Ok(match s {
            "disable" => ChannelBinding::Disable,
            "prefer" => ChannelBinding::Prefer,
            "require" => ChannelBinding::Require,
            other => {
                return Err(format!(
                    "channel_binding {other:?} is not one of disable, prefer, require"
                ));
            }
        })
    }
}

/// A `postgres://` URL as written (nothing from the environment yet).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct PgUrl {
    /// Host names, addresses or (starting with `/`) Unix socket directories.
    pub hosts: Vec<String>,
    /// One port, or one per host.
    pub ports: Vec<u16>,
    pub user: Option<String>,
    password: Option<String>,
    pub dbname: Option<String>,
    pub sslmode: Option<SslMode>,
    /// The CA certificates (PEM file) a server's certificate must chain to, or `system`.
    pub sslrootcert: Option<String>,
    pub channel_binding: Option<ChannelBinding>,
    /// Server options, e.g. `-c role=alice`.
    pub options: Option<String>,
    pub application_name: Option<String>,
    pub connect_timeout: Option<u64>,
}

/// Everything needed to connect: the URL completed from the environment and `~/.pgpass`.
#[derive(Clone, PartialEq, Eq)]
pub struct Resolved {
    pub hosts: Vec<String>,
    pub ports: Vec<u16>,
    pub user: String,
    pub password: Option<String>,
    pub dbname: String,
    pub sslmode: SslMode,
    /// `sslrootcert` as given (URL, then `PGSSLROOTCERT`); `None`: libpq's default
    /// `~/.postgresql/root.crt`.
    pub sslrootcert: Option<String>,
    pub channel_binding: ChannelBinding,
    pub options: Option<String>,
    pub application_name: Option<String>,
    pub connect_timeout: Option<u64>,
}

impl fmt::Debug for Resolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resolved")
            .field("hosts", &self.hosts)
            .field("ports", &self.ports)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("dbname", &self.dbname)
            .field("sslmode", &self.sslmode)
            .field("sslrootcert", &self.sslrootcert)
            .finish()
    }
}

/// Percent-decode one URL component.
fn decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("a bad %-escape in the PostgreSQL URL")?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "the PostgreSQL URL decodes to invalid UTF-8".to_string())
}

fn port(s: &str) -> Result<u16, String> {
    s.parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("port {s:?} in the PostgreSQL URL is not a port number"))
}

impl PgUrl {
    /// Parse a `postgres://` or `postgresql://` URL (libpq's connection URI).
    pub fn parse(text: &str) -> Result<PgUrl, String> {
        let (scheme, rest) = text.split_once("://").ok_or("not a URL")?;
        if !matches!(
            scheme.to_ascii_lowercase().as_str(),
            "postgres" | "postgresql"
        ) {
            return Err(format!("{scheme}:// is not a PostgreSQL URL"));
        }
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (netloc, path) = match rest.split_once('/') {
            Some((n, p)) => (n, Some(p)),
            None => (rest, None),
        };
        let mut url = PgUrl::default();
        let hostspec = match netloc.rsplit_once('@') {
            Some((userinfo, hosts)) => {
                let (user, password) = match userinfo.split_once(':') {
                    Some((u, p)) => (u, Some(p)),
                    None => (userinfo, None),
                };
                url.user = Some(decode(user)?).filter(|u| !u.is_empty());
                url.password = password.map(decode).transpose()?;
                hosts
            }
            None => netloc,
        };
        for one in hostspec.split(',').filter(|h| !h.is_empty()) {
            let (host, p) = if let Some(v6) = one.strip_prefix('[') {
                let (addr, after) = v6
                    .split_once(']')
                    .ok_or("an unclosed [ in the PostgreSQL URL")?;
                (addr.to_string(), after.strip_prefix(':'))
            } else {
                match one.split_once(':') {
                    Some((h, p)) => (decode(h)?, Some(p)),
                    None => (decode(one)?, None),
                }
            };
            if !host.is_empty() {
                url.hosts.push(host);
            }
            if let Some(p) = p.filter(|p| !p.is_empty()) {
                url.ports.push(port(p)?);
            }
        }
        if let Some(db) = path.filter(|p| !p.is_empty()) {
            url.dbname = Some(decode(db)?);
        }
        for pair in query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter(|p| !p.is_empty())
        {
            let (key, value) = pair.split_once('=').ok_or_else(|| {
                format!(
                    "parameter {:?} in the PostgreSQL URL has no value",
                    decode(pair).unwrap_or_default()
                )
            })?;
            let value = decode(value)?;
            match decode(key)?.as_str() {
                "host" | "hostaddr" => url.hosts = value.split(',').map(str::to_string).collect(),
                "port" => url.ports = value.split(',').map(port).collect::<Result<_, _>>()?,
                "user" => url.user = Some(value),
                "password" => url.password = Some(value),
                "dbname" => url.dbname = Some(value),
                "sslmode" => url.sslmode = Some(SslMode::parse(&value)?),
                "sslrootcert" => url.sslrootcert = Some(value),
                "channel_binding" => {
                    url.channel_binding = Some(ChannelBinding::parse(&value)?);
                }
                "options" => url.options = Some(value),
                "application_name" => url.application_name = Some(value),
                "connect_timeout" => {
                    url.connect_timeout = Some(value.parse().map_err(|_| {
                        format!("connect_timeout {value:?} is not a number of seconds")
                    })?)
                }
                other => {
                    return Err(format!(
                        "the PostgreSQL URL parameter {other:?} is not one taskrail knows \
                         (host, port, user, password, dbname, sslmode, sslrootcert, \
                         channel_binding, options, application_name, connect_timeout)"
                    ));
                }
            }
        }
        if url.ports.len() > 1 && url.ports.len() != url.hosts.len().max(1) {
            return Err("the PostgreSQL URL gives more ports than hosts".into());
        }
        Ok(url)
    }

    /// Whether the URL itself carries a password.
    pub fn has_password(&self) -> bool {
        self.password.is_some()
    }

    /// Complete the URL from libpq's environment variables (`env` looks one up) and the
    /// password file: what the URL says wins.
    pub fn resolve(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
        home: Option<&Path>,
    ) -> Result<Resolved, String> {
        let env = |k: &str| env(k).filter(|v| !v.is_empty());
        let hosts = if self.hosts.is_empty() {
            env("PGHOST")
                .map(|h| h.split(',').map(str::to_string).collect())
                .unwrap_or_else(|| vec!["/var/run/postgresql".to_string()])
        } else {
            self.hosts.clone()
        };
        let ports = if self.ports.is_empty() {
            match env("PGPORT") {
                Some(p) => p.split(',').map(port).collect::<Result<_, _>>()?,
                None => vec![5432],
            }
        } else {
            self.ports.clone()
        };
        let user = match self
            .user
            .clone()
            .or_else(|| env("PGUSER"))
            .or_else(|| env("USER"))
        {
            Some(u) => u,
            None => return Err("the PostgreSQL URL names no user (and PGUSER is not set)".into()),
        };
        let dbname = self
            .dbname
            .clone()
            .or_else(|| env("PGDATABASE"))
            .unwrap_or_else(|| user.clone());
        let sslmode = match self.sslmode {
            Some(m) => m,
            None => env("PGSSLMODE")
                .map(|m| SslMode::parse(&m))
                .transpose()?
                .unwrap_or_default(),
        };
        let mut resolved = Resolved {
            hosts,
            ports,
            user,
            password: self.password.clone().or_else(|| env("PGPASSWORD")),
            dbname,
            sslmode,
            sslrootcert: self.sslrootcert.clone().or_else(|| env("PGSSLROOTCERT")),
            channel_binding: match self.channel_binding {
                Some(b) => b,
                None => env("PGCHANNELBINDING")
                    .map(|b| ChannelBinding::parse(&b))
                    .transpose()?
                    .unwrap_or_default(),
            },
            options: self.options.clone().or_else(|| env("PGOPTIONS")),
            application_name: self.application_name.clone(),
            connect_timeout: self
                .connect_timeout
                .or_else(|| env("PGCONNECT_TIMEOUT").and_then(|t| t.parse().ok())),
        };
        if resolved.password.is_none() {
            let file = env("PGPASSFILE")
                .map(PathBuf::from)
                .or_else(|| home.map(|h| h.join(".pgpass")));
            if let Some(file) = file {
                resolved.password = pgpass_lookup(&file, &resolved);
            }
        }
        Ok(resolved)
    }

    /// Resolve against this process's environment and home directory.
    pub fn resolve_here(&self) -> Result<Resolved, String> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        self.resolve(&|k| std::env::var(k).ok(), home.as_deref())
    }
}

/// One `~/.pgpass` field: `*` matches anything; `\:` and `\\` are escapes.
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        let c = match c {
            '\\' => match chars.next() {
                Some(n) => n,
                None => break,
            },
            ':' if fields.len() < 5 => {
                fields.push(String::new());
                continue;
            }
            c => c,
        };
        if let Some(f) = fields.last_mut() {
            f.push(c);
        }
    }
    fields
}

/// The password `~/.pgpass` gives for the first host, as libpq reads it; a file others
/// may read is ignored (libpq's rule).
fn pgpass_lookup(file: &Path, to: &Resolved) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(file).ok()?;
        if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
            return None;
        }
    }
    let text = std::fs::read_to_string(file).ok()?;
    let host = to.hosts.first().map(String::as_str).unwrap_or("localhost");
    let host = if host.starts_with('/') {
        "localhost"
    } else {
        host
    };
    let port = to.ports.first().copied().unwrap_or(5432).to_string();
    let want = [host, port.as_str(), to.dbname.as_str(), to.user.as_str()];
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(pgpass_fields)
        .filter(|f| f.len() == 5)
        .find(|f| {
            f.iter()
                .zip(want)
                .all(|(have, want)| have == "*" || have == want)
        })
        .map(|mut f| f.swap_remove(4))
}

/// A query value as the URL writes it back.
fn escape(value: &str) -> String {
    value
        .chars()
        .map(|c| match c {
            ' ' => "%20".to_string(),
            '=' => "%3D".to_string(),
            '&' => "%26".to_string(),
            '%' => "%25".to_string(),
            c => c.to_string(),
        })
        .collect()
}

impl fmt::Display for PgUrl {
    /// The URL with its password replaced by `***`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("postgresql://")?;
        if let Some(user) = &self.user {
            f.write_str(user)?;
        }
        if self.password.is_some() {
            f.write_str(":***")?;
        }
        if self.user.is_some() || self.password.is_some() {
            f.write_str("@")?;
        }
        for (i, host) in self.hosts.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if host.contains(':') {
                write!(f, "[{host}]")?;
            } else {
                f.write_str(host)?;
            }
            if let Some(p) = self
                .ports
                .get(i)
                .or(self.ports.first().filter(|_| self.ports.len() == 1))
            {
                write!(f, ":{p}")?;
            }
        }
        if let Some(db) = &self.dbname {
            write!(f, "/{db}")?;
        }
        let mut sep = '?';
        if let Some(mode) = self.sslmode {
            write!(f, "{sep}sslmode={}", mode.as_str())?;
            sep = '&';
        }
        if let Some(root) = &self.sslrootcert {
            write!(f, "{sep}sslrootcert={}", escape(root))?;
            sep = '&';
        }
        if let Some(binding) = self.channel_binding {
            let binding = match binding {
                ChannelBinding::Disable => "disable",
                ChannelBinding::Prefer => "prefer",
                ChannelBinding::Require => "require",
            };
            write!(f, "{sep}channel_binding={binding}")?;
            sep = '&';
        }
        if let Some(options) = &self.options {
            write!(f, "{sep}options={}", escape(options))?;
        }
        Ok(())
    }
}

impl fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgUrl({self})")
    }
}

#[cfg(test)]
#[path = "pg_url_tests.rs"]
mod tests;
