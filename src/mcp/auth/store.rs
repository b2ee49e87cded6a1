//! Where sign-ins are kept, keyed by server and issuer: the OS keyring when a Secret
//! Service is running (pure-Rust D-Bus client), else a JSON file of mode 0600 in the
//! user's data dir, read and rewritten under an exclusive lock so concurrent taskrail
//! processes never lose each other's writes.
//!
//! Owns: the store backends and the stored shape. This is the only place a token or a
//! registered client secret is written; nothing here logs one.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::AuthError;
use super::discovery::ServerMetadata;
use super::registration::Client;
use super::tokens::TokenSet;

/// One issuer's share of a server's sign-in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IssuerEntry {
    /// The `resource` tokens are requested for.
    pub resource: String,
    pub metadata: ServerMetadata,
    pub client: Client,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenSet>,
}

/// Everything kept about one server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerEntry {
    /// The issuer signed in with last.
    pub current: Option<String>,
    #[serde(default)]
    pub issuers: BTreeMap<String, IssuerEntry>,
}

impl ServerEntry {
    pub fn current_entry(&self) -> Option<(&str, &IssuerEntry)> {
        let issuer = self.current.as_deref()?;
        self.issuers.get(issuer).map(|e| (issuer, e))
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct FileDoc {
    #[serde(default)]
    version: u32,
    #[serde(default)]
    servers: BTreeMap<String, ServerEntry>,
}

/// Which store to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChoice {
    /// The keyring when a Secret Service answers, else the default file.
    Auto,
    Keyring,
    File(PathBuf),
}

impl StoreChoice {
    /// `auto`, `keyring`, `file` (the default file) or a path.
    pub fn parse(s: &str) -> Result<StoreChoice, String> {
        match s.trim() {
            "" | "auto" => Ok(StoreChoice::Auto),
            "keyring" => Ok(StoreChoice::Keyring),
            "file" => default_file()
                .map(StoreChoice::File)
                .ok_or_else(|| "no data directory for the token file".to_string()),
            p => Ok(StoreChoice::File(PathBuf::from(p))),
        }
    }
}

/// `tokens.json` in the user's data dir.
pub fn default_file() -> Option<PathBuf> {
    crate::paths::oauth_tokens()
}

enum Backend {
    File(PathBuf),
    Keyring(Arc<keyring_core::CredentialStore>),
    Memory(Mutex<BTreeMap<String, ServerEntry>>),
}

/// The token store (cheap to clone). The backend is chosen on first use, so a process
/// that never meets a protected server never probes the keyring.
#[derive(Clone)]
pub struct TokenStore(Arc<Lazy>);

struct Lazy {
    choice: StoreChoice,
    backend: tokio::sync::OnceCell<Result<Arc<Backend>, String>>,
}

const SERVICE: &str = "taskrail";

impl TokenStore {
    pub fn new(choice: StoreChoice) -> TokenStore {
        TokenStore(Arc::new(Lazy {
            choice,
            backend: tokio::sync::OnceCell::new(),
        }))
    }

    /// A store that lives as long as the process (conformance runs).
    pub fn memory() -> TokenStore {
        let cell = tokio::sync::OnceCell::new_with(Some(Ok(Arc::new(Backend::Memory(
            Mutex::new(BTreeMap::new()),
        )))));
        TokenStore(Arc::new(Lazy {
            choice: StoreChoice::Auto,
            backend: cell,
        }))
    }

    async fn backend(&self) -> Result<Arc<Backend>, AuthError> {
        self.0
            .backend
            .get_or_init(|| resolve(self.0.choice.clone()))
            .await
            .clone()
            .map_err(AuthError::Store)
    }

    /// Where sign-ins are kept, in words.
    pub async fn describe(&self) -> String {
        match self.backend().await {
            Ok(b) => match &*b {
                Backend::File(p) => format!("the file {}", p.display()),
                Backend::Keyring(_) => "the OS keyring (Secret Service)".into(),
                Backend::Memory(_) => "memory (not kept)".into(),
            },
            Err(e) => e.to_string(),
        }
    }

    pub async fn load(&self, key: &str) -> Result<Option<ServerEntry>, AuthError> {
        let (b, key) = (self.backend().await?, key.to_string());
        blocking(move || match &*b {
            Backend::File(p) => with_file(p, false, |doc| Ok(doc.servers.get(&key).cloned())),
            Backend::Keyring(s) => keyring_get(s, &key),
            Backend::Memory(m) => Ok(m
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&key)
                .cloned()),
        })
        .await
    }

    /// Change one server's entry (created when missing; removed when left empty).
    pub async fn update(
        &self,
        key: &str,
        f: impl FnOnce(&mut ServerEntry) + Send + 'static,
    ) -> Result<(), AuthError> {
        let (b, key) = (self.backend().await?, key.to_string());
        blocking(move || match &*b {
            Backend::File(p) => with_file(p, true, |doc| {
                let mut e = doc.servers.remove(&key).unwrap_or_default();
                f(&mut e);
                if !e.issuers.is_empty() {
                    doc.servers.insert(key, e);
                }
                Ok(())
            }),
            Backend::Keyring(s) => {
                let mut e = keyring_get(s, &key)?.unwrap_or_default();
                f(&mut e);
                if e.issuers.is_empty() {
                    keyring_delete(s, &key).map(|_| ())
                } else {
                    keyring_set(s, &key, &e)
                }
            }
            Backend::Memory(m) => {
                let mut m = m.lock().unwrap_or_else(|e| e.into_inner());
                let mut e = m.remove(&key).unwrap_or_default();
                f(&mut e);
                if !e.issuers.is_empty() {
                    m.insert(key, e);
                }
                Ok(())
            }
        })
        .await
    }

