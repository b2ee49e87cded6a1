//! The PostgreSQL URL's tests: libpq's URI forms, the environment and `~/.pgpass`, and a
//! password never shown.

use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn libpq_uri_forms() {
    let u = PgUrl::parse("postgresql://al%40ice:p%3Ass@db.example:6543/team%20x?sslmode=disable&options=-c%20role%3Dops&application_name=tr").unwrap();
    assert_eq!(u.hosts, ["db.example"]);
    assert_eq!(u.ports, [6543]);
    assert_eq!(u.user.as_deref(), Some("al@ice"));
    assert_eq!(u.password.as_deref(), Some("p:ss"));
    assert_eq!(u.dbname.as_deref(), Some("team x"));
    assert_eq!(u.sslmode, Some(SslMode::Disable));
    assert_eq!(u.options.as_deref(), Some("-c role=ops"));

    // libpq decodes %-escapes only: a `+` stays a `+`.
    let u = PgUrl::parse("postgres://h/d?application_name=a+b").unwrap();
    assert_eq!(u.application_name.as_deref(), Some("a+b"));

    let u = PgUrl::parse("postgres://[::1]:5433,h2:5434/db").unwrap();
    assert_eq!(u.hosts, ["::1", "h2"]);
    assert_eq!(u.ports, [5433, 5434]);

    let u = PgUrl::parse("postgres:///db?host=%2Ftmp%2Fsock&port=7000&user=bob").unwrap();
    assert_eq!(u.hosts, ["/tmp/sock"]);
    assert_eq!(
        (u.ports.as_slice(), u.user.as_deref()),
        (&[7000u16][..], Some("bob"))
    );

    for bad in [
        "postgres://h:notaport/x",
        "postgres://h/x?sslmode=sometimes",
        "postgres://h/x?frobnicate=1",
        "postgres://h/x?sslmode",
        "postgres://h/%zz",
    ] {
        assert!(PgUrl::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_environment_fills_in_what_the_url_leaves_out() {
    let env = |k: &str| match k {
        "PGHOST" => Some("envhost".to_string()),
        "PGPORT" => Some("5999".to_string()),
        "PGUSER" => Some("envuser".to_string()),
        "PGPASSWORD" => Some("envpw".to_string()),
        "PGSSLMODE" => Some("require".to_string()),
        "PGSSLROOTCERT" => Some("/env/root.crt".to_string()),
        _ => None,
    };
    let r = PgUrl::parse("postgres:///")
        .unwrap()
        .resolve(&env, None)
        .unwrap();
    assert_eq!(
        (r.hosts[0].as_str(), r.ports[0], r.user.as_str()),
        ("envhost", 5999, "envuser")
    );
    assert_eq!(
        (r.dbname.as_str(), r.password.as_deref()),
        ("envuser", Some("envpw"))
    );
    assert!(r.sslmode.needs_tls());
    assert_eq!(r.sslrootcert.as_deref(), Some("/env/root.crt"));
    // The URL wins over the environment.
    let r = PgUrl::parse("postgres://u:urlpw@h:1/d?sslmode=disable")
        .unwrap()
        .resolve(&env, None)
        .unwrap();
    assert_eq!(
        (r.hosts[0].as_str(), r.ports[0], r.password.as_deref()),
        ("h", 1, Some("urlpw"))
    );
    assert_eq!(r.sslmode, SslMode::Disable);
    let r = PgUrl::parse("postgres://u@h/d?sslmode=verify-ca&sslrootcert=%2Fca%20dir%2Froot.pem")
        .unwrap()
        .resolve(&env, None)
        .unwrap();
    assert_eq!(r.sslrootcert.as_deref(), Some("/ca dir/root.pem"));
    assert_eq!(r.channel_binding, ChannelBinding::Prefer);
    let r = PgUrl::parse("postgres://u@h/d?channel_binding=require")
        .unwrap()
        .resolve(&env, None)
        .unwrap();
    assert_eq!(r.channel_binding, ChannelBinding::Require);
    assert!(PgUrl::parse("postgres://u@h/d?channel_binding=maybe").is_err());
}

#[test]
fn the_password_file_is_read_as_libpq_does() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(".pgpass");
    std::fs::write(
        &file,
        "# comment\nother:5432:*:carol:nope\ndb.example:6543:team:carol:pa\\:ss\n*:*:*:*:fallback\n",
    )
    .unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let url = PgUrl::parse("postgres://carol@db.example:6543/team").unwrap();
    let r = url.resolve(&no_env, Some(dir.path())).unwrap();
    assert_eq!(r.password.as_deref(), Some("pa:ss"));
    let r = PgUrl::parse("postgres://dave@x/y")
        .unwrap()
        .resolve(&no_env, Some(dir.path()))
        .unwrap();
    assert_eq!(r.password.as_deref(), Some("fallback"));
    // A file others may read is ignored.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = url.resolve(&no_env, Some(dir.path())).unwrap();
    assert_eq!(r.password, None);
}

#[test]
fn the_password_is_never_shown() {
    let u = PgUrl::parse("postgres://alice:hunter2@db:5432/team?sslmode=prefer").unwrap();
    let r = u.resolve(&no_env, None).unwrap();
    let shown = format!("{u} {u:?} {r:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert_eq!(
        u.to_string(),
        "postgresql://alice:***@db:5432/team?sslmode=prefer"
    );
}
