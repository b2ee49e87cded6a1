//! The `Action` vocabulary (user intents) and the keymap that binds keys to actions per
//! context, parsed from `assets/keymap.toml`. Help and footer hints are generated from the
//! descriptions here. Must not perform any action itself.

use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;

use super::keys::Key;

/// The default keymap, embedded at build time.
pub const DEFAULT_KEYMAP: &str = include_str!("../../assets/keymap.toml");

macro_rules! actions {
    ($($variant:ident = $name:literal),* $(,)?) => {
        /// A user intent, named in the keymap.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Action { $($variant),* }

        impl Action {
            pub const ALL: &'static [Action] = &[$(Action::$variant),*];

            pub fn name(self) -> &'static str {
                match self { $(Action::$variant => $name),* }
            }

            pub fn from_name(s: &str) -> Option<Action> {
                match s { $($name => Some(Action::$variant),)* _ => None }
            }
        }
    };
}

actions! {
    Quit = "quit",
    Help = "help",
    Close = "close",
    Up = "up",
    Down = "down",
    PageUp = "page_up",
    PageDown = "page_down",
    Top = "top",
    Bottom = "bottom",
    OpenDetail = "open_detail",
    Answer = "answer",
    Cancel = "cancel_task",
    NewTask = "new_task",
    Refresh = "refresh",
    Filter = "filter",
    FilterApply = "filter_apply",
    FilterClear = "filter_clear",
    NextTab = "next_tab",
    PrevTab = "prev_tab",
    SortNext = "sort_next",
    SortReverse = "sort_reverse",
    DismissNotice = "dismiss_notice",
    Confirm = "confirm",
    Deny = "deny",
    Select = "select",
    NextField = "next_field",
    PrevField = "prev_field",
    Toggle = "toggle",
    Submit = "submit",
    Decline = "decline",
    Dismiss = "dismiss",
    Rerun = "rerun",
    Inbox = "inbox",
    Command = "command",
    CommandRun = "command_run",
    CommandCancel = "command_cancel",
    Complete = "complete",
    Hints = "hints",
    OpenUrl = "open_url",
    CopyUrl = "copy_url",
    Done = "done",
    RunCommand = "run_command",
    Roots = "roots",
    Servers = "servers",
    SignIn = "sign_in",
    Wire = "wire",
    Pause = "pause",
    Stats = "stats",
    StatsLonger = "stats_longer",
    StatsShorter = "stats_shorter",
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a key press is interpreted. `Global` bindings apply when the context has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Context {
    Global,
    Board,
    Filter,
    Detail,
    Form,
    Confirm,
    Picker,
    Help,
    Command,
    /// The URL consent view.
    Consent,
    /// The sampling view (the reply is typed here).
    Sampling,
    /// The wire view (raw JSON-RPC messages).
    Wire,
    /// The statistics view.
    Stats,
}

impl Context {
    pub const ALL: [Context; 13] = [
        Context::Board,
        Context::Filter,
        Context::Command,
        Context::Detail,
        Context::Stats,
        Context::Form,
        Context::Consent,
        Context::Sampling,
        Context::Confirm,
        Context::Picker,
        Context::Wire,
        Context::Help,
        Context::Global,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Context::Global => "global",
            Context::Board => "board",
            Context::Filter => "filter",
            Context::Detail => "detail",
            Context::Form => "form",
            Context::Confirm => "confirm",
            Context::Picker => "picker",
            Context::Help => "help",
            Context::Command => "command",
            Context::Consent => "consent",
            Context::Sampling => "sampling",
            Context::Wire => "wire",
            Context::Stats => "stats",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Context::Global => "Everywhere",
            Context::Board => "Task table",
            Context::Filter => "Filter lines (the table's and a picker's `/`)",
            Context::Detail => "Detail and result views",
            Context::Form => "Forms",
            Context::Confirm => "Confirmation",
            Context::Picker => "Pickers",
            Context::Help => "Help",
            Context::Command => "Command line (`:`)",
            Context::Consent => "Link consent (URL-mode input)",
            Context::Sampling => "Sampling (the server asks for an LLM reply)",
            Context::Wire => "Wire view (the raw JSON-RPC messages, newest first)",
            Context::Stats => "Statistics (`:stats`)",
        }
    }
}

/// One binding as declared in the keymap.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    pub keys: Vec<Key>,
    pub action: Action,
    pub description: String,
    /// Short label for the footer hints (absent = not in the footer).
    pub hint: Option<String>,
}

/// Keys bound to actions, per context, in declaration order.
#[derive(Debug, Clone, PartialEq)]
pub struct Keymap {
    bindings: Vec<(Context, Binding)>,
    lookup: HashMap<(Context, Key), Action>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBinding {
    keys: Vec<String>,
    action: String,
    description: String,
    #[serde(default)]
    hint: Option<String>,
}

impl Keymap {
    /// The embedded default keymap.
    pub fn default_keymap() -> Keymap {
        Keymap::parse(DEFAULT_KEYMAP).expect("the embedded keymap is valid (tested)")
    }

