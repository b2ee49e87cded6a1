//! The one place colours live: `Theme` maps semantic roles to styles. Views ask the theme,
//! never name a colour themselves. Must not hold state.

use ratatui::style::{Color, Modifier, Style};

use crate::config::theme::{Colour, Emphasis, StyleSpec, ThemeSpec};
use crate::state::{NoticeLevel, TaskStatus};

macro_rules! roles {
    ($($role:ident),* $(,)?) => {
        fn role_mut<'a>(theme: &'a mut Theme, name: &str) -> Option<&'a mut Style> {
            match name {
                $(stringify!($role) => Some(&mut theme.$role),)*
                _ => None,
            }
        }
    };
}

roles!(
    base,
    title,
    dim,
    accent,
    border,
    border_focus,
    selected,
    table_header,
    tab_active,
    tab_inactive,
    working,
    input,
    completed,
    failed,
    cancelled,
    unknown,
    pending_op,
    gauge_fill,
    gauge_empty,
    healthy,
    degraded,
    info,
    warn,
    error,
    key,
    heading,
    label,
    code,
    link,
    host,
    required,
    field_focus,
    cursor,
);

fn colour(c: Colour) -> Color {
    match c {
        Colour::Reset => Color::Reset,
        Colour::Black => Color::Black,
        Colour::Red => Color::Red,
        Colour::Green => Color::Green,
        Colour::Yellow => Color::Yellow,
        Colour::Blue => Color::Blue,
        Colour::Magenta => Color::Magenta,
        Colour::Cyan => Color::Cyan,
        Colour::Gray => Color::Gray,
        Colour::DarkGray => Color::DarkGray,
        Colour::LightRed => Color::LightRed,
        Colour::LightGreen => Color::LightGreen,
        Colour::LightYellow => Color::LightYellow,
        Colour::LightBlue => Color::LightBlue,
        Colour::LightMagenta => Color::LightMagenta,
        Colour::LightCyan => Color::LightCyan,
        Colour::White => Color::White,
        Colour::Rgb(r, g, b) => Color::Rgb(r, g, b),
    }
}

fn style(spec: &StyleSpec) -> Style {
    let mut s = Style::new();
    if let Some(fg) = spec.fg {
        s = s.fg(colour(fg));
    }
    if let Some(bg) = spec.bg {
        s = s.bg(colour(bg));
    }
    for e in &spec.emphasis {
        s = s.add_modifier(match e {
            Emphasis::Bold => Modifier::BOLD,
            Emphasis::Dim => Modifier::DIM,
            Emphasis::Italic => Modifier::ITALIC,
            Emphasis::Underlined => Modifier::UNDERLINED,
            Emphasis::Reversed => Modifier::REVERSED,
            Emphasis::Crossed => Modifier::CROSSED_OUT,
        });
    }
    s
}

/// Semantic styles used by every view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Theme {
    pub base: Style,
    pub title: Style,
    pub dim: Style,
    pub accent: Style,
    pub border: Style,
    pub border_focus: Style,
    pub selected: Style,
    pub table_header: Style,
    pub tab_active: Style,
    pub tab_inactive: Style,
    pub working: Style,
    pub input: Style,
    pub completed: Style,
    pub failed: Style,
    pub cancelled: Style,
    pub unknown: Style,
    pub pending_op: Style,
    pub gauge_fill: Style,
    pub gauge_empty: Style,
    pub healthy: Style,
    pub degraded: Style,
    pub info: Style,
    pub warn: Style,
    pub error: Style,
    pub key: Style,
    pub heading: Style,
    pub label: Style,
    pub code: Style,
    pub link: Style,
    pub host: Style,
    pub required: Style,
    pub field_focus: Style,
    pub cursor: Style,
}

