//! Feed download: a streaming HTTP client (reqwest + rustls) that writes the body to a
//! file, with every guard a server fetching URLs given by outsiders needs.
//!
//! - http and https only, on every hop; at most [`FetchLimits::max_redirects`] redirects.
//! - A size cap, checked against `Content-Length` up front and while streaming.
//! - Connect and total timeouts.
//! - Private, loopback, link-local and unspecified addresses refused, both for literal
//!   IPs in a URL and for host names (checked by the DNS resolver, so redirects and
//!   DNS answers are covered), unless [`Addresses::PrivateAllowed`].

use std::fs::File;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;

/// Limits of one download.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchLimits {
    /// Largest body accepted.
    pub max_bytes: u64,
    /// Whole download, from connect to last byte.
    pub total_timeout: Duration,
    /// TCP (and TLS) connect.
    pub connect_timeout: Duration,
    /// Redirects followed.
    pub max_redirects: usize,
    /// Whether private and loopback addresses may be fetched (tests, intranets).
    pub addresses: Addresses,
}

/// Which hosts a feed may be fetched from (`feeds.allow_private_addresses`): checked on
/// a feed URL as it is submitted, and on every address its download resolves to or is
/// redirected to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addresses {
    /// Public ones only: a private or loopback address, or `localhost`, is refused.
    PublicOnly,
    /// Private and loopback ones too.
    PrivateAllowed,
}

impl Default for FetchLimits {
    fn default() -> FetchLimits {
        FetchLimits {
            max_bytes: 4 << 30,
            total_timeout: Duration::from_secs(600),
            connect_timeout: Duration::from_secs(10),
            max_redirects: 5,
            addresses: Addresses::PublicOnly,
        }
    }
}

/// Why a download failed; the text becomes the feed status `Error`.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The server answered with a non-success status.
    #[error("the feed URL answered HTTP {0}")]
    Status(u16),
    /// Over the size cap.
    #[error("the feed is larger than the limit of {limit} bytes")]
    TooLarge {
        /// The cap.
        limit: u64,
    },
    /// Over the total timeout.
    #[error("the download did not finish within {0} s")]
    Timeout(u64),
    /// A refused address or scheme.
    #[error("{0}")]
    Refused(String),
    /// Connection, TLS or protocol failure.
    #[error("the feed could not be downloaded: {0}")]
    Transport(String),
    /// The temp file could not be written.
    #[error("the download could not be saved to {path}: {message}")]
    Disk {
        /// The file.
        path: String,
        /// The error.
        message: String,
    },
}

/// Whether an address is private, loopback, link-local, unspecified or broadcast.
pub fn is_private_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => {
            ip.is_private()
                || ip.is_loopback()
                || ip.is_link_local()
                || ip.is_unspecified()
                || ip.is_broadcast()
                || ip.octets()[0] == 100 && (ip.octets()[1] & 0xc0) == 64
        }
        IpAddr::V6(ip) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || (ip.segments()[0] & 0xfe00) == 0xfc00
                || (ip.segments()[0] & 0xffc0) == 0xfe80
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_private_ip(IpAddr::V4(v4)))
        }
    }
}

/// Whether a URL host (name or literal address) is refused outright.
pub fn is_private_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let lower = host.to_ascii_lowercase();
    if lower == "localhost" || lower.ends_with(".localhost") {
        return true;
    }
    host.parse::<IpAddr>().is_ok_and(is_private_ip)
}

