//! The SFTP server the vendor's .NET SDK uploads full feeds to (`[sftp] listen`).
//!
//! SSH is `russh`, SFTP its `russh-sftp` subsystem: no protocol code is ours. A client
//! logs in with an account's access key as the user name and its secret key as the
//! password (nothing else: no public keys, no keyboard-interactive); the session then
//! offers the `sftp` subsystem only: a shell, a command, a terminal or any forwarding is
//! refused. Failed logins are counted per client address ([`LoginFailures`]); past the
//! configured number in a minute, every login from that address is refused until the
//! minute has passed. Each failure also waits one second before its answer (russh's
//! constant rejection time).
//!
//! What a session sees is its account's upload area ([`area`]): a flat directory where
//! `*.json` files are written, never read. A completed upload (the client closed the
//! file) runs the same pipeline as `/api/productfeed`, with the file's name as its
//! token in `/api/productfeedstatus`; an upload that is not closed is never applied.
//!
//! The host key ([`host_key`]) is Ed25519, kept in OpenSSH format; it is generated on
//! first start and its SHA-256 fingerprint logged each start, for the SDK's list of
//! expected fingerprints.

pub mod area;
pub mod host_key;
mod shared;
mod ssh;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use russh::keys::PrivateKey;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::config::SftpConfig;
use crate::state::AppState;
pub use shared::{LoginFailures, Shared};

/// SSH connections served at once; a connection beyond them waits to be accepted.
pub const MAX_CONNECTIONS: usize = 64;
/// An idle SSH connection is closed after this long.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// Serves SSH connections from `listener` until the task is dropped.
pub async fn serve(
    listener: TcpListener,
    state: Arc<AppState>,
    config: SftpConfig,
    host_key: PrivateKey,
) {
    let ssh_config = Arc::new(russh::server::Config {
        methods: russh::MethodSet::from(&[russh::MethodKind::Password][..]),
        auth_rejection_time: Duration::from_secs(1),
        // OpenSSH clients first try "none" to learn the methods: no reason to wait.
        auth_rejection_time_initial: Some(Duration::ZERO),
        max_auth_attempts: 3,
        inactivity_timeout: Some(IDLE_TIMEOUT),
        keys: vec![host_key],
        ..russh::server::Config::default()
    });
    let shared = Arc::new(Shared {
        failures: LoginFailures::new(config.max_failed_logins_per_minute),
        areas: Arc::new(area::Areas::open(&state)),
        state,
    });
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = Arc::clone(&connections).acquire_owned().await else {
            return;
        };
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!(%error, "accepting an SFTP connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let handler = ssh::Session::new(Arc::clone(&shared), peer);
        let config = Arc::clone(&ssh_config);
        tokio::spawn(async move {
            let _permit = permit;
            match russh::server::run_stream(config, stream, handler).await {
                Ok(session) => {
                    if let Err(error) = session.await {
                        tracing::debug!(%peer, %error, "SFTP connection ended");
                    }
                }
                Err(error) => tracing::debug!(%peer, %error, "SSH handshake failed"),
            }
        });
    }
}

/// Binds `[sftp] listen` and loads (or makes) the host key; logs the address and the
/// key's fingerprint.
pub async fn bind(config: &SftpConfig) -> anyhow::Result<(TcpListener, SocketAddr, PrivateKey)> {
    use anyhow::Context;
    let key = host_key::load_or_create(&config.host_key)
        .with_context(|| format!("sftp.host_key {}", config.host_key.display()))?;
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding sftp.listen {}", config.listen))?;
    let bound = listener.local_addr().context("reading the bound address")?;
    tracing::info!(
        fingerprint = %host_key::fingerprint(&key),
        "sftp listening on {bound}"
    );
    Ok((listener, bound, key))
}
