//! Starting an account's jobs after a stop or a crash: [`AccountJobs::start`] restores
//! the newest valid state snapshot, opens the log (cutting a torn tail), applies again
//! every delta past the catalogue snapshot's position, replays tracking events and
//! erasures past the state snapshot's position in log order, reads the feed jobs, and
//! starts the delta worker and the compactor.

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::mpsc;
use std::thread;

use parking_lot::Mutex;
use vitrine_engine::Account;
use vitrine_snapshots::wal::{Record, Wal, WalConfig};

use super::feeds::queue::Feeds;
use super::locks::{Locks, SinceBase};
use super::log::{self, RecordKind};
use super::replica;
use super::status::{DeltaStatus, DeltaStatuses};
use super::streams::spool::Streams;
use super::worker::queue::{Deltas, Logged, Queued};
use super::{AccountJobs, JobsConfig, JobsMetrics, Recovery, Shared, SubmitError};
use crate::delta::{self, Mode};
use crate::erasure::Forgotten;
use crate::state;

impl AccountJobs {
    /// Opens the account's log in `dir`, applies again every delta at or past
    /// `base_position` (the log position of the account's starting catalogue, from its
    /// snapshot) and the tracking events and erasures past the restored state snapshot,
    /// then starts the delta worker and the compactor.
    pub fn start(
        account: Arc<Account>,
        dir: &Path,
        base_position: u64,
        config: JobsConfig,
    ) -> Result<(AccountJobs, Recovery), SubmitError> {
        let feed_dir = dir.join("feeds");
        fs::create_dir_all(&feed_dir).map_err(vitrine_snapshots::Error::io(
            "creating directory",
            &feed_dir,
        ))?;
        let (restored_state, skipped_states) = state::restore(dir, &account)?;
        let state_position = restored_state.as_ref().map_or(0, |s| s.position);
        let (wal, log) = Wal::open(WalConfig {
            dir: dir.join("wal"),
            segment_bytes: config.wal_segment_bytes,
            policy: config.sync,
            first_sequence: base_position.max(state_position).max(1),
        })?;
        let mut recovery = Recovery {
            truncated: log.truncated.clone(),
            resumed: log.resumed.map(|(ended, at)| {
                format!("the log ended at sequence {ended}, before a snapshot's position; it goes on at {at}, every record kept")
            }),
            problems: skipped_states
                .into_iter()
                .map(|problem| format!("skipping state snapshot {problem}"))
                .collect(),
            state: restored_state,
            ..Recovery::default()
        };

        let log::Unwrapped {
            records,
            replicated,
            unstored,
        } = log::unwrap_records(log.records, replica::port::outbox_mark(dir));
        let stream_position = replicated.max(replica::saved_position(dir));
        let statuses = DeltaStatuses::load(dir);
        let since_base = replay_deltas(&account, &records, base_position, &statuses, &mut recovery);
        replay_tracking(&account, &records, state_position, &mut recovery);
        // The campaigns of the restored history compiled against the zones now (the
        // records replayed compiled their own).
        super::campaigns::recompile(&account);
        let feeds = Feeds::load(&feed_dir, &mut recovery.problems)?;
        let streams = Streams::load(dir)?;
        recovery.feeds = feeds.len();

        let forgotten = Forgotten::load(dir, config.erasure_key);
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            account,
            wal,
            config,
            deltas: Deltas {
                statuses,
                applied_through: AtomicU64::new(log.next_sequence.max(base_position)),
                pending: AtomicU64::new(0),
                since_base: SinceBase::new(since_base),
                stream_pending: Mutex::new(std::collections::VecDeque::new()),
            },
            feeds,
            streams,
            forgotten,
            cluster_erasure_key: std::sync::OnceLock::new(),
            locks: Locks::default(),
            compaction_asked: AtomicBool::new(false),
            metrics: JobsMetrics::default(),
            replica: std::sync::OnceLock::new(),
            stream_position: AtomicU64::new(stream_position),
            stream_deltas_queued: AtomicU64::new(0),
            feed_hook: std::sync::OnceLock::new(),
            floors: super::Floors::load(dir),
            unstored: Mutex::new(unstored),
            applying: super::applying::Applying::default(),
        });
        Ok((AccountJobs::spawn(shared)?, recovery))
    }

    /// Starts the delta worker and the compactor of `shared`.
    fn spawn(shared: Arc<Shared>) -> Result<AccountJobs, SubmitError> {
        let key = shared.account.access_key().to_owned();
        let (compact_sender, compact_receiver) = mpsc::channel::<()>();
        let compactor_shared = Arc::clone(&shared);
        let compactor = thread::Builder::new()
            .name(format!("compact-{key}"))
            .spawn(move || {
                background();
                compactor_shared.run_compactor(&compact_receiver)
            })
            .map_err(vitrine_snapshots::Error::io(
                "starting the compactor for",
                &shared.dir,
            ))?;
        let (sender, receiver) = mpsc::channel::<Queued>();
        let worker_shared = Arc::clone(&shared);
        let worker_compact = compact_sender.clone();
        let worker = thread::Builder::new()
            .name(format!("delta-{key}"))
            .spawn(move || {
                background();
                worker_shared.run_worker(&receiver, &worker_compact)
            })
            .map_err(vitrine_snapshots::Error::io(
                "starting the delta worker for",
                &shared.dir,
            ))?;
        Ok(AccountJobs {
            shared,
            intake: Mutex::new(Some(sender)),
            worker: Mutex::new(Some(worker)),
            compactor: Mutex::new(Some((compact_sender, compactor))),
        })
    }
}

