//! Order-preserving parallel maps on scoped threads: CPU-bound per-item work (parsing,
//! validating, checksumming, shingling) uses every core while the results — and so every byte
//! written from them — stay in input order whatever the thread count.

/// The threads worth using: the machine's available parallelism.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// `f` over `items` on up to `threads` scoped threads, results in input order. A panic in `f`
/// is resumed on the caller's thread.
pub fn map<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let parts = chunks(items, threads, |part| {
        part.iter().map(&f).collect::<Vec<R>>()
    });
    let mut results = Vec::with_capacity(items.len());
    for part in parts {
        results.extend(part);
    }
    results
}

/// `f` over `items` cut into at most `threads` contiguous chunks of equal length (the last may
/// be shorter), one scoped thread per chunk; one result per chunk, in input order, and none for
/// no items. A single chunk runs on the caller's thread. A panic in `f` is resumed on the
/// caller's thread.
pub fn chunks<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&[T]) -> R + Sync,
) -> Vec<R> {
    let per_thread = items.len().div_ceil(threads.max(1)).max(1);
    if items.len() <= per_thread {
        return items.chunks(per_thread).map(&f).collect();
    }
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(per_thread)
            .map(|part| scope.spawn(move || f(part)))
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(result) => result,
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

    #[test]
    fn chunks_cover_the_input_in_order_with_at_most_one_per_thread() {
        let items: Vec<usize> = (0..1000).collect();
        for threads in [0, 1, 2, 3, 7, 2000] {
            let parts = chunks(&items, threads, <[usize]>::to_vec);
            assert!(parts.len() <= threads.max(1), "{threads} threads");
            assert_eq!(parts.concat(), items, "{threads} threads");
            let first_len = parts.first().map_or(0, Vec::len);
            assert!(
                parts.iter().all(|part| part.len() <= first_len),
                "{threads} threads"
            );
        }
        assert!(chunks(&[] as &[usize], 2, <[usize]>::len).is_empty());
    }
}
