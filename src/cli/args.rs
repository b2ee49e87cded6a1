//! Command-line definitions (clap): subcommands, their options and the exit-code table.
//!
//! Owns: argument shapes only. Must not do I/O.

use clap::{Args, CommandFactory, Parser, Subcommand};
use std::path::PathBuf;

/// Exit codes shared by every subcommand (documented in README).
pub mod exit {
    pub const COMPLETED: u8 = 0;
    pub const TOOL_ERROR: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const FAILED: u8 = 3;
    pub const CANCELLED: u8 = 4;
    pub const UNKNOWN_TASK: u8 = 5;
    pub const CONNECTION: u8 = 6;
    /// The server wants a signed-in user (`taskrail auth login SERVER`).
    pub const SIGN_IN: u8 = 7;
    /// The server refused the request as invalid (`-32602`): the tool's arguments, or a
    /// tool it does not have.
    pub const INVALID: u8 = 8;
    pub const INTERRUPTED: u8 = 130;

    /// The exit code for a task's outcome; a task still running exits as completed (the
    /// command only reported it).
    pub fn of(outcome: Option<crate::mcp::Outcome>) -> u8 {
        use crate::mcp::Outcome;
        match outcome {
            None | Some(Outcome::Completed) => COMPLETED,
            Some(Outcome::ToolError) => TOOL_ERROR,
            Some(Outcome::Failed) => FAILED,
            Some(Outcome::Cancelled) => CANCELLED,
            Some(Outcome::Gone) => UNKNOWN_TASK,
        }
    }
}

/// Task ids, keys and tool names are never empty (an empty one is a usage error).
fn non_empty() -> clap::builder::NonEmptyStringValueParser {
    clap::builder::NonEmptyStringValueParser::new()
}

#[derive(Parser, Debug)]
#[command(
    name = "taskrail",
    version,
    about = "Watch MCP tasks live, answer their input requests, cancel them by keypress."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub global: GlobalArgs,
    /// Servers (URL, stdio:<command>, or a server name from the config file); the dashboard
    /// shows these and the configured ones; none at all = the embedded demo server.
    #[arg(long = "server", short = 's', value_name = "S", global = true)]
    pub servers: Vec<String>,
}

#[derive(Args, Debug, Clone)]
pub struct GlobalArgs {
    /// Config file (default: config.toml in the user's config dir, if it exists).
    #[arg(long, value_name = "FILE", env = "TASKRAIL_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// The ledger: a SQLite file, or a postgres:// URL (default: a file in the user's data dir).
    #[arg(long, value_name = "PATH|URL", env = "TASKRAIL_DB", global = true)]
    pub db: Option<PathBuf>,
    /// Extra HTTP header for every server, `Name: value`; `${VAR}` reads the environment.
    #[arg(long = "header", short = 'H', value_name = "HEADER", global = true)]
    pub headers: Vec<String>,
    /// Never poll one task faster than this (milliseconds).
    #[arg(long, value_name = "MS", default_value_t = 250, global = true)]
    pub poll_floor: u64,
    /// Poll only: never open push streams.
    #[arg(long, global = true)]
    pub no_push: bool,
    /// Refuse cancel, answer and call (for watching production).
    #[arg(long, global = true)]
    pub read_only: bool,
    /// Log file (default: taskrail.log in the user's data dir).
    #[arg(long, value_name = "PATH", env = "TASKRAIL_LOG", global = true)]
    pub log_file: Option<PathBuf>,
    /// Seconds to wait for one request (default 30). Given, it also bounds `tools/call`
    /// (default 600: a server without tasks may hold a plain call open); a call that
    /// creates a task only waits for the task handle, then the task is followed to its end.
    #[arg(long, value_name = "SECS", global = true)]
    pub timeout: Option<u64>,
    /// Write every JSON-RPC message exchanged with a server or a host to FILE as NDJSON
    /// (task ids masked, no headers; rotates to FILE.1 at 32 MiB).
    #[arg(long, value_name = "FILE", env = "TASKRAIL_WIRE", global = true)]
    pub wire: Option<PathBuf>,
    /// Where sign-ins are kept: auto (the OS keyring when a Secret Service runs, else
    /// tokens.json in the user's data dir), keyring, file, or a file path.
    #[arg(
        long,
        value_name = "STORE",
        env = "TASKRAIL_TOKEN_STORE",
        default_value = "auto",
        global = true
    )]
    pub token_store: String,
}

