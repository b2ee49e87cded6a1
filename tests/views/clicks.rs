//! Clicks land on what was drawn: the dashboard records each clickable region while it
//! draws the frame, and a click at the drawn place of a tab, a table row or an inbox entry
//! selects that thing, at several terminal sizes. Pinned clock; no terminal.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use serde_json::json;

use support::screen::{apply, now};
use taskrail::engine::{EngineEvent, ServerId, TaskId, UpdateSource};
use taskrail::mcp::{Era, InputRequest, Task, TaskStatus};
use taskrail::state::{Hit, Key, KeyCode, Keymap, Modal, Mouse, Msg, State, Tab, TaskKey};
use taskrail::ui::{Dashboard, HitMap, Theme};

fn srv(n: &str) -> ServerId {
    ServerId::named(n)
}

fn task(id: &str, status: TaskStatus, minute: u32) -> Task {
    Task {
        task_id: TaskId::new(id),
        status,
        status_message: Some(format!("step of {id}")),
        created_at: Some(format!("2026-07-28T09:{minute:02}:00Z")),
        last_updated_at: None,
        ttl_ms: Some(3_600_000),
        poll_interval_ms: Some(2000),
        input_requests: Default::default(),
        result: None,
        error: None,
        more_input_requests: 0,
    }
}

fn ask(message: &str) -> InputRequest {
    InputRequest {
        method: "elicitation/create".into(),
        params: json!({"mode": "form", "message": message,
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}),
        reply_to: None,
    }
}

/// One server, tasks in every tab (so every tab's count differs and labels have
/// different widths), three of them waiting for input.
fn board() -> State {
    let mut s = State::new(vec![srv("demo")], false, Keymap::default_keymap());
    let mut msgs = vec![Msg::Engine(EngineEvent::ServerConnected {
        server: srv("demo"),
        era: Era::Modern,
        push: true,
        server_name: None,
    })];
    let mut tasks = Vec::new();
    for i in 0..12 {
        tasks.push(task(&format!("work{i:02}xx"), TaskStatus::Working, 10 + i));
    }
    for i in 0..3 {
        let mut t = task(&format!("inpt{i:02}xx"), TaskStatus::InputRequired, 30 + i);
        t.input_requests
            .insert(format!("k{i}"), ask(&format!("question {i}")));
        tasks.push(t);
    }
    for i in 0..5 {
        tasks.push(task(
            &format!("done{i:02}xx"),
            TaskStatus::Completed,
            40 + i,
        ));
    }
    tasks.push(task("fail00xx", TaskStatus::Failed, 50));
    tasks.push(task("cncl00xx", TaskStatus::Cancelled, 51));
    for t in tasks {
        msgs.push(Msg::Engine(EngineEvent::snapshot(
            srv("demo"),
            t,
            UpdateSource::Push,
            Some(8),
        )));
    }
    apply(&mut s, msgs);
    s
}

/// Draw `state` at `w`x`h`: the screen and its clickable regions.
fn draw(state: &mut State, w: u16, h: u16) -> (Buffer, HitMap) {
    state.ensure_view();
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    let mut hits = HitMap::default();
    let theme = Theme::default();
    Dashboard {
        state,
        theme: &theme,
        now: now(),
    }
    .draw(area, &mut buf, &mut hits);
    (buf, hits)
}

/// Each screen line, one string per cell (so an index is a column).
fn cells(buf: &Buffer) -> Vec<Vec<String>> {
    let area = buf.area;
    (area.y..area.bottom())
        .map(|y| {
            (area.x..area.right())
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect()
        })
        .collect()
}

/// Where `text` is drawn on line `y` (its first column), if it is.
fn find_on(line: &[String], text: &str) -> Option<u16> {
    let want: Vec<String> = text.chars().map(String::from).collect();
    (0..line.len().saturating_sub(want.len() - 1))
        .find(|&x| line[x..x + want.len()] == want[..])
        .map(|x| x as u16)
}

/// The screen line holding the tabs, and each tab's label as drawn there.
fn tab_line(buf: &Buffer, narrow: bool) -> (u16, Vec<(Tab, String)>) {
    let lines = cells(buf);
    let labels: Vec<(Tab, String)> = Tab::ALL
        .iter()
        .map(|t| {
            let title = t.title();
            let shown = if narrow {
                &title[..title.len().min(4)]
            } else {
                title
            };
            (*t, shown.to_string())
        })
        .collect();
    let y = lines
        .iter()
        .position(|l| labels.iter().all(|(_, label)| find_on(l, label).is_some()))
        .expect("a line with every tab label");
    (y as u16, labels)
}

fn click(state: &mut State, hit: Hit) {
    apply(state, vec![Msg::Mouse(Mouse::Click(hit))]);
}

