//! The URL consent popup: whose request, the server's reason, the host on its own line and
//! the whole link with its host emphasised, the warnings (or why the link is refused),
//! what has been done so far, and the keys. Must not mutate state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};
use unicode_width::UnicodeWidthChar;

use super::Theme;
use super::popup::{answer_frame, asked_by};
use super::text::wrap_words as wrap;
use crate::state::views::consent::ConsentView;
use crate::state::{Action, Context, State};

/// Split a (sanitized) URL into before-host, host, after-host. The host is what follows
/// any `user@` part of the authority, so `https://good.example@evil.example/` shows evil.
pub fn split_host(url: &str) -> (String, String, String) {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return (String::new(), String::new(), url.to_string());
    };
    let rest = &url[start..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host_at = authority.rfind('@').map_or(0, |i| i + 1);
    let host_end = authority[host_at..]
        .rfind(':')
        .filter(|_| !authority[host_at..].starts_with('['))
        .map_or(authority.len(), |i| host_at + i);
    (
        url[..start + host_at].to_string(),
        authority[host_at..host_end].to_string(),
        url[start + host_end..].to_string(),
    )
}

/// Hard-wrap styled parts into lines of `width` columns, each prefixed by `indent`.
fn wrap_styled(parts: &[(String, Style)], width: usize, indent: &str) -> Vec<Line<'static>> {
    let width = width.saturating_sub(indent.len()).max(8);
    let mut lines = Vec::new();
    let mut spans: Vec<Span<'static>> = vec![Span::raw(indent.to_string())];
    let mut w = 0;
    for (text, style) in parts {
        let mut cur = String::new();
        for c in text.chars() {
            let cw = c.width().unwrap_or(0);
            if w + cw > width {
                spans.push(Span::styled(std::mem::take(&mut cur), *style));
                lines.push(Line::from(std::mem::take(&mut spans)));
                spans.push(Span::raw(indent.to_string()));
                w = 0;
            }
            w += cw;
            cur.push(c);
        }
        spans.push(Span::styled(cur, *style));
    }
    lines.push(Line::from(spans));
    lines
}

pub struct ConsentPopup<'a> {
    pub state: &'a State,
    pub view: &'a ConsentView,
    pub theme: &'a Theme,
    pub focused: bool,
}

impl Widget for ConsentPopup<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ConsentPopup {
            state,
            view,
            theme,
            focused,
        } = self;
        let inner = answer_frame(area, buf, 100, "Link", &view.title, theme, focused);
        let width = inner.width as usize;
        let check = &view.check;
        let mut lines: Vec<Line<'static>> =
            vec![asked_by(view.target.server(), " to visit a link", theme)];
        if state.read_only {
            lines.push(Line::styled("read-only: answers are disabled", theme.warn));
        }
        lines.push(Line::raw(""));
        for part in wrap(&view.message, width) {
            lines.push(Line::styled(part, theme.heading));
        }
        lines.push(Line::raw(""));
        if !check.host.is_empty() {
            let mut host = vec![
                Span::styled("  site  ", theme.label),
                Span::styled(check.host.clone(), theme.host),
            ];
            if let Some(u) = &check.unicode_host {
                host.push(Span::styled(
                    format!("  (shown as \u{201c}{u}\u{201d})"),
                    theme.warn,
                ));
            }
            lines.push(Line::from(host));
        }
        let (before, host, after) = split_host(&check.shown);
        let parts = [
            (before, theme.link),
            (host, theme.host),
            (after, theme.link),
        ];
        let mut link = wrap_styled(&parts, width, "        ");
        if let Some(first) = link.first_mut() {
            first.spans[0] = Span::styled("  link  ", theme.label);
        }
        lines.extend(link);
        lines.push(Line::raw(""));
        for w in &check.warnings {
            for (i, part) in wrap(w, width.saturating_sub(4)).into_iter().enumerate() {
                let mark = if i == 0 { "  ⚠ " } else { "    " };
                lines.push(Line::styled(format!("{mark}{part}"), theme.warn));
            }
        }
        if let Some(why) = &check.refused {
            for (i, part) in wrap(&format!("refused: {why}"), width.saturating_sub(4))
                .into_iter()
                .enumerate()
            {
                let mark = if i == 0 { "  ✖ " } else { "    " };
                lines.push(Line::styled(format!("{mark}{part}"), theme.error));
            }
        }
        let mut done = Vec::new();
        if view.opened {
            done.push("opened in your browser");
        }
        if view.copied {
            done.push("copied to the clipboard");
        }
        if view.completed {
            done.push("the server reports the interaction complete");
        }
        let status = if done.is_empty() {
            "taskrail fetches nothing itself: open the link in your browser or copy it.".to_string()
        } else {
            format!("So far: {}.", done.join("; "))
        };
        for part in wrap(&status, width.saturating_sub(2)) {
            lines.push(Line::styled(format!("  {part}"), theme.dim));
        }
        lines.push(Line::raw(""));
        if let Some(e) = &view.error {
            lines.push(Line::styled(
                // made display-safe when it was set
                format!("✖ {e}"),
                theme.error,
            ));
        }
        let keys = &state.keymap;
        let k = |a| {
            keys.key_for(Context::Consent, a)
                .map(|k| k.to_string())
                .unwrap_or_default()
        };
        let mut hints = Vec::new();
        if check.refused.is_none() {
            hints.extend([
                Span::styled(k(Action::OpenUrl), theme.key),
                Span::raw(" open  "),
                Span::styled(k(Action::CopyUrl), theme.key),
                Span::raw(" copy  "),
                Span::styled(k(Action::Done), theme.key),
                Span::raw(" done  "),
            ]);
        }
        hints.extend([
            Span::styled(k(Action::Decline), theme.key),
            Span::raw(" decline  "),
            Span::styled(k(Action::Dismiss), theme.key),
            Span::raw(" cancel  "),
            Span::styled(k(Action::Close), theme.key),
            Span::raw(" back"),
        ]);
        lines.push(Line::from(hints));
        let h = inner.height as usize;
        let offset = view.scroll.min(lines.len().saturating_sub(h));
        Paragraph::new(lines)
            .scroll((offset as u16, 0))
            .render(inner, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_is_the_real_host() {
        let (a, h, b) = split_host("https://good.example@evil.example:8443/path?q=1");
        assert_eq!(h, "evil.example");
        assert_eq!(a, "https://good.example@");
        assert_eq!(b, ":8443/path?q=1");
        assert_eq!(
            split_host("https://mcp.example.com/ui").1,
            "mcp.example.com"
        );
        assert_eq!(split_host("not a url").1, "");
    }

    #[test]
    fn styled_parts_wrap_with_their_style() {
        let s = Style::default();
        let lines = wrap_styled(&[("abcdefghij".into(), s), ("XY".into(), s)], 12, "  ");
        let text: Vec<String> = lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.to_string()).collect())
            .collect();
        assert_eq!(text, vec!["  abcdefghij", "  XY"]);
    }
}
