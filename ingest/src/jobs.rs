//! Status tokens: the jobs behind `/api/delta` and `/api/productfeed`.
//!
//! Each account has one [`AccountJobs`]: a table of delta statuses, a table of feed
//! jobs, and one delta worker thread that applies the account's deltas in token order
//! (FIFO). A token is only ever visible to the account that received it.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::mpsc;
use std::thread;

use dashmap::DashMap;
use parking_lot::Mutex;
use vitrine_engine::Account;
use vitrine_engine::catalogue::UnixMillis;

use crate::delta::{self, Delta};

/// Status of a delta, as `/api/deltastatus` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeltaStatus {
    /// 0: accepted, not yet applied.
    Pending,
    /// 1: applied.
    Applied,
    /// 2: failed, with the reason.
    Failed(String),
}

impl DeltaStatus {
    /// The integer of the contract: 0, 1 or 2.
    pub fn code(&self) -> u8 {
        match self {
            DeltaStatus::Pending => 0,
            DeltaStatus::Applied => 1,
            DeltaStatus::Failed(_) => 2,
        }
    }
}

/// Status of a feed job, as `/api/productfeedstatus` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedStatus {
    /// Queued or running.
    Processing,
    /// Loaded and live.
    Complete,
    /// Failed, with a readable reason.
    Failed(String),
}

impl FeedStatus {
    /// The `Status` string of the contract.
    pub fn name(&self) -> &'static str {
        match self {
            FeedStatus::Processing => "Processing",
            FeedStatus::Complete => "Complete",
            FeedStatus::Failed(_) => "Error",
        }
    }
}

/// A submitted feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedJob {
    /// Its token.
    pub token: String,
    /// The URL to fetch.
    pub url: String,
    /// When it was submitted.
    pub submitted_at: UnixMillis,
    /// Where it stands.
    pub status: FeedStatus,
}

/// The reason given for a token this account never issued.
pub const UNKNOWN_TOKEN: &str = "unknown token";

/// One account's jobs and its delta worker.
#[derive(Debug)]
pub struct AccountJobs {
    deltas: Arc<DashMap<String, DeltaStatus>>,
    feeds: DashMap<String, FeedJob>,
    feed_queue: Mutex<VecDeque<String>>,
    sender: Mutex<Option<mpsc::Sender<(String, Delta)>>>,
    worker: Mutex<Option<thread::JoinHandle<()>>>,
}

impl AccountJobs {
    /// Starts the delta worker of `account`.
    pub fn start(account: Arc<Account>) -> std::io::Result<AccountJobs> {
        let deltas: Arc<DashMap<String, DeltaStatus>> = Arc::new(DashMap::new());
        let (sender, receiver) = mpsc::channel::<(String, Delta)>();
        let statuses = Arc::clone(&deltas);
        let name = format!("delta-{}", account.settings().access_key);
        let worker = thread::Builder::new().name(name).spawn(move || {
            for (token, delta) in receiver {
                let status = match delta::apply(&account, &delta) {
                    Ok(_) => DeltaStatus::Applied,
                    Err(error) => DeltaStatus::Failed(error.to_string()),
                };
                statuses.insert(token, status);
            }
        })?;
        Ok(AccountJobs {
            deltas,
            feeds: DashMap::new(),
            feed_queue: Mutex::new(VecDeque::new()),
            sender: Mutex::new(Some(sender)),
            worker: Mutex::new(Some(worker)),
        })
    }

    /// Queues a delta and returns its token; it is applied after every earlier one.
    pub fn submit_delta(&self, delta: Delta) -> Result<String, JobsClosed> {
        let token = format!("dlt_{}", vitrine_engine::account::new_id());
        self.deltas.insert(token.clone(), DeltaStatus::Pending);
        let sent = match self.sender.lock().as_ref() {
            Some(sender) => sender.send((token.clone(), delta)).is_ok(),
            None => false,
        };
        if !sent {
            self.deltas.remove(&token);
            return Err(JobsClosed);
        }
        Ok(token)
    }

    /// The status of a delta token; unknown tokens fail with [`UNKNOWN_TOKEN`].
    pub fn delta_status(&self, token: &str) -> DeltaStatus {
        self.deltas.get(token).map_or_else(
            || DeltaStatus::Failed(UNKNOWN_TOKEN.to_owned()),
            |s| s.clone(),
        )
    }

