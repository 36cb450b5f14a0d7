//! `--baseline`: a bare hyper server inside the harness that reads each request's body
//! and answers a fixed JSON document. The same traffic against it shows the HTTP stack's
//! own limit on this machine, in the same run, so Vitrine's throughput can be given as
//! a fraction of it.

use std::net::SocketAddr;

use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

/// The bare server, on its own runtime with as many worker threads as `vitrine` uses
/// (one per core); stopped on drop.
#[derive(Debug)]
pub(crate) struct Baseline {
    pub(crate) addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Baseline {
    /// Starts the server answering `answer_bytes` bytes of fixed JSON, shaped like a
    /// server-side answer (visitor id, session id, errors, zones).
    /// Each request first costs `work_us` microseconds of CPU (a busy loop; 0 for none).
    /// With `cpus`, its threads run on those CPUs only (as `--server-cpus` pins
    /// `vitrine`).
    pub(crate) fn start(
        answer_bytes: usize,
        work_us: u64,
        cpus: Option<rustix::thread::CpuSet>,
    ) -> anyhow::Result<Baseline> {
        Baseline::start_on("127.0.0.1:0".parse()?, answer_bytes, work_us, cpus)
    }

    /// [`Baseline::start`] on `listen`.
    pub(crate) fn start_on(
        listen: SocketAddr,
        answer_bytes: usize,
        work_us: u64,
        cpus: Option<rustix::thread::CpuSet>,
    ) -> anyhow::Result<Baseline> {
        let threads = match &cpus {
            Some(cpus) => cpus.count().max(1) as usize,
            None => std::thread::available_parallelism().map_or(2, |n| n.get()),
        };
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder
            .worker_threads(threads)
            .thread_name("baseline")
            .enable_all();
        if let Some(cpus) = cpus {
            builder.on_thread_start(move || {
                if let Err(error) = crate::cpus::pin_current_thread(&cpus) {
                    eprintln!("the baseline could not be pinned: {error:#}");
                }
            });
        }
        let runtime = builder.build().context("starting the baseline runtime")?;
        let answer = fixed_answer(answer_bytes);
        let listener =
            std::net::TcpListener::bind(listen).context("binding the baseline server")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        runtime.spawn(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            let mut builder = http1::Builder::new();
            builder.keep_alive(true);
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                let answer = answer.clone();
                let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                    let answer = answer.clone();
                    async move {
                        // Read the whole body, as a real handler must.
                        let _ = request.into_body().collect().await;
                        work(work_us);
                        Response::builder()
                            .header("content-type", "application/json")
                            .body(Full::new(answer))
                    }
                });
                let connection = builder.serve_connection(TokioIo::new(stream), service);
                tokio::spawn(connection);
            }
        });
        Ok(Baseline {
            addr,
            runtime: Some(runtime),
        })
    }
}

impl Drop for Baseline {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Spins for `us` microseconds by the clock.
fn work(us: u64) {
    if us == 0 {
        return;
    }
    let until = std::time::Instant::now() + std::time::Duration::from_micros(us);
    while std::time::Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// `{"visitorId":"baseline","sessionId":"baseline","errors":[],"zones":{"pad":"xxx…"}}`
/// of (at least the fixed part and at most) `bytes` bytes.
pub(crate) fn fixed_answer(bytes: usize) -> Bytes {
    let head = r#"{"visitorId":"baseline","sessionId":"baseline","errors":[],"zones":{"pad":""#;
    let tail = r#""}}"#;
    let pad = bytes.saturating_sub(head.len() + tail.len());
    let mut answer = String::with_capacity(head.len() + pad + tail.len());
    answer.push_str(head);
    answer.extend(std::iter::repeat_n('x', pad));
    answer.push_str(tail);
    Bytes::from(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_answer_is_json_of_the_asked_size() {
        for size in [0, 100, 20_000] {
            let answer = fixed_answer(size);
            let value: serde_json::Value = serde_json::from_slice(&answer).unwrap();
            assert_eq!(value["sessionId"], "baseline");
            if size >= 100 {
                assert_eq!(answer.len(), size);
            }
        }
    }

    /// The server on its own address answers the fixed answer, and with `work_us` it
    /// takes at least that long over each request (a lower bound: the busy loop runs
    /// until the clock has passed it).
    #[test]
    fn the_bare_server_answers_on_its_address_after_its_work() {
        let server = Baseline::start_on("127.0.0.1:0".parse().unwrap(), 500, 20_000, None).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let took = runtime.block_on(async {
            let mut sender = crate::target::connect(&server.addr.to_string())
                .await
                .unwrap();
            let request = hyper::Request::post("/api/serverside")
                .header("host", "127.0.0.1")
                .body(Full::new(Bytes::from_static(b"{}")))
                .unwrap();
            let started = std::time::Instant::now();
            let response = sender.send_request(request).await.unwrap();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body.len(), 500);
            started.elapsed()
        });
        assert!(took >= std::time::Duration::from_millis(20), "{took:?}");
    }
}
