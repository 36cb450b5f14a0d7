use std::time::{Duration, Instant};

use serde_json::json;
use vitrine_engine::catalogue::CatalogueBuilder;

use super::*;
use crate::delta::{self, Delta};
use std::fs;
use std::path::Path;
use vitrine_fields::{Errors, Fields, KeyMatch};
use vitrine_testkit::{self as testkit, records};

fn wait_for(jobs: &AccountJobs, token: &str) -> DeltaStatus {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = jobs.delta_status(token);
        if status != DeltaStatus::Pending {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "delta {token} still pending after 60 s"
        );
        thread::sleep(Duration::from_millis(2));
    }
}

fn account() -> Arc<Account> {
    Arc::new(testkit::account(Vec::new(), testkit::catalogue([])))
}

fn config() -> JobsConfig {
    JobsConfig {
        wal_segment_bytes: 4096,
        ..JobsConfig::with_pool(ingest_pool_at(1, BackgroundPriority::Normal).unwrap())
    }
}

fn start(dir: &Path, base_position: u64, config: JobsConfig) -> (AccountJobs, Recovery) {
    AccountJobs::start(account(), dir, base_position, config).unwrap()
}

/// Restarts like the server: newest snapshot, users file, then the log past it.
fn restart(dir: &Path) -> (AccountJobs, Recovery) {
    let (restored, skipped) = store::restore(dir).unwrap();
    assert!(skipped.is_empty(), "{skipped:?}");
    let (catalogue, position) = restored.map_or_else(
        || (testkit::catalogue([]), 0),
        |r| (r.catalogue, r.position),
    );
    let account = Arc::new(testkit::account(Vec::new(), catalogue));
    account.replace_users(store::restore_users(dir).0);
    AccountJobs::start(account, dir, position, config()).unwrap()
}

fn submit_nowait(jobs: &AccountJobs, body: serde_json::Value) -> String {
    let mut errors = Errors::default();
    let fields = Fields::of(&body, "", KeyMatch::Exact, &mut errors).unwrap();
    let delta = delta::parse(&fields).unwrap();
    jobs.submit_delta(delta, body.to_string().as_bytes())
        .unwrap()
}

fn submit(jobs: &AccountJobs, body: serde_json::Value) -> String {
    let token = submit_nowait(jobs, body);
    wait_for(jobs, &token);
    token
}

fn product(id: &str, title: &str) -> serde_json::Value {
    records::with(records::product(id, "1 GBP"), json!({"Title": title}))
}

fn title(jobs: &AccountJobs, id: &str) -> Option<String> {
    let catalogue = jobs.account().catalogue();
    let idx = catalogue.idx_of(id)?;
    Some(catalogue.product(idx)?.title.to_string())
}

fn feed(jobs: &AccountJobs, products: &[(&str, &str)]) -> FeedStatus {
    let records: Vec<serde_json::Value> = products.iter().map(|(id, t)| product(id, t)).collect();
    let mut bytes = serde_json::to_vec(&records).unwrap();
    crate::runner::apply(jobs, &mut bytes, jobs.pool(), &|_| {})
}

#[test]
fn deltas_apply_in_token_order_and_report_status() {
    let dir = tempfile::tempdir().unwrap();
    let (jobs, _) = start(dir.path(), 0, config());
    let t1 = submit_nowait(
        &jobs,
        json!({"DeleteAccountPrices": [{"AccountId": "a", "Id": "nope"}]}),
    );
    let t2 = submit_nowait(&jobs, json!({"Products": [product("p1", "one")]}));
    let t3 = submit_nowait(
        &jobs,
        json!({"AccountPrices": [{"AccountId": "a", "Id": "p1", "Prices": ["2 GBP"]}]}),
    );
    assert_eq!(wait_for(&jobs, &t3), DeltaStatus::Applied);
    assert_eq!(wait_for(&jobs, &t2), DeltaStatus::Applied);
    assert_eq!(
        wait_for(&jobs, &t1),
        DeltaStatus::Failed("unknown product ids in DeleteAccountPrices: nope".into())
    );
    assert!(
        jobs.account()
            .catalogue()
            .account_prices("a", "p1")
            .is_some()
    );
    assert_eq!(
        jobs.delta_status("dlt_other"),
        DeltaStatus::Failed(UNKNOWN_TOKEN.into())
    );
    assert_eq!(
        jobs.applied_through(),
        4,
        "log sequences 1 to 3 are applied"
    );
    jobs.shutdown();
    assert!(matches!(
        jobs.submit_delta(Delta::default(), b"{}"),
        Err(SubmitError::Closed)
    ));
}

