//! The crate's one pool for work on every core (cooking, reading a
//! scene's files before it registers): items taken in
//! order by scoped worker threads, each result handed back on the calling
//! thread as it finishes, so the caller reports progress and can stop at
//! the first error.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The threads to use for `threads` (0: one per core) and `items` items.
pub fn threads_for(threads: usize, items: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = if threads == 0 { cores } else { threads };
    threads.min(items).max(1)
}

/// Runs `work(index, item)` for every item on [`threads_for`]`(threads,
/// items.len())` workers, calling `done(index, result)` here as each one
/// finishes (in finishing order). The first `Err` from `done` stops the
/// handing out of new items; it is returned once the running ones end.
pub fn for_each<T, R, E>(
    items: &[T],
    threads: usize,
    work: impl Fn(usize, &T) -> R + Sync,
    mut done: impl FnMut(usize, R) -> Result<(), E>,
) -> Result<(), E>
where
    T: Sync,
    R: Send,
{
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..threads_for(threads, items.len()) {
            let tx = tx.clone();
            let (next, stop, work) = (&next, &stop, &work);
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(k) else { break };
                    if tx.send((k, work(k, item))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (k, r) in rx {
            if let Err(e) = done(k, r) {
                stop.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_once_and_the_first_error_stops_it() {
        let items: Vec<u32> = (0..100).collect();
        let mut seen = [false; 100];
        for_each(
            &items,
            3,
            |_, x| x * 2,
            |k, r| {
                assert_eq!(r, items[k] * 2);
                assert!(!seen[k]);
                seen[k] = true;
                Ok::<(), ()>(())
            },
        )
        .unwrap();
        assert!(seen.iter().all(|s| *s));
        let mut count = 0;
        let err = for_each(
            &items,
            2,
            |_, x| *x,
            |_, r| {
                count += 1;
                if r == 10 {
                    Err(r)
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(err, Err(10));
        assert!(count < 100, "work stops being handed out after an error");
        assert_eq!(threads_for(0, 1), 1);
        assert_eq!(threads_for(8, 3), 3);
    }
}