/// Resolves host names and refuses private answers unless allowed.
#[derive(Debug, Clone, Copy)]
struct GuardedResolver {
    addresses: Addresses,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let addresses = self.addresses;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if addresses == Addresses::PublicOnly && addrs.iter().any(|a| is_private_ip(a.ip())) {
                let refused: Box<dyn std::error::Error + Send + Sync> = format!(
                    "host {host:?} resolves to a private or loopback address; such feeds are refused \
                     unless feeds.allow_private_addresses = true"
                )
                .into();
                return Err(refused);
            }
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// A client configured with `limits`; build once, reuse for every download.
pub fn client(limits: FetchLimits) -> Result<reqwest::Client, FetchError> {
    let max_redirects = limits.max_redirects;
    let addresses = limits.addresses;
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > max_redirects {
            return attempt.error(format!("more than {max_redirects} redirects"));
        }
        let url = attempt.url();
        if !matches!(url.scheme(), "http" | "https") {
            let message = format!("redirect to scheme {:?} refused", url.scheme());
            return attempt.error(message);
        }
        if addresses == Addresses::PublicOnly && url.host_str().is_some_and(is_private_host) {
            let message = format!(
                "redirect to private address {:?} refused",
                url.host_str().unwrap_or_default()
            );
            return attempt.error(message);
        }
        attempt.follow()
    });
    reqwest::Client::builder()
        .redirect(policy)
        .connect_timeout(limits.connect_timeout)
        .timeout(limits.total_timeout)
        .dns_resolver(Arc::new(GuardedResolver { addresses }))
        .user_agent(concat!(
            "vitrine/",
            env!("CARGO_PKG_VERSION"),
            " (feed fetcher)"
        ))
        .build()
        .map_err(|e| FetchError::Transport(e.to_string()))
}

/// Downloads `url` into the file `dest`; returns the number of bytes written.
pub async fn download(
    client: &reqwest::Client,
    url: &str,
    dest: &Path,
    limits: FetchLimits,
) -> Result<u64, FetchError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| FetchError::Refused(format!("{url:?} is not a valid URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(FetchError::Refused(format!(
            "scheme {:?} is not allowed; use http or https",
            parsed.scheme()
        )));
    }
    if limits.addresses == Addresses::PublicOnly && parsed.host_str().is_some_and(is_private_host) {
        return Err(FetchError::Refused(format!(
            "host {:?} is a private or loopback address; such feeds are refused unless \
             feeds.allow_private_addresses = true",
            parsed.host_str().unwrap_or_default()
        )));
    }
    let timeout_secs = limits.total_timeout.as_secs();
    let transport = |e: reqwest::Error| {
        if e.is_timeout() {
            FetchError::Timeout(timeout_secs)
        } else {
            FetchError::Transport(error_chain(&e))
        }
    };
    let response = client.get(parsed).send().await.map_err(transport)?;
    if !response.status().is_success() {
        return Err(FetchError::Status(response.status().as_u16()));
    }
    if response
        .content_length()
        .is_some_and(|len| len > limits.max_bytes)
    {
        return Err(FetchError::TooLarge {
            limit: limits.max_bytes,
        });
    }
    let disk = |e: std::io::Error| FetchError::Disk {
        path: dest.display().to_string(),
        message: e.to_string(),
    };
    let mut file = File::create(dest).map_err(disk)?;
    let mut written: u64 = 0;
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(transport)?;
        written += chunk.len() as u64;
        if written > limits.max_bytes {
            drop(file);
            let _ = std::fs::remove_file(dest);
            return Err(FetchError::TooLarge {
                limit: limits.max_bytes,
            });
        }
        file.write_all(&chunk).map_err(disk)?;
    }
    file.sync_all().map_err(disk)?;
    Ok(written)
}

/// The error and its sources, joined: reqwest's top-level message alone is vague.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_are_recognised() {
        for private in [
            "127.0.0.1",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.1.1",
            "0.0.0.0",
            "::1",
            "fc00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "100.64.0.1",
        ] {
            assert!(is_private_ip(private.parse().unwrap()), "{private}");
        }
        for public in ["203.0.113.1", "8.8.8.8", "2001:db8::1"] {
            assert!(!is_private_ip(public.parse().unwrap()), "{public}");
        }
        assert!(is_private_host("localhost"));
        assert!(is_private_host("[::1]"));
        assert!(!is_private_host("shop.example"));
    }
}
