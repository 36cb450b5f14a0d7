//! The SFTP server's host key: Ed25519, in an OpenSSH private key file (mode 0600),
//! generated on first start (written to a temporary file, synced, then renamed, so that
//! a crash never leaves half a key) and read back on every later start.

use std::io::Write;
use std::path::Path;

use russh::keys::ssh_key::LineEnding;
use russh::keys::ssh_key::private::Ed25519Keypair;
use russh::keys::{HashAlg, PrivateKey};

/// Why the host key could not be had.
#[derive(Debug, thiserror::Error)]
pub enum HostKeyError {
    /// Reading or writing the file failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not an OpenSSH private key.
    #[error("{path} is not an OpenSSH private key: {message}")]
    Format {
        /// The file.
        path: String,
        /// The parser's message.
        message: String,
    },
}

/// The key at `path`, made there first if the file does not exist.
pub fn load_or_create(path: &Path) -> Result<PrivateKey, HostKeyError> {
    let io = |action: &'static str| {
        let path = path.display().to_string();
        move |source| HostKeyError::Io {
            action,
            path,
            source,
        }
    };
    let format = |message: String| HostKeyError::Format {
        path: path.display().to_string(),
        message,
    };
    match std::fs::read_to_string(path) {
        Ok(text) => return PrivateKey::from_openssh(text).map_err(|e| format(e.to_string())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(io("reading")(error)),
    }
    let seed: [u8; 32] = rand::random();
    let key = PrivateKey::from(Ed25519Keypair::from_seed(&seed));
    let text = key
        .to_openssh(LineEnding::LF)
        .map_err(|e| format(e.to_string()))?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io("creating the directory of"))?;
    }
    let partial = path.with_extension("partial");
    {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&partial).map_err(io("creating"))?;
        file.write_all(text.as_bytes()).map_err(io("writing"))?;
        file.sync_all().map_err(io("syncing"))?;
    }
    std::fs::rename(&partial, path).map_err(io("moving into place"))?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::File::open(parent)
            .and_then(|d| d.sync_all())
            .map_err(io("syncing the directory of"))?;
    }
    tracing::info!(path = %path.display(), "generated the SFTP host key");
    Ok(key)
}

/// The key's SHA-256 fingerprint as OpenSSH and the vendor's SDK show it:
/// `SHA256:<base64>`.
pub fn fingerprint(key: &PrivateKey) -> String {
    key.public_key().fingerprint(HashAlg::Sha256).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_made_once_and_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys/host_key");
        let made = load_or_create(&path).unwrap();
        let read = load_or_create(&path).unwrap();
        assert_eq!(fingerprint(&made), fingerprint(&read));
        assert!(fingerprint(&made).starts_with("SHA256:"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_file_that_is_not_a_key_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("host_key");
        std::fs::write(&path, "not a key").unwrap();
        let error = load_or_create(&path).unwrap_err().to_string();
        assert!(error.contains("is not an OpenSSH private key"), "{error}");
    }
}
