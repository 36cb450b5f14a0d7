//! The ingest pool and the lowest scheduling priority that it and the other background
//! threads (feed download) run at.

use std::sync::Arc;

/// The scheduling priority of background work (the ingest pool, feed downloads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackgroundPriority {
    /// The lowest (niceness 19 on Linux): feed builds, compactions and model rebuilds
    /// take the CPU that serving leaves, so a full ingest does not queue requests behind
    /// it on a busy machine — and on a machine kept busy by other work, they wait.
    #[default]
    Lowest,
    /// The process's own: background work competes with other processes like serving
    /// does.
    Normal,
}

/// Builds the ingest pool at the lowest priority (see [`BackgroundPriority`]).
pub fn ingest_pool(threads: usize) -> std::io::Result<Arc<rayon::ThreadPool>> {
    ingest_pool_at(threads, BackgroundPriority::Lowest)
}

/// Builds the ingest pool at `priority`.
pub fn ingest_pool_at(
    threads: usize,
    priority: BackgroundPriority,
) -> std::io::Result<Arc<rayon::ThreadPool>> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("ingest-{i}"))
        .start_handler(move |_| {
            vitrine_snapshots::threads::place_current_thread(
                vitrine_snapshots::threads::Role::Background,
            );
            if priority == BackgroundPriority::Lowest {
                lower_thread_priority();
            }
        })
        .build()
        .map(Arc::new)
        .map_err(std::io::Error::other)
}

/// Puts the calling thread at the lowest scheduling priority (niceness 19 on Linux), for
/// background work that must not delay requests: the ingest pool and the feed download.
pub fn lower_thread_priority() {
    if let Err(error) =
        thread_priority::set_current_thread_priority(thread_priority::ThreadPriority::Min)
    {
        tracing::debug!(?error, "could not lower the thread's priority");
    }
}