/// Click the first and last letter of each tab's drawn label: each selects its tab.
fn tabs_are_clicked_where_drawn(w: u16, h: u16) {
    let mut s = board();
    let narrow = w < 80;
    // From the last tab back, so each click changes the tab it lands on.
    for tab in Tab::ALL.iter().rev() {
        let (buf, hits) = draw(&mut s, w, h);
        let (y, labels) = tab_line(&buf, narrow);
        let label = &labels.iter().find(|(t, _)| t == tab).unwrap().1;
        let x = find_on(&cells(&buf)[y as usize], label).unwrap();
        let last = x + label.chars().count() as u16 - 1;
        for at in [x, last] {
            assert_eq!(
                hits.at(at, y),
                Hit::Tab(*tab),
                "{w}x{h}: {label} at ({at}, {y})"
            );
        }
        click(&mut s, hits.at(last, y));
        assert_eq!(s.board.tab, *tab, "{w}x{h}: a click on {label}");
    }
    // The sort note at the end of the line is not a tab.
    let (buf, hits) = draw(&mut s, w, h);
    let (y, _) = tab_line(&buf, narrow);
    assert_eq!(hits.at(w - 1, y), Hit::Elsewhere);
}

#[test]
fn a_click_on_a_drawn_tab_selects_it_at_80x24() {
    tabs_are_clicked_where_drawn(80, 24);
}

#[test]
fn a_click_on_a_drawn_tab_selects_it_at_120x35() {
    tabs_are_clicked_where_drawn(120, 35);
}

#[test]
fn a_click_on_a_drawn_tab_selects_it_on_a_narrow_screen() {
    tabs_are_clicked_where_drawn(60, 16);
}

/// Click the line each task's id is drawn on: that task is selected; a second click opens it.
fn rows_are_clicked_where_drawn(w: u16, h: u16) {
    let mut s = board();
    // Scrolled down, so the first row drawn is not the first of the view.
    apply(&mut s, vec![Msg::Key(Key::plain(KeyCode::End))]);
    let (buf, hits) = draw(&mut s, w, h);
    let lines = cells(&buf);
    let mut seen = 0;
    for key in s.board.view_keys(&s.tasks) {
        let short: String = key.task_id.as_str().chars().take(6).collect();
        let Some(y) = lines.iter().position(|l| find_on(l, &short).is_some()) else {
            continue;
        };
        seen += 1;
        let x = find_on(&lines[y], &short).unwrap();
        assert_eq!(
            hits.at(x, y as u16),
            Hit::Row(key.clone()),
            "{w}x{h}: {short}"
        );
    }
    assert!(seen >= 5, "{w}x{h}: only {seen} rows drawn");
    let (buf, hits) = draw(&mut s, w, h);
    let lines = cells(&buf);
    let y = lines
        .iter()
        .position(|l| find_on(l, "work03").is_some())
        .unwrap() as u16;
    click(&mut s, hits.at(2, y));
    let key = TaskKey::new(&srv("demo"), &TaskId::new("work03xx"));
    assert_eq!(s.board.selected, Some(key.clone()), "{w}x{h}");
    click(&mut s, hits.at(2, y));
    assert!(
        matches!(s.modals.last(), Some(Modal::Detail(d)) if d.key == key),
        "{w}x{h}: a second click opens the row"
    );
    // The detail view covers the table: its old rows take no clicks.
    let (_, hits) = draw(&mut s, w, h);
    assert_eq!(hits.at(2, y), Hit::Elsewhere);
}

#[test]
fn a_click_on_a_drawn_row_selects_then_opens_it_at_80x24() {
    rows_are_clicked_where_drawn(80, 24);
}

#[test]
fn a_click_on_a_drawn_row_selects_then_opens_it_at_120x35() {
    rows_are_clicked_where_drawn(120, 35);
}

#[test]
fn a_click_on_a_drawn_inbox_entry_selects_it() {
    for (w, h) in [(80, 24), (120, 35)] {
        let mut s = board();
        apply(&mut s, vec![Msg::Key(Key::char('i'))]);
        assert!(matches!(s.modals.last(), Some(Modal::Inbox(_))), "{w}x{h}");
        let (buf, hits) = draw(&mut s, w, h);
        let lines = cells(&buf);
        // From the last back: the first entry is selected already, and a click on the
        // selected entry opens it.
        for (n, question) in ["question 2", "question 1", "question 0"]
            .iter()
            .enumerate()
        {
            let y = lines
                .iter()
                .position(|l| find_on(l, question).is_some())
                .unwrap();
            let x = find_on(&lines[y], question).unwrap();
            let hit = hits.at(x, y as u16);
            assert!(
                matches!(hit, Hit::InboxRow(_)),
                "{w}x{h}: {question}: {hit:?}"
            );
            click(&mut s, hit.clone());
            let Some(Modal::Inbox(v)) = s.modals.last() else {
                panic!("{w}x{h}: the inbox closed on a first click");
            };
            let entries = taskrail::state::views::inbox::entries(&s);
            assert!(
                entries[v.selected].message.contains(question),
                "{w}x{h}: click {n} on {question}, {:?} selected",
                entries[v.selected].message
            );
        }
        // The table beneath the popup takes no clicks.
        let (_, hits) = draw(&mut s, w, h);
        assert!(
            hits.regions()
                .iter()
                .all(|(_, h)| matches!(h, Hit::InboxRow(_)))
        );
    }
}
