//! Fuzz the stdio reader (`mcp::lines`): arbitrary bytes in arbitrary chunks split into
//! lines exactly at each `\n`, a line within the bound comes out as sent, a longer one as
//! `TooLong` with its length and first bytes, and nothing more than the bound is ever
//! held. `leading_id` runs on every line and never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use taskrail::mcp::lines::{HEAD, Line, LineSplitter, leading_id};

/// Small enough that the fuzzer reaches the bound.
const MAX: usize = 1024;

fuzz_target!(|data: &[u8]| {
    let Some((&step, body)) = data.split_first() else {
        return;
    };
    let step = usize::from(step % 64) + 1;
    let mut splitter = LineSplitter::new(MAX);
    let mut out = Vec::new();
    for chunk in body.chunks(step) {
        splitter.feed(chunk, &mut out);
        assert!(splitter.held() <= MAX.max(HEAD), "held {}", splitter.held());
    }
    splitter.end(&mut out);
    let newlines = body.iter().filter(|b| **b == b'\n').count();
    assert!(out.len() == newlines || out.len() == newlines + 1);
    for (line, sent) in out.iter().zip(body.split(|b| *b == b'\n')) {
        match line {
            Line::Full(got) => {
                let want = sent.strip_suffix(b"\r").unwrap_or(sent);
                assert_eq!(got.as_slice(), want);
                assert!(sent.len() <= MAX);
                let _ = leading_id(got);
            }
            Line::TooLong { head, len } => {
                assert_eq!(*len, sent.len());
                assert!(sent.len() > MAX);
                assert!(head.len() <= HEAD && sent.starts_with(head));
                let _ = leading_id(head);
            }
        }
    }
});
