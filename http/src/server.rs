//! The hyper 1.x server: accept loop, routing, body limits, graceful shutdown.
//!
//! [`serve`] takes a bound listener and a shutdown future, so `main`, tests and benches
//! all run the same server. Each connection is an HTTP/1.1 keep-alive connection on its
//! own task; handlers are synchronous and short, except those that may wait on the disk
//! or parse a large body, which run on the blocking pool ([`may_fsync`]).

use std::convert::Infallible;
use std::future::Future;
use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::HeaderValue;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use vitrine_engine::catalogue::UnixMillis;
use vitrine_engine::{Evicted, MemoryBounds};

use crate::api::clientside::Cors;
use crate::api::{self, Reply};
use crate::clock::now_millis;
use crate::error::ApiError;
use crate::respond::{error_response, reply_response};
use crate::routes::Endpoint;
use crate::state::AppState;

/// The OpenAPI 3.1 document of every endpoint (`docs/openapi.json`), served at
/// `GET /openapi.json`.
pub const OPENAPI: &[u8] = include_bytes!("../../docs/openapi.json");

/// How long in-flight requests may take to finish once shutdown begins.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// How often idle sessions are swept.
pub const SESSION_SWEEP: Duration = Duration::from_secs(30);
/// How often each account's rankings and neighbour lists are rebuilt from its counters.
pub const MODELS_REBUILD: Duration = Duration::from_secs(1);

/// The sockets a server answers on.
pub struct Listeners {
    /// Every endpoint.
    pub main: TcpListener,
    /// Only the streamed-feed paths (`feeds.stream_listen`), if configured.
    pub feed_streams: Option<TcpListener>,
    /// Only `/metrics` and `/healthz` (`metrics_listen`), if configured; `/metrics` is
    /// then not on the main socket.
    pub metrics: Option<TcpListener>,
    /// `[tls]`: HTTPS on `main` and `feed_streams` (the metrics socket stays HTTP).
    pub tls: Option<tokio_rustls::TlsAcceptor>,
}

impl std::fmt::Debug for Listeners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listeners")
            .field("main", &self.main)
            .field("feed_streams", &self.feed_streams)
            .field("metrics", &self.metrics)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl From<TcpListener> for Listeners {
    fn from(main: TcpListener) -> Listeners {
        Listeners {
            main,
            feed_streams: None,
            metrics: None,
            tls: None,
        }
    }
}

/// Which endpoints a socket answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Routes {
    /// Every endpoint.
    All,
    /// Every endpoint but `/metrics` (served on its own socket).
    AllButMetrics,
    /// The streamed-feed paths and `/healthz`.
    FeedStreams,
    /// `/metrics` and `/healthz`.
    Metrics,
}

impl Routes {
    fn answers(self, endpoint: Endpoint) -> bool {
        match self {
            Routes::All => true,
            Routes::AllButMetrics => endpoint != Endpoint::Metrics,
            Routes::FeedStreams => endpoint.is_feed_stream() || endpoint == Endpoint::Health,
            Routes::Metrics => matches!(endpoint, Endpoint::Metrics | Endpoint::Health),
        }
    }
}

/// Connections kept from the open-file limit for the server's own files (snapshots, log
/// segments, feed downloads).
pub const RESERVED_FILES: usize = 128;

/// The connection cap: `configured`, or with 0 the soft open-file limit less
/// [`RESERVED_FILES`] (at least 64).
pub fn connection_cap(configured: usize) -> usize {
    if configured > 0 {
        return configured;
    }
    let soft = rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1024, |(soft, _)| soft);
    usize::try_from(soft)
        .unwrap_or(usize::MAX)
        .saturating_sub(RESERVED_FILES)
        .max(64)
}

/// A permit for one more connection; when every permit is taken, says so in the log and
/// waits (new connections queue in the listen backlog; existing ones are served).
async fn connection_permit(
    connections: &Arc<Semaphore>,
    cap: usize,
) -> Option<OwnedSemaphorePermit> {
    match Arc::clone(connections).try_acquire_owned() {
        Ok(permit) => Some(permit),
        Err(_) => {
            tracing::warn!(
                max_connections = cap,
                "connection limit reached; new connections wait until one closes"
            );
            Arc::clone(connections).acquire_owned().await.ok()
        }
    }
}

/// Accepts on an optional socket, or waits forever when there is none.
async fn accept_optional(
    listener: Option<&TcpListener>,
) -> std::io::Result<(tokio::net::TcpStream, std::net::SocketAddr)> {
    match listener {
        Some(listener) => listener.accept().await,
        None => std::future::pending().await,
    }
}