#[test]
fn logged_deltas_and_feeds_survive_a_restart_and_a_torn_tail_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let (t1, t2, feed_token) = {
        let (jobs, _) = start(dir.path(), 0, config());
        let t1 = submit(
            &jobs,
            json!({"Products": [product("p1", "one"), product("p2", "two")]}),
        );
        let t2 = submit(
            &jobs,
            json!({"DeleteProducts": ["p1"], "SetCategoryOnProducts": [{"Category": "c", "Products": ["zz"]}]}),
        );
        let feed_token = jobs
            .submit_feed("https://shop.example/feed.json", 42)
            .unwrap();
        (t1, t2, feed_token)
    };
    // A record torn by the crash: half of a header at the end of the last segment.
    let (_, last) = wal::segments(&dir.path().join("wal"))
        .unwrap()
        .pop()
        .unwrap();
    let intact = fs::metadata(&last).unwrap().len();
    let mut bytes = fs::read(&last).unwrap();
    bytes.extend_from_slice(&[200, 0, 0, 0, 1, 2]);
    fs::write(&last, bytes).unwrap();

    let (jobs, recovery) = restart(dir.path());
    assert_eq!(recovery.deltas, 2);
    assert_eq!(recovery.feeds, 1);
    assert!(
        recovery
            .truncated
            .as_deref()
            .is_some_and(|cut| cut.contains("torn record header")),
        "{recovery:?}"
    );
    assert_eq!(fs::metadata(&last).unwrap().len(), intact, "cut back");
    assert_eq!(jobs.delta_status(&t1), DeltaStatus::Applied);
    assert!(matches!(jobs.delta_status(&t2), DeltaStatus::Failed(r) if r.contains("zz")));
    assert_eq!(jobs.account().catalogue().len(), 2);
    assert_eq!(jobs.feed_status(&feed_token), FeedStatus::Processing);
    assert_eq!(jobs.queued_feeds()[0].url, "https://shop.example/feed.json");
    // New deltas continue the log after the last intact record.
    let t3 = submit(&jobs, json!({"DeleteProducts": ["p2"]}));
    assert_eq!(jobs.delta_status(&t3), DeltaStatus::Applied);
    assert_eq!(jobs.applied_through(), 4);
}

