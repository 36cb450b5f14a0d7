//! The store under test: a `vitrine` started by the harness (`--spawn`) and a synthetic
//! catalogue submitted through the public feed API from the harness's own feed server.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use vitrine_benches::traffic::{ACCESS_KEY, HARNESS_ADMIN_TOKEN, StoreOptions, store_config_with};
use vitrine_testkit::TestServer;

/// A `vitrine serve` started by the harness in a temporary directory (the workspace's
/// `TestServer`); killed on drop.
#[derive(Debug)]
pub(crate) struct Spawned {
    server: TestServer,
    pub(crate) addr: SocketAddr,
}

impl Spawned {
    /// Starts `binary` (default: `vitrine` next to this executable) configured with
    /// `options`, and waits for its ready line.
    pub(crate) fn start(
        binary: Option<&Path>,
        options: &StoreOptions<'_>,
    ) -> anyhow::Result<Spawned> {
        let binary = match binary {
            Some(path) => path.to_owned(),
            None => sibling_binary()?,
        };
        let config = store_config_with(options);
        let server = TestServer::start(&binary, Some(&config))?;
        Ok(Spawned {
            addr: server.addr(),
            server,
        })
    }

    /// The store's experiment results, as its admin API answers them.
    pub(crate) fn experiment_results(&self) -> anyhow::Result<Value> {
        let path = format!("/admin/api/accounts/{ACCESS_KEY}/experiments");
        let auth = format!("Bearer {HARNESS_ADMIN_TOKEN}");
        let response = vitrine_testkit::client::request(
            self.addr,
            "GET",
            &path,
            b"",
            &[("authorization", auth.as_str())],
        )
        .with_context(|| format!("no answer to GET {path}"))?;
        if response.status != 200 {
            bail!("GET {path}: {} {}", response.status, response.body);
        }
        serde_json::from_str(&response.body).with_context(|| format!("GET {path}"))
    }

    /// The server's log so far.
    pub(crate) fn log(&self) -> String {
        self.server.log()
    }

    /// Stops the server (SIGKILL: its data directory is thrown away).
    pub(crate) fn stop(self) {
        drop(self.server);
    }
}

pub(crate) fn sibling_binary() -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe().context("locating this executable")?;
    let path = me.with_file_name(format!("vitrine{}", std::env::consts::EXE_SUFFIX));
    if !path.exists() {
        bail!(
            "{} not found: build it next to this tool with \
             `cargo build --release -p vitrine-http -p vitrine-loadtest`, or pass --vitrine PATH",
            path.display()
        );
    }
    Ok(path)
}

/// Serves one feed document at `/feed.json` on a loopback port until dropped.
#[derive(Debug)]
pub(crate) struct FeedServer {
    pub(crate) url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl FeedServer {
    /// Serves on a thread of its own at the lowest scheduling priority, so that sending
    /// the feed takes CPU from neither the load generator nor the server under test
    /// (a store's feed comes from another machine).
    pub(crate) fn start(feed: Bytes) -> anyhow::Result<FeedServer> {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").context("binding the feed server")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the feed server's runtime")?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("feed-server".to_owned())
            .spawn(move || {
                vitrine_ingest::jobs::lower_thread_priority();
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        () = serve_feed(listener, feed) => {}
                        _ = stopped => {}
                    }
                });
            })
            .context("starting the feed server's thread")?;
        Ok(FeedServer {
            url: format!("http://{addr}/feed.json"),
            stop: Some(stop),
        })
    }
}

async fn serve_feed(listener: tokio::net::TcpListener, feed: Bytes) {
    while let Ok((stream, _)) = listener.accept().await {
        let feed = feed.clone();
        let service = service_fn(move |request: Request<hyper::body::Incoming>| {
            let feed = feed.clone();
            async move {
                if request.uri().path() == "/feed.json" {
                    Response::builder()
                        .header("content-type", "application/json")
                        .body(Full::new(feed))
                } else {
                    Response::builder()
                        .status(404)
                        .body(Full::new(Bytes::from_static(b"not found")))
                }
            }
        });
        tokio::spawn(http1::Builder::new().serve_connection(TokioIo::new(stream), service));
    }
}

impl Drop for FeedServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// One JSON POST on its own connection: status, the `X-Feed-Token` header, body.
async fn post(
    authority: &str,
    path: &str,
    body: &Value,
) -> anyhow::Result<(u16, Option<String>, Bytes)> {
    let mut sender = crate::target::connect(authority).await?;
    let request = Request::post(path)
        .header("host", authority)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(body)?)))?;
    let response = sender
        .send_request(request)
        .await
        .with_context(|| format!("POST {path}"))?;
    let status = response.status().as_u16();
    let token = response
        .headers()
        .get("x-feed-token")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, token, body))
}

/// A full feed submission: the one that provisions, and the one during the load.
#[derive(Debug)]
pub(crate) struct FeedSubmission {
    pub(crate) authority: String,
    pub(crate) access_key: String,
    pub(crate) secret_key: String,
    pub(crate) url: String,
}

impl FeedSubmission {
    /// Submits the feed and waits until it is `Complete`; returns the time from
    /// submission to `Complete`.
    pub(crate) async fn run(&self) -> anyhow::Result<Duration> {
        let (authority, access_key, secret_key) =
            (&*self.authority, &*self.access_key, &*self.secret_key);
        let started = Instant::now();
        let (status, token, body) = post(
            authority,
            "/api/productfeed",
            &json!({"appKey": access_key, "secretKey": secret_key, "url": self.url}),
        )
        .await?;
        let Some(token) = token.filter(|_| status == 200) else {
            bail!(
                "/api/productfeed answered {status}: {}",
                String::from_utf8_lossy(&body)
            );
        };
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let (status, _, body) = post(
                authority,
                "/api/productfeedstatus",
                &json!({"AppKey": access_key, "Tokens": [token]}),
            )
            .await?;
            let items: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let item = &items[0];
            match (status, item["Status"].as_str()) {
                (200, Some("Processing")) => {}
                (200, Some("Complete")) => return Ok(started.elapsed()),
                (200, Some(other)) => bail!(
                    "the feed ended {other}: {}",
                    item["Error"].as_str().unwrap_or("no reason given")
                ),
                _ => bail!(
                    "/api/productfeedstatus answered {status}: {}",
                    String::from_utf8_lossy(&body)
                ),
            }
            if started.elapsed() > Duration::from_secs(1800) {
                bail!("the feed did not complete within 30 minutes");
            }
        }
    }
}

/// A synthetic feed of `products` products (Zipf-ranked ids, categories, brands, GBP and
/// USD prices, sales, group and B2B account visibility), with its product and category
/// ids.
pub(crate) fn synthetic_feed(products: usize, seed: u64) -> (Arc<Bytes>, Vec<String>, Vec<String>) {
    let feed = vitrine_benches::feedgen::generate_feed(products, seed);
    let product_ids = (0..products)
        .map(vitrine_benches::feedgen::product_id)
        .collect();
    let category_ids = (0..vitrine_benches::feedgen::CATEGORIES)
        .map(|c| format!("c{c}"))
        .collect();
    (Arc::new(Bytes::from(feed)), product_ids, category_ids)
}
