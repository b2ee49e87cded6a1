//! The user's configuration file (TOML): servers (`url` or `command`) with extra headers
//! (`${ENV}` expanded; an unset variable disables that server alone), per-server
//! `read_only`, poll floor, sampling (a person, or a command after the person approves),
//! roots and sign-in settings (`[server.auth]`), notifications, mouse, keymap overrides
//! and a theme. Invalid files give an error naming the line, never a panic. Owns parsing
//! and validation only: header values are secrets and never appear
//! in an error. Must not touch the terminal or the network.

mod auth;
pub mod hosts;
mod input;
mod raw;
#[cfg(test)]
mod tests;
pub mod theme;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::state::keymap::{Action, Context, Keymap};
use crate::state::keys::Key;

/// The largest config or theme file read (a bigger one, or an endless one such as
/// `/dev/zero`, is refused after reading this much).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// A config or theme file as text, read with the [`MAX_FILE_BYTES`] bound.
pub(crate) fn read_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {} KiB, the most a config or theme file may be",
            MAX_FILE_BYTES / 1024
        )));
    }
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// Where notifications go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Desktop {
    Off,
    /// `ESC ] 9 ; text BEL` (iTerm2, Windows Terminal, ConEmu, kitty, foot, …).
    Osc9,
    /// `ESC ] 777 ; notify ; title ; body BEL` (rxvt-unicode, VTE terminals, WezTerm).
    Osc777,
}

/// Bell and desktop notifications when a task waits for input or finishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyConfig {
    pub bell: bool,
    pub desktop: Desktop,
    pub on_input: bool,
    pub on_finished: bool,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            bell: true,
            desktop: Desktop::Off,
            on_input: true,
            on_finished: true,
        }
    }
}

impl NotifyConfig {
    /// Everything off (tests, `TASKRAIL_NO_NOTIFY`).
    pub fn off() -> Self {
        NotifyConfig {
            bell: false,
            desktop: Desktop::Off,
            on_input: false,
            on_finished: false,
        }
    }
}

/// How to reach a configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Url(String),
    /// A command line started as a stdio server.
    Command(String),
}

/// How a server's `sampling/createMessage` requests are answered.
pub use crate::state::SamplingSetup as Sampling;

/// A sampling command's default time limit.
pub const SAMPLING_TIMEOUT: Duration = Duration::from_secs(120);

/// One `[[server]]` entry, validated.
#[derive(Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub target: Target,
    /// Resolved headers; values may be secrets.
    pub headers: Vec<(String, String)>,
    pub read_only: bool,
    pub poll_floor: Option<Duration>,
    /// Why the server cannot be used as configured (a `${VAR}` in its headers is not set):
    /// it is listed, never connected. Other servers are not affected.
    pub disabled: Option<String>,
    /// Sign-in settings (its `Debug` hides secrets).
    pub auth: crate::mcp::auth::AuthSettings,
    /// `None`: sampling is not offered to this server.
    pub sampling: Option<Sampling>,
    /// `file://` URIs answered to `roots/list`; `None`: roots are not offered.
    pub roots: Option<Vec<String>>,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // header values are secrets: names only
        f.debug_struct("ServerConfig")
            .field("name", &self.name)
            .field("target", &self.target)
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("read_only", &self.read_only)
            .field("poll_floor", &self.poll_floor)
            .field("disabled", &self.disabled)
            .field("auth", &self.auth)
            .field("sampling", &self.sampling)
            .field("roots", &self.roots)
            .finish()
    }
}

impl ServerConfig {
    /// The input kinds this server is offered (its client capabilities).
    pub fn input_support(&self) -> crate::mcp::InputSupport {
        crate::mcp::InputSupport {
            sampling: self.sampling.is_some(),
            roots: self.roots.clone(),
        }
    }

    /// The same, as the dashboard answers it (who writes a sampling reply).
    pub fn server_input(&self) -> crate::state::ServerInput {
        crate::state::ServerInput {
            sampling: self.sampling.clone(),
            roots: self.roots.clone(),
        }
    }

    /// The `--server` form of the target (`URL` or `stdio:<command>`).
    pub fn endpoint_spec(&self) -> String {
        match &self.target {
            Target::Url(u) => u.clone(),
            Target::Command(c) => format!("stdio:{c}"),
        }
    }
}

/// One keymap override: `action` in `context` is bound to exactly `keys`.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyOverride {
    pub context: Context,
    pub action: Action,
    pub keys: Vec<Key>,
}

/// `[proxy]`: how `taskrail proxy` treats its hosts. Durations are kept as written (the
/// proxy reads them, and says which key is wrong).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProxyConfig {
    /// `answer_within`: answer a waiting host "still running" after this long.
    pub answer_within: Option<String>,
    /// `[proxy.hosts.NAME] answer_within`: the same for one host (its token name on a
    /// listener, else the name the host gives).
    pub hosts: std::collections::BTreeMap<String, String>,
}

/// The whole configuration.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The file it came from (none: defaults).
    pub path: Option<PathBuf>,
    pub servers: Vec<ServerConfig>,
    /// Theme name (bundled) and the resolved theme.
    pub theme_name: Option<String>,
    pub theme: Option<theme::ThemeSpec>,
    pub notify: NotifyConfig,
    pub mouse: bool,
    pub keys: Vec<KeyOverride>,
    pub proxy: ProxyConfig,
    /// `[telemetry]`: the `OTEL_*` keys (upper-cased), for when the environment has none.
    pub telemetry: std::collections::BTreeMap<String, String>,
}

impl Config {
    /// The default location: `config.toml` in the user's config dir.
    pub fn default_path() -> Option<PathBuf> {
        crate::paths::config_file()
    }

    /// Load `explicit` (must exist), else the default file if there is one.
    pub fn load(explicit: Option<&Path>) -> Result<Config, String> {
        let (path, required) = match explicit {
            Some(p) => (p.to_path_buf(), true),
            None => match Config::default_path() {
                Some(p) => (p, false),
                None => return Ok(Config::defaults()),
            },
        };
        let text = match read_file(&path) {
            Ok(t) => t,
            Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Config::defaults());
            }
            Err(e) => return Err(format!("config {}: {e}", path.display())),
        };
        let base = path.parent().unwrap_or(Path::new("."));
        let mut config = Config::parse(&text, |v| std::env::var(v).ok(), base)
            .map_err(|e| format!("config {}: {e}", path.display()))?;
        config.path = Some(path);
        Ok(config)
    }

    /// No file: every default.
    pub fn defaults() -> Config {
        Config {
            mouse: true,
            ..Default::default()
        }
    }

    /// Parse and validate a config text. `env` resolves `${VAR}`; `base` is where a
    /// relative theme path is looked up.
    pub fn parse(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
        base: &Path,
    ) -> Result<Config, String> {
        raw::parse(text, &env, base)
    }

    /// The keymap with this config's overrides applied to `keymap`.
    pub fn apply_keys(&self, mut keymap: Keymap) -> Keymap {
        for o in &self.keys {
            keymap.rebind(o.context, o.action, o.keys.clone());
        }
        keymap
    }

    /// A configured server by name.
    pub fn server(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }
}

pub use crate::mcp::endpoint::{ExpandError, expand_env};
