//! Recovery, group commit, the interval policy, rotation and the backlog bound.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use super::format::segment_name;
use super::*;
use std::time::Duration;

fn config(dir: &Path, policy: SyncPolicy) -> WalConfig {
    WalConfig {
        dir: dir.join("wal"),
        segment_bytes: 4096,
        policy,
        first_sequence: 1,
    }
}

fn payloads(recovery: &Recovery) -> Vec<Vec<u8>> {
    recovery.records.iter().map(|r| r.payload.clone()).collect()
}

#[test]
fn appends_survive_reopening_across_segments() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let (wal, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
        assert!(recovery.records.is_empty());
        for i in 0..200u32 {
            let seq = wal
                .append(7, format!("record {i:03} {}", "x".repeat(50)).into_bytes())
                .unwrap();
            assert_eq!(seq, u64::from(i) + 1);
        }
    }
    assert!(
        segments(&tmp.path().join("wal")).unwrap().len() > 2,
        "rotated into several segments"
    );
    let (wal, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
    assert_eq!(recovery.records.len(), 200);
    assert_eq!(recovery.truncated, None);
    assert!(recovery.records.iter().all(|r| r.kind == 7));
    assert_eq!(wal.append(1, b"next".to_vec()).unwrap(), 201);
}

#[test]
fn a_torn_tail_is_cut_and_earlier_records_kept() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let (wal, _) = Wal::open(config(tmp.path(), SyncPolicy::Never)).unwrap();
        for i in 0..5u8 {
            wal.append(1, vec![i; 10]).unwrap();
        }
    }
    let (_, path) = segments(&tmp.path().join("wal")).unwrap().pop().unwrap();
    let len = fs::metadata(&path).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 4)
        .unwrap();
    let (wal, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
    assert_eq!(
        payloads(&recovery),
        (0..4u8).map(|i| vec![i; 10]).collect::<Vec<_>>()
    );
    assert!(
        recovery
            .truncated
            .as_deref()
            .unwrap()
            .contains("torn record"),
        "{:?}",
        recovery.truncated
    );
    assert_eq!(
        wal.append(1, b"after".to_vec()).unwrap(),
        5,
        "the cut record's sequence is reused"
    );
    drop(wal);
    let (_, again) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
    assert_eq!(again.records.len(), 5);
    assert_eq!(again.records.last().unwrap().payload, b"after");
}

#[test]
fn a_bad_crc_cuts_the_log_there_and_drops_later_segments() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let (wal, _) = Wal::open(config(tmp.path(), SyncPolicy::Never)).unwrap();
        for i in 0..150u32 {
            wal.append(2, format!("{i:04}{}", "y".repeat(60)).into_bytes())
                .unwrap();
        }
    }
    let dir = tmp.path().join("wal");
    let all = segments(&dir).unwrap();
    assert!(all.len() >= 3);
    let (first_of_second, second) = all.get(1).cloned().unwrap();
    let mut bytes = fs::read(&second).unwrap();
    let at = RECORD_HEADER + 20;
    bytes[at] ^= 0xff;
    fs::write(&second, bytes).unwrap();
    let (_, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
    assert_eq!(
        recovery.records.len() as u64,
        first_of_second - 1,
        "everything before the bad record"
    );
    assert!(
        recovery
            .truncated
            .as_deref()
            .unwrap()
            .contains("checksum mismatch")
    );
    assert_eq!(recovery.removed_segments, all.len() - 2);
    let kept: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
    assert_eq!(
        kept,
        (1..first_of_second).collect::<Vec<_>>(),
        "a prefix, never garbage"
    );
}

