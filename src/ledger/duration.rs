//! Parsing human retention ages such as `30d` or `500ms` (for `taskrail prune --older-than`).
//!
//! Owns `parse_duration` only.

use std::time::Duration;

use anyhow::{Context, bail};

/// Parse `<integer><unit>` where unit is `d`, `h`, `m`, `s` or `ms` (e.g. `30d`, `12h`,
/// `45m`, `90s`, `500ms`). Surrounding whitespace is ignored; a bare number is rejected.
pub fn parse_duration(s: &str) -> anyhow::Result<Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    if digits.is_empty() {
        bail!("invalid duration {s:?}: expected a number followed by d, h, m, s or ms");
    }
    let n: u64 = digits
        .parse()
        .with_context(|| format!("invalid duration {s:?}: number too large"))?;
    let millis_per_unit: u64 = match unit.trim() {
        "d" => 86_400_000,
        "h" => 3_600_000,
        "m" => 60_000,
        "s" => 1_000,
        "ms" => 1,
        "" => bail!("invalid duration {s:?}: missing unit (d, h, m, s or ms)"),
        other => bail!("invalid duration {s:?}: unknown unit {other:?} (use d, h, m, s or ms)"),
    };
    let millis = n
        .checked_mul(millis_per_unit)
        .with_context(|| format!("invalid duration {s:?}: too large"))?;
    Ok(Duration::from_millis(millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_unit() {
        assert_eq!(
            parse_duration("30d").unwrap(),
            Duration::from_secs(30 * 86_400)
        );
        assert_eq!(
            parse_duration("12h").unwrap(),
            Duration::from_secs(12 * 3_600)
        );
        assert_eq!(parse_duration("45m").unwrap(), Duration::from_secs(45 * 60));
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration(" 0s ").unwrap(), Duration::ZERO);
    }

    #[test]
    fn rejects_malformed_input() {
        for bad in [
            "",
            "30",
            "d",
            "-5s",
            "1.5h",
            "3w",
            "10 sec",
            "99999999999999999999d",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be rejected");
        }
    }
}
