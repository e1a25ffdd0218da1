//! The `online` backend's circuit breaker: a server that fails every attempt (down, refusing
//! every request, answering with the wrong model) stops the job with its last message after a
//! bounded number of attempts, instead of retrying each request until the job's end.

/// Fewest failed attempts in a row that trip the breaker, whatever the concurrency.
const MIN_FAILURES_IN_A_ROW: usize = 20;

#[derive(Debug, Clone)]
pub struct Breaker {
    threshold: usize,
    failures_in_a_row: usize,
    last: Option<String>,
}

impl Breaker {
    /// A breaker for `concurrency` requests in flight: one failed round of them all, twice,
    /// is not yet enough (a burst of 503s while a server restarts passes).
    pub fn new(concurrency: usize) -> Breaker {
        Breaker {
            threshold: MIN_FAILURES_IN_A_ROW.max(concurrency.saturating_mul(2)),
            failures_in_a_row: 0,
            last: None,
        }
    }

    /// An attempt the server answered with a usable completion.
    pub fn succeeded(&mut self) {
        self.failures_in_a_row = 0;
    }

    /// An attempt that failed, with the server's (redacted) message; true once the breaker trips.
    pub fn failed(&mut self, message: &str) -> bool {
        self.failures_in_a_row += 1;
        self.last = Some(message.to_string());
        self.is_open()
    }

    pub fn is_open(&self) -> bool {
        self.failures_in_a_row >= self.threshold
    }

    pub fn failures_in_a_row(&self) -> usize {
        self.failures_in_a_row
    }

    /// The message of the last failure.
    pub fn last_message(&self) -> &str {
        self.last.as_deref().unwrap_or("no message")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_trips_after_a_run_of_failures_scaled_to_concurrency_and_a_success_resets_it() {
        let mut breaker = Breaker::new(4);
        for _ in 0..19 {
            assert!(!breaker.failed("503"));
        }
        breaker.succeeded();
        for _ in 0..19 {
            assert!(!breaker.failed("503"));
        }
        assert!(breaker.failed("connection refused"));
        assert_eq!(breaker.last_message(), "connection refused");
        let mut wide = Breaker::new(64);
        assert!((0..127).all(|_| !wide.failed("x")));
        assert!(wide.failed("x"));
    }
}