/// Serves `state` on `listeners` until `shutdown` completes, then lets in-flight
/// requests finish (up to [`SHUTDOWN_GRACE`]).
pub async fn serve(
    listeners: impl Into<Listeners>,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()>,
) {
    let Listeners {
        main: listener,
        feed_streams,
        metrics,
        tls,
    } = listeners.into();
    let main_routes = if metrics.is_some() {
        Routes::AllButMetrics
    } else {
        Routes::All
    };
    let graceful = GracefulShutdown::new();
    let limits = state.config().limits;
    let mut builder = http1::Builder::new();
    builder
        .keep_alive(true)
        // A client that shuts down its sending side after a whole request (as `nc -N`
        // and some proxies do) still gets its answer.
        .half_close(true)
        .timer(TokioTimer::new())
        // Runs from the start of a request's header, and on a kept-alive connection
        // from the end of the previous response: slow and idle clients are closed.
        .header_read_timeout(Duration::from_millis(limits.header_read_timeout_ms));
    let cap = connection_cap(limits.max_connections);
    tracing::info!(
        max_connections = cap,
        header_read_timeout_ms = limits.header_read_timeout_ms,
        "serving"
    );
    let connections = Arc::new(Semaphore::new(cap));
    let sweeper = tokio::spawn(sweep_sessions(Arc::clone(&state)));
    let models = tokio::spawn(rebuild_models(Arc::clone(&state)));
    let bounds = tokio::spawn(bound_memory(Arc::clone(&state)));
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = connection_permit(&connections, cap) => permit,
            () = &mut shutdown => break,
        };
        let Some(permit) = permit else { break };
        let (accepted, routes) = tokio::select! {
            accepted = listener.accept() => (accepted, main_routes),
            accepted = accept_optional(feed_streams.as_ref()) => (accepted, Routes::FeedStreams),
            accepted = accept_optional(metrics.as_ref()) => (accepted, Routes::Metrics),
            () = &mut shutdown => break,
        };
        match accepted {
            Ok((stream, peer)) => {
                let _ = stream.set_nodelay(true);
                let state = Arc::clone(&state);
                let service =
                    service_fn(move |request| handle(Arc::clone(&state), routes, peer, request));
                match (&tls, routes) {
                    (Some(tls), Routes::All | Routes::AllButMetrics | Routes::FeedStreams) => {
                        let (tls, builder, watcher) =
                            (tls.clone(), builder.clone(), graceful.watcher());
                        let handshake = Duration::from_millis(limits.header_read_timeout_ms);
                        tokio::spawn(async move {
                            let _permit = permit;
                            let stream =
                                match tokio::time::timeout(handshake, tls.accept(stream)).await {
                                    Ok(Ok(stream)) => stream,
                                    Ok(Err(error)) => {
                                        tracing::debug!(%peer, %error, "TLS handshake failed");
                                        return;
                                    }
                                    Err(_) => {
                                        tracing::debug!(%peer, "TLS handshake timed out");
                                        return;
                                    }
                                };
                            let connection = watcher
                                .watch(builder.serve_connection(TokioIo::new(stream), service));
                            if let Err(error) = connection.await {
                                tracing::debug!(%error, "connection ended with an error");
                            }
                        });
                    }
                    _ => {
                        let connection =
                            graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
                        tokio::spawn(async move {
                            let _permit = permit;
                            if let Err(error) = connection.await {
                                tracing::debug!(%error, "connection ended with an error");
                            }
                        });
                    }
                }
            }
            Err(error) => {
                // Usually EMFILE: back off instead of spinning; the connections already
                // open go on being served by their own tasks.
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    drop(listener);
    drop(feed_streams);
    drop(metrics);
    sweeper.abort();
    models.abort();
    bounds.abort();
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("all connections closed"),
        () = tokio::time::sleep(SHUTDOWN_GRACE) => tracing::warn!("connections still open after the grace period; closing"),
    }
}

async fn sweep_sessions(state: Arc<AppState>) {
    let mut interval = tokio::time::interval(SESSION_SWEEP);
    loop {
        interval.tick().await;
        let now = now_millis();
        for entry in state.accounts() {
            entry.account.expire_sessions(now);
            entry.clientside.sweep();
        }
        let idle = Duration::from_secs(state.config().feeds.stream_idle_secs);
        let streams = Arc::clone(&state);
        let expired = tokio::task::spawn_blocking(move || {
            for entry in streams.accounts() {
                for name in entry.jobs.expire_streams(idle) {
                    tracing::warn!(
                        account = %entry.config.access_key,
                        feed = %name,
                        idle_secs = idle.as_secs(),
                        "streamed feed never closed; removed"
                    );
                }
            }
        });
        if let Err(error) = expired.await {
            tracing::error!(%error, "removing abandoned streamed feeds failed");
        }
    }
}

