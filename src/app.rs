//! The event loop only: one `tokio::select!` over terminal input (keys and mouse), engine
//! events, timeline loads and exports, the outgoing command queue and a 1 Hz tick; folds
//! everything through `state::update` and draws when dirty (paced by `pacing`: a burst of
//! engine events coalesced into one frame). Owns the
//! terminal (and the bell / desktop notifications written to it) and restores it on every
//! exit path. Must not await the network or hold state behind locks.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use crossterm::event::{
    Event, EventStream, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEventKind,
};
use futures::Stream;
use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::layout::Rect;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::config::{Desktop, NotifyConfig};
use crate::engine::{EngineCommand, EngineEvent, NoticeLevel, ServerId, TaskId, WireHub};
pub use crate::state::TimelineEntry;
use crate::state::charts::{Range, Summary};
use crate::state::{Alert, AlertKind, Effect, Key, KeyCode, Keymap, Mouse, Msg, State, update};
use crate::ui::{self, Dashboard, Theme};

pub mod export_file;
#[cfg(test)]
mod loop_tests;
mod pacing;
mod probe;
mod wire_feed;

use crate::state::widths;
use pacing::Pacer;
pub use probe::{FRAME_TITLE_ENV, FrameTitle, NoProbe, Probe};

/// Where the detail view's timeline and a resumed task's payload come from (the ledger,
/// adapted by the caller).
pub trait TimelineSource: Send + Sync {
    fn timeline(
        &self,
        server: &ServerId,
        task_id: &TaskId,
    ) -> BoxFuture<'static, anyhow::Result<Vec<TimelineEntry>>>;

    /// The task's timeline as JSONL (for `:export`).
    fn export(
        &self,
        server: &ServerId,
        task_id: &TaskId,
    ) -> BoxFuture<'static, anyhow::Result<String>>;

    /// The payload of a task resumed without it (`state::payload`).
    fn payload(
        &self,
        server: &ServerId,
        task_id: &TaskId,
    ) -> BoxFuture<'static, anyhow::Result<crate::state::payload::Payload>>;

    /// The statistics view's summary of `range` ending at `now`, aggregated where it is
    /// read (never on the UI task).
    fn stats(
        &self,
        range: Range,
        now: chrono::DateTime<chrono::Utc>,
    ) -> BoxFuture<'static, anyhow::Result<Box<Summary>>>;
}

/// A timeline source with nothing in it, for headless runs (benchmarks, tests).
pub struct NoTimeline;

impl TimelineSource for NoTimeline {
    fn timeline(
        &self,
        _: &ServerId,
        _: &TaskId,
    ) -> BoxFuture<'static, anyhow::Result<Vec<TimelineEntry>>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn export(&self, _: &ServerId, _: &TaskId) -> BoxFuture<'static, anyhow::Result<String>> {
        Box::pin(async { Ok(String::new()) })
    }

    fn payload(
        &self,
        _: &ServerId,
        _: &TaskId,
    ) -> BoxFuture<'static, anyhow::Result<crate::state::payload::Payload>> {
        Box::pin(async { Ok(Default::default()) })
    }

    fn stats(
        &self,
        range: Range,
        now: chrono::DateTime<chrono::Utc>,
    ) -> BoxFuture<'static, anyhow::Result<Box<Summary>>> {
        Box::pin(async move {
            Ok(Box::new(crate::state::charts::summarize(
                range,
                now,
                &[],
                &[],
                false,
            )))
        })
    }
}

/// How the dashboard looks and behaves (from the config file).
pub struct DashboardSettings {
    pub keymap: Keymap,
    /// Themes `:theme` can switch to, by name; the first one named `theme` is used.
    pub themes: Vec<(String, Theme)>,
    pub theme: String,
    pub notify: NotifyConfig,
    pub mouse: bool,
    /// What each server is offered beyond forms and links (sampling, roots).
    pub input: std::collections::HashMap<ServerId, crate::state::ServerInput>,
}

impl Default for DashboardSettings {
    fn default() -> Self {
        DashboardSettings {
            keymap: Keymap::default_keymap(),
            themes: Theme::all_bundled(),
            theme: "dark".into(),
            notify: NotifyConfig::default(),
            mouse: true,
            input: Default::default(),
        }
    }
}

