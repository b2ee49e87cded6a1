//! The one place colours live: `Theme` maps semantic roles to styles. Views ask the theme,
//! never name a colour themselves. Must not hold state.

use ratatui::style::{Color, Modifier, Style};

use crate::engine::NoticeLevel;
use crate::mcp::TaskStatus;

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
