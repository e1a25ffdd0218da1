//! An order-preserving parallel map on scoped threads: CPU-bound per-item work (parsing,
//! validating, checksumming) uses every core while the results — and so every byte written
//! from them — stay in input order whatever the thread count.

/// The threads worth using: the machine's available parallelism.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// `f` over `items` on up to `threads` scoped threads, results in input order. A panic in `f`
/// is resumed on the caller's thread.
pub fn map<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let per_thread = items.len().div_ceil(threads.max(1)).max(1);
    if items.len() <= per_thread {
        return items.iter().map(&f).collect();
    }
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(per_thread)
            .map(|part| scope.spawn(move || part.iter().map(f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| match h.join() {
                Ok(results) => results,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_input_order_for_any_thread_count() {
        let items: Vec<usize> = (0..1000).collect();
        let expected: Vec<usize> = items.iter().map(|i| i * 3).collect();
        for threads in [0, 1, 2, 3, 7, 2000] {
            assert_eq!(
                map(&items, threads, |i| i * 3),
                expected,
                "{threads} threads"
            );
        }
        assert!(map(&[] as &[usize], 2, |i| *i).is_empty());
    }
}