/// The bytes that announce `alert` under `cfg` (bell, OSC 9 or OSC 777); empty when off.
pub fn alert_bytes(cfg: &NotifyConfig, alert: &Alert) -> Vec<u8> {
    let wanted = match alert.kind {
        AlertKind::Input => cfg.on_input,
        AlertKind::Finished => cfg.on_finished,
    };
    let mut out = Vec::new();
    if !wanted {
        return out;
    }
    // No escape or control character of the text may reach the terminal, nor `;`
    // (the OSC 777 field separator).
    let text: String = crate::sanitize::sanitize_line(&alert.text, widths::ERROR_LINE)
        .chars()
        .filter(|c| !c.is_control() && *c != ';')
        .collect();
    match cfg.desktop {
        Desktop::Off => {}
        Desktop::Osc9 => out.extend(format!("\x1b]9;taskrail: {text}\x07").bytes()),
        Desktop::Osc777 => out.extend(format!("\x1b]777;notify;taskrail;{text}\x07").bytes()),
    }
    if cfg.bell {
        out.push(0x07);
    }
    out
}

/// Run an effect that reaches outside taskrail, on the person's keypress: the browser,
/// the clipboard (OSC 52 written to `terminal`), a sampling command. What it comes to
/// arrives later as a message (a future to poll); other effects are ignored.
pub(crate) fn run_outside(effect: Effect, terminal: &mut dyn std::io::Write) -> Option<Load> {
    match effect {
        Effect::OpenBrowser(url) => match crate::launch::open_browser(&url) {
            Ok(()) => None,
            Err(e) => Some(Box::pin(async move { Msg::BrowserFailed(e) })),
        },
        Effect::Copy(text) => {
            let _ = terminal
                .write_all(&crate::launch::osc52(&text))
                .and_then(|()| terminal.flush());
            None
        }
        Effect::RunSampling {
            target,
            input_key,
            command,
            timeout,
            input,
        } => Some(Box::pin(async move {
            let result = crate::launch::run_sampling(&command, timeout, &input).await;
            Msg::SamplingFinished {
                target,
                input_key,
                result,
            }
        })),
        _ => None,
    }
}

/// Write bytes straight to the terminal (bell, OSC sequences).
fn write_terminal(bytes: &[u8]) {
    use std::io::Write as _;
    let mut out = std::io::stdout();
    let _ = out.write_all(bytes).and_then(|()| out.flush());
}

/// Everything the dashboard needs from the rest of the program.
pub struct DashboardContext {
    /// Shown in the header from the start, in this order.
    pub servers: Vec<ServerId>,
    /// Servers shown as disabled (the configuration cannot be used), with why.
    pub disabled: Vec<(ServerId, String)>,
    pub commands: mpsc::Sender<EngineCommand>,
    pub events: mpsc::Receiver<EngineEvent>,
    pub timeline: Arc<dyn TimelineSource>,
    /// Disables cancel, answer and call.
    pub read_only: bool,
    pub settings: DashboardSettings,
    /// Where the wire view's messages come from (none: the view stays empty).
    pub wire: Option<Arc<WireHub>>,
}

impl DashboardContext {
    /// A context for a headless run (benchmarks, tests): no disabled servers, no
    /// timelines, the default settings.
    pub fn headless(
        servers: Vec<ServerId>,
        commands: mpsc::Sender<EngineCommand>,
        events: mpsc::Receiver<EngineEvent>,
    ) -> DashboardContext {
        DashboardContext {
            servers,
            disabled: Vec::new(),
            commands,
            events,
            timeline: Arc::new(NoTimeline),
            read_only: false,
            settings: DashboardSettings::default(),
            wire: None,
        }
    }
}

/// Restores the terminal when dropped (early returns, errors, unwinding panics).
struct RestoreGuard {
    mouse: bool,
}

impl Drop for RestoreGuard {
    fn drop(&mut self) {
        if self.mouse {
            let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
        }
        // Best effort and silent: after a hangup there is no terminal to restore or to
        // print a complaint to.
        let _ = ratatui::try_restore();
    }
}