/// Rebuilds every account's models on the ingest pool, one round per
/// [`MODELS_REBUILD`], off the request path (requests keep reading the previous lists).
async fn rebuild_models(state: Arc<AppState>) {
    let mut interval = tokio::time::interval(MODELS_REBUILD);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        models_round_now(&state).await;
    }
}

/// One models round of every account, now, on the ingest pool. The server runs one
/// before it takes requests, so that the first answers after a start rank by the
/// counts it restored, not by a catalogue not ranked yet.
pub async fn models_round_now(state: &Arc<AppState>) {
    let state = Arc::clone(state);
    let round = tokio::task::spawn_blocking(move || {
        state.pool().install(|| {
            for entry in state.accounts() {
                entry.models_round();
            }
        });
    });
    if let Err(error) = round.await {
        tracing::error!(%error, "rebuilding the models failed");
    }
}

/// How often each account's per-visitor state is checked against its bounds (a cheap
/// look at counts; an eviction pass runs only when one is exceeded).
pub const BOUNDS_CHECK: Duration = Duration::from_millis(50);
/// How often idle visitors are dropped, and the memory budget checked.
pub const RETENTION_SWEEP: Duration = Duration::from_secs(60);
/// How often the process's resident memory is compared with `memory.max_rss_mb`.
pub const MEMORY_CHECK: Duration = Duration::from_secs(1);

/// Keeps every account's visitors, sessions and order ids within the configured
/// bounds: an eviction pass (on the blocking pool) as soon as a count is over its
/// bound, idle visitors dropped every [`RETENTION_SWEEP`], and while the process is
/// over `memory.max_rss_mb`, a tenth of each account's visitors every
/// [`MEMORY_CHECK`] (never below a thousand).
async fn bound_memory(state: Arc<AppState>) {
    let mut tick = tokio::time::interval(BOUNDS_CHECK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_sweep: Option<Instant> = None;
    let mut last_memory_check = Instant::now();
    loop {
        tick.tick().await;
        // Copied out: the configuration is not held across the pass (a reload may
        // replace it meanwhile).
        let memory = state.config().memory;
        let sweep = last_sweep.is_none_or(|at| at.elapsed() >= RETENTION_SWEEP);
        let check_memory = last_memory_check.elapsed() >= MEMORY_CHECK;
        if check_memory {
            last_memory_check = Instant::now();
        }
        let over_memory = check_memory
            && memory
                .max_rss_mb
                .is_some_and(|mb| resident_bytes().is_some_and(|rss| rss > mb << 20));
        let mut work = Vec::new();
        for entry in state.accounts() {
            let mut bounds = MemoryBounds {
                max_visitors: entry.config.max_visitors,
                visitor_idle_millis: i64::try_from(memory.visitor_retention_days)
                    .unwrap_or(i64::MAX)
                    .saturating_mul(86_400_000),
                max_sessions: entry.config.max_visitors,
                max_order_ids: memory.max_order_ids,
            };
            if over_memory {
                let floor = entry.config.max_visitors.min(1_000);
                bounds.max_visitors = (entry.account.visitor_count() / 10 * 9).max(floor);
            }
            if sweep || over_memory || entry.account.over_bounds(&bounds) {
                work.push((entry, bounds));
            }
        }
        if sweep {
            last_sweep = Some(Instant::now());
        }
        if work.is_empty() {
            continue;
        }
        if over_memory {
            tracing::warn!(
                max_rss_mb = memory.max_rss_mb,
                "resident memory over the budget; evicting least recently seen visitors"
            );
        }
        // Visitors beyond the bound count under the pass's reason.
        let visitors = if over_memory {
            crate::metrics::EvictionKind::VisitorMemory
        } else {
            crate::metrics::EvictionKind::VisitorCapacity
        };
        let evicting = tokio::task::spawn_blocking(move || {
            let now = now_millis();
            for (entry, bounds) in work {
                let evicted = entry.account.evict(&bounds, now);
                if sweep {
                    entry.account.unlink_missing_visitors();
                }
                entry.metrics.evicted(&evicted, visitors);
                if evicted != Evicted::default() {
                    tracing::debug!(account = %entry.config.access_key, ?evicted, "evicted");
                }
            }
        });
        if let Err(error) = evicting.await {
            tracing::error!(%error, "evicting per-visitor state failed");
        }
    }
}

/// The process's resident memory, in bytes (Linux: `/proc/self/statm`).
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * rustix::param::page_size() as u64)
}