#[test]
fn empty_and_partial_segments_recover() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("wal");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(segment_name(1)), b"").unwrap();
    let (wal, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
    assert!(recovery.records.is_empty() && recovery.truncated.is_none());
    assert_eq!(wal.append(3, b"one".to_vec()).unwrap(), 1);
    drop(wal);
    // A partial header at the end (3 bytes of a length).
    let (_, path) = segments(&dir).unwrap().pop().unwrap();
    let mut file = OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(&[9, 0, 0]).unwrap();
    drop(file);
    let (_, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
    assert_eq!(payloads(&recovery), vec![b"one".to_vec()]);
    assert!(
        recovery
            .truncated
            .as_deref()
            .unwrap()
            .contains("torn record header")
    );
}

#[test]
fn a_log_behind_the_snapshot_position_goes_on_there_and_keeps_its_records() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let (wal, _) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
        for i in 0..3u8 {
            wal.append(1, vec![i]).unwrap();
        }
    }
    let covered = WalConfig {
        first_sequence: 10,
        ..config(tmp.path(), SyncPolicy::Always)
    };
    let (wal, recovery) = Wal::open(covered).unwrap();
    assert_eq!(payloads(&recovery), [[0], [1], [2]], "nothing is deleted");
    assert_eq!(recovery.resumed, Some((4, 10)));
    assert_eq!(recovery.next_sequence, 11, "10 is the gap record");
    assert_eq!(wal.append(1, b"eleven".to_vec()).unwrap(), 11);
    drop(wal);
    // Reopened, the gap is part of the log: nothing is cut, nothing resumed.
    let (wal, recovery) = Wal::open(WalConfig {
        first_sequence: 5,
        ..config(tmp.path(), SyncPolicy::Always)
    })
    .unwrap();
    assert_eq!(
        payloads(&recovery),
        [
            b"\x00".to_vec(),
            b"\x01".to_vec(),
            b"\x02".to_vec(),
            b"eleven".to_vec()
        ]
    );
    let sequences: Vec<u64> = recovery.records.iter().map(|r| r.sequence).collect();
    assert_eq!(sequences, [1, 2, 3, 11]);
    assert_eq!(
        (recovery.truncated.as_deref(), recovery.resumed),
        (None, None)
    );
    assert_eq!(wal.append(1, b"twelve".to_vec()).unwrap(), 12);
    // `sync` returns the next sequence once everything before it is on disk.
    assert_eq!(wal.sync().unwrap(), 13);
}

#[test]
fn a_segment_lost_before_a_gap_is_still_a_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let small = || WalConfig {
        segment_bytes: 1024,
        ..config(tmp.path(), SyncPolicy::Always)
    };
    {
        let (wal, _) = Wal::open(small()).unwrap();
        for i in 0..40u8 {
            wal.append(1, vec![i; 100]).unwrap();
        }
    }
    {
        let (wal, recovery) = Wal::open(WalConfig {
            first_sequence: 100,
            ..small()
        })
        .unwrap();
        assert_eq!(recovery.resumed, Some((41, 100)));
        wal.append(1, b"after".to_vec()).unwrap();
    }
    let dir = tmp.path().join("wal");
    let all = segments(&dir).unwrap();
    assert!(all.len() >= 4, "{all:?}");
    // Lose a segment in the middle: the gap record names an end that no longer
    // matches, so recovery cuts there instead of accepting the hole.
    fs::remove_file(&all[1].1).unwrap();
    let recovery = recover(&dir).unwrap();
    assert!(recovery.truncated.is_some(), "{recovery:?}");
    assert!(recovery.records.iter().all(|r| r.sequence < all[1].0));
}