/// Applies every delta record at or past `base_position` to the account's catalogue,
/// in log order and in one new version, reaching the statuses already decided (a delta
/// reported applied is applied again leniently; one reported failed stays failed; an
/// undecided one is applied strictly). Returns the deltas applied, which make up the
/// overlay over the base.
fn replay_deltas(
    account: &Account,
    records: &[Record],
    base_position: u64,
    statuses: &DeltaStatuses,
    recovery: &mut Recovery,
) -> Vec<Logged> {
    let writer = account.writer();
    let mut edit = account.catalogue().edit();
    let mut since_base = Vec::new();
    let delta_records = records.iter().filter(|r| {
        RecordKind::of_code(r.kind) == Some(RecordKind::Delta) && r.sequence >= base_position
    });
    for record in delta_records {
        let (token, parsed) = log::decode_delta(&record.payload);
        let Some(token) = token else {
            recovery.problems.push(format!(
                "log record {}: not a delta record",
                record.sequence
            ));
            continue;
        };
        recovery.deltas += 1;
        let delta = match parsed {
            Ok(delta) => Arc::new(delta),
            Err(reason) => {
                recovery
                    .problems
                    .push(format!("log record {}: {reason}", record.sequence));
                let status =
                    DeltaStatus::Failed(format!("the logged delta could not be read: {reason}"));
                statuses.set(token, record.sequence, status);
                continue;
            }
        };
        let status = match statuses.get(&token) {
            Some(DeltaStatus::Failed(reason)) => DeltaStatus::Failed(reason),
            Some(DeltaStatus::Applied) => {
                let _ = delta::apply_to(&mut edit, &delta, Mode::Reapply);
                DeltaStatus::Applied
            }
            Some(DeltaStatus::Pending) | None => {
                match delta::apply_to(&mut edit, &delta, Mode::Strict) {
                    Ok(_) => DeltaStatus::Applied,
                    Err(error) => DeltaStatus::Failed(error.to_string()),
                }
            }
        };
        if status == DeltaStatus::Applied {
            since_base.push(Logged {
                sequence: record.sequence,
                delta,
            });
        }
        statuses.set(token, record.sequence, status);
    }
    writer.swap_catalogue(edit.finish());
    drop(writer);
    for logged in &since_base {
        delta::apply_users(account, &logged.delta);
    }
    since_base
}

/// Replays the tracking events and erasures at or past `state_position` (those the
/// restored state snapshot lacks), in log order.
fn replay_tracking(
    account: &Account,
    records: &[Record],
    state_position: u64,
    recovery: &mut Recovery,
) {
    for record in records.iter().filter(|r| r.sequence >= state_position) {
        match RecordKind::of_code(record.kind) {
            Some(RecordKind::Forget) => {
                account.forget(&String::from_utf8_lossy(&record.payload));
            }
            Some(RecordKind::Events) => match log::decode_tracked(&record.payload) {
                Ok(tracked) => {
                    account.replay(&tracked);
                    recovery.events += 1;
                }
                Err(reason) => recovery
                    .problems
                    .push(format!("log record {}: {reason}", record.sequence)),
            },
            Some(RecordKind::Served) => match log::decode_served(&record.payload) {
                Ok(served) => {
                    account.replay_served(&served);
                    recovery.events += 1;
                }
                Err(reason) => recovery
                    .problems
                    .push(format!("log record {}: {reason}", record.sequence)),
            },
            Some(RecordKind::Click) => match log::decode_click(&record.payload) {
                Ok(clicked) => {
                    account.record_click(&clicked);
                }
                Err(reason) => recovery
                    .problems
                    .push(format!("log record {}: {reason}", record.sequence)),
            },
            Some(RecordKind::Campaigns) => {
                super::campaigns::apply(account, &record.payload);
            }
            Some(
                RecordKind::Delta
                | RecordKind::Replicated
                | RecordKind::Outboxed
                | RecordKind::FeedSubmitted
                | RecordKind::FeedBuilt
                | RecordKind::ForgetHashed,
            )
            | None => {}
        }
    }
}

/// Puts the calling thread (a delta worker, a compactor) where background work runs.
fn background() {
    vitrine_snapshots::threads::place_current_thread(vitrine_snapshots::threads::Role::Background);
}
