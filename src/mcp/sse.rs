//! Server-Sent Events decoding: bytes → JSON-RPC messages, for POST replies and the legacy
//! session GET stream alike. The decoder is our own so the bound holds *before* anything
//! is buffered: a line, or an event's data, past `max` bytes ends the stream with
//! `TooLarge` (no newline ever, or endless short `data:` lines, cannot grow memory). It
//! also records the resumption state (`id:` and `retry:` fields) a cut stream needs
//! (SEP-1699).
//!
//! Must not do I/O: callers hand in the byte stream.

use futures::{Stream, StreamExt};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::error::McpError;
use super::http_reply::MessageStream;
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

    /// The last event id, if any.
    pub fn last_id(&self) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .last_id
            .clone()
    }

    /// The server's `retry:` delay (capped), if it sent one.
    pub fn retry(&self) -> Option<Duration> {
        let r = self.0.lock().unwrap_or_else(|e| e.into_inner());
        r.retry.map(|d| d.min(MAX_RETRY))
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

/// One dispatched event: its data (`None` when it had no `data:` line) and fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub data: Option<String>,
    pub id: Option<String>,
    pub retry: Option<u64>,
}

/// Incremental SSE parser (the WHATWG rules: `\r\n`, `\n` or `\r` end a line, a blank
/// line dispatches, `:` starts a comment, a leading BOM is dropped). One event — every
/// line since the last blank line, as sent — may be at most `max` bytes, so neither a
/// line without a newline nor endless short `data:` lines can grow memory past it.
#[derive(Debug)]
pub struct SseDecoder {
    max: usize,
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    id: Option<String>,
    retry: Option<u64>,
    /// Bytes of the event so far, as sent (finished lines with their line ends).
    event_bytes: usize,
    /// The previous chunk ended in `\r`: a `\n` starting the next one belongs to it.
    after_cr: bool,
    started: bool,
}

impl SseDecoder {
    pub fn new(max: usize) -> Self {
        Self {
            max,
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            id: None,
            retry: None,
            event_bytes: 0,
            after_cr: false,
            started: false,
        }
    }

