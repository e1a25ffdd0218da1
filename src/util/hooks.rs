//! Crash injection for the crash-recovery tests. With the `test-hooks` feature (enabled only for
//! `cargo test` builds), `SASEVAL_CRASH_AFTER=<step>[:<n>]` aborts the process right after the
//! n-th (default first) time that step is passed. In normal builds this compiles to nothing.

#[cfg(feature = "test-hooks")]
pub fn crash_point(step: &str) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static PASSED: AtomicUsize = AtomicUsize::new(0);
    let Ok(spec) = std::env::var("SASEVAL_CRASH_AFTER") else {
        return;
    };
    let (name, nth) = match spec.split_once(':') {
        Some((name, n)) => (name.to_string(), n.parse::<usize>().unwrap_or(1)),
        None => (spec, 1),
    };
    if name == step && PASSED.fetch_add(1, Ordering::SeqCst) + 1 == nth {
        crate::ui::Printer::default().warn(format!("test hook: crashing after step `{step}`"));
        std::process::abort();
    }
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub fn crash_point(_step: &str) {}
