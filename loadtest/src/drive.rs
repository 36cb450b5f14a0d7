//! Sends the shoppers' requests and records what came back.
//!
//! Closed loop (`--connections C`): each connection sends its next request as soon as
//! the previous answer arrived; the figure is peak throughput. Open loop (`--rate R`):
//! a dispatcher thread releases request slots at a constant rate, the connections take
//! them in order, and each round trip is measured from the slot's scheduled time, so a
//! stall shows in every request it delayed (no coordinated omission). Requests sent in
//! the warm-up are not recorded; the others are recorded by the phase they were
//! scheduled in (idle, or during a feed ingest).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::client::conn::http1::SendRequest;

use vitrine_benches::traffic::{Clicks, Credentials, Mix, Shelf, Shopper, ZoneMap};

/// Where in the run a request was scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Phase {
    Warmup = 0,
    Idle = 1,
    Ingest = 2,
    Done = 3,
}

impl Phase {
    fn from_u8(value: u8) -> Phase {
        match value {
            0 => Phase::Warmup,
            1 => Phase::Idle,
            2 => Phase::Ingest,
            _ => Phase::Done,
        }
    }
}

/// How requests are paced.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pacing {
    /// Back to back on each of this many connections.
    Closed { connections: usize },
    /// This many requests per second over a pool of connections.
    Open { rate: f64, connections: usize },
}

/// What every connection shares.
#[derive(Debug)]
pub(crate) struct Traffic {
    pub(crate) shelf: Shelf,
    pub(crate) mix: Mix,
    pub(crate) zones: ZoneMap,
    pub(crate) credentials: Credentials,
    pub(crate) seed: u64,
    pub(crate) run: u64,
    /// Shoppers click on what they are shown (`--prefer`).
    pub(crate) clicks: Option<Clicks>,
    /// Closed loop: each connection stops after this many sessions (`--sessions`).
    pub(crate) sessions: Option<u64>,
    /// Where the requests go: the serverside call, or the browser endpoint (`--clientside`).
    pub(crate) endpoint: TrafficEndpoint,
}

/// Where the shoppers' requests go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TrafficEndpoint {
    /// `POST /api/serverside`, as a store's server sends it.
    Serverside,
    /// `POST /api/clientside/<key>`, as the browser script sends it: from a store
    /// origin, with a browser's user agent, no secret key.
    Clientside {
        /// The account's access key.
        access_key: String,
    },
}

/// The store origin the harness's browser requests come from (allowed by the store it
/// spawns).
pub(crate) const HARNESS_ORIGIN: &str = vitrine_benches::traffic::HARNESS_ORIGIN;
/// The user agent of the harness's browser requests.
const BROWSER_AGENT: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36";

impl Traffic {
    /// The shopper's next request body.
    fn next_request(&self, shopper: &mut Shopper) -> Vec<u8> {
        shopper.next_request(
            &self.shelf,
            &self.mix,
            &self.zones,
            &self.credentials,
            self.clicks.as_ref(),
        )
    }
}

/// The phase switch and the live counters behind the progress line.
#[derive(Debug, Default)]
pub(crate) struct Control {
    phase: AtomicU8,
    pub(crate) requests: AtomicU64,
    pub(crate) errors: AtomicU64,
    pub(crate) round_trip_sum_us: AtomicU64,
}

impl Control {
    pub(crate) fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Acquire))
    }

    pub(crate) fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Release);
    }
}

/// Latencies and outcomes of one phase.
#[derive(Debug, Clone)]
pub(crate) struct Recording {
    /// Round trip (from the scheduled time in the open loop), microseconds.
    pub(crate) round_trip: Histogram<u64>,
    /// The server's own handling time from `Server-Timing`, microseconds.
    pub(crate) server: Histogram<u64>,
    /// Open loop: how late requests left after their scheduled time, microseconds.
    pub(crate) lag: Histogram<u64>,
    /// Answers by HTTP status.
    pub(crate) statuses: BTreeMap<u16, u64>,
    /// Requests that got no HTTP answer (connection refused, reset, closed).
    pub(crate) connection_errors: u64,
    /// Bytes of answer bodies.
    pub(crate) response_bytes: u64,
    /// 200 answers whose `errors` array is not empty (e.g. an unknown zone id).
    pub(crate) answers_with_errors: u64,
}