/// Resolves when the process is asked to end (SIGTERM, SIGHUP, SIGINT), with the
/// signal's name; the handlers are in place as soon as this returns.
#[cfg(unix)]
fn end_signals() -> anyhow::Result<impl std::future::Future<Output = &'static str>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut hup = signal(SignalKind::hangup()).context("installing the SIGHUP handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = hup.recv() => "SIGHUP",
            _ = int.recv() => "SIGINT",
        }
    })
}

#[cfg(not(unix))]
fn end_signals() -> anyhow::Result<impl std::future::Future<Output = &'static str>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    })
}

/// Engine events folded in at most before the loop looks at input and the screen again.
const DRAIN_MAX: usize = 512;

/// Run the dashboard until the user quits or the process is told to end (SIGTERM, SIGHUP,
/// SIGINT). Owns the terminal: `ratatui::try_init()` (which also installs a panic hook that
/// restores it) and a restore on every exit path.
/// Tasks keep running server-side after `q`; shutting the engine down is the caller's job.
pub async fn run_dashboard(ctx: DashboardContext) -> anyhow::Result<()> {
    let ended = end_signals()?;
    let mut terminal = ratatui::try_init().context("cannot set up the terminal")?;
    let mouse = ctx.settings.mouse;
    let _guard = RestoreGuard { mouse };
    if mouse {
        crossterm::execute!(std::io::stdout(), crossterm::event::EnableMouseCapture)
            .context("cannot enable the mouse")?;
    }
    let mut probe: Box<dyn Probe + Send> = if std::env::var_os(FRAME_TITLE_ENV).is_some() {
        Box::new(FrameTitle::default())
    } else {
        Box::new(NoProbe)
    };
    tokio::select! {
        r = event_loop(&mut terminal, EventStream::new(), ctx, probe.as_mut()) => r,
        // `kill` or a closed terminal: leave like `q` does (the guard restores the screen).
        sig = ended => {
            tracing::info!("{sig}: leaving the dashboard");
            Ok(())
        }
    }
}

/// Translate a mouse event into the reducer's terms (a click against the regions of the
/// frame on screen, recorded while it was drawn).
fn to_mouse(hits: &ui::HitMap, m: crossterm::event::MouseEvent) -> Option<Mouse> {
    match m.kind {
        MouseEventKind::ScrollUp => Some(Mouse::ScrollUp),
        MouseEventKind::ScrollDown => Some(Mouse::ScrollDown),
        MouseEventKind::Down(MouseButton::Left) => Some(Mouse::Click(hits.at(m.column, m.row))),
        _ => None,
    }
}

/// Translate a crossterm key into the reducer's key type.
pub fn to_key(k: KeyEvent) -> Option<Key> {
    let code = match k.code {
        crossterm::event::KeyCode::Char(c) => KeyCode::Char(c),
        crossterm::event::KeyCode::Enter => KeyCode::Enter,
        crossterm::event::KeyCode::Esc => KeyCode::Esc,
        crossterm::event::KeyCode::Tab => KeyCode::Tab,
        crossterm::event::KeyCode::BackTab => KeyCode::BackTab,
        crossterm::event::KeyCode::Backspace => KeyCode::Backspace,
        crossterm::event::KeyCode::Delete => KeyCode::Delete,
        crossterm::event::KeyCode::Left => KeyCode::Left,
        crossterm::event::KeyCode::Right => KeyCode::Right,
        crossterm::event::KeyCode::Up => KeyCode::Up,
        crossterm::event::KeyCode::Down => KeyCode::Down,
        crossterm::event::KeyCode::Home => KeyCode::Home,
        crossterm::event::KeyCode::End => KeyCode::End,
        crossterm::event::KeyCode::PageUp => KeyCode::PageUp,
        crossterm::event::KeyCode::PageDown => KeyCode::PageDown,
        crossterm::event::KeyCode::F(n) => KeyCode::F(n),
        _ => return None,
    };
    Some(Key {
        code,
        ctrl: k.modifiers.contains(KeyModifiers::CONTROL),
        alt: k.modifiers.contains(KeyModifiers::ALT),
    })
}

