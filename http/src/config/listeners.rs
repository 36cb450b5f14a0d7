//! `[sftp]` and `[tls]`: the SFTP server the .NET SDK uploads full feeds to, and the
//! certificate the HTTP listeners serve HTTPS with.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::checks::ConfigError;
use super::file::{FileSftp, FileTls};

/// `[sftp]`: an SFTP server for feed uploads (off unless `listen` is set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SftpConfig {
    /// Address to listen on (the vendor's SDK connects to port 2222).
    pub listen: SocketAddr,
    /// The Ed25519 host key, in OpenSSH format: generated there on first start if
    /// missing, and kept (default `<data_dir>/sftp_host_ed25519_key`).
    pub host_key: PathBuf,
    /// Failed logins allowed per client address in a minute; past them, every login
    /// from that address is refused until the minute has passed.
    pub max_failed_logins_per_minute: u32,
}

/// `[tls]`: serve HTTPS instead of HTTP on `listen` and `feeds.stream_listen`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// The certificate chain, PEM (the server's certificate first).
    pub cert: PathBuf,
    /// Its private key, PEM (PKCS #8, PKCS #1 or SEC1).
    pub key: PathBuf,
}

pub(super) fn sftp_config(
    file: Option<&FileSftp>,
    data_dir: &Path,
    base: &Path,
    err: &impl Fn(&str, String) -> ConfigError,
) -> Result<Option<SftpConfig>, ConfigError> {
    let Some(file) = file else {
        return Ok(None);
    };
    let Some(listen) = &file.listen else {
        return Ok(None);
    };
    let listen: SocketAddr = listen.parse().map_err(|_| {
        err(
            "sftp.listen",
            format!("expected an address such as 0.0.0.0:2222, got {listen:?}"),
        )
    })?;
    let host_key = match &file.host_key {
        Some(path) if path.as_os_str().is_empty() => {
            return Err(err("sftp.host_key", "must not be empty".to_owned()));
        }
        Some(path) => base.join(path),
        None => data_dir.join("sftp_host_ed25519_key"),
    };
    let failures = file.max_failed_logins_per_minute.unwrap_or(10);
    if !(1..=10_000).contains(&failures) {
        return Err(err(
            "sftp.max_failed_logins_per_minute",
            format!("must be between 1 and 10000, got {failures}"),
        ));
    }
    Ok(Some(SftpConfig {
        listen,
        host_key,
        max_failed_logins_per_minute: failures,
    }))
}

pub(super) fn tls_config(
    file: Option<&FileTls>,
    base: &Path,
    err: &impl Fn(&str, String) -> ConfigError,
) -> Result<Option<TlsConfig>, ConfigError> {
    let Some(file) = file else {
        return Ok(None);
    };
    let path = |value: &Option<PathBuf>, key: &str| match value {
        Some(path) if !path.as_os_str().is_empty() => Ok(base.join(path)),
        _ => Err(err(
            &format!("tls.{key}"),
            "required: a PEM file".to_owned(),
        )),
    };
    Ok(Some(TlsConfig {
        cert: path(&file.cert, "cert")?,
        key: path(&file.key, "key")?,
    }))
}
