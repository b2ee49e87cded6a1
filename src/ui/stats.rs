//! The statistics view (`:stats`): tasks over time by status as stacked bars (a chart whose
//! layers differ by symbol, not only colour), tasks waiting for input (a sparkline), each
//! server's request latency (a sparkline with p50/p95), push vs poll per server (bars) and
//! task durations (a histogram). Takes the body; must not mutate state.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Bar, BarChart, BarGroup, Chart, Dataset, GraphType, Paragraph, Sparkline, Widget,
};

use super::Theme;
use super::popup::frame;
use super::text::fit;
use crate::sanitize::sanitize_line;
use crate::state::State;
use crate::state::charts::{DURATION_BINS, Summary};
use crate::state::views::stats::{StatsData, StatsView};
use crate::state::widths;

/// The chart's layers, bottom up: name, marker, the symbol the marker draws.
const LAYERS: [(&str, Marker, &str); 3] = [
    ("running", Marker::Block, "█"),
    ("completed", Marker::Bar, "▄"),
    ("failed/cancelled/expired", Marker::Dot, "•"),
];

/// `data` in `cols` columns, each the largest of the buckets it holds (the latest bucket
/// always in the last column).
pub fn columns(data: &[u64], cols: usize) -> Vec<u64> {
    if cols == 0 || data.is_empty() {
        return Vec::new();
    }
    if data.len() <= cols {
        return data.to_vec();
    }
    (0..cols)
        .map(|c| {
            let (a, b) = (c * data.len() / cols, (c + 1) * data.len() / cols);
            data[a..b.max(a + 1)].iter().copied().max().unwrap_or(0)
        })
        .collect()
}

pub struct StatsScreen<'a> {
    pub state: &'a State,
    pub view: &'a StatsView,
    pub theme: &'a Theme,
}

impl Widget for StatsScreen<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let StatsScreen { state, view, theme } = self;
        let mut title = format!("Statistics · {}", view.range.label());
        if let StatsData::Loaded(s) = &view.data {
            title.push_str(&format!(" · {} tasks", s.tasks));
            if s.truncated {
                title.push_str(" (partial)");
            }
        }
        if view.loading {
            title.push_str(" · reading…");
        }
        let inner = frame(area, buf, &fit(&title, area.width as usize), theme, true);
        if inner.height < 3 || inner.width < 20 {
            return;
        }
        let summary = match &view.data {
            StatsData::Loaded(s) => s,
            StatsData::Loading => {
                Paragraph::new(Line::styled("reading the ledger…", theme.dim)).render(inner, buf);
                return;
            }
            StatsData::Failed(e) => {
                Paragraph::new(Line::styled(
                    format!("cannot read the ledger: {e}"),
                    theme.error,
                ))
                .render(inner, buf);
                return;
            }
        };
        // The legend's width at least (48 columns), three fifths on wide screens.
        let left_w = (inner.width * 3 / 5).max(48).min(inner.width);
        let [left, gap, right] = Layout::horizontal([
            Constraint::Length(left_w),
            Constraint::Length(1),
            Constraint::Min(0),
        ])
        .areas(inner);
        let _ = gap;
        render_left(summary, theme, left, buf);
        render_right(state, summary, theme, right, buf);
    }
}

/// Tasks by status over time, its legend, and tasks waiting for input.
fn render_left(s: &Summary, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let [head, chart, legend, wait_head, wait] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(2),
    ])
    .areas(area);
    Line::styled("Tasks by status", theme.heading).render(head, buf);
    let styles = [theme.working, theme.completed, theme.failed];
    // Layers stacked: each dataset is the sum of its layer and those below, drawn top
    // layer first so the lower ones overwrite their part of the bar.
    let running = &s.status.running;
    let done: Vec<u64> = running
        .iter()
        .zip(&s.status.completed)
        .map(|(a, b)| a + b)
        .collect();
    let all: Vec<u64> = done
        .iter()
        .zip(&s.status.failed)
        .map(|(a, b)| a + b)
        .collect();
    // Room for the y labels (the widest number) and the axis line.
    let peak = all.iter().copied().max().unwrap_or(0).max(1);
    let label_w = peak.to_string().len() as u16 + 1;
    let cols = chart.width.saturating_sub(label_w) as usize;
    let stacks = [running.clone(), done, all].map(|v| columns(&v, cols));
    let n = stacks[0].len().max(1);
    let points: Vec<Vec<(f64, f64)>> = stacks
        .iter()
        .map(|v| {
            v.iter()
                .enumerate()
                .filter(|(_, y)| **y > 0)
                .map(|(x, y)| (x as f64 + 0.5, *y as f64))
                .collect()
        })
        .collect();
    let datasets: Vec<Dataset> = (0..LAYERS.len())
        .rev()
        .map(|i| {
            Dataset::default()
                .marker(LAYERS[i].1)
                .graph_type(GraphType::Bar)
                .style(styles[i])
                .data(&points[i])
        })
        .collect();
    let start = s.window.start.format("%H:%M").to_string();
    let start = if s.window.secs >= 900 {
        s.window.start.format("%a %H:%M").to_string()
    } else {
        start
    };
    Chart::new(datasets)
        .legend_position(None)
        .x_axis(
            Axis::default()
                .bounds([0.0, n as f64])
                .labels([
                    Span::styled(start, theme.dim),
                    Span::styled("now", theme.dim),
                ])
                .style(theme.dim),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, peak as f64])
                .labels([
                    Span::styled("0", theme.dim),
                    Span::styled(peak.to_string(), theme.dim),
                ])
                .style(theme.dim),
        )
        .render(chart, buf);
    let mut spans = Vec::new();
    for (i, (name, _, symbol)) in LAYERS.iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw(" "));
        }
        spans.push(Span::styled(format!("{symbol} "), styles[i]));
        spans.push(Span::styled(*name, theme.label));
    }
    Line::from(spans).render(legend, buf);
    let most = s.waiting.iter().copied().max().unwrap_or(0);
    Line::from(vec![
        Span::styled("Waiting for input", theme.heading),
        Span::styled(format!("  (most at once: {most})"), theme.dim),
    ])
    .render(wait_head, buf);
    Sparkline::default()
        .data(columns(&s.waiting, wait.width as usize))
        .max(most.max(1))
        .style(theme.input)
        .render(wait, buf);
}