#[test]
fn a_feed_reapplies_the_deltas_accepted_while_it_was_built() {
    let dir = tempfile::tempdir().unwrap();
    let (before, during) = {
        let (jobs, _) = start(dir.path(), 0, config());
        let before = submit(
            &jobs,
            json!({"Products": [product("old", "from a delta before the feed")],
                   "Users": [{"UserId": "u1", "Email": "u1@example.com"}]}),
        );
        let mut during = String::new();
        let report = jobs
            .rebuild(RebuildKind::Feed, |current| {
                assert!(current.idx_of("old").is_some());
                // A delta accepted and applied while the new base is being built.
                during = submit(
                    &jobs,
                    json!({"Products": [product("f1", "changed by a delta")],
                           "Users": [{"UserId": "u2"}]}),
                );
                assert_eq!(jobs.delta_status(&during), DeltaStatus::Applied);
                let mut builder = CatalogueBuilder::new();
                let mut errors = Errors::default();
                for (id, t) in [("f1", "from the feed"), ("f2", "from the feed")] {
                    let record = product(id, t);
                    builder
                        .upsert_product(crate::record::product(&record, "", &mut errors).unwrap());
                }
                Ok(Rebuilt {
                    catalogue: builder
                        .build()
                        .map_err(|e| RebuildError::Build(e.to_string()))?,
                    users: Some(Vec::new()),
                })
            })
            .unwrap();
        assert_eq!(report.reapplied, 1);
        assert_eq!(report.saved.position, 2, "the feed comes after delta 1");
        assert!(jobs.account().catalogue().is_mapped());
        assert_eq!(title(&jobs, "f1").as_deref(), Some("changed by a delta"));
        assert_eq!(title(&jobs, "f2").as_deref(), Some("from the feed"));
        assert!(title(&jobs, "old").is_none(), "the feed replaced it");
        assert!(
            jobs.account().user("u1").is_none(),
            "the feed's users replace"
        );
        assert!(
            jobs.account().user("u2").is_some(),
            "a later delta's user stays"
        );
        (before, during)
    };
    let (jobs, recovery) = restart(dir.path());
    assert_eq!(recovery.deltas, 1, "only the delta past the snapshot");
    assert_eq!(title(&jobs, "f1").as_deref(), Some("changed by a delta"));
    assert!(title(&jobs, "old").is_none());
    assert_eq!(jobs.delta_status(&before), DeltaStatus::Applied);
    assert_eq!(jobs.delta_status(&during), DeltaStatus::Applied);
    assert!(jobs.account().user("u2").is_some());
}

#[test]
fn a_large_overlay_is_compacted_and_the_log_truncated_behind_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = JobsConfig {
        compact_after_changes: 20,
        ..config()
    };
    let mut tokens = Vec::new();
    {
        let (jobs, _) = start(dir.path(), 0, config);
        for round in 0..60 {
            let big = "x".repeat(300);
            tokens.push(submit(
                &jobs,
                json!({"Products": [product(&format!("p{round}"), &big)]}),
            ));
        }
        // The compactor builds on the ingest pool, at the lowest priority: on a busy
        // machine it gets the CPU last, so the bound is generous.
        let deadline = Instant::now() + Duration::from_secs(120);
        while jobs.account().catalogue().overlay_size() >= 20 {
            assert!(Instant::now() < deadline, "no compaction within 120 s");
            thread::sleep(Duration::from_millis(10));
        }
        // Wait for the compactor to finish its last round.
        drop(jobs.shared.locks.rebuild());
        assert_eq!(jobs.account().catalogue().len(), 60);
        let snapshots = vitrine_snapshots::snapshot::list(dir.path(), store::PREFIX).unwrap();
        assert!(!snapshots.is_empty() && snapshots.len() <= store::KEEP);
        let segments = wal::segments(&dir.path().join("wal")).unwrap();
        assert!(
            segments.first().unwrap().0 > 1,
            "segments behind the snapshots are deleted: {segments:?}"
        );
    }
    let (jobs, _) = restart(dir.path());
    assert_eq!(jobs.account().catalogue().len(), 60);
    for token in &tokens {
        assert_eq!(jobs.delta_status(token), DeltaStatus::Applied, "{token}");
    }
    assert_eq!(title(&jobs, "p59").unwrap().len(), 300);
}

#[test]
fn feeds_prune_snapshots_and_the_log_only_behind_the_oldest_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (jobs, _) = start(dir.path(), 0, config());
    for round in 0..3 {
        submit(
            &jobs,
            json!({"Products": [product(&format!("d{round}"), &"y".repeat(3000))]}),
        );
        assert!(matches!(
            feed(&jobs, &[("f", "feed")]),
            FeedStatus::Complete { .. }
        ));
    }
    let snapshots = vitrine_snapshots::snapshot::list(dir.path(), store::PREFIX).unwrap();
    assert_eq!(
        snapshots.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        [3, 2]
    );
    // Snapshot 2 covers deltas 1 and 2: the segment holding them is deleted, the one
    // from delta 3 on is kept.
    let segments = wal::segments(&dir.path().join("wal")).unwrap();
    assert_eq!(
        segments.iter().map(|(first, _)| *first).collect::<Vec<_>>(),
        [3]
    );
    drop(jobs);
    let (jobs, recovery) = restart(dir.path());
    assert_eq!(recovery.deltas, 0, "every delta is in the newest snapshot");
    assert_eq!(jobs.account().catalogue().len(), 1);
}