    /// Parse a keymap TOML: one array of tables per context (`[[board]]`, `[[form]]`, …),
    /// each with `keys`, `action`, `description` and optional `hint`.
    pub fn parse(text: &str) -> Result<Keymap, String> {
        let raw: HashMap<String, Vec<RawBinding>> =
            toml::from_str(text).map_err(|e| format!("keymap: {e}"))?;
        let mut bindings = Vec::new();
        let mut lookup = HashMap::new();
        for ctx in Context::ALL {
            let Some(list) = raw.get(ctx.name()) else {
                continue;
            };
            for (i, rb) in list.iter().enumerate() {
                let action = Action::from_name(&rb.action).ok_or_else(|| {
                    format!(
                        "keymap: unknown action `{}` in [[{}]] binding {} (known: {})",
                        rb.action,
                        ctx.name(),
                        i + 1,
                        Action::ALL
                            .iter()
                            .map(|a| a.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?;
                let mut keys = Vec::new();
                for k in &rb.keys {
                    let key = Key::parse(k).map_err(|e| {
                        format!("keymap: {e} in [[{}]] binding {}", ctx.name(), i + 1)
                    })?;
                    if lookup.insert((ctx, key), action).is_some() {
                        return Err(format!(
                            "keymap: key `{k}` bound twice in [[{}]]",
                            ctx.name()
                        ));
                    }
                    keys.push(key);
                }
                bindings.push((
                    ctx,
                    Binding {
                        keys,
                        action,
                        description: rb.description.clone(),
                        hint: rb.hint.clone(),
                    },
                ));
            }
        }
        if let Some(unknown) = raw
            .keys()
            .find(|k| !Context::ALL.iter().any(|c| c.name() == k.as_str()))
        {
            return Err(format!("keymap: unknown context [[{unknown}]]"));
        }
        Ok(Keymap { bindings, lookup })
    }

    /// Context by its name in the keymap file.
    pub fn context_named(name: &str) -> Option<Context> {
        Context::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Rebind: `action` in `ctx` gets exactly `keys`. Keys taken from another action of the
    /// same context leave it; an action the context did not have is added (described like
    /// its first binding elsewhere).
    pub fn rebind(&mut self, ctx: Context, action: Action, keys: Vec<Key>) {
        for (c, b) in &mut self.bindings {
            if *c == ctx {
                b.keys.retain(|k| !keys.contains(k));
            }
        }
        let existing = self
            .bindings
            .iter_mut()
            .find(|(c, b)| *c == ctx && b.action == action);
        match existing {
            Some((_, b)) => b.keys = keys,
            None => {
                let description = self
                    .bindings
                    .iter()
                    .find(|(_, b)| b.action == action)
                    .map(|(_, b)| b.description.clone())
                    .unwrap_or_else(|| action.name().replace('_', " "));
                self.bindings.push((
                    ctx,
                    Binding {
                        keys,
                        action,
                        description,
                        hint: None,
                    },
                ));
            }
        }
        self.lookup = self
            .bindings
            .iter()
            .flat_map(|(c, b)| b.keys.iter().map(move |k| ((*c, *k), b.action)))
            .collect();
    }

    /// The action for `key` in `ctx`, falling back to the global bindings.
    pub fn action(&self, ctx: Context, key: Key) -> Option<Action> {
        self.lookup
            .get(&(ctx, key))
            .or_else(|| self.lookup.get(&(Context::Global, key)))
            .copied()
    }

    /// The bindings of one context, in declaration order.
    pub fn bindings(&self, ctx: Context) -> impl Iterator<Item = &Binding> {
        self.bindings
            .iter()
            .filter(move |(c, _)| *c == ctx)
            .map(|(_, b)| b)
    }

    /// The first key bound to `action` in `ctx` (or globally), for hints.
    pub fn key_for(&self, ctx: Context, action: Action) -> Option<Key> {
        self.bindings(ctx)
            .chain(self.bindings(Context::Global))
            .find(|b| b.action == action)
            .and_then(|b| b.keys.first().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_keymap_parses_and_binds_core_keys() {
        let km = Keymap::default_keymap();
        assert_eq!(
            km.action(Context::Board, Key::char('q')),
            Some(Action::Quit)
        );
        assert_eq!(
            km.action(Context::Board, Key::char('c')),
            Some(Action::Cancel)
        );
        assert_eq!(
            km.action(Context::Confirm, Key::char('y')),
            Some(Action::Confirm)
        );
        assert_eq!(
            km.action(Context::Form, Key::ctrl('s')),
            Some(Action::Submit)
        );
        assert_eq!(
            km.action(Context::Detail, Key::ctrl('c')),
            Some(Action::Quit)
        );
        assert!(km.bindings(Context::Board).any(|b| b.hint.is_some()));
    }

    #[test]
    fn unknown_action_is_a_clear_error() {
        let err = Keymap::parse(
            "[[board]]\nkeys = [\"z\"]\naction = \"explode\"\ndescription = \"boom\"\n",
        )
        .unwrap_err();
        assert!(err.contains("unknown action `explode`"), "{err}");
        assert!(err.contains("[[board]] binding 1"), "{err}");
    }

    #[test]
    fn unknown_context_and_bad_key_are_errors() {
        assert!(
            Keymap::parse("[[nowhere]]\nkeys=[\"q\"]\naction=\"quit\"\ndescription=\"x\"\n")
                .unwrap_err()
                .contains("unknown context")
        );
        assert!(
            Keymap::parse("[[board]]\nkeys=[\"hyper+q\"]\naction=\"quit\"\ndescription=\"x\"\n")
                .unwrap_err()
                .contains("unknown key")
        );
    }
}