/// One example response per input kind, for `answer --help`.
const ANSWER_EXAMPLES: &str = r#"Examples, one per input kind:
  form (elicitation):   --json '{"action":"accept","content":{"name":"Ada"}}'  (or just '{"name":"Ada"}')
  link (URL mode):      --json '{"action":"accept"}'
  sampling:             --json '{"role":"assistant","content":{"type":"text","text":"…"},"model":"person"}'
  roots:                --json '{"roots":[{"uri":"file:///home/me/project"}]}'
  refuse any of them:   --json '{"action":"decline"}'  (or "cancel")"#;

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List a server's tools.
    Tools {
        #[arg(long)]
        json: bool,
    },
    /// Call a tool; follow the task it creates to its end (or print its handle with --detach).
    Call {
        #[arg(value_parser = non_empty())]
        tool: String,
        /// Arguments as a JSON object.
        #[arg(long, value_name = "JSON", default_value = "{}")]
        args: String,
        /// Print the task handle and exit without following it.
        #[arg(long)]
        detach: bool,
    },
    /// Fetch one task once.
    Get {
        #[arg(allow_hyphen_values = true, value_parser = non_empty())]
        task_id: String,
    },
    /// Follow tasks to their end (no ids: every unfinished task in the ledger).
    Watch {
        // One value per occurrence, so a flag after the ids stays a flag.
        #[arg(allow_hyphen_values = true, value_parser = non_empty(), num_args = 1, action = clap::ArgAction::Append)]
        task_ids: Vec<String>,
        /// One JSON line per observed change.
        #[arg(long)]
        json: bool,
    },
    /// Answer one input request of a task (`tasks/update`), in its kind's own shape.
    #[command(after_help = ANSWER_EXAMPLES)]
    Answer {
        #[arg(allow_hyphen_values = true, value_parser = non_empty())]
        task_id: String,
        #[arg(allow_hyphen_values = true, value_parser = non_empty())]
        key: String,
        /// The response, in the request's own shape (see the examples below).
        #[arg(long = "json", value_name = "RESPONSE")]
        response: String,
        /// Send even if the response does not fit the request's schema, or the ledger says
        /// the key was already answered or is not asked.
        #[arg(long)]
        force: bool,
    },
    /// Cancel a task (`tasks/cancel`).
    Cancel {
        #[arg(allow_hyphen_values = true, value_parser = non_empty())]
        task_id: String,
    },
    /// List the tasks in the ledger.
    Ls {
        /// Include finished tasks.
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// Print a task's timeline from the ledger (a unique id prefix is enough).
    Timeline {
        #[arg(allow_hyphen_values = true, value_parser = non_empty())]
        task_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Write a task's timeline as JSONL for a bug report (short ids, no arguments).
    Export {
        #[arg(allow_hyphen_values = true, value_parser = non_empty())]
        task_id: String,
        /// Output file (default: standard output).
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
    /// Print the man page (roff) generated from the command-line definition.
    Man,
    /// Remove finished tasks older than a retention age from the ledger.
    Prune {
        #[arg(long, value_name = "DURATION", default_value = "30d")]
        older_than: String,
    },
    /// Serve SERVER to an agent host over stdio (or HTTP with --listen), recording its tasks.
    ///
    /// The dashboard, on the same ledger, shows them live, answers their input and cancels them.
    /// A host whose own timeout gives up on a call does not stop the work: the proxy follows
    /// the task to its end, and the host's retry of the same call (same tool, same arguments,
    /// compared as canonical JSON, same upstream) is attached to it instead of running it again
    /// — until its result has been delivered to a host once.
    #[command(
        after_help = "Hosts: taskrail hosts wrap (or: claude mcp add NAME -- taskrail proxy SERVER); see README.",
        args_conflicts_with_subcommands = true,
        subcommand_negates_reqs = true
    )]
    Proxy(ProxyArgs),
    /// List, wrap and unwrap the MCP servers of agent hosts (Claude Code, Claude Desktop,
    /// Cursor, VS Code, Codex, Gemini CLI, goose, Zed, OpenCode).
    ///
    /// Without a subcommand: list the host configuration files found under HOME and in this
    /// directory, each server in them, its kind and whether it already goes through taskrail.
    #[command(
        after_help = "Wrap every server of every host: taskrail hosts wrap (see README, Using \
                      taskrail with your agent)."
    )]
    Hosts {
        #[command(subcommand)]
        command: Option<HostsCommand>,
        /// One JSON object per server.
        #[arg(long)]
        json: bool,
    },
    /// Sign in to servers that want OAuth (see README, Signing in).
    #[command(subcommand)]
    Auth(AuthCommand),
    /// Look after the ledger itself (see README, A team's ledger on PostgreSQL).
    #[command(subcommand)]
    Ledger(LedgerCommand),
    /// Run the embedded demo server alone (prints its URL on the first line).
    ServeDemo(crate::demo::DemoOptions),
    /// Open the dashboard on the embedded demo server.
    Demo,
    /// Performance measurements (see README, Performance).
    #[command(hide = true)]
    Bench(crate::bench::BenchArgs),
    /// Client entry point for the MCP conformance suite (`MCP_CONFORMANCE_SCENARIO`).
    #[command(hide = true)]
    Conformance {
        server_url: String,
        /// The Client ID Metadata Document URL to offer servers that support them.
        #[arg(long, value_name = "URL")]
        client_metadata_url: Option<String>,
    },
}

