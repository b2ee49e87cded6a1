//! Opening the ledger at a location: the one place that picks a backend for it.
//!
//! A file path is a SQLite ledger; a `postgres://` URL a PostgreSQL one; any other URL was
//! refused when the location was parsed. Must not print a password.

use std::path::Path;

use super::LedgerHandle;
use super::location::Location;
use super::sqlite;

/// Open the ledger at `location`, given as text (`--db`, `TASKRAIL_DB`): a SQLite file
/// for a path (created if needed), a PostgreSQL ledger for its URL.
pub fn open(location: &Path) -> anyhow::Result<LedgerHandle> {
    let location = Location::parse(location.as_os_str()).map_err(anyhow::Error::msg)?;
    open_at(&location)
}

/// Open the ledger at a parsed location.
pub fn open_at(location: &Location) -> anyhow::Result<LedgerHandle> {
    match location {
        Location::File(path) => sqlite::open(path),
        Location::Postgres(url) => super::postgres::open(url),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_url_is_refused_and_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = std::env::current_dir().unwrap();
        for url in ["mysql://u:secret@127.0.0.1/x", "sqlite://x.db"] {
            let err = open(Path::new(url)).unwrap_err().to_string();
            assert!(err.contains("cannot use"), "{err}");
            assert!(
                !err.contains("secret") && !err.contains("127.0.0.1"),
                "{err}"
            );
            let scheme = url.split(':').next().unwrap();
            assert!(
                !cwd.join(format!("{scheme}:")).exists(),
                "no {scheme}: directory"
            );
        }
        // A path is a SQLite file, whatever its name holds.
        let path = dir.path().join("a:b").join("ledger.db");
        let ledger = open(&path).unwrap();
        assert_eq!(ledger.location(), path.display().to_string());
        assert!(path.exists());
    }
}
