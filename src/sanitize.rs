//! Untrusted-text sanitising: every string a server sends passes through here before it
//! reaches a widget. Strips controls, escape sequences, bidi and zero-width characters and
//! bounds lengths by display width. Must not allocate unboundedly or touch the terminal.

use unicode_width::UnicodeWidthChar;

/// Hard cap on how much of an input is even looked at (bytes); the rest is summarised.
const SCAN_LIMIT: usize = 256 * 1024;

/// One line of safe text: controls and escape sequences removed, newlines and tabs turned
/// into spaces, truncated to `max_chars` display columns with `…` when cut.
pub fn sanitize_line(s: &str, max_chars: usize) -> String {
    let mut out = String::new();
    let mut width = 0usize;
    let mut cut = false;
    for c in Cleaned::new(s) {
        let c = if matches!(c, '\n' | '\t') { ' ' } else { c };
        let w = c.width().unwrap_or(0);
        if width + w > max_chars {
            cut = true;
            break;
        }
        width += w;
        out.push(c);
    }
    if cut {
        truncate_to_width(&mut out, max_chars.saturating_sub(1));
        if max_chars > 0 {
            out.push('…');
        }
    }
    out
}

/// Multi-line safe text: at most `max_lines` lines (the last one is `…` when more were cut),
/// each at most `max_cols` display columns. Tabs become spaces, other controls vanish.
pub fn sanitize_block(s: &str, max_lines: usize, max_cols: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = String::new();
    let mut width = 0usize;
    let mut line_cut = false;
    let mut more = false;
    for c in Cleaned::new(s) {
        if c == '\n' {
            if lines.len() + 1 >= max_lines {
                more = true;
                break;
            }
            finish_line(&mut lines, &mut current, line_cut, max_cols);
            width = 0;
            line_cut = false;
            continue;
        }
        if line_cut {
            continue;
        }
        let c = if c == '\t' { ' ' } else { c };
        let w = c.width().unwrap_or(0);
        if width + w > max_cols {
            line_cut = true;
            continue;
        }
        width += w;
        current.push(c);
    }
    if max_lines == 0 {
        return Vec::new();
    }
    finish_line(&mut lines, &mut current, line_cut, max_cols);
    if more || s.len() > SCAN_LIMIT {
        lines.truncate(max_lines.saturating_sub(1));
        lines.push("…".to_string());
    }
    lines
}

fn finish_line(lines: &mut Vec<String>, current: &mut String, cut: bool, max_cols: usize) {
    let mut line = std::mem::take(current);
    if cut {
        truncate_to_width(&mut line, max_cols.saturating_sub(1));
        line.push('…');
    }
    lines.push(line);
}

fn truncate_to_width(s: &mut String, max: usize) {
    let mut width = 0;
    let mut end = 0;
    for (i, c) in s.char_indices() {
        let w = c.width().unwrap_or(0);
        if width + w > max {
            break;
        }
        width += w;
        end = i + c.len_utf8();
    }
    s.truncate(end);
}

