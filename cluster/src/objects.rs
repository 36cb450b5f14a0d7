//! The account's object store: snapshot set manifests, and listing, reading and
//! downloading objects (shared by the snapshot thread, the scrub, joining and the jobs'
//! shared objects).

use std::path::Path;

use async_nats::jetstream::object_store;
use futures_util::StreamExt;
use vitrine_ingest::jobs::ReplicationError;

/// The object naming a snapshot set's files and what they include.
pub(crate) const MANIFEST_PREFIX: &str = "snapshot-";

/// A snapshot set's manifest (an object of the account's object store).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Manifest {
    /// The stream sequence through which the catalogue includes every delta.
    pub(crate) catalogue: u64,
    /// The stream sequence through which the state includes every request.
    pub(crate) state: u64,
    /// The set's files, relative to an account directory; object `<prefix>/<file>`.
    pub(crate) files: Vec<String>,
    /// The prefix of the files' objects.
    pub(crate) prefix: String,
}

/// The object name of a set's manifest.
pub(crate) fn manifest_name(manifest: &Manifest) -> String {
    format!(
        "{MANIFEST_PREFIX}{}",
        manifest
            .prefix
            .strip_prefix("snap-")
            .unwrap_or(&manifest.prefix)
    )
}

/// A manifest from the object store (`None`: gone, or not a manifest).
pub(crate) async fn load_manifest(
    objects: &object_store::ObjectStore,
    name: &str,
) -> Result<Option<Manifest>, ReplicationError> {
    Ok(read_object(objects, name)
        .await?
        .and_then(|bytes| serde_json::from_slice(&bytes).ok()))
}

/// The snapshot manifests in an object store, oldest first.
pub(crate) async fn manifest_objects(
    objects: &object_store::ObjectStore,
) -> Result<Vec<String>, ReplicationError> {
    let mut names = object_names(objects, |name| name.starts_with(MANIFEST_PREFIX)).await?;
    names.sort();
    Ok(names)
}

/// The names of an object store's objects that `wanted` accepts.
pub(crate) async fn object_names(
    objects: &object_store::ObjectStore,
    wanted: impl Fn(&str) -> bool,
) -> Result<Vec<String>, ReplicationError> {
    let mut list = objects
        .list()
        .await
        .map_err(|e| ReplicationError::nats("listing the shared objects", e))?;
    let mut names = Vec::new();
    while let Some(info) = list.next().await {
        let info = info.map_err(|e| ReplicationError::nats("listing the shared objects", e))?;
        if !info.deleted && wanted(&info.name) {
            names.push(info.name);
        }
    }
    Ok(names)
}

/// Writes an object to `path` (fsynced); false when there is no such object.
pub(crate) async fn download_object(
    objects: &object_store::ObjectStore,
    name: &str,
    path: &Path,
) -> Result<bool, ReplicationError> {
    let mut object = match objects.get(name).await {
        Ok(object) => object,
        Err(error) if error.kind() == object_store::GetErrorKind::NotFound => return Ok(false),
        Err(error) => {
            return Err(ReplicationError::nats(
                format!("reading the shared object {name}"),
                error,
            ));
        }
    };
    let mut file = tokio::fs::File::create(path)
        .await
        .map_err(|e| ReplicationError::file(path, e))?;
    tokio::io::copy(&mut object, &mut file)
        .await
        .map_err(|e| ReplicationError::nats(format!("reading the shared object {name}"), e))?;
    file.sync_all()
        .await
        .map_err(|e| ReplicationError::file(path, e))?;
    Ok(true)
}

/// An object's bytes; `None` when it is gone.
pub(crate) async fn read_object(
    objects: &object_store::ObjectStore,
    name: &str,
) -> Result<Option<Vec<u8>>, ReplicationError> {
    let mut object = match objects.get(name).await {
        Ok(object) => object,
        Err(error) if error.kind() == object_store::GetErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(ReplicationError::nats("reading a shared object", error)),
    };
    let mut bytes = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut object, &mut bytes)
        .await
        .map_err(|e| ReplicationError::nats("reading a shared object", e))?;
    Ok(Some(bytes))
}