#[test]
fn a_log_that_cannot_be_written_refuses_the_submission() {
    let dir = tempfile::tempdir().unwrap();
    let (jobs, _) = start(dir.path(), 0, config());
    submit(
        &jobs,
        json!({"Products": [product("p", &"z".repeat(5000))]}),
    );
    // The next append must start a segment, in a directory that is now a file.
    fs::rename(dir.path().join("wal"), dir.path().join("wal.moved")).unwrap();
    fs::write(dir.path().join("wal"), b"in the way").unwrap();
    let mut errors = Errors::default();
    let body = json!({"DeleteProducts": ["p"]});
    let fields = Fields::of(&body, "", KeyMatch::Exact, &mut errors).unwrap();
    let error = jobs
        .submit_delta(delta::parse(&fields).unwrap(), b"{}")
        .unwrap_err()
        .to_string();
    assert!(error.contains("could not be saved"), "{error}");
    assert!(jobs.account().catalogue().idx_of("p").is_some());
    // Feed submissions are journaled as files and refused the same way.
    fs::remove_dir_all(dir.path().join("feeds")).unwrap();
    fs::write(dir.path().join("feeds"), b"not a directory").unwrap();
    let error = jobs
        .submit_feed("https://shop.example/f", 1)
        .unwrap_err()
        .to_string();
    assert!(error.contains("could not be saved"), "{error}");
    assert!(jobs.queued_feeds().is_empty());
}

#[test]
fn streamed_feeds_spool_close_into_a_job_and_expire_when_abandoned() {
    let dir = tempfile::tempdir().unwrap();
    let (jobs, _) = start(dir.path(), 0, config());
    assert_eq!(
        StreamKind::of_name("orders-6b03e5f0b933c"),
        Some(StreamKind::Orders)
    );
    for bad in ["product", "product-", "product-XYZ", "products-1a", "-1a"] {
        assert!(StreamKind::of_name(bad).is_none(), "{bad}");
    }
    jobs.stream_create("product-1a", b"[", 1024).unwrap();
    jobs.stream_append("product-1a", br#"{"Id":"p"}"#, 1024)
        .unwrap();
    jobs.stream_create("brand-2b", b"[", 1024).unwrap();
    assert_eq!(jobs.open_streams(), ["brand-2b", "product-1a"]);
    // A restart keeps the open spools.
    drop(jobs);
    let (jobs, _) = start(dir.path(), 0, config());
    assert_eq!(jobs.open_streams(), ["brand-2b", "product-1a"]);
    let token = jobs
        .stream_close("product-1a", Some(b"]"), 1024, 7)
        .unwrap();
    assert_eq!(token, "product-1a");
    assert_eq!(
        fs::read(jobs.streamed_feed_path(&token)).unwrap(),
        br#"[{"Id":"p"}]"#
    );
    let job = jobs.feed_job(&token).unwrap();
    assert!(job.streamed && job.status == FeedStatus::Processing);
    assert!(matches!(
        jobs.stream_append("product-1a", b"x", 1024),
        Err(StreamError::Unknown(_))
    ));
    // The job file says it was streamed, across a restart too.
    drop(jobs);
    let (jobs, _) = start(dir.path(), 0, config());
    assert!(jobs.feed_job("product-1a").unwrap().streamed);
    // Abandoned: nothing for longer than the idle limit.
    assert!(jobs.expire_streams(Duration::from_secs(3600)).is_empty());
    assert_eq!(jobs.expire_streams(Duration::ZERO), ["brand-2b"]);
    assert!(jobs.open_streams().is_empty());
    assert!(!dir.path().join("streams/brand-2b.part").exists());
}

#[test]
fn delta_statuses_in_memory_are_bounded_and_the_oldest_decided_forgotten() {
    let statuses = status::DeltaStatuses::default();
    statuses.set("pending".into(), 0, DeltaStatus::Pending);
    let decided = STATUSES_KEPT + STATUSES_KEPT / 10 - 1;
    for sequence in 1..=decided as u64 {
        statuses.set(format!("t{sequence}"), sequence, DeltaStatus::Applied);
    }
    // At the bound plus a tenth, nothing forgotten yet; one more, and the oldest go.
    assert_eq!(statuses.len(), decided + 1);
    statuses.set("newest".into(), decided as u64 + 1, DeltaStatus::Applied);
    assert_eq!(statuses.len(), STATUSES_KEPT);
    assert_eq!(statuses.get("t1"), None);
    assert_eq!(statuses.get("newest"), Some(DeltaStatus::Applied));
    assert_eq!(
        statuses.get(&format!("t{decided}")),
        Some(DeltaStatus::Applied)
    );
    // A delta still pending is never forgotten.
    assert_eq!(statuses.get("pending"), Some(DeltaStatus::Pending));
}

#[test]
fn finished_feed_jobs_are_bounded_and_the_oldest_forgotten_with_their_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (jobs, _) = AccountJobs::start(account(), tmp.path(), 0, config()).unwrap();
    let mut tokens = Vec::new();
    for i in 0..30u32 {
        let token = jobs
            .submit_feed(
                &format!("https://feeds.example/{i}.json"),
                1_000 + i64::from(i),
            )
            .unwrap();
        tokens.push(token);
    }
    for token in tokens.iter().skip(1) {
        jobs.finish_feed(token, FeedStatus::Complete { detail: None })
            .unwrap();
    }
    // The first one is still processing: never forgotten.
    jobs.forget_oldest_feeds(10);
    assert_eq!(jobs.feed_status(&tokens[0]), FeedStatus::Processing);
    assert_eq!(
        jobs.feed_status(&tokens[1]),
        FeedStatus::Failed(UNKNOWN_TOKEN.to_owned())
    );
    assert!(
        !tmp.path()
            .join("feeds")
            .join(format!("{}.job", tokens[1]))
            .exists()
    );
    assert_eq!(
        jobs.feed_status(&tokens[29]),
        FeedStatus::Complete { detail: None }
    );
    assert!(
        tmp.path()
            .join("feeds")
            .join(format!("{}.job", tokens[29]))
            .exists()
    );
    let kept = tokens
        .iter()
        .filter(|t| jobs.feed_status(t) != FeedStatus::Failed(UNKNOWN_TOKEN.to_owned()))
        .count();
    assert_eq!(kept, 10);
    jobs.shutdown();
}

