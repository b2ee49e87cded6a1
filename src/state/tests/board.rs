//! Reducer tests for the task table: selection by identity, scrolling, the filter, tabs, size.

use serde_json::json;

use super::{code, elicit, fresh, key, run, srv, t0, task, tk, updated};
use crate::engine::{EngineEvent, UpdateSource};
use crate::mcp::TaskStatus;
use crate::state::*;

#[test]
fn selection_is_kept_by_identity_through_inserts_sorts_and_filters() {
    let mut s = fresh();
    for i in 0..5 {
        let mut t = task(&format!("t{i}"), TaskStatus::Working);
        t.created_at = Some(format!("2026-07-28T09:5{i}:00Z"));
        run(&mut s, vec![updated(t)]);
    }
    // newest first: t4 t3 t2 t1 t0; the first row seen (t0) stayed selected
    assert_eq!(s.board.selected, Some(tk("t0")));
    run(
        &mut s,
        vec![key('g'), code(KeyCode::Down), code(KeyCode::Down)],
    );
    assert_eq!(s.board.selected, Some(tk("t2")));
    let mut newer = task("t9", TaskStatus::Working);
    newer.created_at = Some("2026-07-28T09:59:30Z".into());
    run(&mut s, vec![updated(newer)]);
    assert_eq!(s.board.selected, Some(tk("t2")));
    assert_eq!(s.board.selected_index(&s.tasks), Some(3));
    run(&mut s, vec![key('S')]);
    assert_eq!(s.board.selected, Some(tk("t2")));
    assert_eq!(s.board.view_keys(&s.tasks)[0], tk("t0"));
    run(&mut s, vec![key('s'), key('s')]);
    assert_eq!(s.board.selected, Some(tk("t2")));
    // a filter that keeps it keeps it; one that hides it moves to a neighbour
    run(&mut s, vec![key('/'), key('t'), key('2')]);
    assert_eq!(s.board.view_keys(&s.tasks), vec![tk("t2")]);
    assert_eq!(s.board.selected, Some(tk("t2")));
    run(&mut s, vec![code(KeyCode::Backspace), key('1')]);
    assert_eq!(s.board.selected, Some(tk("t1")));
}

#[test]
fn scroll_position_survives_live_inserts() {
    let mut s = fresh();
    run(
        &mut s,
        vec![Msg::Viewport {
            table_rows: 5,
            page_rows: 5,
        }],
    );
    for i in 0..30 {
        let mut t = task(&format!("t{i:02}"), TaskStatus::Working);
        t.created_at = Some(format!("2026-07-28T09:{i:02}:00Z"));
        run(&mut s, vec![updated(t)]);
    }
    run(
        &mut s,
        vec![code(KeyCode::PageDown), code(KeyCode::PageDown)],
    );
    let sel = s.board.selected.clone();
    let screen_row = s.board.selected_index(&s.tasks).unwrap() - s.board.offset;
    let mut t = task("new", TaskStatus::Working);
    t.created_at = Some("2026-07-28T09:59:59Z".into());
    run(&mut s, vec![updated(t)]);
    assert_eq!(s.board.selected, sel);
    assert_eq!(
        s.board.selected_index(&s.tasks).unwrap() - s.board.offset,
        screen_row
    );
}

fn newest(s: &mut State, id: &str, minute: u32) {
    let mut t = task(id, TaskStatus::Working);
    t.created_at = Some(format!("2026-07-28T09:{minute:02}:00Z"));
    run(s, vec![updated(t)]);
}

#[test]
fn new_rows_above_show_at_the_top_and_are_counted_when_scrolled_past() {
    let mut s = fresh();
    run(
        &mut s,
        vec![Msg::Viewport {
            table_rows: 5,
            page_rows: 5,
        }],
    );
    for i in 0..30 {
        newest(&mut s, &format!("t{i:02}"), i);
    }
    // the top in sight, the cursor on the second row: a new task shows at the top and
    // the cursor stays on its task, one line lower
    run(&mut s, vec![key('g'), code(KeyCode::Down)]);
    let sel = s.board.selected.clone();
    newest(&mut s, "n1", 40);
    s.ensure_view();
    assert_eq!(s.board.offset, 0, "the new row is in sight");
    assert_eq!(s.board.view_key(&s.tasks, 0), Some(tk("n1")));
    assert_eq!(s.board.selected, sel);
    assert_eq!(s.board.new_above, 0);
    // scrolled down: new tasks go above the first row drawn, and are counted
    run(
        &mut s,
        vec![code(KeyCode::PageDown), code(KeyCode::PageDown)],
    );
    let sel = s.board.selected.clone();
    assert!(s.board.offset > 0);
    newest(&mut s, "n2", 41);
    newest(&mut s, "n3", 42);
    s.ensure_view();
    assert_eq!(s.board.selected, sel, "the selection stays on its task");
    assert_eq!(s.board.new_above, 2);
    // back at the top, the mark is gone
    run(&mut s, vec![key('g')]);
    s.ensure_view();
    assert_eq!(s.board.offset, 0);
    assert_eq!(s.board.new_above, 0);
}

