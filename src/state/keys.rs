//! Terminal-independent key presses: the reducer's input vocabulary and the keymap's
//! notation (`ctrl+s`, `shift+tab`, `pgdn`, `?`). Must not import crossterm or ratatui.

use std::fmt;

/// A key without modifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyCode {
    Char(char),
    Enter,
    Esc,
    Tab,
    BackTab,
    Backspace,
    Delete,
    Left,
    Right,
    Up,
    Down,
    Home,
    End,
    PageUp,
    PageDown,
    F(u8),
}

/// A key press with the modifiers the keymap distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
    pub alt: bool,
}

impl Key {
    pub const fn plain(code: KeyCode) -> Key {
        Key {
            code,
            ctrl: false,
            alt: false,
        }
    }

    pub const fn char(c: char) -> Key {
        Key::plain(KeyCode::Char(c))
    }

    pub const fn ctrl(c: char) -> Key {
        Key {
            code: KeyCode::Char(c),
            ctrl: true,
            alt: false,
        }
    }

    /// A printable character typed without ctrl/alt (goes into text fields).
    pub fn text_char(&self) -> Option<char> {
        match self.code {
            KeyCode::Char(c) if !self.ctrl && !self.alt => Some(c),
            _ => None,
        }
    }

    /// Parse the keymap notation: `q`, `?`, `enter`, `ctrl+s`, `shift+tab`, `alt+x`, `f1`.
    pub fn parse(s: &str) -> Result<Key, String> {
        let mut ctrl = false;
        let mut alt = false;
        let mut shift = false;
        let mut rest = s;
        loop {
            let lower = rest.to_ascii_lowercase();
            if let Some(r) = lower.strip_prefix("ctrl+").filter(|r| !r.is_empty()) {
                ctrl = true;
                rest = &rest[rest.len() - r.len()..];
            } else if let Some(r) = lower.strip_prefix("alt+").filter(|r| !r.is_empty()) {
                alt = true;
                rest = &rest[rest.len() - r.len()..];
            } else if let Some(r) = lower.strip_prefix("shift+").filter(|r| !r.is_empty()) {
                shift = true;
                rest = &rest[rest.len() - r.len()..];
            } else {
                break;
            }
        }
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) => KeyCode::Char(if shift { c.to_ascii_uppercase() } else { c }),
            _ => match rest.to_ascii_lowercase().as_str() {
                "enter" | "return" => KeyCode::Enter,
                "esc" | "escape" => KeyCode::Esc,
                "tab" if shift => KeyCode::BackTab,
                "tab" => KeyCode::Tab,
                "backtab" => KeyCode::BackTab,
                "backspace" => KeyCode::Backspace,
                "delete" | "del" => KeyCode::Delete,
                "left" => KeyCode::Left,
                "right" => KeyCode::Right,
                "up" => KeyCode::Up,
                "down" => KeyCode::Down,
                "home" => KeyCode::Home,
                "end" => KeyCode::End,
                "pageup" | "pgup" => KeyCode::PageUp,
                "pagedown" | "pgdn" => KeyCode::PageDown,
                "space" => KeyCode::Char(' '),
                f if f.starts_with('f') => f[1..]
                    .parse::<u8>()
                    .map(KeyCode::F)
                    .map_err(|_| format!("unknown key `{s}`"))?,
                _ => return Err(format!("unknown key `{s}`")),
            },
        };
        Ok(Key { code, ctrl, alt })
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ctrl {
            f.write_str("^")?;
        }
        if self.alt {
            f.write_str("M-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Esc => f.write_str("esc"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::BackTab => f.write_str("S-tab"),
            KeyCode::Backspace => f.write_str("bksp"),
            KeyCode::Delete => f.write_str("del"),
            KeyCode::Left => f.write_str("←"),
            KeyCode::Right => f.write_str("→"),
            KeyCode::Up => f.write_str("↑"),
            KeyCode::Down => f.write_str("↓"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::PageUp => f.write_str("pgup"),
            KeyCode::PageDown => f.write_str("pgdn"),
            KeyCode::F(n) => write!(f, "F{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_notation() {
        assert_eq!(Key::parse("q"), Ok(Key::char('q')));
        assert_eq!(Key::parse("ctrl+s"), Ok(Key::ctrl('s')));
        assert_eq!(Key::parse("shift+tab"), Ok(Key::plain(KeyCode::BackTab)));
        assert_eq!(Key::parse("S"), Ok(Key::char('S')));
        assert_eq!(Key::parse("+"), Ok(Key::char('+')));
        assert_eq!(Key::parse("pgdn"), Ok(Key::plain(KeyCode::PageDown)));
        assert_eq!(Key::parse("f1"), Ok(Key::plain(KeyCode::F(1))));
        assert!(Key::parse("hyper+q").is_err());
        assert!(Key::parse("").is_err());
    }
}
