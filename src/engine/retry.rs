//! Retrying idempotent user intents (answers, cancels) through transient server faults:
//! a 503 or a dropped connection must not strand an input that was prompted once.
//!
//! Must not retry anything that is not idempotent (`tools/call` is never retried).

use std::future::Future;
use std::time::Duration;

use crate::mcp::McpError;
use crate::mcp::backoff::Backoff;

/// Attempts in all, the first included.
pub const ATTEMPTS: u32 = 5;
const BACKOFF: Backoff = Backoff {
    base: Duration::from_millis(500),
    max: Duration::from_secs(10),
};

/// Run `op` until it succeeds, fails for good, or `ATTEMPTS` are used up. Waits between
/// attempts double from 0.5 s, or follow the server's `Retry-After` (capped at 10 s).
pub async fn retry_transient<T, F, Fut>(mut op: F) -> Result<T, McpError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, McpError>>,
{
    let mut attempt = 1;
    loop {
        match op().await {
            Err(e) if e.is_retryable() && attempt < ATTEMPTS => {
                let wait = BACKOFF.after(attempt, e.retry_after());
                tracing::debug!(attempt, ?wait, "transient failure, retrying: {e}");
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn unavailable() -> McpError {
        McpError::Http {
            status: 503,
            retry_after: Some(Duration::from_secs(1)),
            body: String::new(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn transient_failures_are_retried_until_success() {
        let calls = AtomicU32::new(0);
        let r = retry_transient(|| async {
            if calls.fetch_add(1, Ordering::SeqCst) < 2 {
                Err(unavailable())
            } else {
                Ok(7)
            }
        })
        .await;
        assert_eq!(r.unwrap(), 7);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn attempts_are_bounded() {
        let calls = AtomicU32::new(0);
        let r: Result<(), _> = retry_transient(|| async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(unavailable())
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), ATTEMPTS);
    }

    #[tokio::test(start_paused = true)]
    async fn final_errors_are_not_retried() {
        let calls = AtomicU32::new(0);
        let r: Result<(), _> = retry_transient(|| async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(McpError::Http {
                status: 401,
                retry_after: None,
                body: String::new(),
            })
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