#[test]
fn invalid_regex_shows_an_inline_error_and_keeps_the_rows() {
    let mut s = fresh();
    run(&mut s, vec![updated(task("t1", TaskStatus::Working))]);
    run(&mut s, vec![key('/'), key('(')]);
    assert!(s.board.filter.error.is_some());
    assert_eq!(s.board.view_len(), 1);
    run(&mut s, vec![key('x'), key(')')]);
    assert!(s.board.filter.error.is_none());
    assert!((s.board.view_len() == 0));
    run(&mut s, vec![code(KeyCode::Esc)]);
    assert_eq!(s.board.view_len(), 1);
    assert!(!s.board.filter.editing);
}

#[test]
fn tabs_narrow_the_rows() {
    let mut s = fresh();
    run(
        &mut s,
        vec![
            updated(task("a", TaskStatus::Working)),
            updated(task("b", TaskStatus::Completed)),
            updated(task("c", TaskStatus::Failed)),
        ],
    );
    assert_eq!(s.board.view_len(), 3);
    run(&mut s, vec![code(KeyCode::Tab)]);
    assert_eq!(s.board.view_keys(&s.tasks), vec![tk("a")]);
    run(&mut s, vec![code(KeyCode::Tab), code(KeyCode::Tab)]);
    assert_eq!(s.board.view_keys(&s.tasks), vec![tk("b")]);
    run(
        &mut s,
        vec![
            code(KeyCode::BackTab),
            code(KeyCode::BackTab),
            code(KeyCode::BackTab),
        ],
    );
    assert_eq!(s.board.tab, Tab::All);
    assert_eq!(s.board.tab_counts, [3, 1, 0, 1, 1, 0]);
}

#[test]
fn ten_thousand_tasks_build_a_view() {
    let mut s = fresh();
    for i in 0..10_000 {
        update(
            &mut s,
            updated(task(&format!("t{i:05}"), TaskStatus::Working)),
            t0(),
        );
    }
    s.ensure_view();
    assert_eq!(s.board.view_len(), 10_000);
    run(&mut s, vec![code(KeyCode::End)]);
    assert_eq!(s.board.selected_index(&s.tasks), Some(9_999));
}

/// The view kept up to date row by row equals the one rebuilt from every row, through
/// random snapshots on two servers, sort and tab changes, a filter and a server filter;
/// brought up to date every few changes (rows searched into the view one by one) and
/// every few dozen (many rows at once: the view walked once).
#[test]
fn view_kept_up_to_date_equals_a_rebuild() {
    let beta = ServerId::named("beta");
    let statuses = [
        TaskStatus::Working,
        TaskStatus::InputRequired,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ];
    let tools = ["lint", "deploy", "survey"];
    for (seed, every) in (0..20).flat_map(|seed| [(seed, 3), (seed, 40)]) {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut s = State::new(vec![srv(), beta.clone()], false, Keymap::default_keymap());
        for step in 0..300 {
            let mut t = task(&format!("t{:02}", rng.usize(0..60)), TaskStatus::Working);
            t.status = statuses[rng.usize(0..statuses.len())].clone();
            t.created_at = Some(format!("2026-07-28T09:{:02}:00Z", rng.usize(0..60)));
            t.status_message = rng.bool().then(|| tools[rng.usize(0..3)].to_string());
            if t.status == TaskStatus::InputRequired && rng.bool() {
                t.input_requests.insert(
                    format!("k{step}"),
                    elicit(json!({"type":"object","properties":{}})),
                );
            }
            let server = if rng.bool() { srv() } else { beta.clone() };
            let mut msgs = vec![Msg::Engine(EngineEvent::snapshot(
                server,
                t,
                UpdateSource::Poll,
                None,
            ))];
            match rng.usize(0..40) {
                0 => msgs.push(key('s')),
                1 => msgs.push(key('S')),
                2 => msgs.push(code(KeyCode::Tab)),
                3 => msgs.extend([key('/'), key('l'), code(KeyCode::Enter)]),
                4 => msgs.extend([key('/'), code(KeyCode::Esc)]),
                _ => {}
            }
            for m in msgs {
                update(&mut s, m, t0());
            }
            if step == 150 {
                s.board.server = Some(beta.clone());
                s.board.dirty = true;
            }
            if rng.usize(0..every) == 0 {
                s.ensure_view();
                let mut rebuilt = s.board.clone();
                rebuilt.dirty = true;
                rebuilt.ensure_view(&s.tasks);
                assert_eq!(
                    s.board.view_keys(&s.tasks),
                    rebuilt.view_keys(&s.tasks),
                    "seed {seed}/{every} step {step}"
                );
                assert_eq!(s.board.tab_counts, rebuilt.tab_counts, "seed {seed}");
                for server in [srv(), beta.clone()] {
                    let n = s
                        .tasks
                        .values()
                        .filter(|r| r.key.server == server && r.needs_input());
                    assert_eq!(s.board.waiting(&server), n.count(), "seed {seed}");
                    assert_eq!(
                        s.board.waiting(&server),
                        rebuilt.waiting(&server),
                        "seed {seed}"
                    );
                }
                let sel = s.board.selected.as_ref();
                assert!(
                    sel.is_none_or(|k| s.board.view_keys(&s.tasks).contains(k)),
                    "seed {seed}"
                );
            }
        }
    }
}
