//! A real PostgreSQL 15 server for tests, started by the tests themselves: `initdb` and
//! `pg_ctl` from `/usr/lib/postgresql/15/bin` (or `TASKRAIL_PG_BIN`) on a throwaway data
//! directory in /tmp, listening on loopback at a free port with its Unix socket inside the
//! data directory; run as the `postgres` user when the tests run as root (the server
//! refuses root). One server per test binary, shared by its tests, stopped when the
//! binary exits (a watchdog stops it even after a `kill -9`). Plain std: the unit tests
//! and the integration tests (`tests/support/postgres.rs`) share this file.
//!
//! A missing PostgreSQL fails the test with a message that says how to install it: these
//! tests are never skipped silently.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The running test server.
#[derive(Debug)]
pub struct TestServer {
    pub port: u16,
}

fn bin_dir() -> PathBuf {
    std::env::var_os("TASKRAIL_PG_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/lib/postgresql/15/bin"))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// `program args…`, as the `postgres` user when we are root.
fn as_server_user(program: &Path, args: &[&str]) -> Command {
    if is_root() {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program).args(args);
        cmd
    } else {
        let mut cmd = Command::new(program);
        cmd.args(args);
        cmd
    }
}

fn run(mut cmd: Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
    listener.local_addr().expect("its address").port()
}

fn start() -> TestServer {
    let bin = bin_dir();
    let initdb = bin.join("initdb");
    assert!(
        initdb.exists(),
        "PostgreSQL 15 is not installed ({} is missing): these tests need a real server. \
         Install it with `apt-get install postgresql-15` (.ci/run does), or point \
         TASKRAIL_PG_BIN at its bin directory",
        initdb.display()
    );
    let data_dir = std::env::temp_dir().join(format!(
        "taskrail-pg-{}-{}",
        std::process::id(),
        fastrand::u32(..)
    ));
    std::fs::create_dir_all(&data_dir).expect("the data directory");
    if is_root() {
        run(
            {
                let mut c = Command::new("chown");
                c.arg("postgres:postgres").arg(&data_dir);
                c
            },
            "chown the data directory to postgres",
        );
    }
    let dir = data_dir.to_str().expect("a UTF-8 temp dir").to_string();
    run(
        as_server_user(
            &initdb,
            &[
                "-D",
                &dir,
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        ),
        "initdb",
    );
    let port = free_port();
    let options = format!(
        "-c listen_addresses=127.0.0.1 -p {port} -k {dir} -c fsync=off -c max_connections=300"
    );
    let log = format!("{dir}/server.log");
    run(
        as_server_user(
            &bin.join("pg_ctl"),
            &[
                "-D", &dir, "-o", &options, "-l", &log, "-w", "-t", "60", "start",
            ],
        ),
        "pg_ctl start",
    );
    // The watchdog: once this process is gone (however it ended), stop the server and
    // remove its data.
    let watchdog = format!(
        "( while [ -d /proc/{pid} ]; do sleep 1; done; \
         '{pg_ctl}' -D '{dir}' -m immediate stop; rm -rf '{dir}' ) >/dev/null 2>&1 </dev/null &",
        pid = std::process::id(),
        pg_ctl = bin.join("pg_ctl").display(),
    );
    // Started in the background by a shell that returns at once: it outlives this process.
    run(
        as_server_user(Path::new("/bin/sh"), &["-c", &watchdog]),
        "starting the server's watchdog",
    );
    TestServer { port }
}

/// The test binary's server, started on first use.
pub fn server() -> &'static TestServer {
    static SERVER: OnceLock<TestServer> = OnceLock::new();
    SERVER.get_or_init(start)
}