#[test]
fn group_commit_shares_fsyncs_between_concurrent_writers() {
    let tmp = tempfile::tempdir().unwrap();
    let (wal, _) = Wal::open(WalConfig {
        segment_bytes: 64 << 20,
        ..config(tmp.path(), SyncPolicy::Always)
    })
    .unwrap();
    let wal = Arc::new(wal);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let wal = Arc::clone(&wal);
            thread::spawn(move || {
                for i in 0..50 {
                    wal.append(1, format!("{t}-{i}").into_bytes()).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let stats = wal.stats();
    assert_eq!(stats.records.load(Ordering::Relaxed), 400);
    assert_eq!(
        stats.synced_records.load(Ordering::Relaxed),
        400,
        "always: every record synced before its ack"
    );
    assert!(stats.syncs.load(Ordering::Relaxed) <= 400);
    assert!(
        stats.records_per_sync_at(1.0) > 1,
        "some fsync covered several records"
    );
}

#[test]
fn interval_policy_syncs_within_the_interval_without_further_appends() {
    let tmp = tempfile::tempdir().unwrap();
    let (wal, _) = Wal::open(config(
        tmp.path(),
        SyncPolicy::Interval(Duration::from_millis(20)),
    ))
    .unwrap();
    wal.append(1, b"a".to_vec()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while wal.stats().synced_records.load(Ordering::Relaxed) < 1 {
        assert!(Instant::now() < deadline, "never synced");
        thread::sleep(Duration::from_millis(5));
    }
    wal.append_durable(1, b"b".to_vec()).unwrap();
    assert_eq!(
        wal.stats().synced_records.load(Ordering::Relaxed),
        2,
        "a durable append is synced before it returns"
    );
}

#[test]
fn interval_policy_fsyncs_a_batch_as_soon_as_it_is_written_not_on_its_timer() {
    let tmp = tempfile::tempdir().unwrap();
    // A window of ten minutes: its timer alone would sync after five.
    let (wal, _) = Wal::open(config(
        tmp.path(),
        SyncPolicy::Interval(Duration::from_secs(600)),
    ))
    .unwrap();
    for n in 0..3u8 {
        wal.append(1, vec![n]).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while wal.stats().synced_records.load(Ordering::Relaxed) < u64::from(n) + 1 {
            assert!(
                Instant::now() < deadline,
                "record {n} not fsynced within a minute"
            );
            thread::sleep(Duration::from_millis(5));
        }
        assert!(!wal.behind_window());
    }
}

#[test]
fn interval_policy_lets_records_gather_half_the_window_between_fsyncs() {
    let interval = |ms| linger(SyncPolicy::Interval(Duration::from_millis(ms)));
    assert_eq!(interval(10), LINGER_MAX);
    assert_eq!(interval(4), Duration::from_millis(2));
    assert_eq!(interval(1), Duration::from_micros(500));
    assert_eq!(interval(600_000), LINGER_MAX);
    assert_eq!(linger(SyncPolicy::Never), LINGER);

    // Records handed over back to back for a tenth of a second under a 40 ms window:
    // one fsync per batch, batches at least `LINGER_MAX` apart (a writer kept from the
    // CPU only makes fewer).
    let tmp = tempfile::tempdir().unwrap();
    let mut config = config(tmp.path(), SyncPolicy::Interval(Duration::from_millis(40)));
    config.segment_bytes = 64 << 20;
    let (wal, _) = Wal::open(config).unwrap();
    let started = Instant::now();
    let mut records = 0u64;
    while started.elapsed() < Duration::from_millis(100) {
        wal.append_unwaited(1, vec![0; 32]).unwrap();
        records += 1;
        thread::sleep(Duration::from_micros(100));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while wal.stats().synced_records.load(Ordering::Relaxed) < records {
        assert!(
            Instant::now() < deadline,
            "records not fsynced within a minute"
        );
        thread::sleep(Duration::from_millis(5));
    }
    let elapsed = started.elapsed();
    let syncs = wal.stats().syncs.load(Ordering::Relaxed);
    let most = elapsed.as_micros() / LINGER_MAX.as_micros() + 2;
    assert!(
        u128::from(syncs) <= most,
        "{syncs} fsyncs for {records} records in {elapsed:?} (at most {most})"
    );
}

#[test]
fn remove_before_keeps_segments_with_later_records() {
    let tmp = tempfile::tempdir().unwrap();
    let (wal, _) = Wal::open(config(tmp.path(), SyncPolicy::Never)).unwrap();
    for _ in 0..150 {
        wal.append(1, vec![0; 60]).unwrap();
    }
    let before = segments(&tmp.path().join("wal")).unwrap();
    let (second_first, _) = before.get(1).cloned().unwrap();
    assert_eq!(wal.remove_before(second_first).unwrap(), 1);
    assert_eq!(
        wal.remove_before(u64::MAX).unwrap(),
        before.len() - 2,
        "the current segment stays"
    );
    drop(wal);
    let (_, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Never)).unwrap();
    assert_eq!(recovery.records.last().unwrap().sequence, 150);
}

#[test]
fn appends_beyond_the_backlog_are_refused_and_the_rest_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let (wal, _) = Wal::open(config(tmp.path(), SyncPolicy::Never)).unwrap();
    wal.set_max_backlog(3);
    // The writer lingers after each batch, so appends made in a tight loop pile up
    // behind it: some are refused, none waits.
    let mut accepted = 0u64;
    let mut refused = 0u64;
    for i in 0..10_000u32 {
        match wal.append_under_policy(1, i.to_le_bytes().to_vec()) {
            Ok(_) => accepted += 1,
            Err(Error::Backlog { waiting, limit }) => {
                assert_eq!(limit, 3);
                assert!(waiting >= 3);
                refused += 1;
            }
            Err(other) => panic!("{other}"),
        }
    }
    assert!(refused > 0, "no append was refused");
    // An append that must be logged waits for room instead (a bound of 0: it waits
    // for an empty backlog).
    wal.set_max_backlog(0);
    assert!(matches!(
        wal.append_under_policy(1, b"refused".to_vec()),
        Err(Error::Backlog { .. })
    ));
    for i in 0..100u32 {
        wal.append_under_policy_waiting(1, i.to_le_bytes().to_vec())
            .unwrap();
    }
    accepted += 100;
    // Appends that wait for their outcome are not refused, and everything accepted
    // is in the log.
    wal.append_durable(1, b"durable".to_vec()).unwrap();
    let next = wal.sync().unwrap();
    assert_eq!(next, 1 + accepted + 1);
    assert_eq!(wal.stats().waiting.load(Ordering::Relaxed), 0);
    drop(wal);
    let (_, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Never)).unwrap();
    assert_eq!(recovery.next_sequence, 1 + accepted + 1);
}

/// Each policy, `interval`'s an hour long: nothing is kept by its tick during a test.
const EVERY_POLICY: [SyncPolicy; 3] = [
    SyncPolicy::Always,
    SyncPolicy::Interval(Duration::from_secs(3600)),
    SyncPolicy::Never,
];

/// A record's hand-over (what its append returns) is held once the writer has kept it
/// as the policy keeps records, without anyone asking for an fsync: at once under
/// `always`, after the batch's group commit under `interval`, once written under
/// `never`.
#[test]
fn a_record_is_held_once_kept_as_its_policy_keeps_records() {
    for policy in EVERY_POLICY {
        let tmp = tempfile::tempdir().unwrap();
        let (wal, _) = Wal::open(config(tmp.path(), policy)).unwrap();
        let handed = wal.append_unwaited(1, b"one".to_vec()).unwrap();
        wait_held(&wal, handed, policy);
        // Written and kept: a reopened log has it.
        drop(wal);
        let (_, recovery) = Wal::open(config(tmp.path(), policy)).unwrap();
        assert_eq!(payloads(&recovery), vec![b"one".to_vec()], "{policy:?}");
    }
}

/// A hand-over read after the writer has written the record and gone idle (the
/// appender preempted between its send and its clock read) is held too, under every
/// policy, without another append: the idle writer marks what it has kept.
#[test]
fn a_hand_over_read_after_the_record_was_written_is_held_without_another_append() {
    for policy in EVERY_POLICY {
        let tmp = tempfile::tempdir().unwrap();
        let (wal, _) = Wal::open(config(tmp.path(), policy)).unwrap();
        wal.append(1, b"one".to_vec()).unwrap();
        // As late as an appender preempted after its send would read it.
        let late = wal.handed();
        wait_held(&wal, late, policy);
    }
}

/// Waits, a minute at most, until `wal` holds the record of `handed`.
fn wait_held(wal: &Wal, handed: Handed, policy: SyncPolicy) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !wal.holds(handed) {
        assert!(Instant::now() < deadline, "{policy:?}: never held");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A record the writer encodes: its bytes, or no encoding at all.
#[derive(Debug)]
struct Later(Option<Vec<u8>>);

impl Encode for Later {
    fn encode(&self) -> std::result::Result<Vec<u8>, WalError> {
        self.0
            .clone()
            .ok_or_else(|| WalError::Unencodable("no bytes".to_owned()))
    }
}

/// A payload the writer encodes into `bytes`.
fn later(bytes: &[u8]) -> Payload {
    Payload::Deferred(Box::new(Later(Some(bytes.to_vec()))))
}

/// Records the writer encodes are written in their place among the others, with the
/// bytes their encoder gives, under every policy's way of appending.
#[test]
fn records_the_writer_encodes_are_written_in_order_with_their_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let (wal, _) = Wal::open(config(tmp.path(), SyncPolicy::Never)).unwrap();
        wal.append(1, b"given".to_vec()).unwrap();
        wal.append(2, later(b"encoded, waited")).unwrap();
        wal.append_unwaited(3, later(b"encoded, unwaited")).unwrap();
        wal.append_under_policy(4, later(b"encoded, under the policy"))
            .unwrap();
        wal.sync().unwrap();
    }
    let (_, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Never)).unwrap();
    let kinds: Vec<u8> = recovery.records.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [1, 2, 3, 4]);
    assert_eq!(
        payloads(&recovery),
        [
            &b"given"[..],
            b"encoded, waited",
            b"encoded, unwaited",
            b"encoded, under the policy"
        ]
    );
    assert_eq!(later(b"now").into_bytes().unwrap(), b"now");
}

/// A record its encoder cannot encode fails the log as a failed write does: refused,
/// and nothing handed over after it written; what came before is kept.
#[test]
fn a_record_that_cannot_be_encoded_stops_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let (wal, _) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
        wal.append(1, b"before".to_vec()).unwrap();
        let refused = wal.append(2, Payload::Deferred(Box::new(Later(None))));
        assert!(
            matches!(refused, Err(Error::Wal(WalError::Unencodable(_)))),
            "{refused:?}"
        );
        let after = wal.append(3, b"after".to_vec());
        assert!(
            matches!(after, Err(Error::Wal(WalError::Stopped(_)))),
            "{after:?}"
        );
    }
    let (_, recovery) = Wal::open(config(tmp.path(), SyncPolicy::Always)).unwrap();
    assert_eq!(payloads(&recovery), [b"before".to_vec()]);
}
