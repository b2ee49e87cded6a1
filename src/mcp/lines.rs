//! Bounded newline-delimited reading for the stdio transport (the child's stdout and
//! stderr): `LineSplitter` turns arbitrary chunks into lines, holding at most `max` bytes
//! of one line; a longer line is reported as `Line::TooLong` (its first bytes and its
//! length) and skipped, and reading goes on. Bytes need not be UTF-8.
//!
//! Also `leading_id`: the top-level `"id"` of a JSON-RPC message read from its first
//! bytes, so a request whose reply was too long to keep can fail at once.
//!
//! `read_lines` drives a splitter over an async reader: the one line reader of both stdio
//! sides (the client's child process and the proxy's host).

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};

/// How much of an over-long line is kept (for the log and `leading_id`).
pub const HEAD: usize = 4096;

/// One line, without its `\n` (and a `\r` before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Full(Vec<u8>),
    /// A line longer than the bound: its first [`HEAD`] bytes and its full length.
    TooLong {
        head: Vec<u8>,
        len: usize,
    },
}

/// Splits chunks into lines; never holds more than `max` bytes of a line.
#[derive(Debug)]
pub struct LineSplitter {
    max: usize,
    buf: Vec<u8>,
    /// Length of the line being skipped, once it passed `max`.
    skipping: Option<usize>,
}

impl LineSplitter {
    pub fn new(max: usize) -> Self {
        Self {
            max,
            buf: Vec::new(),
            skipping: None,
        }
    }

    /// Feed one chunk; every line it completes is appended to `out`.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<Line>) {
        while !chunk.is_empty() {
            let (part, done) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (&chunk[..i], true),
                None => (chunk, false),
            };
            self.take(part);
            chunk = if done { &chunk[part.len() + 1..] } else { &[] };
            if done {
                out.push(self.finish());
            }
        }
    }

    /// The last line, if the input ended without a newline.
    pub fn end(&mut self, out: &mut Vec<Line>) {
        if !self.buf.is_empty() || self.skipping.is_some() {
            out.push(self.finish());
        }
    }

    fn take(&mut self, part: &[u8]) {
        if let Some(len) = self.skipping.as_mut() {
            *len += part.len();
            return;
        }
        if self.buf.len() + part.len() > self.max {
            let len = self.buf.len() + part.len();
            let room = HEAD.saturating_sub(self.buf.len());
            self.buf.extend_from_slice(&part[..room.min(part.len())]);
            self.buf.truncate(HEAD);
            self.buf.shrink_to(HEAD);
            self.skipping = Some(len);
            return;
        }
        self.buf.extend_from_slice(part);
    }

    fn finish(&mut self) -> Line {
        let mut line = std::mem::take(&mut self.buf);
        match self.skipping.take() {
            Some(len) => Line::TooLong { head: line, len },
            None => {
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                Line::Full(line)
            }
        }
    }

    /// Bytes held for the line in progress (for the bound's tests).
    pub fn held(&self) -> usize {
        self.buf.len()
    }
}

/// Read `pipe` to its end in lines of at most `max` bytes, handing each to `each`.
pub async fn read_lines<R, F, Fut>(mut pipe: R, max: usize, mut each: F) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    F: FnMut(Line) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut splitter = LineSplitter::new(max);
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = Vec::new();
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            splitter.end(&mut lines);
        } else {
            splitter.feed(&buf[..n], &mut lines);
        }
        for line in lines.drain(..) {
            each(line).await;
        }
        if n == 0 {
            return Ok(());
        }
    }
}

/// The top-level `"id"` (a number or a string) of the JSON object starting `head`, when
/// it appears in `head`; `None` otherwise. Never reads past `head`.
pub fn leading_id(head: &[u8]) -> Option<Value> {
    let v: Value = serde_json::from_slice(leading_member(head, b"\"id\"")?).ok()?;
    (v.is_number() || v.is_string()).then_some(v)
}

/// Whether the JSON object starting `head` is a request: a top-level `"method"` appears
/// in `head` (a message cut short before it is taken for none).
pub fn leading_is_request(head: &[u8]) -> bool {
    leading_member(head, b"\"method\"").is_some()
}

/// The raw value of the top-level member `key` (quoted, as it is written) of the JSON
/// object starting `head`, when the whole member is in `head`.
fn leading_member<'a>(b: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = ws(b, i);
        let key_start = i;
        i = string_end(b, i)?;
        let this = &b[key_start..i];
        i = ws(b, i);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = ws(b, i + 1);
        let value_start = i;
        i = value_end(b, i)?;
        if this == key {
            return Some(&b[value_start..i]);
        }
        i = ws(b, i);
        if b.get(i) != Some(&b',') {
            return None;
        }
        i += 1;
    }
}

fn ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

/// Index just past the string starting at `i`.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        match *b.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// Index just past the JSON value starting at `i` (strings and nesting respected).
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match *b.get(j)? {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while b
                .get(j)
                .is_some_and(|c| !matches!(c, b',' | b'}' | b']') && !c.is_ascii_whitespace())
            {
                j += 1;
            }
            // A scalar cut by the end of `head` is not known to be complete.
            (j < b.len() && j > i).then_some(j)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn split(chunks: &[&[u8]], max: usize) -> Vec<Line> {
        let mut s = LineSplitter::new(max);
        let mut out = Vec::new();
        for c in chunks {
            s.feed(c, &mut out);
            assert!(s.held() <= max.max(HEAD));
        }
        s.end(&mut out);
        out
    }

    #[test]
    fn lines_split_across_chunks_and_crlf() {
        let out = split(&[b"ab", b"c\r\nde\n\nf"], 100);
        assert_eq!(
            out,
            vec![
                Line::Full(b"abc".to_vec()),
                Line::Full(b"de".to_vec()),
                Line::Full(vec![]),
                Line::Full(b"f".to_vec())
            ]
        );
    }

    #[test]
    fn an_over_long_line_is_skipped_and_reading_goes_on() {
        let long = vec![b'x'; 10_000];
        let out = split(&[b"ok\n", &long, &long, b"\xff\nnext\n"], 5000);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], Line::Full(b"ok".to_vec()));
        match &out[1] {
            Line::TooLong { head, len } => {
                assert_eq!(*len, 20_001);
                assert!(head.len() <= HEAD);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(out[2], Line::Full(b"next".to_vec()));
    }

    #[test]
    fn the_id_is_read_from_the_head_of_a_message() {
        let id = |s: &str| leading_id(s.as_bytes());
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"result":{"x"#),
            Some(json!(7))
        );
        assert_eq!(id(r#" { "id" : "a\"b" , "#), Some(json!("a\"b")));
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","result":{"id":9,"s":"}"},"id":-3,"#),
            Some(json!(-3))
        );
        // A nested id is not the message's; a notification has none.
        assert_eq!(id(r#"{"method":"x","params":{"id":5}}"#), None);
        // Cut in the middle of the id: unknown.
        assert_eq!(id(r#"{"id":12"#), None);
        assert_eq!(id(r#"{"id":null,"#), None);
        assert_eq!(id("[1,2]"), None);
    }

    #[test]
    fn a_request_is_told_from_a_response_by_its_head() {
        let req = |s: &str| leading_is_request(s.as_bytes());
        assert!(req(
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"a"#
        ));
        assert!(req(r#"{"method":"notifications/x","params":{"#));
        assert!(!req(r#"{"jsonrpc":"2.0","id":3,"result":{"method":"x"}}"#));
        // The method comes after the cut: not known to be a request.
        assert!(!req(r#"{"jsonrpc":"2.0","id":3,"params":{"pad":"aaaa"#));
    }
}