/// Serialized JSON that is safe on a terminal: serde_json already escapes C0 controls;
/// this also escapes DEL, C1 controls, bidi and zero-width characters and line/paragraph
/// separators as `\uXXXX` (they can only occur inside strings, so the JSON is unchanged).
pub fn inert_json(json: String) -> String {
    if json.bytes().all(|b| b.is_ascii() && b != 0x7f) {
        return json;
    }
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        // A raw newline is structure (pretty printing); inside strings serde escapes it.
        if c == '\u{7f}'
            || (c.is_control() && c != '\n')
            || is_invisible(c)
            || matches!(c, '\u{2028}' | '\u{2029}')
        {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// One-line JSON of `v`, terminal-safe (see [`inert_json`]).
pub fn json_line<T: serde::Serialize + ?Sized>(v: &T) -> String {
    inert_json(serde_json::to_string(v).unwrap_or_default())
}

/// Pretty JSON of `v`, terminal-safe (see [`inert_json`]).
pub fn json_pretty<T: serde::Serialize + ?Sized>(v: &T) -> String {
    inert_json(serde_json::to_string_pretty(v).unwrap_or_default())
}

/// Display width of a sanitized string.
pub fn display_width(s: &str) -> usize {
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// Whether `c` may be written to a terminal as it is: no control (C0, DEL, C1), no bidi,
/// zero-width or other invisible character, no line or paragraph separator.
pub fn is_printable(c: char) -> bool {
    !(c.is_control() || is_invisible(c) || matches!(c, '\u{2028}' | '\u{2029}'))
}

/// Characters that must never reach the terminal even though they are not controls.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{200B}'..='\u{200F}'   // zero-width space/joiners, LRM, RLM
        | '\u{202A}'..='\u{202E}' // bidi embeddings and overrides
        | '\u{2060}'..='\u{2064}' // word joiner, invisible operators
        | '\u{2066}'..='\u{2069}' // bidi isolates
        | '\u{061C}'              // Arabic letter mark
        | '\u{FEFF}'              // BOM / zero-width no-break space
        | '\u{00AD}'              // soft hyphen
        | '\u{FFF9}'..='\u{FFFB}' // interlinear annotations
    )
}

/// Iterator over the characters of `s` that are safe to print, with escape sequences
/// (CSI, OSC, DCS, APC, PM, SOS, and the 8-bit C1 introducers) removed whole.
/// `\n` and `\t` are passed through for the caller to decide on.
struct Cleaned<'a> {
    chars: std::str::Chars<'a>,
}

impl<'a> Cleaned<'a> {
    fn new(s: &'a str) -> Self {
        let mut end = s.len().min(SCAN_LIMIT);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        Cleaned {
            chars: s[..end].chars(),
        }
    }

    /// Skip a control string (OSC/DCS/APC/PM/SOS) up to BEL or ST (`ESC \` or `\u{9c}`).
    fn skip_string(&mut self) {
        while let Some(c) = self.chars.next() {
            match c {
                '\u{07}' | '\u{9c}' => return,
                '\u{1b}' => {
                    let mut peek = self.chars.clone();
                    if peek.next() == Some('\\') {
                        self.chars = peek;
                    }
                    return;
                }
                _ => {}
            }
        }
    }

    /// Skip a CSI sequence: parameter and intermediate bytes, then one final byte.
    fn skip_csi(&mut self) {
        for c in self.chars.by_ref() {
            if ('\u{40}'..='\u{7e}').contains(&c) || !('\u{20}'..='\u{7e}').contains(&c) {
                return;
            }
        }
    }
}

