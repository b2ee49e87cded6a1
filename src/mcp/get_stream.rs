//! The legacy (`2025-11-25`) session GET stream: one long-lived `GET` read with the bounded
//! SSE decoder, reopened with backoff and `Last-Event-ID` when it ends or breaks. A first
//! connection that fails, and a `401`/`403`/`404`/`405` at any time, end it.
//!
//! Owns: the stream's reconnect loop. Must not interpret the messages it yields. The
//! connection itself is a function (`Connect`), so the loop can be driven without HTTP.

use super::backoff::Backoff;
use futures::future::BoxFuture;
use futures::{Stream, StreamExt, TryStreamExt};
use reqwest::header::{self, HeaderMap, HeaderValue};
use std::time::Duration;

use super::error::McpError;
use super::http_reply::MessageStream;
use super::jsonrpc::Incoming;
use super::sse::{ResumeCell, sse_decode_tracked};

/// First reconnect delay; doubled per failed attempt up to [`MAX_DELAY`].
const FIRST_DELAY: Duration = Duration::from_millis(500);
const MAX_DELAY: Duration = Duration::from_secs(15);

/// The body of one opened stream.
pub type ByteStream =
    std::pin::Pin<Box<dyn Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send>>;

/// Open one connection, given the `Last-Event-ID` to send: the body of a `2xx` event
/// stream, or why not (`McpError::Http` carries the status).
pub type Connect =
    Box<dyn FnMut(Option<String>) -> BoxFuture<'static, Result<ByteStream, McpError>> + Send>;

/// Statuses after which reconnecting cannot help.
fn is_final(status: u16) -> bool {
    matches!(status, 401 | 403 | 404 | 405)
}

/// The wait before reconnect number `attempt`: 0.5 s doubling to 15 s, at least the
/// server's `retry:` delay.
pub fn reconnect_delay(attempt: u32, server: Option<Duration>) -> Duration {
    let backoff = Backoff {
        base: FIRST_DELAY,
        max: MAX_DELAY,
    };
    backoff.step(attempt).max(server.unwrap_or_default())
}

struct State {
    connect: Connect,
    max: usize,
    resume: ResumeCell,
    current: Option<MessageStream>,
    /// Failed or ended connections since the last message.
    attempt: u32,
    connected_once: bool,
    done: bool,
    /// Told whether the server answered the GET (`Some(true)`) or refused it (`None`).
    ready: Option<Ready>,
}

/// Whether the stream is up, for those waiting for it (see [`open`]).
pub type Ready = tokio::sync::watch::Sender<Option<bool>>;

impl State {
    async fn next(&mut self) -> Option<Result<Incoming, McpError>> {
        loop {
            if self.done {
                return None;
            }
            let Some(stream) = self.current.as_mut() else {
                if self.attempt > 0 {
                    tokio::time::sleep(reconnect_delay(self.attempt, self.resume.retry())).await;
                }
                match (self.connect)(self.resume.last_id()).await {
                    Ok(bytes) => {
                        let resume = Some(self.resume.clone());
                        self.current = Some(sse_decode_tracked(bytes, self.max, resume));
                        self.connected_once = true;
                        if let Some(r) = &self.ready {
                            r.send_replace(Some(true));
                        }
                    }
                    Err(e) => {
                        if let (Some(r), McpError::Http { .. }) = (&self.ready, &e) {
                            r.send_replace(None);
                        }
                        let fatal =
                            matches!(&e, McpError::Http { status, .. } if is_final(*status));
                        self.done = fatal || !self.connected_once;
                        self.attempt += 1;
                        return Some(Err(e));
                    }
                }
                continue;
            };
            match stream.next().await {
                Some(Ok(msg)) => {
                    self.attempt = 0;
                    return Some(Ok(msg));
                }
                Some(Err(McpError::Decode(e))) => {
                    tracing::warn!("skipping a malformed message on the GET stream: {e}");
                }
                Some(Err(e)) => {
                    self.current = None;
                    self.attempt += 1;
                    return Some(Err(e));
                }
                None => {
                    self.current = None;
                    self.attempt += 1;
                    return Some(Err(McpError::transport("the GET stream ended")));
                }
            }
        }
    }
}

/// The reconnecting stream over `connect`; the first connection is made on the first poll.
/// Each line or event is bounded by `max` bytes; `ready` hears whether it is up.
pub fn open_with(connect: Connect, max: usize, ready: Option<Ready>) -> MessageStream {
    let state = State {
        connect,
        max,
        resume: ResumeCell::default(),
        current: None,
        attempt: 0,
        connected_once: false,
        done: false,
        ready,
    };
    Box::pin(futures::stream::unfold(state, |mut s| async move {
        let item = s.next().await?;
        Some((item, s))
    }))
}

