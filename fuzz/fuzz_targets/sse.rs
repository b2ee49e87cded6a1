//! Fuzz the SSE reply decoder (`sse_decode`): arbitrary bytes in arbitrary chunking must
//! yield messages or errors, never a panic, and never buffer past the event bound.
#![no_main]

use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use taskrail::mcp::sse::sse_decode;

/// Small enough that the fuzzer reaches the bound.
const MAX_EVENT: usize = 2048;

fuzz_target!(|data: &[u8]| {
    let Some((&step, body)) = data.split_first() else {
        return;
    };
    let step = usize::from(step % 64) + 1;
    let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = body
        .chunks(step)
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
        .collect();
    let stream = sse_decode(futures::stream::iter(chunks), MAX_EVENT);
    futures::executor::block_on(async move {
        let mut stream = stream;
        let mut n = 0usize;
        while let Some(_item) = stream.next().await {
            n += 1;
            assert!(n <= body.len() + 1, "more messages than input bytes");
        }
    });
});