    /// The key of every server the store holds a sign-in for (whatever the config names).
    pub async fn keys(&self) -> Result<Vec<String>, AuthError> {
        let b = self.backend().await?;
        blocking(move || match &*b {
            Backend::File(p) => {
                with_file(p, false, |doc| Ok(doc.servers.keys().cloned().collect()))
            }
            Backend::Keyring(s) => {
                let spec = std::collections::HashMap::from([("service", SERVICE)]);
                let found = keyring_core::Entry::search_in_store(s, &spec)
                    .map_err(|e| AuthError::Store(format!("keyring: {e}")))?;
                let mut keys: Vec<String> = found
                    .iter()
                    .filter_map(|e| e.get_specifiers())
                    .filter(|(service, _)| service == SERVICE)
                    .map(|(_, key)| key)
                    .collect();
                keys.sort();
                keys.dedup();
                Ok(keys)
            }
            Backend::Memory(m) => Ok(m
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .keys()
                .cloned()
                .collect()),
        })
        .await
    }

    /// Forget a server entirely; whether there was anything to forget.
    pub async fn remove(&self, key: &str) -> Result<bool, AuthError> {
        let (b, key) = (self.backend().await?, key.to_string());
        blocking(move || match &*b {
            Backend::File(p) => with_file(p, true, |doc| Ok(doc.servers.remove(&key).is_some())),
            Backend::Keyring(s) => keyring_delete(s, &key),
            Backend::Memory(m) => Ok(m
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&key)
                .is_some()),
        })
        .await
    }
}

async fn resolve(choice: StoreChoice) -> Result<Arc<Backend>, String> {
    let backend = match choice {
        StoreChoice::File(p) => Backend::File(p),
        StoreChoice::Keyring => Backend::Keyring(
            keyring()
                .await
                .map_err(|e| format!("the OS keyring is not available: {e}"))?,
        ),
        StoreChoice::Auto => match keyring().await {
            Ok(s) => Backend::Keyring(s),
            Err(e) => {
                tracing::debug!("no Secret Service ({e}); using the token file");
                Backend::File(default_file().ok_or("no data directory for the token file")?)
            }
        },
    };
    Ok(Arc::new(backend))
}

async fn blocking<R: Send + 'static>(
    f: impl FnOnce() -> Result<R, AuthError> + Send + 'static,
) -> Result<R, AuthError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| AuthError::Store(format!("token store task failed: {e}")))?
}

/// Connect to the Secret Service, within a deadline (D-Bus activation can hang).
async fn keyring() -> Result<Arc<keyring_core::CredentialStore>, String> {
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none_or(|v| v.is_empty()) {
        return Err("no D-Bus session bus".into());
    }
    let probe = tokio::task::spawn_blocking(|| {
        zbus_secret_service_keyring_store::Store::new()
            .map(|s| s as Arc<keyring_core::CredentialStore>)
            .map_err(|e| e.to_string())
    });
    match tokio::time::timeout(Duration::from_secs(5), probe).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the Secret Service did not answer".into()),
    }
}

fn keyring_entry(
    s: &Arc<keyring_core::CredentialStore>,
    key: &str,
) -> Result<keyring_core::Entry, AuthError> {
    keyring_core::Entry::new_in_store(s, SERVICE, key)
        .map_err(|e| AuthError::Store(format!("keyring: {e}")))
}

fn keyring_get(
    s: &Arc<keyring_core::CredentialStore>,
    key: &str,
) -> Result<Option<ServerEntry>, AuthError> {
    match keyring_entry(s, key)?.get_password() {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| AuthError::Store(format!("keyring entry for {key} is unreadable: {e}"))),
        Err(keyring_core::Error::NoEntry) => Ok(None),
        Err(e) => Err(AuthError::Store(format!("keyring: {e}"))),
    }
}

fn keyring_set(
    s: &Arc<keyring_core::CredentialStore>,
    key: &str,
    e: &ServerEntry,
) -> Result<(), AuthError> {
    let text = serde_json::to_string(e).map_err(|e| AuthError::Store(e.to_string()))?;
    keyring_entry(s, key)?
        .set_password(&text)
        .map_err(|e| AuthError::Store(format!("keyring: {e}")))
}

fn keyring_delete(s: &Arc<keyring_core::CredentialStore>, key: &str) -> Result<bool, AuthError> {
    match keyring_entry(s, key)?.delete_credential() {
        Ok(()) => Ok(true),
        Err(keyring_core::Error::NoEntry) => Ok(false),
        Err(e) => Err(AuthError::Store(format!("keyring: {e}"))),
    }
}

