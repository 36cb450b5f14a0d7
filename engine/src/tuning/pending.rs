//! Trials taken on the request path and scored off it ([`Pending`]).

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_queue::ArrayQueue;

use super::PENDING_TRIALS;

/// Trials waiting to be scored: at most two seconds' worth at the rate the tuning
/// starts with (within [`PENDING_TRIALS`]); beyond, a trial is dropped and counted, so
/// a request never waits on the scoring and a scorer that falls behind costs no memory.
#[derive(Debug)]
pub struct Pending<T> {
    queue: ArrayQueue<T>,
    dropped: AtomicU64,
}

impl<T> Pending<T> {
    /// A queue for trials taken at most `per_second` times a second.
    pub fn new(per_second: u32) -> Pending<T> {
        let capacity = (per_second as usize)
            .saturating_mul(2)
            .clamp(*PENDING_TRIALS.start(), *PENDING_TRIALS.end());
        Pending {
            queue: ArrayQueue::new(capacity),
            dropped: AtomicU64::new(0),
        }
    }

    /// Queues a trial; dropped (and counted) when the queue is full.
    pub fn push(&self, trial: T) {
        if self.queue.push(trial).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The oldest trial waiting.
    pub fn pop(&self) -> Option<T> {
        self.queue.pop()
    }

    /// Trials dropped so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_does_not_fit_is_dropped_and_counted_and_the_rest_comes_out_oldest_first() {
        let pending = Pending::new(1);
        let capacity = *PENDING_TRIALS.start();
        for n in 0..capacity + 3 {
            pending.push(n);
        }
        assert_eq!(pending.dropped(), 3);
        let out: Vec<usize> = std::iter::from_fn(|| pending.pop()).collect();
        assert_eq!(out, (0..capacity).collect::<Vec<_>>());
    }
}