    /// Parse `chunk`, appending every event it completes to `out`. `TooLarge` when a line
    /// or an event's data would pass the bound; the decoder is then spent.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut VecDeque<SseEvent>) -> Result<(), McpError> {
        if !self.started && !chunk.is_empty() {
            // A BOM may arrive split; only a full one at the very start is dropped.
            if chunk.starts_with(b"\xEF\xBB\xBF") {
                chunk = &chunk[3..];
            }
            self.started = true;
        }
        if self.after_cr && chunk.first() == Some(&b'\n') {
            chunk = &chunk[1..];
        }
        self.after_cr = false;
        while !chunk.is_empty() {
            match chunk.iter().position(|b| *b == b'\n' || *b == b'\r') {
                None => {
                    self.take(chunk)?;
                    break;
                }
                Some(i) => {
                    self.take(&chunk[..i])?;
                    let cr = chunk[i] == b'\r';
                    chunk = &chunk[i + 1..];
                    if cr {
                        match chunk.first() {
                            Some(b'\n') => chunk = &chunk[1..],
                            None => self.after_cr = true,
                            Some(_) => {}
                        }
                    }
                    self.end_line(out);
                }
            }
        }
        Ok(())
    }

    fn take(&mut self, bytes: &[u8]) -> Result<(), McpError> {
        let held = self.event_bytes + self.line.len() + bytes.len();
        if held > self.max {
            return Err(McpError::TooLarge {
                size: held,
                limit: self.max,
            });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn end_line(&mut self, out: &mut VecDeque<SseEvent>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            self.event_bytes = 0;
            self.dispatch(out);
            return;
        }
        self.event_bytes += line.len() + 1;
        if line[0] == b':' {
            return; // a comment (keep-alive)
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (&line[..], &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"id" if !value.contains(&0) => {
                self.id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {} // `event:` and unknown fields carry nothing we use
        }
    }

    fn dispatch(&mut self, out: &mut VecDeque<SseEvent>) {
        let data = self
            .has_data
            .then(|| String::from_utf8_lossy(&std::mem::take(&mut self.data)).into_owned());
        self.has_data = false;
        let (id, retry) = (self.id.take(), self.retry.take());
        if data.is_some() || id.is_some() || retry.is_some() {
            out.push_back(SseEvent { data, id, retry });
        }
    }
}

/// Decode any SSE byte stream into JSON-RPC messages. A line or an event past `max`
/// bytes ends the stream with `TooLarge`; events without data are skipped.
pub fn sse_decode<S>(bytes: S, max: usize) -> MessageStream
where
    S: Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + 'static,
{
    sse_decode_tracked(bytes, max, None)
}

type ByteStream =
    std::pin::Pin<Box<dyn Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send>>;

struct Decoding {
    bytes: ByteStream,
    decoder: SseDecoder,
    events: VecDeque<SseEvent>,
    items: VecDeque<Result<Incoming, McpError>>,
    resume: Option<ResumeCell>,
    done: bool,
}

impl Decoding {
    /// Turn completed events into messages (recording their resumption fields).
    fn parse_events(&mut self) {
        while let Some(ev) = self.events.pop_front() {
            if let Some(r) = &self.resume {
                r.record(ev.id.as_deref(), ev.retry);
            }
            if let Some(d) = ev.data.filter(|d| !d.trim().is_empty()) {
                self.items.push_back(Incoming::parse(&d));
            }
        }
    }
}

/// [`sse_decode`], recording event ids and retry delays into `resume`.
pub fn sse_decode_tracked<S>(bytes: S, max: usize, resume: Option<ResumeCell>) -> MessageStream
where
    S: Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + 'static,
{
    let state = Decoding {
        bytes: Box::pin(bytes),
        decoder: SseDecoder::new(max),
        events: VecDeque::new(),
        items: VecDeque::new(),
        resume,
        done: false,
    };
    Box::pin(futures::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(item) = s.items.pop_front() {
                return Some((item, s));
            }
            if s.done {
                return None;
            }
            match s.bytes.next().await {
                // An event cut by the end of the stream is discarded, as the spec says.
                None => s.done = true,
                Some(Err(e)) => {
                    s.done = true;
                    let e = McpError::transport(format!("event stream: {e}"));
                    s.items.push_back(Err(e));
                }
                Some(Ok(chunk)) => {
                    let fed = s.decoder.feed(&chunk, &mut s.events);
                    // What completed before the bound was hit is still delivered.
                    s.parse_events();
                    if let Err(e) = fed {
                        s.done = true;
                        s.items.push_back(Err(e));
                    }
                }
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

    fn events(input: &[&[u8]], max: usize) -> (Vec<SseEvent>, Option<McpError>) {
        let mut d = SseDecoder::new(max);
        let mut out = VecDeque::new();
        for chunk in input {
            if let Err(e) = d.feed(chunk, &mut out) {
                return (out.into(), Some(e));
            }
        }
        (out.into(), None)
    }

    fn data(s: &str) -> SseEvent {
        SseEvent {
            data: Some(s.into()),
            id: None,
            retry: None,
        }
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
    fn line_endings_comments_and_multi_line_data() {
        let (evs, err) = events(
            &[
                b"\xEF\xBB\xBF: keep-alive\r\ndata: a\r",
                b"\ndata:b\rdata\n\nevent: x\nid: 7\n\n",
            ],
            1024,
        );
        assert!(err.is_none());
        assert_eq!(
            evs,
            vec![
                data("a\nb\n"),
                SseEvent {
                    data: None,
                    id: Some("7".into()),
                    retry: None
                }
            ]
        );
        // An id holding NUL and a non-numeric retry are ignored.
        let (evs, _) = events(&[b"id: a\0b\nretry: 5s\ndata: x\n\n"], 1024);
        assert_eq!(evs, vec![data("x")]);
    }

    #[test]
    fn a_line_without_newline_is_cut_at_the_bound() {
        let mut d = SseDecoder::new(4096);
        let mut out = VecDeque::new();
        let chunk = vec![b'x'; 1000];
        d.feed(b"data: ", &mut out).unwrap();
        let mut fed = 6;
        let err = loop {
            match d.feed(&chunk, &mut out) {
                Ok(()) => fed += chunk.len(),
                Err(e) => break e,
            }
            assert!(fed < 10_000, "never cut");
        };
        assert!(matches!(err, McpError::TooLarge { limit: 4096, .. }));
        assert!(d.line.capacity() <= 8192);
    }

    #[test]
    fn endless_short_data_lines_are_cut_at_the_bound() {
        let (evs, err) = events(&[&b"data: x\n".repeat(1000)], 4096);
        assert!(evs.is_empty());
        assert!(matches!(err, Some(McpError::TooLarge { .. })));
    }

    #[test]
    fn an_oversized_event_ends_in_an_error_after_the_complete_ones() {
        let ok = "data: {\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n\n";
        let big = format!("{ok}data: {}\n\n", "x".repeat(5000));
        let out = decode(&[&big[..2500], &big[2500..]], 4096, None);
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(out[0].is_ok());
        assert!(matches!(out[1], Err(McpError::TooLarge { .. })));
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
