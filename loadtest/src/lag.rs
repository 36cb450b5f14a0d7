//! Replication lag under load, for `vitrine-loadtest run` against several nodes of a
//! cluster: while the shoppers run, a probe views a product through one node and asks
//! the next node for the same visitor's recently-viewed zone until it shows the
//! product. The lag is from the first node's answer to the second node's first answer
//! that shows it (so it includes up to one round trip of polling).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::client::conn::http1::SendRequest;
use serde::Serialize;

use crate::drive::{Control, Phase};

/// How long the probe waits for one view to show on the other node.
const GIVE_UP: Duration = Duration::from_secs(10);
/// Pause between two probes.
const PAUSE: Duration = Duration::from_millis(50);

/// What the probe measured.
#[derive(Debug, Serialize)]
pub(crate) struct LagReport {
    /// Views measured.
    pub(crate) samples: u64,
    /// Views not seen on the other node within 10 s.
    pub(crate) timeouts: u64,
    /// Requests that failed (no answer or not 200).
    pub(crate) errors: u64,
    /// Products the zone did not show on the node that took their view (not on sale):
    /// skipped.
    pub(crate) unshown: u64,
    /// The lag, microseconds.
    pub(crate) lag_us: Option<crate::percentiles::Percentiles>,
}

/// The probe's settings.
#[derive(Debug, Clone)]
pub(crate) struct Probe {
    /// The nodes' `host:port`, two or more.
    pub(crate) authorities: Vec<String>,
    pub(crate) access_key: String,
    pub(crate) secret_key: String,
    /// A zone of the `recently_viewed` strategy on every node.
    pub(crate) zone: String,
    /// Products to view.
    pub(crate) products: Vec<String>,
    /// Makes the probe's visitor ids unique to the run.
    pub(crate) run: u64,
}

/// Probes while the run is measuring (idle or during an ingest), until it is done.
pub(crate) async fn probe(probe: Probe, control: Arc<Control>) -> LagReport {
    let mut histogram = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3)
        .unwrap_or_else(|_| Histogram::new(3).unwrap_or_else(|_| unreachable!("3 digits")));
    let (mut timeouts, mut errors, mut unshown) = (0u64, 0u64, 0u64);
    let mut senders: Vec<Option<SendRequest<Full<Bytes>>>> =
        probe.authorities.iter().map(|_| None).collect();
    let mut n = 0usize;
    loop {
        match control.phase() {
            Phase::Done => break,
            Phase::Warmup => {
                tokio::time::sleep(PAUSE).await;
                continue;
            }
            Phase::Idle | Phase::Ingest => {}
        }
        let from = n % probe.authorities.len();
        let to = (from + 1) % probe.authorities.len();
        let visitor = format!("lag-probe-{}-{n}", probe.run);
        let product = probe.products[n % probe.products.len().max(1)].clone();
        n += 1;
        let view_of = |visitor: &str| {
            body(
                &probe,
                visitor,
                &format!(
                    r#"[{{"name":"product_view","data":{{"id":{}}}}}]"#,
                    serde_json::Value::String(product.clone())
                ),
                &[],
            )
        };
        let ask_of = |visitor: &str| {
            body(
                &probe,
                visitor,
                r#"[{"name":"page_view","data":{"page_type":"homepage"}}]"#,
                std::slice::from_ref(&probe.zone),
            )
        };
        let needle = format!(r#""Id":{}"#, serde_json::Value::String(product.clone()));
        // First on the node alone, with a visitor of its own: a product the zone does
        // not show (not on sale) cannot be waited for.
        let check = format!("{visitor}-check");
        let checked = match post(
            &probe.authorities[from],
            &mut senders[from],
            view_of(&check),
        )
        .await
        {
            Some(_) => post(&probe.authorities[from], &mut senders[from], ask_of(&check)).await,
            None => None,
        };
        match checked {
            Some(answer) if contains(&answer, needle.as_bytes()) => {}
            Some(_) => {
                unshown += 1;
                continue;
            }
            None => {
                errors += 1;
                tokio::time::sleep(PAUSE).await;
                continue;
            }
        }
        if post(
            &probe.authorities[from],
            &mut senders[from],
            view_of(&visitor),
        )
        .await
        .is_none()
        {
            errors += 1;
            tokio::time::sleep(PAUSE).await;
            continue;
        }
        let viewed = Instant::now();
        let ask = ask_of(&visitor);
        loop {
            let Some(answer) = post(&probe.authorities[to], &mut senders[to], ask.clone()).await
            else {
                errors += 1;
                break;
            };
            if contains(&answer, needle.as_bytes()) {
                let _ = histogram.record((viewed.elapsed().as_micros() as u64).max(1));
                break;
            }
            if viewed.elapsed() > GIVE_UP {
                timeouts += 1;
                break;
            }
        }
        tokio::time::sleep(PAUSE).await;
    }
    LagReport {
        samples: histogram.len(),
        timeouts,
        errors,
        unshown,
        lag_us: crate::percentiles::Percentiles::of(&histogram),
    }
}

/// A server-side request body for the probe's visitor.
fn body(probe: &Probe, visitor: &str, events: &str, zones: &[String]) -> Bytes {
    let value = serde_json::json!({
        "appId": probe.access_key,
        "secretKey": probe.secret_key,
        "visitorId": visitor,
        "userAgent": "Mozilla/5.0 vitrine-loadtest lag probe",
        "ip": "198.51.100.1",
        "currentUrl": "https://shop.example/",
        "events": serde_json::from_str::<serde_json::Value>(events).unwrap_or_default(),
        "zones": zones,
    });
    Bytes::from(value.to_string())
}

/// Posts to `/api/serverside` on a kept connection; the body of a 200, or `None`.
async fn post(
    authority: &str,
    sender: &mut Option<SendRequest<Full<Bytes>>>,
    body: Bytes,
) -> Option<Bytes> {
    if sender.is_none() {
        *sender = crate::target::connect(authority).await.ok();
    }
    let connection = sender.as_mut()?;
    let request = Request::post("/api/serverside")
        .header("host", authority)
        .header("content-type", "application/json")
        .body(Full::new(body))
        .ok()?;
    let answered = tokio::time::timeout(Duration::from_secs(30), async {
        let response = connection.send_request(request).await.ok()?;
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.ok()?.to_bytes();
        Some((status, body))
    })
    .await
    .ok()
    .flatten();
    match answered {
        Some((200, body)) => Some(body),
        Some(_) => None,
        None => {
            *sender = None;
            None
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
