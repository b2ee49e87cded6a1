//! Fuzz the untrusted-text sanitiser: its output never carries a control character, an
//! escape introducer, a bidi override or a zero-width character, and respects its bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use taskrail::sanitize::{display_width, sanitize_block, sanitize_line};

fn inert(s: &str) -> bool {
    s.chars().all(|c| {
        !c.is_control()
            && !matches!(c,
                '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{061C}'
                | '\u{FEFF}'
                | '\u{2028}'
                | '\u{2029}')
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&width, rest)) = data.split_first() else {
        return;
    };
    let width = usize::from(width % 80);
    let text = String::from_utf8_lossy(rest);
    let line = sanitize_line(&text, width);
    assert!(inert(&line), "sanitize_line left {line:?}");
    assert!(display_width(&line) <= width.max(1), "line wider than {width}");
    let lines = sanitize_block(&text, 8, width);
    assert!(lines.len() <= 8);
    for l in &lines {
        assert!(inert(l), "sanitize_block left {l:?}");
        assert!(display_width(l) <= width.max(1), "block line wider than {width}");
    }
});