impl Iterator for Cleaned<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        loop {
            let c = self.chars.next()?;
            match c {
                '\n' | '\t' => return Some(c),
                // Line and paragraph separators break a line like a newline does.
                '\u{2028}' | '\u{2029}' => return Some('\n'),
                '\r' => continue,
                '\u{1b}' => match self.chars.next() {
                    Some('[') => self.skip_csi(),
                    Some(']' | 'P' | '_' | '^' | 'X') => self.skip_string(),
                    // two-byte escapes (ESC c, ESC 7, ESC ( B …): drop the next byte too;
                    // charset designators take one more
                    Some('(' | ')' | '*' | '+' | '#' | '%') => {
                        self.chars.next();
                    }
                    _ => {}
                },
                '\u{9b}' => self.skip_csi(),
                '\u{9d}' | '\u{90}' | '\u{9f}' | '\u{9e}' | '\u{98}' => self.skip_string(),
                c if c.is_control() => continue,
                c if is_invisible(c) => continue,
                c => return Some(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_escaped_but_intact() {
        let v =
            serde_json::json!({ "s": "a\u{1b}[2J\u{9b}\u{202e}\u{200b}\u{2028}b\n", "n": [1, 2] });
        for out in [json_line(&v), json_pretty(&v)] {
            assert!(
                out.chars()
                    .all(|c| c == '\n' || !(c.is_control() || is_invisible(c)))
            );
            assert!(!out.contains('\u{2028}'));
            let back: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(back, v);
        }
    }

    fn assert_safe(s: &str) {
        for c in s.chars() {
            assert!(!c.is_control(), "control {c:?} left in {s:?}");
            assert!(is_printable(c), "unprintable {c:?} left in {s:?}");
        }
    }

    #[test]
    fn strips_clear_screen_and_colours() {
        let s = sanitize_line("a\u{1b}[2Jb\u{1b}[1;31mred\u{1b}[0m", 80);
        assert_eq!(s, "abred");
    }

    #[test]
    fn strips_osc52_clipboard_and_osc8_links() {
        let s = sanitize_line("x\u{1b}]52;c;ZXZpbA==\u{07}y", 80);
        assert_eq!(s, "xy");
        let s = sanitize_line(
            "\u{1b}]8;;https://evil.example\u{1b}\\click\u{1b}]8;;\u{1b}\\ here",
            80,
        );
        assert_eq!(s, "click here");
    }

    #[test]
    fn strips_c1_csi_and_controls() {
        let s = sanitize_line("a\u{9b}2Jb\u{7}c\u{0}d\u{8}e\u{7f}f\u{85}g", 80);
        assert_eq!(s, "abcdefg");
        assert_safe(&s);
    }

    #[test]
    fn strips_bidi_overrides_isolates_and_zero_width() {
        let s = sanitize_line("good\u{202E}txt.exe\u{2066}x\u{2069}\u{200B}\u{FEFF}!", 80);
        assert_eq!(s, "goodtxt.exex!");
    }

    #[test]
    fn newlines_and_tabs_become_spaces() {
        assert_eq!(sanitize_line("a\nb\tc\r\nd", 80), "a b c d");
    }

    #[test]
    fn line_and_paragraph_separators_cannot_break_a_row() {
        let s = sanitize_line("row\u{2028}two\u{2029}three", 80);
        assert_eq!(s, "row two three");
        assert_safe(&s);
        assert!(!s.contains('\u{2028}'));
        assert_eq!(
            sanitize_block("a\u{2028}b", 5, 80),
            vec!["a".to_string(), "b".to_string()]
        );
        assert!(!is_printable('\u{2029}') && !is_printable('\u{9b}') && is_printable('é'));
    }

    #[test]
    fn truncates_long_lines_with_ellipsis() {
        let long = "x".repeat(10_000);
        let s = sanitize_line(&long, 20);
        assert_eq!(display_width(&s), 20);
        assert!(s.ends_with('…'));
        assert_eq!(sanitize_line("short", 20), "short");
        assert_eq!(sanitize_line("exactly5", 8), "exactly5");
    }

    #[test]
    fn counts_double_width_cjk() {
        let s = sanitize_line("漢字漢字漢字", 7);
        assert!(display_width(&s) <= 7, "{s}");
        assert_eq!(s, "漢字漢…");
    }

    #[test]
    fn unterminated_sequences_do_not_leak() {
        assert_eq!(sanitize_line("ok\u{1b}]52;c;AAAA", 80), "ok");
        assert_eq!(sanitize_line("ok\u{1b}[", 80), "ok");
        assert_eq!(sanitize_line("ok\u{1b}", 80), "ok");
    }

    #[test]
    fn block_keeps_lines_and_bounds_them() {
        let text = "one\ntwo\u{1b}[2J\n\tthree\u{202E}\nfour";
        let lines = sanitize_block(text, 3, 80);
        assert_eq!(lines, vec!["one", "two", "…"]);
        let lines = sanitize_block(text, 4, 80);
        assert_eq!(lines, vec!["one", "two", " three", "four"]);
        let lines = sanitize_block(&"y".repeat(10_000), 5, 10);
        assert_eq!(lines.len(), 1);
        assert_eq!(display_width(&lines[0]), 10);
        for l in sanitize_block("a\u{9b}31mb\nc\u{1b}]0;title\u{7}d", 10, 10) {
            assert_safe(&l);
        }
    }

    #[test]
    fn huge_input_is_bounded() {
        let big = "line\n".repeat(1_000_000);
        let lines = sanitize_block(&big, 100, 80);
        assert_eq!(lines.len(), 100);
        assert_eq!(lines.last().map(String::as_str), Some("…"));
    }
}