impl Default for Theme {
    fn default() -> Self {
        let fg = |c: Color| Style::new().fg(c);
        Theme {
            base: Style::new(),
            title: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            dim: fg(Color::DarkGray),
            accent: fg(Color::Cyan),
            border: fg(Color::DarkGray),
            border_focus: fg(Color::Cyan),
            selected: Style::new()
                .bg(Color::Rgb(40, 52, 72))
                .add_modifier(Modifier::BOLD),
            table_header: fg(Color::Gray).add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            tab_active: fg(Color::Black)
                .bg(Color::Cyan)
                .add_modifier(Modifier::BOLD),
            tab_inactive: fg(Color::Gray),
            working: fg(Color::Blue),
            input: fg(Color::Yellow).add_modifier(Modifier::BOLD),
            completed: fg(Color::Green),
            failed: fg(Color::Red),
            cancelled: fg(Color::Magenta),
            unknown: fg(Color::Gray),
            pending_op: fg(Color::Yellow).add_modifier(Modifier::ITALIC),
            gauge_fill: fg(Color::Cyan),
            gauge_empty: fg(Color::DarkGray),
            healthy: fg(Color::Green),
            degraded: fg(Color::Yellow),
            info: fg(Color::Cyan),
            warn: fg(Color::Yellow),
            error: fg(Color::Red).add_modifier(Modifier::BOLD),
            key: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            heading: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            label: fg(Color::Gray),
            code: fg(Color::White),
            link: fg(Color::Blue).add_modifier(Modifier::UNDERLINED),
            host: fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
            required: fg(Color::Red),
            field_focus: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            cursor: Style::new().add_modifier(Modifier::REVERSED),
        }
    }
}

impl Theme {
    pub fn status(&self, status: &TaskStatus) -> Style {
        match status {
            TaskStatus::Working => self.working,
            TaskStatus::InputRequired => self.input,
            TaskStatus::Completed => self.completed,
            TaskStatus::Failed => self.failed,
            TaskStatus::Cancelled => self.cancelled,
            TaskStatus::Other(_) => self.unknown,
        }
    }

    pub fn notice(&self, level: NoticeLevel) -> Style {
        match level {
            NoticeLevel::Info => self.info,
            NoticeLevel::Warn => self.warn,
            NoticeLevel::Error => self.error,
        }
    }
}

/// The icon shown before a status.
impl Theme {
    /// The default theme with a theme file's roles applied.
    pub fn from_spec(spec: &ThemeSpec) -> Theme {
        let mut theme = Theme::default();
        for (role, s) in &spec.styles {
            if let Some(slot) = role_mut(&mut theme, role) {
                *slot = style(s);
            }
        }
        theme
    }

    /// A bundled theme by name.
    pub fn bundled(name: &str) -> Option<Theme> {
        crate::config::theme::bundled(name).map(|s| Theme::from_spec(&s))
    }

    /// Every bundled theme, by name.
    pub fn all_bundled() -> Vec<(String, Theme)> {
        crate::config::theme::BUNDLED
            .iter()
            .filter_map(|(n, _)| Some((n.to_string(), Theme::bundled(n)?)))
            .collect()
    }
}

pub fn status_icon(status: &TaskStatus) -> &'static str {
    match status {
        TaskStatus::Working => "▶",
        TaskStatus::InputRequired => "✎",
        TaskStatus::Completed => "✔",
        TaskStatus::Failed => "✖",
        TaskStatus::Cancelled => "⊘",
        TaskStatus::Other(_) => "·",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::theme::{ROLES, bundled};

    #[test]
    fn every_role_a_file_may_set_is_a_style_here() {
        let mut t = Theme::default();
        for role in ROLES {
            assert!(role_mut(&mut t, role).is_some(), "{role}");
        }
    }

    #[test]
    fn bundled_themes_apply_and_dark_is_the_default() {
        assert_eq!(Theme::bundled("dark"), Some(Theme::default()));
        assert_ne!(Theme::bundled("light"), Some(Theme::default()));
        let mono = Theme::from_spec(&bundled("mono").unwrap());
        assert_eq!(mono.failed.fg, None);
        let t = Theme::from_spec(
            &crate::config::theme::parse_theme("title = \"black on yellow bold\"").unwrap(),
        );
        assert_eq!(
            t.title,
            Style::new()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD)
        );
    }
}
