//! Rebuilds and what follows them: a new base (a full feed, or a compaction of the
//! overlay) built off the writer lock and swapped in under it with the deltas applied
//! since; the compactor thread (compactions when the overlay is large or old, state
//! snapshots on an interval); checkpoints that cut the log behind the kept snapshots;
//! and the erasure flush.

use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use vitrine_engine::account::{UserRecord, Writer};
use vitrine_engine::catalogue::Catalogue;
use vitrine_snapshots::snapshot;

use super::locks::Checkpointing;
use super::{
    Before, CheckpointReport, RebuildError, RebuildKind, RebuildReport, Rebuilt, Shared,
    SnapshotKind,
};
use crate::delta::{self, Mode};
use crate::{state, store};

impl Shared {
    pub(super) fn run_compactor(&self, receiver: &mpsc::Receiver<()>) {
        let key = &self.account.access_key();
        let mut last_compaction = Instant::now();
        let mut last_checkpoint = Instant::now();
        loop {
            let due = |last: Instant, every: Duration| every.saturating_sub(last.elapsed());
            let wait = due(last_compaction, self.config.compact_interval)
                .min(due(last_checkpoint, self.config.state_interval));
            let asked = match receiver.recv_timeout(wait) {
                Ok(()) => true,
                Err(mpsc::RecvTimeoutError::Timeout) => false,
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            };
            if last_checkpoint.elapsed() >= self.config.state_interval {
                last_checkpoint = Instant::now();
                match self.checkpoint(Before::CatalogueIfNone) {
                    Ok(report) => tracing::debug!(
                        account = %key,
                        snapshot = %report.saved.path.display(),
                        segments_removed = report.segments_removed,
                        seconds = last_checkpoint.elapsed().as_secs_f64(),
                        "state snapshot written"
                    ),
                    Err(error) => tracing::error!(account = %key, %error, "state snapshot failed"),
                }
            }
            if !asked && last_compaction.elapsed() < self.config.compact_interval {
                continue;
            }
            last_compaction = Instant::now();
            let started = Instant::now();
            match self.compact() {
                Ok(Some(report)) => tracing::info!(
                    account = %key,
                    snapshot = %report.saved.path.display(),
                    reapplied = report.reapplied,
                    segments_removed = report.segments_removed,
                    seconds = started.elapsed().as_secs_f64(),
                    "overlay compacted"
                ),
                Ok(None) => {}
                Err(error) => tracing::error!(account = %key, %error, "compaction failed"),
            }
            self.compaction_asked.store(false, Ordering::Release);
        }
    }

    pub(super) fn compact(&self) -> Result<Option<RebuildReport>, RebuildError> {
        if !self.account.catalogue().has_overlay() {
            return Ok(None);
        }
        self.rebuild_compacted().map(Some)
    }

    /// A rebuild of the same content into a new base (and so a new snapshot), whether
    /// or not the catalogue has an overlay.
    fn rebuild_compacted(&self) -> Result<RebuildReport, RebuildError> {
        self.rebuild(RebuildKind::Compaction, |current| {
            Ok(Rebuilt {
                catalogue: current
                    .compact()
                    .map_err(|e| RebuildError::Build(e.to_string()))?,
                users: None,
            })
        })
    }

    pub(super) fn rebuild(
        &self,
        kind: RebuildKind,
        build: impl FnOnce(&Catalogue) -> Result<Rebuilt, RebuildError> + Send,
    ) -> Result<RebuildReport, RebuildError> {
        let mut rebuilding = self.locks.rebuild();
        let (start, position) = {
            let writer = rebuilding.writer(&self.account);
            let position = self
                .catalogue_position(&writer)
                .map_err(store::StoreError::from)?;
            (self.account.catalogue(), position)
        };
        let rebuilt = self.config.pool.install(|| build(&start))?;
        drop(start);
        // A feed holds the writer lock from before the statuses are saved until the swap;
        // a compaction (same content) only for the swap.
        let early = (kind == RebuildKind::Feed).then(|| rebuilding.writer(&self.account));
        self.deltas.statuses.save(&self.dir)?;
        let writing = Instant::now();
        let (base, saved) = store::write_snapshot(&self.dir, &rebuilt.catalogue, position)?;
        self.metrics.snapshot_written(
            SnapshotKind::Catalogue,
            writing.elapsed(),
            saved.bytes as u64,
        );
        let writer = early.unwrap_or_else(|| rebuilding.writer(&self.account));
        let reapplied = self.swap_base(&writer, base, position, rebuilt.users);
        store::save_users(&self.dir, &self.account.users())?;
        store::prune(&self.dir)?;
        drop(writer);
        // The tracking state too, so that the log can be cut behind both.
        let checkpoint = self.write_state(&rebuilding.checkpointing())?;
        Ok(RebuildReport {
            saved,
            reapplied,
            segments_removed: checkpoint.segments_removed,
            checkpoint,
        })
    }

