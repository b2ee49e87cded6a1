//! Unit tests of the task state machine in `store.rs`.

use super::*;

fn req() -> Value {
    json!({"method": "elicitation/create", "params": {"message": "?"}})
}

#[test]
fn creation_is_durable_and_scoped() {
    let store = Store::new();
    let (id, snap, _) = store.create(Scope::Modern, 60_000, 1000, "starting");
    assert_eq!(snap["status"], "working");
    assert_eq!(store.read(&id, &Scope::Modern, false, false).unwrap(), snap);
    assert_eq!(
        store.read(&id, &Scope::Legacy("s".into()), false, false),
        Err(StoreError::NotFound)
    );
}

#[test]
fn input_keys_are_unique_over_a_task_life() {
    let store = Store::new();
    let (id, _, _) = store.create(Scope::Modern, 60_000, 1000, "x");
    let mut rx = store.request_input(&id, "k1", req(), "waiting").unwrap();
    let snap = store.read(&id, &Scope::Modern, false, false).unwrap();
    assert_eq!(snap["status"], "input_required");
    assert!(snap["inputRequests"]["k1"].is_object());
    let answers: Map<String, Value> =
        serde_json::from_value(json!({"k1": {"action": "accept"}, "nope": {}})).unwrap();
    assert_eq!(store.answer(&id, &Scope::Modern, &answers), Ok(1));
    assert_eq!(rx.try_recv().unwrap(), json!({"action": "accept"}));
    // Answered keys are ignored the second time and can never be issued again.
    assert_eq!(store.answer(&id, &Scope::Modern, &answers), Ok(0));
    assert_eq!(
        store.request_input(&id, "k1", req(), "again").err(),
        Some(StoreError::DuplicateKey("k1".into()))
    );
    let snap = store.read(&id, &Scope::Modern, false, false).unwrap();
    assert_eq!(snap["status"], "working");
    assert!(snap.get("inputRequests").is_none());
}

#[test]
fn first_terminal_state_wins() {
    let store = Store::new();
    let (id, _, _) = store.create(Scope::Modern, 60_000, 1000, "x");
    assert!(store.finish(&id, Outcome::Result(json!({"content": []}))));
    assert!(!store.finish(&id, Outcome::Error(json!({"code": -1, "message": "late"}))));
    assert!(!store.finish(&id, Outcome::Cancelled("late".into())));
    let snap = store.read(&id, &Scope::Modern, false, false).unwrap();
    assert_eq!(snap["status"], "completed");
    assert!(snap.get("error").is_none());
}

#[test]
fn legacy_tool_error_is_failed_modern_is_completed() {
    let store = Store::new();
    let bad = json!({"content": [], "isError": true});
    let (m, _, _) = store.create(Scope::Modern, 60_000, 1000, "x");
    let legacy = Scope::Legacy("s".into());
    let (l, _, _) = store.create(legacy.clone(), 60_000, 1000, "x");
    store.finish(&m, Outcome::Result(bad.clone()));
    store.finish(&l, Outcome::Result(bad));
    assert_eq!(store.status(&m, &Scope::Modern), Ok(Status::Completed));
    assert_eq!(store.status(&l, &legacy), Ok(Status::Failed));
}

#[test]
fn a_sweep_finds_each_deadline_whatever_order_tasks_came_in() {
    let store = Store::new();
    let (long, _, _) = store.create(Scope::Modern, 3_600_000, 1000, "x");
    assert_eq!(store.sweep(Utc::now()), 0);
    // created after the sweep that saw only the long one, and due much sooner
    let (short, _, cancel) = store.create(Scope::Modern, 50, 1000, "x");
    let later = Utc::now() + chrono::Duration::milliseconds(60);
    assert_eq!(store.sweep(later), 1);
    assert!(cancel.is_cancelled());
    assert_eq!(store.sweep(later), 0);
    assert_eq!(
        store.read(&short, &Scope::Modern, false, false),
        Err(StoreError::NotFound)
    );
    assert!(store.read(&long, &Scope::Modern, false, false).is_ok());
    let much_later = Utc::now() + chrono::Duration::hours(2);
    assert_eq!(store.sweep(much_later), 1);
}

#[test]
fn ttl_expiry_purges_and_stops_work() {
    let store = Store::new();
    let (id, _, cancel) = store.create(Scope::Modern, 50, 1000, "x");
    assert_eq!(store.sweep(Utc::now()), 0);
    let later = Utc::now() + chrono::Duration::milliseconds(60);
    assert_eq!(store.sweep(later), 1);
    assert!(cancel.is_cancelled());
    assert_eq!(
        store.read(&id, &Scope::Modern, false, false),
        Err(StoreError::NotFound)
    );
}

#[test]
fn cancel_of_a_finished_task() {
    let store = Store::new();
    let (id, _, cancel) = store.create(Scope::Modern, 60_000, 1000, "x");
    store.finish(&id, Outcome::Result(json!({"content": []})));
    assert_eq!(store.request_cancel(&id, &Scope::Modern), Ok(false));
    assert!(!cancel.is_cancelled());
    let legacy = Scope::Legacy("s".into());
    let (l, _, _) = store.create(legacy.clone(), 60_000, 1000, "x");
    store.finish(&l, Outcome::Result(json!({"content": []})));
    assert_eq!(store.cancel_now(&l, &legacy), Err(StoreError::Terminal));
}

#[test]
fn legacy_cancel_sticks_even_if_work_finishes() {
    let store = Store::new();
    let legacy = Scope::Legacy("s".into());
    let (id, _, cancel) = store.create(legacy.clone(), 60_000, 1000, "x");
    let snap = store.cancel_now(&id, &legacy).unwrap();
    assert_eq!(snap["status"], "cancelled");
    assert!(cancel.is_cancelled());
    assert!(!store.finish(&id, Outcome::Result(json!({"content": []}))));
    assert_eq!(store.status(&id, &legacy), Ok(Status::Cancelled));
}

#[test]
fn stale_read_after_terminal_serves_previous_once() {
    let store = Store::new();
    let (id, _, _) = store.create(Scope::Modern, 60_000, 1000, "x");
    store.set_progress(&id, "half", None);
    store.finish(&id, Outcome::Result(json!({"content": []})));
    let first = store.read(&id, &Scope::Modern, true, false).unwrap();
    assert_eq!(first["status"], "completed");
    let stale = store.read(&id, &Scope::Modern, true, false).unwrap();
    assert_eq!(stale["status"], "working");
    let again = store.read(&id, &Scope::Modern, true, false).unwrap();
    assert_eq!(again["status"], "completed");
}

#[tokio::test]
async fn changes_are_published_only_after_subscribe() {
    let store = Store::new();
    let (id, _, _) = store.create(Scope::Modern, 60_000, 1000, "x");
    store.set_progress(&id, "before", None);
    let mut rx = store.subscribe();
    store.set_progress(&id, "after", None);
    let change = rx.recv().await.unwrap();
    assert_eq!(change.snapshot["statusMessage"], "after");
    assert!(rx.try_recv().is_err());
}
