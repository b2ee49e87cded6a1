//! The sampling popup: who asks and how a reply is made here (typed, or by the configured
//! command after approval, or not offered), the request as a scrollable document (system
//! prompt, conversation, preferences, token limit), the reply being typed (or the
//! command's output to read before sending), and the keys. Must not mutate state.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::Theme;
use super::detail::doc_window;
use super::popup::{answer_frame, asked_by};
use super::text::wrap_words as wrap;
use crate::sanitize::sanitize_line;
use crate::state::views::sampling::{Phase, SamplingView};
use crate::state::widths;
use crate::state::{Action, Context, SamplingSetup, State};

pub struct SamplingPopup<'a> {
    pub state: &'a State,
    pub view: &'a SamplingView,
    pub theme: &'a Theme,
    pub focused: bool,
}

fn how(view: &SamplingView) -> String {
    match &view.setup {
        None => "taskrail does not offer sampling to this server".to_string(),
        Some(SamplingSetup::Person) => "you type the assistant's reply".to_string(),
        Some(SamplingSetup::Command { command, .. }) => format!(
            "the reply comes from `{}` once you approve (or type it)",
            sanitize_line(command, widths::COMMAND)
        ),
    }
}

impl Widget for SamplingPopup<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let SamplingPopup {
            state,
            view,
            theme,
            focused,
        } = self;
        let inner = answer_frame(area, buf, 110, "Sampling", &view.title, theme, focused);
        let width = inner.width as usize;
        let reply_rows = (inner.height / 3).clamp(3, 12);
        let [head, doc, sep, reply, status, keys] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(2),
            Constraint::Length(1),
            Constraint::Length(reply_rows),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .areas(inner);
        asked_by(view.target.server(), &format!(" · {}", how(view)), theme).render(head, buf);
        let (window, _, total) =
            doc_window(&view.doc, width, view.scroll, doc.height as usize, theme);
        Paragraph::new(window).render(doc, buf);
        let more = if total > doc.height as usize {
            " (pgup/pgdn scroll the request)"
        } else {
            ""
        };
        Line::styled(format!("── Reply{more} "), theme.dim).render(sep, buf);
        let mut lines: Vec<Line<'static>> = Vec::new();
        if view.setup.is_none() {
            let note = if view.can_refuse {
                "Sampling is not offered to this server (add sampling = … to its config entry). Refuse the request, or cancel the task."
            } else {
                "Sampling is not offered to this server (add sampling = … to its config entry). Close this and cancel the task (c)."
            };
            for part in wrap(note, width) {
                lines.push(Line::styled(part, theme.warn));
            }
        } else {
            let first = view.reply.row.saturating_sub(reply.height as usize - 1);
            for (i, l) in view
                .reply
                .lines
                .iter()
                .enumerate()
                .skip(first)
                .take(reply.height as usize)
            {
                let l = sanitize_line(l, widths::TYPED);
                let mut spans = vec![Span::styled("│ ", theme.dim)];
                if focused && i == view.reply.row && view.phase != Phase::Running {
                    let col = view.reply.col;
                    let before: String = l.chars().take(col).collect();
                    let at: String = l.chars().nth(col).map_or(" ".into(), String::from);
                    let after: String = l.chars().skip(col + 1).collect();
                    spans.push(Span::raw(before));
                    spans.push(Span::styled(at, theme.cursor));
                    spans.push(Span::raw(after));
                } else {
                    spans.push(Span::raw(l));
                }
                lines.push(Line::from(spans));
            }
        }
        Paragraph::new(lines).render(reply, buf);
        let (text, style) = match (&view.error, &view.phase) {
            (Some(e), _) => (
                // the reducer's own words, or made display-safe when set
                format!("✖ {e}"),
                theme.error,
            ),
            (None, Phase::Running) => ("running the sampling command…".to_string(), theme.label),
            (None, Phase::Review) => (
                "the command's output is the reply above: read it (edit if you like), then send"
                    .to_string(),
                theme.warn,
            ),
            (None, Phase::Failed(e)) => (format!("✖ the command failed: {e}"), theme.error),
            (None, Phase::Compose) => (String::new(), theme.dim),
        };
        Line::styled(text, style).render(status, buf);
        let km = &state.keymap;
        let k = |a| {
            km.key_for(Context::Sampling, a)
                .map(|k| k.to_string())
                .unwrap_or_default()
        };
        let mut hints = Vec::new();
        if view.setup.is_some() {
            hints.extend([
                Span::styled(k(Action::Submit), theme.key),
                Span::raw(" send  "),
            ]);
        }
        if matches!(view.setup, Some(SamplingSetup::Command { .. })) {
            hints.extend([
                Span::styled(k(Action::RunCommand), theme.key),
                Span::raw(" approve and run  "),
            ]);
        }
        if view.can_refuse {
            hints.extend([
                Span::styled(k(Action::Decline), theme.key),
                Span::raw(" refuse  "),
            ]);
        }
        hints.extend([
            Span::styled(k(Action::Close), theme.key),
            Span::raw(" back"),
        ]);
        Line::from(hints).render(keys, buf);
    }
}