/// Run `f` on the token file's document under its lock (exclusive when `write`, and
/// then the document is written back atomically with mode 0600).
fn with_file<R>(
    path: &Path,
    write: bool,
    f: impl FnOnce(&mut FileDoc) -> Result<R, AuthError>,
) -> Result<R, AuthError> {
    let err = |what: &str, e: std::io::Error| {
        AuthError::Store(format!("token file {}: {what}: {e}", path.display()))
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    if write {
        create_private_dir(dir).map_err(|e| err("cannot create its directory", e))?;
    } else if !path.exists() {
        return f(&mut FileDoc::default());
    }
    let lock_path = path.with_extension("lock");
    let lock = private_options(true)
        .open(&lock_path)
        .map_err(|e| err("cannot open its lock file", e))?;
    if write {
        lock.lock().map_err(|e| err("cannot lock it", e))?;
    } else {
        lock.lock_shared().map_err(|e| err("cannot lock it", e))?;
    }
    let mut doc = match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            AuthError::Store(format!(
                "token file {} is unreadable ({e}); remove it to sign in afresh",
                path.display()
            ))
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => FileDoc::default(),
        Err(e) => return Err(err("cannot read it", e)),
    };
    let out = f(&mut doc)?;
    if write {
        doc.version = 1;
        let bytes = serde_json::to_vec_pretty(&doc).map_err(|e| AuthError::Store(e.to_string()))?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        {
            let mut file = private_options(false)
                .open(&tmp)
                .map_err(|e| err("cannot write it", e))?;
            file.write_all(&bytes)
                .and_then(|_| file.sync_all())
                .map_err(|e| err("cannot write it", e))?;
        }
        std::fs::rename(&tmp, path).map_err(|e| err("cannot replace it", e))?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    drop(lock);
    Ok(out)
}

fn private_options(keep: bool) -> std::fs::OpenOptions {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true);
    if !keep {
        o.truncate(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        o.mode(0o600);
    }
    o
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::auth::registration::{AuthMethod, ClientSource};

    fn entry(token: &str) -> IssuerEntry {
        IssuerEntry {
            resource: "https://mcp.example/mcp".into(),
            metadata: ServerMetadata {
                issuer: "https://as.example".into(),
                ..Default::default()
            },
            client: Client {
                client_id: "c".into(),
                client_secret: None,
                auth_method: AuthMethod::None,
                redirect_uris: vec![],
                source: ClientSource::Registered,
            },
            tokens: Some(TokenSet {
                access_token: token.into(),
                refresh_token: None,
                expires_at: None,
                scopes: vec![],
            }),
        }
    }

    #[tokio::test]
    async fn the_store_lists_every_server_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(StoreChoice::File(dir.path().join("tokens.json")));
        assert_eq!(store.keys().await.unwrap(), Vec::<String>::new());
        for key in ["http://127.0.0.1:1/mcp", "https://b.example/mcp"] {
            store
                .update(key, |e| {
                    e.current = Some("https://as.example".into());
                    e.issuers.insert("https://as.example".into(), entry("t"));
                })
                .await
                .unwrap();
        }
        assert_eq!(
            store.keys().await.unwrap(),
            vec!["http://127.0.0.1:1/mcp", "https://b.example/mcp"]
        );
    }

    #[tokio::test]
    async fn the_file_store_is_private_and_keeps_every_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/tokens.json");
        let store = TokenStore::new(StoreChoice::File(path.clone()));
        assert_eq!(store.load("s").await.unwrap(), None);
        // concurrent writers each add their own issuer: none is lost
        let mut joins = Vec::new();
        for i in 0..8 {
            let store = store.clone();
            joins.push(tokio::spawn(async move {
                store
                    .update("s", move |e| {
                        e.issuers.insert(format!("iss{i}"), entry(&format!("t{i}")));
                        e.current = Some(format!("iss{i}"));
                    })
                    .await
            }));
        }
        for j in joins {
            j.await.unwrap().unwrap();
        }
        let e = store.load("s").await.unwrap().unwrap();
        assert_eq!(e.issuers.len(), 8);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
            let dmode = std::fs::metadata(path.parent().unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(dmode & 0o077, 0, "the directory is private too");
        }
        assert!(store.remove("s").await.unwrap());
        assert!(!store.remove("s").await.unwrap());
        assert_eq!(store.load("s").await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_corrupt_file_is_a_clear_error_and_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        std::fs::write(&path, "{not json").unwrap();
        let store = TokenStore::new(StoreChoice::File(path.clone()));
        let e = store.load("s").await.unwrap_err().to_string();
        assert!(e.contains("unreadable"), "{e}");
        assert!(store.update("s", |_| {}).await.is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{not json");
    }

    #[test]
    fn store_choices_parse() {
        assert_eq!(StoreChoice::parse("auto").unwrap(), StoreChoice::Auto);
        assert_eq!(StoreChoice::parse("keyring").unwrap(), StoreChoice::Keyring);
        assert_eq!(
            StoreChoice::parse("/tmp/x.json").unwrap(),
            StoreChoice::File("/tmp/x.json".into())
        );
    }
}
