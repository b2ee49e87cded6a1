//! `taskrail hosts [list|wrap|unwrap]`: finds the agent hosts' MCP configuration files under
//! HOME and in the current directory, lists their servers, and rewrites chosen entries so the
//! host starts `taskrail proxy` in front of them (or puts the originals back). `--dry-run`
//! prints a unified diff instead of writing.
//!
//! Owns file I/O for host files: bounded reads, atomic replacement (temp file in the same
//! directory, fsync, rename) keeping the permission bits, and refusing a file that changed
//! while it was being edited. Must not parse or patch host formats (that is
//! `config::hosts`); every host-supplied string printed goes through `sanitize`.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use serde_json::json;

use super::args::{HostsCommand, HostsTarget, exit};
use super::output::out;
use super::{CliResult, Context, fail};
use crate::config::hosts::{self, Host, HostFile, Kind, Outcome, Proxy, Scope};
use crate::sanitize::sanitize_line;

/// The largest host file read (Claude Code's `~/.claude.json` also keeps history).
const MAX_HOST_FILE: u64 = 64 * 1024 * 1024;

/// Wrap or unwrap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Wrap,
    Unwrap,
}

pub fn run(ctx: &Context, command: Option<HostsCommand>, json: bool) -> CliResult {
    match command {
        None => list(json),
        Some(HostsCommand::List { json: j }) => list(json || j),
        Some(HostsCommand::Wrap(target)) => edit(ctx, target, Mode::Wrap),
        Some(HostsCommand::Unwrap(target)) => edit(ctx, target, Mode::Unwrap),
    }
}

