//! The tower-mcp test peer (`tests/interop/tower_peer`): built with cargo on first use.
//!
//! It is a standalone Cargo project (its own lock file, not a workspace member), built into
//! `$CARGO_TARGET_DIR/tower-peer` (default `<repo>/target/tower-peer`). `tests/run_all.sh`
//! builds it up front; a test that calls [`tower_http`] first builds it itself if needed.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{Peer, interop_dir, new_log_file, repo_dir, start};

/// A clean build takes a few minutes on a 2-core machine; give it room, but not forever.
const BUILD_TIMEOUT: Duration = Duration::from_secs(25 * 60);

/// The cargo profile the peer is built with (`tests/run_all.sh` uses the same), and the
/// folder of the target directory it lands in.
pub const TOWER_PEER_PROFILE: &str = "dev";
const TOWER_PEER_PROFILE_DIR: &str = "debug";

/// The peer's Cargo manifest.
pub fn tower_peer_manifest() -> PathBuf {
    interop_dir().join("tower_peer").join("Cargo.toml")
}

/// The target directory the peer is built into.
pub fn tower_peer_target_dir() -> PathBuf {
    let base = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                repo_dir().join(dir)
            }
        }
        _ => repo_dir().join("target"),
    };
    base.join("tower-peer")
}

/// Builds the tower peer once per test process (cargo makes it a no-op when up to date)
/// and returns the binary's path.
pub fn tower_peer_binary() -> PathBuf {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = built.as_ref() {
        return path.clone();
    }
    let target_dir = tower_peer_target_dir();
    let (log, log_file) = new_log_file("tower-peer-build");
    let stderr = log_file.try_clone().expect("clone log handle");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--locked", "--profile", TOWER_PEER_PROFILE])
        .arg("--manifest-path")
        .arg(tower_peer_manifest())
        .arg("--target-dir")
        .arg(&target_dir)
        // Do not inherit settings meant for the main crate's build.
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .stdin(Stdio::null())
        .stdout(Stdio::from(log_file))
        .stderr(Stdio::from(stderr));
    let described = format!("{cmd:?}");
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {described}: {e}"));
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > BUILD_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "building the tower peer took over {BUILD_TIMEOUT:?}; log: {}",
                    log.display()
                );
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(200)),
            Err(e) => panic!("waiting for {described}: {e}"),
        }
    };
    if !status.success() {
        panic!(
            "building the tower peer failed ({status}): {described}\nlog: {}\n--- log tail ---\n{}",
            log.display(),
            super::log_tail(&log, 4000)
        );
    }
    let binary = target_dir
        .join(TOWER_PEER_PROFILE_DIR)
        .join("taskrail-tower-peer");
    assert!(
        binary.exists(),
        "tower peer built but {} is missing",
        binary.display()
    );
    *built = Some(binary.clone());
    binary
}

/// Starts the tower-mcp peer (modern `2026-07-28`, tasks-v2 with `subscriptions/listen`
/// push). Tools: `work {steps, delay_ms}`, `confirm {}` (input_required, key `confirm`),
/// `fail_soon {delay_ms}`.
pub fn tower_http() -> Peer {
    let mut cmd = Command::new(tower_peer_binary());
    cmd.args(["--port", "0"]);
    start("tower", cmd)
}
