//! The log file: written only there (never to the terminal the dashboard owns), created
//! private to the user. Must not log task ids or secrets (callers mask them).

use super::GlobalArgs;

/// Log lines queued for the writer thread at most.
const LOG_QUEUE_LINES: usize = 4_096;

/// Log to a file only (never to the terminal the dashboard owns). The file is created
/// `0600`, its missing directories `0700`; the default data dir (shared with the ledger)
/// is made private even when an older version created it `0755`.
pub(super) fn init_logging(
    global: &GlobalArgs,
) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let data_dir = crate::paths::data_dir();
    let path = match &global.log_file {
        Some(p) => p.clone(),
        None => crate::paths::log_file()?,
    };
    let dir = path.parent()?;
    let file = open_private(dir, &path, data_dir.as_deref() == Some(dir)).ok()?;
    // The default queue holds 128,000 lines, allocated up front (4 MB of every process's
    // memory); a log written at info level needs far fewer. Lines beyond it are dropped
    // (and counted by tracing-appender) rather than blocking a server's actor.
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .lossy(true)
        .finish(file);
    let mut filter = tracing_subscriber::EnvFilter::try_from_env("TASKRAIL_LOG_LEVEL")
        .unwrap_or_else(|_| "info".into());
    // its debug lines carry the authorization URL (with the sign-in's state)
    if let Ok(d) = "webbrowser=info".parse() {
        filter = filter.add_directive(d);
    }
    tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init()
        .ok()?;
    Some(guard)
}

/// Create `dir` (missing parts `0700`) and open `path` in it for appending, `0600`.
/// `own_dir`: the directory is taskrail's own, so it is made `0700` if it exists.
pub(super) fn open_private(
    dir: &std::path::Path,
    path: &std::path::Path,
    own_dir: bool,
) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    if !dir.as_os_str().is_empty() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        if own_dir {
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        }
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    // An existing log may predate this rule; a device or pipe is left alone.
    if file.metadata()?.is_file() {
        let _ = file.set_permissions(std::fs::Permissions::from_mode(0o600));
    }
    Ok(file)
}
