//! The thread pool kept awake while a frame runs.
//!
//! The engine executes one instruction at a time and splits the large ones into
//! blocks for the pool (`exec/dot.rs`, ELTWISE's planes in `exec/simd_ops.rs`).
//! Between two parallel instructions the other workers find no work, spin briefly and
//! go to sleep, and the next parallel instruction wakes them again through the
//! kernel: thousands of times per ResNet-50 frame (the sleeping and waking about 9%
//! of its CPU samples, and on a VM each wake-up a virtual interrupt). [`run_awake`]
//! instead keeps one task per other worker polling the pool for work until the frame
//! is done (yielding the CPU to the OS between polls, so a machine with more runnable
//! threads than cores still runs them). Results are unchanged: which thread runs a
//! block never changes what it computes (docs/ARCHITECTURE.md, the engine's
//! invariant).

use std::sync::atomic::{AtomicBool, Ordering};

/// Runs `f` on a worker of the current rayon pool while the pool's other workers poll
/// for work instead of sleeping.
pub fn run_awake<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let done = AtomicBool::new(false);
    let others = rayon::current_num_threads().saturating_sub(1);
    rayon::scope(|s| {
        let engine = rayon::current_thread_index();
        let done = &done;
        for _ in 0..others {
            s.spawn(move |_| {
                // A poller the engine's own thread picks up (while it waits inside an
                // instruction) returns at once: it must never wait for itself.
                if rayon::current_thread_index() == engine {
                    return;
                }
                while !done.load(Ordering::Acquire) {
                    if rayon::yield_now() != Some(rayon::Yield::Executed) {
                        std::thread::yield_now();
                    }
                }
            });
        }
        // Set when `f` returns or unwinds: a panic must not leave the pollers (and
        // the scope waiting for them) running forever.
        let _stop = StopOnDrop(done);
        f()
    })
}

/// Sets the flag when dropped.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn the_work_runs_and_the_pollers_stop() {
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let sum: u64 = pool.install(|| {
                run_awake(|| {
                    (0..100u64)
                        .map(|i| (0..1000u64).into_par_iter().map(|x| x * i).sum::<u64>())
                        .sum()
                })
            });
            assert_eq!(sum, (0..100u64).sum::<u64>() * (0..1000u64).sum::<u64>());
            // A panic inside reaches the caller (the pollers stop) instead of hanging.
            let caught = pool
                .install(|| std::panic::catch_unwind(|| run_awake(|| panic!("inside the frame"))));
            assert!(caught.is_err());
        }
    }
}
