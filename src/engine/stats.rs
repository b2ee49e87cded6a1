//! Request statistics of one server: totals and a per-second rate for the header.
//!
//! Pure counting; the actor samples it once a second.

use tokio::time::Instant;

#[derive(Debug)]
pub struct RequestStats {
    total: u64,
    errors: u64,
    window_start: Instant,
    window_total: u64,
    last_reported: Option<(u64, u64)>,
    rate: f64,
}

impl Default for RequestStats {
    fn default() -> Self {
        Self {
            total: 0,
            errors: 0,
            window_start: Instant::now(),
            window_total: 0,
            last_reported: None,
            rate: 0.0,
        }
    }
}

impl RequestStats {
    pub fn request(&mut self) {
        self.total += 1;
    }

    pub fn error(&mut self) {
        self.errors += 1;
    }

    /// `(total, requests per second, errors)` when something changed since the last sample
    /// (or the rate has yet to fall back to zero).
    pub fn sample(&mut self) -> Option<(u64, f64, u64)> {
        let now = Instant::now();
        let secs = now
            .duration_since(self.window_start)
            .as_secs_f64()
            .max(0.001);
        let rate = (self.total - self.window_total) as f64 / secs;
        self.window_start = now;
        self.window_total = self.total;
        let changed = self.last_reported != Some((self.total, self.errors))
            || (self.rate > 0.0 && rate == 0.0);
        self.rate = rate;
        if !changed {
            return None;
        }
        self.last_reported = Some((self.total, self.errors));
        Some((self.total, rate, self.errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn rate_is_per_second_and_quiet_when_idle() {
        let mut s = RequestStats::default();
        for _ in 0..10 {
            s.request();
        }
        tokio::time::advance(std::time::Duration::from_secs(2)).await;
        let (total, rate, errors) = s.sample().unwrap();
        assert_eq!((total, errors), (10, 0));
        assert!((rate - 5.0).abs() < 0.01);
        tokio::time::advance(std::time::Duration::from_secs(1)).await;
        assert_eq!(
            s.sample().map(|x| x.1),
            Some(0.0),
            "the rate falls back to zero once"
        );
        tokio::time::advance(std::time::Duration::from_secs(1)).await;
        assert!(s.sample().is_none(), "idle: nothing to report");
    }
}
