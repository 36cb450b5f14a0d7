//! The embedded demo's console token: the demo has no `[admin] tokens` of its own, so
//! that a newcomer can open the console (`/admin/`), the first start writes a random
//! editor token to `<data_dir>/admin-token` (readable by its owner only) and every later
//! start, and every reload, reads it back. It is per data directory, never a fixed
//! secret; a configuration file never gets one (its `[admin] tokens` are the only ones).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{AdminRole, AdminToken, ConfigError, DEMO_CONFIG_NAME, MIN_ADMIN_TOKEN_LEN};

/// The name of the token's file in the data directory.
pub const TOKEN_FILE: &str = "admin-token";

/// The audit log's name for whoever uses the demo's token.
pub const TOKEN_LABEL: &str = "demo console";

/// The path of the demo's token in `data_dir`.
pub fn token_path(data_dir: &Path) -> PathBuf {
    data_dir.join(TOKEN_FILE)
}

/// The demo's console token in `data_dir`, written there (random, 32 bytes as hex) when
/// it has none.
pub fn console_token(data_dir: &Path) -> Result<AdminToken, ConfigError> {
    let path = token_path(data_dir);
    let err = |message: String| ConfigError {
        source: DEMO_CONFIG_NAME.to_owned(),
        key: "data_dir".to_owned(),
        message,
    };
    let token = match std::fs::read_to_string(&path) {
        Ok(text) => {
            let token = text.trim().to_owned();
            let printable = token.bytes().all(|b| b.is_ascii_graphic());
            if token.len() < MIN_ADMIN_TOKEN_LEN || !printable {
                return Err(err(format!(
                    "{} is not an admin token (at least {MIN_ADMIN_TOKEN_LEN} printable \
                     characters): remove it and a new one is written",
                    path.display()
                )));
            }
            token
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let token = new_token();
            write_private(&path, &token)
                .map_err(|e| err(format!("cannot write {}: {e}", path.display())))?;
            token
        }
        Err(e) => return Err(err(format!("cannot read {}: {e}", path.display()))),
    };
    Ok(AdminToken {
        token,
        role: AdminRole::Editor,
        label: TOKEN_LABEL.to_owned(),
    })
}

/// 32 random bytes (the thread's cryptographically secure generator, seeded by the
/// operating system), as hex.
fn new_token() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `token` to `path` (mode 0600) through a temporary file renamed into place, so
/// that a crash never leaves half a token.
fn write_private(path: &Path, token: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let temporary = path.with_extension("tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)?;
    file.write_all(token.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)?;
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_made_once_per_data_directory_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let first = console_token(dir.path()).unwrap();
        assert_eq!(first.token.len(), 64);
        assert_eq!(first.role, AdminRole::Editor);
        assert_eq!(console_token(dir.path()).unwrap(), first);
        let other = tempfile::tempdir().unwrap();
        assert_ne!(console_token(other.path()).unwrap().token, first.token);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(token_path(dir.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(token_path(dir.path()), "short\n").unwrap();
        let error = console_token(dir.path()).unwrap_err();
        assert_eq!(error.key, "data_dir");
        assert!(error.message.contains("is not an admin token"), "{error:?}");
    }
}