/// Latency per server, push vs poll per server, and the durations histogram.
fn render_right(state: &State, s: &Summary, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let servers = state.servers.len().clamp(1, 3) as u16;
    let shares = s.arrivals.len().clamp(1, 3) as u16;
    let [lat_head, lat, share_head, share, dur_head, dur] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(servers),
        Constraint::Length(1),
        Constraint::Length(shares),
        Constraint::Length(1),
        Constraint::Min(0),
    ])
    .areas(area);
    Line::styled("Latency p50/p95", theme.heading).render(lat_head, buf);
    let names = state.server_names();
    let name_w = (area.width / 4).clamp(4, 12) as usize;
    for (i, (srv, name)) in state
        .servers
        .iter()
        .zip(&names)
        .take(servers as usize)
        .enumerate()
    {
        let row = Rect::new(lat.x, lat.y + i as u16, lat.width, 1);
        let figures = match srv.latency.p50_p95() {
            Some((p50, p95)) => format!(" {}/{} ms", short_ms(p50), short_ms(p95)),
            None => " no requests yet".to_string(),
        };
        let fig_w = figures.chars().count() as u16;
        let [label, spark, fig] = Layout::horizontal([
            Constraint::Length(name_w as u16 + 1),
            Constraint::Min(0),
            Constraint::Length(fig_w),
        ])
        .areas(row);
        Line::styled(fit(name, name_w), theme.accent).render(label, buf);
        Sparkline::default()
            .data(srv.latency.latest(spark.width as usize))
            .style(theme.accent)
            .render(spark, buf);
        Line::styled(figures, theme.label).render(fig, buf);
    }
    Line::styled("Push vs poll (snapshots)", theme.heading).render(share_head, buf);
    if s.arrivals.is_empty() {
        Line::styled("nothing arrived in this range", theme.dim).render(share, buf);
    }
    for (i, (srv, a)) in s.arrivals.iter().take(shares as usize).enumerate() {
        let row = Rect::new(share.x, share.y + i as u16, share.width, 1);
        let pct = a.push_percent().unwrap_or(0);
        let text = format!(" push {pct}% · poll {}%", 100 - pct);
        let [label, bar, fig] = Layout::horizontal([
            Constraint::Length(name_w as u16 + 1),
            Constraint::Min(0),
            Constraint::Length(text.chars().count() as u16),
        ])
        .areas(row);
        let name = state
            .servers
            .iter()
            .position(|x| &x.id == srv)
            .and_then(|i| names.get(i).cloned())
            .unwrap_or_else(|| sanitize_line(srv.as_str(), widths::NAME_IN_TITLE));
        Line::styled(fit(&name, name_w), theme.accent).render(label, buf);
        share_bar(pct, theme, bar, buf);
        Line::styled(text, theme.label).render(fig, buf);
    }
    Line::styled("Durations (ended in range)", theme.heading).render(dur_head, buf);
    if dur.height < 2 {
        return;
    }
    let bars: Vec<Bar> = DURATION_BINS
        .iter()
        .zip(s.durations)
        .map(|((label, _), n)| {
            Bar::default()
                .value(n)
                .label(Line::from(*label))
                .style(theme.completed)
                .value_style(theme.title)
        })
        .collect();
    // Wide enough for the labels (`<10s`) where the room allows, one column apart.
    let bar_w = ((dur.width + 1) / DURATION_BINS.len() as u16)
        .saturating_sub(1)
        .clamp(1, 5);
    BarChart::default()
        .direction(Direction::Vertical)
        .data(BarGroup::default().bars(&bars))
        .bar_width(bar_w)
        .bar_gap(1)
        .label_style(theme.dim)
        .render(dur, buf);
}

/// The push share as a bar: `▮` pushed, `·` polled.
fn share_bar(pct: u64, theme: &Theme, area: Rect, buf: &mut Buffer) {
    let w = area.width as u64;
    let pushed = ((pct * w + 50) / 100) as usize;
    Line::from(vec![
        Span::styled("▮".repeat(pushed), theme.healthy),
        Span::styled("·".repeat(w as usize - pushed), theme.dim),
    ])
    .render(area, buf);
}

/// A duration in milliseconds, short (`850`, `1.2k`, `35k`).
fn short_ms(ms: u32) -> String {
    match ms {
        0..=9_999 => ms.to_string(),
        10_000..=999_999 => format!("{}k", ms / 1000),
        _ => format!("{}M", ms / 1_000_000),
    }
}
