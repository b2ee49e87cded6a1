//! Request statistics of one server: totals, a per-second rate for the header, and the
//! durations of the latest requests (for latency pictures).
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
    /// Durations of the requests since the last sample, the latest [`LATENCY_SAMPLES`].
    latencies: std::collections::VecDeque<u32>,
}

/// Request durations one sample carries at most (the latest).
pub const LATENCY_SAMPLES: usize = 64;

/// One sample of a server's requests.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub total: u64,
    pub rate: f64,
    pub errors: u64,
    /// Durations in milliseconds of the requests since the last sample, oldest first
    /// (the latest [`LATENCY_SAMPLES`] at most).
    pub latencies_ms: Vec<u32>,
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
            latencies: std::collections::VecDeque::new(),
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

    /// A request answered after `ms` milliseconds.
    pub fn latency(&mut self, ms: u64) {
        if self.latencies.len() == LATENCY_SAMPLES {
            self.latencies.pop_front();
        }
        self.latencies
            .push_back(u32::try_from(ms).unwrap_or(u32::MAX));
    }

    /// The totals, requests per second and latest durations when something changed since
    /// the last sample (or the rate has yet to fall back to zero).
    pub fn sample(&mut self) -> Option<Sample> {
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
        Some(Sample {
            total: self.total,
            rate,
            errors: self.errors,
            latencies_ms: self.latencies.drain(..).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn rate_is_per_second_and_quiet_when_idle() {
        let mut s = RequestStats::default();
        for i in 0..100 {
            s.request();
            s.latency(i);
        }
        tokio::time::advance(std::time::Duration::from_secs(2)).await;
        let first = s.sample().unwrap();
        assert_eq!((first.total, first.errors), (100, 0));
        assert!((first.rate - 50.0).abs() < 0.01);
        assert_eq!(
            first.latencies_ms,
            (36..100).collect::<Vec<u32>>(),
            "the latest 64 durations, oldest first"
        );
        tokio::time::advance(std::time::Duration::from_secs(1)).await;
        assert_eq!(
            s.sample().map(|x| (x.rate, x.latencies_ms.len())),
            Some((0.0, 0)),
            "the rate falls back to zero once"
        );
        tokio::time::advance(std::time::Duration::from_secs(1)).await;
        assert!(s.sample().is_none(), "idle: nothing to report");
    }
}