async fn handle(
    state: Arc<AppState>,
    routes: Routes,
    peer: std::net::SocketAddr,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let started = Instant::now();
    let (endpoint, key) = match Endpoint::route(request.uri().path()) {
        (endpoint, key) if routes.answers(endpoint) => (endpoint, key.map(str::to_owned)),
        _ => (Endpoint::Unrouted, None),
    };
    // A browser's request is let in (or not) by its account's door first: every answer
    // to it, errors included, carries the CORS headers its origin is allowed.
    let door = api::clientside::open(&state, endpoint, key.as_deref(), request.headers(), peer);
    let (routed, cors) = match door {
        api::clientside::Door::Refused(error) => (Err(error), Cors::Browser { allow_origin: None }),
        api::clientside::Door::Visit(visit, cors) => {
            let routed = route(&state, endpoint, key.as_deref(), peer, request, Some(visit));
            (routed.await, cors)
        }
        api::clientside::Door::NotBrowser => {
            let routed = route(&state, endpoint, key.as_deref(), peer, request, None);
            (routed.await, Cors::NotBrowser)
        }
    };
    let answered = match routed {
        // An answer acknowledging events logged under `interval` waits, if the log is
        // behind its window, until it is not.
        Ok(mut reply) => match reply.window.take() {
            Some(window) => window.kept().await.map(|()| reply),
            None => Ok(reply),
        },
        Err(error) => Err(error),
    };
    let mut response = match answered {
        Ok(reply) => reply_response(reply, &cors),
        Err(error) => {
            let response = error_response(endpoint, &error, &cors);
            // A refusal (503: the log or the cluster cannot take the write now, nothing
            // recorded) is counted and its cause logged once where it is known, not per
            // request.
            if response.status() == http::StatusCode::SERVICE_UNAVAILABLE {
                tracing::debug!(
                    endpoint = endpoint.name(),
                    error = %error.messages().join("; "),
                    "request refused"
                );
            } else if response.status().is_server_error() {
                tracing::error!(
                    endpoint = endpoint.name(),
                    status = response.status().as_u16(),
                    error = %error.messages().join("; "),
                    "request failed"
                );
            }
            response
        }
    };
    let took = started.elapsed();
    state.metrics.observe(endpoint, response.status(), took);
    let millis = took.as_secs_f64() * 1000.0;
    // Written on the stack: `app;dur=` and a duration of at most a few digits.
    let mut timing = [0u8; 48];
    let mut cursor = std::io::Cursor::new(&mut timing[..]);
    if write!(cursor, "app;dur={millis:.3}").is_ok() {
        let len = usize::try_from(cursor.position()).unwrap_or(0);
        if let Some(Ok(value)) = timing.get(..len).map(HeaderValue::from_bytes) {
            response.headers_mut().insert("server-timing", value);
        }
    }
    Ok(response)
}

