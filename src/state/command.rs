//! The `:` command line: the command vocabulary, parsing a line into a `Command`,
//! completion of command names and their arguments (servers, sort columns, themes), the
//! line's editing keys and running a command. Pure; effects are returned, never executed.

use tui_input::Input;

use super::keys::{Key, KeyCode};
use super::modal::Modal;
use super::{Effect, Now, SortColumn, State, hints, inbox, line_edit, servers};
use crate::engine::{NoticeLevel, ServerId};
use crate::state::widths;

/// The commands, with their argument synopsis (shown in help and errors).
pub const COMMANDS: &[(&str, &str)] = &[
    (
        "server",
        "NAME|all  show one server's tasks (all: every server)",
    ),
    ("servers", "  every server: address, push, health, requests"),
    ("filter", "REGEX  filter the rows (empty: clear)"),
    (
        "sort",
        "COLUMN [asc|desc]  sort by age, server, id, tool, status, seen or ttl",
    ),
    ("export", "[FILE]  write the task's timeline as JSONL"),
    ("theme", "NAME  switch the colour theme"),
    ("inbox", "  every pending input request"),
    ("login", "[SERVER]  sign in to a server that asks for it"),
    (
        "redirect",
        "URL  the address the browser ended on, for a running sign-in",
    ),
    ("hints", "  conformance hints of the servers"),
    (
        "wire",
        "[SERVER|all]  the raw JSON-RPC messages (all: every server)",
    ),
    ("stats", "  pictures of the work over time"),
    ("help", "  the key bindings"),
    ("quit", "  leave taskrail"),
];

/// A parsed command.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Server(Option<ServerId>),
    Filter(String),
    Sort(SortColumn, Option<bool>),
    Export(Option<String>),
    Theme(String),
    Servers,
    Inbox,
    Hints,
    Stats,
    Help,
    Quit,
    SignIn(Option<ServerId>),
    Redirect(String),
    Wire(Option<ServerId>),
}

/// The open command line.
#[derive(Debug, Clone, Default)]
pub struct CommandLine {
    pub input: Input,
    /// Why the last line could not run.
    pub error: Option<String>,
    /// Candidates of the last ambiguous completion.
    pub candidates: Vec<String>,
}

