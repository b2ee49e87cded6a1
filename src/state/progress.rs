//! Progress fractions read from status messages (`3/10`, `page 3/40`, `42%`). Pure.

use regex::Regex;
use std::sync::LazyLock;

static PERCENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\d{1,3}(?:\.\d+)?)\s*%").expect("valid regex"));
static RATIO: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\d{1,12})\s*/\s*(\d{1,12})").expect("valid regex"));

/// The fraction (0.0..=1.0) a status message states, if any.
pub fn fraction_from_message(msg: &str) -> Option<f64> {
    let msg = if msg.len() > 4096 {
        &msg[..floor_boundary(msg, 4096)]
    } else {
        msg
    };
    if let Some(c) = PERCENT.captures(msg) {
        let p: f64 = c[1].parse().ok()?;
        if (0.0..=100.0).contains(&p) {
            return Some(p / 100.0);
        }
    }
    let c = RATIO.captures(msg)?;
    let done: f64 = c[1].parse().ok()?;
    let total: f64 = c[2].parse().ok()?;
    fraction(done, Some(total))
}

/// `progress / total` clamped to 0..=1 when both make sense.
pub fn fraction(progress: f64, total: Option<f64>) -> Option<f64> {
    let total = total?;
    if !(progress.is_finite() && total.is_finite()) || total <= 0.0 || progress < 0.0 {
        return None;
    }
    Some((progress / total).min(1.0))
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ratios_and_percentages() {
        assert_eq!(fraction_from_message("3/10"), Some(0.3));
        assert_eq!(fraction_from_message("fetching page 3/40"), Some(0.075));
        assert_eq!(fraction_from_message("42% done"), Some(0.42));
        assert_eq!(fraction_from_message("step 5 / 0"), None);
        assert_eq!(fraction_from_message("working"), None);
        assert_eq!(fraction_from_message("11/10"), Some(1.0));
        assert_eq!(fraction(1.0, None), None);
        assert_eq!(fraction(f64::NAN, Some(2.0)), None);
    }
}
