//! The OS keyring as the token store: a private D-Bus session with GNOME Keyring's Secret
//! Service (unlocked with a test password), a sign-in to FastMCP's OAuth provider kept
//! there (`--token-store keyring`, and `auto` picking it), no token file written, and
//! `auth logout` removing it. `dbus-daemon` and `gnome-keyring-daemon` are required
//! (`.ci/run` installs them): a missing one fails the test, never skips it.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use support::taskrail::Taskrail;

const LIMIT: Duration = Duration::from_secs(90);

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A session bus and an unlocked Secret Service on it; the bus address.
fn secret_service(home: &std::path::Path) -> (String, Killed, Killed) {
    let mut bus = Command::new("dbus-daemon")
        .args(["--session", "--nofork", "--print-address=1"])
        .arg(format!(
            "--address=unix:path={}",
            home.join("bus").display()
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("dbus-daemon is required (apt-get install dbus-daemon): {e}"));
    let mut line = String::new();
    BufReader::new(bus.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let address = line.trim().to_string();
    assert!(address.starts_with("unix:"), "bus address {address:?}");
    let bus = Killed(bus);
    let mut keyring = Command::new("gnome-keyring-daemon")
        .args(["--unlock", "--components=secrets", "--foreground"])
        .env("DBUS_SESSION_BUS_ADDRESS", &address)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env_remove("XDG_RUNTIME_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("gnome-keyring-daemon is required (apt-get install gnome-keyring): {e}")
        });
    let mut stdin = keyring.stdin.take().unwrap();
    stdin.write_all(b"test-keyring-password").unwrap();
    drop(stdin);
    (address, bus, Killed(keyring))
}

#[test]
fn sign_ins_live_in_the_os_keyring_when_a_secret_service_runs() {
    let home = tempfile::tempdir().unwrap();
    let (address, _bus, _keyring) = secret_service(home.path());
    let peer = support::fastmcp_oauth_http();
    let url = peer.url.as_str();
    let tr = Taskrail::new()
        .with_fake_browser()
        .with_env("DBUS_SESSION_BUS_ADDRESS", address.clone())
        .with_env("TASKRAIL_TOKEN_STORE", "keyring");

    // The daemon takes a moment to claim its name on the bus.
    let deadline = std::time::Instant::now() + LIMIT;
    let login = loop {
        let run = tr.run(&["auth", "login", url], LIMIT);
        if run.code == Some(0) || std::time::Instant::now() > deadline {
            break run;
        }
        assert!(
            run.stderr.contains("keyring is not available"),
            "only the keyring may be missing: {run:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(login.code, Some(0), "{login:?}");
    assert!(login.stderr.contains("OS keyring"), "{login:?}");
    assert!(!tr.tokens().exists(), "no token file next to the keyring");

    // `auto` finds the Secret Service and the stored sign-in: no browser.
    let auto = Taskrail::new()
        .with_fake_browser()
        .with_env("DBUS_SESSION_BUS_ADDRESS", address)
        .with_env("TASKRAIL_TOKEN_STORE", "auto");
    let tools = auto.run(&["tools", "-s", url], LIMIT);
    assert_eq!(tools.code, Some(0), "{tools:?}");
    assert!(tools.stdout.contains("slow_count"), "{tools:?}");
    assert_eq!(auto.browser_visits(), 0);
    let status = auto.run(&["auth", "status", "-s", url], LIMIT);
    assert!(status.stdout.contains("signed in"), "{status:?}");
    assert!(status.stdout.contains("OS keyring"), "{status:?}");

    let logout = tr.run(&["auth", "logout", url], LIMIT);
    assert_eq!(logout.code, Some(0), "{logout:?}");
    let status = tr.run(&["auth", "status", "-s", url], LIMIT);
    assert!(status.stdout.contains("not signed in"), "{status:?}");
    let tools = tr.run(&["tools", "-s", url], LIMIT);
    assert_eq!(
        tools.code,
        Some(taskrail::cli::exit::SIGN_IN.into()),
        "{tools:?}"
    );
}