fn server_arg(arg: &str, state: &State) -> Result<Option<ServerId>, String> {
    if arg.is_empty() || arg == "all" || arg == "*" {
        return Ok(None);
    }
    let ids: Vec<&ServerId> = state.servers.iter().map(|s| &s.id).collect();
    if let Some(id) = ids.iter().find(|id| id.as_str() == arg) {
        return Ok(Some((*id).clone()));
    }
    let by_prefix: Vec<&&ServerId> = ids
        .iter()
        .filter(|id| id.as_str().starts_with(arg))
        .collect();
    match by_prefix.as_slice() {
        [one] => Ok(Some((**one).clone())),
        [] => Err(format!(
            "no server {arg:?} (servers: {})",
            ids.iter()
                .map(|i| i.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        _ => Err(format!("{arg:?} names several servers")),
    }
}

/// Parse one command line (without the leading `:`).
pub fn parse(line: &str, state: &State) -> Result<Command, String> {
    let line = line.trim();
    let (name, arg) = match line.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (line, ""),
    };
    let matching: Vec<&str> = COMMANDS
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| n.starts_with(name))
        .collect();
    let name = match (
        COMMANDS.iter().find(|(n, _)| *n == name),
        matching.as_slice(),
    ) {
        _ if name.is_empty() => return Err("type a command; tab completes".into()),
        (Some((n, _)), _) => *n,
        (None, [one]) => one,
        (None, []) => return Err(format!("unknown command {name:?}")),
        (None, _) => return Err(format!("{name:?} is ambiguous: {}", matching.join(", "))),
    };
    Ok(match name {
        "server" => Command::Server(server_arg(arg, state)?),
        "filter" => Command::Filter(arg.to_string()),
        "sort" => {
            let mut words = arg.split_whitespace();
            let col = words.next().unwrap_or("");
            let column = SortColumn::ALL
                .into_iter()
                .find(|c| c.title() == col)
                .ok_or_else(|| format!("sort by one of: {}", sort_names().join(", ")))?;
            let order = match words.next() {
                None => None,
                Some("asc") => Some(false),
                Some("desc") => Some(true),
                Some(o) => return Err(format!("order {o:?}: asc or desc")),
            };
            Command::Sort(column, order)
        }
        "export" => Command::Export((!arg.is_empty()).then(|| arg.to_string())),
        "theme" => {
            if !state.themes.iter().any(|t| t == arg) {
                return Err(format!("themes: {}", state.themes.join(", ")));
            }
            Command::Theme(arg.to_string())
        }
        "servers" => Command::Servers,
        "inbox" => Command::Inbox,
        "stats" => Command::Stats,
        "login" => Command::SignIn(server_arg(arg, state)?),
        "redirect" if arg.is_empty() => {
            return Err("paste the address the browser ended on: redirect URL".into());
        }
        "redirect" => Command::Redirect(arg.to_string()),
        "hints" => Command::Hints,
        "wire" => Command::Wire(server_arg(arg, state)?),
        "help" => Command::Help,
        _ => Command::Quit,
    })
}

fn sort_names() -> Vec<String> {
    SortColumn::ALL
        .iter()
        .map(|c| c.title().to_string())
        .collect()
}

/// Full-line candidates for `line` (command names first, then arguments).
pub fn complete(line: &str, state: &State) -> Vec<String> {
    let Some((name, arg)) = line.split_once(' ') else {
        return COMMANDS
            .iter()
            .filter(|(n, _)| n.starts_with(line))
            .map(|(n, _)| n.to_string())
            .collect();
    };
    let options: Vec<String> = match name {
        "server" => std::iter::once("all".to_string())
            .chain(state.servers.iter().map(|s| s.id.as_str().to_string()))
            .collect(),
        "login" | "wire" => state
            .servers
            .iter()
            .map(|s| s.id.as_str().to_string())
            .collect(),
        "sort" => match arg.split_once(' ') {
            Some((col, _)) => vec![format!("{col} asc"), format!("{col} desc")],
            None => sort_names(),
        },
        "theme" => state.themes.clone(),
        _ => Vec::new(),
    };
    options
        .into_iter()
        .filter(|o| o.starts_with(arg))
        .map(|o| format!("{name} {o}"))
        .collect()
}

/// The longest common prefix of the candidates.
pub fn common_prefix(candidates: &[String]) -> String {
    let Some(first) = candidates.first() else {
        return String::new();
    };
    let mut end = first.len();
    for c in &candidates[1..] {
        end = end.min(
            first
                .char_indices()
                .zip(c.chars())
                .find(|((_, a), b)| a != b)
                .map(|((i, _), _)| i)
                .unwrap_or(first.len().min(c.len())),
        );
    }
    first[..end].to_string()
}

impl CommandLine {
    /// Tab: complete to the single candidate (with a trailing space when an argument can
    /// follow), or to the candidates' common prefix, remembering them for display.
    pub fn complete(&mut self, state: &State) {
        let line = self.input.value().to_string();
        let candidates = complete(&line, state);
        let next = match candidates.as_slice() {
            [] => return,
            [one] => {
                let takes_arg = !one.contains(' ')
                    && COMMANDS
                        .iter()
                        .any(|(n, syn)| n == one && !syn.starts_with(' '));
                self.candidates.clear();
                if takes_arg {
                    format!("{one} ")
                } else {
                    one.clone()
                }
            }
            many => {
                self.candidates = many.to_vec();
                common_prefix(many)
            }
        };
        if next.len() >= line.len() {
            self.input = Input::new(next);
        }
    }
}

/// `:`: open an empty command line.
pub(super) fn open(state: &mut State) {
    state.command = Some(CommandLine::default());
}

/// `esc`: leave the command line.
pub(super) fn close(state: &mut State) {
    state.command = None;
}

/// `tab`: complete the line.
pub(super) fn complete_line(state: &mut State) {
    if let Some(mut line) = state.command.take() {
        line.complete(state);
        state.command = Some(line);
    }
}

/// A key the keymap does not bind, typed into the command line (backspace on an empty
/// line leaves it).
pub(super) fn edit(state: &mut State, key: Key) {
    let Some(line) = state.command.as_mut() else {
        return;
    };
    if key.code == KeyCode::Backspace && line.input.value().is_empty() {
        state.command = None;
        return;
    }
    if let Some(req) = line_edit::request(key) {
        line.input.handle(req);
        line.error = None;
        line.candidates.clear();
    }
}

/// `enter`: run the line, or keep it open with the reason it cannot run.
pub(super) fn run(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    let Some(line) = state.command.as_mut() else {
        return;
    };
    let text = line.input.value().to_string();
    let cmd = match parse(&text, state) {
        Ok(c) => c,
        Err(e) => {
            if let Some(line) = state.command.as_mut() {
                line.error = Some(e);
            }
            return;
        }
    };
    state.command = None;
    match cmd {
        Command::Server(server) => {
            let text = match &server {
                Some(s) => format!("showing {s} only (:server all for every server)"),
                None => "showing every server".to_string(),
            };
            state.board.server = server;
            state.board.dirty = true;
            state.notify(NoticeLevel::Info, &text, now);
        }
        Command::Filter(regex) => {
            state.board.filter.set(&regex);
            state.board.filter.editing = false;
            state.board.dirty = true;
        }
        Command::Sort(column, order) => {
            state.board.sort = column;
            if let Some(desc) = order {
                state.board.descending = desc;
            }
            state.board.dirty = true;
        }
        Command::Export(path) => match state.focused_task() {
            Some(key) => {
                let path =
                    path.unwrap_or_else(|| format!("taskrail-{}.jsonl", key.task_id.file_stem()));
                fx.push(Effect::Export { key, path });
            }
            None => state.notify(NoticeLevel::Info, "no task selected to export", now),
        },
        Command::Theme(name) => {
            state.theme = name.clone();
            fx.push(Effect::SetTheme(name));
        }
        Command::Servers => servers::open_view(state),
        Command::Inbox => inbox::open(state),
        Command::SignIn(server) => super::signin::sign_in(state, server, now, fx),
        Command::Redirect(url) => super::signin::pasted(state, url, now, fx),
        Command::Hints => hints::open(state),
        Command::Wire(server) => super::wire::open(
            state,
            server.map(|s| crate::sanitize::sanitize_line(s.as_str(), widths::SERVER_REF)),
        ),
        Command::Stats => super::stats::open(state, now, fx),
        Command::Help => state.modals.push(Modal::Help { scroll: 0 }),
        Command::Quit => fx.push(Effect::Quit),
    }
}

/// The outcome of `:export`.
pub(super) fn exported(state: &mut State, result: Result<String, String>, now: Now) {
    match result {
        Ok(path) => state.notify(
            NoticeLevel::Info,
            &format!("timeline written to {path}"),
            now,
        ),
        Err(e) => state.notify(NoticeLevel::Error, &format!("export failed: {e}"), now),
    }
}
