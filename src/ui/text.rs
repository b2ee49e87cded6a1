//! Text helpers for views: cutting and wrapping already-sanitized strings by display width.
//! Must not sanitize (that is `crate::sanitize`'s job) or hold state.

use unicode_width::UnicodeWidthChar;

/// Cut `s` to at most `max` columns, ending with `…` when cut.
pub fn fit(s: &str, max: usize) -> String {
    if crate::sanitize::display_width(s) <= max {
        return s.to_string();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw + 1 > max {
            break;
        }
        w += cw;
        out.push(c);
    }
    if max > 0 {
        out.push('…');
    }
    out
}

/// Wrap `s` into lines of at most `width` columns (hard wrap; no word breaking needed for
/// payloads that are often JSON or ids).
pub fn wrap(s: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut cur = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw > width {
            lines.push(std::mem::take(&mut cur));
            w = 0;
        }
        w += cw;
        cur.push(c);
    }
    lines.push(cur);
    lines
}

/// Wrap prose into lines of at most `width` columns, breaking at spaces where it can (a
/// word longer than a line is cut hard).
pub fn wrap_words(s: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in s.split(' ') {
        let ww = crate::sanitize::display_width(word);
        let cw = crate::sanitize::display_width(&cur);
        if !cur.is_empty() && cw + 1 + ww > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
        while crate::sanitize::display_width(&cur) > width {
            let mut parts = wrap(&cur, width);
            cur = parts.pop().unwrap_or_default();
            lines.extend(parts);
        }
    }
    lines.push(cur);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_and_wraps_by_width() {
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 4), "abc");
        assert_eq!(fit("漢字漢字", 5), "漢字…");
        assert_eq!(wrap("abcdef", 4), vec!["abcd", "ef"]);
        assert_eq!(wrap("", 4), vec![""]);
        assert_eq!(wrap("漢字漢", 4), vec!["漢字", "漢"]);
        assert_eq!(
            wrap_words("the quick brown fox", 10),
            vec!["the quick", "brown fox"]
        );
        assert_eq!(
            wrap_words("abcdefghijkl mn", 5),
            vec!["abcde", "fghij", "kl mn"]
        );
        assert_eq!(wrap_words("", 5), vec![""]);
    }
}