impl Recording {
    fn new() -> Recording {
        let histogram = || {
            // 1 µs to 10 min at 3 significant digits; bounds are constants, so this holds.
            Histogram::new_with_bounds(1, 600_000_000, 3).unwrap_or_else(|_| {
                Histogram::new(3).unwrap_or_else(|_| unreachable!("3 significant digits"))
            })
        };
        Recording {
            round_trip: histogram(),
            server: histogram(),
            lag: histogram(),
            statuses: BTreeMap::new(),
            connection_errors: 0,
            response_bytes: 0,
            answers_with_errors: 0,
        }
    }

    fn merge(&mut self, other: &Recording) {
        let _ = self.round_trip.add(&other.round_trip);
        let _ = self.server.add(&other.server);
        let _ = self.lag.add(&other.lag);
        for (status, count) in &other.statuses {
            *self.statuses.entry(*status).or_default() += count;
        }
        self.connection_errors += other.connection_errors;
        self.response_bytes += other.response_bytes;
        self.answers_with_errors += other.answers_with_errors;
    }

    /// Requests answered or failed.
    pub(crate) fn requests(&self) -> u64 {
        self.statuses.values().sum::<u64>() + self.connection_errors
    }
}

/// The recordings of the idle phase and of the phase during an ingest.
#[derive(Debug)]
pub(crate) struct Recordings {
    pub(crate) idle: Recording,
    pub(crate) ingest: Recording,
}

impl Recordings {
    pub(crate) fn new() -> Recordings {
        Recordings {
            idle: Recording::new(),
            ingest: Recording::new(),
        }
    }

    fn phase(&mut self, phase: Phase) -> Option<&mut Recording> {
        match phase {
            Phase::Idle => Some(&mut self.idle),
            Phase::Ingest => Some(&mut self.ingest),
            Phase::Warmup | Phase::Done => None,
        }
    }

    pub(crate) fn merge(&mut self, other: &Recordings) {
        self.idle.merge(&other.idle);
        self.ingest.merge(&other.ingest);
    }
}

/// One request's outcome.
enum Outcome {
    Answered {
        status: u16,
        server_us: Option<u64>,
        bytes: usize,
        /// The answer's `errors` array is empty.
        clean: bool,
    },
    Failed,
}