/// A record read from the replicated log is applied and logged while the log writer's
/// backlog is at its bound (serving is refused then): a refusal would stop the
/// account's replication for good.
#[test]
fn a_replicated_record_is_applied_while_serving_is_refused_for_the_backlog() {
    use vitrine_engine::event::Event;
    use vitrine_engine::state::Tracked;
    let tmp = tempfile::tempdir().unwrap();
    let (jobs, _) = start(tmp.path(), 0, config());
    jobs.set_max_log_backlog(0);
    let tracked = Tracked {
        visitor_id: "elsewhere".to_owned(),
        session_id: "s".to_owned(),
        now: 1_800_000_000_000,
        events: vec![Event::ProductView { id: "p1".into() }].into(),
    };
    let payload = log::encode_tracked(&tracked).unwrap();
    assert!(matches!(
        jobs.shared
            .wal
            .append_under_policy(RecordKind::Events.code(), payload.clone()),
        Err(vitrine_snapshots::Error::Backlog { .. })
    ));
    let applied = jobs
        .apply_replicated(1, 7, RecordKind::Events, &payload)
        .unwrap();
    assert!(matches!(applied, replica::Applied::Applied), "{applied:?}");
    assert_eq!(jobs.stream_position(), 1);
    assert_eq!(jobs.account().visitor_count(), 1);
    // Logged: a restart replays it.
    jobs.shared.wal.sync().unwrap();
    drop(jobs);
    let (restarted, _) = restart(tmp.path());
    assert_eq!(restarted.account().visitor_count(), 1);
    assert_eq!(restarted.stream_position(), 1);
}

