//! A real PostgreSQL 15 server for tests, started by the tests themselves: `initdb` and
//! `pg_ctl` from `/usr/lib/postgresql/15/bin` (or `TASKRAIL_PG_BIN`) on a throwaway data
//! directory in /tmp, listening on loopback at a free port with its Unix socket inside the
//! data directory; run as the `postgres` user when the tests run as root (the server
//! refuses root). One server per test binary, shared by its tests, stopped when the
//! binary exits (a watchdog stops it even after a `kill -9`). Plain std: the unit tests
//! and the integration tests (`tests/support/postgres.rs`) share this file.
//!
//! A second kind, [`tls_server`], speaks only TLS over TCP (`ssl=on`, plaintext TCP
//! rejected, `log_connections=on`): its CA and server certificate are made with the
//! `openssl` command when it starts, the server's naming only `localhost`, and a second CA
//! that signed nothing serves as the wrong root. The role `tls_scram` (which tests create)
//! must give its password (SCRAM); every other role is trusted over TLS.
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

/// The running TLS-only test server.
#[allow(dead_code)] // the unit tests have no use for it yet
#[derive(Debug)]
pub struct TlsTestServer {
    pub port: u16,
    /// The data directory: its Unix socket (plaintext, trusted) and `server.log`.
    pub dir: PathBuf,
    /// The CA that signed the server's certificate (PEM).
    pub ca: PathBuf,
    /// A CA that signed nothing the server has (PEM).
    pub other_ca: PathBuf,
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

/// `openssl args…` in `dir`.
fn openssl(dir: &Path, args: &[&str]) {
    let mut cmd = Command::new("openssl");
    cmd.current_dir(dir).args(args);
    run(cmd, "openssl (the TLS test server's certificates)");
}

/// A CA, a second CA, and a server key and certificate for `localhost` signed by the first,
/// in `dir` (readable by the server user only where it matters).
fn make_certificates(dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    for (name, cn) in [
        ("ca", "taskrail test CA"),
        ("other-ca", "taskrail other CA"),
    ] {
        let (key, crt, subj) = (
            format!("{name}.key"),
            format!("{name}.crt"),
            format!("/CN={cn}"),
        );
        let mut args = vec!["req", "-x509"];
        args.extend(ec);
        args.extend(["-keyout", &key, "-out", &crt, "-days", "3", "-subj", &subj]);
        args.extend(["-addext", "basicConstraints=critical,CA:TRUE"]);
        args.extend(["-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
        openssl(dir, &args);
    }
    let mut args = vec!["req"];
    args.extend(ec);
    args.extend([
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    ]);
    openssl(dir, &args);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n\
         basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n",
    )
    .expect("the certificate's extensions");
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "3",
            "-extfile",
            "server.ext",
        ],
    );
}

fn start() -> TestServer {
    let (port, _) = start_with(false);
    TestServer { port }
}

#[allow(dead_code)]
fn start_tls() -> TlsTestServer {
    let (port, dir) = start_with(true);
    TlsTestServer {
        port,
        ca: dir.join("certs/ca.crt"),
        other_ca: dir.join("certs/other-ca.crt"),
        dir,
    }
}

/// Start a server (TLS-only over TCP when `tls`); its port and data directory.
fn start_with(tls: bool) -> (u16, PathBuf) {
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
    let mut options = format!(
        "-c listen_addresses=127.0.0.1 -p {port} -k {dir} -c fsync=off -c max_connections=300"
    );
    if tls {
        // The certificates live beside (not inside) the data directory's files the server
        // owns; the key must be the server user's and private.
        let certs = data_dir.join("certs");
        std::fs::create_dir_all(&certs).expect("the certificates' directory");
        make_certificates(&certs);
        std::fs::write(
            data_dir.join("pg_hba.conf"),
            "local all all trust\n\
             hostssl all tls_scram 127.0.0.1/32 scram-sha-256\n\
             hostssl all all 127.0.0.1/32 trust\n\
             hostnossl all all 127.0.0.1/32 reject\n",
        )
        .expect("pg_hba.conf");
        if is_root() {
            run(
                {
                    let mut c = Command::new("chown");
                    c.arg("-R").arg("postgres:postgres").arg(&data_dir);
                    c
                },
                "chown the certificates to postgres",
            );
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            certs.join("server.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .expect("the key's permissions");
        options.push_str(&format!(
            " -c ssl=on -c ssl_cert_file={dir}/certs/server.crt \
             -c ssl_key_file={dir}/certs/server.key -c log_connections=on"
        ));
    }
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
    (port, data_dir)
}

/// The test binary's server, started on first use.
pub fn server() -> &'static TestServer {
    static SERVER: OnceLock<TestServer> = OnceLock::new();
    SERVER.get_or_init(start)
}

/// The test binary's TLS-only server, started on first use.
#[allow(dead_code)]
pub fn tls_server() -> &'static TlsTestServer {
    static SERVER: OnceLock<TlsTestServer> = OnceLock::new();
    SERVER.get_or_init(start_tls)
}
