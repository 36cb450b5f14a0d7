//! What the loadtest tests share: the tool's and the server's binaries.

use std::path::{Path, PathBuf};

/// The `vitrine-loadtest` binary under test.
pub(crate) fn loadtest() -> &'static str {
    env!("CARGO_BIN_EXE_vitrine-loadtest")
}

/// The workspace's `vitrine`, built next to it by `cargo test --workspace`.
pub(crate) fn vitrine() -> PathBuf {
    let path =
        Path::new(loadtest()).with_file_name(format!("vitrine{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo test --workspace`, which builds it",
        path.display()
    );
    path
}
