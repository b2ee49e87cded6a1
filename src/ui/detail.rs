//! The detail view of one task (every field, result blocks or error, timeline) and the
//! plain-result view, both scrollable documents wrapped to the screen width. Must not
//! mutate state or build documents from unbounded input (the state's builders cut first).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::Theme;
use super::popup::frame;
use super::text::wrap;
use crate::state::detail::task_doc;
use crate::state::doc::{DocLine, LineKind};
use crate::state::modal::{DetailView, DocView};
use crate::state::{Now, State};

/// Wrap document lines to `width` and keep the `height` lines starting at `scroll`
/// (clamped so the last page stays full).
pub fn doc_window<'a>(
    doc: &[DocLine],
    width: usize,
    scroll: usize,
    height: usize,
    theme: &Theme,
) -> (Vec<Line<'a>>, usize, usize) {
    let mut out: Vec<Line> = Vec::new();
    for l in doc {
        let style = match l.kind {
            LineKind::Heading => theme.heading,
            LineKind::SubHeading => theme.accent,
            LineKind::Field | LineKind::Body => theme.base,
            LineKind::Code => theme.code,
            LineKind::Dim => theme.dim,
            LineKind::Error => theme.error,
            LineKind::Link => theme.link,
        };
        if l.kind == LineKind::Heading && !out.is_empty() {
            out.push(Line::raw(""));
        }
        match &l.label {
            Some(label) => {
                let lab = format!("{label:>14}  ");
                let indent = lab.chars().count();
                for (i, part) in wrap(&l.text, width.saturating_sub(indent))
                    .into_iter()
                    .enumerate()
                {
                    let head = if i == 0 {
                        lab.clone()
                    } else {
                        " ".repeat(indent)
                    };
                    out.push(Line::from(vec![
                        Span::styled(head, theme.label),
                        Span::styled(part, style),
                    ]));
                }
            }
            None => {
                for part in wrap(&l.text, width) {
                    out.push(Line::styled(part, style));
                }
            }
        }
    }
    let total = out.len();
    let scroll = scroll.min(total.saturating_sub(height));
    let window = out.into_iter().skip(scroll).take(height).collect();
    (window, scroll, total)
}

fn scroll_title(base: &str, scroll: usize, height: usize, total: usize) -> String {
    if total <= height {
        base.to_string()
    } else {
        format!(
            "{base} · {}-{} of {total}",
            scroll + 1,
            (scroll + height).min(total)
        )
    }
}

pub struct DetailScreen<'a> {
    pub state: &'a State,
    pub view: &'a DetailView,
    pub theme: &'a Theme,
    pub now: Now,
}

impl Widget for DetailScreen<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let DetailScreen {
            state,
            view,
            theme,
            now,
        } = self;
        let doc = match state.tasks.get(&view.key) {
            Some(row) => task_doc(row, &view.timeline, now),
            None => vec![DocLine::new(LineKind::Dim, "this task is no longer known")],
        };
        let inner_w = area.width.saturating_sub(2) as usize;
        let inner_h = area.height.saturating_sub(2) as usize;
        let (lines, scroll, total) = doc_window(&doc, inner_w, view.scroll, inner_h, theme);
        let short = view.key.task_id.prefix();
        let title = scroll_title(&format!("Task {short}"), scroll, inner_h, total);
        let inner = frame(area, buf, &title, theme, true);
        Paragraph::new(lines).render(inner, buf);
    }
}

pub struct DocScreen<'a> {
    pub view: &'a DocView,
    pub theme: &'a Theme,
}

impl Widget for DocScreen<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let DocScreen { view, theme } = self;
        let inner_w = area.width.saturating_sub(2) as usize;
        let inner_h = area.height.saturating_sub(2) as usize;
        let (lines, scroll, total) = doc_window(&view.lines, inner_w, view.scroll, inner_h, theme);
        let title = scroll_title(&view.title, scroll, inner_h, total);
        let inner = frame(area, buf, &title, theme, true);
        Paragraph::new(lines).render(inner, buf);
    }
}