/// Answers a request: its method checked, its body read within its endpoint's limit,
/// then its handler run (on the blocking pool when it may wait on the disk). `key` is
/// the access key in a browser endpoint's path; `visit`, a browser's request let in by
/// its door.
async fn route(
    state: &Arc<AppState>,
    endpoint: Endpoint,
    key: Option<&str>,
    peer: std::net::SocketAddr,
    request: Request<Incoming>,
    visit: Option<api::clientside::Visit>,
) -> Result<Reply, ApiError> {
    let path = request.uri().path().to_owned();
    if endpoint == Endpoint::Unrouted {
        return Err(ApiError::NoRoute(format!("no endpoint at {path}")));
    }
    // A browser's CORS preflight, once its door let it in.
    if visit.is_some() && request.method() == http::Method::OPTIONS {
        return Ok(api::clientside::preflight());
    }
    // The admin API reads with GET and changes campaigns with PUT and POST.
    if endpoint == Endpoint::Admin && request.method() != http::Method::GET {
        let method = request.method().clone();
        if method != http::Method::PUT
            && method != http::Method::POST
            && method != http::Method::DELETE
        {
            return Err(ApiError::WrongMethod(format!(
                "method {method} is not allowed on {path}; use GET, PUT, POST or DELETE"
            )));
        }
        let uri = request.uri().clone();
        let headers = request.headers().clone();
        let body = api::read_body(request, state.config().limits.max_body_bytes).await?;
        let state = Arc::clone(state);
        return tokio::task::spawn_blocking(move || {
            crate::admin::handle_write(&state, &method, &uri, &headers, &body, now_millis())
        })
        .await?;
    }
    if request.method() != endpoint.method() {
        return Err(ApiError::WrongMethod(format!(
            "method {} is not allowed on {path}; use {}",
            request.method(),
            endpoint.method()
        )));
    }
    match endpoint {
        Endpoint::Health => return Ok(Reply::json(br#"{"status":"ok"}"#.to_vec())),
        Endpoint::ClientScript => {
            let key = key.unwrap_or_default();
            return Ok(api::clientside::serve_script(state, key, request.headers()));
        }
        Endpoint::OpenApi => return Ok(Reply::json(OPENAPI.to_vec())),
        // On the blocking pool: a segment's size walks every visitor, an explain fills a
        // zone; the async workers go on serving meanwhile.
        Endpoint::Admin => {
            let state = Arc::clone(state);
            let (uri, headers) = (request.uri().clone(), request.headers().clone());
            return tokio::task::spawn_blocking(move || {
                crate::admin::handle(&state, &uri, &headers, now_millis())
            })
            .await?;
        }
        Endpoint::Metrics => {
            let state = Arc::clone(state);
            let text = tokio::task::spawn_blocking(move || {
                let accounts = state.accounts();
                state
                    .metrics
                    .render(accounts.iter().map(|entry| entry.figures()))
            })
            .await?;
            return Ok(Reply {
                content_type: crate::metrics::CONTENT_TYPE,
                ..Reply::json(text)
            });
        }
        _ => {}
    }
    let limit = match endpoint {
        Endpoint::Delta
        | Endpoint::ProductDelta
        | Endpoint::FeedCreate
        | Endpoint::FeedAppend
        | Endpoint::FeedClose => state.config().limits.max_delta_bytes,
        _ => state.config().limits.max_body_bytes,
    };
    let body = api::read_body(request, limit).await?;
    let now = now_millis();
    let run = move |state: &AppState| match &visit {
        Some(visit) => api::clientside::dispatch(state, endpoint, visit, &body, now),
        None => dispatch(state, endpoint, &body, now, peer.ip()),
    };
    if api::may_fsync(state, endpoint) {
        let state = Arc::clone(state);
        tokio::task::spawn_blocking(move || run(&state)).await?
    } else {
        run(state)
    }
}

/// Runs the handler of `endpoint` on a request body.
fn dispatch(
    state: &AppState,
    endpoint: Endpoint,
    body: &[u8],
    now: UnixMillis,
    peer: std::net::IpAddr,
) -> Result<Reply, ApiError> {
    use api::parse_json;
    match endpoint {
        Endpoint::Delta | Endpoint::ProductDelta => {
            api::delta::handle_delta(state, &parse_json(body)?, endpoint, peer)
        }
        Endpoint::ProductDeltaStatus => {
            api::delta::handle_status(state, &parse_json(body)?, endpoint, peer)
        }
        Endpoint::FeedCreate | Endpoint::FeedAppend | Endpoint::FeedClose => {
            api::stream::handle(state, endpoint, body)
        }
        Endpoint::PluginValidate => api::plugin::handle_validate(state, &parse_json(body)?),
        Endpoint::PluginDashboard => {
            api::plugin::dashboard::handle_dashboard(state, &parse_json(body)?)
        }
        Endpoint::PluginDelete => api::plugin::handle_delete(state, &parse_json(body)?),
        Endpoint::PluginFeedback => api::plugin::handle_feedback(state, &parse_json(body)?),
        Endpoint::PluginSignupRequest | Endpoint::PluginSignupStatus | Endpoint::PluginAddStore => {
            api::plugin::signup::handle_signup(body)
        }
        Endpoint::NextStepsComplete => {
            api::plugin::signup::handle_next_step(state, &parse_json(body)?)
        }
        Endpoint::Serverside => api::serverside::handle_bytes(state, body, now),
        Endpoint::ProductFeed => api::feed::handle_submit(state, &parse_json(body)?, now),
        Endpoint::DeltaStatus => {
            api::delta::handle_status(state, &parse_json(body)?, endpoint, peer)
        }
        Endpoint::ProductFeedStatus => api::feed::handle_status(state, &parse_json(body)?),
        Endpoint::Forget => api::forget::handle(state, &parse_json(body)?),
        Endpoint::Health
        | Endpoint::Metrics
        | Endpoint::OpenApi
        | Endpoint::Admin
        | Endpoint::ClientScript
        | Endpoint::ClientSide
        | Endpoint::ClientClick
        | Endpoint::Unrouted => Err(ApiError::NoRoute(format!(
            "no request body handler for {endpoint:?}"
        ))),
    }
}
