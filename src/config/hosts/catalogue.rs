//! The host catalogue: which agent hosts there are, their short names, where each keeps its
//! MCP servers (files under HOME and in the project directory) and in which format and keys.
//!
//! Must not read files (it only names them) nor know how an entry is written (`dialect`).

use std::path::{Path, PathBuf};

/// The file formats hosts use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON, comments and trailing commas allowed (what the hosts' own readers accept).
    Jsonc,
    Toml,
    Yaml,
}

/// An agent host whose MCP server list taskrail can edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Host {
    ClaudeCode,
    ClaudeDesktop,
    Cursor,
    VsCode,
    Codex,
    Gemini,
    Goose,
    Zed,
    OpenCode,
}

impl Host {
    pub const ALL: [Host; 9] = [
        Host::ClaudeCode,
        Host::ClaudeDesktop,
        Host::Cursor,
        Host::VsCode,
        Host::Codex,
        Host::Gemini,
        Host::Goose,
        Host::Zed,
        Host::OpenCode,
    ];

    /// The short name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Host::ClaudeCode => "claude-code",
            Host::ClaudeDesktop => "claude-desktop",
            Host::Cursor => "cursor",
            Host::VsCode => "vscode",
            Host::Codex => "codex",
            Host::Gemini => "gemini",
            Host::Goose => "goose",
            Host::Zed => "zed",
            Host::OpenCode => "opencode",
        }
    }

    pub fn from_name(name: &str) -> Option<Host> {
        Host::ALL.into_iter().find(|h| h.name() == name)
    }

    pub fn format(self) -> Format {
        match self {
            Host::Codex => Format::Toml,
            Host::Goose => Format::Yaml,
            _ => Format::Jsonc,
        }
    }

    /// The key paths of the server maps in this host's files (`*`: any key, e.g. a
    /// project path). For a file that has several, all are read.
    pub fn containers(self, file: &Path) -> &'static [&'static [&'static str]] {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        match self {
            Host::ClaudeCode if name == ".claude.json" => {
                &[&["mcpServers"], &["projects", "*", "mcpServers"]]
            }
            Host::ClaudeCode | Host::ClaudeDesktop | Host::Cursor | Host::Gemini => {
                &[&["mcpServers"]]
            }
            Host::VsCode if name == "settings.json" => &[&["mcp", "servers"]],
            Host::VsCode => &[&["servers"]],
            Host::Codex => &[&["mcp_servers"]],
            Host::Goose => &[&["extensions"]],
            Host::Zed => &[&["context_servers"]],
            // OpenCode's documented `mcp.NAME`, and `mcp.servers.NAME` of its newer docs.
            Host::OpenCode => &[&["mcp", "servers"], &["mcp"]],
        }
    }

    /// Where this host keeps server lists: (path relative to HOME or the project, scope).
    fn locations(self) -> &'static [(&'static str, Scope)] {
        use Scope::{Project, User};
        match self {
            Host::ClaudeCode => &[(".claude.json", User), (".mcp.json", Project)],
            Host::ClaudeDesktop => &[(".config/Claude/claude_desktop_config.json", User)],
            Host::Cursor => &[(".cursor/mcp.json", User), (".cursor/mcp.json", Project)],
            Host::VsCode => &[
                (".vscode/mcp.json", Project),
                (".config/Code/User/mcp.json", User),
                (".config/Code/User/settings.json", User),
            ],
            Host::Codex => &[
                (".codex/config.toml", User),
                (".codex/config.toml", Project),
            ],
            Host::Gemini => &[
                (".gemini/settings.json", User),
                (".gemini/settings.json", Project),
            ],
            Host::Goose => &[(".config/goose/config.yaml", User)],
            Host::Zed => &[
                (".config/zed/settings.json", User),
                (".zed/settings.json", Project),
            ],
            Host::OpenCode => &[
                ("opencode.json", Project),
                (".config/opencode/opencode.json", User),
            ],
        }
    }

    /// The host a file belongs to, guessed from its path (for `--file`).
    pub fn guess(path: &Path) -> Option<Host> {
        let p = path.to_string_lossy().replace('\\', "/");
        let name = path.file_name()?.to_str()?;
        let parent = path
            .parent()
            .and_then(Path::file_name)
            .and_then(|n| n.to_str())
            .unwrap_or("");
        Some(match (parent, name) {
            (_, ".claude.json" | ".mcp.json") => Host::ClaudeCode,
            (_, "claude_desktop_config.json") => Host::ClaudeDesktop,
            (".cursor", _) => Host::Cursor,
            (".vscode", _) | ("User", _) => Host::VsCode,
            (_, n) if n.ends_with(".toml") => Host::Codex,
            (_, n) if n.ends_with(".yaml") || n.ends_with(".yml") => Host::Goose,
            (".gemini", _) => Host::Gemini,
            ("zed" | ".zed", _) => Host::Zed,
            (_, n) if n.starts_with("opencode.json") => Host::OpenCode,
            _ if p.contains("/Code/") => Host::VsCode,
            _ => return None,
        })
    }
}

