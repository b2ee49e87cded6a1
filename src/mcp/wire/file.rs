//! The `--wire FILE` writer: one NDJSON line per record, written by a thread of its own so a
//! transport only queues (a full queue drops the record and counts it). At
//! [`DEFAULT_MAX_BYTES`] (or `TASKRAIL_WIRE_MAX_BYTES`) the file is renamed to `FILE.1`
//! (replacing the older one) and a new one started, so the log never holds more than about
//! twice the bound. A write error (a full disk) turns the log off with one log line; the
//! command goes on. Must not block the caller.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::WireRecord;

/// Where the file rotates unless `TASKRAIL_WIRE_MAX_BYTES` says otherwise: 32 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 32 * 1024 * 1024;

/// Records queued for the writer before new ones are dropped.
const QUEUE: usize = 4096;

/// The running writer.
pub struct FileSink {
    tx: Mutex<Option<SyncSender<WireRecord>>>,
    live: Arc<AtomicBool>,
    dropped: AtomicU64,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl FileSink {
    /// Open (append to) `path` and start the writer; `max_bytes` is where it rotates.
    pub fn open(path: &Path, max_bytes: u64) -> std::io::Result<FileSink> {
        let file = open_log(path)?;
        let written = file.metadata().map(|m| m.len()).unwrap_or(0);
        let (tx, rx) = sync_channel::<WireRecord>(QUEUE);
        let live = Arc::new(AtomicBool::new(true));
        let writer = Writer {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
            written,
            max: max_bytes.max(1),
            live: live.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("taskrail-wire".into())
            .spawn(move || writer.run(rx))?;
        Ok(FileSink {
            tx: Mutex::new(Some(tx)),
            live,
            dropped: AtomicU64::new(0),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// The rotation bound from `TASKRAIL_WIRE_MAX_BYTES`, else [`DEFAULT_MAX_BYTES`].
    pub fn max_bytes_from_env() -> u64 {
        std::env::var("TASKRAIL_WIRE_MAX_BYTES")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .filter(|n| *n > 0)
            .unwrap_or(DEFAULT_MAX_BYTES)
    }

    /// Whether records are still written (false after a write error or [`FileSink::close`]).
    pub fn live(&self) -> bool {
        self.live.load(Ordering::Relaxed)
    }

    /// Queue one record; never blocks.
    pub fn push(&self, rec: WireRecord) {
        if !self.live() {
            return;
        }
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let Some(tx) = tx.as_ref() else { return };
        match tx.try_send(rec) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                if self.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                    tracing::warn!("wire log: the writer is behind; records are being dropped");
                }
            }
            Err(TrySendError::Disconnected(_)) => self.live.store(false, Ordering::Relaxed),
        }
    }

    /// Write what is queued and stop the writer (waits at most `wait`).
    pub fn close(&self, wait: std::time::Duration) {
        drop(self.tx.lock().unwrap_or_else(|e| e.into_inner()).take());
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = thread {
            let deadline = std::time::Instant::now() + wait;
            while !thread.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
        let dropped = self.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!("wire log: {dropped} records dropped (the writer was behind)");
        }
    }
}

/// Append-only, private to the user (the messages may hold anything a server sends).
fn open_log(path: &Path) -> std::io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path)
}

/// The rotated file's name: `FILE.1`.
pub fn rotated(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".1");
    PathBuf::from(name)
}

struct Writer {
    path: PathBuf,
    out: BufWriter<File>,
    written: u64,
    max: u64,
    live: Arc<AtomicBool>,
}

impl Writer {
    fn run(mut self, rx: Receiver<WireRecord>) {
        while let Ok(rec) = rx.recv() {
            let mut result = self.write(&rec);
            // Flush once the queue is drained, not per record.
            while result.is_ok() {
                match rx.try_recv() {
                    Ok(rec) => result = self.write(&rec),
                    Err(_) => break,
                }
            }
            if let Err(e) = result.and_then(|()| self.out.flush()) {
                self.live.store(false, Ordering::Relaxed);
                tracing::error!(
                    "wire log {}: {e}; the wire log is off from here, the command goes on",
                    self.path.display()
                );
                return;
            }
        }
        let _ = self.out.flush();
    }

    fn write(&mut self, rec: &WireRecord) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(rec).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let len = line.len() as u64;
        if self.written > 0 && self.written + len > self.max {
            self.rotate()?;
        }
        self.out.write_all(&line)?;
        self.written += len;
        Ok(())
    }

    /// `FILE` → `FILE.1` (the older `FILE.1` goes), and a fresh `FILE`. Only a regular
    /// file is rotated (a pipe or a device is written on).
    fn rotate(&mut self) -> std::io::Result<()> {
        self.out.flush()?;
        if !std::fs::metadata(&self.path).is_ok_and(|m| m.is_file()) {
            self.written = 0;
            return Ok(());
        }
        std::fs::rename(&self.path, rotated(&self.path))?;
        self.out = BufWriter::new(open_log(&self.path)?);
        self.written = 0;
        Ok(())
    }
}
