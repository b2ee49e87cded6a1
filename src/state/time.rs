//! Lenient timestamp parsing and compact human durations. Pure functions; the clock is
//! always passed in, never read here.

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeDelta, Utc};

/// The instant the reducer and views work with.
pub type Now = DateTime<Utc>;

/// Parse an ISO 8601-ish timestamp; `None` instead of an error for anything odd.
pub fn parse_lenient(s: &str) -> Option<Now> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    for fmt in [
        "%Y-%m-%dT%H:%M:%S%.f%z",
        "%Y-%m-%d %H:%M:%S%.f%z",
        "%Y-%m-%dT%H:%M:%S%.f%:z",
    ] {
        if let Ok(t) = DateTime::parse_from_str(s, fmt) {
            return Some(t.with_timezone(&Utc));
        }
    }
    let naive = s.trim_end_matches(['Z', 'z']);
    for fmt in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(naive, fmt) {
            return Some(t.and_utc());
        }
    }
    NaiveDate::parse_from_str(naive, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}

/// `42s`, `3m05s`, `2h07m`, `3d04h`; negative spans read as `0s`.
pub fn short_duration(d: TimeDelta) -> String {
    let secs = d.num_seconds().max(0);
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s if s < 86_400 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        s => format!("{}d{:02}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// Add milliseconds to an instant without overflowing.
pub fn plus_millis(t: Now, ms: u64) -> Option<Now> {
    TimeDelta::try_milliseconds(i64::try_from(ms).ok()?).and_then(|d| t.checked_add_signed(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_many_shapes_and_never_panics() {
        assert!(parse_lenient("2026-07-28T10:00:00Z").is_some());
        assert!(parse_lenient("2026-07-28T10:00:00.123+02:00").is_some());
        assert!(parse_lenient("2026-07-28T10:00:00").is_some());
        assert!(parse_lenient("2026-07-28 10:00:00").is_some());
        assert!(parse_lenient("2026-07-28").is_some());
        assert!(parse_lenient("a").is_none());
        assert!(parse_lenient("").is_none());
        assert!(parse_lenient("9999999-99-99T99:99:99Z").is_none());
    }

    #[test]
    fn durations_are_compact() {
        assert_eq!(short_duration(TimeDelta::seconds(5)), "5s");
        assert_eq!(short_duration(TimeDelta::seconds(185)), "3m05s");
        assert_eq!(short_duration(TimeDelta::seconds(7620)), "2h07m");
        assert_eq!(short_duration(TimeDelta::seconds(-3)), "0s");
        assert!(plus_millis(Utc::now(), u64::MAX).is_none());
    }
}
