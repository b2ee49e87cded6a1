//! Opening the ledger at a location: the one place that picks a backend for it.
//!
//! A file path is a SQLite ledger. A URL (`scheme://…`) names a server-backed ledger,
//! which this build does not have: it is refused, never taken for a file name. Must not
//! print a URL whole (it may carry a password).

use std::path::Path;

use anyhow::bail;

use super::LedgerHandle;
use super::sqlite;

/// Open the ledger at `location`: a SQLite file for a path (created if needed). A URL is
/// refused with an error that says so.
pub fn open(location: &Path) -> anyhow::Result<LedgerHandle> {
    if let Some(scheme) = url_scheme(location) {
        let hint = if matches!(scheme.as_str(), "postgres" | "postgresql") {
            "PostgreSQL support is not in this build"
        } else {
            "only SQLite files are supported in this build (PostgreSQL support is not in this build)"
        };
        bail!(
            "the ledger location is a {scheme}:// URL: {hint}; give the path of a SQLite file \
             instead (--db PATH or TASKRAIL_DB)"
        );
    }
    sqlite::open(location)
}

/// The scheme of a location written as a URL (`scheme://…`), lower-cased.
fn url_scheme(location: &Path) -> Option<String> {
    let text = location.to_str()?;
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let valid = first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| scheme.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_refused_and_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = std::env::current_dir().unwrap();
        for url in [
            "postgres://u@127.0.0.1/x",
            "postgresql://u:secret@db.example/x",
            "mysql://h/x",
        ] {
            let err = open(Path::new(url)).unwrap_err().to_string();
            assert!(
                err.contains("PostgreSQL support is not in this build"),
                "{err}"
            );
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

    #[test]
    fn only_a_scheme_before_the_slashes_makes_a_url() {
        assert_eq!(
            url_scheme(Path::new("postgres://x")).as_deref(),
            Some("postgres")
        );
        assert_eq!(
            url_scheme(Path::new("Postgres+ssl://x")).as_deref(),
            Some("postgres+ssl")
        );
        assert_eq!(url_scheme(Path::new("/tmp/a://b")), None);
        assert_eq!(url_scheme(Path::new("./ledger.db")), None);
        assert_eq!(url_scheme(Path::new("1x://y")), None);
    }
}