/// An erasure read from a cluster's replicated log carries only the identifier's keyed
/// hash: the node finds the person by it, erases them, and logs the erasure as one of
/// its own, which a restart applies again.
#[test]
fn a_hashed_erasure_from_the_replicated_log_finds_and_erases_the_person() {
    use vitrine_engine::event::Event;
    use vitrine_engine::state::Tracked;
    let tmp = tempfile::tempdir().unwrap();
    let (jobs, _) = start(tmp.path(), 0, config());
    jobs.set_cluster_erasure_key(b"the account's secret");
    let customer = Event::CustomerDetails {
        identity: Box::new(vitrine_engine::event::Identity {
            email: Some("Erase.Me@Example.com".to_owned()),
            ..Default::default()
        }),
        details: Default::default(),
    };
    let tracked = Tracked {
        visitor_id: "visitor-to-erase".to_owned(),
        session_id: "s".to_owned(),
        now: 1_800_000_000_000,
        events: vec![customer, Event::ProductView { id: "p1".into() }].into(),
    };
    let payload = log::encode_tracked(&tracked).unwrap();
    jobs.apply_replicated(1, 7, RecordKind::Events, &payload)
        .unwrap();
    assert_eq!(jobs.account().visitor_count(), 1);

    // Another key finds nobody; the account's finds the person by their email.
    let elsewhere = crate::erasure::keyed_hash(b"another account", "erase.me@example.com");
    let applied = jobs
        .apply_replicated(2, 7, RecordKind::ForgetHashed, &elsewhere)
        .unwrap();
    assert!(matches!(applied, replica::Applied::Seen), "{applied:?}");
    assert_eq!(jobs.account().visitor_count(), 1);
    let hash = jobs.cluster_erasure_hash(" ERASE.me@example.com ");
    let applied = jobs
        .apply_replicated(3, 7, RecordKind::ForgetHashed, &hash)
        .unwrap();
    assert!(matches!(applied, replica::Applied::Applied), "{applied:?}");
    assert_eq!(jobs.account().visitor_count(), 0);
    assert_eq!(jobs.stream_position(), 3);
    drop(jobs);
    // The restart replays the events and then the erasure logged for them.
    let (restarted, _) = restart(tmp.path());
    assert_eq!(restarted.account().visitor_count(), 0);
    assert_eq!(restarted.stream_position(), 3);
}

/// A delta read twice from the cluster's replicated log (a publish retried past the
/// stream's duplicate window stores a second copy) is applied once: the second copy
/// neither sets its status back to pending nor undoes a later delta.
#[test]
fn a_second_copy_of_a_replicated_delta_is_seen_not_applied_again() {
    let tmp = tempfile::tempdir().unwrap();
    let (jobs, _) = start(tmp.path(), 0, config());
    let copy = |id: &str, title: &str| {
        let body = json!({"Products": [product(id, title)]});
        body.to_string().into_bytes()
    };
    let first = log::encode_delta("dlt_first", &copy("p1", "First"));
    let applied = jobs
        .apply_replicated(1, 7, RecordKind::Delta, &first)
        .unwrap();
    assert!(matches!(applied, replica::Applied::Applied), "{applied:?}");
    assert_eq!(wait_for(&jobs, "dlt_first"), DeltaStatus::Applied);
    let second = log::encode_delta("dlt_second", &copy("p1", "Second"));
    jobs.apply_replicated(2, 7, RecordKind::Delta, &second)
        .unwrap();
    assert_eq!(wait_for(&jobs, "dlt_second"), DeltaStatus::Applied);

    let again = jobs
        .apply_replicated(3, 7, RecordKind::Delta, &first)
        .unwrap();
    assert!(matches!(again, replica::Applied::Seen), "{again:?}");
    assert_eq!(jobs.delta_status("dlt_first"), DeltaStatus::Applied);
    assert_eq!(jobs.stream_position(), 3);
    // Applied after anything the copy could have queued: the catalogue keeps the
    // later delta.
    let marker = log::encode_delta("dlt_marker", &copy("p2", "Marker"));
    jobs.apply_replicated(4, 7, RecordKind::Delta, &marker)
        .unwrap();
    assert_eq!(wait_for(&jobs, "dlt_marker"), DeltaStatus::Applied);
    assert_eq!(title(&jobs, "p1").as_deref(), Some("Second"));
}

