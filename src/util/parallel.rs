//! Order-preserving parallel maps on scoped threads: CPU-bound per-item work (parsing,
//! validating, checksumming, shingling) uses every core while the results — and so every byte
//! written from them — stay in input order whatever the thread count.

/// The threads worth using: the machine's available parallelism.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// `f` over `items` on up to `threads` scoped threads, results in input order. A panic in `f`
/// is resumed on the caller's thread.
///
/// Threads claim small runs of items as they go rather than a fixed share each, so items of
/// unequal cost (replies of different lengths, prompts of different sizes) keep every thread
/// busy to the end instead of leaving one core idle while the other finishes its half.
pub fn map<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let run = items.len().div_ceil(threads * RUNS_PER_THREAD).max(1);
    let runs = items.len().div_ceil(run);
    let next_run = std::sync::atomic::AtomicUsize::new(0);
    let claim = || -> Vec<(usize, Vec<R>)> {
        let mut done = Vec::new();
        loop {
            let index = next_run.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if index >= runs {
                return done;
            }
            let start = index * run;
            let part = &items[start..items.len().min(start + run)];
            done.push((index, part.iter().map(&f).collect()));
        }
    };
    let mut claimed: Vec<(usize, Vec<R>)> = std::thread::scope(|scope| {
        let claim = &claim;
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(claim)).collect();
        let mut claimed = claim();
        for helper in joined(helpers) {
            claimed.extend(helper);
        }
        claimed
    });
    claimed.sort_unstable_by_key(|(index, _)| *index);
    let mut results = Vec::with_capacity(items.len());
    for (_, part) in claimed {
        results.extend(part);
    }
    results
}

/// How many runs [`map`] cuts its items into per thread: enough that the last runs even out
/// the threads' finishing times, few enough that claiming one costs nothing beside its work.
const RUNS_PER_THREAD: usize = 16;

/// `f` over `items` on one scoped thread per state in `states`, each thread with a state of its
/// own (scratch buffers, caches) that outlives the call; results in input order. Items are dealt
/// out in turn, so neighbouring items of unequal cost spread over the threads. One state runs on
/// the caller's thread; no state maps nothing. A panic in `f` is resumed on the caller's thread.
pub fn map_with<S: Send, T: Sync, R: Send>(
    items: &[T],
    states: &mut [S],
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R> {
    let lanes = states.len().min(items.len());
    let dealt = |state: &mut S, lane: usize| -> Vec<R> {
        let every = lanes.max(1);
        let lane_items = items.iter().skip(lane).step_by(every);
        lane_items.map(|item| f(state, item)).collect()
    };
    let per_lane: Vec<Vec<R>> = match &mut states[..lanes] {
        [] => return Vec::new(),
        [only] => vec![dealt(only, 0)],
        several => std::thread::scope(|scope| {
            let dealt = &dealt;
            let handles: Vec<_> = several
                .iter_mut()
                .enumerate()
                .map(|(lane, state)| scope.spawn(move || dealt(state, lane)))
                .collect();
            joined(handles)
        }),
    };
    let mut per_lane: Vec<_> = per_lane.into_iter().map(Vec::into_iter).collect();
    let mut results = Vec::with_capacity(items.len());
    for lane in (0..lanes).cycle().take(items.len()) {
        results.extend(per_lane[lane].next());
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
        joined(handles)
    })
}

/// Works through a stream of items one ahead: while `finish` takes an item and its result,
/// `work` (which may use every core itself) runs on the next item on a scoped thread, so an
/// order-dependent `finish` does not leave the workers idle. Items finish in order, and an error
/// from `next` is returned once the items before it have finished. A panic in `work` is resumed
/// on the caller's thread.
pub fn pipelined<I: Send, R: Send, E>(
    mut next: impl FnMut() -> Result<Option<I>, E>,
    work: impl Fn(&I) -> R + Sync,
    mut finish: impl FnMut(I, R) -> Result<(), E>,
) -> Result<(), E> {
    let work = &work;
    std::thread::scope(|scope| {
        let mut pending = None;
        loop {
            let upcoming = next().map(|item| {
                item.map(|item| {
                    scope.spawn(move || {
                        let result = work(&item);
                        (item, result)
                    })
                })
            });
            if let Some(working) = pending.take() {
                let (item, result) = joined_one(working);
                finish(item, result)?;
            }
            match upcoming? {
                Some(working) => pending = Some(working),
                None => return Ok(()),
            }
        }
    })
}

/// The threads' results in order; a thread's panic is resumed on the caller's thread.
fn joined<R>(handles: Vec<std::thread::ScopedJoinHandle<'_, R>>) -> Vec<R> {
    handles.into_iter().map(joined_one).collect()
}

fn joined_one<R>(handle: std::thread::ScopedJoinHandle<'_, R>) -> R {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
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
    fn map_shares_a_run_of_costly_items_between_its_threads() {
        let items: Vec<usize> = (0..64).collect();
        let worked_on = map(&items, 2, |&i| {
            if i < 32 {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            std::thread::current().id()
        });
        let costly: std::collections::HashSet<_> = worked_on[..32].iter().collect();
        assert_eq!(
            costly.len(),
            2,
            "the costly first half ran on one thread while the other had only cheap items"
        );
    }

    #[test]
    fn map_with_keeps_input_order_and_gives_each_thread_its_own_state() {
        let items: Vec<usize> = (0..1000).collect();
        let expected: Vec<usize> = items.iter().map(|i| i * 3).collect();
        for threads in [1, 2, 3, 7, 2000] {
            let mut seen = vec![0usize; threads];
            let mapped = map_with(&items, &mut seen, |count, i| {
                *count += 1;
                i * 3
            });
            assert_eq!(mapped, expected, "{threads} threads");
            assert_eq!(seen.iter().sum::<usize>(), items.len(), "{threads} threads");
            let busy = seen.iter().filter(|&&count| count > 0).count();
            assert_eq!(busy, threads.min(items.len()), "{threads} threads");
        }
        assert!(map_with(&items, &mut [] as &mut [usize], |_, i| *i).is_empty());
        assert!(map_with(&[] as &[usize], &mut [0], |_, i| *i).is_empty());
    }

    #[test]
    fn a_pipeline_finishes_items_in_order_and_reports_a_late_error_after_the_earlier_items() {
        let mut items = (0..5).map(Ok).chain([Err("unreadable")]);
        let mut finished = Vec::new();
        let result = pipelined(
            || items.next().transpose(),
            |item: &i32| item * 10,
            |item, result| {
                finished.push((item, result));
                Ok(())
            },
        );
        assert_eq!(result, Err("unreadable"));
        assert_eq!(finished, [(0, 0), (1, 10), (2, 20), (3, 30), (4, 40)]);

        let mut items = 0..3;
        let mut seen = Vec::new();
        let result = pipelined(
            || Ok::<_, String>(items.next()),
            |item: &i32| *item,
            |item, _| {
                seen.push(item);
                if item == 1 {
                    Err(format!("item {item} failed"))
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(result, Err("item 1 failed".to_string()));
        assert_eq!(seen, [0, 1], "nothing finishes after a failure");
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