/// `taskrail proxy`'s arguments.
#[derive(Args, Debug)]
pub struct ProxyArgs {
    #[command(subcommand)]
    pub action: Option<ProxyAction>,
    /// The upstream: a configured server name (with its headers), a URL, or stdio:<command>.
    #[arg(required = true)]
    pub server: Option<String>,
    /// Serve Streamable HTTP on this loopback address (e.g. 127.0.0.1:8808) instead of stdio;
    /// every host then presents its own token (taskrail proxy token --host NAME).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Largest request body the listener accepts.
    #[arg(long, value_name = "BYTES", default_value_t = 4 * 1024 * 1024)]
    pub max_body: usize,
    /// A listener session with no request and no open stream ends after this long.
    #[arg(long, value_name = "DURATION", default_value = "30m")]
    pub session_idle: String,
    /// Listener sessions kept at once (the least recently used ends for a new one).
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_sessions: usize,
    /// Answer a waiting host within this long: a call still running then returns a result
    /// saying so (task id, status, progress), and calling the tool again with the same
    /// arguments returns its result without running it twice. Off by default.
    #[arg(long, value_name = "DURATION")]
    pub answer_within: Option<String>,
    /// Never attach a repeated call to earlier work: every tools/call runs anew.
    #[arg(long)]
    pub no_reattach: bool,
    /// A call the server answers blocking (no task) that still runs after this long goes on
    /// the board as a task of the proxy's own: its progress, input and result, and a cancel.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub track_after: String,
    /// When the host goes away (stdio) with calls still running, keep running until they
    /// end — at most this long — so their results reach the ledger.
    #[arg(long, value_name = "DURATION", default_value = "1h")]
    pub detach_limit: String,
}

#[derive(Subcommand, Debug)]
pub enum ProxyAction {
    /// Print the bearer token of host NAME for `taskrail proxy --listen` (created on first use,
    /// kept 0600 beside the ledger). The host sends it as `Authorization: Bearer TOKEN`.
    Token {
        /// The host the token is for; the ledger shows it as who started its tasks.
        #[arg(long, value_name = "NAME", default_value = "default")]
        host: String,
        /// Replace the token (the old one stops working at once).
        #[arg(long)]
        rotate: bool,
    },
}

/// `taskrail hosts` subcommands.
#[derive(Subcommand, Debug)]
pub enum HostsCommand {
    /// List the host files found, their servers, and which go through taskrail.
    List {
        /// One JSON object per server.
        #[arg(long)]
        json: bool,
    },
    /// Make hosts start `taskrail proxy` in front of their servers (stdio and HTTP entries);
    /// the original entry is kept in the wrapped one, so `unwrap` gives it back exactly.
    Wrap(HostsTarget),
    /// Put back the original entries of servers wrapped by `taskrail hosts wrap`.
    Unwrap(HostsTarget),
}

/// Which host files and servers `hosts wrap` / `hosts unwrap` change.
#[derive(Args, Debug)]
pub struct HostsTarget {
    /// [HOST] [SERVER...]: a host (claude-code, claude-desktop, cursor, vscode, codex, gemini,
    /// goose, zed, opencode), then server names; none: every server of every file found.
    #[arg(value_name = "HOST|SERVER")]
    pub targets: Vec<String>,
    /// Edit this host configuration file only (its host is told by its path, or name it
    /// first). Named `--file` because `--config` is taskrail's own config file.
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Print a unified diff of what would change; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Subcommand, Debug)]
pub enum LedgerCommand {
    /// Create or upgrade a PostgreSQL ledger's schema and the group role `taskrail_users`
    /// (run once, and after upgrading taskrail, as a role that may create objects in the
    /// database). A SQLite ledger upgrades itself when opened.
    Migrate,
}

#[derive(Subcommand, Debug)]
pub enum AuthCommand {
    /// Sign in to SERVER (a configured name or a URL): the browser opens on its sign-in
    /// page; paste the address it ends on when it cannot reach this machine.
    Login {
        server: String,
        /// Print the URL instead of opening a browser.
        #[arg(long)]
        no_browser: bool,
    },
    /// Forget SERVER's sign-in (its tokens and registrations).
    Logout { server: String },
    /// Show the sign-ins of the configured servers and every --server.
    Status {
        #[arg(long)]
        json: bool,
    },
}