fn shown(s: &str) -> String {
    sanitize_line(s, 300)
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// Every host file that exists here.
fn found_files() -> CliResult<Vec<HostFile>> {
    let project = std::env::current_dir().map_err(|e| {
        fail(
            &format!("cannot read the current directory: {e}"),
            exit::USAGE,
        )
    })?;
    Ok(hosts::host_files(home().as_deref(), &project, |p| {
        p.is_file()
    }))
}

fn read_host_file(path: &Path) -> Result<String, String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_HOST_FILE + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_HOST_FILE {
        return Err(format!(
            "{}: larger than {} MiB, left alone",
            path.display(),
            MAX_HOST_FILE >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}

/// What a listing says of an entry's target: the upstream of a wrapped one, else its
/// command line or (redacted) URL.
fn target_of(server: &hosts::Server) -> String {
    let redact = crate::mcp::endpoint::redact_url;
    if server.stash.is_some() {
        return match hosts::wrapped_upstream(server) {
            Some(u) if u.starts_with("stdio:") => u.to_string(),
            Some(u) => redact(u),
            None => String::new(),
        };
    }
    match server.kind {
        Kind::Stdio => shlex::try_join(server.argv.iter().map(String::as_str))
            .unwrap_or_else(|_| server.argv.join(" ")),
        _ => server.url.as_deref().map(redact).unwrap_or_default(),
    }
}

/// The kind a listing shows: a wrapped entry's upstream kind.
fn kind_of(server: &hosts::Server) -> &str {
    match (server.stash.is_some(), hosts::wrapped_upstream(server)) {
        (true, Some(u)) if u.starts_with("stdio:") => "stdio",
        (true, Some(_)) => "http",
        _ => server.kind.name(),
    }
}

fn list(json: bool) -> CliResult {
    let files = found_files()?;
    let mut code = exit::COMPLETED;
    if files.is_empty() && !json {
        let _ = out!("no MCP host configuration files found (HOME and this directory)");
    }
    for file in files {
        let path = file.path.display().to_string();
        let entries = read_host_file(&file.path).and_then(|text| {
            hosts::read_entries(file.host, &file.path, &text).map_err(|e| format!("{path}: {e}"))
        });
        let entries = match entries {
            Ok(e) => e,
            Err(e) => {
                code = fail(&e, exit::USAGE).report();
                continue;
            }
        };
        if !json {
            let _ = out!(
                "{} ({}) {}",
                file.host.name(),
                file.scope.name(),
                shown(&path)
            );
        }
        for entry in entries {
            let server = hosts::read(file.host, &entry.value);
            let through = server.stash.is_some();
            if json {
                let line = json!({
                    "host": file.host.name(),
                    "file": path,
                    "scope": file.scope.name(),
                    "project": entry.scope,
                    "server": entry.name,
                    "kind": kind_of(&server),
                    "throughTaskrail": through,
                    "target": target_of(&server),
                    "line": entry.line,
                    "cannotWrap": if through { None } else { server.refused.clone() },
                });
                if out!("{}", crate::sanitize::json_line(&line)).is_err() {
                    return Ok(code);
                }
                continue;
            }
            let status = match (&server.refused, through) {
                (_, true) => "through taskrail".to_string(),
                (Some(why), false) => format!("cannot wrap: {why}"),
                (None, false) => "not wrapped".to_string(),
            };
            let name = match &entry.scope {
                Some(project) => format!("{} [{}]", entry.name, project),
                None => entry.name.clone(),
            };
            let line = out!(
                "  {:<20} {:<6} {:<16} {}",
                shown(&name),
                kind_of(&server),
                status,
                shown(&target_of(&server))
            );
            if line.is_err() {
                return Ok(code);
            }
        }
    }
    Ok(code)
}

/// The files and servers a wrap/unwrap is about.
fn targets(target: &HostsTarget) -> CliResult<(Vec<HostFile>, Vec<String>)> {
    let mut words = target.targets.clone();
    let host = match words.first().and_then(|w| Host::from_name(w)) {
        Some(h) => {
            words.remove(0);
            Some(h)
        }
        None => None,
    };
    if let Some(file) = &target.file {
        let Some(host) = host.or_else(|| Host::guess(file)) else {
            return Err(fail(
                &format!(
                    "cannot tell which host {} belongs to; name it first: taskrail hosts wrap \
                     HOST --file FILE (hosts: {})",
                    file.display(),
                    Host::ALL.map(Host::name).join(", ")
                ),
                exit::USAGE,
            ));
        };
        let path = std::path::absolute(file).unwrap_or_else(|_| file.clone());
        return Ok((
            vec![HostFile {
                host,
                path,
                scope: Scope::User,
            }],
            words,
        ));
    }
    let files = found_files()?
        .into_iter()
        .filter(|f| host.is_none_or(|h| f.host == h))
        .collect();
    Ok((files, words))
}

/// What a wrapped entry runs: this binary and this invocation's ledger, as absolute paths.
fn proxy(ctx: &Context) -> CliResult<Proxy> {
    let exe = std::env::current_exe().map_err(|e| {
        fail(
            &format!("cannot find the taskrail binary: {e}"),
            exit::USAGE,
        )
    })?;
    let text = |p: &Path, what: &str| {
        p.to_str()
            .map(str::to_string)
            .ok_or_else(|| fail(&format!("the {what} path is not UTF-8"), exit::USAGE))
    };
    let db = match ctx.ledger_location()? {
        crate::ledger::Location::File(db) => {
            text(&std::path::absolute(&db).unwrap_or(db), "ledger")?
        }
        // A host's config file is no place for a password: PGPASSWORD or ~/.pgpass is.
        crate::ledger::Location::Postgres(url) if url.has_password() => {
            return Err(fail(
                "the PostgreSQL URL carries a password, which would be written into the host's \
                 config file",
                exit::USAGE,
            )
            .advise("put the password in ~/.pgpass (or PGPASSWORD) and give the URL without it"));
        }
        crate::ledger::Location::Postgres(url) => url.to_string(),
    };
    Ok(Proxy {
        exe: text(&exe, "taskrail binary")?,
        db,
    })
}

fn edit(ctx: &Context, target: HostsTarget, mode: Mode) -> CliResult {
    let (files, servers) = targets(&target)?;
    let proxy = match mode {
        Mode::Wrap => match proxy(ctx) {
            Ok(p) => Some(p),
            Err(e) => return Err(e),
        },
        Mode::Unwrap => None,
    };
    if files.is_empty() {
        return Err(fail(
            "no MCP host configuration file found (HOME and this directory); name one with --file",
            exit::USAGE,
        ));
    }
    let mut code = exit::COMPLETED;
    let mut seen: Vec<String> = Vec::new();
    for file in &files {
        let path = file.path.display().to_string();
        let text = match read_host_file(&file.path) {
            Ok(t) => t,
            Err(e) => {
                code = fail(&e, exit::USAGE).report();
                continue;
            }
        };
        let edited = match &proxy {
            Some(p) => hosts::wrap(file.host, &file.path, &text, p, &servers),
            None => hosts::unwrap(file.host, &file.path, &text, &servers),
        };
        let (new, reports) = match edited {
            Ok(r) => r,
            Err(e) => {
                code = fail(
                    &format!("{path}: {e}; the file is left as it was"),
                    exit::USAGE,
                )
                .report();
                continue;
            }
        };
        for r in &reports {
            seen.push(r.name.clone());
            let name = match &r.scope {
                Some(project) => format!("{} [{}]", r.name, project),
                None => r.name.clone(),
            };
            let what = match &r.outcome {
                Outcome::Wrapped => "wrapped".to_string(),
                Outcome::Unwrapped => "unwrapped".to_string(),
                Outcome::Unchanged if mode == Mode::Wrap => "already wrapped".to_string(),
                Outcome::Unchanged => "not wrapped".to_string(),
                Outcome::Refused(why) => {
                    if !servers.is_empty() {
                        code = exit::USAGE;
                    }
                    format!("left as it is: {why}")
                }
            };
            let _ = out!(
                "{} {}: {}: {}",
                file.host.name(),
                shown(&path),
                shown(&name),
                shown(&what)
            );
        }
        if new == text {
            continue;
        }
        if target.dry_run {
            let _ = super::output::write_out(&diff(&path, &text, &new));
            continue;
        }
        if let Err(e) = replace_file(&file.path, &text, &new) {
            code = fail(
                &format!("{path}: {e}; the file is left as it was"),
                exit::CONNECTION,
            )
            .report();
        }
    }
    for s in &servers {
        if !seen.contains(s) {
            code = fail(
                &format!("no server named {} in the files looked at", shown(s)),
                exit::USAGE,
            )
            .report();
        }
    }
    Ok(code)
}

/// A unified diff for people: the stored original (base64) is abbreviated, every line
/// sanitised.
fn diff(path: &str, old: &str, new: &str) -> String {
    let text = similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(path, path)
        .to_string();
    let stash = regex::Regex::new("[A-Za-z0-9+/]{24,}={0,2}").ok();
    let mut out = String::new();
    for line in text.lines() {
        let line = match &stash {
            Some(re) if line.contains(hosts::STASH_VAR) => re
                .replace_all(line, "<the original entry, base64>")
                .into_owned(),
            _ => line.to_string(),
        };
        out.push_str(&sanitize_line(&line, 2000));
        out.push('\n');
    }
    out
}

/// Replace `path`'s content with `new`, atomically: a temp file in the same directory with
/// the same permission bits, fsynced, renamed over the original (a symlink's target is the
/// file replaced). Refused when the file no longer holds `old` (its host wrote meanwhile).
fn replace_file(path: &Path, old: &str, new: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let path = std::fs::canonicalize(path)?;
    let permissions = std::fs::metadata(&path)?.permissions();
    let dir = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.taskrail-{}.tmp", std::process::id()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(new.as_bytes())?;
        f.set_permissions(permissions)?;
        f.sync_all()?;
        let now = read_host_file(&path).map_err(std::io::Error::other)?;
        if now != old {
            return Err(std::io::Error::other(
                "it changed while taskrail was editing it (its host wrote it?); run again",
            ));
        }
        std::fs::rename(&tmp, &path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn replaces_atomically_keeping_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mcp.json");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        replace_file(&p, "old", "new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert!(replace_file(&p, "old", "newer").is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file left"
        );
    }

    #[test]
    fn diffs_abbreviate_the_stored_original() {
        let d = diff(
            "f",
            "a\n",
            "b TASKRAIL_WRAPPED: eyJjb21tYW5kIjogIm5weCJ9eyJjb21tYW5k\n",
        );
        assert!(
            d.contains("<the original entry, base64>") && !d.contains("eyJj"),
            "{d}"
        );
        assert!(d.contains("-a") && d.contains("--- f"));
    }
}
