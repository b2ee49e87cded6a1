//! Reducer tests for conformance hints.

use super::{fresh, key, run, srv};
use crate::engine::{EngineEvent, Hint};
use crate::state::*;

#[test]
fn conformance_hints_are_kept_per_server_with_one_notice_per_kind() {
    let mut s = fresh();
    let hint = |detail: &str| {
        Msg::Engine(EngineEvent::ServerMisbehaved {
            server: srv(),
            hint: Hint::NonDurableCreate,
            detail: detail.into(),
        })
    };
    run(
        &mut s,
        vec![hint("task abc: gone"), hint("task def: gone\x1b[31m")],
    );
    let h = &s.servers[0].hints;
    assert_eq!(h.len(), 1);
    assert_eq!(h[0].count, 2);
    assert!(!h[0].detail.contains('\x1b'), "sanitized");
    assert_eq!(
        s.notices
            .iter()
            .filter(|n| n.text.contains("conformance"))
            .count(),
        1
    );
    run(&mut s, vec![key('H')]);
    match s.modals.last() {
        Some(Modal::Doc(d)) => assert!(
            d.lines
                .iter()
                .any(|l| l.text.contains("strongly consistent"))
        ),
        other => panic!("expected the hints view, got {other:?}"),
    }
}