fn viewport(state: &State, width: u16, height: u16) -> Msg {
    let a = ui::areas(Rect::new(0, 0, width, height), state);
    Msg::Viewport {
        table_rows: ui::table_rows(&a),
        page_rows: a.body.height.saturating_sub(3) as usize,
    }
}

pub(crate) type Load = BoxFuture<'static, Msg>;

/// The loop itself, on any backend and input stream (it returns when `input` ends).
pub async fn event_loop<B, I>(
    terminal: &mut Terminal<B>,
    mut input: I,
    ctx: DashboardContext,
    probe: &mut (dyn Probe + Send),
) -> anyhow::Result<()>
where
    B: Backend,
    B::Error: Send + Sync + 'static,
    I: Stream<Item = std::io::Result<Event>> + Unpin,
{
    let DashboardContext {
        servers,
        disabled,
        commands,
        mut events,
        timeline,
        read_only,
        settings,
        wire,
    } = ctx;
    let mut feed = wire_feed::WireFeed::new(wire);
    let mut state = State::new(servers, read_only, settings.keymap);
    for (server, why) in &disabled {
        state.disable_server(server, why);
    }
    state.themes = settings.themes.iter().map(|(n, _)| n.clone()).collect();
    state.theme = settings.theme.clone();
    state.input = settings.input.clone();
    let find_theme = |name: &str| {
        settings
            .themes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
    };
    let mut theme = find_theme(&settings.theme).unwrap_or_default();
    let mut loads: FuturesUnordered<Load> = FuturesUnordered::new();
    let mut outbox: VecDeque<EngineCommand> = VecDeque::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut events_open = true;
    let mut size = terminal.size()?;
    let mut dirty = true;
    let mut pacer = Pacer::new(Instant::now());
    let first = viewport(&state, size.width, size.height);
    update(&mut state, first, chrono::Utc::now());

    // The clickable regions of the frame on screen.
    let mut hits = ui::HitMap::default();
    let mut drained = 0usize;
    let (mut dirty_since, mut last_msg) = (Instant::now(), Instant::now());
    loop {
        // Engine events already waiting are folded in before drawing: a burst (many tasks
        // changing at once) then costs one frame, not one per event.
        let msg = if drained < DRAIN_MAX
            && let Ok(ev) = events.try_recv()
        {
            drained += 1;
            Msg::Engine(ev)
        } else {
            drained = 0;
            let draw_at = pacer.draw_at(dirty_since, last_msg);
            if dirty && Instant::now() >= draw_at {
                let started = Instant::now();
                state.ensure_view();
                let now = chrono::Utc::now();
                terminal.draw(|f| {
                    let dashboard = Dashboard {
                        state: &state,
                        theme: &theme,
                        now,
                    };
                    dashboard.draw(f.area(), f.buffer_mut(), &mut hits)
                })?;
                pacer.drawn(started, Instant::now());
                probe.drawn(&state);
                dirty = false;
            }
            tokio::select! {
                ev = input.next() => match ev {
                    Some(Ok(Event::Key(k))) if k.kind != KeyEventKind::Release => match to_key(k) {
                        Some(key) => Msg::Key(key),
                        None => continue,
                    },
                    Some(Ok(Event::Mouse(m))) => match to_mouse(&hits, m) {
                        Some(mouse) => Msg::Mouse(mouse),
                        None => continue,
                    },
                    Some(Ok(Event::Resize(w, h))) => {
                        size = ratatui::layout::Size::new(w, h);
                        terminal.autoresize()?;
                        viewport(&state, w, h)
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => return Err(e).context("reading terminal input"),
                    None => return Ok(()),
                },
                ev = events.recv(), if events_open => match ev {
                    Some(e) => Msg::Engine(e),
                    None => {
                        events_open = false;
                        Msg::Engine(EngineEvent::Notice {
                            server: None,
                            level: NoticeLevel::Error,
                            text: "the engine stopped; nothing will update".to_string(),
                        })
                    }
                },
                Some(m) = loads.next(), if !loads.is_empty() => m,
                Some(rec) = feed.recv(), if feed.enabled() => Msg::Wire(rec),
                permit = commands.reserve(), if !outbox.is_empty() => {
                    match permit {
                        Ok(p) => {
                            if let Some(cmd) = outbox.pop_front() {
                                p.send(cmd);
                            }
                            continue;
                        }
                        Err(_) => {
                            outbox.clear();
                            Msg::Engine(EngineEvent::Notice {
                                server: None,
                                level: NoticeLevel::Error,
                                text: "the engine is gone; command dropped".to_string(),
                            })
                        }
                    }
                },
                _ = tick.tick() => Msg::Tick,
                _ = tokio::time::sleep_until(draw_at), if dirty => continue,
            }
        };
        // A wire record while the view is closed (`--wire` on) changes nothing on screen.
        if feed.watching || !matches!(msg, Msg::Wire(_)) {
            if !dirty {
                dirty_since = Instant::now();
            }
            dirty = true;
            last_msg = Instant::now();
        }
        if matches!(msg, Msg::Engine(EngineEvent::TasksResumed { more: 0, .. })) {
            // The engine says a resume's last rows came: nothing more of that burst.
            pacer.burst_over();
        }
        // The table height changes when the filter line shows or hides (keys and mouse
        // only) or a server joins the header; other messages skip the layout check.
        let may_relayout = matches!(msg, Msg::Key(_) | Msg::Mouse(_));
        let area = Rect::new(0, 0, size.width, size.height);
        let before = may_relayout.then(|| ui::areas(area, &state));
        let servers_before = state.servers.len();
        probe.received(&msg);
        let effects = update(&mut state, msg, chrono::Utc::now());
        probe.applied();
        let relayout = match before {
            Some(b) => ui::areas(area, &state) != b,
            None => state.servers.len() != servers_before,
        };
        if relayout {
            let m = viewport(&state, size.width, size.height);
            update(&mut state, m, chrono::Utc::now());
        }
        feed.follow(&state);
        for fx in effects {
            match fx {
                Effect::Quit => return Ok(()),
                Effect::Engine(cmd) => outbox.push_back(cmd),
                Effect::LoadTimeline(key) => {
                    let fut = timeline.timeline(&key.server, &key.task_id);
                    loads.push(Box::pin(async move {
                        let result = fut.await.map_err(|e| format!("{e:#}"));
                        Msg::TimelineLoaded { key, result }
                    }));
                }
                Effect::LoadStats { range } => {
                    let fut = timeline.stats(range, chrono::Utc::now());
                    loads.push(Box::pin(async move {
                        let result = fut.await.map_err(|e| format!("{e:#}"));
                        Msg::StatsLoaded { range, result }
                    }));
                }
                Effect::LoadPayload { key, then } => {
                    let fut = timeline.payload(&key.server, &key.task_id);
                    loads.push(Box::pin(async move {
                        let result = fut.await.map_err(|e| format!("{e:#}"));
                        Msg::PayloadLoaded { key, result, then }
                    }));
                }
                Effect::Export { key, path } => {
                    let fut = timeline.export(&key.server, &key.task_id);
                    loads.push(Box::pin(async move {
                        let result = async {
                            let text = fut.await?;
                            let to = std::path::PathBuf::from(&path);
                            tokio::task::spawn_blocking(move || {
                                export_file::write_new_private(&to, text.as_bytes())
                            })
                            .await
                            .with_context(|| format!("cannot write {path}"))??;
                            anyhow::Ok(path)
                        }
                        .await
                        .map_err(|e| format!("{e:#}"));
                        Msg::Exported(result)
                    }));
                }
                Effect::SetTheme(name) => {
                    if let Some(t) = find_theme(&name) {
                        theme = t;
                    }
                }
                Effect::Alert(alert) => {
                    let bytes = alert_bytes(&settings.notify, &alert);
                    if !bytes.is_empty() {
                        write_terminal(&bytes);
                    }
                }
                fx @ (Effect::OpenBrowser(_) | Effect::Copy(_) | Effect::RunSampling { .. }) => {
                    if let Some(load) = run_outside(fx, &mut std::io::stdout()) {
                        loads.push(load);
                    }
                }
            }
        }
    }
}
