//! Legacy (2025-11-25) sessions on a shared database. A session id is a credential: it
//! never goes into PostgreSQL. The `sessions` row holds its SHA-256 digest (`session_ref`);
//! the id itself is kept in a file on the machine that opened the session (`paths`:
//! `pg-sessions.json`, mode 0600, digest → id), so only that machine can rejoin the session
//! and follow its tasks. Another machine reading the row is told so. "Session lost"
//! tombstones the session's live tasks. Must not log task ids or session ids.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::db::{Pg, now_ms, touch};
use super::write::tombstone;
use crate::ids::{ServerId, TaskId};
use crate::ledger::{SessionRecord, Tombstone};

/// The digest the shared database keys a session by.
fn session_ref(session_id: &str) -> String {
    Sha256::digest(session_id.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The local file's map, digest → session id (empty when the file is missing).
fn read_local(file: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    match std::fs::read(file) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .with_context(|| format!("reading the session ids in {}", file.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => Err(e).with_context(|| format!("reading {}", file.display())),
    }
}

/// Add `session_ref → session_id` to the local file (written whole, private to the user,
/// replaced atomically).
fn keep_local(file: &Path, session_ref: &str, session_id: &str) -> anyhow::Result<()> {
    let mut map = read_local(file)?;
    if map.get(session_ref).is_some_and(|s| s == session_id) {
        return Ok(());
    }
    map.insert(session_ref.to_string(), session_id.to_string());
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut f = options
        .open(&tmp)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::io::Write::write_all(&mut f, &serde_json::to_vec(&map)?)?;
    f.sync_all()?;
    std::fs::rename(&tmp, file).with_context(|| format!("writing {}", file.display()))?;
    Ok(())
}

impl Pg {
    /// Where this machine keeps its legacy session ids.
    fn session_file(&self) -> anyhow::Result<PathBuf> {
        match self.session_ids() {
            Some(f) => Ok(f.to_path_buf()),
            None => bail!(
                "no home directory to keep a legacy session id in: a PostgreSQL ledger never \
                 stores one"
            ),
        }
    }

    pub fn record_session(
        &self,
        server: &ServerId,
        session_id: &str,
        protocol_version: &str,
        capabilities: &Value,
        server_name: Option<&str>,
    ) -> anyhow::Result<i64> {
        let reference = session_ref(session_id);
        keep_local(&self.session_file()?, &reference, session_id)?;
        let caps = serde_json::to_string(capabilities)?;
        self.write(|tx| {
            tx.execute(
                "INSERT INTO sessions (server, session_ref, protocol_version, capabilities,
                     server_name, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (server, session_ref) DO NOTHING",
                &[
                    &server.as_str(),
                    &reference,
                    &protocol_version,
                    &caps,
                    &server_name,
                    &now_ms(),
                ],
            )?;
            let id: i64 = tx
                .query_one(
                    "SELECT id FROM sessions WHERE server = $1 AND session_ref = $2",
                    &[&server.as_str(), &reference],
                )?
                .get(0);
            Ok(id)
        })
    }

    pub fn session(&self, id: i64) -> anyhow::Result<Option<SessionRecord>> {
        let Some(row) = self.read(|c| {
            Ok(c.query_opt(
                "SELECT id, server, session_ref, protocol_version, capabilities, server_name,
                        lost_at IS NOT NULL
                   FROM sessions WHERE id = $1",
                &[&id],
            )?)
        })?
        else {
            return Ok(None);
        };
        let reference: &str = row.get(2);
        let Some(session_id) = read_local(&self.session_file()?)?.remove(reference) else {
            bail!(
                "this task's legacy session was opened on another machine, which alone keeps \
                 its id: follow the task there"
            );
        };
        Ok(Some(SessionRecord {
            id: row.get(0),
            server: ServerId::stored(row.get(1)),
            session_id,
            protocol_version: row.get(3),
            capabilities: serde_json::from_str(row.get(4)).unwrap_or(Value::Null),
            server_name: row.get(5),
            lost: row.get(6),
        }))
    }

    pub fn session_lost(&self, id: i64) -> anyhow::Result<Vec<TaskId>> {
        let now = now_ms();
        self.write(|tx| {
            tx.execute(
                "UPDATE sessions SET lost_at = coalesce(lost_at, $2) WHERE id = $1",
                &[&id, &now],
            )?;
            let rows = tx.query(
                "SELECT id, task_id FROM tasks WHERE session = $1 AND NOT terminal",
                &[&id],
            )?;
            let mut ended = Vec::new();
            for r in &rows {
                let row: i64 = r.get(0);
                if tombstone(tx, row, now, Tombstone::SessionLost)? {
                    touch(tx, row)?;
                    ended.push(TaskId::new(r.get(1)));
                }
            }
            Ok(ended)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_file_keeps_ids_by_digest_privately() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("d").join("pg-sessions.json");
        let r = session_ref("secret");
        assert_eq!(r.len(), 64);
        assert!(!r.contains("secret"));
        keep_local(&file, &r, "secret").unwrap();
        keep_local(&file, &session_ref("other"), "other").unwrap();
        assert_eq!(
            read_local(&file).unwrap().get(&r).map(String::as_str),
            Some("secret")
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
