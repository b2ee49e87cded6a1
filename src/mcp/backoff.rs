//! The one retry policy: how long to wait before attempt `n` of anything that failed for a
//! reason that may pass (a connection, a push stream, a poll, an idempotent intent).
//!
//! Pure: no clock reads, no sleeping (callers schedule the wait).

use std::time::Duration;

/// Exponential backoff: `base·2^(n-1)`, capped at `max`; jittered where many requests
/// might otherwise come back in step; a server's `Retry-After` wins when it gave one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub max: Duration,
}

impl Backoff {
    /// The wait before attempt `attempt` (1 waits `base`), capped at `max`.
    pub fn step(&self, attempt: u32) -> Duration {
        let factor = 1u32 << attempt.saturating_sub(1).min(16);
        self.base.saturating_mul(factor).min(self.max)
    }

    /// [`Backoff::step`] plus up to 25 %, so that a server's many tasks (or many clients)
    /// do not come back at the same instant.
    pub fn jittered(&self, attempt: u32) -> Duration {
        let step = self.step(attempt);
        step + step.mul_f64(fastrand::f64() * 0.25)
    }

    /// The server's `Retry-After` when it gave one, else [`Backoff::step`]; capped at `max`
    /// either way (a hostile `Retry-After` does not park us for a day).
    pub fn after(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        retry_after
            .unwrap_or_else(|| self.step(attempt))
            .min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_doubling_and_is_capped() {
        let b = Backoff {
            base: Duration::from_millis(100),
            max: Duration::from_secs(2),
        };
        assert_eq!(b.step(0), Duration::from_millis(100));
        assert_eq!(b.step(1), Duration::from_millis(100));
        assert_eq!(b.step(3), Duration::from_millis(400));
        assert_eq!(b.step(20), Duration::from_secs(2));
        assert_eq!(b.step(u32::MAX), Duration::from_secs(2));
        for n in [1, 3, 20] {
            let j = b.jittered(n);
            assert!(j >= b.step(n) && j <= b.step(n).mul_f64(1.25), "{n}: {j:?}");
        }
    }

    #[test]
    fn a_servers_retry_after_wins_but_is_capped() {
        let b = Backoff {
            base: Duration::from_millis(500),
            max: Duration::from_secs(10),
        };
        assert_eq!(
            b.after(1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(b.after(1, Some(Duration::from_secs(86_400))), b.max);
        assert_eq!(b.after(2, None), Duration::from_secs(1));
    }
}