impl Cli {
    /// Parse the process's arguments (exits with clap's message on a usage error).
    pub fn from_args() -> Cli {
        Cli::parse_argv(std::env::args_os().collect()).unwrap_or_else(|e| e.exit())
    }

    /// Parse `argv`. Task ids may start with `-` (base64url ids do, one in 64): every id
    /// argument takes hyphen values, and `watch ID… --json` still reads `--json` (and any
    /// other option after the ids) as an option.
    pub fn parse_argv(argv: Vec<std::ffi::OsString>) -> Result<Cli, clap::Error> {
        let cli = Cli::try_parse_from(&argv)?;
        let Some(Command::Watch { task_ids, .. }) = &cli.command else {
            return Ok(cli);
        };
        // clap gives every token after the first id to the ids; those are the last
        // `task_ids.len()` tokens, unless `--` made them ids on purpose.
        let start = argv.len().saturating_sub(task_ids.len());
        let escaped = start > 0 && argv[start - 1] == "--";
        let flags = watch_flags();
        let first_flag = task_ids.iter().position(|t| {
            let name = t.split_once('=').map_or(t.as_str(), |(n, _)| n);
            flags.iter().any(|f| f == name)
        });
        let (Some(i), false) = (first_flag, escaped) else {
            return Ok(cli);
        };
        let mut fixed = argv[..start].to_vec();
        fixed.extend(argv[start + i..].iter().cloned());
        fixed.extend(argv[start..start + i].iter().cloned());
        Cli::try_parse_from(fixed)
    }

    /// The one server a single-server subcommand talks to.
    pub fn single_server(&self) -> Result<&str, String> {
        match self.servers.as_slice() {
            [one] => Ok(one),
            [] => Err("this command needs --server URL (or --server stdio:<command>)".into()),
            _ => Err("this command takes exactly one --server".into()),
        }
    }
}

/// `--long` and `-s` spellings of every option `watch` takes (its own and the global ones).
fn watch_flags() -> Vec<String> {
    let mut cmd = Cli::command();
    cmd.build();
    let Some(watch) = cmd.find_subcommand("watch") else {
        return Vec::new();
    };
    watch
        .get_arguments()
        .filter(|a| !a.is_positional())
        .flat_map(|a| {
            let longs = a.get_long_and_visible_aliases().unwrap_or_default();
            let shorts = a.get_short_and_visible_aliases().unwrap_or_default();
            longs
                .into_iter()
                .map(|l| format!("--{l}"))
                .chain(shorts.into_iter().map(|c| format!("-{c}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Command {
        let mut argv = vec!["taskrail"];
        argv.extend(args);
        match Cli::parse_argv(argv.into_iter().map(Into::into).collect()) {
            Ok(cli) => cli.command.expect("a subcommand"),
            Err(e) => panic!("{args:?}: {e}"),
        }
    }

    #[test]
    fn ids_starting_with_a_hyphen_are_ids() {
        let id = "-Xq3_bc";
        fn with<'a>(cmd: &[&'a str]) -> Vec<&'a str> {
            [cmd, &["--server", "http://127.0.0.1:1/mcp"]].concat()
        }
        assert!(matches!(parse(&with(&["get", id])), Command::Get { task_id } if task_id == id));
        assert!(
            matches!(parse(&with(&["cancel", id])), Command::Cancel { task_id } if task_id == id)
        );
        assert!(
            matches!(parse(&["timeline", id, "--json"]), Command::Timeline { task_id, json: true } if task_id == id)
        );
        assert!(
            matches!(parse(&["export", id, "-o", "f"]), Command::Export { task_id, .. } if task_id == id)
        );
        match parse(&with(&["answer", id, "-k", "--json", "{}"])) {
            Command::Answer {
                task_id,
                key,
                response,
                ..
            } => {
                assert_eq!(
                    (task_id.as_str(), key.as_str(), response.as_str()),
                    (id, "-k", "{}")
                )
            }
            other => panic!("{other:?}"),
        }
        for argv in [
            with(&["watch", "--json", id, "-Yy"]),
            with(&["watch", id, "-Yy", "--json"]),
            ["watch", id, "-Yy", "--json", "-s", "http://127.0.0.1:1/mcp"].to_vec(),
        ] {
            match parse(&argv) {
                Command::Watch { task_ids, json } => {
                    assert_eq!(task_ids, [id, "-Yy"], "{argv:?}");
                    assert!(json, "{argv:?}");
                }
                other => panic!("{other:?}"),
            }
        }
        // after `--` everything is an id
        match parse(&["watch", "--", id, "--json"]) {
            Command::Watch { task_ids, json } => {
                assert_eq!(task_ids, [id, "--json"]);
                assert!(!json);
            }
            other => panic!("{other:?}"),
        }
    }
}
