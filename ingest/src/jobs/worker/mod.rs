//! Deltas from intake to application: [`AccountJobs::submit_delta`] logs a delta
//! (fsynced) and queues it; the delta worker thread applies queued deltas in log order,
//! a batch per catalogue version, under the account's writer lock, and records each
//! token's status once the version holding it is served.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc;

pub(super) mod queue;

use queue::{Logged, Queued};

use super::log::{self, RecordKind};
use super::status::{DeltaStatus, TAKEN_NOT_READ, UNKNOWN_TOKEN};
use super::{AccountJobs, Shared, SubmitError};
use crate::delta::{self, Delta, Mode};
use crate::jobs::replica::port::{ReplicationError, Wait};

/// Deltas applied per catalogue version at most (under load several queued deltas share
/// one version; each is still applied all or nothing).
const BATCH: usize = 256;

impl AccountJobs {
    /// Logs a delta (`record`: its JSON parts, without credentials; fsynced before this
    /// returns), queues it and returns its token; it is applied after every earlier one.
    pub fn submit_delta(&self, delta: Delta, record: &[u8]) -> Result<String, SubmitError> {
        let token = format!("dlt_{}", vitrine_engine::account::new_id());
        if self.is_replicated() {
            // Logged and applied when it comes back from the replicated log, on every
            // node in the same order (see `replica`).
            self.admit(Wait::Answer)?;
            let payload = log::encode_delta(&token, record);
            self.shared
                .deltas
                .statuses
                .set(token.clone(), TAKEN_NOT_READ, DeltaStatus::Pending);
            if let Err(error) = self.publish(RecordKind::Delta, || payload, Wait::Answer) {
                // Unconfirmed: kept, and Pending until it comes back from the log.
                if !matches!(
                    error,
                    SubmitError::Replication(ReplicationError::Unconfirmed(_))
                ) {
                    let failed = DeltaStatus::Failed(error.to_string());
                    self.shared
                        .deltas
                        .statuses
                        .set(token, TAKEN_NOT_READ, failed);
                }
                return Err(error);
            }
            return Ok(token);
        }
        let intake = self.intake.lock();
        let Some(sender) = intake.as_ref() else {
            return Err(SubmitError::Closed);
        };
        let deltas = &self.shared.deltas;
        deltas.pending.fetch_add(1, Ordering::AcqRel);
        let payload = log::encode_delta(&token, record);
        let sequence = match self
            .shared
            .wal
            .append_durable(RecordKind::Delta.code(), payload)
        {
            Ok(sequence) => sequence,
            Err(error) => {
                deltas.pending.fetch_sub(1, Ordering::AcqRel);
                return Err(error.into());
            }
        };
        deltas
            .statuses
            .set(token.clone(), sequence, DeltaStatus::Pending);
        let queued = Queued {
            token: token.clone(),
            sequence,
            stream: 0,
            delta: Arc::new(delta),
        };
        if sender.send(queued).is_err() {
            deltas.pending.fetch_sub(1, Ordering::AcqRel);
            let stopped = DeltaStatus::Failed("the delta worker stopped".to_owned());
            deltas.statuses.set(token, sequence, stopped);
            return Err(SubmitError::Closed);
        }
        Ok(token)
    }

    /// The status of a delta token; unknown tokens fail with [`UNKNOWN_TOKEN`].
    pub fn delta_status(&self, token: &str) -> DeltaStatus {
        self.shared
            .deltas
            .statuses
            .get(token)
            .unwrap_or_else(|| DeltaStatus::Failed(UNKNOWN_TOKEN.to_owned()))
    }

    /// The log position the account's catalogue includes.
    pub fn applied_through(&self) -> u64 {
        self.shared.deltas.applied_through.load(Ordering::Acquire)
    }
}

impl Shared {
    pub(super) fn run_worker(&self, receiver: &mpsc::Receiver<Queued>, compact: &mpsc::Sender<()>) {
        while let Ok(first) = receiver.recv() {
            let mut batch = vec![first];
            while batch.len() < BATCH
                && let Ok(more) = receiver.try_recv()
            {
                batch.push(more);
            }
            self.apply_batch(batch);
            if self.account.catalogue().overlay_size() >= self.config.compact_after_changes
                && !self.compaction_asked.swap(true, Ordering::AcqRel)
            {
                let _ = compact.send(());
            }
        }
    }

    fn apply_batch(&self, batch: Vec<Queued>) {
        let writer = self.account.writer();
        let count = batch.len();
        let mut edit = self.account.catalogue().edit();
        let mut outcomes = Vec::with_capacity(batch.len());
        let mut last = 0;
        for queued in batch {
            last = queued.sequence;
            if queued.stream > 0 {
                let mut queue = self.deltas.stream_pending.lock();
                if queue.front() == Some(&queued.stream) {
                    queue.pop_front();
                }
            }
            let status = match delta::apply_to(&mut edit, &queued.delta, Mode::Strict) {
                Ok(_) => DeltaStatus::Applied,
                Err(error) => DeltaStatus::Failed(error.to_string()),
            };
            if status == DeltaStatus::Applied {
                self.deltas.since_base.lock(&writer).push(Logged {
                    sequence: queued.sequence,
                    delta: Arc::clone(&queued.delta),
                });
            }
            outcomes.push((queued, status));
        }
        writer.swap_catalogue(edit.finish());
        // No longer pending before they are counted or given a status: whoever sees a
        // delta decided (its status, `vitrine_deltas_total`) sees it out of
        // `vitrine_deltas_pending`.
        self.deltas
            .pending
            .fetch_sub(count as u64, Ordering::AcqRel);
        let account = self.account.access_key();
        for (queued, status) in outcomes {
            let counter = match &status {
                DeltaStatus::Applied => {
                    delta::apply_users(&self.account, &queued.delta);
                    tracing::debug!(%account, token = %queued.token, "delta applied");
                    Some(&self.metrics.deltas_applied)
                }
                DeltaStatus::Failed(reason) => {
                    tracing::warn!(%account, token = %queued.token, %reason, "delta failed");
                    Some(&self.metrics.deltas_failed)
                }
                // Every delta of a batch is decided here.
                DeltaStatus::Pending => None,
            };
            if let Some(counter) = counter {
                counter.fetch_add(1, Ordering::Release);
            }
            self.deltas
                .statuses
                .set(queued.token, queued.sequence, status);
        }
        self.deltas
            .applied_through
            .store(last + 1, Ordering::Release);
    }
}
