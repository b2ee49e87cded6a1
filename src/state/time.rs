//! The reducer's instant type and compact human durations (timestamps are parsed by
//! `mcp::parse_time`). Pure functions; the clock is
//! always passed in, never read here.

use chrono::{DateTime, TimeDelta, Utc};

/// The instant the reducer and views work with.
pub type Now = DateTime<Utc>;

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
    fn durations_are_compact() {
        assert_eq!(short_duration(TimeDelta::seconds(5)), "5s");
        assert_eq!(short_duration(TimeDelta::seconds(185)), "3m05s");
        assert_eq!(short_duration(TimeDelta::seconds(7620)), "2h07m");
        assert_eq!(short_duration(TimeDelta::seconds(-3)), "0s");
        assert!(plus_millis(Utc::now(), u64::MAX).is_none());
    }
}
