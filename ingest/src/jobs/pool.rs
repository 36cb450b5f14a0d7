//! The ingest pool and the lowest scheduling priority that it and the other background
//! threads (feed download) run at.

use std::sync::Arc;

/// Builds the ingest pool. Its threads run at the lowest scheduling priority (niceness
/// 19 on Linux): feed builds, compactions and model rebuilds take the CPU that serving
/// leaves, so a full ingest does not queue requests behind it on a busy machine.
pub fn ingest_pool(threads: usize) -> std::io::Result<Arc<rayon::ThreadPool>> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("ingest-{i}"))
        .start_handler(|_| lower_thread_priority())
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
