//! The `:` command line: the text being typed with its cursor, then the last error, the
//! candidates of an ambiguous completion, or the synopsis of the command being typed.
//! Must not mutate state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::Theme;
use super::text::fit;
use crate::sanitize::sanitize_line;
use crate::state::State;
use crate::state::command::COMMANDS;
use crate::state::widths;

pub struct CommandBar<'a> {
    pub state: &'a State,
    pub theme: &'a Theme,
}

impl Widget for CommandBar<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let CommandBar { state, theme } = self;
        let Some(line) = &state.command else {
            return;
        };
        let value = line.input.value();
        let width = (area.width as usize).saturating_sub(4).max(10);
        let scroll = line.input.visual_scroll(width);
        let shown: String = value.chars().skip(scroll).take(width).collect();
        let cur = line.input.visual_cursor().saturating_sub(scroll);
        let split = shown
            .char_indices()
            .nth(cur)
            .map_or(shown.len(), |(i, _)| i);
        let (before, after) = shown.split_at(split);
        let mut rest = after.chars();
        let at = rest.next().map(String::from).unwrap_or_else(|| " ".into());
        let mut spans = vec![
            Span::styled(" : ", theme.key),
            Span::raw(sanitize_line(before, widths::COMMAND_LINE)),
            Span::styled(at, theme.cursor),
            Span::raw(rest.collect::<String>()),
        ];
        let used: usize = spans.iter().map(|s| s.width()).sum();
        let room = (area.width as usize).saturating_sub(used + 2);
        let name = value.split_whitespace().next().unwrap_or("");
        if let Some(err) = &line.error {
            spans.push(Span::styled(format!("  {}", fit(err, room)), theme.error));
        } else if !line.candidates.is_empty() {
            let list = line.candidates.join("  ");
            spans.push(Span::styled(format!("  {}", fit(&list, room)), theme.dim));
        } else if let Some((n, syn)) = COMMANDS.iter().find(|(n, _)| *n == name) {
            let text = format!("{n} {}", syn.trim_start());
            spans.push(Span::styled(format!("  {}", fit(&text, room)), theme.dim));
        } else if value.is_empty() {
            let names: Vec<&str> = COMMANDS.iter().map(|(n, _)| *n).collect();
            spans.push(Span::styled(
                format!("  {}", fit(&names.join(" "), room)),
                theme.dim,
            ));
        }
        Line::from(spans).render(area, buf);
    }
}