/// A request without an answer by then counts as a connection error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// One keep-alive connection that reconnects after a failure.
struct Connection {
    authority: String,
    path: String,
    browser: bool,
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl Connection {
    fn new(authority: &str, endpoint: &TrafficEndpoint) -> Connection {
        let (path, browser) = match endpoint {
            TrafficEndpoint::Serverside => ("/api/serverside".to_owned(), false),
            TrafficEndpoint::Clientside { access_key } => {
                (format!("/api/clientside/{access_key}"), true)
            }
        };
        Connection {
            authority: authority.to_owned(),
            path,
            browser,
            sender: None,
        }
    }

    async fn exchange(
        &mut self,
        body: Vec<u8>,
        shopper: &mut Shopper,
        clicks: Option<&Clicks>,
    ) -> Outcome {
        if self.sender.is_none() {
            match crate::target::connect(&self.authority).await {
                Ok(sender) => self.sender = Some(sender),
                Err(_) => {
                    // Do not spin against a server that is gone.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    return Outcome::Failed;
                }
            }
        }
        let Some(sender) = self.sender.as_mut() else {
            return Outcome::Failed;
        };
        let mut request = Request::post(self.path.as_str())
            .header("host", &self.authority)
            .header("content-type", "application/json");
        if self.browser {
            request = request
                .header("origin", HARNESS_ORIGIN)
                .header("user-agent", BROWSER_AGENT);
        }
        let request = request.body(Full::new(Bytes::from(body)));
        let Ok(request) = request else {
            return Outcome::Failed;
        };
        let answered = tokio::time::timeout(REQUEST_TIMEOUT, async {
            let response = sender.send_request(request).await.ok()?;
            let status = response.status().as_u16();
            let server_us = response
                .headers()
                .get("server-timing")
                .and_then(|v| v.to_str().ok())
                .and_then(server_time_us);
            let body = response.into_body().collect().await.ok()?.to_bytes();
            Some((status, server_us, body))
        })
        .await
        .ok()
        .flatten();
        match answered {
            Some((status, server_us, body)) => {
                shopper.observe(&body, clicks);
                const CLEAN: &[u8] = br#""errors":[]"#;
                let head = &body[..body.len().min(512)];
                Outcome::Answered {
                    status,
                    server_us,
                    bytes: body.len(),
                    clean: head.windows(CLEAN.len()).any(|w| w == CLEAN),
                }
            }
            None => {
                self.sender = None;
                Outcome::Failed
            }
        }
    }
}

/// `app;dur=0.123` (milliseconds) → microseconds.
pub(crate) fn server_time_us(header: &str) -> Option<u64> {
    let millis: f64 = header
        .split([';', ','])
        .find_map(|part| part.trim().strip_prefix("dur="))?
        .trim()
        .parse()
        .ok()?;
    (millis.is_finite() && millis >= 0.0).then(|| (millis * 1000.0).round() as u64)
}

fn record(
    recordings: &mut Recordings,
    control: &Control,
    phase: Phase,
    scheduled: Instant,
    sent: Instant,
    outcome: Outcome,
) {
    let round_trip = scheduled.elapsed().as_micros() as u64;
    control.requests.fetch_add(1, Ordering::Relaxed);
    control
        .round_trip_sum_us
        .fetch_add(round_trip, Ordering::Relaxed);
    if !matches!(outcome, Outcome::Answered { status: 200, .. }) {
        control.errors.fetch_add(1, Ordering::Relaxed);
    }
    let Some(recording) = recordings.phase(phase) else {
        return;
    };
    let _ = recording.round_trip.record(round_trip.max(1));
    let lag = sent.saturating_duration_since(scheduled).as_micros() as u64;
    let _ = recording.lag.record(lag.max(1));
    match outcome {
        Outcome::Answered {
            status,
            server_us,
            bytes,
            clean,
        } => {
            *recording.statuses.entry(status).or_default() += 1;
            if status == 200 && !clean {
                recording.answers_with_errors += 1;
            }
            recording.response_bytes += bytes as u64;
            if let Some(us) = server_us {
                let _ = recording.server.record(us.max(1));
            }
        }
        Outcome::Failed => recording.connection_errors += 1,
    }
}

/// A worker's connections, one per server; a visitor's requests all go to one server
/// (as behind a load balancer with visitor affinity).
struct Connections(Vec<Connection>);

impl Connections {
    fn new(authorities: &[String], endpoint: &TrafficEndpoint) -> Connections {
        Connections(
            authorities
                .iter()
                .map(|a| Connection::new(a, endpoint))
                .collect(),
        )
    }

    /// The server of the shopper's visitor.
    fn node(&self, shopper: &Shopper) -> usize {
        (shopper.visitor() % self.0.len().max(1) as u64) as usize
    }