/// The GET stream of `url` with `headers` (a snapshot taken when the stream opens).
pub fn open(
    client: reqwest::Client,
    url: reqwest::Url,
    headers: HeaderMap,
    max: usize,
    ready: Ready,
) -> MessageStream {
    let connect: Connect = Box::new(move |last_event_id| {
        let (client, url) = (client.clone(), url.clone());
        let mut h = headers.clone();
        Box::pin(async move {
            h.insert(
                header::ACCEPT,
                HeaderValue::from_static("text/event-stream"),
            );
            if let Some(v) = last_event_id.and_then(|id| HeaderValue::from_str(&id).ok()) {
                h.insert("last-event-id", v);
            }
            let resp = client
                .get(url)
                .headers(h)
                .send()
                .await
                .map_err(super::http_reply::describe_reqwest_error)?;
            let status = resp.status();
            if !status.is_success() {
                return Err(McpError::Http {
                    status: status.as_u16(),
                    retry_after: None,
                    body: String::new(),
                });
            }
            let ctype = super::http_reply::content_type(&resp);
            if !ctype.starts_with("text/event-stream") {
                return Err(McpError::decode(format!(
                    "GET stream: expected an event stream, got {ctype:?}"
                )));
            }
            let body = resp
                .bytes_stream()
                .map_err(|e| std::io::Error::other(e.without_url()));
            let body: ByteStream = Box::pin(body);
            Ok(body)
        })
    });
    open_with(connect, max, Some(ready))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A connector serving scripted connections and recording each `Last-Event-ID`.
    fn scripted(
        script: Vec<Result<Vec<&'static str>, u16>>,
    ) -> (Connect, Arc<Mutex<Vec<Option<String>>>>) {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let log = asked.clone();
        let mut script = script.into_iter();
        let connect: Connect = Box::new(move |last| {
            log.lock().unwrap().push(last);
            let next = script.next();
            Box::pin(async move {
                match next {
                    Some(Ok(chunks)) => {
                        let body: ByteStream = Box::pin(futures::stream::iter(
                            chunks
                                .into_iter()
                                .map(|c| Ok(bytes::Bytes::from_static(c.as_bytes()))),
                        ));
                        Ok(body)
                    }
                    Some(Err(status)) => Err(McpError::Http {
                        status,
                        retry_after: None,
                        body: String::new(),
                    }),
                    None => Err(McpError::Http {
                        status: 404,
                        retry_after: None,
                        body: String::new(),
                    }),
                }
            })
        });
        (connect, asked)
    }

    const MSG: &str = "id: e7\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n\n";

    #[tokio::test(start_paused = true)]
    async fn reconnects_with_last_event_id_and_ends_on_404() {
        let (connect, asked) = scripted(vec![Ok(vec![MSG]), Err(503), Ok(vec![MSG])]);
        let items: Vec<_> = open_with(connect, 4096, None).collect().await;
        let ok = items.iter().filter(|i| i.is_ok()).count();
        assert_eq!(ok, 2, "{items:?}");
        assert!(matches!(
            items.last(),
            Some(Err(McpError::Http { status: 404, .. }))
        ));
        let asked = asked.lock().unwrap().clone();
        assert_eq!(asked[0], None);
        assert!(
            asked[1..].iter().all(|a| a.as_deref() == Some("e7")),
            "{asked:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_first_connection_ends_the_stream() {
        let (connect, asked) = scripted(vec![Err(503), Ok(vec![MSG])]);
        let items: Vec<_> = open_with(connect, 4096, None).collect().await;
        assert_eq!(items.len(), 1);
        assert_eq!(asked.lock().unwrap().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_flood_is_cut_and_the_stream_reopened() {
        let flood: &'static str =
            Box::leak(format!("data: {}", "x".repeat(10_000)).into_boxed_str());
        let (connect, asked) = scripted(vec![Ok(vec![flood]), Ok(vec![MSG])]);
        let items: Vec<_> = open_with(connect, 4096, None).collect().await;
        assert!(
            matches!(items[0], Err(McpError::TooLarge { .. })),
            "{items:?}"
        );
        assert!(items[1].is_ok());
        assert_eq!(asked.lock().unwrap().len(), 3);
    }

    #[test]
    fn delays_grow_are_capped_and_respect_the_server() {
        assert_eq!(reconnect_delay(1, None), FIRST_DELAY);
        assert_eq!(reconnect_delay(2, None), FIRST_DELAY * 2);
        assert_eq!(reconnect_delay(30, None), MAX_DELAY);
        assert_eq!(
            reconnect_delay(1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
    }
}
