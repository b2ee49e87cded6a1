//! Where the ledger lives: a SQLite file or a PostgreSQL database, parsed once from what
//! `--db` / `TASKRAIL_DB` say.
//!
//! Owns the rule that tells them apart: `postgres://` and `postgresql://` name a
//! PostgreSQL ledger, any other `scheme://…` is refused (never taken for a file name),
//! everything else is a file path. Its `Display` never shows a password.

use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

use super::pg_url::PgUrl;

/// Where the ledger is.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file (created if needed).
    File(PathBuf),
    /// A PostgreSQL database.
    Postgres(PgUrl),
}

impl Location {
    /// Read a location as given on the command line or in the environment.
    pub fn parse(given: &OsStr) -> Result<Location, String> {
        let Some(scheme) = url_scheme(Path::new(given)) else {
            return Ok(Location::File(PathBuf::from(given)));
        };
        match scheme.as_str() {
            "postgres" | "postgresql" => {
                let text = given
                    .to_str()
                    .ok_or("the PostgreSQL URL is not valid UTF-8")?;
                PgUrl::parse(text).map(Location::Postgres)
            }
            _ => Err(format!(
                "the ledger location is a {scheme}:// URL, which taskrail cannot use: give the \
                 path of a SQLite file, or a postgres:// or postgresql:// URL (--db or TASKRAIL_DB)"
            )),
        }
    }

    /// The file, for a SQLite ledger.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Location::File(p) => Some(p),
            Location::Postgres(_) => None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => write!(f, "{url}"),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Location({self})")
    }
}

/// The scheme of a location written as a URL (`scheme://…`), lower-cased.
pub(super) fn url_scheme(location: &Path) -> Option<String> {
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

    fn parse(s: &str) -> Result<Location, String> {
        Location::parse(OsStr::new(s))
    }

    #[test]
    fn paths_urls_and_refusals() {
        assert_eq!(
            parse("./a:b/ledger.db").unwrap(),
            Location::File("./a:b/ledger.db".into())
        );
        assert_eq!(
            parse("/tmp/a://b").unwrap(),
            Location::File("/tmp/a://b".into())
        );
        for url in ["postgres://u@127.0.0.1/x", "PostgreSQL://h/x"] {
            assert!(matches!(parse(url), Ok(Location::Postgres(_))), "{url}");
        }
        for url in ["mysql://h/x", "sqlite://x.db", "postgres+ssl://h/x"] {
            let err = parse(url).unwrap_err();
            assert!(
                err.contains("cannot use") && err.contains("postgres://"),
                "{err}"
            );
        }
    }

    #[test]
    fn shown_without_its_password() {
        let loc = parse("postgresql://alice:s3cret@db.example:6543/team?sslmode=disable").unwrap();
        let shown = format!("{loc} {loc:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(
            shown.contains("alice") && shown.contains("db.example:6543/team"),
            "{shown}"
        );
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
