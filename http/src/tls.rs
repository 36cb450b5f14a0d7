//! HTTPS on the HTTP listeners (`[tls] cert`, `key`): rustls with the ring provider,
//! TLS 1.2 and 1.3, HTTP/1.1 over it. The certificate chain and key are read once at
//! start; a reload cannot change them (restart to rotate a certificate).

use std::path::Path;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;

use crate::config::TlsConfig;

/// Why `[tls]` could not be served.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate file has no certificate, or does not read.
    #[error("tls.cert {path}: {message}")]
    Cert {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The key file has no private key, or does not read.
    #[error("tls.key {path}: {message}")]
    Key {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// rustls refused the pair (e.g. the key does not match the certificate).
    #[error("tls: {0}")]
    Config(#[from] rustls::Error),
}

/// The acceptor of `config`'s certificate and key.
pub fn acceptor(config: &TlsConfig) -> Result<TlsAcceptor, TlsError> {
    let shown = |path: &Path| path.display().to_string();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&config.cert)
        .and_then(|certs| certs.collect())
        .map_err(|e| TlsError::Cert {
            path: shown(&config.cert),
            message: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Cert {
            path: shown(&config.cert),
            message: "no PEM certificate in the file".to_owned(),
        });
    }
    let key = PrivateKeyDer::from_pem_file(&config.key).map_err(|e| TlsError::Key {
        path: shown(&config.key),
        message: e.to_string(),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    server.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(server)))
}
