//! `[cluster]`: the NATS servers, this node's id, the replication factor and the
//! accounts a node of a cluster serves.

use super::accounts::AccountConfig;
use super::checks::{ConfigError, within};
use super::file::FileCluster;

/// `[cluster]`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// The NATS servers, this node's id, the replication factor, the accounts served,
    /// the lag allowed at the ready line.
    pub settings: vitrine_cluster::ClusterSettings,
    /// How long a starting node waits for the NATS servers and to catch up before it
    /// gives up.
    pub join_timeout_secs: u64,
}

/// `[cluster]`, validated: at least one NATS server URL, a node id usable in names,
/// a replication factor JetStream accepts (1..=5), accounts that exist.
pub(super) fn cluster_config(
    file: &FileCluster,
    accounts: &[AccountConfig],
    err: &impl Fn(&str, String) -> ConfigError,
) -> Result<ClusterConfig, ConfigError> {
    if file.servers.is_empty() {
        return Err(err(
            "cluster.servers",
            "give at least one NATS server URL, such as \"nats://127.0.0.1:4222\"".to_owned(),
        ));
    }
    for (i, server) in file.servers.iter().enumerate() {
        if !vitrine_cluster::is_server_url(server) {
            return Err(err(
                &format!("cluster.servers[{i}]"),
                format!("expected a NATS URL such as \"nats://127.0.0.1:4222\", got {server:?}"),
            ));
        }
    }
    let node = file.node.clone().unwrap_or_default();
    if node.is_empty()
        || node.len() > 64
        || !node
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(err(
            "cluster.node",
            format!("expected 1 to 64 letters, digits, '-' or '_' naming this node, got {node:?}"),
        ));
    }
    let replicas = within(file.replicas.unwrap_or(3), 1, 5)
        .map_err(|m| err("cluster.replicas", m.to_string()))?;
    for (i, key) in file.accounts.iter().enumerate() {
        if !accounts.iter().any(|a| a.access_key == *key) {
            return Err(err(
                &format!("cluster.accounts[{i}]"),
                format!("no [[accounts]] entry has the access key {key:?}"),
            ));
        }
    }
    let ready_lag = within(file.ready_lag.unwrap_or(0), 0, 1_000_000_000)
        .map_err(|m| err("cluster.ready_lag", m.to_string()))?;
    let join_timeout_secs = within(file.join_timeout_secs.unwrap_or(300), 1, 86_400)
        .map_err(|m| err("cluster.join_timeout_secs", m.to_string()))?;
    let snapshot_interval_secs = within(file.snapshot_interval_secs.unwrap_or(300), 1, 86_400)
        .map_err(|m| err("cluster.snapshot_interval_secs", m.to_string()))?;
    let duplicate_window_secs = within(file.duplicate_window_secs.unwrap_or(120), 1, 86_400)
        .map_err(|m| err("cluster.duplicate_window_secs", m.to_string()))?;
    Ok(ClusterConfig {
        settings: vitrine_cluster::ClusterSettings {
            servers: file.servers.clone(),
            node,
            replicas: replicas as usize,
            accounts: file.accounts.clone(),
            ready_lag,
            snapshot_interval: std::time::Duration::from_secs(snapshot_interval_secs),
            duplicate_window: std::time::Duration::from_secs(duplicate_window_secs),
        },
        join_timeout_secs,
    })
}