    /// Records a feed submission and returns its token.
    pub fn submit_feed(&self, url: &str, now: UnixMillis) -> String {
        let token = format!("feed_{}", vitrine_engine::account::new_id());
        self.feeds.insert(
            token.clone(),
            FeedJob {
                token: token.clone(),
                url: url.to_owned(),
                submitted_at: now,
                status: FeedStatus::Processing,
            },
        );
        self.feed_queue.lock().push_back(token.clone());
        token
    }

    /// The status of a feed token; unknown tokens are an error with [`UNKNOWN_TOKEN`].
    pub fn feed_status(&self, token: &str) -> FeedStatus {
        self.feeds.get(token).map_or_else(
            || FeedStatus::Failed(UNKNOWN_TOKEN.to_owned()),
            |job| job.status.clone(),
        )
    }

    /// Feed jobs waiting to be fetched, oldest first.
    pub fn queued_feeds(&self) -> Vec<FeedJob> {
        let queue = self.feed_queue.lock();
        queue
            .iter()
            .filter_map(|t| self.feeds.get(t).map(|j| j.clone()))
            .collect()
    }

    /// Stops taking deltas and waits until every queued one is applied.
    pub fn shutdown(&self) {
        self.sender.lock().take();
        if let Some(worker) = self.worker.lock().take() {
            let _ = worker.join();
        }
    }
}

impl Drop for AccountJobs {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The account's job queue no longer takes work (the server is stopping).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the server is shutting down and takes no more jobs")]
pub struct JobsClosed;

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use vitrine_engine::AccountSettings;
    use vitrine_engine::catalogue::CatalogueBuilder;
    use vitrine_engine::money::Currency;

    use super::*;

    fn wait_for(jobs: &AccountJobs, token: &str) -> DeltaStatus {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let status = jobs.delta_status(token);
            if status != DeltaStatus::Pending {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "delta {token} still pending after 10 s"
            );
            thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn deltas_apply_in_token_order_and_report_status() {
        let settings = AccountSettings {
            access_key: "k".into(),
            default_currency: Currency::from_code("GBP").unwrap(),
            zones: Vec::new(),
        };
        let account = Arc::new(Account::new(settings, CatalogueBuilder::new().build()));
        let jobs = AccountJobs::start(Arc::clone(&account)).unwrap();
        let fail = Delta {
            delete_account_prices: vec![crate::record::AccountPrice {
                account_id: "a".into(),
                product_id: "nope".into(),
                prices: Default::default(),
            }],
            ..Delta::default()
        };
        let ok = Delta {
            delete_products: vec!["x".into()],
            ..Delta::default()
        };
        let t1 = jobs.submit_delta(fail).unwrap();
        let t2 = jobs.submit_delta(ok).unwrap();
        assert_eq!(wait_for(&jobs, &t2), DeltaStatus::Applied);
        assert_eq!(
            wait_for(&jobs, &t1),
            DeltaStatus::Failed("unknown product ids in DeleteAccountPrices: nope".into())
        );
        assert_eq!(
            jobs.delta_status("dlt_other"),
            DeltaStatus::Failed(UNKNOWN_TOKEN.into())
        );
        jobs.shutdown();
        assert_eq!(jobs.submit_delta(Delta::default()), Err(JobsClosed));
    }

    #[test]
    fn feed_tokens_are_recorded() {
        let settings = AccountSettings {
            access_key: "k".into(),
            default_currency: Currency::from_code("GBP").unwrap(),
            zones: Vec::new(),
        };
        let account = Arc::new(Account::new(settings, CatalogueBuilder::new().build()));
        let jobs = AccountJobs::start(account).unwrap();
        let token = jobs.submit_feed("https://shop.example/feed.json", 1);
        assert_eq!(jobs.feed_status(&token), FeedStatus::Processing);
        assert_eq!(jobs.queued_feeds().len(), 1);
        assert_eq!(
            jobs.feed_status("feed_x"),
            FeedStatus::Failed(UNKNOWN_TOKEN.into())
        );
    }
}
