//! Selecting by what a thing is called, never by where it sits on screen: a task row by
//! typing its id into the board's `/` filter (the selection follows the only row left,
//! and clearing the filter keeps it), a tool by typing its name into the picker's `/`
//! query. Rows that arrive or re-sort meanwhile cannot move the selection off its target.

use crate::support::tmux::Tmux;

/// Select the board's row of task `id` (its first eight characters shown in the row).
pub fn select_task(tmux: &Tmux, id: &str) {
    let short = &id[..8];
    tmux.keys(&["/"]);
    tmux.type_text(short);
    tmux.wait(&format!("the filter to leave {short} selected"), |s| {
        s.lines().any(|l| l.starts_with('›') && l.contains(short))
    });
    // Clearing the filter keeps the selection on the task.
    tmux.keys(&["Escape"]);
    tmux.wait(
        &format!("the filter cleared, {short} still selected"),
        |s| {
            !s.lines().any(|l| l.starts_with(" / "))
                && s.lines().any(|l| l.starts_with('›') && l.contains(short))
        },
    );
}

/// In the open tool picker, select the tool called `name` (leaving the picker open, the
/// query kept).
pub fn pick_tool(tmux: &Tmux, name: &str) {
    tmux.keys(&["/"]);
    tmux.type_text(name);
    tmux.keys(&["Enter"]);
    let selected = format!("› {name}");
    tmux.wait(&format!("{name} selected in the picker"), |s| {
        s.lines().any(|l| {
            l.contains(&selected)
                && l[l.find(&selected).unwrap() + selected.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric() && c != '_')
        })
    });
}