    async fn exchange(
        &mut self,
        node: usize,
        body: Vec<u8>,
        shopper: &mut Shopper,
        clicks: Option<&Clicks>,
    ) -> Outcome {
        match self.0.get_mut(node) {
            Some(connection) => connection.exchange(body, shopper, clicks).await,
            None => Outcome::Failed,
        }
    }
}

/// Recordings per server.
fn per_node(servers: usize) -> Vec<Recordings> {
    (0..servers).map(|_| Recordings::new()).collect()
}

/// Runs the traffic until the control says `Done`, then hands back what was recorded
/// against each server (in the order of `authorities`).
pub(crate) async fn drive(
    traffic: Arc<Traffic>,
    authorities: Vec<String>,
    control: Arc<Control>,
    pacing: Pacing,
) -> anyhow::Result<Vec<Recordings>> {
    let mut tasks = Vec::new();
    match pacing {
        Pacing::Closed { connections } => {
            for worker in 0..connections {
                let (traffic, control) = (Arc::clone(&traffic), Arc::clone(&control));
                let connection = Connections::new(&authorities, &traffic.endpoint);
                tasks.push(tokio::spawn(closed_worker(
                    traffic, connection, control, worker,
                )));
            }
        }
        Pacing::Open { rate, connections } => {
            let (slots, queue) = async_channel::unbounded();
            let dispatcher_control = Arc::clone(&control);
            std::thread::Builder::new()
                .name("dispatcher".to_owned())
                .spawn(move || dispatch(rate, &dispatcher_control, &slots))?;
            for worker in 0..connections {
                let (traffic, control) = (Arc::clone(&traffic), Arc::clone(&control));
                let connections = Connections::new(&authorities, &traffic.endpoint);
                tasks.push(tokio::spawn(open_worker(
                    traffic,
                    connections,
                    control,
                    queue.clone(),
                    worker,
                )));
            }
        }
    }
    let mut all = per_node(authorities.len());
    for task in tasks {
        for (all, recorded) in all.iter_mut().zip(task.await?) {
            all.merge(&recorded);
        }
    }
    Ok(all)
}

async fn closed_worker(
    traffic: Arc<Traffic>,
    mut connection: Connections,
    control: Arc<Control>,
    worker: usize,
) -> Vec<Recordings> {
    let mut shopper = Shopper::new(traffic.seed, traffic.run, worker);
    let mut recordings = per_node(connection.0.len());
    loop {
        let phase = control.phase();
        if phase == Phase::Done
            || traffic
                .sessions
                .is_some_and(|n| shopper.sessions_finished() >= n)
        {
            break;
        }
        let body = traffic.next_request(&mut shopper);
        let node = connection.node(&shopper);
        let sent = Instant::now();
        let outcome = connection
            .exchange(node, body, &mut shopper, traffic.clicks.as_ref())
            .await;
        record(&mut recordings[node], &control, phase, sent, sent, outcome);
    }
    recordings
}

/// A request slot: when it was due and the phase it was due in.
#[derive(Debug, Clone, Copy)]
struct Slot {
    due: Instant,
    phase: Phase,
}

/// Releases a slot every `1 / rate` seconds until the run is done. Sleeping is done by
/// the thread (the runtime's timer has millisecond granularity); a slot is due at its
/// scheduled instant however late the thread woke.
fn dispatch(rate: f64, control: &Control, slots: &async_channel::Sender<Slot>) {
    let interval = Duration::from_secs_f64(1.0 / rate);
    let start = Instant::now();
    let mut n: u32 = 0;
    loop {
        let due = start + interval * n;
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        let phase = control.phase();
        if phase == Phase::Done || slots.send_blocking(Slot { due, phase }).is_err() {
            break;
        }
        n = n.wrapping_add(1);
    }
}

async fn open_worker(
    traffic: Arc<Traffic>,
    mut connection: Connections,
    control: Arc<Control>,
    queue: async_channel::Receiver<Slot>,
    worker: usize,
) -> Vec<Recordings> {
    let mut shopper = Shopper::new(traffic.seed, traffic.run, worker);
    let mut recordings = per_node(connection.0.len());
    while let Ok(slot) = queue.recv().await {
        let body = traffic.next_request(&mut shopper);
        let node = connection.node(&shopper);
        let sent = Instant::now();
        let outcome = connection
            .exchange(node, body, &mut shopper, traffic.clicks.as_ref())
            .await;
        record(
            &mut recordings[node],
            &control,
            slot.phase,
            slot.due,
            sent,
            outcome,
        );
    }
    recordings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_timing_durations_are_read_in_microseconds() {
        assert_eq!(server_time_us("app;dur=0.123"), Some(123));
        assert_eq!(server_time_us("app;dur=12.5"), Some(12_500));
        assert_eq!(server_time_us("app; dur=1"), Some(1000));
        assert_eq!(server_time_us("app"), None);
        assert_eq!(server_time_us("app;dur=-1"), None);
        assert_eq!(server_time_us("app;dur=x"), None);
    }
}
