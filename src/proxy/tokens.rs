//! The listener's bearer tokens: one per host name, kept in `proxy-tokens.json` beside the
//! ledger (directory 0700, file 0600), created on first use, replaced on `--rotate`. A token
//! names its host: what it authenticates is who the listener serves, and the name is what
//! the ledger shows as the one who started a task.
//!
//! Owns the token file and the check of a presented token. Must not log a token.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// The token file, next to the ledger file at `ledger`.
pub fn file_for(ledger: &Path) -> PathBuf {
    crate::paths::proxy_tokens(ledger)
}

/// A host name a token may carry: letters, digits, `-`, `_`, `.`; 1 to 64 of them.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The tokens in one file (host name → token).
#[derive(Debug, Clone)]
pub struct Tokens {
    path: PathBuf,
}

impl Tokens {
    pub fn at(path: PathBuf) -> Tokens {
        Tokens { path }
    }

    fn read(&self) -> anyhow::Result<BTreeMap<String, String>> {
        match std::fs::read(&self.path) {
            Ok(bytes) if bytes.len() > 1 << 20 => {
                anyhow::bail!("{} is over 1 MiB", self.path.display())
            }
            Ok(bytes) => serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is not a JSON object of tokens", self.path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(e).with_context(|| format!("reading {}", self.path.display())),
        }
    }

    fn write(&self, tokens: &BTreeMap<String, String>) -> anyhow::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        if let Some(dir) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("creating {}", dir.display()))?;
        }
        let tmp = self
            .path
            .with_extension(format!("tmp{}", uuid::Uuid::new_v4().simple()));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .with_context(|| format!("creating {}", tmp.display()))?;
        let body = serde_json::to_vec_pretty(tokens)?;
        let written = f.write_all(&body).and_then(|()| f.sync_all());
        if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, &self.path)) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e).with_context(|| format!("writing {}", self.path.display()));
        }
        Ok(())
    }

    /// The token of host `name`, created when it has none (or replaced with `rotate`).
    pub fn issue(&self, name: &str, rotate: bool) -> anyhow::Result<String> {
        anyhow::ensure!(
            valid_name(name),
            "host name {name:?} is not valid: use 1 to 64 letters, digits, '-', '_' or '.'"
        );
        let mut tokens = self.read()?;
        if !rotate && let Some(t) = tokens.get(name) {
            return Ok(t.clone());
        }
        let token = format!(
            "trp_{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        tokens.insert(name.to_string(), token.clone());
        self.write(&tokens)?;
        Ok(token)
    }

    /// The host a presented token belongs to (read fresh, so a token issued or rotated
    /// while the listener runs takes effect at once).
    pub fn host_of(&self, presented: &str) -> Option<String> {
        let tokens = match self.read() {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!("proxy tokens: {e:#}");
                return None;
            }
        };
        let mut found = None;
        for (name, token) in &tokens {
            // Every entry is compared in full, whatever matched before.
            if same(token.as_bytes(), presented.as_bytes()) {
                found = Some(name.clone());
            }
        }
        found
    }
}

/// Compare without stopping at the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_check_and_rotate() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let tokens = Tokens::at(dir.path().join("sub").join("proxy-tokens.json"));
        let a = tokens.issue("editor", false).unwrap_or_default();
        assert!(a.starts_with("trp_") && a.len() > 60);
        assert_eq!(tokens.issue("editor", false).unwrap_or_default(), a);
        let b = tokens.issue("agent", false).unwrap_or_default();
        assert_ne!(a, b);
        assert_eq!(tokens.host_of(&a).as_deref(), Some("editor"));
        assert_eq!(tokens.host_of(&b).as_deref(), Some("agent"));
        assert_eq!(tokens.host_of("trp_nope"), None);
        assert_eq!(tokens.host_of(""), None);
        let rotated = tokens.issue("editor", true).unwrap_or_default();
        assert_ne!(rotated, a);
        assert_eq!(tokens.host_of(&a), None);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("sub").join("proxy-tokens.json"))
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or(0);
        assert_eq!(mode, 0o600);
        assert!(tokens.issue("bad name", false).is_err());
        assert!(tokens.issue("", false).is_err());
    }
}