/// Whose file it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Under HOME.
    User,
    /// In the project directory.
    Project,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

/// One host configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFile {
    pub host: Host,
    pub path: PathBuf,
    pub scope: Scope,
}

/// Every host file that may exist for this HOME and project directory, in catalogue order
/// (`exists` decides which are kept; a file seen twice, e.g. HOME is the project, once).
pub fn host_files(
    home: Option<&Path>,
    project: &Path,
    exists: impl Fn(&Path) -> bool,
) -> Vec<HostFile> {
    let mut out: Vec<HostFile> = Vec::new();
    for host in Host::ALL {
        for (rel, scope) in host.locations() {
            let base = match scope {
                Scope::User => match home {
                    Some(h) => h,
                    None => continue,
                },
                Scope::Project => project,
            };
            let path = base.join(rel);
            if exists(&path) && !out.iter().any(|f| f.path == path) {
                out.push(HostFile {
                    host,
                    path,
                    scope: *scope,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_files_are_found() {
        for h in Host::ALL {
            assert_eq!(Host::from_name(h.name()), Some(h));
        }
        let files = host_files(Some(Path::new("/h")), Path::new("/p"), |p| {
            p.ends_with(".claude.json")
                || p.ends_with(".vscode/mcp.json")
                || p == Path::new("/h/.cursor/mcp.json")
        });
        let names: Vec<_> = files
            .iter()
            .map(|f| (f.host.name(), f.path.display().to_string()))
            .collect();
        assert_eq!(
            names,
            [
                ("claude-code", "/h/.claude.json".to_string()),
                ("cursor", "/h/.cursor/mcp.json".to_string()),
                ("vscode", "/p/.vscode/mcp.json".to_string()),
            ]
        );
    }

    #[test]
    fn guesses_hosts_from_paths() {
        let cases = [
            ("/h/.claude.json", Host::ClaudeCode),
            ("/p/.mcp.json", Host::ClaudeCode),
            (
                "/h/.config/Claude/claude_desktop_config.json",
                Host::ClaudeDesktop,
            ),
            ("/p/.cursor/mcp.json", Host::Cursor),
            ("/p/.vscode/mcp.json", Host::VsCode),
            ("/h/.config/Code/User/settings.json", Host::VsCode),
            ("/h/.codex/config.toml", Host::Codex),
            ("/h/.gemini/settings.json", Host::Gemini),
            ("/h/.config/goose/config.yaml", Host::Goose),
            ("/h/.config/zed/settings.json", Host::Zed),
            ("/p/opencode.json", Host::OpenCode),
        ];
        for (p, h) in cases {
            assert_eq!(Host::guess(Path::new(p)), Some(h), "{p}");
        }
        assert_eq!(Host::guess(Path::new("/x/whatever.json")), None);
    }
}
