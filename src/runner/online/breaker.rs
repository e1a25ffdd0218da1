//! The `online` backend's circuit breaker: a server that fails every attempt (down, refusing
//! every request, answering with the wrong model) stops the job with its last message after a
//! bounded number of attempts, instead of retrying each request until the job's end. A server
//! that answered recently is given a while longer: a burst of 429s while the limiter finds the
//! server's rate, or of 503s while it restarts, is not a dead server.

use std::time::{Duration, Instant};

/// Fewest failed attempts in a row that trip the breaker, whatever the concurrency.
const MIN_FAILURES_IN_A_ROW: usize = 20;
/// How long after its last answer a server may keep failing before the breaker trips.
const GRACE_AFTER_AN_ANSWER: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct Breaker {
    threshold: usize,
    failures_in_a_row: usize,
    last_answer: Option<Instant>,
    last: Option<String>,
}

impl Breaker {
    /// A breaker for `concurrency` requests in flight: one failed round of them all, twice,
    /// is not yet enough.
    pub fn new(concurrency: usize) -> Breaker {
        Breaker {
            threshold: MIN_FAILURES_IN_A_ROW.max(concurrency.saturating_mul(2)),
            failures_in_a_row: 0,
            last_answer: None,
            last: None,
        }
    }

    /// An attempt the server answered with a usable completion.
    pub fn succeeded(&mut self, now: Instant) {
        self.failures_in_a_row = 0;
        self.last_answer = Some(now);
    }

    /// An attempt that failed, with the server's (redacted) message; true once the breaker
    /// trips: enough failures in a row, and no answer in the job or none for a while.
    pub fn failed(&mut self, message: &str, now: Instant) -> bool {
        self.failures_in_a_row += 1;
        self.last = Some(message.to_string());
        let quiet = self
            .last_answer
            .is_none_or(|at| now.saturating_duration_since(at) >= GRACE_AFTER_AN_ANSWER);
        self.failures_in_a_row >= self.threshold && quiet
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
    fn it_trips_after_a_run_of_failures_scaled_to_concurrency_and_an_answer_resets_it() {
        let now = Instant::now();
        let mut breaker = Breaker::new(4);
        for _ in 0..19 {
            assert!(!breaker.failed("503", now));
        }
        assert!(breaker.failed("connection refused", now));
        assert_eq!(breaker.last_message(), "connection refused");
        let mut wide = Breaker::new(64);
        assert!((0..127).all(|_| !wide.failed("x", now)));
        assert!(wide.failed("x", now));
    }

    #[test]
    fn a_server_that_answered_recently_gets_its_grace_before_the_breaker_trips() {
        let now = Instant::now();
        let mut breaker = Breaker::new(4);
        breaker.succeeded(now);
        assert!((0..500).all(|_| !breaker.failed("429", now + Duration::from_secs(5))));
        assert!(breaker.failed("429", now + GRACE_AFTER_AN_ANSWER));
        breaker.succeeded(now + GRACE_AFTER_AN_ANSWER);
        assert!(!breaker.failed("429", now + GRACE_AFTER_AN_ANSWER * 3));
    }
}
