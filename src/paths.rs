//! Where taskrail keeps its files: the one owner of every default location (the config
//! file, the data directory and what lives in it: ledger, log, OAuth tokens, the proxy's
//! listener tokens).
//!
//! Pure lookups: creates nothing (the owner of each file creates it, private to the user).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variable naming the ledger (as `--db` does).
pub const DB_ENV: &str = "TASKRAIL_DB";

fn project() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("", "", "taskrail")
}

/// The user's data directory for taskrail (`~/.local/share/taskrail` on Linux), if the
/// platform has a home directory.
pub fn data_dir() -> Option<PathBuf> {
    project().map(|d| d.data_dir().to_path_buf())
}

/// The default config file: `config.toml` in the user's config directory.
pub fn config_file() -> Option<PathBuf> {
    project().map(|d| d.config_dir().join("config.toml"))
}

/// The default ledger: `$TASKRAIL_DB` if set and non-empty, else `ledger.db` in the data
/// directory.
pub fn ledger() -> Result<PathBuf, String> {
    ledger_from(std::env::var_os(DB_ENV))
}

fn ledger_from(env: Option<OsString>) -> Result<PathBuf, String> {
    if let Some(p) = env.filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    data_dir().map(|d| d.join("ledger.db")).ok_or_else(|| {
        "cannot find a home directory for the ledger; set TASKRAIL_DB or pass --db PATH".into()
    })
}

/// The default log file: `taskrail.log` in the data directory.
pub fn log_file() -> Option<PathBuf> {
    data_dir().map(|d| d.join("taskrail.log"))
}

/// The default OAuth token file (when the keyring is not used): `tokens.json` in the data
/// directory.
pub fn oauth_tokens() -> Option<PathBuf> {
    data_dir().map(|d| d.join("tokens.json"))
}

/// Legacy session ids of tasks on a PostgreSQL ledger, kept on this machine (the shared
/// database holds only their digests): `pg-sessions.json` in the data directory.
pub fn pg_session_ids() -> Option<PathBuf> {
    data_dir().map(|d| d.join("pg-sessions.json"))
}

/// Writes to a PostgreSQL ledger made while it could not be reached, kept on this machine
/// until they are replayed: `pg-spool.db` in the data directory.
pub fn pg_spool() -> Option<PathBuf> {
    data_dir().map(|d| d.join("pg-spool.db"))
}

/// The proxy listener's token file: `proxy-tokens.json` beside the ledger file `ledger`.
pub fn proxy_tokens(ledger: &Path) -> PathBuf {
    ledger
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."))
        .join("proxy-tokens.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_env_var_wins_unless_empty() {
        assert_eq!(
            ledger_from(Some("/srv/x/ledger.db".into())).unwrap(),
            PathBuf::from("/srv/x/ledger.db")
        );
        if let Some(dir) = data_dir() {
            assert_eq!(ledger_from(Some("".into())).unwrap(), dir.join("ledger.db"));
            assert_eq!(ledger_from(None).unwrap(), dir.join("ledger.db"));
            assert_eq!(log_file().unwrap().parent(), Some(dir.as_path()));
            assert_eq!(oauth_tokens().unwrap().parent(), Some(dir.as_path()));
        }
    }

    #[test]
    fn proxy_tokens_sit_beside_the_ledger() {
        assert_eq!(
            proxy_tokens(Path::new("/srv/x/ledger.db")),
            PathBuf::from("/srv/x/proxy-tokens.json")
        );
        assert_eq!(
            proxy_tokens(Path::new("ledger.db")),
            PathBuf::from("./proxy-tokens.json")
        );
    }
}