    /// The log position the current catalogue includes (called with the writer lock
    /// held): after the last applied delta, or the log's durable end when no delta is
    /// pending (read first: a delta logged after it was counted pending before its
    /// append). A snapshot never claims a position the log has not made durable.
    fn catalogue_position(&self, _writer: &Writer<'_>) -> Result<u64, vitrine_snapshots::Error> {
        let next = self.wal.sync()?;
        let applied = self.deltas.applied_through.load(Ordering::Acquire);
        Ok(if self.deltas.pending.load(Ordering::Acquire) == 0 {
            applied.max(next)
        } else {
            applied
        })
    }

    /// Writes a state snapshot at the log's current position, then deletes log segments
    /// behind every kept snapshot; `before` says whether a catalogue snapshot is written
    /// first when the account has none yet (an overlay waits for its own compaction).
    pub(super) fn checkpoint(&self, before: Before) -> Result<CheckpointReport, RebuildError> {
        let catalogued = snapshot::oldest_position(&self.dir, store::PREFIX)
            .map_err(store::StoreError::from)?
            .is_some();
        if before == Before::CatalogueIfNone && !catalogued {
            // A rebuild ends with a state snapshot.
            return Ok(self.rebuild_compacted()?.checkpoint);
        }
        Ok(self.write_state(&self.locks.checkpointing())?)
    }

    /// Writes a state snapshot at the log's current position and cuts the log.
    fn write_state(
        &self,
        _checkpointing: &Checkpointing<'_>,
    ) -> Result<CheckpointReport, store::StoreError> {
        // Read before the export: every event before it is applied (events are applied
        // before they are logged), and durable (the log is fsynced up to it first), so
        // the snapshot never claims a position a power loss could take from the log.
        let position = self.wal.sync()?;
        let writing = Instant::now();
        // The export may include events applied after that position: saved only once
        // every request that applied before the export ended has handed its events to
        // the log and the log made them durable, so that a crash never leaves the
        // snapshot holding events the log lost (in a cluster, events no other node
        // would ever get).
        let saved = state::write(&self.dir, &self.account, position, || {
            self.applying.wait_for_earlier();
            self.wal.sync().map(|_| ())
        })?;
        self.metrics
            .snapshot_written(SnapshotKind::State, writing.elapsed(), saved.bytes as u64);
        let segments_removed = self.cut_log()?;
        Ok(CheckpointReport {
            saved,
            segments_removed,
        })
    }

    pub(super) fn flush_erasure(&self) -> Result<usize, RebuildError> {
        // Deltas logged before the erasure are applied first, so that the catalogue
        // snapshot can cover the whole sealed log.
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.deltas.pending.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(5));
        }
        self.wal.rotate().map_err(store::StoreError::from)?;
        self.rebuild_compacted()?;
        let _checkpointing = self.locks.checkpointing();
        for prefix in [store::PREFIX, state::PREFIX] {
            snapshot::prune(&self.dir, prefix, 1).map_err(store::StoreError::from)?;
        }
        Ok(self.cut_log()?)
    }

    /// Deletes log segments wholly behind both the older kept catalogue snapshot and
    /// the older kept state snapshot; nothing while either kind has none.
    fn cut_log(&self) -> Result<usize, store::StoreError> {
        let catalogue = snapshot::oldest_position(&self.dir, store::PREFIX)?;
        let tracking = snapshot::oldest_position(&self.dir, state::PREFIX)?;
        match (catalogue, tracking) {
            (Some(c), Some(t)) => {
                // In a cluster, where to resume the replicated log once the records
                // telling it are cut: read first, then made durable in the local log.
                let position = self.stream_position.load(Ordering::Acquire);
                if position > 0 {
                    self.wal.sync()?;
                    self.save_stream_position(position)?;
                }
                // Nor past a record the cluster has not stored yet: a restart
                // publishes it again from the local log.
                let unstored = self
                    .replica
                    .get()
                    .and_then(|replica| replica.log.unstored_from())
                    .unwrap_or(u64::MAX);
                Ok(self.wal.remove_before(c.min(t).min(unstored))?)
            }
            _ => Ok(0),
        }
    }

    /// Serves `base` with every delta applied since `position` on top (called with the
    /// writer lock held); returns how many deltas were applied again.
    fn swap_base(
        &self,
        writer: &Writer<'_>,
        base: Catalogue,
        position: u64,
        users: Option<Vec<UserRecord>>,
    ) -> usize {
        let mut since_base = self.deltas.since_base.lock(writer);
        since_base.retain(|logged| logged.sequence >= position);
        let mut edit = base.edit();
        for logged in since_base.iter() {
            let _ = delta::apply_to(&mut edit, &logged.delta, Mode::Reapply);
        }
        writer.swap_catalogue(edit.finish());
        if let Some(users) = users {
            self.account.replace_users(users);
            for logged in since_base.iter() {
                delta::apply_users(&self.account, &logged.delta);
            }
        }
        since_base.len()
    }
}