/// A cluster's snapshot set takes the delta statuses with its catalogue: while deltas
/// keep coming from the replicated log, every delta the set's statuses name is in the
/// set's catalogue (a node restored from it takes a delta it holds a status for as
/// read already, and would skip one the catalogue lacks).
#[test]
fn a_cluster_snapshot_names_no_delta_its_catalogue_lacks() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let tmp = tempfile::tempdir().unwrap();
    let (jobs, _) = start(tmp.path(), 0, config());
    let jobs = Arc::new(jobs);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (jobs, stop) = (Arc::clone(&jobs), Arc::clone(&stop));
        thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let body = json!({"Products": [product(&format!("q{n}"), "Q")]});
                let payload = log::encode_delta(&format!("dlt_{n}"), body.to_string().as_bytes());
                jobs.apply_replicated(n, 7, RecordKind::Delta, &payload)
                    .unwrap();
                // Paced, as a store's deltas are: a set waits for a moment with none
                // pending.
                thread::sleep(Duration::from_millis(2));
            }
            n
        })
    };
    let sets: Vec<std::path::PathBuf> = (0..40)
        .map(|set| {
            let out = tmp.path().join(format!("set-{set}"));
            fs::create_dir_all(&out).unwrap();
            jobs.cluster_snapshot(&out).unwrap();
            out
        })
        .collect();
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().unwrap();
    let mut named = 0;
    for out in &sets {
        let (restored, _) = store::restore(out).unwrap();
        let catalogue = restored.expect("the set's catalogue").catalogue;
        let statuses = super::status::DeltaStatuses::load(out);
        for n in 1..=written {
            if statuses.get(&format!("dlt_{n}")).is_some() {
                named += 1;
                assert!(
                    catalogue.idx_of(&format!("q{n}")).is_some(),
                    "{} names dlt_{n}; its catalogue lacks q{n}",
                    out.display()
                );
            }
        }
    }
    assert!(written > 40 && named > 0, "{written} deltas, {named} named");
}

/// Back-to-back deltas from the replicated log do not keep a cluster snapshot waiting:
/// its catalogue is taken at the delta worker's batch boundary, and its floor is the
/// position before the first delta still waiting, so every delta through the floor is
/// in the catalogue (a node restored from the set reads the stream after it).
#[test]
fn a_cluster_snapshot_is_taken_between_back_to_back_deltas() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let tmp = tempfile::tempdir().unwrap();
    let (jobs, _) = start(tmp.path(), 0, config());
    let jobs = Arc::new(jobs);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (jobs, stop) = (Arc::clone(&jobs), Arc::clone(&stop));
        thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let body = json!({"Products": [product(&format!("q{n}"), "Q")]});
                let payload = log::encode_delta(&format!("dlt_{n}"), body.to_string().as_bytes());
                jobs.apply_replicated(n, 7, RecordKind::Delta, &payload)
                    .unwrap();
            }
            n
        })
    };
    let mut floors = Vec::new();
    for set in 0..20 {
        let out = tmp.path().join(format!("set-{set}"));
        fs::create_dir_all(&out).unwrap();
        let taken = jobs.cluster_snapshot(&out).expect("a set between deltas");
        let (restored, _) = store::restore(&out).unwrap();
        let catalogue = restored.expect("the set's catalogue").catalogue;
        for n in 1..=taken.floors.catalogue {
            assert!(
                catalogue.idx_of(&format!("q{n}")).is_some(),
                "set {set}: its floor is {}, its catalogue lacks q{n}",
                taken.floors.catalogue
            );
        }
        floors.push(taken.floors.catalogue);
    }
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().unwrap();
    assert!(
        floors.iter().any(|floor| *floor > 0) && written > 20,
        "{written} deltas, floors {floors:?}"
    );
}
