//! The schema on a real server: migrating from nothing and from the previous version,
//! the client's check, the group role's privileges, row-level security between roles, and
//! the notification every write sends (a hint, never an id).

use std::time::Duration;

use ::postgres::{Client, fallible_iterator::FallibleIterator};

use super::connect;
use super::schema::{self, SCHEMA_VERSION, check, migrate, version};
use super::testing::{fresh_schema, server};

/// A login role in `taskrail_users` named `name`.
fn login_role(admin: &mut Client, name: &str) {
    admin
        .batch_execute(&format!(
            "CREATE ROLE {name} LOGIN; GRANT taskrail_users TO {name};"
        ))
        .unwrap();
}

fn connect_as(role: &str) -> Client {
    let config = connect::config(&server().url(role)).unwrap();
    connect::connect(&config).unwrap()
}

fn add_task(client: &mut Client, s: &str, task_id: &str) {
    client
        .execute(
            &format!("INSERT INTO {s}.tasks (server, task_id, recorded_at) VALUES ('srv', $1, 0)"),
            &[&task_id],
        )
        .unwrap();
}

fn task_ids(client: &mut Client, s: &str) -> Vec<String> {
    client
        .query(
            &format!("SELECT task_id FROM {s}.tasks ORDER BY task_id"),
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[test]
fn migrating_from_nothing_makes_a_schema_clients_accept() {
    let s = fresh_schema();
    let mut admin = server().admin();
    let err = check(&mut admin, &s).unwrap_err().to_string();
    assert!(
        err.contains("missing") && err.contains("ledger migrate"),
        "{err}"
    );
    let done = migrate(&mut admin, &s, SCHEMA_VERSION).unwrap();
    assert_eq!((done.from, done.to), (0, SCHEMA_VERSION));
    check(&mut admin, &s).unwrap();
    // Again: nothing to do.
    let again = migrate(&mut admin, &s, SCHEMA_VERSION).unwrap();
    assert_eq!((again.from, again.to), (SCHEMA_VERSION, SCHEMA_VERSION));
}

#[test]
fn migrating_from_the_previous_version_keeps_the_rows() {
    let s = fresh_schema();
    let mut admin = server().admin();
    migrate(&mut admin, &s, SCHEMA_VERSION - 1).unwrap();
    add_task(&mut admin, &s, "kept");
    let err = check(&mut admin, &s).unwrap_err().to_string();
    assert!(
        err.contains(&format!("version {}", SCHEMA_VERSION - 1)) && err.contains("ledger migrate"),
        "{err}"
    );
    let done = migrate(&mut admin, &s, SCHEMA_VERSION).unwrap();
    assert_eq!((done.from, done.to), (SCHEMA_VERSION - 1, SCHEMA_VERSION));
    check(&mut admin, &s).unwrap();
    assert_eq!(task_ids(&mut admin, &s), ["kept"]);
    assert_eq!(version(&mut admin, &s).unwrap(), Some(SCHEMA_VERSION));
}

#[test]
fn a_newer_schema_is_refused() {
    let s = fresh_schema();
    let mut admin = server().admin();
    migrate(&mut admin, &s, SCHEMA_VERSION).unwrap();
    admin
        .execute(
            &format!("UPDATE {s}.schema_version SET version = version + 1"),
            &[],
        )
        .unwrap();
    let err = check(&mut admin, &s).unwrap_err().to_string();
    assert!(err.contains("newer taskrail"), "{err}");
    assert!(migrate(&mut admin, &s, SCHEMA_VERSION).is_err());
}

#[test]
fn roles_see_their_own_and_their_members_tasks_only() {
    let s = fresh_schema();
    let mut admin = server().admin();
    migrate(&mut admin, &s, SCHEMA_VERSION).unwrap();
    let (alice, bob, carol) = (
        format!("{s}_alice"),
        format!("{s}_bob"),
        format!("{s}_carol"),
    );
    for role in [&alice, &bob, &carol] {
        login_role(&mut admin, role);
    }
    admin
        .batch_execute(&format!("GRANT {alice} TO {carol}"))
        .unwrap();

    let mut a = connect_as(&alice);
    add_task(&mut a, &s, "a1");
    let mut b = connect_as(&bob);
    add_task(&mut b, &s, "b1");
    // Every row records the role that wrote it.
    let owner: String = admin
        .query_one(
            &format!("SELECT owner_role::text FROM {s}.tasks WHERE task_id = 'a1'"),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(owner, alice);

    let mut c = connect_as(&carol);
    assert_eq!(task_ids(&mut a, &s), ["a1"]);
    assert_eq!(task_ids(&mut b, &s), ["b1"]);
    assert_eq!(task_ids(&mut c, &s), ["a1"], "carol is a member of alice");
    // Acting on a row one cannot see changes nothing.
    let hit = b
        .execute(
            &format!("UPDATE {s}.tasks SET cancel_state = 1 WHERE task_id = 'a1'"),
            &[],
        )
        .unwrap();
    assert_eq!(hit, 0);
    let hit = c
        .execute(
            &format!("UPDATE {s}.tasks SET cancel_state = 1 WHERE task_id = 'a1'"),
            &[],
        )
        .unwrap();
    assert_eq!(hit, 1);
    // carol's request on alice's task is alice's to see; bob can neither see nor add one.
    let outbox = |c: &mut Client, task: &str| {
        c.execute(
            &format!(
                "INSERT INTO {s}.outbox (task, kind, requester, requested_at) \
                 SELECT id, 'cancel', 'me', 0 FROM {s}.tasks WHERE task_id = $1"
            ),
            &[&task],
        )
    };
    assert_eq!(outbox(&mut c, "a1").unwrap(), 1);
    let seen = |c: &mut Client| -> Vec<String> {
        c.query(&format!("SELECT owner_role::text FROM {s}.outbox"), &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    assert_eq!(
        seen(&mut a),
        [carol.as_str()],
        "the follower sees carol's request"
    );
    assert_eq!(seen(&mut b), Vec::<String>::new());
    assert_eq!(
        outbox(&mut b, "a1").unwrap(),
        0,
        "bob cannot name alice's task"
    );
    let a1: i64 = admin
        .query_one(
            &format!("SELECT id FROM {s}.tasks WHERE task_id = 'a1'"),
            &[],
        )
        .unwrap()
        .get(0);
    let forced = b.execute(
        &format!(
            "INSERT INTO {s}.outbox (task, kind, requester, requested_at) \
             VALUES ($1, 'cancel', 'me', 0)"
        ),
        &[&a1],
    );
    assert!(
        forced.is_err(),
        "bob left a request on a task he cannot see"
    );
    // Nobody writes rows as a role they are not.
    let forged = b.execute(
        &format!(
            "INSERT INTO {s}.tasks (server, task_id, recorded_at, owner_role) \
             VALUES ('srv', 'forged', 0, '{alice}')"
        ),
        &[],
    );
    assert!(forged.is_err(), "bob wrote a row as alice");
    // The group role has no DDL.
    let ddl = a.batch_execute(&format!("DROP TABLE {s}.events"));
    assert!(ddl.is_err(), "a client dropped a table");
    let ddl = a.batch_execute(&format!("ALTER TABLE {s}.tasks DISABLE ROW LEVEL SECURITY"));
    assert!(ddl.is_err(), "a client turned row-level security off");
}

#[test]
fn every_write_notifies_a_hint_without_ids() {
    let s = fresh_schema();
    let mut admin = server().admin();
    migrate(&mut admin, &s, SCHEMA_VERSION).unwrap();
    let mut listener = server().admin();
    listener.batch_execute(&format!("LISTEN {s}")).unwrap();
    add_task(&mut admin, &s, "secret-task-id");
    let mut notes = listener.notifications();
    let note = notes
        .timeout_iter(Duration::from_secs(5))
        .next()
        .unwrap()
        .expect("a notification");
    assert_eq!(note.channel(), s);
    assert_eq!(note.payload(), "changed");
    let seq: i64 = admin
        .query_one(&format!("SELECT changed_seq FROM {s}.tasks"), &[])
        .unwrap()
        .get(0);
    assert!(seq > 0, "the row carries its change number");
    assert_eq!(schema::USERS_ROLE, "taskrail_users");
}
