//! Server-Sent Events decoding for reply streams: bytes → JSON-RPC messages, with a
//! per-event byte bound, and the resumption state (`id:` and `retry:` fields) a cut
//! stream needs (SEP-1699).
//!
//! Must not do I/O: callers hand in the byte stream.

use futures::{Stream, StreamExt, TryStreamExt};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::error::McpError;
use super::http::MessageStream;
use super::jsonrpc::Incoming;

/// Delay before resuming when the server named none.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// A hostile `retry:` value cannot park a request for longer than this.
const MAX_RETRY: Duration = Duration::from_secs(30);

#[derive(Debug, Default)]
struct Resume {
    last_id: Option<String>,
    retry: Option<Duration>,
}

/// The last event id and retry delay seen on a stream, shared with its reader.
#[derive(Debug, Clone, Default)]
pub struct ResumeCell(Arc<Mutex<Resume>>);

impl ResumeCell {
    /// `(Last-Event-ID, delay)` when the stream named an event id.
    pub fn resumable(&self) -> Option<(String, Duration)> {
        let r = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let id = r.last_id.clone()?;
        Some((id, r.retry.unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)))
    }

    fn record(&self, id: Option<&str>, retry: Option<u64>) {
        if id.is_none() && retry.is_none() {
            return;
        }
        let mut r = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = id {
            r.last_id = Some(id.to_string());
        }
        if let Some(ms) = retry {
            r.retry = Some(Duration::from_millis(ms));
        }
    }
}

/// Decode any SSE byte stream into JSON-RPC messages. More than `max` bytes without a
/// complete event ends the stream with an error; events without data are skipped.
pub fn sse_decode<S>(bytes: S, max: usize) -> MessageStream
where
    S: Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + 'static,
{
    sse_decode_tracked(bytes, max, None)
}

/// [`sse_decode`], recording event ids and retry delays into `resume`.
pub fn sse_decode_tracked<S>(bytes: S, max: usize, resume: Option<ResumeCell>) -> MessageStream
where
    S: Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + 'static,
{
    let pending = Arc::new(AtomicUsize::new(0));
    let counter = pending.clone();
    let bytes = bytes.and_then(move |chunk| {
        let seen = counter.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len();
        futures::future::ready(if seen > max {
            Err(std::io::Error::other(format!(
                "event larger than {max} bytes"
            )))
        } else {
            Ok(chunk)
        })
    });
    let events = sse_stream::SseByteStream::new(bytes);
    Box::pin(events.filter_map(move |ev| {
        let pending = pending.clone();
        let resume = resume.clone();
        async move {
            match ev {
                Ok(ev) => {
                    pending.store(0, Ordering::Relaxed);
                    if let Some(r) = &resume {
                        r.record(ev.id.as_deref(), ev.retry);
                    }
                    let data = ev.data?;
                    if data.trim().is_empty() {
                        return None;
                    }
                    Some(Incoming::parse(&data))
                }
                Err(e) => Some(Err(McpError::transport(format!("event stream: {e}")))),
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(
        chunks: &[&str],
        max: usize,
        resume: Option<ResumeCell>,
    ) -> Vec<Result<Incoming, McpError>> {
        let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = chunks
            .iter()
            .map(|c| Ok(bytes::Bytes::copy_from_slice(c.as_bytes())))
            .collect();
        futures::executor::block_on(
            sse_decode_tracked(futures::stream::iter(chunks), max, resume).collect(),
        )
    }

    #[test]
    fn split_events_decode_and_record_resume_state() {
        let cell = ResumeCell::default();
        let out = decode(
            &[
                "id: e-1\nretry: 500\ndata: \n\n",
                "id: e-2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"no",
                "tifications/x\"}\n\n",
            ],
            1024,
            Some(cell.clone()),
        );
        assert_eq!(out.len(), 1);
        assert!(
            matches!(&out[0], Ok(Incoming::Notification { method, .. }) if method == "notifications/x")
        );
        assert_eq!(
            cell.resumable(),
            Some(("e-2".to_string(), Duration::from_millis(500)))
        );
    }

    #[test]
    fn an_oversized_event_ends_in_an_error() {
        let big = format!("data: {}\n\n", "x".repeat(5000));
        let out = decode(&[&big[..2500], &big[2500..]], 4096, None);
        assert!(
            matches!(out.last(), Some(Err(McpError::Transport(m))) if m.contains("larger than"))
        );
    }

    #[test]
    fn hostile_retry_is_capped() {
        let cell = ResumeCell::default();
        decode(
            &["id: a\nretry: 999999999\ndata: \n\n"],
            1024,
            Some(cell.clone()),
        );
        assert_eq!(cell.resumable().map(|r| r.1), Some(MAX_RETRY));
    }
}
